//! The engine series the scraper reads, by base name (the namespace prefix comes from the
//! server). Each statistic names its series in the order they are tried: the current name
//! first, then what older vLLM releases or the router aliases call it. The tests check every
//! series here against docs/metric-names.txt, the list of what pagoda-server exports.

pub const REQUEST_SUCCESS: &[&str] = &["request_success_total"];
pub const TIME_TO_FIRST_TOKEN: &[&str] = &["time_to_first_token_seconds"];
/// vLLM before 0.11 called inter-token latency `time_per_output_token_seconds`.
pub const INTER_TOKEN_LATENCY: &[&str] = &[
    "inter_token_latency_seconds",
    "time_per_output_token_seconds",
];
pub const TIME_PER_OUTPUT_TOKEN: &[&str] = &["request_time_per_output_token_seconds"];
pub const E2E_LATENCY: &[&str] = &["e2e_request_latency_seconds"];
pub const QUEUE_TIME: &[&str] = &["request_queue_time_seconds"];
pub const PREFILL_TIME: &[&str] = &["request_prefill_time_seconds"];
pub const DECODE_TIME: &[&str] = &["request_decode_time_seconds"];
pub const NUM_PREEMPTIONS: &[&str] = &["num_preemptions_total"];
pub const PROMPT_TOKENS: &[&str] = &["prompt_tokens_total"];
pub const GENERATION_TOKENS: &[&str] = &["generation_tokens_total"];
pub const PREFIX_CACHE_QUERIES: &[&str] = &[
    "prefix_cache_queries_total",
    "gpu_prefix_cache_queries_total",
];
pub const PREFIX_CACHE_HITS: &[&str] = &["prefix_cache_hits_total", "gpu_prefix_cache_hits_total"];
pub const NUM_REQUESTS_RUNNING: &[&str] = &["num_requests_running"];
pub const NUM_REQUESTS_WAITING: &[&str] = &["num_requests_waiting"];
pub const KV_CACHE_USAGE: &[&str] = &["kv_cache_usage_perc", "gpu_cache_usage_perc"];

pub const SPEC_DECODE_NUM_DRAFTS: &str = "spec_decode_num_drafts_total";
pub const SPEC_DECODE_NUM_DRAFT_TOKENS: &str = "spec_decode_num_draft_tokens_total";
pub const SPEC_DECODE_NUM_ACCEPTED_TOKENS: &str = "spec_decode_num_accepted_tokens_total";
pub const SPEC_DECODE_NUM_ACCEPTED_TOKENS_PER_POS: &str =
    "spec_decode_num_accepted_tokens_per_pos_total";

/// Every statistic's series, for the tests.
#[cfg(test)]
pub const ALL: [&[&str]; 20] = [
    REQUEST_SUCCESS,
    TIME_TO_FIRST_TOKEN,
    INTER_TOKEN_LATENCY,
    TIME_PER_OUTPUT_TOKEN,
    E2E_LATENCY,
    QUEUE_TIME,
    PREFILL_TIME,
    DECODE_TIME,
    NUM_PREEMPTIONS,
    PROMPT_TOKENS,
    GENERATION_TOKENS,
    PREFIX_CACHE_QUERIES,
    PREFIX_CACHE_HITS,
    NUM_REQUESTS_RUNNING,
    NUM_REQUESTS_WAITING,
    KV_CACHE_USAGE,
    &[SPEC_DECODE_NUM_DRAFTS],
    &[SPEC_DECODE_NUM_DRAFT_TOKENS],
    &[SPEC_DECODE_NUM_ACCEPTED_TOKENS],
    &[SPEC_DECODE_NUM_ACCEPTED_TOKENS_PER_POS],
];

/// Names only other servers export: read when pagoda's own is absent.
#[cfg(test)]
pub const OTHER_SERVERS_ONLY: [&str; 1] = ["time_per_output_token_seconds"];

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/metric-names.txt: every exported family, one `name type` line each.
    const METRIC_LIST: &str = include_str!("../../../../docs/metric-names.txt");

    fn listed() -> Vec<&'static str> {
        METRIC_LIST
            .lines()
            .filter(|line| !line.is_empty() && !line.starts_with('#'))
            .filter_map(|line| line.split(' ').next())
            .collect()
    }

    #[test]
    fn every_series_read_is_one_pagoda_server_exports() {
        let listed = listed();
        assert!(listed.len() > 40, "docs/metric-names.txt: {listed:?}");
        let is_listed = |name: &str| listed.contains(&name);
        for names in ALL {
            // The current name, under both namespaces.
            for namespace in ["pagoda", "vllm"] {
                let name = format!("{namespace}:{}", names[0]);
                assert!(is_listed(&name), "{name} is read but not listed");
            }
            // A fallback: a vLLM name pagoda exports too (a router alias), or another server's.
            for base in &names[1..] {
                let exported = is_listed(&format!("vllm:{base}"));
                assert!(
                    exported || OTHER_SERVERS_ONLY.contains(base),
                    "vllm:{base} is read but neither listed nor another server's"
                );
            }
        }
    }

    #[test]
    fn names_of_other_servers_are_fallbacks_the_list_lacks() {
        let listed = listed();
        for base in OTHER_SERVERS_ONLY {
            assert!(ALL.iter().any(|names| names[1..].contains(&base)), "{base}");
            for namespace in ["pagoda", "vllm"] {
                let name = format!("{namespace}:{base}");
                assert!(!listed.contains(&name.as_str()), "{name} is pagoda's own");
            }
        }
    }
}
