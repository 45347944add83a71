//! Test support: a tiny real engine, known finished sequences, and a strict parser for the text exposition so that tests
//! check what a Prometheus server would read.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::ops::Deref;
use std::time::{Duration, Instant};

use pagoda_engine::testing::TinyLlamaSpec;
use pagoda_engine::{
    start_engine, EngineConfig, EngineHandle, EngineRequest, FinishReason, RequestTimings,
    SamplingParams, StopConditions, TokenEvent, Usage,
};

use super::{FinishedSequence, HistogramBuckets, Metrics, MetricsConfig, MetricsNamespace};

/// A tiny random-weight model served by a real engine thread, stopped on drop.
pub(super) struct TinyEngine {
    _dir: tempfile::TempDir,
    handle: EngineHandle,
}

impl TinyEngine {
    pub fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tiny.gguf");
        TinyLlamaSpec::default().write_gguf(&path).unwrap();
        let config = EngineConfig {
            kv_cache_memory_bytes: Some(8 << 20),
            ..EngineConfig::default()
        };
        let handle = start_engine(config, &path).unwrap();
        Self { _dir: dir, handle }
    }
}

impl Deref for TinyEngine {
    type Target = EngineHandle;
    fn deref(&self) -> &EngineHandle {
        &self.handle
    }
}

impl Drop for TinyEngine {
    fn drop(&mut self) {
        self.handle.shutdown();
    }
}

/// One scrape: every sample by `name{labels}` (labels sorted), and each family's TYPE.
#[derive(Debug)]
pub(super) struct Scrape {
    text: String,
    samples: BTreeMap<String, f64>,
    /// Family name → TYPE, in exposition order.
    pub types: Vec<(String, String)>,
}

type Labels = Vec<(String, String)>;

fn series_key(name: &str, labels: &[(&str, &str)]) -> String {
    let mut labels: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v:?}")).collect();
    labels.sort();
    format!("{name}{{{}}}", labels.join(","))
}

impl Scrape {
    /// Parses the text, asserting that every line is well formed and every sample belongs to
    /// the family whose `# HELP`/`# TYPE` precede it.
    pub fn parse(text: &str) -> Self {
        let mut scrape = Scrape {
            text: text.to_string(),
            samples: BTreeMap::new(),
            types: Vec::new(),
        };
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest.split_once(' ').unwrap();
                scrape.types.push((name.to_string(), kind.to_string()));
            } else if !line.starts_with("# HELP ") {
                scrape.add_sample(line);
            }
        }
        scrape
    }

    fn add_sample(&mut self, line: &str) {
        let (name, labels, value) = parse_sample(line);
        let (family, kind) = self.types.last().expect("a sample before any # TYPE");
        let suffixes = ["_bucket", "_count", "_sum"];
        let belongs = name == *family
            || (kind == "histogram" && suffixes.iter().any(|s| name == format!("{family}{s}")));
        assert!(belongs, "sample {name} outside its family {family}");
        let pairs: Vec<(&str, &str)> = labels
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let key = series_key(&name, &pairs);
        assert!(
            self.samples.insert(key, value).is_none(),
            "duplicate {line}"
        );
    }

    pub fn get(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        self.samples.get(&series_key(name, labels)).copied()
    }

    pub fn value(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        let key = series_key(name, labels);
        match self.samples.get(&key) {
            Some(value) => *value,
            None => panic!("no sample {key} in:\n{}", self.text),
        }
    }

    /// The `le` values of a histogram's buckets for one label set, in exposition order.
    pub fn bucket_bounds(&self, name: &str, labels: &[(&str, &str)]) -> Vec<String> {
        let bucket = format!("{name}_bucket");
        let mut want: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v:?}")).collect();
        want.sort();
        let mut bounds = Vec::new();
        for line in self.text.lines().filter(|l| l.starts_with(&bucket)) {
            let (sample, mut labels, _) = parse_sample(line);
            let le = labels.iter().position(|(k, _)| k == "le").unwrap();
            let (_, le) = labels.remove(le);
            let mut have: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v:?}")).collect();
            have.sort();
            if sample == bucket && have == want {
                bounds.push(le);
            }
        }
        bounds
    }

    pub fn family_names(&self) -> Vec<&str> {
        self.types.iter().map(|(name, _)| name.as_str()).collect()
    }

    pub fn text(&self) -> &str {
        &self.text
    }
}

/// `name{k="v",…} value` → (name, labels, value), unescaping label values.
fn parse_sample(line: &str) -> (String, Labels, f64) {
    let name_end = line.find(['{', ' ']).unwrap();
    let name = &line[..name_end];
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if let Some(inner) = rest.strip_prefix('{') {
        let (parsed, after) = parse_labels(inner);
        labels = parsed;
        rest = after;
    }
    let value = rest.strip_prefix(' ').unwrap();
    let value: f64 = value
        .parse()
        .unwrap_or_else(|_| panic!("bad value in {line}"));
    (name.to_string(), labels, value)
}

/// Parses `k="v",…}` and returns the labels and what follows the closing brace.
fn parse_labels(mut text: &str) -> (Labels, &str) {
    let mut labels = Vec::new();
    loop {
        if let Some(after) = text.strip_prefix('}') {
            return (labels, after);
        }
        let (key, after) = text.split_once("=\"").unwrap();
        let mut value = String::new();
        let mut chars = after.char_indices();
        let end = loop {
            match chars.next().unwrap() {
                (i, '"') => break i,
                (_, '\\') => match chars.next().unwrap().1 {
                    'n' => value.push('\n'),
                    other => value.push(other),
                },
                (_, c) => value.push(c),
            }
        };
        labels.push((key.to_string(), value));
        text = &after[end + 1..];
        text = text.strip_prefix(',').unwrap_or(text);
    }
}

pub(super) const MODEL: &str = "tiny/model";
pub(super) const NAMESPACES: [MetricsNamespace; 2] =
    [MetricsNamespace::Pagoda, MetricsNamespace::Vllm];

pub(super) fn config(namespace: MetricsNamespace) -> MetricsConfig {
    MetricsConfig {
        namespace,
        model_name: MODEL.to_string(),
        max_model_len: 1000,
        buckets: HistogramBuckets::default(),
    }
}

/// The labels every engine series carries, plus `extra`.
pub(super) fn labels<'a>(extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut labels = vec![("model_name", MODEL), ("engine", "0")];
    labels.extend_from_slice(extra);
    labels
}

/// A finished sequence whose timestamps are milliseconds after its arrival.
pub(super) struct Seq {
    pub reason: FinishReason,
    pub prompt: usize,
    pub completion: usize,
    pub cached: usize,
    pub scheduled_ms: Option<u64>,
    pub first_token_ms: Option<u64>,
    pub finished_ms: u64,
}

impl Seq {
    pub fn build(&self) -> FinishedSequence {
        let queued = Instant::now();
        let at = |ms: u64| queued + Duration::from_millis(ms);
        FinishedSequence {
            reason: self.reason,
            usage: Usage {
                prompt_tokens: self.prompt,
                completion_tokens: self.completion,
                num_cached_tokens: self.cached,
                spec_decode: None,
            },
            timings: RequestTimings {
                queued,
                first_scheduled: self.scheduled_ms.map(at),
                first_token: self.first_token_ms.map(at),
                finished: at(self.finished_ms),
                num_preemptions: 0,
            },
        }
    }
}

pub(super) const STOPPED: Seq = Seq {
    reason: FinishReason::Stop {
        stop_token_id: None,
    },
    prompt: 12,
    completion: 5,
    cached: 4,
    scheduled_ms: Some(200),
    first_token_ms: Some(500),
    finished_ms: 2500,
};

pub(super) const ONE_TOKEN: Seq = Seq {
    reason: FinishReason::Length,
    prompt: 3,
    completion: 1,
    cached: 0,
    scheduled_ms: Some(100),
    first_token_ms: Some(1200),
    finished_ms: 1200,
};

pub(super) const ABORTED_IN_QUEUE: Seq = Seq {
    reason: FinishReason::Abort,
    prompt: 7,
    completion: 0,
    cached: 0,
    scheduled_ms: None,
    first_token_ms: None,
    finished_ms: 3000,
};

/// count, sum, then `(le, cumulative count)` pairs of one engine histogram.
pub(super) fn assert_histogram(
    scrape: &Scrape,
    name: &str,
    count: f64,
    sum: f64,
    buckets: &[(&str, f64)],
) {
    let l = labels(&[]);
    assert_eq!(
        scrape.value(&format!("{name}_count"), &l),
        count,
        "{name}_count"
    );
    let got_sum = scrape.value(&format!("{name}_sum"), &l);
    assert!(
        (got_sum - sum).abs() < 1e-9,
        "{name}_sum: {got_sum} != {sum}"
    );
    for &(le, want) in buckets {
        let got = scrape.value(&format!("{name}_bucket"), &labels(&[("le", le)]));
        assert_eq!(got, want, "{name}_bucket{{le={le}}}");
    }
}

// Driving the tiny engine as the server would, for whole-scrape tests.

pub(super) fn metrics(namespace: MetricsNamespace, engine: &EngineHandle) -> Metrics {
    Metrics::new(config(namespace), engine.clone()).unwrap()
}

/// Runs one greedy request to its end, recording what the server would record.
pub(super) fn generate(
    engine: &EngineHandle,
    metrics: &Metrics,
    prompt: Vec<u32>,
    max_tokens: usize,
) {
    let stop = StopConditions::exact_length(max_tokens);
    let request = EngineRequest::new(
        engine.next_request_id(),
        prompt,
        SamplingParams::greedy(),
        stop,
    );
    let mut stream = engine
        .validate(request)
        .and_then(|r| engine.submit(r))
        .unwrap();
    let mut last_token: Option<Instant> = None;
    loop {
        match stream.blocking_next().unwrap() {
            TokenEvent::Token(token) => {
                if let Some(previous) = last_token {
                    metrics.record_inter_token_latency(token.at.duration_since(previous));
                }
                last_token = Some(token.at);
            }
            TokenEvent::Finished {
                reason,
                usage,
                timings,
            } => {
                let finished = FinishedSequence {
                    reason,
                    usage,
                    timings,
                };
                return metrics.record_finished(&finished);
            }
            TokenEvent::Error(error) => panic!("engine error: {error}"),
            TokenEvent::PromptLogprobs(_) => panic!("prompt log-probabilities were not asked for"),
        }
    }
}

pub(super) fn wait_until_idle(engine: &EngineHandle) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while engine.stats().num_running + engine.stats().num_waiting > 0 {
        assert!(Instant::now() < deadline, "engine never went idle");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Two 40-token prompts sharing their first 32 tokens (two full 16-token blocks), one after the
/// other: the second finds the shared blocks in the prefix cache. Returns once the engine idles.
pub(super) fn generate_shared_prefix_pair(engine: &EngineHandle, metrics: &Metrics) {
    let shared: Vec<u32> = (1..=32).collect();
    for tail in [100u32, 200] {
        let prompt = shared.iter().copied().chain(tail..tail + 8).collect();
        generate(engine, metrics, prompt, 4);
    }
    wait_until_idle(engine);
}
