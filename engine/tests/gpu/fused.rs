//! The fused kernels (`pagoda-cuda-kernels`' fused.cu, through `FusedOps`) on the GPU against the
//! candle ops they replace, run on the CPU in f32 on the same inputs rounded to the dtype: the
//! SwiGLU activation of a fused gate/up projection, the residual add with the RMS norm after it,
//! and RoPE of the query and key heads read
//! from the strided q and k parts of a fused qkv projection (both pair layouts, GQA, head sizes
//! 64/80/128, one token and many).

use candle_core::{DType, Device, Tensor};
use pagoda_engine::models::fused::{FusedOps, QkHeads};
use pagoda_engine::models::rotary::RotaryEmbedding;
use pagoda_engine::models::ModelConfig;

const DTYPES: [DType; 3] = [DType::F32, DType::F16, DType::BF16];

/// Max abs error allowed: the output is rounded to the dtype once (values within ±2 here).
fn tolerance(dtype: DType) -> f32 {
    match dtype {
        DType::F32 => 1e-5,
        DType::F16 => 2e-3,
        _ => 1.6e-2,
    }
}

fn max_abs_diff(a: &Tensor, b: &Tensor) -> f32 {
    let a = a
        .to_device(&Device::Cpu)
        .unwrap()
        .to_dtype(DType::F32)
        .unwrap();
    let b = b
        .to_device(&Device::Cpu)
        .unwrap()
        .to_dtype(DType::F32)
        .unwrap();
    assert_eq!(a.dims(), b.dims());
    (a - b)
        .unwrap()
        .abs()
        .unwrap()
        .flatten_all()
        .unwrap()
        .max(0)
        .unwrap()
        .to_scalar::<f32>()
        .unwrap()
}

/// Uniform values in [-1, 1) rounded to `dtype`, on the CPU in `dtype`.
fn random(shape: (usize, usize), dtype: DType) -> Tensor {
    Tensor::rand(-1f32, 1f32, shape, &Device::Cpu)
        .unwrap()
        .to_dtype(dtype)
        .unwrap()
}

#[test]
fn silu_mul_matches_the_candle_ops() {
    let Some(gpu) = crate::gpu() else { return };
    let fused = FusedOps::new(&gpu).unwrap();
    for dtype in DTYPES {
        for (rows, width) in [(1, 8192), (7, 64), (33, 5632)] {
            let gate_up = random((rows, 2 * width), dtype);
            let expected = FusedOps::default()
                .silu_mul(&gate_up.to_dtype(DType::F32).unwrap(), width)
                .unwrap();
            let got = fused
                .silu_mul(&gate_up.to_device(&gpu).unwrap(), width)
                .unwrap();
            assert_eq!(got.dtype(), dtype);
            let error = max_abs_diff(&got, &expected);
            assert!(
                error <= tolerance(dtype),
                "{dtype:?} {rows}×{width}: max error {error}"
            );
        }
    }
}

#[test]
fn add_rms_norm_matches_the_candle_ops() {
    let Some(gpu) = crate::gpu() else { return };
    let fused = FusedOps::new(&gpu).unwrap();
    for dtype in DTYPES {
        for (rows, width) in [(1, 2048), (7, 576), (5, 3000)] {
            let (x, residual) = (random((rows, width), dtype), random((rows, width), dtype));
            let weight = random((1, width), dtype).flatten_all().unwrap();
            // The reference: the add in the dtype (as candle rounds it), the norm in f32.
            let sum = (&x + &residual).unwrap();
            let f32_of = |t: &Tensor| t.to_dtype(DType::F32).unwrap();
            let expected = FusedOps::default()
                .add_rms_norm(
                    &f32_of(&sum),
                    &f32_of(&sum).zeros_like().unwrap(),
                    (&f32_of(&weight), 1e-5),
                )
                .unwrap()
                .1;
            let on_gpu = |t: &Tensor| t.to_device(&gpu).unwrap();
            let (got_sum, got_normed) = fused
                .add_rms_norm(&on_gpu(&x), &on_gpu(&residual), (&on_gpu(&weight), 1e-5))
                .unwrap();
            let case = format!("{dtype:?} {rows}×{width}");
            assert_eq!(max_abs_diff(&got_sum, &sum), 0.0, "{case}: the sum");
            let error = max_abs_diff(&got_normed, &expected);
            assert!(
                error <= tolerance(dtype),
                "{case}: normed max error {error}"
            );
        }
    }
}

fn rope_config(heads: QkHeads, interleaved: bool) -> ModelConfig {
    ModelConfig {
        num_heads: heads.num_heads,
        num_kv_heads: heads.num_kv_heads,
        head_dim: heads.head_dim,
        hidden_size: heads.num_heads * heads.head_dim,
        rope_theta: 500_000.0,
        rope_interleaved: interleaved,
        ..ModelConfig::mock(16, Vec::new(), 4096)
    }
}

#[test]
fn rope_of_strided_queries_and_keys_matches_the_candle_ops() {
    let Some(gpu) = crate::gpu() else { return };
    let fused = FusedOps::new(&gpu).unwrap();
    let shapes = [(32, 8, 64), (16, 16, 80), (14, 2, 128)];
    for dtype in DTYPES {
        for (num_heads, num_kv_heads, head_dim) in shapes {
            let heads = QkHeads {
                num_heads,
                num_kv_heads,
                head_dim,
            };
            for interleaved in [false, true] {
                for num_tokens in [1, 37] {
                    let config = rope_config(heads, interleaved);
                    let positions: Vec<u32> = (0..num_tokens)
                        .map(|t| (t * 97 + 3) as u32 % 4096)
                        .collect();
                    let (q_width, kv_width) = (num_heads * head_dim, num_kv_heads * head_dim);
                    let qkv = random((num_tokens, q_width + 2 * kv_width), dtype);
                    // The reference: candle's RoPE on the CPU in f32.
                    let cpu = RotaryEmbedding::new(&config, &Device::Cpu, DType::F32).unwrap();
                    let cpu_positions = Tensor::new(positions.as_slice(), &Device::Cpu).unwrap();
                    let cpu_step = cpu.for_positions(&cpu_positions).unwrap();
                    let qkv_f32 = qkv.to_dtype(DType::F32).unwrap();
                    let (want_q, want_k) = FusedOps::default()
                        .rope_qk(
                            (
                                &qkv_f32.narrow(1, 0, q_width).unwrap(),
                                &qkv_f32.narrow(1, q_width, kv_width).unwrap(),
                            ),
                            &cpu_step,
                            heads,
                        )
                        .unwrap();
                    let rotary = RotaryEmbedding::new(&config, &gpu, dtype).unwrap();
                    let gpu_positions = cpu_positions.to_device(&gpu).unwrap();
                    let step = rotary.for_positions(&gpu_positions).unwrap();
                    let qkv = qkv.to_device(&gpu).unwrap();
                    let (q, k) = fused
                        .rope_qk(
                            (
                                &qkv.narrow(1, 0, q_width).unwrap(),
                                &qkv.narrow(1, q_width, kv_width).unwrap(),
                            ),
                            &step,
                            heads,
                        )
                        .unwrap();
                    let case = format!(
                        "{dtype:?} heads {num_heads}/{num_kv_heads}×{head_dim} interleaved \
                         {interleaved}, {num_tokens} tokens"
                    );
                    // The GPU's cos/sin tables are rounded to the dtype: one more rounding.
                    let allowed = 2.0 * tolerance(dtype);
                    let (error_q, error_k) = (max_abs_diff(&q, &want_q), max_abs_diff(&k, &want_k));
                    assert!(error_q <= allowed, "{case}: q max error {error_q}");
                    assert!(error_k <= allowed, "{case}: k max error {error_k}");
                }
            }
        }
    }
}
