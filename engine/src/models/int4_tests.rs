use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Tensor};

use super::*;
use crate::models::int8::naive_matmul as naive;

fn values(len: usize, seed: usize) -> Vec<f32> {
    (0..len)
        .map(|i| (((i * 7919 + seed * 104_729) % 2003) as f32 / 1001.0) - 1.0)
        .collect()
}

/// The matrix a GGUF file would hold after candle quantizes `w` to `dtype`, and the f32 values
/// candle reads back from it.
fn from_candle(w: &[f32], rows: usize, cols: usize, dtype: GgmlDType) -> (Int4Matrix, Vec<f32>) {
    let tensor = Tensor::from_slice(w, (rows, cols), &Device::Cpu).expect("tensor");
    let quantized = QTensor::quantize(&tensor, dtype).expect("quantize");
    let bytes = quantized.data().expect("bytes");
    let matrix = Int4Matrix::from_gguf_blocks(dtype, &bytes, rows, cols).expect("int4");
    let want = quantized
        .dequantize(&Device::Cpu)
        .and_then(|t| t.flatten_all())
        .and_then(|t| t.to_vec1::<f32>())
        .expect("dequantize");
    (matrix, want)
}

#[test]
fn holds_the_files_values_exactly() {
    for dtype in [GgmlDType::Q4_0, GgmlDType::Q4_1, GgmlDType::Q4K] {
        let (rows, cols) = (67, 512);
        let (matrix, want) = from_candle(&values(rows * cols, 3), rows, cols, dtype);
        assert_eq!((matrix.rows(), matrix.cols()), (rows, cols));
        assert_eq!(matrix.dequantize(), want, "{dtype:?}");
        let mut portable = vec![0.0; rows * cols];
        unpack_groups_portable(&matrix.nibbles, &matrix.scales, &matrix.mins, &mut portable);
        assert_eq!(portable, want, "{dtype:?} in plain Rust");
    }
}

#[test]
fn every_kernel_matches_the_dequantized_product() {
    for (rows, cols) in [(1, 32), (5, 64), (37, 96), (130, 160)] {
        let (matrix, exact) = from_candle(&values(rows * cols, rows), rows, cols, GgmlDType::Q4_1);
        for m in [1, 2, 3, 4, 5, 8, 9, 17, 40] {
            let x = values(m * cols, m + 7);
            let want = naive(&exact, &x, rows, cols, m);
            for kind in KernelKind::available() {
                let got = matrix.matmul_with(kind, &x, m);
                assert_eq!(got.len(), want.len());
                for (g, w) in got.iter().zip(&want) {
                    // f32 kernels differ only in summation order; int16 activations are off by
                    // at most half a step of 1/32,767 of their group's largest value.
                    assert!((g - w).abs() <= 1e-4 * cols as f32, "{kind:?} {rows}x{cols} m={m}: {g} vs {w}");
                }
            }
        }
    }
}

/// Q4_1 blocks written by hand: scale 1, offset −8, every 4-bit value; activations on the int16
/// grid (each group's largest magnitude 32,767, so its scale is exactly 1). Every kernel is exact.
#[test]
fn every_kernel_exact_on_the_grid() {
    let (rows, cols) = (6, 64);
    let mut bytes = Vec::new();
    for block in 0..rows * cols / GROUP_SIZE {
        bytes.extend_from_slice(&f16::from_f32(1.0).to_le_bytes());
        bytes.extend_from_slice(&f16::from_f32(-8.0).to_le_bytes());
        bytes.extend((0..NIBBLE_BYTES).map(|j| ((j + block) % 16) as u8 | (((j * 3) % 16) as u8) << 4));
    }
    let matrix = Int4Matrix::from_gguf_blocks(GgmlDType::Q4_1, &bytes, rows, cols).expect("int4");
    let w = matrix.dequantize();
    assert!(w.iter().all(|v| v.fract() == 0.0 && (-8.0..=7.0).contains(v)));
    let x: Vec<f32> = (0..cols)
        .map(|c| if c % GROUP_SIZE == 5 { -32_767.0 } else { (c % 13) as f32 - 6.0 })
        .collect();
    for kind in KernelKind::available() {
        assert_eq!(matrix.matmul_with(kind, &x, 1), naive(&w, &x, rows, cols, 1), "{kind:?}");
    }
}

#[test]
fn concatenated_rows_multiply_like_their_parts() {
    let (a, _) = from_candle(&values(40 * 64, 1), 40, 64, GgmlDType::Q4_1);
    let (b, _) = from_candle(&values(24 * 64, 2), 24, 64, GgmlDType::Q4_0);
    let both = Int4Matrix::concat_rows(&[&a, &b]).expect("concat");
    let x = values(3 * 64, 9);
    let (got, top, bottom) = (both.matmul(&x, 3), a.matmul(&x, 3), b.matmul(&x, 3));
    for i in 0..3 {
        assert_eq!(&got[i * 64..i * 64 + 40], &top[i * 40..(i + 1) * 40]);
        assert_eq!(&got[i * 64 + 40..(i + 1) * 64], &bottom[i * 24..(i + 1) * 24]);
    }
    let (c, _) = from_candle(&values(8 * 32, 3), 8, 32, GgmlDType::Q4_1);
    assert!(Int4Matrix::concat_rows(&[&a, &c]).is_err());
}

#[test]
fn rejects_other_blocks_and_wrong_sizes() {
    for dtype in [GgmlDType::Q4_0, GgmlDType::Q4_1, GgmlDType::Q4K] {
        assert!(Int4Matrix::takes(dtype), "{dtype:?}");
    }
    assert!(!Int4Matrix::takes(GgmlDType::Q8_0) && !Int4Matrix::takes(GgmlDType::Q5K));
    let error = Int4Matrix::from_gguf_blocks(GgmlDType::Q8_0, &[0; 34], 1, 32).expect_err("Q8_0");
    assert!(error.contains("Q8_0"), "{error}");
    let error = Int4Matrix::from_gguf_blocks(GgmlDType::Q4_1, &[0; 39], 1, 64).expect_err("short");
    assert!(error.contains("needs 40 bytes"), "{error}");
    assert!(Int4Matrix::from_gguf_blocks(GgmlDType::Q4_0, &[0; 18], 1, 30).is_err());
    // Q4_K blocks hold 256 values: a row of 128 is not whole blocks.
    assert!(Int4Matrix::from_gguf_blocks(GgmlDType::Q4K, &[0; 144], 2, 128).is_err());
}
