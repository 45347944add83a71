//! Exponentially weighted least-squares fits for online cost learning: each new sample multiplies
//! the weight of every older one by `decay`, so a fit follows slow drift (contexts growing, the
//! machine getting busier) and forgets what no longer holds within about `1 / (1 − decay)`
//! samples. Constant memory, no allocation, no clock: samples are fed in.

/// `y ≈ intercept + slope · x`, with `slope ≥ 0` (a cost never falls as work grows). When the
/// samples' `x` barely varies the slope is shrunk towards 0 (ridge `min_x_variance`), so a
/// prediction near the samples stays right and one far from them stays finite.
#[derive(Debug, Clone, PartialEq)]
pub struct DecayedLineFit {
    decay: f64,
    min_x_variance: f64,
    weight: f64,
    sum_x: f64,
    sum_y: f64,
    sum_xx: f64,
    sum_xy: f64,
    num_samples: u64,
}

impl DecayedLineFit {
    pub fn new(decay: f64, min_x_variance: f64) -> Self {
        Self {
            decay,
            min_x_variance,
            weight: 0.0,
            sum_x: 0.0,
            sum_y: 0.0,
            sum_xx: 0.0,
            sum_xy: 0.0,
            num_samples: 0,
        }
    }

    /// Adds a sample; a non-finite one is ignored.
    pub fn add(&mut self, x: f64, y: f64) {
        if !x.is_finite() || !y.is_finite() {
            return;
        }
        self.weight = self.weight * self.decay + 1.0;
        self.sum_x = self.sum_x * self.decay + x;
        self.sum_y = self.sum_y * self.decay + y;
        self.sum_xx = self.sum_xx * self.decay + x * x;
        self.sum_xy = self.sum_xy * self.decay + x * y;
        self.num_samples += 1;
    }

    /// Samples added so far (not weighted).
    pub fn num_samples(&self) -> u64 {
        self.num_samples
    }

    /// The fitted `y` at `x`; `None` before any sample.
    pub fn predict(&self, x: f64) -> Option<f64> {
        if self.num_samples == 0 {
            return None;
        }
        let mean_x = self.sum_x / self.weight;
        let mean_y = self.sum_y / self.weight;
        let variance = (self.sum_xx / self.weight - mean_x * mean_x).max(0.0);
        let covariance = self.sum_xy / self.weight - mean_x * mean_y;
        let slope = (covariance / (variance + self.min_x_variance)).max(0.0);
        Some(mean_y + slope * (x - mean_x))
    }
}

/// `y ≈ ratio · x` (through the origin): a cost per unit of `x`. Fitted at the `x`s it is fed,
/// a fixed cost the line does not model is spread over those units; a scheduler that feeds back
/// the sizes it chose therefore converges on the cost per unit at the sizes it uses.
#[derive(Debug, Clone, PartialEq)]
pub struct DecayedRatioFit {
    decay: f64,
    sum_xx: f64,
    sum_xy: f64,
    num_samples: u64,
}

impl DecayedRatioFit {
    pub fn new(decay: f64) -> Self {
        Self {
            decay,
            sum_xx: 0.0,
            sum_xy: 0.0,
            num_samples: 0,
        }
    }

    /// Adds a sample; one with `x ≤ 0` or not finite is ignored.
    pub fn add(&mut self, x: f64, y: f64) {
        if x <= 0.0 || !x.is_finite() || !y.is_finite() {
            return;
        }
        self.sum_xx = self.sum_xx * self.decay + x * x;
        self.sum_xy = self.sum_xy * self.decay + x * y;
        self.num_samples += 1;
    }

    pub fn num_samples(&self) -> u64 {
        self.num_samples
    }

    /// The fitted `y` per unit of `x`; `None` before any sample.
    pub fn ratio(&self) -> Option<f64> {
        (self.num_samples > 0).then(|| self.sum_xy / self.sum_xx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(actual: Option<f64>, expected: f64) -> bool {
        actual.is_some_and(|a| (a - expected).abs() < 1e-9 * expected.abs().max(1.0))
    }

    #[test]
    fn a_line_is_recovered_from_exact_samples() {
        let mut fit = DecayedLineFit::new(0.9, 1e-9);
        assert_eq!(fit.predict(3.0), None);
        for x in [1.0, 4.0, 2.0, 8.0, 5.0] {
            fit.add(x, 0.010 + 0.005 * x);
        }
        assert!(close(fit.predict(0.0), 0.010), "{:?}", fit.predict(0.0));
        assert!(close(fit.predict(16.0), 0.090));
        assert_eq!(fit.num_samples(), 5);
    }

    #[test]
    fn one_x_gives_a_flat_line_through_its_mean() {
        let mut fit = DecayedLineFit::new(1.0, 0.1);
        fit.add(8.0, 0.040);
        fit.add(8.0, 0.050);
        assert!(close(fit.predict(8.0), 0.045));
        assert!(close(fit.predict(1.0), 0.045), "no slope from one x");
    }

    #[test]
    fn the_slope_is_never_negative() {
        let mut fit = DecayedLineFit::new(1.0, 1e-9);
        fit.add(1.0, 0.050);
        fit.add(2.0, 0.040);
        assert!(close(fit.predict(10.0), 0.045));
    }

    #[test]
    fn old_samples_fade() {
        let mut fit = DecayedLineFit::new(0.5, 0.1);
        for _ in 0..20 {
            fit.add(4.0, 0.100);
        }
        for _ in 0..20 {
            fit.add(4.0, 0.020);
        }
        let predicted = fit.predict(4.0).unwrap_or(f64::NAN);
        assert!((predicted - 0.020).abs() < 1e-5, "{predicted}");
    }

    #[test]
    fn non_finite_samples_are_ignored() {
        let mut line = DecayedLineFit::new(0.9, 0.1);
        line.add(f64::NAN, 1.0);
        line.add(1.0, f64::INFINITY);
        assert_eq!(line.num_samples(), 0);
        let mut ratio = DecayedRatioFit::new(0.9);
        ratio.add(0.0, 1.0);
        ratio.add(-3.0, 1.0);
        ratio.add(2.0, f64::NAN);
        assert_eq!((ratio.num_samples(), ratio.ratio()), (0, None));
    }

    #[test]
    fn a_ratio_is_recovered_and_follows_change() {
        let mut fit = DecayedRatioFit::new(0.8);
        for x in [16.0, 64.0, 128.0] {
            fit.add(x, 0.002 * x);
        }
        assert!(close(fit.ratio(), 0.002));
        for _ in 0..60 {
            fit.add(32.0, 0.004 * 32.0);
        }
        let ratio = fit.ratio().unwrap_or(f64::NAN);
        assert!((ratio - 0.004).abs() < 1e-6, "{ratio}");
    }

    #[test]
    fn a_fixed_cost_is_spread_over_the_units_fed() {
        // y = 0.010 + 0.001·x fed at x = 10 only: 0.002 per unit, exact at the size in use.
        let mut fit = DecayedRatioFit::new(0.9);
        for _ in 0..5 {
            fit.add(10.0, 0.010 + 0.001 * 10.0);
        }
        assert!(close(fit.ratio(), 0.002));
    }
}
