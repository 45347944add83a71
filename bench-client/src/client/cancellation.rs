//! Requests the client cancels on purpose (`--request-cancellation-rate`,
//! `--request-cancellation-delay`, as AIPerf's): a seeded share of the requests is dropped a fixed
//! delay after it was sent, as users who stop a generation do, to measure a server that must
//! free the work and keep serving the others.

use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Which requests are cancelled, and when.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cancellation {
    /// The share of requests cancelled, in [0, 1].
    pub fraction: f64,
    /// Time from a request's send to its cancellation.
    pub delay: Duration,
    /// The same seed picks the same requests.
    pub seed: u64,
}

impl Cancellation {
    /// The delay after which request `index` is cancelled; `None` for a request left to finish.
    /// Decided by the request's index and the seed alone, whatever the order of sending.
    pub fn delay_for(&self, index: usize) -> Option<Duration> {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        rng.set_stream(index as u64);
        (rng.random::<f64>() < self.fraction).then_some(self.delay)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn picked(cancellation: &Cancellation, num_requests: usize) -> Vec<usize> {
        (0..num_requests)
            .filter(|&i| cancellation.delay_for(i).is_some())
            .collect()
    }

    #[test]
    fn the_share_is_as_asked_and_the_seed_decides_which() {
        let cancellation = Cancellation {
            fraction: 0.25,
            delay: Duration::from_millis(300),
            seed: 7,
        };
        let chosen = picked(&cancellation, 4_000);
        // Binomial(4000, 0.25): standard deviation ≈ 27.
        assert!((900..=1100).contains(&chosen.len()), "{}", chosen.len());
        assert_eq!(picked(&cancellation, 4_000), chosen, "reproducible");
        let other_seed = Cancellation {
            seed: 8,
            ..cancellation
        };
        assert_ne!(picked(&other_seed, 4_000), chosen);
        assert_eq!(
            cancellation.delay_for(chosen[0]),
            Some(Duration::from_millis(300))
        );
    }

    #[test]
    fn none_and_all_are_exact() {
        let none = Cancellation {
            fraction: 0.0,
            delay: Duration::ZERO,
            seed: 1,
        };
        assert!(picked(&none, 500).is_empty());
        let all = Cancellation {
            fraction: 1.0,
            ..none
        };
        assert_eq!(picked(&all, 500).len(), 500);
    }
}
