//! The device rows' routing on every machine, with the kernels' host twins: which rows the device
//! decides, that a grammar's row takes only what its mask allows (greedy: the host pipeline's very
//! token), that its grammar advances and ends, and that a random row draws its sequence's uniform.

use std::sync::Arc;

use candle_core::{Device, Tensor};

use super::*;
use crate::constraint::{ConstraintError, ConstraintMatcher, TokenConstraint};
use crate::request::{EngineRequest, RequestId, SamplingParams, StopConditions};
use crate::sampling::sampler::SamplerScratch;
use crate::sampling::thresholds::{argmax_allowed, sample_allowed_by_thresholds};

const VOCAB: usize = 64;

/// The kernels' host twins, on CPU logits.
struct HostTwins;

impl RowKernels for HostTwins {
    fn argmax_allowed(&mut self, logits: &Tensor, rows: &[(usize, &TokenMask)]) -> Result<Vec<u32>> {
        let values = logits.to_vec2::<f32>()?;
        Ok(rows.iter().map(|(row, mask)| argmax_allowed(&values[*row], mask)).collect())
    }

    fn sample(&mut self, logits: &Tensor, rows: &[DeviceRow<'_>]) -> Result<Vec<u32>> {
        let values = logits.to_vec2::<f32>()?;
        Ok(rows
            .iter()
            .map(|r| sample_allowed_by_thresholds(&values[r.row], r.allowed, &r.filters, r.uniform as f32))
            .collect())
    }
}

/// Allows `steps[i]` at step `i` and is complete after the last; `fail` allows nothing.
#[derive(Debug)]
struct Steps {
    steps: Vec<Vec<u32>>,
}

#[derive(Debug)]
struct StepsMatcher {
    steps: Vec<Vec<u32>>,
    at: usize,
}

impl TokenConstraint for Steps {
    fn start(&self) -> Box<dyn ConstraintMatcher> {
        Box::new(StepsMatcher { steps: self.steps.clone(), at: 0 })
    }
}

impl ConstraintMatcher for StepsMatcher {
    fn fill_next_mask(&mut self, mask: &mut TokenMask) -> std::result::Result<(), ConstraintError> {
        for &token in self.steps.get(self.at).into_iter().flatten() {
            mask.allow(token);
        }
        Ok(())
    }

    fn accept(&mut self, token_id: u32) -> std::result::Result<(), ConstraintError> {
        if !self.steps.get(self.at).is_some_and(|s| s.contains(&token_id)) {
            return Err(ConstraintError::Failed(format!("{token_id} not allowed")));
        }
        self.at += 1;
        Ok(())
    }

    fn is_finished(&self) -> bool {
        self.at == self.steps.len()
    }
}

fn request(sampling: SamplingParams, steps: Option<Vec<Vec<u32>>>) -> EngineRequest {
    let mut request = EngineRequest::new(RequestId(1), vec![1, 2, 3], sampling, StopConditions::default());
    request.constraint = steps.map(|steps| Arc::new(Steps { steps }) as Arc<dyn TokenConstraint>);
    request
}

fn state(sampling: SamplingParams, steps: Option<Vec<Vec<u32>>>) -> SequenceSamplingState {
    SequenceSamplingState::new(&request(sampling, steps), &[0], VOCAB)
}

fn seeded(seed: u64) -> SamplingParams {
    SamplingParams { temperature: 0.9, top_p: 0.95, seed: Some(seed), ..SamplingParams::default() }
}

/// Rows whose best tokens the grammars below do not allow.
fn logits(num_rows: usize) -> Tensor {
    let values: Vec<f32> = (0..num_rows * VOCAB).map(|i| ((i * 7919) % 101) as f32 / 10.0).collect();
    Tensor::from_vec(values, (num_rows, VOCAB), &Device::Cpu).expect("tensor")
}

#[test]
fn grammar_and_plain_random_rows_are_decided_on_the_device_and_the_rest_left() {
    let grammar = vec![vec![5, 9, 40], vec![0]];
    let penalized = SamplingParams { presence_penalty: 0.5, ..SamplingParams::greedy() };
    let with_logprobs = SamplingParams { logprobs: Some(1), ..seeded(2) };
    let mut states = vec![
        state(SamplingParams::greedy(), None),              // plain greedy: the batch argmax's
        state(SamplingParams::greedy(), Some(grammar.clone())), // greedy under a grammar
        state(seeded(7), Some(grammar.clone())),              // a draw under a grammar
        state(seeded(8), None),                               // a plain draw
        state(penalized, Some(grammar.clone())),              // a penalty: the host's
        state(with_logprobs, None),                           // log-probabilities: the host's
        state(SamplingParams::greedy(), Some(vec![vec![]])),  // a grammar that allows nothing
    ];
    let logits = logits(states.len());
    let values = logits.to_vec2::<f32>().expect("values");
    let mut tokens: Vec<Option<SampledToken>> = vec![None; states.len()];
    tokens[0] = Some(states[0].take_chosen(3));
    decide_on_device(&logits, &mut states, &mut tokens, &mut HostTwins).expect("decided");
    let decided: Vec<bool> = tokens.iter().map(Option::is_some).collect();
    assert_eq!(decided, [true, true, true, true, false, false, false]);

    // The greedy grammar row takes the host pipeline's very token; both grammar rows stay inside.
    let mut host = state(SamplingParams::greedy(), Some(grammar.clone()));
    let host_token = host.sample(&values[1], &mut SamplerScratch::default()).expect("sampled");
    assert_eq!(tokens[1].as_ref().map(|t| t.token_id), Some(host_token.token_id));
    for row in [1, 2] {
        let token = tokens[row].as_ref().expect("decided").token_id;
        assert!(grammar[0].contains(&token), "row {row}: {token}");
    }
    // The grammars advanced: next step only EOS is allowed, and taking it ends them.
    for row in [1, 2] {
        assert!(states[row].device_choice().is_some(), "row {row}");
        assert_eq!(states[row].device_mask().map(TokenMask::num_allowed), Some(1));
        let eos = states[row].take_chosen(0);
        assert!(eos.ends_constraint && eos.constraint_failure.is_none(), "row {row}");
    }
}

#[test]
fn a_device_draw_takes_its_sequence_s_uniform_and_draws_what_the_twin_draws() {
    let grammar = vec![(10..30).collect::<Vec<u32>>()];
    let mut states = vec![state(seeded(21), Some(grammar.clone())), state(seeded(22), None)];
    let logits = logits(2);
    let values = logits.to_vec2::<f32>().expect("values");
    let mut tokens = vec![None, None];
    decide_on_device(&logits, &mut states, &mut tokens, &mut HostTwins).expect("decided");
    for (row, steps) in [(0, Some(grammar.clone())), (1, None)] {
        let mut twin = state(seeded(21 + row as u64), steps);
        let uniform = twin.draw_uniform();
        let filters = match twin.device_choice() {
            Some(DeviceChoice::Draw(filters)) => filters,
            other => panic!("row {row}: {other:?}"),
        };
        let want = sample_allowed_by_thresholds(&values[row], twin.device_mask(), &filters, uniform as f32);
        assert_eq!(tokens[row].as_ref().map(|t| t.token_id), Some(want), "row {row}");
        // One number was drawn: the next draws agree.
        assert_eq!(states[row].draw_uniform(), twin.draw_uniform(), "row {row}");
    }
}
