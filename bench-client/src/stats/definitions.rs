//! How every reported number is computed: printed under the report, saved in the JSON
//! (`pagoda.definitions`) and kept in step with docs/bench-metrics.md.

/// `(name, how it is computed)`. Names are the metric names of `--percentile-metrics` and the
/// summary's field names. "Send" is the actual send time unless stated otherwise.
pub const DEFINITIONS: &[(&str, &str)] = &[
    (
        "ttft",
        "Time to first token: arrival of the first content chunk − send. Successful requests.",
    ),
    (
        "tpot",
        "Time per output token (vLLM): (E2EL − TTFT) ÷ (output tokens − 1), for requests with \
         more than one output token.",
    ),
    (
        "itl",
        "Inter-token latency per chunk (vLLM's ITL): every gap between consecutive content \
         chunks is one sample, whatever number of tokens the chunk carried.",
    ),
    (
        "itl_per_token",
        "Inter-token latency per token: each chunk gap divided evenly among the tokens the later \
         chunk carried, one sample per token. Tokens per chunk are not observed: the first chunk \
         is taken to carry one token and the other output tokens are split as evenly as integers \
         allow over the later chunks. Equals itl when every chunk carries one token.",
    ),
    ("e2el", "End-to-end latency: end of the response − send."),
    (
        "ttst",
        "Time to second token: arrival of the second content chunk − send (the first chunk \
         carries one token, as for itl_per_token).",
    ),
    (
        "client_queue_time",
        "Actual − target send time: how long the request waited in the client (for a free slot \
         under --max-concurrency, or because the client fell behind).",
    ),
    (
        "e2el_including_client_queue",
        "End of the response − target send time.",
    ),
    (
        "mean, median, std, pP",
        "Over all samples of successful requests, in ms. std is the population standard \
         deviation (ddof = 0); pP is numpy's default percentile (linear interpolation between \
         closest ranks, Hyndman & Fan method 7), computed bit for bit as numpy does.",
    ),
    (
        "duration",
        "Last response end − run start (the earliest target or actual send; t = 0 is when the \
         first request was due). Failed requests included.",
    ),
    (
        "request_throughput",
        "Successful requests ÷ duration. input_throughput, output_throughput and \
         total_token_throughput divide the successful requests' prompt, output and prompt + \
         output tokens by the same duration.",
    ),
    (
        "token counts",
        "From the server's usage when it sent one, else counted with the tokenizer; \
         token_count_sources says how many requests used each.",
    ),
    (
        "max_output_tokens_per_s",
        "Most output tokens received in one 1-second bucket [start + i, start + i + 1), tokens \
         placed at their chunk's arrival by the itl_per_token split. Successful requests.",
    ),
    (
        "max_concurrent_requests",
        "Summary: most requests in flight at once; a request is in flight over [send, end), \
         failed requests included. The vLLM-compatible top-level key: vLLM's meaning, most \
         successful requests active during one 1-second bucket from the first send.",
    ),
    (
        "request_goodput",
        "Successful requests meeting every --goodput SLO (value ≤ limit; TPOT counts as 0 for a \
         single-token response; a missing value fails) ÷ duration.",
    ),
    (
        "errors_by_kind",
        "Failed requests grouped by kind: connection, http_<status>, stream, timeout.",
    ),
    (
        "send integrity",
        "scheduled_rate = (requests − 1) ÷ (last − first target send); achieved_rate the same \
         over actual sends. send lag = actual − target send; client lag = the part of it not \
         spent waiting for a --max-concurrency slot. fell_behind when achieved < min_rate_ratio \
         × scheduled (finite rate, no --max-concurrency), p99 client lag > \
         max_p99_send_lag_ms, or a client lag > max_send_lag_ms (not for an all-at-once burst).",
    ),
    (
        "steady_state",
        "Window [start, end): end = the last send (drain excluded); start = the first time the \
         requests in flight reach their time-weighted median over the sending period (ramp-up \
         excluded); none when shorter than a tenth of the run. Inside it: latencies of the \
         successful requests sent in the window; requests and prompt tokens of those that ended \
         in it; output tokens that arrived in it; all ÷ window length.",
    ),
    (
        "per_model",
        "Per model name the requests sent (the LoRA adapters of --lora-modules): completed and \
         failed requests, output tokens, request and output throughput ÷ the whole run's \
         duration (so the models' throughputs add up to the run's), and TTFT, TPOT, ITL and \
         E2EL of its successful requests with the run's percentiles and p99.",
    ),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Metric;

    #[test]
    fn every_metric_is_defined_once() {
        for metric in Metric::ALL {
            let count = DEFINITIONS
                .iter()
                .filter(|(n, _)| *n == metric.name())
                .count();
            assert_eq!(count, 1, "{}", metric.name());
        }
        let mut names: Vec<&str> = DEFINITIONS.iter().map(|(n, _)| *n).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), DEFINITIONS.len());
    }
}
