use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Tensor};

use super::*;
use crate::models::int8::naive_matmul as naive;

fn values(len: usize, seed: usize) -> Vec<f32> {
    (0..len)
        .map(|i| (((i * 7919 + seed * 104_729) % 2003) as f32 / 1001.0) - 1.0)
        .collect()
}

/// A Q4_1 matrix as a GGUF file holds it, from candle's quantizer.
fn int4(rows: usize, cols: usize, seed: usize) -> Int4Matrix {
    let tensor = Tensor::from_slice(&values(rows * cols, seed), (rows, cols), &Device::Cpu).expect("tensor");
    let quantized = QTensor::quantize(&tensor, GgmlDType::Q4_1).expect("quantize");
    Int4Matrix::from_gguf_blocks(GgmlDType::Q4_1, &quantized.data().expect("bytes"), rows, cols).expect("int4")
}

fn int8(rows: usize, cols: usize, seed: usize) -> Int8Matrix {
    Int8Matrix::quantize(&values(rows * cols, seed), rows, cols).expect("int8")
}

/// Shapes with a partial last block and with several groups.
const SHAPES: [(usize, usize); 4] = [(1, 32), (17, 64), (40, 96), (130, 160)];

const BOTH_BITS: [ActivationBits; 2] = [ActivationBits::Eight, ActivationBits::Fifteen];

#[test]
fn packing_keeps_every_value_of_both_formats() {
    for (rows, cols) in SHAPES {
        let four = int4(rows, cols, rows);
        let packed = VnniMatrix::from_int4(&four, ActivationBits::Eight);
        assert_eq!((packed.rows(), packed.cols()), (rows, cols));
        assert_eq!(packed.dequantize(), four.dequantize(), "int4 {rows}x{cols}");
        let eight = int8(rows, cols, rows);
        assert_eq!(VnniMatrix::from_int8(&eight, ActivationBits::Eight).dequantize(), eight.dequantize(), "int8 {rows}x{cols}");
    }
}

#[test]
fn concatenated_rows_are_the_parts_one_after_another() {
    let (a, b) = (int4(17, 64, 1), int4(30, 64, 2));
    let (pa, pb) = (VnniMatrix::from_int4(&a, ActivationBits::Eight), VnniMatrix::from_int4(&b, ActivationBits::Eight));
    let joined = VnniMatrix::concat_rows(&[&pa, &pb]).expect("same columns");
    assert_eq!(joined.rows(), 47);
    assert_eq!(joined.dequantize(), [a.dequantize(), b.dequantize()].concat());
    let eight = VnniMatrix::from_int8(&int8(16, 64, 3), ActivationBits::Eight);
    assert!(VnniMatrix::concat_rows(&[&pa, &eight]).is_err(), "4-bit and 8-bit codes do not stack");
    let fine = VnniMatrix::from_int4(&b, ActivationBits::Fifteen);
    assert!(VnniMatrix::concat_rows(&[&pa, &fine]).is_err(), "8-bit and 15-bit activations do not stack");
    let both_fine = VnniMatrix::concat_rows(&[&VnniMatrix::from_int4(&a, ActivationBits::Fifteen), &fine]);
    assert_eq!(both_fine.expect("same activations").activation_bits(), ActivationBits::Fifteen);
    let narrow = VnniMatrix::from_int4(&int4(16, 32, 4), ActivationBits::Eight);
    assert!(VnniMatrix::concat_rows(&[&pa, &narrow]).is_err(), "columns differ");
}

/// The product equals the plain Rust arithmetic bit for bit, at every row count (so a row gives
/// the same result alone and in any batch), and the f32 product of the dequantized weights and
/// the dequantized activations within f32 rounding.
#[test]
fn the_kernel_is_exact_to_its_arithmetic_and_batch_invariant() {
    for ((rows, cols), bits) in SHAPES.into_iter().flat_map(|shape| BOTH_BITS.map(|bits| (shape, bits))) {
        for matrix in [VnniMatrix::from_int4(&int4(rows, cols, 5), bits), VnniMatrix::from_int8(&int8(rows, cols, 5), bits)] {
            let weights = matrix.dequantize();
            let x = values(40 * cols, 9);
            let all = matrix.matmul(&x, 40);
            for m in [1, 2, 3, 4, 5, 9, 16, 17, 40] {
                let quantized = QuantizedActivations::quantize_to(&x[..m * cols], cols, bits);
                let got = matrix.matmul_quantized(&quantized);
                assert_eq!(got, all[..m * rows], "{:?} {rows}x{cols}: {m} rows vs 40", matrix.bits);
                let want = naive(&weights, &quantized.dequantize(), rows, cols, m);
                for (g, w) in got.iter().zip(&want) {
                    assert!((g - w).abs() <= 1e-4 * (cols as f32), "{:?} m={m}: {g} vs {w}", matrix.bits);
                }
                for (i, out) in got.chunks(rows).enumerate() {
                    let mut portable = vec![0.0f32; matrix.padded_rows()];
                    for block in 0..matrix.padded_rows() / BLOCK_ROWS {
                        matrix.block_row_portable(block, &quantized, i, &mut portable[block * BLOCK_ROWS..][..BLOCK_ROWS]);
                    }
                    assert_eq!(out, &portable[..rows], "{:?} m={m} row {i}: the kernel's bits", matrix.bits);
                }
            }
        }
    }
}

/// Against the f32 activations the error is the activations' rounding: at most half a step
/// (max |x| / 254 per group for 8 bits, / 32,766 for 15) times the weights' absolute sum, plus
/// f32 rounding.
#[test]
fn quantized_activations_stay_within_their_rounding() {
    let (rows, cols) = (48, 256);
    let four = int4(rows, cols, 11);
    let weights = four.dequantize();
    let x = values(3 * cols, 12);
    let want = naive(&weights, &x, rows, cols, 3);
    for (bits, max_code) in [(ActivationBits::Eight, 127.0), (ActivationBits::Fifteen, 16_383.0)] {
        let got = VnniMatrix::from_int4(&four, bits).matmul(&x, 3);
        let mut largest_error = 0.0f32;
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            let (a, r) = (i / rows, i % rows);
            let bound: f32 = (0..cols)
                .map(|c| {
                    let group = &x[a * cols + c / GROUP_SIZE * GROUP_SIZE..][..GROUP_SIZE];
                    let step = group.iter().fold(0.0f32, |m, v| m.max(v.abs())) / max_code;
                    weights[r * cols + c].abs() * step / 2.0
                })
                .sum();
            assert!((g - w).abs() <= bound * 1.01 + 1e-5, "{bits:?} row {a} output {r}: {g} vs {w}, bound {bound}");
            largest_error = largest_error.max((g - w).abs());
        }
        if bits == ActivationBits::Fifteen {
            assert!(largest_error < 1e-3, "15-bit activations move results by {largest_error}");
        }
    }
}
