//! CPU decode attention by KV-cache dtype: one decode step's `attend` over every layer (this
//! step's keys and values written, then attention over the cached context), at the default
//! model's shape (SmolLM2-135M: 30 layers, 9 query heads, 3 KV heads, 64 dims), for f32, f16 and
//! bf16 caches side by side.
//!
//! `cargo run --release -p pagoda-engine --example kv_attention_bench [-- --iterations 30]`
//! prints the median step time per case and one JSON line per case; the three caches of a case
//! take turns within each iteration. Nothing is asserted.

use std::time::Instant;

use candle_core::{DType, Device, Tensor};
use pagoda_engine::attention::{AttnMetadata, AttnShape, CpuKvCache, LayerAttention, PagedKvCache};
use rand::{Rng, SeedableRng};

type BoxResult<T> = Result<T, Box<dyn std::error::Error>>;

const NUM_LAYERS: usize = 30;
const BLOCK_SIZE: usize = 16;
const SHAPE: AttnShape = AttnShape {
    num_heads: 9,
    num_kv_heads: 3,
    head_dim: 64,
};

fn random_rows(rng: &mut impl Rng, num_rows: usize, width: usize) -> BoxResult<Tensor> {
    let values: Vec<f32> = (0..num_rows * width)
        .map(|_| rng.random_range(-1.0..1.0))
        .collect();
    Ok(Tensor::from_vec(values, (num_rows, width), &Device::Cpu)?)
}

/// Sequence `s` owns blocks `s, s + num_seqs, …`, interleaved as a busy pool hands them out.
fn block_table(seq: usize, num_seqs: usize, num_blocks: usize) -> Vec<u32> {
    (0..num_blocks)
        .map(|b| (b * num_seqs + seq) as u32)
        .collect()
}

/// Metadata for `num_new` tokens of each sequence, ending at position `len - 1`.
fn metadata(num_seqs: usize, len: usize, num_new: usize) -> AttnMetadata {
    let num_blocks = len.div_ceil(BLOCK_SIZE);
    let mut meta = AttnMetadata {
        block_size: BLOCK_SIZE,
        query_start_loc: vec![0],
        ..Default::default()
    };
    for seq in 0..num_seqs {
        meta.block_tables
            .push(block_table(seq, num_seqs, num_blocks));
        meta.seq_lens.push(len as u32);
        for p in len - num_new..len {
            meta.positions.push(p as u32);
            meta.slot_mapping.push(meta.slot(seq, p) as u32);
        }
        meta.query_start_loc.push(meta.positions.len() as u32);
    }
    meta
}

/// Attends every layer once for `meta`.
fn step(
    cache: &mut CpuKvCache,
    meta: &AttnMetadata,
    window: Option<usize>,
    rng: &mut impl Rng,
) -> BoxResult<()> {
    let settings = LayerAttention::standard(SHAPE.head_dim).with_window(window);
    let num_tokens = meta.num_tokens();
    let q = random_rows(rng, num_tokens, SHAPE.num_heads * SHAPE.head_dim)?;
    let k = random_rows(rng, num_tokens, SHAPE.num_kv_heads * SHAPE.head_dim)?;
    let v = random_rows(rng, num_tokens, SHAPE.num_kv_heads * SHAPE.head_dim)?;
    for layer in 0..NUM_LAYERS {
        cache.attend(layer, (&q, &k, &v), meta, &settings)?;
    }
    Ok(())
}

/// A cache of `num_seqs` sequences with `context` tokens each, every page written (as in
/// serving), 256 tokens a step; a window of one keeps the filling linear in the context.
fn filled_cache(dtype: DType, num_seqs: usize, context: usize) -> BoxResult<CpuKvCache> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    let num_blocks = num_seqs * (context + 1).div_ceil(BLOCK_SIZE);
    let mut cache = CpuKvCache::with_dtype(NUM_LAYERS, SHAPE, BLOCK_SIZE, num_blocks, dtype)?;
    for start in (0..context).step_by(256) {
        let end = (start + 256).min(context);
        step(
            &mut cache,
            &metadata(num_seqs, end, end - start),
            Some(1),
            &mut rng,
        )?;
    }
    Ok(cache)
}

/// Median decode-step time (ms) per dtype of `num_seqs` sequences with `context` cached tokens
/// each. The dtypes take turns within each iteration, so that other load on the machine falls
/// on all of them alike.
fn time_decode(
    dtypes: &[DType],
    num_seqs: usize,
    context: usize,
    iterations: usize,
) -> BoxResult<Vec<f64>> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
    let mut caches = Vec::new();
    for &dtype in dtypes {
        caches.push(filled_cache(dtype, num_seqs, context)?);
    }
    let decode = metadata(num_seqs, context + 1, 1);
    let mut samples = vec![Vec::with_capacity(iterations); dtypes.len()];
    for iteration in 0..=iterations {
        for turn in 0..dtypes.len() {
            let which = (iteration + turn) % dtypes.len();
            let started = Instant::now();
            step(&mut caches[which], &decode, None, &mut rng)?;
            if iteration > 0 {
                samples[which].push(started.elapsed().as_secs_f64());
            }
        }
    }
    Ok(samples
        .into_iter()
        .map(|mut times| {
            times.sort_by(f64::total_cmp);
            times[times.len() / 2] * 1e3
        })
        .collect())
}

fn main() -> BoxResult<()> {
    let args: Vec<String> = std::env::args().collect();
    let iterations = match args.iter().position(|a| a == "--iterations") {
        Some(i) => args
            .get(i + 1)
            .ok_or("--iterations needs a number")?
            .parse()?,
        None => 30,
    };
    println!("| batch | context | f32 (ms) | f16 (ms) | bf16 (ms) | f16 / f32 | bf16 / f32 |");
    println!("|---|---|---|---|---|---|---|");
    let mut json = Vec::new();
    for (num_seqs, context) in [(1, 512), (1, 2048), (8, 256), (8, 1024), (8, 2048)] {
        let dtypes = [DType::F32, DType::F16, DType::BF16];
        let ms = time_decode(&dtypes, num_seqs, context, iterations)?;
        println!(
            "| {num_seqs} | {context} | {:.3} | {:.3} | {:.3} | {:.2} | {:.2} |",
            ms[0],
            ms[1],
            ms[2],
            ms[1] / ms[0],
            ms[2] / ms[0]
        );
        json.push(format!(
            r#"{{"batch":{num_seqs},"context":{context},"f32_ms":{:.4},"f16_ms":{:.4},"bf16_ms":{:.4},"iterations":{iterations}}}"#,
            ms[0], ms[1], ms[2]
        ));
    }
    for line in json {
        println!("{line}");
    }
    Ok(())
}
