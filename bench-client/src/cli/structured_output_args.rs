//! The structured-output workload flags (`--json-schema`, `--json-object`, `--tools`,
//! `--tool-choice`, `--structured-output-field`), shared by `serve` and `sweep`; their files
//! read and checked at start-up into the [`StructuredOutput`] every request sends, and the
//! [`StructuredOutputMeta`] its result records.

use std::path::{Path, PathBuf};

use anyhow::{bail, ensure, Context};
use clap::{Args, ValueEnum};
use serde_json::Value;

use crate::client::{Endpoint, SchemaField, StructuredOutput, ToolChoice};
use crate::stats::StructuredOutputMeta;

/// `--structured-output-field`: the body field that carries `--json-schema`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SchemaFieldArg {
    /// OpenAI's `response_format: {"type": "json_schema", …}`.
    #[value(name = "response_format")]
    ResponseFormat,
    /// vLLM's `structured_outputs: {"json": schema}` (vLLM ≥ 0.10.2).
    #[value(name = "structured_outputs")]
    StructuredOutputs,
    /// Older vLLM's `guided_json: schema`.
    #[value(name = "guided_json")]
    GuidedJson,
}

impl From<SchemaFieldArg> for SchemaField {
    fn from(arg: SchemaFieldArg) -> Self {
        match arg {
            SchemaFieldArg::ResponseFormat => SchemaField::ResponseFormat,
            SchemaFieldArg::StructuredOutputs => SchemaField::StructuredOutputs,
            SchemaFieldArg::GuidedJson => SchemaField::GuidedJson,
        }
    }
}

/// Structured outputs and tools: what every request asks of its output.
#[derive(Debug, Clone, Default, Args)]
pub struct StructuredOutputArgs {
    /// Constrain every request's output to this JSON schema (a file holding a JSON object).
    /// Chat sends OpenAI's response_format (json_schema, strict), completions vLLM's
    /// structured_outputs; see --structured-output-field.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["json_object", "tools"])]
    pub json_schema: Option<PathBuf>,
    /// The body field that carries --json-schema: response_format, structured_outputs (vLLM)
    /// or guided_json (older vLLM). [default: response_format on chat, structured_outputs on
    /// completions]
    #[arg(long, value_enum, value_name = "FIELD", requires = "json_schema")]
    pub structured_output_field: Option<SchemaFieldArg>,
    /// JSON mode: response_format {"type": "json_object"} with every request (chat only).
    #[arg(long, conflicts_with = "tools")]
    pub json_object: bool,
    /// Send this OpenAI `tools` array (a JSON file) with every request (chat only).
    #[arg(long, value_name = "FILE")]
    pub tools: Option<PathBuf>,
    /// tool_choice with --tools: auto, required, none, or a function's name (that function
    /// must be called). [default: auto]
    #[arg(long, value_name = "auto|required|none|NAME", requires = "tools")]
    pub tool_choice: Option<String>,
}

const CHAT_ONLY: &str = "needs the chat endpoint (--backend openai-chat or --endpoint \
                         /v1/chat/completions)";

impl StructuredOutputArgs {
    /// Whether any structured-output flag was given.
    pub fn is_set(&self) -> bool {
        self.json_schema.is_some() || self.json_object || self.tools.is_some()
    }

    /// Reads and checks the files; what every request sends to `endpoint`.
    pub fn load(&self, endpoint: Endpoint) -> anyhow::Result<StructuredOutput> {
        if let Some(path) = &self.json_schema {
            let field = self
                .structured_output_field
                .map_or_else(|| SchemaField::default_for(endpoint), SchemaField::from);
            return Ok(StructuredOutput::JsonSchema {
                name: schema_name(path),
                schema: read_schema(path)?,
                field,
            });
        }
        if self.json_object {
            ensure!(endpoint == Endpoint::Chat, "--json-object {CHAT_ONLY}");
            return Ok(StructuredOutput::JsonObject);
        }
        if let Some(path) = &self.tools {
            ensure!(endpoint == Endpoint::Chat, "--tools {CHAT_ONLY}");
            let tools = read_tools(path)?;
            let choice = ToolChoice::parse(self.tool_choice.as_deref().unwrap_or("auto"));
            if let ToolChoice::Function(name) = &choice {
                ensure!(
                    function_names(&tools).any(|defined| defined == name),
                    "--tool-choice {name:?} is neither auto, required, none nor a function of {}",
                    path.display()
                );
            }
            return Ok(StructuredOutput::Tools { tools, choice });
        }
        Ok(StructuredOutput::Unconstrained)
    }

    /// What the result records about `output` (loaded from these flags); `None` for free text.
    pub fn meta(&self, output: &StructuredOutput) -> Option<StructuredOutputMeta> {
        let file = |path: &Option<PathBuf>| path.as_ref().map(|p| p.display().to_string());
        match output {
            StructuredOutput::Unconstrained => None,
            StructuredOutput::JsonSchema { field, .. } => Some(StructuredOutputMeta {
                mode: "json_schema".into(),
                file: file(&self.json_schema),
                field: Some(field_name(*field).into()),
                tool_choice: None,
            }),
            StructuredOutput::JsonObject => Some(StructuredOutputMeta {
                mode: "json_object".into(),
                file: None,
                field: Some("response_format".into()),
                tool_choice: None,
            }),
            StructuredOutput::Tools { choice, .. } => Some(StructuredOutputMeta {
                mode: "tools".into(),
                file: file(&self.tools),
                field: None,
                tool_choice: Some(choice_name(choice)),
            }),
        }
    }
}

fn field_name(field: SchemaField) -> &'static str {
    match field {
        SchemaField::ResponseFormat => "response_format",
        SchemaField::StructuredOutputs => "structured_outputs",
        SchemaField::GuidedJson => "guided_json",
    }
}

fn choice_name(choice: &ToolChoice) -> String {
    match choice {
        ToolChoice::Auto => "auto".into(),
        ToolChoice::Required => "required".into(),
        ToolChoice::None => "none".into(),
        ToolChoice::Function(name) => name.clone(),
    }
}

/// `response_format`'s schema name: the file's stem, in the characters OpenAI allows
/// (`[A-Za-z0-9_-]`, at most 64), else `bench`.
fn schema_name(path: &Path) -> String {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy())
        .unwrap_or_default();
    let name: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if name.is_empty() {
        "bench".into()
    } else {
        name
    }
}

fn read_json(flag: &str, path: &Path) -> anyhow::Result<Value> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("{flag}: cannot read {}", path.display()))?;
    serde_json::from_str(&text)
        .with_context(|| format!("{flag}: {} is not valid JSON", path.display()))
}

fn read_schema(path: &Path) -> anyhow::Result<Value> {
    let schema = read_json("--json-schema", path)?;
    ensure!(
        schema.is_object(),
        "--json-schema: {} must hold a JSON object (a JSON schema), not {}",
        path.display(),
        kind(&schema)
    );
    Ok(schema)
}

/// A non-empty array of `{"type": "function", "function": {"name": …}}`.
fn read_tools(path: &Path) -> anyhow::Result<Value> {
    let tools = read_json("--tools", path)?;
    let Some(entries) = tools.as_array().filter(|entries| !entries.is_empty()) else {
        bail!(
            "--tools: {} must hold a non-empty JSON array of tools, not {}",
            path.display(),
            kind(&tools)
        );
    };
    for (index, tool) in entries.iter().enumerate() {
        let is_function = tool.get("type").and_then(Value::as_str) == Some("function");
        let name = tool.pointer("/function/name").and_then(Value::as_str);
        ensure!(
            is_function && name.is_some_and(|name| !name.is_empty()),
            "--tools: {} tool {index} is not {{\"type\": \"function\", \"function\": \
             {{\"name\": …}}}}",
            path.display()
        );
    }
    Ok(tools)
}

fn function_names(tools: &Value) -> impl Iterator<Item = &str> {
    tools
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|tool| tool.pointer("/function/name").and_then(Value::as_str))
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(entries) if entries.is_empty() => "an empty array",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
#[path = "structured_output_args_tests.rs"]
mod tests;
