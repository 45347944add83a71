//! The int8 CPU kernels on the default model's projection shapes (SmolLM2-135M: hidden 576, fused
//! q/k/v 960, o 576, fused gate/up 3072, down 1536 → 576, and the 49,152-row output head), at
//! 1–128 activation rows, on a pool of `--threads` workers (default 2, as the engine on this
//! machine). For each kernel the CPU runs, and for the dequantize-then-dense-matmul path that
//! prefill uses from `MIN_TOKENS_FOR_DENSE_MATMUL` rows on: the time of one model's worth of
//! projections (30 layers + the head) and the GFLOP/s.
//!
//! The same for the int4 format (the weights quantized to Q4_1 blocks by candle, as in a GGUF
//! file), rows marked `int4`; and, where the CPU has AVX-512 VNNI, both as `vnni` (8-bit
//! activations) and `vnni15` (15-bit activations) hold them.
//!
//! `cargo run --release -p pagoda-engine --example int8_kernel_bench [-- --threads 2 --iterations 5
//! --max-rows 128 | --rows 1,3,6]`

use std::time::Instant;

use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Tensor};
use pagoda_engine::models::int4::Int4Matrix;
use pagoda_engine::models::int8::{Int8Matrix, KernelKind, QuantizedRows};
use pagoda_engine::models::vnni::{ActivationBits, VnniMatrix};

type BoxResult<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

const NUM_LAYERS: usize = 30;
/// (rows, cols, times per model pass)
const SHAPES: [(usize, usize, usize); 5] = [
    (960, 576, NUM_LAYERS),
    (576, 576, NUM_LAYERS),
    (3072, 576, NUM_LAYERS),
    (576, 1536, NUM_LAYERS),
    (49_152, 576, 1),
];

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn values(len: usize, seed: usize) -> Vec<f32> {
    (0..len)
        .map(|i| (((i * 7919 + seed * 104_729) % 2003) as f32 / 1001.0) - 1.0)
        .collect()
}

/// Seconds for one pass over every shape, best of `iterations`.
fn time_pass(iterations: usize, mut pass: impl FnMut() -> BoxResult<()>) -> BoxResult<f64> {
    pass()?;
    let mut best = f64::INFINITY;
    for _ in 0..iterations {
        let start = Instant::now();
        pass()?;
        best = best.min(start.elapsed().as_secs_f64());
    }
    Ok(best)
}

fn main() -> BoxResult<()> {
    let threads = arg("--threads", 2);
    let iterations = arg("--iterations", 5);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()?;
    let matrices: Vec<(Int8Matrix, usize)> = SHAPES
        .iter()
        .enumerate()
        .map(|(i, &(rows, cols, times))| {
            let matrix = Int8Matrix::quantize(&values(rows * cols, i), rows, cols)?;
            Ok((matrix, times))
        })
        .collect::<Result<_, String>>()?;
    let int4: Vec<(Int4Matrix, usize)> = SHAPES
        .iter()
        .enumerate()
        .map(|(i, &(rows, cols, times))| {
            let dense = Tensor::from_vec(values(rows * cols, i), (rows, cols), &Device::Cpu)?;
            let blocks = QTensor::quantize(&dense, GgmlDType::Q4_1)?;
            let matrix =
                Int4Matrix::from_gguf_blocks(GgmlDType::Q4_1, &blocks.data()?, rows, cols)?;
            Ok((matrix, times))
        })
        .collect::<BoxResult<_>>()?;
    let vnni_with = |bits: ActivationBits| -> Vec<(VnniMatrix, VnniMatrix)> {
        matrices
            .iter()
            .zip(&int4)
            .map(|((eight, _), (four, _))| {
                (
                    VnniMatrix::from_int8(eight, bits),
                    VnniMatrix::from_int4(four, bits),
                )
            })
            .collect()
    };
    let vnni = [
        ("vnni", vnni_with(ActivationBits::Eight)),
        ("vnni15", vnni_with(ActivationBits::Fifteen)),
    ];
    let weights_per_pass: usize = SHAPES.iter().map(|(r, c, t)| r * c * t).sum();
    println!("| rows | path | ms per model pass | GFLOP/s |");
    println!("|---|---|---|---|");
    for m in rows_to_measure() {
        let flop = 2.0 * weights_per_pass as f64 * m as f64;
        let report = |path: String, seconds: f64| {
            println!(
                "| {m} | {path} | {:.2} | {:.1} |",
                seconds * 1e3,
                flop / seconds / 1e9
            );
            println!(
                "{{\"rows\":{m},\"path\":\"{path}\",\"ms\":{:.3}}}",
                seconds * 1e3
            );
        };
        let inputs: Vec<Vec<f32>> = SHAPES
            .iter()
            .map(|&(_, cols, _)| values(m * cols, m))
            .collect();
        for kind in KernelKind::available() {
            let seconds = pool.install(|| {
                time_pass(iterations, || {
                    for ((matrix, times), x) in matrices.iter().zip(&inputs) {
                        for _ in 0..*times {
                            std::hint::black_box(matrix.matmul_with(kind, x, m));
                        }
                    }
                    Ok(())
                })
            })?;
            report(format!("{kind:?}"), seconds);
            let seconds = pool.install(|| {
                time_pass(iterations, || {
                    for ((matrix, times), x) in int4.iter().zip(&inputs) {
                        for _ in 0..*times {
                            std::hint::black_box(matrix.matmul_with(kind, x, m));
                        }
                    }
                    Ok(())
                })
            })?;
            report(format!("int4 {kind:?}"), seconds);
        }
        for (format, packed) in vnni.iter().filter(|_| VnniMatrix::fast_here()) {
            for (name, pick) in [("int8", 0), ("int4", 1)] {
                let seconds = pool.install(|| {
                    time_pass(iterations, || {
                        for ((pair, (_, times)), x) in packed.iter().zip(&matrices).zip(&inputs) {
                            let matrix = if pick == 0 { &pair.0 } else { &pair.1 };
                            for _ in 0..*times {
                                std::hint::black_box(matrix.matmul(x, m));
                            }
                        }
                        Ok(())
                    })
                })?;
                report(format!("{format} {name}"), seconds);
            }
        }
        if m >= 16 {
            let seconds = pool.install(|| {
                time_pass(iterations, || {
                    for ((matrix, times), x) in matrices.iter().zip(&inputs) {
                        let x = Tensor::from_slice(x, (m, matrix.cols()), &Device::Cpu)?;
                        for _ in 0..*times {
                            let w = Tensor::from_vec(
                                matrix.dequantize(),
                                (matrix.rows(), matrix.cols()),
                                &Device::Cpu,
                            )?;
                            std::hint::black_box(x.matmul(&w.t()?)?);
                        }
                    }
                    Ok(())
                })
            })?;
            report("dequantize+dense".into(), seconds);
        }
    }
    Ok(())
}

/// `--rows 1,3,6` measures those row counts; else `--max-rows N` (default 128): 1, 2, 4, … up
/// to N.
fn rows_to_measure() -> Vec<usize> {
    let args: Vec<String> = std::env::args().collect();
    if let Some(list) = args
        .iter()
        .position(|a| a == "--rows")
        .and_then(|i| args.get(i + 1))
    {
        return list
            .split(',')
            .filter_map(|m| m.trim().parse().ok())
            .collect();
    }
    let max_rows = arg("--max-rows", 128);
    std::iter::successors(Some(1usize), |m| Some(m * 2))
        .take_while(|&m| m <= max_rows)
        .collect()
}
