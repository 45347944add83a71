//! `pagoda-bench serve` flags, named like `vllm bench serve`'s.

use std::path::PathBuf;

use std::time::Duration;

use clap::{Args, ValueEnum};

use crate::cli::conversation_args::ConversationArgs;
pub use crate::cli::dataset_name::DatasetName;
use crate::cli::exit_status::parse_failure_rate;
use crate::cli::lora_args::LoraArgs;
use crate::cli::sampling_args::SamplingArgs;
use crate::cli::structured_output_args::StructuredOutputArgs;
use crate::cli::trace_args::TraceArgs;
use crate::client::{Cancellation, DEFAULT_POOL_IDLE_TIMEOUT};
use crate::dataset::RangeRatio;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EndpointArg {
    #[value(name = "/v1/chat/completions")]
    Chat,
    #[value(name = "/v1/completions")]
    Completions,
}

/// Serve benchmark against an OpenAI-compatible server.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Server URL, e.g. http://127.0.0.1:8000 (overrides --host/--port).
    #[arg(long, env = "PAGODA_BENCH_BASE_URL")]
    pub base_url: Option<String>,
    /// Server host, when --base-url is not given.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Server port, when --base-url is not given.
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    /// API route to benchmark. [default: --backend's, else /v1/chat/completions]
    #[arg(long, value_enum)]
    pub endpoint: Option<EndpointArg>,
    /// Request format, named as `vllm bench serve` does: openai or vllm (/v1/completions),
    /// openai-chat (/v1/chat/completions). Must agree with --endpoint when both are given.
    #[arg(long, value_name = "NAME")]
    pub backend: Option<String>,
    /// Model name sent in requests. [default: the first id of the server's /v1/models]
    #[arg(long)]
    pub model: Option<String>,
    /// vLLM's: the name sent in requests when --model names the weights (then --model is only
    /// recorded); wins over --model.
    #[arg(long, value_name = "NAME")]
    pub served_model_name: Option<String>,
    /// vLLM's, accepted for its command lines: nothing here runs a model's code.
    #[arg(long)]
    pub trust_remote_code: bool,
    /// vLLM's, accepted for its command lines: `auto` or `hf` (the tokenizer is always the
    /// Hugging Face tokenizer of --tokenizer).
    #[arg(long, value_name = "MODE", value_parser = ["auto", "hf"], default_value = "auto")]
    pub tokenizer_mode: String,
    /// Tokenizer for exact prompt lengths and for counting tokens when the server sends no
    /// usage: a GGUF file or Hugging Face directory. [default: the default model, fetched on first
    /// use]
    #[arg(long, value_name = "PATH")]
    #[cfg_attr(
        not(feature = "offline"),
        arg(
            help = "Tokenizer for exact prompt lengths and for counting tokens when the server \
                    sends no usage: a GGUF file or Hugging Face directory (required: this build \
                    has no default model)"
        )
    )]
    pub tokenizer: Option<PathBuf>,
    /// Sent as `Authorization: Bearer KEY`.
    #[arg(long, env = "OPENAI_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Extra request header `NAME:VALUE` or, as `vllm bench serve` writes it, `NAME=VALUE`
    /// (repeatable; several may follow one --header).
    #[arg(long = "header", value_name = "NAME:VALUE", num_args = 1..)]
    pub headers: Vec<String>,
    /// Accept any TLS certificate from an `https://` server (self-signed, another name), as
    /// vLLM's `--insecure`; the readiness check and model discovery too.
    #[arg(long)]
    pub insecure: bool,
    /// Seconds to wait for the server to answer /v1/models (or /health) before starting; 0
    /// skips the check (a gateway that serves only the completion routes).
    #[arg(long, default_value_t = 600.0, alias = "ready-check-timeout-sec")]
    pub ready_timeout: f64,
    /// Per-request timeout in seconds.
    #[arg(long, default_value_t = 600.0)]
    pub request_timeout: f64,
    /// Seconds an idle keep-alive connection is kept for the next request; 0 keeps none (a
    /// connection per request). Keep it below the server's keep-alive timeout (5 s for
    /// llama.cpp, vLLM and SGLang).
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_POOL_IDLE_TIMEOUT.as_secs_f64())]
    pub pool_idle_timeout: f64,

    /// Workload source.
    #[arg(long, value_enum, default_value = "random")]
    pub dataset_name: DatasetName,
    /// Dataset file (ShareGPT JSON, custom JSONL or a trace).
    #[arg(long, value_name = "PATH")]
    pub dataset_path: Option<PathBuf>,
    /// Number of requests (cycled over the dataset when it has fewer); of conversations with
    /// --dataset-name conversation or --multi-turn.
    #[arg(long, default_value_t = 1000)]
    pub num_prompts: usize,
    /// Run for this many seconds. Open loop (a finite --request-rate): the schedule fills the
    /// duration, whatever --num-prompts says. Closed loop (--request-rate inf): requests keep
    /// coming until the duration ends or --num-prompts requests were sent, whichever is first.
    #[arg(long, value_name = "SECONDS")]
    pub duration: Option<f64>,
    /// random: prompt tokens (exact, by the tokenizer).
    #[arg(long, default_value_t = 1024)]
    pub random_input_len: usize,
    /// vLLM's general alias: overrides --random-input-len.
    #[arg(long)]
    pub input_len: Option<usize>,
    /// random: tokens to generate.
    #[arg(long, default_value_t = 128)]
    pub random_output_len: usize,
    /// random: lengths uniform in [len·(1−r), len·(1+r)]; one number for both, or vLLM's
    /// `{"input": r, "output": r}` for each its own.
    #[arg(long, value_name = "R", default_value = "0.0", value_parser = RangeRatio::parse)]
    pub random_range_ratio: RangeRatio,
    /// random: prompt lengths drawn from a normal distribution with this standard deviation
    /// around --random-input-len (truncated below at 1; guidellm's and AIPerf's synthetic
    /// spread). Not with --random-range-ratio.
    #[arg(long, value_name = "TOKENS", default_value_t = 0.0)]
    pub random_input_len_stddev: f64,
    /// random: output lengths drawn from a normal distribution with this standard deviation
    /// around --random-output-len (truncated below at 1). Not with --random-range-ratio.
    #[arg(long, value_name = "TOKENS", default_value_t = 0.0)]
    pub random_output_len_stddev: f64,
    /// random: tokens of a prefix shared by every prompt.
    #[arg(long, default_value_t = 0)]
    pub random_prefix_len: usize,
    /// prefix-repetition: number of distinct shared prefixes.
    #[arg(long, default_value_t = 10)]
    pub prefix_repetition_num_prefixes: usize,
    /// prefix-repetition: tokens per shared prefix.
    #[arg(long, default_value_t = 256)]
    pub prefix_repetition_prefix_len: usize,
    /// prefix-repetition: tokens of each request's own suffix.
    #[arg(long, default_value_t = 256)]
    pub prefix_repetition_suffix_len: usize,
    /// prefix-repetition: tokens to generate.
    #[arg(long, default_value_t = 128)]
    pub prefix_repetition_output_len: usize,
    /// Tokens to generate for every request: sharegpt/custom [default: the dataset's]; for
    /// random and prefix-repetition it overrides --random-output-len /
    /// --prefix-repetition-output-len (vLLM's general alias; also as its --sharegpt-output-len
    /// and --custom-output-len).
    #[arg(long, visible_aliases = ["sharegpt-output-len", "custom-output-len"])]
    pub output_len: Option<usize>,
    #[command(flatten)]
    pub trace: TraceArgs,

    /// Requests per second, or `inf` to send them all at once (conversations: conversation
    /// starts per second).
    #[arg(long, default_value = "inf")]
    pub request_rate: String,
    /// Gamma shape of inter-arrival times: 1 = Poisson, < 1 burstier, > 1 more regular.
    #[arg(long, default_value_t = 1.0)]
    pub burstiness: f64,
    /// Ramp the rate up over the run: linear or exponential (needs --request-rate inf).
    #[arg(long, value_name = "STRATEGY")]
    pub ramp_up_strategy: Option<String>,
    /// Ramp-up start rate (requests/s).
    #[arg(long)]
    pub ramp_up_start_rps: Option<f64>,
    /// Ramp-up end rate (requests/s).
    #[arg(long)]
    pub ramp_up_end_rps: Option<f64>,
    /// At most this many requests in flight (closed loop; with a rate: both); conversations in
    /// flight for a conversation run.
    #[arg(long)]
    pub max_concurrency: Option<usize>,
    /// Percentage of the requests (0–100, picked by --seed) that the client cancels
    /// --request-cancellation-delay seconds after sending them, as users who stop a generation
    /// do (AIPerf's flag). They are reported as `cancelled`, not as failures. Conversation turns
    /// are never cancelled.
    #[arg(long, value_name = "PERCENT")]
    pub request_cancellation_rate: Option<f64>,
    /// Seconds from a cancelled request's send to its cancellation.
    #[arg(long, value_name = "SECONDS", default_value_t = 0.0)]
    pub request_cancellation_delay: f64,
    /// Requests sent before the run (not measured).
    #[arg(long, default_value_t = 0)]
    pub num_warmups: usize,
    /// vLLM's: one-token probe requests per second, sent beside the workload and outside
    /// --max-concurrency, their latency reported apart (how long the load makes a tiny request
    /// wait). 0: none.
    #[arg(long, value_name = "REQ_PER_S", default_value_t = 0.0, value_parser = parse_probe_rate)]
    pub probe_request_rate: f64,
    /// Seed of the workload and of the schedule: the same seed gives the same run.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,

    #[command(flatten)]
    pub sampling: SamplingArgs,
    /// Ask the server to ignore EOS so outputs have the workload's length (on by default for
    /// random, prefix-repetition, conversation and trace; off for sharegpt and custom, and with
    /// --json-schema, --json-object or --tools).
    #[arg(long, overrides_with = "no_ignore_eos")]
    pub ignore_eos: bool,
    /// Let the model stop at EOS.
    #[arg(long, overrides_with = "ignore_eos")]
    pub no_ignore_eos: bool,
    /// JSON object merged into every request body, e.g. '{"top_k": 20}'.
    #[arg(long, value_name = "JSON")]
    pub extra_body: Option<String>,
    /// vLLM's: a JSON object sent as every chat request's `chat_template_kwargs` (e.g.
    /// '{"enable_thinking": false}'); --extra-body's own key wins.
    #[arg(long, value_name = "JSON")]
    pub chat_template_kwargs: Option<String>,
    /// vLLM's, accepted for its command lines: custom JSONL is always sent in file order here.
    #[arg(long)]
    pub disable_shuffle: bool,
    /// vLLM's, accepted for its command lines: custom JSONL prompts are always sent as written
    /// here (no chat template applied by the client).
    #[arg(long)]
    pub skip_chat_template: bool,
    #[command(flatten)]
    pub structured_output: StructuredOutputArgs,
    #[command(flatten)]
    pub lora: LoraArgs,
    #[command(flatten)]
    pub conversation: ConversationArgs,

    /// Metrics to report percentiles for: ttft,tpot,itl,itl_per_token,e2el,ttst.
    #[arg(long, default_value = "ttft,tpot,itl")]
    pub percentile_metrics: String,
    /// Percentiles to report, e.g. 50,90,99,99.9.
    #[arg(long, default_value = "99")]
    pub metric_percentiles: String,
    /// Service-level objectives for goodput, e.g. --goodput ttft:500 tpot:50 (milliseconds).
    #[arg(long, num_args = 1.., value_name = "METRIC:MS")]
    pub goodput: Vec<String>,
    /// Sample this Prometheus endpoint (the server's /metrics) during the run and report the
    /// server's own view beside the client's.
    #[arg(long, value_name = "URL")]
    pub scrape_metrics: Option<String>,
    /// Seconds between metric scrapes.
    #[arg(long, default_value_t = 1.0)]
    pub scrape_interval: f64,

    /// Save the result JSON (vllm bench serve's keys plus ours).
    #[arg(long)]
    pub save_result: bool,
    /// As vLLM's: append the result to the file as one more line of JSON (JSON Lines), instead
    /// of replacing it; pair it with --result-filename.
    #[arg(long)]
    pub append_result: bool,
    /// Directory for the result file.
    #[arg(long, default_value = ".")]
    pub result_dir: PathBuf,
    /// Result file name. [default: pagoda-bench-<rate>qps-concurrency<N|inf>-<date>.json]
    #[arg(long)]
    pub result_filename: Option<String>,
    /// Put every request's record in the result file (needed by `merge`).
    #[arg(long)]
    pub save_detailed: bool,
    /// Also write an HTML report here at the end (see `pagoda-bench report`): of the run(s) for
    /// serve, of every load for sweep. It draws every request's record from memory, with or
    /// without --save-detailed.
    #[arg(long, value_name = "PATH")]
    pub html: Option<PathBuf>,
    /// Also write one CSV row per request here (TTFT, TPOT, ITL mean and max, E2EL, tokens,
    /// errors; every run with --num-runs), for spreadsheets and dataframes. serve only.
    #[arg(long, value_name = "PATH")]
    pub csv: Option<PathBuf>,
    /// vLLM's: a dataset file with fewer requests than --num-prompts runs each of them once
    /// (fewer requests) instead of repeating them.
    #[arg(long)]
    pub no_oversample: bool,
    /// vLLM's: also write each run's per-request timeline, every inter-token gap coloured by
    /// --timeline-itl-thresholds, as an HTML page beside the result file (`<result>.timeline.html`).
    #[arg(long)]
    pub plot_timeline: bool,
    /// vLLM's: the two inter-token latencies (ms, ascending) that split --plot-timeline's gaps
    /// into green, orange and red.
    #[arg(long, value_name = "MS,MS", default_value = "25,50", value_parser = parse_itl_thresholds)]
    pub timeline_itl_thresholds: [f64; 2],
    /// vLLM's: also draw the requests' lengths (prompt, output and total tokens as histograms,
    /// and per request) beside the result file (`<result>.dataset_stats.png` and `.svg`).
    #[arg(long)]
    pub plot_dataset_stats: bool,
    /// Server facts recorded in the result, `KEY=VALUE` (repeatable), e.g. --metadata tp=1.
    #[arg(long, num_args = 1.., value_name = "KEY=VALUE")]
    pub metadata: Vec<String>,
    /// A label for this run (e.g. the engine's name), recorded in the result.
    #[arg(long)]
    pub label: Option<String>,
    /// Repeat the benchmark N times and report the mean, spread and coefficient of variation.
    #[arg(long, default_value_t = 1)]
    pub num_runs: usize,
    /// This process's id in a distributed run (records carry it; see `merge`).
    #[arg(long, default_value_t = 0)]
    pub client_id: usize,
    /// Request i is sent with `x-request-id: PREFIX{i}` (recorded in the result), so the
    /// server's own records can be matched to the client's (`align`). [default:
    /// pagoda-bench-<8 random hex digits>-]
    #[arg(long, value_name = "PREFIX")]
    pub request_id_prefix: Option<String>,
    /// No live progress line (`--disable-tqdm`, vLLM's name, too).
    #[arg(long, alias = "disable-tqdm")]
    pub disable_progress: bool,
    /// Flag the run (the client fell behind) when the p99 send lag exceeds this many ms.
    #[arg(long, default_value_t = 10.0)]
    pub max_p99_send_lag_ms: f64,
    /// Also report every metric per time slice of this many seconds (table, and `pagoda.slices`
    /// in the result), so that warm-up, drift and a slow minute show.
    #[arg(long, value_name = "SECONDS", value_parser = parse_slice_duration)]
    pub slice_duration: Option<f64>,
    /// Exit with status 1 when more than this fraction of the requests failed (0.01 = 1%); a
    /// run where every request failed always exits 1. The result is saved first.
    #[arg(long, value_name = "FRACTION", value_parser = parse_failure_rate)]
    pub max_failure_rate: Option<f64>,
}

fn parse_probe_rate(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(rate) if rate.is_finite() && rate >= 0.0 => Ok(rate),
        _ => Err(format!("{text:?}: expected requests per second ≥ 0")),
    }
}

fn parse_slice_duration(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(seconds) if seconds.is_finite() && seconds > 0.0 => Ok(seconds),
        _ => Err(format!("{text:?}: expected a number of seconds > 0")),
    }
}

impl ServeArgs {
    /// Whether the result is written (`--save-result`, `--save-detailed`, `--append-result`).
    pub fn saves_result(&self) -> bool {
        self.save_result || self.save_detailed || self.append_result
    }

    /// Whether anything is written into `--result-dir` (the result, or the timeline beside it).
    pub fn writes_result_dir(&self) -> bool {
        self.saves_result() || self.plot_timeline || self.plot_dataset_stats
    }

    /// Whether the per-request records are kept in the results (for a file that needs them).
    pub fn keeps_records(&self) -> bool {
        self.save_detailed
            || self.html.is_some()
            || self.csv.is_some()
            || self.plot_timeline
            || self.plot_dataset_stats
    }

    /// The model name requests send, when the flags give one.
    pub fn model_name(&self) -> Option<&str> {
        self.served_model_name.as_deref().or(self.model.as_deref())
    }

    pub fn base_url(&self) -> String {
        self.base_url
            .clone()
            .unwrap_or_else(|| format!("http://{}:{}", self.host, self.port))
    }

    /// Fixed-length workloads ask the server to ignore EOS unless told otherwise; never by
    /// default with a schema, JSON mode or tools, whose output ends where its structure does.
    pub fn ignore_eos(&self) -> bool {
        if self.ignore_eos {
            return true;
        }
        if self.no_ignore_eos || self.structured_output.is_set() {
            return false;
        }
        self.dataset_name.dataset().fixed_lengths
    }
    /// `--request-cancellation-rate` and `--request-cancellation-delay`.
    pub fn cancellation(&self) -> anyhow::Result<Option<Cancellation>> {
        let delay_s = self.request_cancellation_delay;
        let Some(percent) = self.request_cancellation_rate else {
            anyhow::ensure!(
                delay_s == 0.0,
                "--request-cancellation-delay needs --request-cancellation-rate"
            );
            return Ok(None);
        };
        anyhow::ensure!(
            (0.0..=100.0).contains(&percent),
            "--request-cancellation-rate {percent} must be a percentage in [0, 100]"
        );
        let delay = Duration::try_from_secs_f64(delay_s).map_err(|_| {
            anyhow::anyhow!("--request-cancellation-delay {delay_s} must be seconds ≥ 0")
        })?;
        Ok(Some(Cancellation {
            fraction: percent / 100.0,
            delay,
            seed: self.seed,
        }))
    }
}

/// `--timeline-itl-thresholds`: two positive, ascending numbers of milliseconds.
fn parse_itl_thresholds(text: &str) -> Result<[f64; 2], String> {
    let values: Vec<f64> = text
        .split(',')
        .map(|part| part.trim().parse::<f64>())
        .collect::<Result<_, _>>()
        .map_err(|_| format!("expected two numbers of milliseconds as LOW,HIGH, got `{text}`"))?;
    match values[..] {
        [low, high] if low > 0.0 && low < high && high.is_finite() => Ok([low, high]),
        _ => Err(format!(
            "expected two positive, ascending numbers of milliseconds (LOW,HIGH), got `{text}`"
        )),
    }
}
