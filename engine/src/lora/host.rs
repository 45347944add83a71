//! The LoRA term on the CPU. Per block of up to `ROWS_PER_JOB` rows of one adapter: `T = X·Aᵀ`
//! (the rank's values of each row), then `Δ = T·Bᵀ` over each adapted part's block only (a fused
//! pair's `B` is block-diagonal: its zero blocks are skipped); each weight row is read once for
//! all the block's rows, so a decode step reads each adapter's weights once (at decode sizes that
//! memory traffic, not the arithmetic, is the cost). Blocks run in parallel, reading the
//! adapter's tensors in place, and each output row is written once. Measured against gathered
//! candle matmuls (a gather, two matmuls and a scatter per adapter and projection), this wins at
//! decode and prefill alike on the CPU (docs/PERFORMANCE.md).

use candle_core::{Storage, Tensor};
use rayon::prelude::*;

use super::adapter::LowRankPair;
use crate::error::{EngineError, Result};

/// Rows of one adapter computed by one job: a decode step's rows of an adapter fit in one, so
/// its weights are read once; prefill blocks spread over the threads.
const ROWS_PER_JOB: usize = 32;

/// One adapter's pair and its token rows in the step.
#[derive(Debug, Clone, Copy)]
pub struct HostGroup<'a> {
    pub pair: &'a LowRankPair,
    pub rows: &'a [usize],
}

/// Calls `f` with the f32 values of a contiguous CPU tensor, without copying them.
fn with_host_values<R>(tensor: &Tensor, f: impl FnOnce(&[f32]) -> R) -> Result<R> {
    let (storage, layout) = tensor.storage_and_layout();
    let Storage::Cpu(cpu) = &*storage else {
        return Err(EngineError::Execution(
            "LoRA host kernel on a non-CPU tensor".into(),
        ));
    };
    let (start, end) = layout
        .contiguous_offsets()
        .ok_or_else(|| EngineError::Execution("LoRA host kernel on a strided tensor".into()))?;
    Ok(f(&cpu.as_slice::<f32>()?[start..end]))
}

/// `base` (`[num_rows, out]`) plus each group's term on its rows of `x` (`[num_rows, in]`).
pub fn add_low_rank_terms(x: &Tensor, base: &Tensor, groups: &[HostGroup<'_>]) -> Result<Tensor> {
    let x = x.contiguous()?;
    let (num_rows, in_dim) = x.dims2()?;
    let out_dim = base.dim(1)?;
    let jobs: Vec<HostGroup<'_>> = groups
        .iter()
        .flat_map(|g| {
            g.rows
                .chunks(ROWS_PER_JOB)
                .map(|rows| HostGroup { pair: g.pair, rows })
        })
        .collect();
    let deltas = with_host_values(&x, |x| {
        jobs.par_iter()
            .map(|job| group_delta(job, x, in_dim, out_dim))
            .collect::<Result<Vec<_>>>()
    })??;
    let mut out = base.flatten_all()?.to_vec1::<f32>()?;
    for (job, delta) in jobs.iter().zip(deltas) {
        for (&row, d) in job.rows.iter().zip(delta.chunks_exact(out_dim)) {
            for (y, d) in out[row * out_dim..(row + 1) * out_dim].iter_mut().zip(d) {
                *y += d;
            }
        }
    }
    Ok(Tensor::from_vec(out, (num_rows, out_dim), base.device())?)
}

/// `(X·Aᵀ)·Bᵀ` for the group's rows of `x`, one output row per group row.
fn group_delta(
    group: &HostGroup<'_>,
    x: &[f32],
    in_dim: usize,
    out_dim: usize,
) -> Result<Vec<f32>> {
    let pair = group.pair;
    let (rows, rank) = (group.rows, pair.rank());
    let mut t = vec![0f32; rows.len() * rank];
    with_host_values(&pair.a_t, |a_t| {
        for (i, a_row) in a_t.chunks_exact(rank).enumerate() {
            for (&row, t_row) in rows.iter().zip(t.chunks_exact_mut(rank)) {
                let xi = x[row * in_dim + i];
                for (tj, &a) in t_row.iter_mut().zip(a_row) {
                    *tj += xi * a;
                }
            }
        }
    })?;
    let mut delta = vec![0f32; rows.len() * out_dim];
    with_host_values(&pair.b_t, |b_t| {
        for part in &pair.parts {
            for j in part.rank_offset..part.rank_offset + part.rank {
                let b_row = &b_t[j * out_dim + part.out_offset..][..part.out_len];
                for (t_row, d_row) in t.chunks_exact(rank).zip(delta.chunks_exact_mut(out_dim)) {
                    let tj = t_row[j];
                    let d = &mut d_row[part.out_offset..part.out_offset + part.out_len];
                    for (dv, &b) in d.iter_mut().zip(b_row) {
                        *dv += tj * b;
                    }
                }
            }
        }
    })?;
    Ok(delta)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::Arc;

    use candle_core::{DType, Device};

    use super::*;
    use crate::lora::adapter::{FusedProjection, LoraAdapter};
    use crate::lora::batch::LoraBatch;
    use crate::lora::load::{load_lora_adapter, LoraLoadOptions};
    use crate::models::config::ModelConfig;
    use crate::testing::tiny_lora::TinyLoraSpec;

    fn adapter(seed: u64, config: &ModelConfig, dir: &std::path::Path) -> Arc<LoraAdapter> {
        let spec = TinyLoraSpec {
            seed,
            ..TinyLoraSpec::default()
        };
        let path = dir.join(seed.to_string());
        spec.write(config, &path).unwrap();
        let options = LoraLoadOptions {
            max_rank: 16,
            device: Device::Cpu,
            dtype: DType::F32,
        };
        Arc::new(load_lora_adapter("a", &path, config, &options).unwrap())
    }

    /// The host kernel (few rows) and the gathered matmuls (many rows) add the same terms.
    #[test]
    fn the_host_kernel_matches_the_tensor_path() {
        let mut config = ModelConfig::mock(64, vec![0], 128);
        (
            config.hidden_size,
            config.intermediate_size,
            config.num_layers,
        ) = (32, 48, 1);
        (config.num_heads, config.num_kv_heads, config.head_dim) = (4, 2, 8);
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (
            adapter(1, &config, dir.path()),
            adapter(2, &config, dir.path()),
        );
        let num_rows = 40;
        let x = Tensor::randn(0f32, 1.0, (num_rows, 32), &Device::Cpu).unwrap();
        let base = Tensor::randn(0f32, 1.0, (num_rows, 64), &Device::Cpu).unwrap();
        let ranges = [0..3, 3..4, 4..30, 30..40];
        let adapters = [Some(&a), None, Some(&b), Some(&a)];
        let tensor_path =
            LoraBatch::build(&ranges, &adapters, num_rows, &Device::Cpu, false).unwrap();
        let expected = tensor_path
            .apply(0, FusedProjection::Qkv, &x, base.clone())
            .unwrap();
        let (pair_a, pair_b) = (
            a.layer(0).unwrap().qkv.as_ref(),
            b.layer(0).unwrap().qkv.as_ref(),
        );
        let rows_a: Vec<usize> = (0..3).chain(30..40).collect();
        let rows_b: Vec<usize> = (4..30).collect();
        let groups = [
            HostGroup {
                pair: pair_a.unwrap(),
                rows: &rows_a,
            },
            HostGroup {
                pair: pair_b.unwrap(),
                rows: &rows_b,
            },
        ];
        let host = add_low_rank_terms(&x, &base, &groups).unwrap();
        let diff = (host - &expected)
            .unwrap()
            .abs()
            .unwrap()
            .max_all()
            .unwrap();
        assert!(diff.to_scalar::<f32>().unwrap() < 1e-5);
        let untouched = expected
            .narrow(0, 3, 1)
            .unwrap()
            .sub(&base.narrow(0, 3, 1).unwrap());
        let untouched = untouched.unwrap().abs().unwrap().max_all().unwrap();
        assert_eq!(
            untouched.to_scalar::<f32>().unwrap(),
            0.0,
            "a base row is left alone"
        );
    }
}
