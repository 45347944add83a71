//! A row's logits are the same bits whatever step carries it: a decode step alone, a row of a
//! speculative verification step (the sequence's token and its proposals in one step), either
//! beside another sequence's decode and prefill, and after a prompt prefilled in any chunks. This is what makes speculative decoding's greedy
//! output the output without it by construction, whatever the weight format's arithmetic (the
//! VNNI formats quantize the activations, so a rounding difference anywhere can move a value to
//! the next code). Checked on a tiny random model, short and long contexts (long ones split a
//! row's keys into partitions), for the VNNI formats, whose kernels sum each row alike in any
//! batch (on a CPU without VNNI, their plain Rust twins, the same bits). The f32-activation formats
//! (`int4`, `int8`, `f32`) pick their matmul kernels by the number of rows, so their rows differ
//! by f32 roundings (~1e-6) between a decode and a verification step.
#![allow(clippy::unwrap_used)]

mod common;

use candle_core::Device;
use pagoda_engine::attention::CpuKvCache;
use pagoda_engine::batch::{BatchPlan, ScheduledSeq};
use pagoda_engine::kv::BlockId;
use pagoda_engine::models::{load_model, WeightFormat};
use pagoda_engine::runner::ModelRunner;
use pagoda_engine::testing::TinyLlamaSpec;
use pagoda_engine::RequestId;

const BLOCK_SIZE: usize = 16;
const NUM_BLOCKS_EACH: usize = 64;

/// The rows' tokens after the prompt: the sequence's next token, then four proposals.
const FOLLOWING: [u32; 5] = [17, 99, 3, 250, 41];

fn runner(model: &common::TinyModel, format: WeightFormat) -> ModelRunner {
    let model = load_model(&model.path, &Device::Cpu, format).unwrap();
    let cfg = model.config().clone();
    let cache = CpuKvCache::new(
        cfg.num_layers,
        cfg.attn_shape(),
        BLOCK_SIZE,
        3 * NUM_BLOCKS_EACH,
    );
    ModelRunner::new(model, Box::new(cache), BLOCK_SIZE)
}

fn seq(id: u64, computed: usize, tokens: &[u32], num_draft_tokens: usize) -> ScheduledSeq {
    let first_block = id as u32 * NUM_BLOCKS_EACH as u32;
    ScheduledSeq {
        id: RequestId(id),
        num_computed_tokens: computed,
        new_token_ids: tokens.to_vec(),
        num_draft_tokens,
        block_table: (first_block..first_block + NUM_BLOCKS_EACH as u32)
            .map(BlockId)
            .collect(),
        sample: true,
        lora: None,
        prompt_logprobs: None,
    }
}

/// Runs one step; returns its logits rows.
fn step(runner: &mut ModelRunner, seqs: Vec<ScheduledSeq>) -> Vec<Vec<f32>> {
    let num_batched_tokens = seqs.iter().map(|s| s.new_token_ids.len()).sum();
    let logits = runner
        .execute(&BatchPlan {
            seqs,
            num_batched_tokens,
        })
        .unwrap();
    (0..logits.num_rows())
        .map(|i| logits.row(i).to_vec())
        .collect()
}

fn prompt(len: usize) -> Vec<u32> {
    (0..len).map(|i| (i * 37 % 251 + 1) as u32).collect()
}

/// The rows after each of `FOLLOWING`'s tokens, decoded one step at a time, sequence 0 alone.
fn decoded_alone(runner: &mut ModelRunner, prompt: &[u32]) -> Vec<Vec<f32>> {
    step(runner, vec![seq(0, 0, prompt, 0)]);
    (0..FOLLOWING.len())
        .map(|i| step(runner, vec![seq(0, prompt.len() + i, &FOLLOWING[i..=i], 0)]).remove(0))
        .collect()
}

fn assert_same_bits(got: &[Vec<f32>], want: &[Vec<f32>], case: &str) {
    assert_eq!(got.len(), want.len(), "{case}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let same = g.iter().zip(w).all(|(a, b)| a.to_bits() == b.to_bits());
        let largest = g
            .iter()
            .zip(w)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        assert!(same, "{case}: row {i} differs by up to {largest:e}");
    }
}

#[test]
fn a_verification_step_s_rows_are_the_decode_steps_rows_bit_for_bit() {
    let model = common::tiny_model(&TinyLlamaSpec::default());
    for format in [WeightFormat::Vnni15, WeightFormat::Vnni] {
        for prompt_len in [30, 700] {
            let prompt = prompt(prompt_len);
            let want = decoded_alone(&mut runner(&model, format), &prompt);
            let case = format!("{format:?}, {prompt_len}-token prompt");

            // The token and its four proposals in one step.
            let mut verifier = runner(&model, format);
            step(&mut verifier, vec![seq(0, 0, &prompt, 0)]);
            let verified = step(&mut verifier, vec![seq(0, prompt_len, &FOLLOWING, 4)]);
            assert_same_bits(&verified, &want, &format!("{case}: verified alone"));

            // The same beside another sequence's prefill and another's decode.
            let other: Vec<u32> = prompt.iter().rev().take(50).copied().collect();
            let mut crowded = runner(&model, format);
            step(
                &mut crowded,
                vec![seq(0, 0, &prompt, 0), seq(1, 0, &other[..20], 0)],
            );
            let rows = step(
                &mut crowded,
                vec![
                    seq(1, 20, &[5], 0),
                    seq(0, prompt_len, &FOLLOWING, 4),
                    seq(2, 0, &other, 0),
                ],
            );
            assert_same_bits(&rows[1..6], &want, &format!("{case}: verified in a batch"));
        }
    }
}

/// A prompt prefilled in chunks cut anywhere (a few tokens, inside and across the attention's
/// 64-token query tiles and 512-key value blocks) leaves the same cache: its decode rows are the
/// same bits. (Not a last chunk of one token: that token is a decode row, whose keys past 512 are
/// split into partitions, merged in another order than one tile's softmax.)
#[test]
fn a_prefill_chunked_anywhere_gives_the_same_rows() {
    let model = common::tiny_model(&TinyLlamaSpec::default());
    let prompt = prompt(700);
    for format in [WeightFormat::Vnni15, WeightFormat::Vnni] {
        let want = decoded_alone(&mut runner(&model, format), &prompt);
        for cuts in [vec![37], vec![500, 530], vec![3, 64, 511, 690], vec![698]] {
            let mut chunked = runner(&model, format);
            let mut starts = vec![0];
            starts.extend(&cuts);
            starts.push(prompt.len());
            for pair in starts.windows(2) {
                step(
                    &mut chunked,
                    vec![seq(0, pair[0], &prompt[pair[0]..pair[1]], 0)],
                );
            }
            let rows: Vec<Vec<f32>> = (0..FOLLOWING.len())
                .map(|i| {
                    let token = &FOLLOWING[i..=i];
                    step(&mut chunked, vec![seq(0, prompt.len() + i, token, 0)]).remove(0)
                })
                .collect();
            assert_same_bits(&rows, &want, &format!("{format:?}, cut at {cuts:?}"));
        }
    }
}
