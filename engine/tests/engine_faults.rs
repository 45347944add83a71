//! The engine under faults, end to end: a model that panics mid-step, and a stream rejected as a
//! duplicate that must not cancel the request holding its id.
#![allow(clippy::unwrap_used)]

mod common;

use common::gate::{token_budget, BudgetedExecutor};
use common::*;
use pagoda_engine::testing::TinyLlamaSpec;
use pagoda_engine::{EngineConfig, EngineError, FinishReason, TokenEvent};

/// Wraps a real model and panics when it sees a poison token, as a buggy kernel might.
#[derive(Debug)]
struct PanicsOnToken {
    inner: Box<dyn pagoda_engine::models::CausalLm>,
    poison: u32,
}

impl pagoda_engine::models::CausalLm for PanicsOnToken {
    fn config(&self) -> &pagoda_engine::models::ModelConfig {
        self.inner.config()
    }
    fn device(&self) -> &candle_core::Device {
        self.inner.device()
    }
    fn forward(
        &self,
        input: &pagoda_engine::models::ModelInput,
        meta: &pagoda_engine::attention::AttnMetadata,
        kv: &mut dyn pagoda_engine::attention::PagedKvCache,
    ) -> pagoda_engine::Result<candle_core::Tensor> {
        let ids = input.token_ids.to_vec1::<u32>().unwrap();
        assert!(
            !ids.contains(&self.poison),
            "poison token reached the model"
        );
        self.inner.forward(input, meta, kv)
    }
}

#[test]
fn a_panicking_model_fails_its_step_but_not_the_engine() {
    let model = tiny_model(&TinyLlamaSpec::default());
    let inner = pagoda_engine::models::load_model(
        &model.path,
        &candle_core::Device::Cpu,
        Default::default(),
    )
    .unwrap();
    let handle = pagoda_engine::start_engine_with_model(
        EngineConfig::default(),
        Box::new(PanicsOnToken { inner, poison: 13 }),
    )
    .unwrap();
    let mut poisoned = handle
        .validate(request(&handle, vec![1, 13, 2], greedy(4)))
        .and_then(|r| handle.submit(r))
        .unwrap();
    match poisoned.blocking_next() {
        Some(TokenEvent::Error(EngineError::Execution(message))) => {
            assert!(message.contains("panicked"), "{message}")
        }
        other => panic!("expected an execution error, got {other:?}"),
    }
    wait_until_idle(&handle);
    assert_eq!(
        run_one(&handle, request(&handle, vec![1, 2, 3], greedy(4)))
            .tokens
            .len(),
        4
    );
    handle.shutdown();
}

#[test]
fn dropping_a_stream_rejected_as_duplicate_leaves_the_original_running() {
    // The executor gives one token, then none until the test adds to its budget: the original
    // is still running when the duplicates arrive, however slow or fast the machine.
    let budget = token_budget(1);
    let model = pagoda_engine::models::ModelConfig::mock(256, vec![2], 256);
    let executor_budget = budget.clone();
    let handle = pagoda_engine::start_engine_with_executor(EngineConfig::default(), model, |_| {
        Ok(Box::new(BudgetedExecutor::new(10, executor_budget)))
    })
    .unwrap();
    let id = handle.next_request_id();
    let mut long = greedy(50);
    long.1.max_tokens = Some(50);
    let original =
        pagoda_engine::EngineRequest::new(id, vec![3; 20], long.0.clone(), long.1.clone());
    let mut original_stream = handle
        .validate(original)
        .and_then(|r| handle.submit(r))
        .unwrap();
    assert!(matches!(
        original_stream.blocking_next(),
        Some(TokenEvent::Token(_))
    ));
    let duplicate =
        pagoda_engine::EngineRequest::new(id, vec![4; 20], long.0.clone(), long.1.clone());
    let mut duplicate_stream = handle
        .validate(duplicate)
        .and_then(|r| handle.submit(r))
        .unwrap();
    assert!(matches!(
        duplicate_stream.blocking_next(),
        Some(TokenEvent::Error(EngineError::DuplicateRequest(_)))
    ));
    // A duplicate dropped before its error is read must not cancel the original either.
    drop(
        handle
            .validate(pagoda_engine::EngineRequest::new(
                id,
                vec![5; 20],
                long.0.clone(),
                long.1,
            ))
            .and_then(|r| handle.submit(r))
            .unwrap(),
    );
    drop(duplicate_stream);
    // Commands are handled in order: once this reply is in, so are the drops above.
    handle.blocking_reset_prefix_cache().unwrap();
    budget.fetch_add(49, std::sync::atomic::Ordering::SeqCst);
    let events: Vec<TokenEvent> = std::iter::from_fn(|| original_stream.blocking_next()).collect();
    assert!(
        matches!(
            events.last(),
            Some(TokenEvent::Finished {
                reason: FinishReason::Length,
                ..
            })
        ),
        "the original must run to its end: {:?}",
        events.last()
    );
    assert_eq!(events.len(), 50, "49 more tokens and the final event");
    handle.shutdown();
}
