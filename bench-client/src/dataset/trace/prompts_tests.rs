#![allow(clippy::unwrap_used)]

use super::*;
use crate::dataset::test_support::tokenizer;

fn builder(block_size: usize, seed: u64) -> PromptBuilder {
    let generator = ExactTextGenerator::new(tokenizer()).unwrap();
    PromptBuilder::new(&generator, block_size, seed).unwrap()
}

fn request(input_tokens: usize, hash_ids: &[u64]) -> TraceRequest {
    TraceRequest {
        timestamp_s: 0.0,
        input_tokens,
        output_tokens: 1,
        hash_ids: hash_ids.to_vec(),
    }
}

/// The prompt's token ids by the model's tokenizer.
fn encode(text: &str) -> Vec<u32> {
    tokenizer().encode(text, false).unwrap()
}

#[test]
fn prompts_have_exactly_the_input_length() {
    for block_size in [1, 16, 32, 512] {
        let builder = builder(block_size, 3);
        for (index, (input_tokens, hash_ids)) in [
            (1, vec![7]),
            (block_size, vec![7]),
            (3 * block_size, vec![7, 8, 9]),
            (2 * block_size + 5, vec![7, 8, 10]),
            (block_size + 40, vec![7]),
            (300, vec![]),
        ]
        .into_iter()
        .enumerate()
        {
            let request = request(input_tokens, &hash_ids);
            let ids = encode(&builder.prompt(index, &request));
            assert_eq!(ids.len(), input_tokens, "block {block_size}, {hash_ids:?}");
            assert_eq!(ids, builder.prompt_ids(index, &request));
            builder.check(tokenizer(), index, &request).unwrap();
        }
    }
}

#[test]
fn shared_hash_ids_are_identical_token_blocks() {
    const B: usize = 32;
    let builder = builder(B, 11);
    let a = encode(&builder.prompt(0, &request(3 * B, &[1, 2, 3])));
    let b = encode(&builder.prompt(1, &request(3 * B, &[1, 2, 4])));
    let c = encode(&builder.prompt(2, &request(2 * B, &[5, 1])));
    let d = encode(&builder.prompt(3, &request(3 * B, &[6, 7, 8])));
    let block = |ids: &[u32], k: usize| ids[k * B..(k + 1) * B].to_vec();
    assert_eq!(block(&a, 0), block(&b, 0));
    assert_eq!(block(&a, 1), block(&b, 1));
    assert_ne!(block(&a, 2), block(&b, 2), "ids 3 and 4 differ");
    // The same id is the same tokens wherever it stands.
    assert_eq!(block(&c, 1), block(&a, 0));
    assert_ne!(block(&c, 0), block(&a, 0));
    // Unshared ids share no token at the same position beyond chance (never a whole block).
    for k in 0..3 {
        assert_ne!(block(&d, k), block(&a, k));
    }
    // A prompt tokenizes as its blocks tokenized one by one.
    let alone: Vec<u32> = [1u64, 2, 3]
        .iter()
        .flat_map(|&id| encode(&builder.prompt(9, &request(B, &[id]))))
        .collect();
    assert_eq!(a, alone);
}

#[test]
fn a_partial_last_block_is_the_start_of_that_block() {
    const B: usize = 64;
    let builder = builder(B, 5);
    let full = encode(&builder.prompt(0, &request(2 * B, &[1, 2])));
    let cut = encode(&builder.prompt(1, &request(B + 10, &[1, 2])));
    assert_eq!(cut[..], full[..B + 10]);
}

#[test]
fn tokens_past_the_blocks_and_prompts_without_ids_are_unique_per_request() {
    const B: usize = 16;
    let builder = builder(B, 5);
    let a = encode(&builder.prompt(0, &request(B + 20, &[1])));
    let b = encode(&builder.prompt(1, &request(B + 20, &[1])));
    assert_eq!(a[..B], b[..B]);
    assert_ne!(a[B..], b[B..]);
    let c = encode(&builder.prompt(2, &request(50, &[])));
    let d = encode(&builder.prompt(3, &request(50, &[])));
    assert_eq!((c.len(), d.len()), (50, 50));
    assert_ne!(c[..8], d[..8]);
}

#[test]
fn the_seed_determines_the_blocks() {
    let r = request(100, &[1, 2]);
    assert_eq!(builder(64, 1).prompt(0, &r), builder(64, 1).prompt(0, &r));
    assert_ne!(builder(64, 1).prompt(0, &r), builder(64, 2).prompt(0, &r));
}

#[test]
fn a_zero_block_size_is_refused() {
    let generator = ExactTextGenerator::new(tokenizer()).unwrap();
    assert!(matches!(
        PromptBuilder::new(&generator, 0, 0),
        Err(DatasetError::InvalidConfig(_))
    ));
}
