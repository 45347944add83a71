//! A client's per-request measurements, read from its result file: pagoda-bench's raw records
//! (`--save-detailed`), or `vllm bench serve --save-detailed`'s arrays. Times are on the client's
//! own clock, whatever its origin (pagoda-bench: seconds from its run's start; vLLM:
//! `time.perf_counter()`): the alignment estimates the offset, it never assumes one.

use anyhow::{bail, Context};
use serde_json::Value;

use crate::record::RequestRecord;

/// One successful request as the client timed it.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientRequest {
    /// The `x-request-id` it was sent with.
    pub request_id: String,
    pub send_s: f64,
    /// Arrival of each chunk carrying text.
    pub chunk_times_s: Vec<f64>,
    pub end_s: f64,
    pub output_tokens: usize,
    /// Whether `end_s` is after the stream's end (`[DONE]`, pagoda-bench) or at its last text
    /// chunk (vLLM: "only token chunks advance the request end").
    pub ends_at_done: bool,
}

/// Which client wrote a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientKind {
    PagodaBench,
    Vllm,
}

/// The successful requests of `result`; `prefix` overrides the request-id prefix the result
/// records (pagoda-bench records it; vLLM's must be given: its `--request-id-prefix`).
pub fn client_requests(
    result: &Value,
    prefix: Option<&str>,
) -> anyhow::Result<(ClientKind, Vec<ClientRequest>)> {
    if let Some(records) = result.pointer("/pagoda/records") {
        let prefix = match prefix {
            Some(prefix) => prefix.to_string(),
            None => result
                .pointer("/pagoda/run/request_id_prefix")
                .and_then(Value::as_str)
                .context("the result records no request_id_prefix: give --request-id-prefix")?
                .to_string(),
        };
        let records: Vec<RequestRecord> = serde_json::from_value(records.clone())?;
        let requests = records
            .iter()
            .filter(|r| r.is_success())
            .map(|r| ClientRequest {
                request_id: format!("{prefix}{}", r.index),
                send_s: r.actual_send_s,
                chunk_times_s: r.chunk_times_s.clone(),
                end_s: r.end_s,
                output_tokens: r.output_tokens,
                ends_at_done: true,
            })
            .collect();
        return Ok((ClientKind::PagodaBench, requests));
    }
    if result.get("start_times").is_some() {
        let prefix = prefix.context("a vLLM result: give its --request-id-prefix")?;
        return Ok((ClientKind::Vllm, vllm_requests(result, prefix)?));
    }
    bail!(
        "no per-request data: run pagoda-bench with --save-detailed, or vLLM with --save-detailed"
    )
}

/// vLLM's arrays, in request order: request `i` was `{prefix}{i}`; chunk times are the start
/// plus the TTFT, then each ITL in turn; the end is the last text chunk (vLLM's latency stops
/// there, before `[DONE]`); failed requests (non-empty error text) skipped.
fn vllm_requests(result: &Value, prefix: &str) -> anyhow::Result<Vec<ClientRequest>> {
    let array = |key: &str| {
        result
            .get(key)
            .and_then(Value::as_array)
            .with_context(|| format!("the vLLM result has no {key:?} array"))
    };
    let (starts, ttfts, itls) = (array("start_times")?, array("ttfts")?, array("itls")?);
    let (latencies, output_lens) = (array("latencies")?, array("output_lens")?);
    let errors = result.get("errors").and_then(Value::as_array);
    let mut requests = Vec::with_capacity(starts.len());
    for i in 0..starts.len() {
        let failed = errors
            .and_then(|e| e.get(i))
            .and_then(Value::as_str)
            .is_some_and(|text| !text.is_empty());
        let number = |values: &[Value]| values.get(i).and_then(Value::as_f64);
        let (Some(send_s), Some(ttft_s), Some(latency_s)) =
            (number(starts), number(ttfts), number(latencies))
        else {
            continue;
        };
        if failed || latency_s <= 0.0 {
            continue;
        }
        let mut chunk_times_s = vec![send_s + ttft_s];
        for gap in itls.get(i).and_then(Value::as_array).into_iter().flatten() {
            let last = chunk_times_s[chunk_times_s.len() - 1];
            chunk_times_s.push(last + gap.as_f64().unwrap_or(0.0));
        }
        requests.push(ClientRequest {
            request_id: format!("{prefix}{i}"),
            send_s,
            chunk_times_s,
            end_s: send_s + latency_s,
            output_tokens: output_lens.get(i).and_then(Value::as_u64).unwrap_or(0) as usize,
            ends_at_done: false,
        });
    }
    Ok(requests)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn vllm_arrays_become_requests_with_cumulative_chunk_times() {
        let result = json!({
            "start_times": [100.0, 100.5], "ttfts": [0.2, 0.1], "itls": [[0.05, 0.05], []],
            "latencies": [0.31, 0.0], "output_lens": [3, 0], "errors": ["", "boom"],
        });
        let (kind, requests) = client_requests(&result, Some("v-")).expect("read");
        assert_eq!(kind, ClientKind::Vllm);
        assert_eq!(requests.len(), 1, "the failed one is skipped");
        let first = &requests[0];
        assert_eq!(first.request_id, "v-0");
        let expected = [100.2, 100.25, 100.3];
        assert_eq!(first.chunk_times_s.len(), 3);
        for (got, want) in first.chunk_times_s.iter().zip(expected) {
            assert!((got - want).abs() < 1e-9, "{:?}", first.chunk_times_s);
        }
        assert!((first.end_s - 100.31).abs() < 1e-12);
        assert!(
            client_requests(&result, None).is_err(),
            "vLLM needs its prefix"
        );
        assert!(client_requests(&json!({}), Some("x")).is_err());
    }
}
