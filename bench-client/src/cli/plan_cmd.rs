//! `pagoda-bench plan capacity` and `pagoda-bench plan roofline`: capacity planning from
//! benchmark numbers, with the working printed (see [`crate::analysis::plan`]).

use std::path::PathBuf;

use clap::{ArgGroup, Args, Subcommand, ValueEnum};
use serde_json::{json, Value};

use crate::analysis::compare::read_result;
use crate::analysis::plan::{
    per_gpu_from_result, plan_capacity, roofline, CapacityInputs, PerGpuMetric, RooflineInputs,
};
use crate::cli::sweep_output::write_json;

/// Plan GPUs from benchmark numbers: `plan capacity` (GPUs for a daily volume) or
/// `plan roofline` (the memory-bandwidth bound of decoding).
#[derive(Debug, Clone, Args)]
pub struct PlanArgs {
    #[command(subcommand)]
    pub mode: PlanMode,
}

#[derive(Debug, Clone, Subcommand)]
pub enum PlanMode {
    /// GPUs for a daily request volume: ceil(daily / 86400 × peak-factor / (per-GPU req/s ×
    /// (1 − headroom))).
    Capacity(CapacityArgs),
    /// Decode tokens/s and TPOT of one stream bound by memory bandwidth: bandwidth / (params ×
    /// bytes-per-param + kv-bytes-per-token × context-len); with --result, the measured TPOT's
    /// fraction of that bound.
    Roofline(RooflineArgs),
}

/// Which rate of `--per-gpu-result` one GPU is credited with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "snake_case")]
pub enum PerGpuMetricArg {
    RequestThroughput,
    /// The requests that met the result's SLOs per second: the honest choice when SLOs matter.
    RequestGoodput,
}

#[derive(Debug, Clone, Args)]
#[command(group(ArgGroup::new("per_gpu").required(true).args(["per_gpu_rps", "per_gpu_result"])))]
pub struct CapacityArgs {
    /// Requests per day to serve (K, M, B suffixes: 10M = 10,000,000).
    #[arg(long, value_name = "N", value_parser = parse_count)]
    pub daily_requests: f64,
    /// Peak request rate over the daily average (>= 1; traffic often peaks at 2–3×).
    #[arg(long, default_value_t = 1.0)]
    pub peak_factor: f64,
    /// Fraction of each GPU's rate kept in reserve, in [0, 1) (0.2 = plan for 80% load).
    #[arg(long, value_name = "FRACTION", default_value_t = 0.0)]
    pub headroom: f64,
    /// Requests per second one GPU sustains (exclusive with --per-gpu-result).
    #[arg(long, value_name = "REQ_PER_S")]
    pub per_gpu_rps: Option<f64>,
    /// A result measured against one GPU (one server) to read the per-GPU rate from.
    #[arg(long, value_name = "FILE")]
    pub per_gpu_result: Option<PathBuf>,
    /// Which rate of --per-gpu-result to use (not with --per-gpu-rps).
    #[arg(
        long,
        value_enum,
        default_value = "request_throughput",
        conflicts_with = "per_gpu_rps"
    )]
    pub per_gpu_metric: PerGpuMetricArg,
    /// Also write the plan as JSON here.
    #[arg(long, value_name = "PATH")]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct RooflineArgs {
    /// Model parameters (K, M, B, T suffixes: 8B = 8e9; plain numbers and 8e9 too).
    #[arg(long, value_name = "N", value_parser = parse_count)]
    pub params: f64,
    /// Bytes per weight: 2 for bf16/fp16, 1 for 8-bit, ~0.5625 for 4-bit with scales.
    #[arg(long, default_value_t = 2.0)]
    pub bytes_per_param: f64,
    /// Memory bandwidth in decimal gigaBYTES per second (10⁹ B/s, as vendors quote it: 3350 for
    /// an H100 SXM).
    #[arg(long, value_name = "GB_PER_S")]
    pub bandwidth_gbps: f64,
    /// KV-cache bytes per token (layers × KV heads × head dim × 2 × bytes per value); with
    /// --context-len. [default: KV reads left out]
    #[arg(long, value_name = "BYTES", requires = "context_len")]
    pub kv_bytes_per_token: Option<f64>,
    /// Tokens of context each decoded token reads; with --kv-bytes-per-token.
    #[arg(long, value_name = "TOKENS", requires = "kv_bytes_per_token")]
    pub context_len: Option<f64>,
    /// A saved result whose mean and median TPOT are set against the bound.
    #[arg(long, value_name = "FILE")]
    pub result: Option<PathBuf>,
    /// Also write the roofline as JSON here.
    #[arg(long, value_name = "PATH")]
    pub output: Option<PathBuf>,
}

/// `8e9`, `8B`, `135M`, `10k`: a decimal count (K = 10³, M = 10⁶, B or G = 10⁹, T = 10¹²).
pub fn parse_count(text: &str) -> Result<f64, String> {
    let text = text.trim();
    let (number, scale) = match text.chars().last().map(|c| c.to_ascii_lowercase()) {
        Some('k') => (&text[..text.len() - 1], 1e3),
        Some('m') => (&text[..text.len() - 1], 1e6),
        Some('b') | Some('g') => (&text[..text.len() - 1], 1e9),
        Some('t') => (&text[..text.len() - 1], 1e12),
        _ => (text, 1.0),
    };
    number
        .trim()
        .parse::<f64>()
        .ok()
        .map(|n| n * scale)
        .filter(|n| n.is_finite() && *n >= 0.0)
        .ok_or_else(|| format!("expected a count such as 8e9, 8B or 135M, got {text:?}"))
}

/// `plan`: prints the working; returns what `--output` gets.
pub fn execute(args: PlanArgs) -> anyhow::Result<Value> {
    let (output, json) = match &args.mode {
        PlanMode::Capacity(capacity) => (&capacity.output, execute_capacity(capacity)?),
        PlanMode::Roofline(roof) => (&roof.output, execute_roofline(roof)?),
    };
    if let Some(path) = output {
        write_json(path, &json)?;
        eprintln!("plan saved to {}", path.display());
    }
    Ok(json)
}

fn execute_capacity(args: &CapacityArgs) -> anyhow::Result<Value> {
    let metric = match args.per_gpu_metric {
        PerGpuMetricArg::RequestThroughput => PerGpuMetric::RequestThroughput,
        PerGpuMetricArg::RequestGoodput => PerGpuMetric::RequestGoodput,
    };
    let (per_gpu_requests_per_s, source) = match (&args.per_gpu_rps, &args.per_gpu_result) {
        (Some(rps), _) => (*rps, json!({"per_gpu_rps": rps})),
        (None, Some(path)) => {
            let rate = per_gpu_from_result(&read_result(path)?, metric)?;
            let source = json!({"file": path.display().to_string(), "metric": metric.key()});
            (rate, source)
        }
        (None, None) => anyhow::bail!("give --per-gpu-rps or --per-gpu-result"),
    };
    let plan = plan_capacity(CapacityInputs {
        requests_per_day: args.daily_requests,
        peak_factor: args.peak_factor,
        headroom_fraction: args.headroom,
        per_gpu_requests_per_s,
    })?;
    print!("{}", plan.to_text());
    println!("GPUs needed: {}", plan.num_gpus);
    let mut json = plan.to_json();
    if let Some(object) = json.as_object_mut() {
        object.insert("per_gpu_source".into(), source);
    }
    Ok(json)
}

fn execute_roofline(args: &RooflineArgs) -> anyhow::Result<Value> {
    let mut roof = roofline(RooflineInputs {
        num_params: args.params,
        bytes_per_param: args.bytes_per_param,
        memory_bandwidth_gb_per_s: args.bandwidth_gbps,
        kv_bytes_per_token: args.kv_bytes_per_token,
        context_tokens: args.context_len,
    })?;
    if let Some(path) = &args.result {
        roof = roof.against(&read_result(path)?);
    }
    print!("{}", roof.to_text());
    Ok(roof.to_json())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Wrapper {
        #[command(flatten)]
        args: PlanArgs,
    }

    fn parse(args: &[&str]) -> Result<PlanArgs, clap::Error> {
        Wrapper::try_parse_from(std::iter::once("plan").chain(args.iter().copied())).map(|w| w.args)
    }

    #[test]
    fn counts_take_suffixes() {
        assert_eq!(parse_count("8B"), Ok(8e9));
        assert_eq!(parse_count("135m"), Ok(135e6));
        assert_eq!(parse_count("8e9"), Ok(8e9));
        assert_eq!(parse_count("1.5k"), Ok(1500.0));
        assert!(
            parse_count("lots").is_err() && parse_count("-1").is_err() && parse_count("").is_err()
        );
    }

    #[test]
    fn per_gpu_rate_is_a_number_xor_a_result() {
        let base = ["capacity", "--daily-requests", "10M"];
        assert!(parse(&base).is_err(), "a per-GPU rate is required");
        let both = [
            &base[..],
            &["--per-gpu-rps", "2", "--per-gpu-result", "r.json"],
        ]
        .concat();
        assert!(parse(&both).is_err());
        let metric_without_file = [
            &base[..],
            &["--per-gpu-rps", "2", "--per-gpu-metric", "request_goodput"],
        ]
        .concat();
        assert!(parse(&metric_without_file).is_err());
        assert!(parse(&[
            "roofline",
            "--params",
            "8B",
            "--bandwidth-gbps",
            "3350",
            "--context-len",
            "9"
        ])
        .is_err());
    }

    #[test]
    fn capacity_from_numbers() {
        let dir = tempfile::tempdir().unwrap();
        let output = dir.path().join("plan.json");
        let args = parse(&[
            "capacity",
            "--daily-requests",
            "10M",
            "--peak-factor",
            "3",
            "--headroom",
            "0.2",
            "--per-gpu-rps",
            "20",
            "--output",
            output.to_str().unwrap(),
        ])
        .unwrap();
        // 1e7 / 86400 × 3 / (20 × 0.8) = 21.7 → 22 GPUs.
        assert_eq!(execute(args).unwrap()["num_gpus"], 22);
        let saved: Value =
            serde_json::from_str(&std::fs::read_to_string(&output).unwrap()).unwrap();
        assert_eq!(saved["num_gpus"], 22);
        assert_eq!(saved["per_gpu_source"]["per_gpu_rps"], 20.0);
    }

    #[test]
    fn capacity_from_a_result_and_roofline_against_it() {
        let dir = tempfile::tempdir().unwrap();
        let result = dir.path().join("r.json");
        let text = r#"{"request_throughput": 10.0, "request_goodput": 5.0, "mean_tpot_ms": 6.0}"#;
        std::fs::write(&result, text).unwrap();
        let result = result.to_str().unwrap();
        let args = parse(&[
            "capacity",
            "--daily-requests",
            "864000",
            "--per-gpu-result",
            result,
            "--per-gpu-metric",
            "request_goodput",
        ])
        .unwrap();
        // 864000 / 86400 = 10 req/s at 5 good req/s per GPU → 2 GPUs.
        let plan = execute(args).unwrap();
        assert_eq!(plan["num_gpus"], 2);
        assert_eq!(plan["per_gpu_source"]["metric"], "request_goodput");
        let args = parse(&[
            "roofline",
            "--params",
            "8B",
            "--bandwidth-gbps",
            "3350",
            "--kv-bytes-per-token",
            "131072",
            "--context-len",
            "2048",
            "--result",
            result,
        ])
        .unwrap();
        let roof = execute(args).unwrap();
        // 3.35e12 / (16e9 + 131072 × 2048) = 205.92 tok/s → 4.856 ms; 4.856 / 6 = 80.9%.
        assert!((roof["tpot_ms"].as_f64().unwrap() - 4.856_249).abs() < 1e-6);
        let fraction = roof["measured"]["mean_fraction"].as_f64().unwrap();
        assert!((fraction - 4.856_249 / 6.0).abs() < 1e-6);
    }

    #[test]
    fn invalid_numbers_are_errors() {
        let args = parse(&[
            "capacity",
            "--daily-requests",
            "1000",
            "--per-gpu-rps",
            "2",
            "--headroom",
            "1",
        ])
        .unwrap();
        assert!(execute(args).is_err());
        let args = parse(&["roofline", "--params", "8B", "--bandwidth-gbps", "0"]).unwrap();
        assert!(execute(args).is_err());
    }
}
