//! `MockExecutor`: a `StepExecutor` with no model. Each request has a clock: its first token is
//! due `ttft` after its first scheduling, each next one `tpot` after the previous one (each delay
//! jittered). A step returns the token of every sampling sequence whose time has come and
//! "not ready" for the others; when nothing is ready it tells the engine how long to wait.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::config::{MockConfig, MockOutputLen, MockStall};
use crate::batch::BatchPlan;
use crate::error::{EngineError, Result};
use crate::events::PromptTokenLogprob;
use crate::models::ModelConfig;
use crate::request::{EngineRequest, RequestId};
use crate::runner::{StepExecutor, StepOutput};
use crate::sampling::SampledToken;

#[derive(Debug)]
pub struct MockExecutor {
    fail_after_tokens: Option<usize>,
    /// Taken (and slept) by the first step that reaches it.
    stall: Option<MockStall>,
    step_time_per_token: Duration,
    ttft: Duration,
    tpot: Duration,
    jitter: f64,
    output_len: MockOutputLen,
    output_token_ids: Vec<u32>,
    /// The EOS a drawn length ends with; `None` when the model declares none (never stops early).
    eos_token_id: Option<u32>,
    /// Draws each request's length and the seed of its delays, in arrival order.
    rng: ChaCha8Rng,
    requests: HashMap<RequestId, MockRequest>,
    idle_until: Option<Instant>,
}

/// One request's clock and position in its output.
#[derive(Debug)]
struct MockRequest {
    /// Draws this request's delays, so they do not depend on what else is batched.
    rng: ChaCha8Rng,
    /// When the next token is due; `None` until first scheduled.
    next_due: Option<Instant>,
    num_output_tokens: usize,
    /// The output position (1-based) that is EOS, if any.
    eos_position: Option<usize>,
    /// Where in `output_token_ids` this request's output starts.
    offset: usize,
}

impl MockExecutor {
    pub fn new(mock: MockConfig, model: &ModelConfig) -> Result<Self> {
        mock.validate(model)?;
        Ok(Self {
            ttft: mock.ttft,
            tpot: mock.tpot,
            jitter: mock.jitter,
            output_len: mock.output_len,
            output_token_ids: mock.output_token_ids,
            eos_token_id: model.eos_token_ids.first().copied(),
            rng: ChaCha8Rng::seed_from_u64(mock.seed),
            requests: HashMap::new(),
            idle_until: None,
            fail_after_tokens: mock.fail_after_tokens,
            stall: mock.stall,
            step_time_per_token: mock.step_time_per_token,
        })
    }

    /// Requests the executor keeps a clock for (those added and not yet released).
    #[cfg(feature = "testing")]
    pub fn num_requests(&self) -> usize {
        self.requests.len()
    }

    fn new_request(&mut self, id: RequestId, eos_position: Option<usize>) -> MockRequest {
        MockRequest {
            rng: ChaCha8Rng::seed_from_u64(self.rng.random()),
            next_due: None,
            num_output_tokens: 0,
            eos_position,
            offset: (id.0 % self.output_token_ids.len() as u64) as usize,
        }
    }

    /// Starts the clock of every sequence seen for the first time (a request the engine never
    /// announced gets a clock here too, without a drawn length).
    fn start_clocks(&mut self, plan: &BatchPlan, now: Instant) {
        for scheduled in &plan.seqs {
            if !self.requests.contains_key(&scheduled.id) {
                let request = self.new_request(scheduled.id, None);
                self.requests.insert(scheduled.id, request);
            }
            if let Some(request) = self.requests.get_mut(&scheduled.id) {
                if request.next_due.is_none() {
                    let ttft = jittered(&mut request.rng, self.ttft, self.jitter);
                    request.next_due = Some(now + ttft);
                }
            }
        }
    }

    /// The token of a sequence whose time has come, or `None`; moves its clock on.
    fn next_token(&mut self, id: RequestId, now: Instant) -> Option<u32> {
        let request = self.requests.get_mut(&id)?;
        if request.next_due? > now {
            return None;
        }
        request.next_due = Some(now + jittered(&mut request.rng, self.tpot, self.jitter));
        self.advance(id)
    }

    /// The request's next output token, taken without its clock (a verified proposal's).
    fn advance(&mut self, id: RequestId) -> Option<u32> {
        let request = self.requests.get_mut(&id)?;
        request.num_output_tokens += 1;
        let position = request.num_output_tokens;
        if request.eos_position == Some(position) {
            return self.eos_token_id;
        }
        let index = (request.offset + position - 1) % self.output_token_ids.len();
        Some(self.output_token_ids[index])
    }

    /// A due sequence's proposals checked against its own output: the proposed tokens that
    /// equal its next ones are accepted, and its token after them follows (the mock's stand-in
    /// for verification; what it would emit one step at a time, sooner).
    fn verify(&mut self, id: RequestId, drafts: &[u32], first: u32) -> (Vec<u32>, u32) {
        let mut accepted = Vec::new();
        let mut next = first;
        for &draft in drafts {
            if draft != next {
                break;
            }
            accepted.push(draft);
            match self.advance(id) {
                Some(token) => next = token,
                None => break,
            }
        }
        (accepted, next)
    }

    /// Whether a sampling sequence of `plan` has produced more than `num_tokens` tokens.
    fn any_past(&self, plan: &BatchPlan, num_tokens: usize) -> bool {
        plan.seqs.iter().filter(|s| s.sample).any(|s| {
            self.requests
                .get(&s.id)
                .is_some_and(|r| r.num_output_tokens > num_tokens)
        })
    }

    /// The earliest time a sampling sequence of `plan` is due.
    fn earliest_due(&self, plan: &BatchPlan) -> Option<Instant> {
        plan.seqs
            .iter()
            .filter(|s| s.sample)
            .filter_map(|s| self.requests.get(&s.id)?.next_due)
            .min()
    }
}

impl StepExecutor for MockExecutor {
    fn execute(&mut self, plan: &BatchPlan) -> Result<StepOutput> {
        let now = Instant::now();
        self.start_clocks(plan, now);
        let mut tokens: Vec<Option<u32>> = Vec::new();
        let mut accepted_drafts = Vec::new();
        for seq in plan.seqs.iter().filter(|s| s.sample) {
            let token = self.next_token(seq.id, now);
            let (accepted, token) = match token {
                Some(first) => {
                    let (accepted, next) = self.verify(seq.id, seq.draft_token_ids(), first);
                    (accepted, Some(next))
                }
                None => (Vec::new(), None),
            };
            tokens.push(token);
            accepted_drafts.push(accepted.into_iter().map(SampledToken::chosen).collect());
        }
        if !self.step_time_per_token.is_zero() {
            let num_tokens = u32::try_from(plan.num_batched_tokens).unwrap_or(u32::MAX);
            std::thread::sleep(self.step_time_per_token.saturating_mul(num_tokens));
        }
        if let Some(stall) = self.stall {
            if self.any_past(plan, stall.after_tokens) {
                self.stall = None;
                tracing::warn!(
                    duration_s = stall.duration.as_secs_f64(),
                    "mock stall injected"
                );
                std::thread::sleep(stall.duration);
            }
        }
        if let Some(limit) = self.fail_after_tokens {
            if self.any_past(plan, limit) {
                return Err(EngineError::Execution(format!(
                    "mock fault injected after {limit} tokens"
                )));
            }
        }
        // Wait only when the step did nothing but find every token not ready: a prefill chunk
        // left to compute, or a token just emitted, means the engine should step again at once.
        let all_waiting = plan.seqs.iter().all(|s| s.sample) && tokens.iter().all(Option::is_none);
        self.idle_until = if all_waiting {
            self.earliest_due(plan)
        } else {
            None
        };
        Ok(StepOutput {
            prompt_logprobs: certain_prompt_logprobs(plan),
            accepted_drafts,
            ..StepOutput::from_ids(tokens)
        })
    }

    fn add_request(&mut self, request: &EngineRequest, max_output_tokens: usize) {
        let length = self.output_len.draw(&mut self.rng);
        // EOS cannot come before `min_tokens` tokens (the sampler would ban it), unless ignored.
        let min_position = if request.stop.ignore_eos {
            1
        } else {
            request.stop.min_tokens + 1
        };
        let eos_position = self
            .eos_token_id
            .and(length)
            .map(|length| length.max(min_position))
            .filter(|&position| position <= max_output_tokens);
        let state = self.new_request(request.id, eos_position);
        self.requests.insert(request.id, state);
    }

    fn release(&mut self, id: RequestId) {
        self.requests.remove(&id);
    }

    fn idle_until(&self) -> Option<Instant> {
        self.idle_until
    }
}

/// `base` scaled by a factor drawn uniformly in `[1 − jitter, 1 + jitter]`.
fn jittered(rng: &mut ChaCha8Rng, base: Duration, jitter: f64) -> Duration {
    if jitter == 0.0 || base.is_zero() {
        return base;
    }
    base.mul_f64(1.0 + jitter * rng.random_range(-1.0..=1.0))
}

#[cfg(test)]
#[path = "executor_tests.rs"]
mod tests;

/// The mock's prompt log-probabilities: it has no distribution, so each prompt token is certain
/// (log-probability 0, rank 1, and itself as the one alternative), as its own tokens are.
fn certain_prompt_logprobs(plan: &BatchPlan) -> Vec<Vec<PromptTokenLogprob>> {
    plan.prompt_logprob_seqs()
        .map(|(_, rows)| {
            rows.target_ids
                .iter()
                .map(|&token_id| PromptTokenLogprob {
                    token_id,
                    logprob: 0.0,
                    rank: 1,
                    top_logprobs: match rows.num_top {
                        0 => Vec::new(),
                        _ => vec![(token_id, 0.0)],
                    },
                })
                .collect()
        })
        .collect()
}
