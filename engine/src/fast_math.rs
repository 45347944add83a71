//! Element-wise math for the CPU kernels, written so that a loop of it vectorizes: `exp` is a
//! polynomial with no library call (range reduction to `2^n · e^r`, |r| ≤ ln 2 / 2, and Cephes'
//! degree-7 minimax polynomial for `e^r`), and `tanh` and the tanh-approximated GELU are built
//! on it. The attention softmax, Gemma's logit softcaps and its GeGLU MLP run them on every value.

/// Largest input whose `exp` is a finite f32.
const MAX_INPUT: f32 = 88.37;
/// Below this `exp` is less than the smallest normal f32 and is returned as zero.
const MIN_INPUT: f32 = -87.33;

/// `e^x` within 2 ulp over the f32 range; 0 below `MIN_INPUT` (and for -∞), +∞ above
/// `MAX_INPUT`.
#[inline(always)]
pub fn exp(x: f32) -> f32 {
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

/// `tanh(x)` with no library call, so that a loop of it vectorizes (the library's `tanh` is a
/// call per value): an odd minimax polynomial (Cephes') below |x| = 0.625, where `1 − 2/(e+1)`
/// would cancel, and `sign(x) · (1 − 2 / (e^(2|x|) + 1))` on `exp` above. Within 2.5e-7
/// absolute over the f32 range and a few ulp relative near zero; ±1 exactly for large |x|.
#[inline(always)]
pub fn tanh(x: f32) -> f32 {
    let e = exp(2.0 * x.abs());
    let large = (1.0 - 2.0 / (e + 1.0)).copysign(x);
    let z = x * x;
    let mut p = -5.704_988_7e-3;
    p = p * z + 2.063_909e-2;
    p = p * z - 5.373_971_6e-2;
    p = p * z + 1.333_144_2e-1;
    p = p * z - 3.333_328e-1;
    let small = p * z * x + x;
    if x.abs() < 0.625 {
        small
    } else {
        large
    }
}

/// PyTorch's `gelu(x, approximate="tanh")`: `x/2 · (1 + tanh(√(2/π) · (x + 0.044715 x³)))`.
#[inline(always)]
pub fn gelu_tanh(x: f32) -> f32 {
    const SQRT_2_OVER_PI: f32 = 0.797_884_6;
    0.5 * x * (1.0 + tanh(SQRT_2_OVER_PI * (x + 0.044_715 * x * x * x)))
}

/// `gelu_tanh(gate) · up` for every row of `gate_up` (rows of `2 · width`, the gate first) into
/// `out` (rows of `width`).
pub fn gelu_tanh_mul_rows(gate_up: &[f32], width: usize, out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if avx2::gelu_tanh_mul_rows(gate_up, width, out) {
        return;
    }
    gelu_tanh_mul_rows_inline(gate_up, width, out)
}

/// `cap · tanh(v / cap)` for every value: Gemma's logit softcaps.
pub fn softcap_in_place(values: &mut [f32], cap: f32) {
    #[cfg(target_arch = "x86_64")]
    if avx2::softcap_in_place(values, cap) {
        return;
    }
    softcap_in_place_inline(values, cap)
}

#[inline(always)]
fn gelu_tanh_mul_rows_inline(gate_up: &[f32], width: usize, out: &mut [f32]) {
    for (row, out) in gate_up
        .chunks_exact(2 * width)
        .zip(out.chunks_exact_mut(width))
    {
        let (gate, up) = row.split_at(width);
        for ((out, &g), &u) in out.iter_mut().zip(gate).zip(up) {
            *out = gelu_tanh(g) * u;
        }
    }
}

#[inline(always)]
fn softcap_in_place_inline(values: &mut [f32], cap: f32) {
    let inverse = 1.0 / cap;
    for v in values.iter_mut() {
        *v = cap * tanh(*v * inverse);
    }
}

/// The loops compiled for AVX2 and FMA: x86-64's baseline (SSE2) has no vector `floor`, so
/// there `exp`'s rounding is a library call per value and the loops stay scalar.
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod avx2 {
    fn available() -> bool {
        is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma")
    }

    /// Runs the loop if the CPU has AVX2 and FMA; false if it did not run.
    pub fn gelu_tanh_mul_rows(gate_up: &[f32], width: usize, out: &mut [f32]) -> bool {
        // SAFETY: the CPU runs AVX2 and FMA (checked first).
        available() && {
            unsafe { gelu_tanh_mul_rows_avx2(gate_up, width, out) };
            true
        }
    }

    /// Runs the loop if the CPU has AVX2 and FMA; false if it did not run.
    pub fn softcap_in_place(values: &mut [f32], cap: f32) -> bool {
        // SAFETY: the CPU runs AVX2 and FMA (checked first).
        available() && {
            unsafe { softcap_in_place_avx2(values, cap) };
            true
        }
    }

    #[target_feature(enable = "avx2,fma")]
    unsafe fn gelu_tanh_mul_rows_avx2(gate_up: &[f32], width: usize, out: &mut [f32]) {
        super::gelu_tanh_mul_rows_inline(gate_up, width, out)
    }

    #[target_feature(enable = "avx2,fma")]
    unsafe fn softcap_in_place_avx2(values: &mut [f32], cap: f32) {
        super::softcap_in_place_inline(values, cap)
    }
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
        let mut worst_relative = 0.0f64;
        let mut x = 1e-6f32;
        while x < 1.0 {
            let exact = (x as f64).tanh();
            worst_relative = worst_relative.max((tanh(x) as f64 - exact).abs() / exact);
            assert_eq!(tanh(-x), -tanh(x));
            x *= 1.001;
        }
        assert!(
            worst_relative < 5e-7,
            "worst relative error {worst_relative:e}"
        );
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
    fn gelu_tanh_matches_the_f64_formula_and_its_row_product() {
        let exact = |x: f64| {
            0.5 * x
                * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x.powi(3))).tanh())
        };
        let mut x = -12.0f32;
        while x < 12.0 {
            let expected = exact(x as f64);
            assert!(
                (gelu_tanh(x) as f64 - expected).abs() <= 5e-7 * expected.abs().max(1.0),
                "gelu_tanh({x})"
            );
            x += 0.001_9;
        }
        let gate_up = [1.0, -2.0, 3.0, 10.0, 0.5, 0.25];
        let mut out = [0.0; 3];
        gelu_tanh_mul_rows(&gate_up, 1, &mut out);
        let expected: Vec<f64> = [(1.0, -2.0), (3.0, 10.0), (0.5, 0.25)]
            .iter()
            .map(|&(g, u)| exact(g) * u)
            .collect();
        for (got, want) in out.iter().zip(&expected) {
            assert!((*got as f64 - want).abs() < 1e-5, "{got} vs {want}");
        }
    }

    #[test]
    fn softcap_bounds_values_by_the_cap_and_keeps_small_ones() {
        let mut values = [0.0, 1e-3, 30.0, -1e6];
        softcap_in_place(&mut values, 30.0);
        assert_eq!(values[0], 0.0);
        assert!((values[1] - 1e-3).abs() < 1e-8);
        assert!((values[2] as f64 - 30.0 * 1f64.tanh()).abs() < 1e-5);
        assert_eq!(values[3], -30.0);
    }
}
