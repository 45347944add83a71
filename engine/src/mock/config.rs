//! `MockConfig`: how the mock engine times and fills its output, and its fault injection.

use std::time::Duration;

use rand::Rng;

use crate::error::{EngineError, Result};
use crate::models::config::ModelConfig;

/// The longest `ttft` or `tpot` accepted (an hour: a delay, not a timeout).
pub const MAX_MOCK_DELAY: Duration = Duration::from_secs(3600);

/// How the mock times and fills its output.
#[derive(Debug, Clone, PartialEq)]
pub struct MockConfig {
    /// From a sequence's first scheduling to its first token.
    pub ttft: Duration,
    /// Between consecutive tokens of a sequence.
    pub tpot: Duration,
    /// Relative spread of every delay: each is drawn uniformly in `[1 − jitter, 1 + jitter]` times
    /// its nominal value. In [0, 1]; 0 = exact.
    pub jitter: f64,
    /// Seeds the output lengths and the jitter; the same seed and arrival order give the same
    /// tokens and delays.
    pub seed: u64,
    pub output_len: MockOutputLen,
    /// The output cycles through these ids (from an offset that depends on the request id). Not
    /// empty, inside the vocabulary, and no EOS id among them.
    pub output_token_ids: Vec<u32>,
    /// Fault injection: a step in which some sequence would produce its token number `N + 1`
    /// fails, as a crashing model would — every request of that step ends with an error.
    pub fail_after_tokens: Option<usize>,
    /// Fault injection: the first step in which some sequence would produce its token number
    /// `N + 1` blocks the engine thread this long, as a hung model would (once per engine).
    pub stall: Option<MockStall>,
    /// Emulated compute: each step blocks the engine thread this long per token it computes
    /// (prefill chunks and decodes alike), so step times grow with the work as a model's do.
    /// Zero: steps cost nothing.
    pub step_time_per_token: Duration,
}

/// A one-off stall of the mock's engine thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MockStall {
    pub after_tokens: usize,
    pub duration: Duration,
}

/// How many tokens a mock request generates. A drawn length `L` ends the request with the
/// model's EOS as its `L`-th token (finish reason stop, `L` completion tokens) when `L` is at most
/// the request's `max_tokens`; otherwise it runs to `max_tokens` (finish reason length).
#[derive(Debug, Clone, PartialEq)]
pub enum MockOutputLen {
    /// No EOS: every request runs to its `max_tokens` (or `max_model_len`).
    MaxTokens,
    Fixed(usize),
    /// Uniform in `min..=max`.
    Uniform {
        min: usize,
        max: usize,
    },
    /// Normal, rounded to the nearest integer, at least 1.
    Normal {
        mean: f64,
        std_dev: f64,
    },
}

impl MockOutputLen {
    /// A request's length; `None` for `MaxTokens`.
    pub fn draw(&self, rng: &mut impl Rng) -> Option<usize> {
        match *self {
            MockOutputLen::MaxTokens => None,
            MockOutputLen::Fixed(len) => Some(len),
            MockOutputLen::Uniform { min, max } => Some(rng.random_range(min..=max)),
            MockOutputLen::Normal { mean, std_dev } => {
                // Box–Muller: two uniform draws make one standard normal draw.
                let u1: f64 = 1.0 - rng.random::<f64>();
                let u2: f64 = rng.random();
                let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                Some((mean + std_dev * z).round().max(1.0) as usize)
            }
        }
    }

    fn validate(&self) -> Result<()> {
        let valid = match *self {
            MockOutputLen::MaxTokens => true,
            MockOutputLen::Fixed(len) => len >= 1,
            MockOutputLen::Uniform { min, max } => 1 <= min && min <= max,
            MockOutputLen::Normal { mean, std_dev } => {
                mean.is_finite() && std_dev.is_finite() && std_dev >= 0.0
            }
        };
        if valid {
            return Ok(());
        }
        Err(EngineError::Config(format!(
            "mock output length {self:?}: lengths must be at least 1 (min <= max), a normal's \
             mean finite and its std_dev finite and >= 0"
        )))
    }
}

impl MockConfig {
    /// Checks the values, and the output ids against the model's vocabulary and EOS ids.
    pub fn validate(&self, model: &ModelConfig) -> Result<()> {
        let fail = |m: String| Err(EngineError::Config(m));
        let stall = self.stall.map_or(Duration::ZERO, |s| s.duration);
        let delays = [self.ttft, self.tpot, stall, self.step_time_per_token];
        if delays.iter().any(|&delay| delay > MAX_MOCK_DELAY) {
            return fail(format!(
                "mock ttft {:?}, tpot {:?}, stall {stall:?} and step time per token {:?} must be \
                 at most {MAX_MOCK_DELAY:?}",
                self.ttft, self.tpot, self.step_time_per_token
            ));
        }
        if !(0.0..=1.0).contains(&self.jitter) {
            return fail(format!("mock jitter {} must be in [0, 1]", self.jitter));
        }
        self.output_len.validate()?;
        if self.output_token_ids.is_empty() {
            return fail("mock output_token_ids must not be empty".into());
        }
        for &id in &self.output_token_ids {
            if id as usize >= model.vocab_size {
                return fail(format!(
                    "mock output token id {id} is outside the vocabulary of {}",
                    model.vocab_size
                ));
            }
            if model.eos_token_ids.contains(&id) {
                return fail(format!("mock output token id {id} is an EOS id"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    use super::*;

    fn mock(output_len: MockOutputLen) -> MockConfig {
        MockConfig {
            ttft: Duration::ZERO,
            tpot: Duration::ZERO,
            jitter: 0.0,
            seed: 0,
            output_len,
            output_token_ids: vec![10, 11, 12],
            fail_after_tokens: None,
            stall: None,
            step_time_per_token: Duration::ZERO,
        }
    }

    #[test]
    fn rejects_bad_values() {
        let model = ModelConfig::mock(100, vec![2], 1024);
        assert_eq!(mock(MockOutputLen::MaxTokens).validate(&model), Ok(()));
        for bad in [
            MockOutputLen::Fixed(0),
            MockOutputLen::Uniform { min: 0, max: 3 },
            MockOutputLen::Uniform { min: 5, max: 4 },
            MockOutputLen::Normal {
                mean: f64::NAN,
                std_dev: 1.0,
            },
            MockOutputLen::Normal {
                mean: 10.0,
                std_dev: -1.0,
            },
        ] {
            assert!(mock(bad).validate(&model).is_err());
        }
        let with = |edit: fn(&mut MockConfig)| {
            let mut config = mock(MockOutputLen::MaxTokens);
            edit(&mut config);
            config.validate(&model)
        };
        assert!(with(|c| c.output_token_ids.clear()).is_err());
        assert!(with(|c| c.output_token_ids.push(2)).is_err(), "EOS");
        assert!(with(|c| c.output_token_ids.push(100)).is_err(), "vocab");
        assert!(with(|c| c.jitter = 1.5).is_err());
        assert!(with(|c| c.jitter = f64::NAN).is_err());
        assert!(with(|c| c.tpot = Duration::from_secs(1 << 20)).is_err());
        assert!(with(|c| c.step_time_per_token = Duration::from_secs(1 << 20)).is_err());
        assert_eq!(with(|c| c.jitter = 1.0), Ok(()));
    }

    #[test]
    fn lengths_stay_in_their_range() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        assert_eq!(MockOutputLen::MaxTokens.draw(&mut rng), None);
        assert_eq!(MockOutputLen::Fixed(9).draw(&mut rng), Some(9));
        let uniform = MockOutputLen::Uniform { min: 3, max: 6 };
        let draws: Vec<usize> = (0..400).filter_map(|_| uniform.draw(&mut rng)).collect();
        assert!(draws.iter().all(|&l| (3..=6).contains(&l)));
        assert!((3..=6).all(|l| draws.contains(&l)), "every length drawn");
        let normal = MockOutputLen::Normal {
            mean: 50.0,
            std_dev: 5.0,
        };
        let draws: Vec<usize> = (0..2000).filter_map(|_| normal.draw(&mut rng)).collect();
        let mean = draws.iter().sum::<usize>() as f64 / draws.len() as f64;
        assert!((mean - 50.0).abs() < 1.0, "mean {mean}");
        assert!(draws.iter().all(|&l| (20..=80).contains(&l)));
        let wide = MockOutputLen::Normal {
            mean: 1.0,
            std_dev: 10.0,
        };
        assert!((0..200).all(|_| wide.draw(&mut rng) >= Some(1)));
    }
}
