//! The terminal summary of a serve run, in the layout `vllm bench serve` users know, followed by
//! what vLLM's client does not tell them: the breakdown per model (LoRA adapter), send
//! integrity, the steady-state window, the time slices, errors by type, where token counts came from, and the
//! server's own view. A block the caller renders (with `--scrape-metrics` against a server that
//! speculates, vLLM's "Speculative Decoding" block, `scrape/report.rs`) follows the latency
//! blocks, as in vLLM's report. The core report knows nothing of scraping.

mod per_model;
mod per_turn;
pub(crate) mod rule;
mod slices;

use std::fmt::Write;

use crate::record::ErrorKind;
use crate::stats::{
    error_label, format_percentile, BenchSummary, Metric, MetricStats, WindowSummary,
};
use per_model::render_per_model;
use per_turn::render_per_turn;
use rule::{line, rule};
use slices::render_slices;

fn metric_block(out: &mut String, metric: Metric, stats: &MetricStats) {
    let title = match metric {
        Metric::Ttft => "Time to First Token".to_string(),
        Metric::Tpot => "Time per Output Token (excl. 1st token)".to_string(),
        Metric::ItlPerChunk => "Inter-token Latency (per chunk)".to_string(),
        Metric::ItlPerToken => "Inter-token Latency (per token)".to_string(),
        Metric::E2el => "End-to-end Latency".to_string(),
        other => other.label().to_string(),
    };
    let short = metric
        .label()
        .split(' ')
        .next()
        .unwrap_or("")
        .to_uppercase();
    let _ = writeln!(out, "{}", rule(&title, '-'));
    line(
        out,
        &format!("Mean {short} (ms):"),
        format!("{:.2}", stats.mean_ms),
    );
    line(
        out,
        &format!("Median {short} (ms):"),
        format!("{:.2}", stats.median_ms),
    );
    for p in &stats.percentiles_ms {
        line(
            out,
            &format!("P{} {short} (ms):", format_percentile(p.percentile)),
            format!("{:.2}", p.value_ms),
        );
    }
}

/// The whole summary as text; `after_latency` (a block the caller rendered, such as the
/// server's speculative decoding from `--scrape-metrics`) follows the latency blocks.
pub fn render(summary: &BenchSummary, title: &str, after_latency: Option<&str>) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", rule(title, '='));
    line(&mut out, "Successful requests:", summary.num_completed);
    line(&mut out, "Failed requests:", summary.num_failed);
    let cancelled = error_label(&ErrorKind::Cancelled);
    if let Some(error) = summary.errors_by_kind.iter().find(|e| e.label == cancelled) {
        line(&mut out, "  of which cancelled by the client:", error.count);
    }
    line(
        &mut out,
        "Benchmark duration (s):",
        format!("{:.2}", summary.duration_s),
    );
    line(&mut out, "Total input tokens:", summary.total_input_tokens);
    line(
        &mut out,
        "Total generated tokens:",
        summary.total_output_tokens,
    );
    line(
        &mut out,
        "Request throughput (req/s):",
        format!("{:.2}", summary.request_throughput),
    );
    if let Some(goodput) = &summary.goodput {
        line(
            &mut out,
            "Request goodput (req/s):",
            format!("{:.2}", goodput.request_goodput),
        );
    }
    line(
        &mut out,
        "Output token throughput (tok/s):",
        format!("{:.2}", summary.output_throughput),
    );
    line(
        &mut out,
        "Peak output token throughput (tok/s):",
        format!("{:.2}", summary.max_output_tokens_per_s),
    );
    line(
        &mut out,
        "Peak concurrent requests:",
        summary.max_concurrent_requests,
    );
    line(
        &mut out,
        "Total Token throughput (tok/s):",
        format!("{:.2}", summary.total_token_throughput),
    );
    for &metric in &summary.percentile_metrics {
        if let Some(stats) = summary.metric(metric) {
            metric_block(&mut out, metric, stats);
        }
    }
    if let Some(block) = after_latency {
        out.push_str(block);
    }
    render_per_model(&mut out, summary);
    render_per_turn(&mut out, summary);
    render_extras(&mut out, summary);
    let _ = writeln!(out, "{}", rule("", '='));
    out
}

fn render_extras(out: &mut String, summary: &BenchSummary) {
    let integrity = &summary.integrity;
    let _ = writeln!(out, "{}", rule("Send integrity", '-'));
    if let Some(rate) = integrity.scheduled_rate {
        line(out, "Scheduled rate (req/s):", format!("{rate:.2}"));
    }
    if let Some(rate) = integrity.achieved_rate {
        line(out, "Achieved send rate (req/s):", format!("{rate:.2}"));
    }
    if let Some(lag) = &integrity.send_lag {
        line(
            out,
            "Send lag p50 / p99 / max (ms):",
            format!("{:.3} / {:.3} / {:.3}", lag.p50_ms, lag.p99_ms, lag.max_ms),
        );
    }
    if let Some(lag) = &integrity.client_lag {
        line(
            out,
            "Client lag p50 / p99 / max (ms):",
            format!("{:.3} / {:.3} / {:.3}", lag.p50_ms, lag.p99_ms, lag.max_ms),
        );
    }
    if integrity.fell_behind {
        let _ = writeln!(
            out,
            "!!! THE CLIENT FELL BEHIND: these numbers understate the server !!!"
        );
        for reason in &integrity.reasons {
            let _ = writeln!(out, "!!! {reason}");
        }
    } else {
        line(out, "Client kept up:", "yes");
    }
    if !summary.errors_by_kind.is_empty() {
        let _ = writeln!(out, "{}", rule("Errors", '-'));
        for error in &summary.errors_by_kind {
            line(out, &format!("{}:", error.label), error.count);
        }
    }
    let sources = &summary.token_count_sources;
    if sources.num_tokenizer > 0 {
        let _ = writeln!(
            out,
            "Note: {} of {} requests had no server usage; their output tokens were counted with the tokenizer.",
            sources.num_tokenizer,
            sources.num_tokenizer + sources.num_server_usage
        );
    }
    if let Some(window) = &summary.steady_state {
        render_window(out, window);
    }
    render_slices(out, summary);
}

fn render_window(out: &mut String, window: &WindowSummary) {
    let _ = writeln!(
        out,
        "{}",
        rule("Steady state (ramp-up and drain excluded)", '-')
    );
    line(
        out,
        "Window (s):",
        format!("{:.2} – {:.2}", window.start_s, window.end_s),
    );
    line(
        out,
        "Request throughput (req/s):",
        format!("{:.2}", window.request_throughput),
    );
    line(
        out,
        "Output token throughput (tok/s):",
        format!("{:.2}", window.output_throughput),
    );
    line(
        out,
        "Mean concurrency:",
        format!("{:.1}", window.mean_concurrency),
    );
    for summary in &window.metrics {
        if let (Some(stats), true) = (
            &summary.stats,
            matches!(
                summary.metric,
                Metric::Ttft | Metric::Tpot | Metric::ItlPerChunk
            ),
        ) {
            let label = summary.metric.label();
            line(
                out,
                &format!("Mean / median {label} (ms):"),
                format!("{:.2} / {:.2}", stats.mean_ms, stats.median_ms),
            );
        }
    }
}
