//! `BatchSampler`: one step's logits (a `[rows, vocab]` tensor on the model's device) in, one
//! token per row out, for the whole batch at once. The model runner owns it; the scheduler only
//! ever sees the tokens.
//!
//! Rows whose token is the plain argmax of the model's logits (greedy with no ban, bias, penalty
//! or log-probabilities this step) are decided on the tensor's device, and only their ids cross
//! to the host. On a GPU, random rows with nothing but a temperature, top-k / top-p / min-p and
//! perhaps a grammar, and greedy rows with a grammar, are decided there too, a grammar's mask
//! uploaded with its row (`device_rows`). Every other row is sampled on the host by its
//! sequence's pipeline, rows in parallel; on a GPU only those rows are copied, through
//! page-locked memory (`staging`). Each sequence draws from its own seeded RNG, one number per
//! step, so its tokens do not depend on the batch.

use std::cell::RefCell;
use std::collections::HashMap;

use candle_core::{DType, Tensor, D};
use rayon::prelude::*;

use super::device::DeviceSampler;
use super::device_rows::decide_on_device;
use super::filters::argmax;
use super::sampler::{SampledToken, SamplerScratch};
use super::staging::HostStaging;
use super::state::SequenceSamplingState;
use crate::error::{EngineError, Result};
use crate::request::{EngineRequest, RequestId};

thread_local! {
    pub(super) static SCRATCH: RefCell<SamplerScratch> = RefCell::new(SamplerScratch::default());
}

/// The sampling state of every admitted sequence, and the step's batched sampling.
#[derive(Debug, Default)]
pub struct BatchSampler {
    eos_token_ids: Vec<u32>,
    vocab_size: usize,
    states: HashMap<RequestId, SequenceSamplingState>,
    /// The host copy of the rows sampled there, reused every step.
    pub(super) staging: HostStaging,
    /// The plain random rows' kernel, on a GPU.
    device: DeviceSampler,
}

impl BatchSampler {
    /// A sampler for logits rows of `vocab_size` entries.
    pub fn new(eos_token_ids: Vec<u32>, vocab_size: usize) -> Self {
        Self {
            eos_token_ids,
            vocab_size,
            states: HashMap::new(),
            staging: HostStaging::default(),
            device: DeviceSampler::default(),
        }
    }

    /// A request was admitted (its seed resolved).
    pub fn add(&mut self, request: &EngineRequest) {
        let state = SequenceSamplingState::new(request, &self.eos_token_ids, self.vocab_size);
        self.states.insert(request.id, state);
    }

    /// Whether any of `ids` follows a grammar (its mask is worth computing ahead).
    pub fn any_constrained(&self, ids: &[RequestId]) -> bool {
        ids.iter()
            .any(|id| self.states.get(id).is_some_and(|s| s.is_constrained()))
    }

    /// Computes the grammar masks of `ids`' next tokens, sequences in parallel; the runner calls
    /// it while the step's forward pass runs. Sampling computes any mask still missing.
    pub fn prepare_masks(&mut self, ids: &[RequestId]) {
        let mut constrained: Vec<&mut SequenceSamplingState> = self
            .states
            .iter_mut()
            .filter(|(id, state)| state.is_constrained() && ids.contains(id))
            .map(|(_, state)| state)
            .collect();
        constrained
            .par_iter_mut()
            .for_each(|state| state.prepare_mask());
    }

    /// A request ended.
    pub fn release(&mut self, id: RequestId) {
        self.states.remove(&id);
    }

    /// Sequences with a sampling state.
    #[cfg(feature = "testing")]
    pub fn num_sequences(&self) -> usize {
        self.states.len()
    }

    /// One token for each row of `logits` (`[rows, vocab]`), row `i` being sequence `ids[i]`.
    pub fn sample(&mut self, logits: &Tensor, ids: &[RequestId]) -> Result<Vec<SampledToken>> {
        // On the CPU the host pipeline is the device; elsewhere plain-greedy rows stay there.
        let greedy_on_device = !logits.device().is_cpu();
        self.sample_rows_of(logits, ids, greedy_on_device)
    }

    fn sample_rows_of(
        &mut self,
        logits: &Tensor,
        ids: &[RequestId],
        greedy_on_device: bool,
    ) -> Result<Vec<SampledToken>> {
        let (num_rows, vocab_size) = logits.dims2()?;
        if num_rows != ids.len() {
            return Err(EngineError::Execution(format!(
                "{num_rows} logits rows for {} sampling sequences",
                ids.len()
            )));
        }
        let mut states = self.take_states(ids)?;
        let sampled = sample_rows(
            logits,
            &mut states,
            vocab_size,
            greedy_on_device,
            (&mut self.staging, &mut self.device),
        );
        self.put_back(ids, states);
        sampled
    }

    /// Takes the states of `ids` for a step (all or none: an unknown id is an error).
    pub(super) fn take_states(&mut self, ids: &[RequestId]) -> Result<Vec<SequenceSamplingState>> {
        let mut states = Vec::with_capacity(ids.len());
        for id in ids {
            match self.states.remove(id) {
                Some(state) => states.push(state),
                None => {
                    self.put_back(ids, states);
                    return Err(EngineError::Execution(format!(
                        "no sampling state for request {}",
                        id.0
                    )));
                }
            }
        }
        Ok(states)
    }

    /// Returns the states taken for a step (the first `states.len()` of `ids`).
    pub(super) fn put_back(&mut self, ids: &[RequestId], states: Vec<SequenceSamplingState>) {
        for (id, state) in ids.iter().zip(states) {
            self.states.insert(*id, state);
        }
    }
}

fn sample_rows(
    logits: &Tensor,
    states: &mut [SequenceSamplingState],
    vocab_size: usize,
    greedy_on_device: bool,
    (staging, device): (&mut HostStaging, &mut DeviceSampler),
) -> Result<Vec<SampledToken>> {
    let logits = logits.to_dtype(DType::F32)?;
    let plain: Vec<bool> = states
        .iter()
        .map(SequenceSamplingState::is_plain_greedy)
        .collect();
    let mut tokens: Vec<Option<SampledToken>> = vec![None; states.len()];
    if greedy_on_device && plain.contains(&true) {
        let argmax = if device.serves(&logits) {
            device.argmax(&logits)?
        } else {
            logits.argmax(D::Minus1)?.to_vec1::<u32>()?
        };
        for row in (0..states.len()).filter(|&row| plain[row]) {
            tokens[row] = Some(states[row].take_chosen(argmax[row]));
        }
    }
    if greedy_on_device && device.serves(&logits) {
        decide_on_device(&logits, states, &mut tokens, device)?;
    }
    let host_rows: Vec<usize> = (0..states.len()).filter(|&i| tokens[i].is_none()).collect();
    if !host_rows.is_empty() {
        let values = host_values(&logits, &host_rows, states.len(), staging)?;
        // Plain-greedy rows on the host: the row's argmax, no copy and no thread hand-off.
        for (row_logits, &row) in values.chunks(vocab_size).zip(&host_rows) {
            if plain[row] {
                let token_id = argmax(row_logits).map_or(0, |index| index as u32);
                tokens[row] = Some(states[row].take_chosen(token_id));
            }
        }
        sample_in_parallel(states, &mut tokens, values, &host_rows, vocab_size)?;
    }
    Ok(tokens.into_iter().flatten().collect())
}

/// The rows still undecided go through their sequences' pipelines, in parallel. `values` holds
/// the rows of `host_rows`, in that order.
fn sample_in_parallel(
    states: &mut [SequenceSamplingState],
    tokens: &mut [Option<SampledToken>],
    values: &[f32],
    host_rows: &[usize],
    vocab_size: usize,
) -> Result<()> {
    let mut work: Vec<(usize, &mut SequenceSamplingState, &[f32])> = Vec::new();
    let mut chunks = values.chunks(vocab_size).zip(host_rows).peekable();
    for (row, state) in states.iter_mut().enumerate() {
        while chunks.peek().is_some_and(|&(_, &r)| r < row) {
            chunks.next();
        }
        if let Some(&(row_logits, &r)) = chunks.peek() {
            if r == row && tokens[row].is_none() {
                work.push((row, state, row_logits));
            }
        }
    }
    let sampled: Vec<Result<(usize, SampledToken)>> = work
        .par_iter_mut()
        .map(|(row, state, row_logits)| {
            SCRATCH.with(|scratch| {
                let token = state.sample(row_logits, &mut scratch.borrow_mut())?;
                Ok((*row, token))
            })
        })
        .collect();
    for result in sampled {
        let (row, token) = result?;
        tokens[row] = Some(token);
    }
    Ok(())
}

/// The host copy of the rows to sample there: all of them as one copy, or only those rows.
pub(super) fn host_values<'a>(
    logits: &Tensor,
    rows: &[usize],
    num_rows: usize,
    staging: &'a mut HostStaging,
) -> Result<&'a [f32]> {
    if rows.len() == num_rows {
        return staging.copy(logits);
    }
    let index: Vec<u32> = rows.iter().map(|&r| r as u32).collect();
    let index = Tensor::new(index.as_slice(), logits.device())?;
    staging.copy(&logits.index_select(&index, 0)?)
}

#[cfg(test)]
mod tests {
    use candle_core::Device;

    use super::*;
    use crate::request::{SamplingParams, StopConditions};

    fn request(id: u64, sampling: SamplingParams, min_tokens: usize) -> EngineRequest {
        let stop = StopConditions {
            min_tokens,
            ..StopConditions::default()
        };
        EngineRequest::new(RequestId(id), vec![1, 2, 3], sampling, stop)
    }

    /// Rows with distinct argmaxes; EOS (id 0) is the argmax of row 2.
    fn logits(num_rows: usize, vocab_size: usize) -> Tensor {
        let values: Vec<f32> = (0..num_rows * vocab_size)
            .map(|i| ((i * 7919) % 1009) as f32 / 100.0)
            .collect();
        let mut values = values;
        if num_rows > 2 {
            values[2 * vocab_size] = 50.0;
        }
        Tensor::from_vec(values, (num_rows, vocab_size), &Device::Cpu).expect("tensor")
    }

    fn sampler(requests: &[EngineRequest]) -> BatchSampler {
        let mut sampler = BatchSampler::new(vec![0], 500);
        for request in requests {
            sampler.add(request);
        }
        sampler
    }

    #[test]
    fn device_argmax_rows_equal_the_host_pipeline() {
        let seeded = |seed| SamplingParams {
            temperature: 0.8,
            top_p: 0.9,
            seed: Some(seed),
            ..SamplingParams::default()
        };
        let requests = vec![
            request(1, SamplingParams::greedy(), 0),
            request(2, seeded(5), 0),
            // Greedy but EOS banned by min_tokens: must not be decided by the plain argmax.
            request(3, SamplingParams::greedy(), 4),
            request(
                4,
                SamplingParams {
                    logprobs: Some(2),
                    ..SamplingParams::greedy()
                },
                0,
            ),
            request(5, seeded(6), 0),
        ];
        let ids: Vec<RequestId> = requests.iter().map(|r| r.id).collect();
        let logits = logits(5, 300);
        let mut host = sampler(&requests);
        let mut device = sampler(&requests);
        for step in 0..6 {
            let a = host.sample_rows_of(&logits, &ids, false).expect("host");
            let b = device.sample_rows_of(&logits, &ids, true).expect("device");
            assert_eq!(a, b);
            // EOS is banned before min_tokens (4), and the row's argmax once allowed.
            assert_eq!(a[2].token_id == 0, step >= 4, "step {step}");
            assert!(a[3].logprob.is_some() && a[3].top_logprobs.len() == 2);
        }
    }

    #[test]
    fn logprobs_are_the_raw_rows_log_softmax_within_1e_5() {
        let sampling = SamplingParams {
            temperature: 0.7,
            repetition_penalty: 1.5,
            // Forces token 3, which the raw logits do not rank in their top 3.
            logit_bias: vec![(3, 100.0)],
            logprobs: Some(3),
            seed: Some(1),
            ..SamplingParams::default()
        };
        let requests = vec![request(1, sampling, 2)];
        let logits = logits(1, 500);
        let row: Vec<f64> = logits
            .flatten_all()
            .and_then(|t| t.to_vec1::<f32>())
            .expect("row")
            .into_iter()
            .map(f64::from)
            .collect();
        let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let log_total = row.iter().map(|l| (l - max).exp()).sum::<f64>().ln() + max;
        let mut by_logit: Vec<usize> = (0..row.len()).collect();
        by_logit.sort_by(|&a, &b| row[b].total_cmp(&row[a]).then(a.cmp(&b)));
        let mut batch = sampler(&requests);
        for _ in 0..5 {
            let token = batch
                .sample(&logits, &[RequestId(1)])
                .expect("samples")
                .remove(0);
            let expected = row[token.token_id as usize] - log_total;
            let logprob = f64::from(token.logprob.expect("asked for"));
            assert!((logprob - expected).abs() < 1e-5, "{logprob} vs {expected}");
            let top_ids: Vec<usize> = token
                .top_logprobs
                .iter()
                .map(|&(id, _)| id as usize)
                .collect();
            assert_eq!(
                top_ids,
                by_logit[..3],
                "penalties and bias do not touch the reported top-n"
            );
            for &(id, value) in &token.top_logprobs {
                assert!((f64::from(value) - (row[id as usize] - log_total)).abs() < 1e-5);
            }
        }
    }

    #[test]
    fn unknown_sequences_and_row_mismatches_are_errors_that_keep_the_states() {
        let requests = vec![request(1, SamplingParams::greedy(), 0)];
        let mut batch = sampler(&requests);
        let logits = logits(1, 10);
        assert!(batch.sample(&logits, &[RequestId(9)]).is_err());
        assert!(batch
            .sample(&logits, &[RequestId(1), RequestId(1)])
            .is_err());
        assert_eq!(batch.num_sequences(), 1);
        assert_eq!(
            batch.sample(&logits, &[RequestId(1)]).expect("known").len(),
            1
        );
        batch.release(RequestId(1));
        assert_eq!(batch.num_sequences(), 0);
    }
}
