//! Softmax for the CPU attention kernels, written so that the compiler vectorizes it: `exp` is
//! [`crate::fast_math`]'s polynomial, and the max and the sum run in eight independent lanes.

use crate::fast_math::exp;

/// Replaces `values` by their softmax and returns their log-sum-exp (`ln Σ e^v`). All of them
/// must not be -∞. Compiled for AVX2 and FMA where the CPU has them (x86-64's baseline has no
/// vector `floor`, which `exp` rounds with).
pub(super) fn softmax_in_place(values: &mut [f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if let Some(lse) = avx2::softmax_in_place(values) {
        return lse;
    }
    softmax_in_place_inline(values)
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod avx2 {
    /// The softmax if the CPU has AVX2 and FMA.
    pub fn softmax_in_place(values: &mut [f32]) -> Option<f32> {
        let available = is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma");
        // SAFETY: the CPU runs AVX2 and FMA (checked first).
        available.then(|| unsafe { softmax_in_place_avx2(values) })
    }

    #[target_feature(enable = "avx2,fma")]
    unsafe fn softmax_in_place_avx2(values: &mut [f32]) -> f32 {
        super::softmax_in_place_inline(values)
    }
}

#[inline(always)]
fn softmax_in_place_inline(values: &mut [f32]) -> f32 {
    let max = max(values);
    for v in values.iter_mut() {
        *v = exp(*v - max);
    }
    let total = sum(values);
    let inverse = 1.0 / total;
    for v in values.iter_mut() {
        *v *= inverse;
    }
    max + total.ln()
}

#[inline(always)]
fn max(values: &[f32]) -> f32 {
    let (chunks, tail) = values.as_chunks::<8>();
    let mut lanes = [f32::NEG_INFINITY; 8];
    for chunk in chunks {
        for (lane, v) in lanes.iter_mut().zip(chunk) {
            *lane = if *v > *lane { *v } else { *lane };
        }
    }
    lanes.iter().chain(tail).copied().fold(f32::NEG_INFINITY, f32::max)
}

#[inline(always)]
fn sum(values: &[f32]) -> f32 {
    let (chunks, tail) = values.as_chunks::<8>();
    let mut lanes = [0.0f32; 8];
    for chunk in chunks {
        for (lane, v) in lanes.iter_mut().zip(chunk) {
            *lane += v;
        }
    }
    lanes.iter().sum::<f32>() + tail.iter().sum::<f32>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn softmax_matches_the_f64_softmax_and_zeroes_minus_infinity() {
        let mut values: Vec<f32> = (0..37).map(|i| ((i * 7919) % 23) as f32 * 0.37 - 4.0).collect();
        values[5] = f32::NEG_INFINITY;
        let max = values.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
        let exps: Vec<f64> = values.iter().map(|&v| (v as f64 - max).exp()).collect();
        let total: f64 = exps.iter().sum();
        let lse = softmax_in_place(&mut values);
        assert!((lse as f64 - (max + total.ln())).abs() < 1e-5, "log-sum-exp {lse}");
        assert_eq!(values[5], 0.0);
        for (got, e) in values.iter().zip(&exps) {
            let expected = e / total;
            // A few f32 ulp (2^-23 ≈ 1.2e-7 relative): exp's 2 ulp, the sum's and the division's.
            assert!((*got as f64 - expected).abs() <= 1e-6 * expected, "{got} vs {expected}");
        }
    }
}
