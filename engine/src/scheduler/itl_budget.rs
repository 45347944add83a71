//! `ItlBudget`: how many prefill tokens the next step may carry so that the streams decoding in
//! it wait no longer than the ITL target. The engine core feeds it measured step times and asks
//! it for each step's prefill allowance; the scheduler takes that allowance as a number.
//!
//! With `d` sequences decoding, the step's time is predicted as `decode(d) + c · p`
//! (`StepCostModel`), so prefill gets `p = (target − decode(d)) / c` tokens, and never fewer
//! than `MIN_PREFILL_TOKENS` so that prefill always progresses. No sequence decoding, no target
//! (`Off`), or a cost model still learning: no limit beyond `max_num_batched_tokens`, as without
//! a target.
//!
//! `Auto` aims at `max(AUTO_TARGET_FACTOR × decode(d), decode(d) + AUTO_MIN_SLACK)`: a step
//! carrying prefill may take a quarter longer than a decode-only one, and at least a few
//! milliseconds longer where decode steps are short (GPUs), so chunks do not shrink to nothing.

use std::time::Duration;

use super::step_cost::{StepCostModel, StepShape};
use crate::config::ItlTarget;

/// `Auto`: a step carrying prefill may take this many times a decode-only step...
pub const AUTO_TARGET_FACTOR: f64 = 1.25;
/// ...and at least this much longer than one.
pub const AUTO_MIN_SLACK: Duration = Duration::from_millis(5);
/// Prefill tokens a step may carry beside decodes whatever the target. Small, so that where a
/// prefill token costs nearly a decode row (CPUs) a capped step stays near the target; a
/// minimum of one KV block (16) made such steps twice a decode step (docs/PERFORMANCE.md).
pub const MIN_PREFILL_TOKENS: usize = 4;
/// A target that moved by more than this share since the last one logged is logged again.
const LOG_CHANGE_RATIO: f64 = 0.25;

#[derive(Debug, Clone, PartialEq)]
pub struct ItlBudget {
    target: ItlTarget,
    min_prefill_tokens: usize,
    costs: StepCostModel,
    logged_target: Option<Duration>,
}

impl ItlBudget {
    /// A budget aiming at `target`, giving prefill at least `min_prefill_tokens` per step
    /// (`MIN_PREFILL_TOKENS` in the engine).
    pub fn new(target: ItlTarget, min_prefill_tokens: usize) -> Self {
        Self {
            target,
            min_prefill_tokens: min_prefill_tokens.max(1),
            costs: StepCostModel::default(),
            logged_target: None,
        }
    }

    /// Learns from a step of `shape` that took `duration`.
    pub fn record(&mut self, shape: StepShape, duration: Duration) {
        if self.target != ItlTarget::Off {
            self.costs.record(shape, duration);
        }
    }

    /// The step time aimed at while `num_decode_seqs` sequences decode; `None` when there is
    /// none (no target, nothing decoding, or `Auto` still learning the decode cost).
    pub fn step_target(&self, num_decode_seqs: usize) -> Option<Duration> {
        if num_decode_seqs == 0 {
            return None;
        }
        match self.target {
            ItlTarget::Off => None,
            ItlTarget::Fixed(target) => Some(target),
            ItlTarget::Auto => {
                let decode = self.costs.decode_step_cost(num_decode_seqs)?;
                Some(decode.mul_f64(AUTO_TARGET_FACTOR).max(decode + AUTO_MIN_SLACK))
            }
        }
    }

    /// The learned cost of one prefill token in a step with decodes, once known.
    pub fn prefill_token_cost(&self) -> Option<Duration> {
        match self.target {
            ItlTarget::Off => None,
            _ => self.costs.prefill_token_cost(),
        }
    }

    /// Most prefill tokens the next step may carry while `num_decode_seqs` sequences decode;
    /// `None`: no limit beyond the step's token budget.
    pub fn max_prefill_tokens(&mut self, num_decode_seqs: usize) -> Option<usize> {
        let target = self.step_target(num_decode_seqs)?;
        self.log_if_moved(target, num_decode_seqs);
        let decode = self.costs.decode_step_cost(num_decode_seqs)?;
        let per_token = self.costs.prefill_token_cost()?;
        Some(prefill_tokens_fitting(
            target,
            decode,
            per_token,
            self.min_prefill_tokens,
        ))
    }

    fn log_if_moved(&mut self, target: Duration, num_decode_seqs: usize) {
        let moved = self.logged_target.is_none_or(|logged| {
            (target.as_secs_f64() - logged.as_secs_f64()).abs()
                > LOG_CHANGE_RATIO * logged.as_secs_f64()
        });
        if moved {
            self.logged_target = Some(target);
            tracing::debug!(
                target_ms = target.as_secs_f64() * 1e3,
                num_decode_seqs,
                decode_step_ms = self
                    .costs
                    .decode_step_cost(num_decode_seqs)
                    .map(|d| d.as_secs_f64() * 1e3),
                prefill_token_ms = self
                    .costs
                    .prefill_token_cost()
                    .map(|d| d.as_secs_f64() * 1e3),
                "ITL target changed"
            );
        }
    }
}

/// Prefill tokens that fit in what `target` leaves after the decodes, at least `min_tokens`.
pub fn prefill_tokens_fitting(
    target: Duration,
    decode: Duration,
    per_token: Duration,
    min_tokens: usize,
) -> usize {
    let room = target.saturating_sub(decode).as_secs_f64();
    let tokens = (room / per_token.as_secs_f64()).floor();
    // `as` saturates (and maps NaN to 0); u32::MAX tokens is no limit at all.
    (tokens.min(u32::MAX as f64) as usize).max(min_tokens)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(value: f64) -> Duration {
        Duration::from_secs_f64(value / 1e3)
    }

    /// A step costs 5 ms + 4 ms per decode + 0.5 ms per prefill token.
    fn cost(num_decode_seqs: usize, num_prefill_tokens: usize) -> Duration {
        ms(5.0 + 4.0 * num_decode_seqs as f64 + 0.5 * num_prefill_tokens as f64)
    }

    /// A budget that has seen decode-only steps at 1..=8 sequences and a few mixed steps.
    fn trained(target: ItlTarget) -> ItlBudget {
        let mut budget = ItlBudget::new(target, MIN_PREFILL_TOKENS);
        for d in (1..=8).cycle().take(24) {
            let shape = StepShape {
                num_decode_seqs: d,
                num_prefill_tokens: 0,
            };
            budget.record(shape, cost(d, 0));
        }
        for p in [128, 64, 32, 16] {
            let shape = StepShape {
                num_decode_seqs: 7,
                num_prefill_tokens: p,
            };
            budget.record(shape, cost(7, p));
        }
        budget
    }

    #[test]
    fn tokens_fill_the_room_left_by_the_decodes_and_never_fall_below_the_minimum() {
        assert_eq!(prefill_tokens_fitting(ms(50.0), ms(30.0), ms(0.5), 16), 40);
        assert_eq!(prefill_tokens_fitting(ms(50.0), ms(45.0), ms(0.5), 16), 16);
        assert_eq!(prefill_tokens_fitting(ms(50.0), ms(80.0), ms(0.5), 16), 16);
        let huge = prefill_tokens_fitting(ms(1e6), ms(1.0), Duration::from_nanos(1), 16);
        assert_eq!(huge, u32::MAX as usize);
    }

    #[test]
    fn a_fixed_target_bounds_the_predicted_step() {
        let mut budget = trained(ItlTarget::Fixed(ms(60.0)));
        // 8 decodes cost 37 ms; 23 ms left at 0.5 ms a token.
        assert_eq!(budget.max_prefill_tokens(8), Some(46));
        // 2 decodes: 13 ms, 47 ms left (the ridge on the decode slope moves it by a hair).
        let two = budget.max_prefill_tokens(2);
        assert!(matches!(two, Some(93..=94)), "{two:?}");
        assert_eq!(budget.step_target(8), Some(ms(60.0)));
        let per_token = budget.prefill_token_cost().map(|d| d.as_secs_f64() * 1e3);
        assert!(per_token.is_some_and(|t| (t - 0.5).abs() < 1e-3), "{per_token:?}");
    }

    #[test]
    fn auto_aims_a_quarter_above_a_decode_step_and_at_least_the_slack() {
        let mut budget = trained(ItlTarget::Auto);
        // 8 decodes: 37 ms → 46.25 ms, 9.25 ms left: 18 tokens.
        let target = budget.step_target(8).map(|d| d.as_secs_f64() * 1e3);
        assert!(target.is_some_and(|t| (t - 46.25).abs() < 0.05), "{target:?}");
        assert_eq!(budget.max_prefill_tokens(8), Some(18));
        // 1 decode: 9 ms → 5 ms of slack (more than a quarter) → 10 tokens (9: the fit on
        // the decode slope puts one decode a hair above 9 ms).
        let target = budget.step_target(1).map(|d| d.as_secs_f64() * 1e3);
        assert!(target.is_some_and(|t| (t - 14.0).abs() < 0.1), "{target:?}");
        let one = budget.max_prefill_tokens(1);
        assert!(matches!(one, Some(9..=10)), "{one:?}");
    }

    #[test]
    fn a_target_below_the_decodes_cost_still_lets_prefill_progress() {
        let mut tight = trained(ItlTarget::Fixed(ms(1.0)));
        assert_eq!(tight.max_prefill_tokens(8), Some(MIN_PREFILL_TOKENS));
        assert_eq!(tight.max_prefill_tokens(1), Some(MIN_PREFILL_TOKENS));
    }

    #[test]
    fn no_decodes_off_or_still_learning_means_no_limit() {
        let mut budget = trained(ItlTarget::Auto);
        assert_eq!(budget.max_prefill_tokens(0), None);
        assert_eq!(budget.step_target(0), None);
        let mut off = trained(ItlTarget::Off);
        assert_eq!(off.max_prefill_tokens(8), None);
        assert_eq!((off.step_target(8), off.prefill_token_cost()), (None, None));
        let mut fresh = ItlBudget::new(ItlTarget::Fixed(ms(10.0)), 4);
        assert_eq!(fresh.max_prefill_tokens(8), None);
        let mut fresh_auto = ItlBudget::new(ItlTarget::Auto, 4);
        assert_eq!(fresh_auto.max_prefill_tokens(8), None);
        assert_eq!(fresh_auto.step_target(8), None);
    }
}
