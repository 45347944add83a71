//! Softmax for the CPU attention kernels, written so that the compiler vectorizes it: `exp` is a
//! polynomial with no library call (range reduction to `2^n · e^r`, |r| ≤ ln 2 / 2, and Cephes'
//! degree-7 minimax polynomial for `e^r`), and the sum runs in eight independent lanes.

/// Largest input whose `exp` is a finite f32.
const MAX_INPUT: f32 = 88.37;
/// Below this `exp` is less than the smallest normal f32 and is returned as zero.
const MIN_INPUT: f32 = -87.33;

/// `e^x` within 2 ulp over the f32 range; 0 below `MIN_INPUT` (and for -∞), +∞ above
/// `MAX_INPUT`.
#[inline(always)]
pub(super) fn exp(x: f32) -> f32 {
    const LOG2_E: f32 = std::f32::consts::LOG2_E;
    // ln 2 split in two, the first part exact in few bits, so `x - n ln 2` loses nothing.
    const LN2_HIGH: f32 = 0.693_359_4;
    const LN2_LOW: f32 = -2.121_944_4e-4;
    let clamped = x.clamp(MIN_INPUT, MAX_INPUT);
    let n = (clamped * LOG2_E + 0.5).floor();
    let r = clamped - n * LN2_HIGH - n * LN2_LOW;
    let mut p = 1.987_569_1e-4;
    p = p * r + 1.398_199_9e-3;
    p = p * r + 8.333_452e-3;
    p = p * r + 4.166_579_6e-2;
    p = p * r + 1.666_666_5e-1;
    p = p * r + 0.5;
    let e_r = p * r * r + r + 1.0;
    // 2^n from its exponent bits: n lies in [-126, 128) after the clamp.
    let two_n = f32::from_bits(((n as i32 + 127) as u32) << 23);
    let result = e_r * two_n;
    if x < MIN_INPUT {
        0.0
    } else if x > MAX_INPUT {
        f32::INFINITY
    } else {
        result
    }
}

/// `tanh(x)` as `sign(x) · (1 − 2 / (e^(2|x|) + 1))` on `exp` above, so that a loop of it
/// vectorizes (the library's `tanh` is a call per value): within 2.5e-7 absolute over the f32
/// range, ±1 exactly for large |x|. Gemma 2's logit softcap runs it on every score.
#[inline(always)]
pub(super) fn tanh(x: f32) -> f32 {
    let e = exp(2.0 * x.abs());
    (1.0 - 2.0 / (e + 1.0)).copysign(x)
}

/// Replaces `values` by their softmax and returns their log-sum-exp (`ln Σ e^v`). All of them
/// must not be -∞.
#[inline(always)]
pub(super) fn softmax_in_place(values: &mut [f32]) -> f32 {
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

    /// Distance in units of the last place between two positive finite f32s.
    fn ulps(a: f32, b: f32) -> u32 {
        a.to_bits().abs_diff(b.to_bits())
    }

    #[test]
    fn exp_is_within_two_ulp_of_the_exact_value_over_the_normal_range() {
        let mut worst = 0;
        let mut x = MIN_INPUT + 0.01;
        while x < MAX_INPUT - 0.01 {
            let exact = (x as f64).exp() as f32;
            worst = worst.max(ulps(exp(x), exact));
            x += 0.001_37;
        }
        assert!(worst <= 2, "worst error {worst} ulp");
    }

    #[test]
    fn tanh_is_within_a_few_ulp_of_one_of_the_exact_value() {
        let mut worst = 0.0f64;
        let mut x = -30.0f32;
        while x < 30.0 {
            worst = worst.max((tanh(x) as f64 - (x as f64).tanh()).abs());
            x += 0.000_73;
        }
        assert!(worst < 2.5e-7, "worst absolute error {worst:e}");
        assert_eq!((tanh(0.0), tanh(100.0), tanh(-100.0)), (0.0, 1.0, -1.0));
        assert_eq!(tanh(f32::INFINITY), 1.0);
    }

    #[test]
    fn exp_saturates_outside_its_range() {
        assert_eq!(exp(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp(-100.0), 0.0);
        assert_eq!(exp(f32::INFINITY), f32::INFINITY);
        assert_eq!(exp(0.0), 1.0);
    }

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
