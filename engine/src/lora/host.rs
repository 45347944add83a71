//! The LoRA term on the host for steps of few rows (decode): per row, `t = x·Aᵀ` (the rank's
//! values) then `y += t·Bᵀ` over each adapted part's block only (a fused pair's `B` is
//! block-diagonal: its zero blocks are skipped), reading the adapter's tensors in place and
//! writing each output row once, rows in parallel. The tensor path (gathers, matmuls and a
//! scatter per adapter) costs more in per-operation overhead than in arithmetic at these sizes.

use candle_core::{Storage, Tensor};
use rayon::prelude::*;

use super::adapter::LowRankPair;
use crate::error::{EngineError, Result};

/// Rows from which the tensor path (blocked matmuls) wins over the per-row kernel.
pub const MAX_HOST_ROWS: usize = 32;

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

/// `base` (`[num_rows, out]`) plus, for each row with a pair, that pair's term for its row of `x`
/// (`[num_rows, in]`). `pairs[r]` is row `r`'s pair, if any.
pub fn add_low_rank_terms(
    x: &Tensor,
    base: &Tensor,
    pairs: &[Option<&LowRankPair>],
) -> Result<Tensor> {
    let x = x.contiguous()?;
    let (num_rows, in_dim) = x.dims2()?;
    let out_dim = base.dim(1)?;
    let mut out = base.flatten_all()?.to_vec1::<f32>()?;
    with_host_values(&x, |x| -> Result<()> {
        out.par_chunks_mut(out_dim)
            .zip(x.par_chunks(in_dim))
            .zip(pairs.par_iter())
            .try_for_each(|((y, x), pair)| match pair {
                Some(pair) => add_row_term(pair, x, y),
                None => Ok(()),
            })
    })??;
    Ok(Tensor::from_vec(out, (num_rows, out_dim), base.device())?)
}

/// `y += (x·Aᵀ)·Bᵀ` for one row.
fn add_row_term(pair: &LowRankPair, x: &[f32], y: &mut [f32]) -> Result<()> {
    let rank = pair.rank();
    let mut t = vec![0f32; rank];
    with_host_values(&pair.a_t, |a_t| {
        for (&xi, a_row) in x.iter().zip(a_t.chunks_exact(rank)) {
            for (tj, &a) in t.iter_mut().zip(a_row) {
                *tj += xi * a;
            }
        }
    })?;
    let out_dim = y.len();
    with_host_values(&pair.b_t, |b_t| {
        for part in &pair.parts {
            let y_part = &mut y[part.out_offset..part.out_offset + part.out_len];
            for j in part.rank_offset..part.rank_offset + part.rank {
                let tj = t[j];
                let b_row = &b_t[j * out_dim + part.out_offset..][..part.out_len];
                for (yo, &b) in y_part.iter_mut().zip(b_row) {
                    *yo += tj * b;
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use candle_core::{DType, Device};

    use super::*;
    use crate::lora::adapter::{FusedProjection, LoraAdapter};
    use crate::lora::batch::LoraBatch;
    use crate::lora::load::{load_lora_adapter, LoraLoadOptions};
    use crate::models::ModelConfig;
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

    /// The per-row kernel (few rows) and the gathered matmuls (many rows) add the same terms.
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
        let tensor_path = LoraBatch::new(&ranges, &adapters, num_rows, &Device::Cpu).unwrap();
        let expected = tensor_path
            .apply(0, FusedProjection::Qkv, &x, base.clone())
            .unwrap();
        let (pair_a, pair_b) = (
            a.layer(0).unwrap().qkv.as_ref(),
            b.layer(0).unwrap().qkv.as_ref(),
        );
        let pairs: Vec<_> = (0..num_rows)
            .map(|row| match row {
                3 => None,
                4..30 => pair_b,
                _ => pair_a,
            })
            .collect();
        let host = add_low_rank_terms(&x, &base, &pairs).unwrap();
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
