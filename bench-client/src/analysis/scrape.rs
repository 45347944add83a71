//! `--scrape-metrics URL`: the server's own view of a run, from its Prometheus `/metrics`.
//!
//! [`Scraper::start`] scrapes once before the run and then every `interval` during it;
//! [`Scraper::finish`] scrapes once more after it and computes [`ServerSideStats`] for the window
//! between the first and the last scrape:
//!
//! - latency quantiles (TTFT, ITL, TPOT, end-to-end, queue, prefill, decode) from the histogram
//!   deltas (after − before), interpolated inside buckets as Prometheus' `histogram_quantile`
//!   does ([`Histogram::quantile`]): a quantile is only as precise as the server's buckets;
//! - peak waiting and running requests and peak KV-cache usage: the maximum of the gauges over
//!   all scrapes (a peak between two scrapes is missed: scrape more often to see more);
//! - preemptions, tokens and finished requests: counter deltas; the prefix-cache hit rate is
//!   hits delta ÷ queries delta;
//! - speculative decoding, when the server speculates ([`spec_decode`]): drafts, draft and
//!   accepted tokens (counter deltas), the acceptance rate, mean acceptance length and
//!   per-position acceptance rates derived from them as vLLM's client does.
//!
//! Series are found under any namespace prefix (`pagoda:`, `vllm:`, `sglang:` …), detected from
//! the first scrape, with vLLM's older names as fallbacks. Label sets (several models or engines)
//! are added together.

pub mod histogram;
pub mod prometheus;
pub mod report;
pub mod series;
pub mod spec_decode;

use std::time::Duration;

use crate::record::unix_now_s;

use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;

pub use histogram::{Histogram, HistogramSummary};
use prometheus::counter_delta;
pub use prometheus::Exposition;
pub use spec_decode::SpecDecodeStats;

/// The longest one scrape may take.
const SCRAPE_TIMEOUT: Duration = Duration::from_secs(10);
/// Prefixes tried first when several families look like an engine's.
const KNOWN_NAMESPACES: [&str; 2] = ["pagoda", "vllm"];

#[derive(Debug, thiserror::Error)]
pub enum ScrapeError {
    #[error("scraping {url}: {message}")]
    Fetch { url: String, message: String },
    #[error("{url} exports no engine metrics (no `<namespace>:time_to_first_token_seconds`)")]
    NoEngineMetrics { url: String },
}

/// The server's gauges at one scrape.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GaugeSample {
    /// Seconds since the Unix epoch (align with `RunOutcome::start_unix_s`).
    pub unix_s: f64,
    pub num_requests_running: Option<f64>,
    pub num_requests_waiting: Option<f64>,
    /// Fraction 0–1.
    pub kv_cache_usage: Option<f64>,
    /// The preemptions counter's value at this scrape (cumulative since the server started;
    /// the increase between two samples is the preemptions in between). `None` in results
    /// saved before it was sampled.
    #[serde(default)]
    pub num_preemptions: Option<f64>,
}

/// What the server measured over the run. `None` where it exports no such series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerSideStats {
    pub metrics_url: String,
    /// The prefix its engine series carry (`pagoda`, `vllm`, …).
    pub namespace: String,
    /// From the first scrape to the last.
    pub window_s: f64,
    pub num_scrapes: usize,
    pub num_failed_scrapes: usize,
    /// Sequences finished in the window (`request_success_total`, every finish reason).
    pub num_finished: Option<f64>,
    /// Latency summaries. A quantile is interpolated inside its bucket, so it is only as fine
    /// as the server's buckets: vLLM's queue, prefill and decode histograms share the
    /// end-to-end buckets (the first is (0, 0.3 s]), so sub-300 ms times all read as 0.15 s at
    /// the median. The means (sum ÷ count) are exact.
    pub ttft_s: Option<HistogramSummary>,
    pub itl_s: Option<HistogramSummary>,
    pub tpot_s: Option<HistogramSummary>,
    pub e2e_s: Option<HistogramSummary>,
    pub queue_time_s: Option<HistogramSummary>,
    pub prefill_time_s: Option<HistogramSummary>,
    pub decode_time_s: Option<HistogramSummary>,
    /// Mean time waiting before first scheduled.
    pub mean_queue_time_s: Option<f64>,
    pub peak_num_requests_waiting: Option<f64>,
    pub peak_num_requests_running: Option<f64>,
    pub peak_kv_cache_usage: Option<f64>,
    pub num_preemptions: Option<f64>,
    pub num_prompt_tokens: Option<f64>,
    pub num_generation_tokens: Option<f64>,
    pub prefix_cache_queries: Option<f64>,
    pub prefix_cache_hits: Option<f64>,
    /// Hits ÷ queries (tokens); `None` when nothing was looked up.
    pub prefix_cache_hit_rate: Option<f64>,
    /// Speculative decoding over the window; absent when the server does not export its
    /// counters or proposed nothing (and in results saved before it was read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_decode: Option<SpecDecodeStats>,
    /// The gauges at every scrape, for plots.
    pub timeline: Vec<GaugeSample>,
}

/// A scrape: when, and what.
#[derive(Debug, Clone)]
struct Scrape {
    unix_s: f64,
    exposition: Exposition,
}

/// Samples a server's `/metrics` in the background while a run goes on.
#[derive(Debug)]
pub struct Scraper {
    url: String,
    namespace: String,
    http: reqwest::Client,
    before: Scrape,
    stop: oneshot::Sender<()>,
    sampler: tokio::task::JoinHandle<Vec<Option<GaugeSample>>>,
}

impl Scraper {
    /// Scrapes `url` once (a base URL gets `/metrics` appended) and starts sampling every
    /// `interval`; `insecure` accepts any certificate of an `https://` server (`--insecure`).
    /// Fails when the first scrape fails or shows no engine series.
    pub async fn start(url: &str, interval: Duration, insecure: bool) -> Result<Self, ScrapeError> {
        let url = metrics_url(url);
        let fetch_error = |message: String| ScrapeError::Fetch {
            url: url.clone(),
            message,
        };
        let http = reqwest::Client::builder()
            .danger_accept_invalid_certs(insecure)
            .timeout(SCRAPE_TIMEOUT)
            .build()
            .map_err(|e| fetch_error(e.to_string()))?;
        let before = fetch(&http, &url).await.map_err(fetch_error)?;
        let namespace = detect_namespace(&before.exposition)
            .ok_or_else(|| ScrapeError::NoEngineMetrics { url: url.clone() })?;
        let (stop, stopped) = oneshot::channel();
        let sampler = tokio::spawn(sample(
            http.clone(),
            url.clone(),
            Names::new(&namespace),
            interval,
            stopped,
        ));
        Ok(Self {
            url,
            namespace,
            http,
            before,
            stop,
            sampler,
        })
    }

    /// Stops sampling, scrapes once more and computes the window's statistics.
    pub async fn finish(self) -> Result<ServerSideStats, ScrapeError> {
        let _ = self.stop.send(());
        let samples = self.sampler.await.unwrap_or_default();
        let after = fetch(&self.http, &self.url)
            .await
            .map_err(|message| ScrapeError::Fetch {
                url: self.url.clone(),
                message,
            })?;
        let names = Names::new(&self.namespace);
        let mut timeline = vec![names.gauges(&self.before)];
        timeline.extend(samples.iter().flatten().copied());
        timeline.push(names.gauges(&after));
        let num_failed_scrapes = samples.iter().filter(|s| s.is_none()).count();
        let mut stats = server_side_stats(&self.namespace, &self.before, &after, timeline);
        stats.metrics_url = self.url;
        stats.num_scrapes = samples.len() + 2 - num_failed_scrapes;
        stats.num_failed_scrapes = num_failed_scrapes;
        Ok(stats)
    }
}

/// `http://host:port` → `http://host:port/metrics`; a URL with a path is kept.
pub fn metrics_url(url: &str) -> String {
    let trimmed = url.trim_end_matches('/');
    let has_path = trimmed
        .split_once("://")
        .map_or(trimmed, |(_, rest)| rest)
        .contains('/');
    if has_path {
        trimmed.to_string()
    } else {
        format!("{trimmed}/metrics")
    }
}

/// The namespace of the engine series: the prefix of a `…:time_to_first_token_seconds` series,
/// `pagoda` and `vllm` first.
pub fn detect_namespace(exposition: &Exposition) -> Option<String> {
    // Without `# TYPE` lines the families are the sample names (`…_bucket`), so match a prefix.
    let candidates: Vec<&str> = exposition
        .family_names()
        .filter_map(|name| {
            let (namespace, base) = name.split_once(':')?;
            base.starts_with(series::TIME_TO_FIRST_TOKEN[0])
                .then_some(namespace)
        })
        .collect();
    KNOWN_NAMESPACES
        .iter()
        .find(|known| candidates.contains(known))
        .copied()
        .or_else(|| candidates.first().copied())
        .map(str::to_string)
}

async fn fetch(http: &reqwest::Client, url: &str) -> Result<Scrape, String> {
    let response = http.get(url).send().await.map_err(|e| e.to_string())?;
    let status = response.status();
    if !status.is_success() {
        return Err(format!("status {status}"));
    }
    let text = response.text().await.map_err(|e| e.to_string())?;
    Ok(Scrape {
        unix_s: unix_now_s(),
        exposition: Exposition::parse(&text),
    })
}

/// Scrapes every `interval` until told to stop; `None` for a failed scrape. Only the gauges are
/// kept, so a long run costs a few bytes per scrape.
async fn sample(
    http: reqwest::Client,
    url: String,
    names: Names,
    interval: Duration,
    mut stopped: oneshot::Receiver<()>,
) -> Vec<Option<GaugeSample>> {
    let mut samples = Vec::new();
    let mut ticker = tokio::time::interval(interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticker.tick().await;
    loop {
        tokio::select! {
            _ = &mut stopped => return samples,
            _ = ticker.tick() => {}
        }
        let scrape = fetch(&http, &url).await;
        samples.push(scrape.ok().map(|scrape| names.gauges(&scrape)));
    }
}

/// The window's statistics from the first and last scrapes and the gauges of every scrape.
fn server_side_stats(
    namespace: &str,
    before: &Scrape,
    after: &Scrape,
    timeline: Vec<GaugeSample>,
) -> ServerSideStats {
    let names = Names::new(namespace);
    let histogram = |names_tried: &[&str]| -> Option<Histogram> {
        let name = names.first_present(&after.exposition, names_tried, "_bucket")?;
        let later = after.exposition.histogram(&name)?;
        Some(match before.exposition.histogram(&name) {
            Some(earlier) => later.since(&earlier),
            None => later,
        })
    };
    let summary = |names_tried: &[&str]| histogram(names_tried).and_then(|h| h.summary());
    let counter = |names_tried: &[&str]| {
        let name = names.first_present(&after.exposition, names_tried, "")?;
        let later = after.exposition.sum(&name)?;
        Some(counter_delta(before.exposition.sum(&name), later))
    };
    let peak =
        |get: fn(&GaugeSample) -> Option<f64>| timeline.iter().filter_map(get).reduce(f64::max);
    let prefix_cache_queries = counter(series::PREFIX_CACHE_QUERIES);
    let prefix_cache_hits = counter(series::PREFIX_CACHE_HITS);
    ServerSideStats {
        metrics_url: String::new(),
        namespace: namespace.to_string(),
        window_s: after.unix_s - before.unix_s,
        num_scrapes: 2,
        num_failed_scrapes: 0,
        num_finished: counter(series::REQUEST_SUCCESS),
        ttft_s: summary(series::TIME_TO_FIRST_TOKEN),
        itl_s: summary(series::INTER_TOKEN_LATENCY),
        tpot_s: summary(series::TIME_PER_OUTPUT_TOKEN),
        e2e_s: summary(series::E2E_LATENCY),
        queue_time_s: summary(series::QUEUE_TIME),
        prefill_time_s: summary(series::PREFILL_TIME),
        decode_time_s: summary(series::DECODE_TIME),
        mean_queue_time_s: histogram(series::QUEUE_TIME).and_then(|h| h.mean()),
        peak_num_requests_waiting: peak(|g| g.num_requests_waiting),
        peak_num_requests_running: peak(|g| g.num_requests_running),
        peak_kv_cache_usage: peak(|g| g.kv_cache_usage),
        num_preemptions: counter(series::NUM_PREEMPTIONS),
        num_prompt_tokens: counter(series::PROMPT_TOKENS),
        num_generation_tokens: counter(series::GENERATION_TOKENS),
        prefix_cache_hit_rate: match (prefix_cache_hits, prefix_cache_queries) {
            (Some(hits), Some(queries)) if queries > 0.0 => Some(hits / queries),
            _ => None,
        },
        prefix_cache_queries,
        prefix_cache_hits,
        spec_decode: spec_decode::spec_decode_stats(
            namespace,
            &before.exposition,
            &after.exposition,
        ),
        timeline,
    }
}

/// Series names under one namespace.
#[derive(Debug, Clone)]
struct Names {
    namespace: String,
}

impl Names {
    fn new(namespace: &str) -> Self {
        Self {
            namespace: namespace.to_string(),
        }
    }

    fn full(&self, base: &str) -> String {
        format!("{}:{base}", self.namespace)
    }

    /// The first of `bases` whose sample `<namespace>:<base><suffix>` is in the scrape.
    fn first_present(
        &self,
        exposition: &Exposition,
        bases: &[&str],
        suffix: &str,
    ) -> Option<String> {
        bases.iter().map(|base| self.full(base)).find(|name| {
            exposition
                .samples_named(&format!("{name}{suffix}"))
                .next()
                .is_some()
        })
    }

    fn gauge(&self, exposition: &Exposition, bases: &[&str]) -> Option<f64> {
        let name = self.first_present(exposition, bases, "")?;
        exposition.sum(&name)
    }

    fn gauges(&self, scrape: &Scrape) -> GaugeSample {
        let exposition = &scrape.exposition;
        GaugeSample {
            unix_s: scrape.unix_s,
            num_requests_running: self.gauge(exposition, series::NUM_REQUESTS_RUNNING),
            num_requests_waiting: self.gauge(exposition, series::NUM_REQUESTS_WAITING),
            kv_cache_usage: self.gauge(exposition, series::KV_CACHE_USAGE),
            num_preemptions: self.gauge(exposition, series::NUM_PREEMPTIONS),
        }
    }
}

#[cfg(test)]
mod tests;
