//! The highest request rate that meets the goodput SLOs, found by bisection on the rate.
//!
//! Assumption: meeting the SLOs is monotonic in the rate — if a rate meets them, every lower
//! rate does too. Each probe is a whole benchmark run, so noise can break this near the edge;
//! the search then still ends with a rate that was *observed* to meet the SLOs and a failing rate
//! within the tolerance above it — one pass→fail transition, not necessarily the only one. Every
//! probe lies inside the current `[pass, fail]` bracket, so the trail itself can never show the
//! noise: re-run the answer (or run the search twice) before trusting it for capacity.
//!
//! Brackets. `low` is probed first. If it fails, the bracket expands downwards (halving) until a
//! rate meets; if it meets, `high` is probed and the bracket expands upwards (doubling) while it
//! keeps meeting. Then the bracket `[pass, fail]` is halved until
//! `fail − pass ≤ tolerance_rel · pass`. `max_iterations` bounds the number of runs in all
//! (expansion included), since each costs a benchmark's time.

use std::future::Future;

use serde::Serialize;

/// One probe: the rate it ran at and whether it met the SLOs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct BisectAttempt {
    pub rate: f64,
    pub meets_slos: bool,
}

/// Why the search stopped.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum BisectStop {
    /// The bracket is within the tolerance.
    Converged,
    /// `max_iterations` runs were spent first (the best rate so far is still reported).
    BudgetExhausted,
    /// A run failed to produce a verdict.
    RunFailed { rate: f64, message: String },
    /// The arguments were unusable; nothing ran.
    InvalidInput { message: String },
}

/// The search's answer and its trail.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BisectOutcome {
    /// The highest rate observed to meet the SLOs; `None` when none did.
    pub max_rate: Option<f64>,
    /// The lowest rate observed to fail them; `None` when none did.
    pub min_failing_rate: Option<f64>,
    pub attempts: Vec<BisectAttempt>,
    pub stop: BisectStop,
}

/// Searches `[low, high]` (expanded when needed) for the highest rate at which `run_at(rate)`
/// reports that the SLOs are met. See the module documentation for the assumptions.
pub async fn bisect_max_rate<F, Fut>(
    low: f64,
    high: f64,
    tolerance_rel: f64,
    max_iterations: usize,
    mut run_at: F,
) -> BisectOutcome
where
    F: FnMut(f64) -> Fut,
    Fut: Future<Output = anyhow::Result<bool>>,
{
    let mut search = Search {
        attempts: Vec::new(),
        max_iterations,
    };
    let stop = match validate(low, high, tolerance_rel, max_iterations) {
        Err(message) => BisectStop::InvalidInput { message },
        Ok(()) => match search.run(low, high, tolerance_rel, &mut run_at).await {
            Ok(()) => BisectStop::Converged,
            Err(stop) => stop,
        },
    };
    search.into_outcome(stop)
}

fn validate(low: f64, high: f64, tolerance_rel: f64, max_iterations: usize) -> Result<(), String> {
    if !(low.is_finite() && high.is_finite() && low > 0.0 && high > low) {
        return Err(format!(
            "need finite rates 0 < low < high, got low={low}, high={high}"
        ));
    }
    if !(tolerance_rel.is_finite() && tolerance_rel > 0.0) {
        return Err(format!("tolerance_rel must be > 0, got {tolerance_rel}"));
    }
    if max_iterations == 0 {
        return Err("max_iterations must be at least 1".into());
    }
    Ok(())
}

struct Search {
    attempts: Vec<BisectAttempt>,
    max_iterations: usize,
}

impl Search {
    async fn run<F, Fut>(
        &mut self,
        low: f64,
        high: f64,
        tolerance_rel: f64,
        run_at: &mut F,
    ) -> Result<(), BisectStop>
    where
        F: FnMut(f64) -> Fut,
        Fut: Future<Output = anyhow::Result<bool>>,
    {
        let (mut pass, mut fail) = if self.probe(low, run_at).await? {
            let mut pass = low;
            let mut rate = high;
            while self.probe(rate, run_at).await? {
                pass = rate;
                rate *= 2.0;
            }
            (pass, rate)
        } else {
            let mut fail = low;
            let mut rate = low / 2.0;
            while !self.probe(rate, run_at).await? {
                fail = rate;
                rate /= 2.0;
            }
            (rate, fail)
        };
        while fail - pass > tolerance_rel * pass {
            let mid = 0.5 * (pass + fail);
            if self.probe(mid, run_at).await? {
                pass = mid;
            } else {
                fail = mid;
            }
        }
        Ok(())
    }

    async fn probe<F, Fut>(&mut self, rate: f64, run_at: &mut F) -> Result<bool, BisectStop>
    where
        F: FnMut(f64) -> Fut,
        Fut: Future<Output = anyhow::Result<bool>>,
    {
        if self.attempts.len() >= self.max_iterations {
            return Err(BisectStop::BudgetExhausted);
        }
        match run_at(rate).await {
            Ok(meets_slos) => {
                self.attempts.push(BisectAttempt { rate, meets_slos });
                Ok(meets_slos)
            }
            Err(error) => Err(BisectStop::RunFailed {
                rate,
                message: format!("{error:#}"),
            }),
        }
    }

    fn into_outcome(self, stop: BisectStop) -> BisectOutcome {
        let rates = |meets: bool| {
            self.attempts
                .iter()
                .filter(move |a| a.meets_slos == meets)
                .map(|a| a.rate)
        };
        let max_rate = rates(true).max_by(f64::total_cmp);
        let min_failing_rate = rates(false).min_by(f64::total_cmp);
        BisectOutcome {
            max_rate,
            min_failing_rate,
            attempts: self.attempts,
            stop,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const LIMIT: f64 = 37.3;

    async fn meets_below_limit(rate: f64) -> anyhow::Result<bool> {
        Ok(rate <= LIMIT)
    }

    fn assert_found(outcome: &BisectOutcome, tolerance_rel: f64) {
        assert_eq!(outcome.stop, BisectStop::Converged);
        let found = outcome.max_rate.expect("a passing rate");
        let failing = outcome.min_failing_rate.expect("a failing rate");
        assert!(found <= LIMIT && failing > LIMIT, "{found} .. {failing}");
        assert!(failing - found <= tolerance_rel * found);
    }

    #[tokio::test]
    async fn finds_the_limit_inside_the_bracket() {
        let outcome = bisect_max_rate(1.0, 100.0, 0.01, 30, meets_below_limit).await;
        assert_found(&outcome, 0.01);
        assert_eq!(outcome.attempts[0].rate, 1.0);
        assert_eq!(outcome.attempts[1].rate, 100.0);
        // 99 → 0.37 needs about log2(99 / 0.37) ≈ 8 halvings after the two bracket probes.
        assert!(outcome.attempts.len() <= 11, "{}", outcome.attempts.len());
    }

    #[tokio::test]
    async fn expands_upwards_when_high_still_meets() {
        let outcome = bisect_max_rate(1.0, 5.0, 0.005, 30, meets_below_limit).await;
        assert_found(&outcome, 0.005);
        let probed: Vec<f64> = outcome.attempts.iter().take(5).map(|a| a.rate).collect();
        assert_eq!(probed, vec![1.0, 5.0, 10.0, 20.0, 40.0]);
    }

    #[tokio::test]
    async fn expands_downwards_when_low_fails() {
        let outcome = bisect_max_rate(200.0, 400.0, 0.01, 30, meets_below_limit).await;
        assert_found(&outcome, 0.01);
        let probed: Vec<f64> = outcome.attempts.iter().take(4).map(|a| a.rate).collect();
        assert_eq!(probed, vec![200.0, 100.0, 50.0, 25.0]);
    }

    #[tokio::test]
    async fn budget_bounds_the_runs_and_keeps_the_best_so_far() {
        let outcome = bisect_max_rate(1.0, 100.0, 1e-6, 5, meets_below_limit).await;
        assert_eq!(outcome.stop, BisectStop::BudgetExhausted);
        assert_eq!(outcome.attempts.len(), 5);
        let found = outcome.max_rate.expect("low met");
        assert!(found <= LIMIT);
    }

    #[tokio::test]
    async fn nothing_meets_within_the_budget() {
        let outcome = bisect_max_rate(1.0, 2.0, 0.01, 4, |_| async { Ok(false) }).await;
        assert_eq!(outcome.stop, BisectStop::BudgetExhausted);
        assert_eq!(outcome.max_rate, None);
        assert_eq!(outcome.min_failing_rate, Some(0.125));
    }

    #[tokio::test]
    async fn a_failed_run_stops_the_search() {
        let outcome = bisect_max_rate(1.0, 100.0, 0.01, 30, |rate| async move {
            anyhow::ensure!(rate < 60.0, "server crashed");
            Ok(rate <= LIMIT)
        })
        .await;
        assert_eq!(
            outcome.stop,
            BisectStop::RunFailed {
                rate: 100.0,
                message: "server crashed".into()
            }
        );
        assert_eq!(outcome.max_rate, Some(1.0));
    }

    #[tokio::test]
    async fn invalid_input_runs_nothing() {
        for (low, high, tolerance, iterations) in [
            (0.0, 1.0, 0.1, 5),
            (2.0, 1.0, 0.1, 5),
            (1.0, f64::INFINITY, 0.1, 5),
            (1.0, 2.0, 0.0, 5),
            (1.0, 2.0, 0.1, 0),
        ] {
            let outcome =
                bisect_max_rate(low, high, tolerance, iterations, meets_below_limit).await;
            assert!(
                matches!(outcome.stop, BisectStop::InvalidInput { .. }),
                "{low} {high}"
            );
            assert!(outcome.attempts.is_empty());
        }
    }

    #[tokio::test]
    async fn one_noisy_failure_ends_on_a_lower_transition() {
        // Meets below the limit except for one unlucky run at 25.75 (the second midpoint).
        let outcome = bisect_max_rate(1.0, 100.0, 0.01, 30, |rate| async move {
            Ok(rate <= LIMIT && rate != 25.75)
        })
        .await;
        assert_eq!(outcome.stop, BisectStop::Converged);
        assert_eq!(outcome.min_failing_rate, Some(25.75));
        assert!(outcome
            .max_rate
            .is_some_and(|r| r < 25.75 && r > 25.75 * 0.99));
    }
}
