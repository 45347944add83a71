//! The `--save-result` JSON: `vllm bench serve`'s keys with vLLM's meanings, so that scripts
//! and dashboards written for vLLM read our files unchanged, plus everything of ours under one
//! key, `"pagoda"`, so that no addition can collide with a key vLLM adds later or with a
//! `--metadata` key (vLLM writes those at the top level; so do we).
//!
//! vLLM's keys (vllm/benchmarks/serve.py, `main_async` and `benchmark`) and how we fill them:
//! - setup ([`VLLM_SETUP_KEYS`]): from [`RunMetadata`]; `endpoint_type` repeats `backend` as in
//!   vLLM; `request_rate` is the string `"inf"` for an unlimited rate; `ramp_up_*`
//!   ([`VLLM_RAMP_UP_KEYS`]) only with a ramp-up, as in vLLM;
//! - results ([`VLLM_RESULT_KEYS`]): from [`BenchSummary`]; `request_goodput` is null without
//!   `--goodput`; `rtfx` (audio) is 0;
//! - per metric, for each `--percentile-metrics` name `M` and `--metric-percentiles` `P`:
//!   `mean_M_ms`, `median_M_ms`, `std_M_ms`, `pP_M_ms` ([`percentile_key`]); 0 for a metric
//!   without samples (vLLM's `np.mean(x or 0)`; `pagoda.summary.metrics` has `null` there);
//! - per request ([`VLLM_PER_REQUEST_KEYS`] always, [`VLLM_DETAILED_KEYS`] only with
//!   `--save-detailed`, as vLLM): ordered by
//!   (client, index); seconds; a failed request has output length 0, latency 0, TTFT 0 unless a
//!   token came, its error text in `errors` (`""` on success); `start_times` are seconds from
//!   the run's start (vLLM writes raw `perf_counter` values, meaningful only as differences);
//!   `generated_texts` is each request's streamed text (`""` when none came; records keep it
//!   only when the run saves it);
//! - not written ([`VLLM_UNFILLED_KEYS`]): the probe, speculative-decoding, diffusion and ramp-up-event keys of features we do not have.

use serde_json::{json, Map, Value};

use super::definitions::DEFINITIONS;
use super::error::StatsError;
use super::itl::chunk_gaps_s;
use super::metadata::RunMetadata;
use super::percentile::percentile_key;
use super::percentile::MetricStats;
use super::slices_json::slices_json;
use super::summary::{error_label, BenchSummary};
use crate::record::RequestRecord;

/// Written first, from the run metadata (plus `--metadata` pairs at the top level).
pub const VLLM_SETUP_KEYS: &[&str] = &[
    "date",
    "endpoint_type",
    "backend",
    "label",
    "model_id",
    "tokenizer_id",
    "num_prompts",
    "request_rate",
    "burstiness",
    "max_concurrency",
];

/// Written only when the run ramped its rate up.
pub const VLLM_RAMP_UP_KEYS: &[&str] =
    &["ramp_up_strategy", "ramp_up_start_rps", "ramp_up_end_rps"];

/// The run's results, always written.
pub const VLLM_RESULT_KEYS: &[&str] = &[
    "duration",
    "completed",
    "failed",
    "total_input_tokens",
    "total_output_tokens",
    "request_throughput",
    "request_goodput",
    "output_throughput",
    "total_token_throughput",
    "max_output_tokens_per_s",
    "max_concurrent_requests",
    "rtfx",
];

/// Per-request arrays written with `--save-detailed` only.
pub const VLLM_DETAILED_KEYS: &[&str] = &[
    "input_lens",
    "output_lens",
    "ttfts",
    "itls",
    "generated_texts",
    "start_times",
    "errors",
];

/// Per-request arrays written always (vLLM 0.33 keeps them without `--save-detailed`).
pub const VLLM_PER_REQUEST_KEYS: &[&str] = &["latencies", "queue_times"];

/// vLLM keys we never write, and why: see the module's doc.
pub const VLLM_UNFILLED_KEYS: &[&str] = &[
    "rps_change_events",
    "probe_completed",
    "probe_failed",
    "probe_median_e2el_ms",
    "probe_p99_e2el_ms",
    "probe_max_e2el_ms",
    "spec_decode_acceptance_rate",
    "spec_decode_acceptance_length",
    "spec_decode_num_drafts",
    "spec_decode_draft_tokens",
    "spec_decode_accepted_tokens",
    "spec_decode_per_position_acceptance_rates",
    "diffusion_committed_throughput",
    "diffusion_steps_per_canvas",
    "diffusion_committed_per_step",
    "diffusion_committed_tokens",
    "diffusion_denoising_steps",
    "diffusion_canvas_positions",
];

/// Our additions: `{"schema_version", "run": RunMetadata, "summary": BenchSummary,
/// "definitions": {name: how computed}}`, plus `"slices"` with `--slice-duration`
/// ([`super::slices_json`]) and `"turns"` (per turn index) for a conversation run.
pub const PAGODA_KEY: &str = "pagoda";

/// Version of the `"pagoda"` object's layout.
pub const PAGODA_SCHEMA_VERSION: u32 = 1;

/// The `--save-result` JSON of a run (see the module's doc for every key).
pub fn vllm_result_json(
    summary: &BenchSummary,
    records: &[RequestRecord],
    meta: &RunMetadata,
    save_detailed: bool,
) -> Result<Value, StatsError> {
    let mut out = Map::new();
    for (key, value) in &meta.server_metadata {
        out.insert(key.clone(), Value::String(value.clone()));
    }
    insert_setup(&mut out, meta);
    insert_results(&mut out, summary);
    insert_per_request(&mut out, records, save_detailed);
    insert_percentile_metrics(&mut out, summary);
    let definitions: Map<String, Value> = DEFINITIONS
        .iter()
        .map(|(name, text)| (name.to_string(), Value::String(text.to_string())))
        .collect();
    let mut pagoda = json!({
        "schema_version": PAGODA_SCHEMA_VERSION,
        "run": serde_json::to_value(meta)?,
        "summary": serde_json::to_value(summary)?,
        "definitions": definitions,
    });
    if let (Some(slices), Value::Object(pagoda)) = (&summary.slices, &mut pagoda) {
        pagoda.insert("slices".into(), slices_json(slices));
    }
    out.insert(PAGODA_KEY.into(), pagoda);
    if !summary.per_turn.is_empty() {
        if let Some(pagoda) = out.get_mut(PAGODA_KEY).and_then(Value::as_object_mut) {
            pagoda.insert("turns".into(), serde_json::to_value(&summary.per_turn)?);
        }
    }
    Ok(Value::Object(out))
}

fn insert_setup(out: &mut Map<String, Value>, meta: &RunMetadata) {
    let request_rate = meta.request_rate.map_or(json!("inf"), |rate| json!(rate));
    let setup = json!({
        "date": meta.date,
        "endpoint_type": meta.backend,
        "backend": meta.backend,
        "label": meta.label,
        "model_id": meta.model_id,
        "tokenizer_id": meta.tokenizer_id,
        "num_prompts": meta.num_prompts,
        "request_rate": request_rate,
        "burstiness": meta.burstiness,
        "max_concurrency": meta.max_concurrency,
    });
    extend(out, setup);
    if let Some(ramp_up) = &meta.ramp_up {
        extend(
            out,
            json!({
                "ramp_up_strategy": ramp_up.strategy,
                "ramp_up_start_rps": ramp_up.start_rps,
                "ramp_up_end_rps": ramp_up.end_rps,
            }),
        );
    }
}

fn insert_results(out: &mut Map<String, Value>, summary: &BenchSummary) {
    let results = json!({
        "duration": summary.duration_s,
        "completed": summary.num_completed,
        "failed": summary.num_failed,
        "total_input_tokens": summary.total_input_tokens,
        "total_output_tokens": summary.total_output_tokens,
        "request_throughput": summary.request_throughput,
        "request_goodput": summary.goodput.as_ref().map(|g| g.request_goodput),
        "output_throughput": summary.output_throughput,
        "total_token_throughput": summary.total_token_throughput,
        "max_output_tokens_per_s": summary.max_output_tokens_per_s,
        "max_concurrent_requests": summary.max_concurrent_requests_per_second,
        "rtfx": 0.0,
    });
    extend(out, results);
}

fn insert_per_request(out: &mut Map<String, Value>, records: &[RequestRecord], detailed: bool) {
    let mut ordered: Vec<&RequestRecord> = records.iter().collect();
    ordered.sort_by_key(|r| (r.client_id, r.index));
    let column = |f: &dyn Fn(&RequestRecord) -> Value| -> Value {
        Value::Array(ordered.iter().map(|r| f(r)).collect())
    };
    let succeeded = |r: &RequestRecord, value: Value| if r.is_success() { value } else { json!(0) };
    let mut columns = json!({
        "input_lens": column(&|r| json!(r.input_tokens)),
        "output_lens": column(&|r| succeeded(r, json!(r.output_tokens))),
        "ttfts": column(&|r| json!(r.ttft_s().unwrap_or(0.0))),
        "itls": column(&|r| json!(chunk_gaps_s(r))),
        "generated_texts": column(&|r| json!(r.generated_text.as_deref().unwrap_or(""))),
        "latencies": column(&|r| succeeded(r, json!(r.e2el_s()))),
        "start_times": column(&|r| json!(r.actual_send_s)),
        "queue_times": column(&|r| json!(r.actual_send_s - r.target_send_s)),
        "errors": column(&|r| json!(error_text(r))),
    });
    if let (false, Value::Object(columns)) = (detailed, &mut columns) {
        columns.retain(|key, _| VLLM_PER_REQUEST_KEYS.contains(&key.as_str()));
    }
    extend(out, columns);
}

/// A failed request's error for `errors`: its message, else its kind; `""` on success.
fn error_text(record: &RequestRecord) -> String {
    match (&record.error, &record.error_message) {
        (None, _) => String::new(),
        (Some(_), Some(message)) => message.clone(),
        (Some(kind), None) => error_label(kind),
    }
}

fn insert_percentile_metrics(out: &mut Map<String, Value>, summary: &BenchSummary) {
    for &metric in &summary.percentile_metrics {
        let name = metric.name();
        let stats = summary.metric(metric);
        let value = |f: &dyn Fn(&MetricStats) -> f64| json!(stats.map_or(0.0, f));
        out.insert(format!("mean_{name}_ms"), value(&|s| s.mean_ms));
        out.insert(format!("median_{name}_ms"), value(&|s| s.median_ms));
        out.insert(format!("std_{name}_ms"), value(&|s| s.std_ms));
        for &p in &summary.percentiles {
            let found = stats.and_then(|s| s.percentile_ms(p)).unwrap_or(0.0);
            out.insert(percentile_key(p, name), json!(found));
        }
    }
}

fn extend(out: &mut Map<String, Value>, object: Value) {
    if let Value::Object(map) = object {
        out.extend(map);
    }
}

#[cfg(test)]
#[path = "vllm_json_tests.rs"]
mod tests;
