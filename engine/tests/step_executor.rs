//! The `StepExecutor` seam through `start_engine_with_executor`: every request the engine
//! announces to its executor is released again, however it ends (finished, aborted, stream
//! dropped, failed step, shutdown), and an executor that breaks its contract fails only its step.
#![allow(clippy::unwrap_used)]

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pagoda_engine::batch::BatchPlan;
use pagoda_engine::mock::MockExecutor;
use pagoda_engine::models::ModelConfig;
use pagoda_engine::runner::{StepExecutor, StepOutput};
use pagoda_engine::{
    start_engine_with_executor, EngineConfig, EngineError, EngineHandle, EngineRequest,
    FinishReason, MockConfig, MockOutputLen, RequestId, RequestStream, SamplingParams,
    StopConditions, TokenEvent,
};

/// Prompts of this length make the executor return a row too many.
const BREAKING_PROMPT_LEN: usize = 13;

/// The mock, recording which requests it holds, and failing plans that hold a breaking prompt.
#[derive(Debug)]
struct Recording {
    inner: MockExecutor,
    live: Arc<Mutex<HashSet<RequestId>>>,
}

impl StepExecutor for Recording {
    fn execute(&mut self, plan: &BatchPlan) -> pagoda_engine::Result<StepOutput> {
        let output = self.inner.execute(plan)?;
        let breaking = plan
            .seqs
            .iter()
            .any(|s| s.num_computed_tokens == 0 && s.new_token_ids.len() == BREAKING_PROMPT_LEN);
        let mut output = output;
        if breaking {
            output.tokens.push(None);
        }
        Ok(output)
    }

    fn add_request(&mut self, request: &EngineRequest, max_output_tokens: usize) {
        assert!(self.live.lock().unwrap().insert(request.id), "added twice");
        self.inner.add_request(request, max_output_tokens);
    }

    fn release(&mut self, id: RequestId) {
        assert!(self.live.lock().unwrap().remove(&id), "{id} released twice");
        self.inner.release(id);
    }

    fn idle_until(&self) -> Option<std::time::Instant> {
        self.inner.idle_until()
    }
}

fn start() -> (EngineHandle, Arc<Mutex<HashSet<RequestId>>>) {
    let live = Arc::new(Mutex::new(HashSet::new()));
    let mock = MockConfig {
        ttft: Duration::from_millis(2),
        tpot: Duration::from_millis(2),
        jitter: 0.0,
        seed: 0,
        output_len: MockOutputLen::MaxTokens,
        output_token_ids: vec![40, 41],
        fail_after_tokens: None,
        stall: None,
        step_time_per_token: Duration::ZERO,
    };
    let recorder = live.clone();
    let model = ModelConfig::mock(1000, vec![2], 4096);
    let handle = start_engine_with_executor(EngineConfig::default(), model, move |info| {
        let inner = MockExecutor::new(mock, &info.model)?;
        Ok(Box::new(Recording {
            inner,
            live: recorder,
        }))
    })
    .unwrap();
    (handle, live)
}

fn submit(handle: &EngineHandle, prompt_len: usize, max_tokens: usize) -> RequestStream {
    let stop = StopConditions {
        max_tokens: Some(max_tokens),
        ..StopConditions::default()
    };
    let prompt = vec![7; prompt_len];
    let request = EngineRequest::new(
        handle.next_request_id(),
        prompt,
        SamplingParams::default(),
        stop,
    );
    handle
        .validate(request)
        .and_then(|r| handle.submit(r))
        .unwrap()
}

/// The stream's last event.
fn last_event(mut stream: RequestStream) -> TokenEvent {
    std::iter::from_fn(|| stream.blocking_next())
        .last()
        .unwrap()
}

fn wait_until_idle(handle: &EngineHandle) {
    for _ in 0..2000 {
        let stats = handle.stats();
        if stats.num_running == 0 && stats.num_waiting == 0 {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    panic!("never idle: {:?}", handle.stats());
}

#[test]
fn every_announced_request_is_released() {
    let (handle, live) = start();
    let length = |event: &TokenEvent| {
        matches!(
            event,
            TokenEvent::Finished {
                reason: FinishReason::Length,
                ..
            }
        )
    };
    assert!(length(&last_event(submit(&handle, 5, 4))));

    let mut aborted = submit(&handle, 6, 1000);
    let mut dropped = submit(&handle, 7, 1000);
    assert!(matches!(
        aborted.blocking_next(),
        Some(TokenEvent::Token(_))
    ));
    assert!(matches!(
        dropped.blocking_next(),
        Some(TokenEvent::Token(_))
    ));
    handle.abort(aborted.id()).unwrap();
    drop(dropped);
    let abort = last_event(aborted);
    assert!(matches!(
        abort,
        TokenEvent::Finished {
            reason: FinishReason::Abort,
            ..
        }
    ));
    wait_until_idle(&handle);

    // A step whose executor returns a row too many fails its requests; the engine goes on.
    let failed = last_event(submit(&handle, BREAKING_PROMPT_LEN, 4));
    assert!(
        matches!(&failed, TokenEvent::Error(EngineError::Execution(m)) if m.contains("rows")),
        "{failed:?}"
    );
    assert!(length(&last_event(submit(&handle, 9, 3))));

    let shut_down = submit(&handle, 8, 1000);
    handle.shutdown();
    let end = last_event(shut_down);
    assert!(matches!(
        end,
        TokenEvent::Finished {
            reason: FinishReason::Abort,
            ..
        }
    ));
    assert!(live.lock().unwrap().is_empty(), "never released: {live:?}");
    assert_eq!(handle.stats().num_kv_blocks_used, 0);
}
