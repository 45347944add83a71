//! What a result file says about the run besides its statistics: the configuration, the
//! command, the machine. The runner fills it (reading the clock, hostname and environment); the
//! statistics only copy it into the JSON.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::error::StatsError;

/// The client machine.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MachineInfo {
    pub hostname: String,
    pub num_cpus: usize,
    /// e.g. `linux x86_64`.
    pub os: String,
}

/// `--ramp-up-strategy` and its rates, as vLLM records them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RampUp {
    /// `linear` or `exponential`.
    pub strategy: String,
    pub start_rps: f64,
    pub end_rps: f64,
}

/// What every request asked of its output besides free text (`--json-schema`, `--json-object`,
/// `--tools`), so that runs with and without constraints are told apart.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StructuredOutputMeta {
    /// `json_schema`, `json_object` or `tools`.
    pub mode: String,
    /// The schema or tools file, as given on the command line.
    pub file: Option<String>,
    /// The body field that carried the schema: `response_format`, `structured_outputs` or
    /// `guided_json`.
    pub field: Option<String>,
    /// `--tool-choice`: `auto`, `required`, `none` or a function's name.
    pub tool_choice: Option<String>,
}

impl StructuredOutputMeta {
    /// One line for reports: `json_schema (schema.json, response_format)`,
    /// `tools (tools.json, tool_choice auto)`.
    pub fn describe(&self) -> String {
        let details: Vec<String> = [
            self.file.clone(),
            self.field.clone(),
            self.tool_choice
                .as_ref()
                .map(|c| format!("tool_choice {c}")),
        ]
        .into_iter()
        .flatten()
        .collect();
        if details.is_empty() {
            return self.mode.clone();
        }
        format!("{} ({})", self.mode, details.join(", "))
    }
}

/// `--lora-modules` and `--lora-assignment`: the adapters the requests named, and how each
/// request's was picked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoraMeta {
    /// The names as listed (a repeated name is picked more often).
    pub modules: Vec<String>,
    /// `random` or `round-robin`.
    pub assignment: String,
}

/// The run's configuration and provenance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunMetadata {
    /// When the run ended, `%Y%m%d-%H%M%S` local time (vLLM's format).
    pub date: String,
    /// The endpoint type (`openai`, `openai-chat`, …): vLLM's `backend`.
    pub backend: String,
    /// `--label`.
    pub label: Option<String>,
    pub base_url: String,
    pub endpoint: String,
    pub model_id: String,
    pub tokenizer_id: Option<String>,
    pub dataset_name: Option<String>,
    pub num_prompts: usize,
    /// `--request-rate`; `None` for `inf`.
    pub request_rate: Option<f64>,
    pub burstiness: f64,
    pub max_concurrency: Option<usize>,
    pub ramp_up: Option<RampUp>,
    pub seed: u64,
    /// `--json-schema`, `--json-object` or `--tools`; `null` for free text (and in results
    /// written before the flags existed).
    #[serde(default)]
    pub structured_output: Option<StructuredOutputMeta>,
    /// `--lora-modules`; `null` when every request named the run's model (and in results
    /// written before the flag existed).
    #[serde(default)]
    pub lora: Option<LoraMeta>,
    /// The client's command line, program name first.
    pub command_line: Vec<String>,
    /// `--metadata KEY=VALUE` pairs (about the server: version, tp, …).
    pub server_metadata: BTreeMap<String, String>,
    pub machine: MachineInfo,
    pub pagoda_bench_version: String,
    /// `t = 0` of the records, Unix seconds (for [`super::merge`]).
    pub start_unix_s: f64,
    /// Client processes whose records the result covers (1 unless merged).
    pub num_clients: usize,
    /// `--request-id-prefix`: request `i` carried `x-request-id: {prefix}{i}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id_prefix: Option<String>,
}

/// Parses `--metadata` pairs `KEY=VALUE` (split at the first `=`, both sides trimmed, as vLLM).
pub fn parse_metadata(pairs: &[String]) -> Result<BTreeMap<String, String>, StatsError> {
    pairs
        .iter()
        .map(|pair| {
            let (key, value) = pair
                .split_once('=')
                .ok_or_else(|| StatsError::InvalidMetadata(pair.clone()))?;
            let key = key.trim();
            if key.is_empty() {
                return Err(StatsError::InvalidMetadata(pair.clone()));
            }
            Ok((key.to_string(), value.trim().to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_pairs() {
        let pairs = [
            "version=0.3.3".to_string(),
            " tp = 2 ".into(),
            "note=a=b".into(),
        ];
        let parsed = parse_metadata(&pairs).expect("valid");
        assert_eq!(parsed.get("version").map(String::as_str), Some("0.3.3"));
        assert_eq!(parsed.get("tp").map(String::as_str), Some("2"));
        assert_eq!(parsed.get("note").map(String::as_str), Some("a=b"));
        assert!(parse_metadata(&["novalue".to_string()]).is_err());
        assert!(parse_metadata(&["=x".to_string()]).is_err());
    }

    #[test]
    fn structured_output_descriptions() {
        let schema = StructuredOutputMeta {
            mode: "json_schema".into(),
            file: Some("s.json".into()),
            field: Some("response_format".into()),
            tool_choice: None,
        };
        assert_eq!(schema.describe(), "json_schema (s.json, response_format)");
        let tools = StructuredOutputMeta {
            mode: "tools".into(),
            file: Some("t.json".into()),
            field: None,
            tool_choice: Some("auto".into()),
        };
        assert_eq!(tools.describe(), "tools (t.json, tool_choice auto)");
    }
}
