//! `StepCostModel`: what an engine step costs, learned online from measured step times, so that
//! a time target serves every model and machine without calibration.
//!
//! A step's cost is modelled as `decode(d) + c · p`: `d` sequences decoding (one token each), `p`
//! prefill tokens (sequences given more than one token), where
//! - `decode(d) = a + b · d` is fitted on decode-only steps (`DecayedLineFit`), and
//! - `c`, the cost of one prefill token, is fitted on steps that mix decodes and prefill, from
//!   what each took beyond the decode cost of its `d` (`DecayedRatioFit`).
//!
//! Prefill-only steps teach neither: no stream waits on them, and their large chunks cost
//! differently per token than the small ones a time budget gives. Each fit forgets only through
//! samples of its own kind, so a long run of decode-only steps does not erase the prefill cost.
//! Context length is not modelled; the forgetting follows it as it grows.

use std::time::Duration;

use super::decayed_fit::{DecayedLineFit, DecayedRatioFit};
use crate::batch::BatchPlan;

/// Each sample weighs this much of the one after it: fits follow about the last 20 samples.
const DECAY_PER_SAMPLE: f64 = 0.95;
/// Ridge on the decode slope, in sequences²: with batch sizes that barely vary the slope goes to
/// 0 rather than to whatever noise says.
const MIN_BATCH_SIZE_VARIANCE: f64 = 0.01;
/// Decode-only steps seen before the model predicts.
pub const MIN_DECODE_SAMPLES: u64 = 8;
/// Mixed steps seen before the model predicts a prefill cost.
pub const MIN_PREFILL_SAMPLES: u64 = 3;

/// What the cost model sees of a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StepShape {
    /// Sequences computing one token.
    pub num_decode_seqs: usize,
    /// Tokens of the sequences computing more than one (prefill chunks, recomputation).
    pub num_prefill_tokens: usize,
}

impl StepShape {
    pub fn of(plan: &BatchPlan) -> Self {
        let mut shape = Self::default();
        for seq in &plan.seqs {
            // A decode verifying proposals is still a decode: its extra rows cost like one.
            match seq.token_ids_without_drafts().len() {
                1 => shape.num_decode_seqs += 1,
                n => shape.num_prefill_tokens += n,
            }
        }
        shape
    }
}

/// Learned step costs (see the module's documentation).
#[derive(Debug, Clone, PartialEq)]
pub struct StepCostModel {
    decode: DecayedLineFit,
    prefill_token: DecayedRatioFit,
}

impl Default for StepCostModel {
    fn default() -> Self {
        Self {
            decode: DecayedLineFit::new(DECAY_PER_SAMPLE, MIN_BATCH_SIZE_VARIANCE),
            prefill_token: DecayedRatioFit::new(DECAY_PER_SAMPLE),
        }
    }
}

impl StepCostModel {
    /// Learns from a step of `shape` that took `duration`.
    pub fn record(&mut self, shape: StepShape, duration: Duration) {
        let seconds = duration.as_secs_f64();
        let decode_seqs = shape.num_decode_seqs as f64;
        match (shape.num_decode_seqs, shape.num_prefill_tokens) {
            (0, _) => {}
            (_, 0) => self.decode.add(decode_seqs, seconds),
            (num_decode_seqs, num_prefill_tokens) => {
                if let Some(decode) = self.decode_seconds(num_decode_seqs) {
                    self.prefill_token
                        .add(num_prefill_tokens as f64, seconds - decode);
                }
            }
        }
    }

    /// The predicted cost of a decode-only step of `num_decode_seqs` sequences; `None` until
    /// `MIN_DECODE_SAMPLES` decode-only steps were seen.
    pub fn decode_step_cost(&self, num_decode_seqs: usize) -> Option<Duration> {
        self.decode_seconds(num_decode_seqs)
            .map(Duration::from_secs_f64)
    }

    /// The predicted cost of one more prefill token in a step with decodes; `None` until
    /// `MIN_PREFILL_SAMPLES` mixed steps were seen, or when they say prefill costs nothing
    /// (noise on a machine too fast to tell).
    pub fn prefill_token_cost(&self) -> Option<Duration> {
        if self.prefill_token.num_samples() < MIN_PREFILL_SAMPLES {
            return None;
        }
        let seconds = self.prefill_token.ratio()?;
        (seconds > 0.0 && seconds.is_finite()).then(|| Duration::from_secs_f64(seconds))
    }

    fn decode_seconds(&self, num_decode_seqs: usize) -> Option<f64> {
        if self.decode.num_samples() < MIN_DECODE_SAMPLES {
            return None;
        }
        let seconds = self.decode.predict(num_decode_seqs as f64)?.max(0.0);
        seconds.is_finite().then_some(seconds)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::ScheduledSeq;
    use crate::request::RequestId;

    fn ms(value: f64) -> Duration {
        Duration::from_secs_f64(value / 1e3)
    }

    fn shape(num_decode_seqs: usize, num_prefill_tokens: usize) -> StepShape {
        StepShape {
            num_decode_seqs,
            num_prefill_tokens,
        }
    }

    /// A machine where a step costs 5 ms + 4 ms per decode + 0.5 ms per prefill token.
    fn true_cost(shape: StepShape) -> Duration {
        ms(5.0 + 4.0 * shape.num_decode_seqs as f64 + 0.5 * shape.num_prefill_tokens as f64)
    }

    fn assert_close(actual: Option<Duration>, expected_ms: f64) {
        let actual_ms = actual.map(|d| d.as_secs_f64() * 1e3);
        assert!(
            actual_ms.is_some_and(|a| (a - expected_ms).abs() < 0.05),
            "{actual_ms:?} ms, expected {expected_ms} ms"
        );
    }

    #[test]
    fn a_plan_splits_into_decodes_and_prefill_tokens() {
        let seq = |n: usize| ScheduledSeq {
            id: RequestId(n as u64),
            num_computed_tokens: 0,
            new_token_ids: vec![1; n],
            num_draft_tokens: 0,
            block_table: Vec::new(),
            sample: true,
            lora: None, prompt_logprobs: None,
        };
        let plan = BatchPlan {
            seqs: vec![seq(1), seq(16), seq(1), seq(100)],
            num_batched_tokens: 118,
        };
        assert_eq!(StepShape::of(&plan), shape(2, 116));
    }

    #[test]
    fn nothing_is_predicted_before_enough_samples() {
        let mut model = StepCostModel::default();
        for i in 0..MIN_DECODE_SAMPLES - 1 {
            let step = shape(1 + i as usize % 4, 0);
            model.record(step, true_cost(step));
        }
        assert_eq!(model.decode_step_cost(2), None);
        model.record(shape(3, 0), true_cost(shape(3, 0)));
        assert_close(model.decode_step_cost(2), 13.0);
        for _ in 0..MIN_PREFILL_SAMPLES - 1 {
            model.record(shape(3, 32), true_cost(shape(3, 32)));
        }
        assert_eq!(model.prefill_token_cost(), None);
        model.record(shape(3, 32), true_cost(shape(3, 32)));
        assert_close(model.prefill_token_cost(), 0.5);
    }

    #[test]
    fn mixed_steps_before_the_decode_fit_and_prefill_only_steps_teach_nothing() {
        let mut model = StepCostModel::default();
        for _ in 0..10 {
            model.record(shape(2, 64), ms(999.0));
            model.record(shape(0, 2048), ms(999.0));
        }
        for d in (1..=8).cycle().take(16) {
            model.record(shape(d, 0), true_cost(shape(d, 0)));
        }
        assert_close(model.decode_step_cost(8), 37.0);
        assert_eq!(model.prefill_token_cost(), None);
        for p in [16, 48, 128] {
            model.record(shape(6, p), true_cost(shape(6, p)));
            model.record(shape(0, 2048), ms(1.0));
        }
        assert_close(model.prefill_token_cost(), 0.5);
    }

    #[test]
    fn decode_only_steps_do_not_erase_the_prefill_cost() {
        let mut model = StepCostModel::default();
        for d in (4..=8).cycle().take(20) {
            model.record(shape(d, 0), true_cost(shape(d, 0)));
        }
        for _ in 0..5 {
            model.record(shape(7, 16), true_cost(shape(7, 16)));
        }
        for _ in 0..10_000 {
            model.record(shape(8, 0), true_cost(shape(8, 0)));
        }
        assert_close(model.prefill_token_cost(), 0.5);
    }

    #[test]
    fn the_model_follows_a_machine_that_slows_down() {
        let mut model = StepCostModel::default();
        let slower = |step: StepShape| true_cost(step) * 2;
        for round in 0..200 {
            let cost = if round < 100 { true_cost } else { slower };
            let d = 4 + round % 5;
            model.record(shape(d, 0), cost(shape(d, 0)));
            model.record(shape(d, 0), cost(shape(d, 0)));
            model.record(shape(d, 24), cost(shape(d, 24)));
        }
        let decode = model.decode_step_cost(8).map_or(0.0, |d| d.as_secs_f64() * 1e3);
        assert!((decode - 74.0).abs() < 0.5, "{decode} ms");
        let per_token = model.prefill_token_cost().map_or(0.0, |d| d.as_secs_f64() * 1e3);
        assert!((per_token - 1.0).abs() < 0.05, "{per_token} ms");
    }

    #[test]
    fn a_prefill_cost_of_zero_or_less_is_no_prediction() {
        let mut model = StepCostModel::default();
        for _ in 0..MIN_DECODE_SAMPLES {
            model.record(shape(4, 0), ms(20.0));
        }
        for _ in 0..5 {
            model.record(shape(4, 16), ms(19.0));
        }
        assert_eq!(model.prefill_token_cost(), None);
    }
}
