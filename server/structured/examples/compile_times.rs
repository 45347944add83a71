//! Grammar compile time, per schema of the structured-output test set, on the default model's
//! vocabulary: each spec compiled `RUNS` times (default 20) with the cache off (every compile is
//! a miss, first mask included, as a request pays it), then p50/p99 per spec and over all.
//!
//!     cargo run --release -p pagoda-structured --example compile_times [RUNS]
//!
//! Prints one JSON line per spec and one for all of them.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Instant;

use pagoda_structured::tool_schema::{named_call_schema, required_calls_schema, ToolFunction};
use pagoda_structured::{CompileLimits, GrammarCompiler, OutputSpec};
use pagoda_text::tokenizer::TextTokenizer;
use serde_json::{json, Value};

fn read_json(relative: &str) -> Value {
    let path = pagoda_e2e::tools::repo_file(relative);
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The specs the SDK tests and the benchmark send.
fn specs() -> Vec<(&'static str, OutputSpec)> {
    let person = json!({"properties": {"name": {"maxLength": 24, "type": "string"},
        "age": {"maximum": 120, "minimum": 0, "type": "integer"},
        "city": {"maxLength": 24, "type": "string"},
        "role": {"enum": ["engineer", "artist", "doctor", "teacher"], "type": "string"},
        "hobbies": {"items": {"maxLength": 20, "type": "string"}, "maxItems": 3, "type": "array"}},
        "required": ["name", "age", "city", "role", "hobbies"], "title": "Person",
        "type": "object", "additionalProperties": false});
    let tools: Vec<ToolFunction> = read_json("bench/workloads/tools-weather-calendar.json")
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| ToolFunction {
            name: tool["function"]["name"].as_str().unwrap().to_string(),
            parameters: tool["function"]["parameters"].clone(),
        })
        .collect();
    vec![
        ("person (pydantic)", OutputSpec::JsonSchema(person)),
        (
            "ticket (10 fields)",
            OutputSpec::JsonSchema(read_json("bench/workloads/json-schema-10-fields.json")),
        ),
        (
            "tools required",
            OutputSpec::JsonSchema(required_calls_schema(&tools, true)),
        ),
        (
            "tool named",
            OutputSpec::JsonSchema(named_call_schema(&tools[1])),
        ),
        ("json_object", OutputSpec::JsonObject),
        ("regex", OutputSpec::Regex("[0-9]{3}-[A-Z]{2}".into())),
        (
            "choice",
            OutputSpec::Choice(vec!["positive".into(), "negative".into(), "neutral".into()]),
        ),
        (
            "grammar",
            OutputSpec::Grammar(
                "start: \"The answer is \" NUMBER \".\"\nNUMBER: /[1-9][0-9]{0,2}/\n".into(),
            ),
        ),
    ]
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn main() {
    let runs: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse().unwrap())
        .unwrap_or(20);
    let tokenizer = Arc::new(TextTokenizer::from_gguf(pagoda_e2e::tools::default_model()).unwrap());
    let eos = tokenizer.eos_token_ids();
    let limits = CompileLimits {
        cache_capacity: 0,
        ..CompileLimits::default()
    };
    let compiler = GrammarCompiler::new(tokenizer, 49_152, &eos, limits).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut all = Vec::new();
    for (name, spec) in specs() {
        let mut times: Vec<f64> = (0..runs)
            .map(|_| {
                let started = Instant::now();
                runtime.block_on(compiler.compile(&spec)).unwrap();
                started.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        all.extend_from_slice(&times);
        times.sort_by(f64::total_cmp);
        println!(
            "{}",
            json!({"spec": name, "runs": runs, "p50_ms": percentile(&times, 50.0),
                "p99_ms": percentile(&times, 99.0)})
        );
    }
    all.sort_by(f64::total_cmp);
    println!(
        "{}",
        json!({"spec": "all", "runs": all.len(), "p50_ms": percentile(&all, 50.0),
            "p99_ms": percentile(&all, 99.0)})
    );
}
