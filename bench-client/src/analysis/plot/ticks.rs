//! Axis ranges with "nice" tick steps (1, 2 or 5 × 10^k), after Heckbert's "Nice numbers for
//! graph labels" (Graphics Gems, 1990), and tick labels that show no more digits than the step.

/// An axis from `min` to `max` with ticks every `step`; `min` and `max` are multiples of `step`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Axis {
    pub min: f64,
    pub max: f64,
    pub step: f64,
}

/// The nice number nearest `x` (`round`) or the smallest nice number ≥ `x` (otherwise).
fn nice_number(x: f64, round: bool) -> f64 {
    let exponent = x.log10().floor();
    let magnitude = 10f64.powi(exponent as i32);
    let fraction = x / magnitude;
    let nice = if round {
        match fraction {
            f if f < 1.5 => 1.0,
            f if f < 3.0 => 2.0,
            f if f < 7.0 => 5.0,
            _ => 10.0,
        }
    } else {
        match fraction {
            f if f <= 1.0 => 1.0,
            f if f <= 2.0 => 2.0,
            f if f <= 5.0 => 5.0,
            _ => 10.0,
        }
    };
    nice * magnitude
}

impl Axis {
    /// An axis covering `[data_min, data_max]` with about `max_num_ticks` ticks. It starts at 0
    /// when all data are positive (so that bars of latency are not exaggerated), and spans at least
    /// 1 unit around a single value. Non-finite input gives `[0, 1]`.
    pub fn covering(data_min: f64, data_max: f64, max_num_ticks: usize) -> Self {
        if !(data_min.is_finite() && data_max.is_finite()) || data_min > data_max {
            return Self {
                min: 0.0,
                max: 1.0,
                step: 0.2,
            };
        }
        let low = if data_min >= 0.0 { 0.0 } else { data_min };
        let high = if data_max > low { data_max } else { low + 1.0 };
        let num_intervals = max_num_ticks.max(3) as f64 - 1.0;
        let step = nice_number(nice_number(high - low, false) / num_intervals, true);
        Self {
            min: (low / step).floor() * step,
            max: (high / step).ceil() * step,
            step,
        }
    }

    /// Tick values from `min` to `max`, rounded to the step's precision.
    pub fn ticks(&self) -> Vec<f64> {
        let num_steps = ((self.max - self.min) / self.step).round() as usize;
        let decimals = self.decimals() as i32;
        let scale = 10f64.powi(decimals);
        (0..=num_steps)
            .map(|i| ((self.min + i as f64 * self.step) * scale).round() / scale)
            .collect()
    }

    /// Where `value` falls along the axis: 0 at `min`, 1 at `max`.
    pub fn fraction(&self, value: f64) -> f64 {
        (value - self.min) / (self.max - self.min)
    }

    /// Digits after the point that the step needs (0 for steps ≥ 1).
    fn decimals(&self) -> usize {
        (-(self.step.log10() + 1e-9).floor()).max(0.0) as usize
    }

    /// A tick label: `0.2`, `40`, `1500`, or `12k` once the step reaches thousands (0 stays `0`).
    pub fn label(&self, value: f64) -> String {
        if self.step >= 1000.0 && value.abs() >= self.step / 2.0 {
            let thousands = Axis {
                step: self.step / 1000.0,
                ..*self
            };
            return format!("{}k", thousands.format(value / 1000.0));
        }
        self.format(value)
    }

    fn format(&self, value: f64) -> String {
        let text = format!("{:.*}", self.decimals(), value);
        if text.starts_with('-') && text.trim_start_matches(['-', '0', '.']).is_empty() {
            text[1..].to_string()
        } else {
            text
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn nice_numbers_are_one_two_five() {
        let cases = [
            (0.6, true, 0.5),
            (2.4, true, 2.0),
            (420.0, true, 500.0),
            (8.0, true, 10.0),
            (1.2, false, 2.0),
            (37.0, false, 50.0),
        ];
        for (x, round, nice) in cases {
            assert!((nice_number(x, round) - nice).abs() < 1e-12, "{x} {round}");
        }
    }

    #[test]
    fn axis_starts_at_zero_and_covers_the_data() {
        let axis = Axis::covering(3.2, 87.0, 6);
        assert_eq!(
            axis,
            Axis {
                min: 0.0,
                max: 100.0,
                step: 20.0
            }
        );
        assert_eq!(axis.ticks(), vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
        let small = Axis::covering(0.013, 0.049, 6);
        assert_eq!(small.min, 0.0);
        assert!((small.max - 0.05).abs() < 1e-12 && (small.step - 0.01).abs() < 1e-12);
        assert_eq!(small.ticks(), vec![0.0, 0.01, 0.02, 0.03, 0.04, 0.05]);
    }

    #[test]
    fn negative_and_degenerate_ranges() {
        let axis = Axis::covering(-7.0, 12.0, 6);
        assert!(axis.min <= -7.0 && axis.max >= 12.0);
        assert_eq!(axis.step, 5.0);
        assert_eq!(Axis::covering(5.0, 5.0, 6).max, 5.0);
        assert_eq!(
            Axis::covering(0.0, 0.0, 6),
            Axis {
                min: 0.0,
                max: 1.0,
                step: 0.2
            }
        );
        assert_eq!(
            Axis::covering(f64::NAN, 1.0, 6),
            Axis {
                min: 0.0,
                max: 1.0,
                step: 0.2
            }
        );
        assert_eq!(Axis::covering(f64::INFINITY, 1.0, 6).max, 1.0);
    }

    #[test]
    fn labels_show_the_step_precision() {
        let axis = Axis {
            min: 0.0,
            max: 0.5,
            step: 0.1,
        };
        assert_eq!(axis.label(0.30000000000000004), "0.3");
        assert_eq!(
            Axis {
                min: 0.0,
                max: 100.0,
                step: 20.0
            }
            .label(40.0),
            "40"
        );
        assert_eq!(
            Axis {
                min: 0.0,
                max: 2000.0,
                step: 500.0
            }
            .label(1500.0),
            "1500"
        );
        assert_eq!(
            Axis {
                min: 0.0,
                max: 20000.0,
                step: 5000.0
            }
            .label(15000.0),
            "15k"
        );
        assert_eq!(
            Axis {
                min: 0.0,
                max: 5000.0,
                step: 1000.0
            }
            .label(-0.0),
            "0"
        );
        assert_eq!(
            Axis {
                min: -1.0,
                max: 1.0,
                step: 0.5
            }
            .label(-1e-17),
            "0.0"
        );
    }
}
