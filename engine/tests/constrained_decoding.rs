//! Constrained decoding end to end on a tiny model: every token a constrained sequence draws is
//! one its grammar allowed, the sequence stops with `stop` when the grammar is complete (even
//! with `ignore_eos`), the matcher sees exactly the tokens the client sees — through temperature
//! sampling, batching with unconstrained requests, and preemption by recompute — and the
//! unconstrained requests of the batch are untouched.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::{Arc, Mutex};

use common::*;
use pagoda_engine::testing::TinyLlamaSpec;
use pagoda_engine::{
    ConstraintError, ConstraintMatcher, EngineConfig, EngineRequest, FinishReason, SamplingParams,
    TokenConstraint, TokenMask,
};

/// `num_digits` tokens from `10..20`, then token 30: a tiny regular language over token ids.
#[derive(Debug)]
struct DigitsThenEnd {
    num_digits: usize,
    /// Every matcher's accepted tokens, one list per started matcher.
    accepted: Arc<Mutex<Vec<Vec<u32>>>>,
}

#[derive(Debug)]
struct DigitsMatcher {
    num_digits: usize,
    accepted: Arc<Mutex<Vec<Vec<u32>>>>,
    index: usize,
    num_accepted: usize,
    finished: bool,
}

impl TokenConstraint for DigitsThenEnd {
    fn start(&self) -> Box<dyn ConstraintMatcher> {
        let mut all = self.accepted.lock().unwrap();
        all.push(Vec::new());
        Box::new(DigitsMatcher {
            num_digits: self.num_digits,
            accepted: Arc::clone(&self.accepted),
            index: all.len() - 1,
            num_accepted: 0,
            finished: false,
        })
    }
}

impl DigitsMatcher {
    fn allowed(&self) -> std::ops::Range<u32> {
        if self.num_accepted < self.num_digits {
            10..20
        } else {
            30..31
        }
    }
}

impl ConstraintMatcher for DigitsMatcher {
    fn fill_next_mask(&mut self, mask: &mut TokenMask) -> Result<(), ConstraintError> {
        self.allowed().for_each(|id| mask.allow(id));
        Ok(())
    }

    fn accept(&mut self, token_id: u32) -> Result<(), ConstraintError> {
        if !self.allowed().contains(&token_id) || self.finished {
            return Err(ConstraintError::Failed(format!(
                "token {token_id} is not allowed here"
            )));
        }
        self.accepted.lock().unwrap()[self.index].push(token_id);
        self.num_accepted += 1;
        self.finished = self.num_accepted > self.num_digits;
        Ok(())
    }

    fn is_finished(&self) -> bool {
        self.finished
    }
}

const NUM_DIGITS: usize = 9;
const MAX_TOKENS: usize = 24;

fn constrained(
    handle: &pagoda_engine::EngineHandle,
    prompt: Vec<u32>,
    seed: u64,
    constraint: &Arc<DigitsThenEnd>,
) -> EngineRequest {
    let (_, stop) = greedy(MAX_TOKENS);
    let sampling = SamplingParams {
        temperature: 1.0,
        seed: Some(seed),
        ..SamplingParams::default()
    };
    let mut request = EngineRequest::new(handle.next_request_id(), prompt, sampling, stop);
    request.constraint = Some(Arc::clone(constraint) as Arc<dyn TokenConstraint>);
    request
}

fn run_mixed(model: &TinyModel, prompts: &[Vec<u32>], config: EngineConfig) -> Vec<Outcome> {
    let constraint = Arc::new(DigitsThenEnd {
        num_digits: NUM_DIGITS,
        accepted: Arc::default(),
    });
    let handle = start(model, config);
    let requests: Vec<EngineRequest> = prompts
        .iter()
        .enumerate()
        .map(|(i, prompt)| match i % 2 {
            0 => constrained(&handle, prompt.clone(), i as u64, &constraint),
            _ => request(&handle, prompt.clone(), greedy(MAX_TOKENS)),
        })
        .collect();
    let outcomes = run_all(&handle, requests);
    wait_until_idle(&handle);
    handle.shutdown();
    let mut accepted = constraint.accepted.lock().unwrap().clone();
    let mut constrained_outputs: Vec<Vec<u32>> =
        outcomes.iter().step_by(2).map(Outcome::token_ids).collect();
    accepted.sort();
    constrained_outputs.sort();
    assert_eq!(
        accepted, constrained_outputs,
        "each matcher accepted exactly its sequence's tokens (preemption does not resample)"
    );
    outcomes
}

fn assert_constrained(outcome: &Outcome, label: &str) {
    let ids = outcome.token_ids();
    assert_eq!(ids.len(), NUM_DIGITS + 1, "{label}: {ids:?}");
    assert!(
        ids[..NUM_DIGITS].iter().all(|id| (10..20).contains(id)),
        "{label}: {ids:?}"
    );
    assert_eq!(ids[NUM_DIGITS], 30, "{label}");
    assert_eq!(
        outcome.reason,
        FinishReason::Stop {
            stop_token_id: None
        },
        "{label}: a complete grammar stops the sequence despite ignore_eos"
    );
}

#[test]
fn constrained_sequences_follow_their_grammar_and_leave_the_others_alone() {
    let spec = TinyLlamaSpec::default();
    let model = tiny_model(&spec);
    let prompts = random_prompts(10, 60, spec.vocab_size as u32, 5);
    let handle = start(&model, EngineConfig::default());
    let solo: Vec<Vec<u32>> = prompts
        .iter()
        .skip(1)
        .step_by(2)
        .map(|p| run_one(&handle, request(&handle, p.clone(), greedy(MAX_TOKENS))).token_ids())
        .collect();
    handle.shutdown();

    // 40 blocks of 4 tokens (256 bytes per token in the default f16 cache) while requests need
    // up to 21 blocks each: preemptions happen.
    let tight = EngineConfig {
        block_size: 4,
        kv_cache_memory_bytes: Some(40 * 4 * 256),
        max_model_len: Some(128),
        ..EngineConfig::default()
    };
    // Prompt lookup proposes tokens to every row: the grammar cuts them at the first forbidden
    // one, and each matcher still sees exactly its sequence's tokens (checked in `run_mixed`).
    let speculating = EngineConfig {
        speculative: Some(pagoda_engine::SpeculativeConfig {
            method: pagoda_engine::spec_decode::SpeculativeMethod::Ngram(
                pagoda_engine::spec_decode::NgramConfig {
                    prompt_lookup_min: 1,
                    prompt_lookup_max: 2,
                },
            ),
            num_speculative_tokens: 3,
            disable_by_batch_size: None,
        }),
        ..tight.clone()
    };
    let regimes = [
        ("normal", EngineConfig::default()),
        ("tight KV", tight),
        ("tight KV, speculating", speculating),
    ];
    for (label, config) in regimes {
        let outcomes = run_mixed(&model, &prompts, config);
        for (i, outcome) in outcomes.iter().enumerate() {
            if i % 2 == 0 {
                assert_constrained(outcome, &format!("{label}: request {i}"));
            } else {
                assert_eq!(outcome.token_ids(), solo[i / 2], "{label}: request {i}");
            }
        }
        if label == "tight KV" {
            let num_preemptions: u32 = outcomes.iter().map(|o| o.num_preemptions).sum();
            assert!(num_preemptions > 0, "the tight budget forces preemptions");
        }
    }
}

#[test]
fn different_seeds_draw_different_allowed_tokens() {
    let spec = TinyLlamaSpec::default();
    let model = tiny_model(&spec);
    let prompts = vec![vec![1, 2, 3, 4]; 6];
    let outcomes = run_mixed(&model, &prompts, EngineConfig::default());
    let constrained: Vec<Vec<u32>> = outcomes.iter().step_by(2).map(Outcome::token_ids).collect();
    assert!(
        constrained.windows(2).any(|w| w[0] != w[1]),
        "the mask restricts the draw, it does not make it greedy: {constrained:?}"
    );
}

/// Allows tokens `10..20` but refuses the `refuse_at`-th token it is given (a mask and a matcher
/// that disagree), or allows nothing from then on (`empty_mask`).
#[derive(Debug)]
struct BreaksAt {
    refuse_at: usize,
    empty_mask: bool,
}

#[derive(Debug)]
struct BreakingMatcher {
    refuse_at: usize,
    empty_mask: bool,
    num_accepted: usize,
}

impl TokenConstraint for BreaksAt {
    fn start(&self) -> Box<dyn ConstraintMatcher> {
        Box::new(BreakingMatcher {
            refuse_at: self.refuse_at,
            empty_mask: self.empty_mask,
            num_accepted: 0,
        })
    }
}

impl ConstraintMatcher for BreakingMatcher {
    fn fill_next_mask(&mut self, mask: &mut TokenMask) -> Result<(), ConstraintError> {
        if !(self.empty_mask && self.num_accepted == self.refuse_at) {
            (10..20).for_each(|id| mask.allow(id));
        }
        Ok(())
    }

    fn accept(&mut self, token_id: u32) -> Result<(), ConstraintError> {
        if self.num_accepted == self.refuse_at {
            // As llguidance does when a token needs more parser work than its limits allow.
            return Err(ConstraintError::TooComplex(format!(
                "token {token_id} refused"
            )));
        }
        self.num_accepted += 1;
        Ok(())
    }

    fn is_finished(&self) -> bool {
        false
    }
}

#[test]
fn a_grammar_that_cannot_go_on_ends_its_request_with_an_error_not_a_stop() {
    let model = tiny_model(&TinyLlamaSpec::default());
    let handle = start(&model, EngineConfig::default());
    for empty_mask in [false, true] {
        let mut request = request(&handle, vec![1, 2, 3], greedy(MAX_TOKENS));
        request.constraint = Some(Arc::new(BreaksAt {
            refuse_at: 4,
            empty_mask,
        }));
        let mut stream = handle.submit(handle.validate(request).unwrap()).unwrap();
        let mut tokens = Vec::new();
        let error = loop {
            match stream.blocking_next().expect("a final event") {
                pagoda_engine::TokenEvent::Token(token) => tokens.push(token.token_id),
                pagoda_engine::TokenEvent::Error(error) => break error,
                other => panic!("empty_mask {empty_mask}: expected an error, got {other:?}"),
            }
        };
        // The kind of failure reaches the caller: a grammar over the matcher's limits is the
        // client's to simplify, an empty mask is not.
        let expected_too_complex = !empty_mask;
        assert!(
            matches!(
                &error,
                pagoda_engine::EngineError::Constraint(kind)
                    if matches!(kind, ConstraintError::TooComplex(_)) == expected_too_complex
            ),
            "empty_mask {empty_mask}: {error}"
        );
        assert_eq!(tokens.len(), 4, "the breaking token is not output");
        assert!(tokens.iter().all(|id| (10..20).contains(id)), "{tokens:?}");
        wait_until_idle(&handle);
    }
    // The engine goes on serving.
    let after = run_one(&handle, request(&handle, vec![1, 2, 3], greedy(3)));
    assert_eq!(after.tokens.len(), 3);
    handle.shutdown();
}
