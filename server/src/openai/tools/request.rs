//! A chat request's `tools`, `tool_choice` and `parallel_tool_calls` → what the prompt offers,
//! what (if anything) constrains decoding, and how the output is read back into `tool_calls`.
//!
//! - `none`: tools are not offered; the output is plain content.
//! - `auto` (the default with tools): the model decides; `--tool-call-parser` reads its calls
//!   out of the text. Needs `--enable-auto-tool-choice`, as in vLLM.
//! - `required`: decoding is constrained to a JSON array of calls to the tools, each with
//!   arguments valid for that tool (one call unless `parallel_tool_calls`).
//! - `{"type": "function", "function": {"name"}}`: decoding is constrained to that function's
//!   arguments.

use pagoda_structured::tool_schema::{named_call_schema, required_calls_schema, ToolFunction};
use pagoda_structured::{strict_schema, OutputSpec};
use pagoda_text::tool_calls::ToolCallFormat;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::openai::error::ApiError;
use crate::openai::tools::output::ToolOutput;
use crate::openai::tools::output_spec::RequestedSpec;
use crate::tool_call_config::ToolCallConfig;

/// What `tool_choice` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolChoice {
    None,
    Auto,
    Required,
    Named(String),
}

/// A request's tools, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolsRequest {
    /// The OpenAI tool objects, for the chat template.
    pub tools: Vec<Value>,
    pub functions: Vec<ToolFunction>,
    pub choice: ToolChoice,
    pub parallel_tool_calls: bool,
}

/// A chat tool as the request writes it: `{"type": "function", "function": {…}}`; the shape the
/// Responses API's flat tools and the deprecated `functions` are turned into.
#[derive(Debug, Serialize)]
struct ChatToolShape {
    #[serde(rename = "type")]
    kind: &'static str,
    function: Map<String, Value>,
}

/// A named `tool_choice` as chat writes it: `{"type": "function", "function": {"name"}}`.
#[derive(Debug, Serialize)]
struct NamedToolChoiceShape<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: FunctionName<'a>,
}

#[derive(Debug, Serialize)]
struct FunctionName<'a> {
    name: &'a str,
}

/// Chat's tool offering `function` (its `name`, `description`, `parameters`, `strict`).
pub fn chat_function_tool(function: Map<String, Value>) -> Value {
    let tool = ChatToolShape {
        kind: "function",
        function,
    };
    serde_json::to_value(tool).expect("a tool serializes")
}

/// Chat's `tool_choice` naming function `name`.
pub fn chat_named_tool_choice(name: &str) -> Value {
    let choice = NamedToolChoiceShape {
        kind: "function",
        function: FunctionName { name },
    };
    serde_json::to_value(choice).expect("a tool choice serializes")
}

/// The most tools one request may offer.
pub const MAX_TOOLS: usize = 128;

/// Checks `tools`, `tool_choice` and `parallel_tool_calls`; `None` when the request has no tools
/// (`required` or a named function without tools is a 400).
pub fn parse_tools(
    tools: Option<&Value>,
    tool_choice: Option<&Value>,
    parallel_tool_calls: Option<bool>,
) -> Result<Option<ToolsRequest>, ApiError> {
    let tools = match tools {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items.clone(),
        Some(_) => return Err(ApiError::invalid("tools", "`tools` must be a list")),
    };
    let choice = parse_choice(tool_choice, !tools.is_empty())?;
    if tools.is_empty() {
        // No tools with `auto` is a request without tools, as vLLM takes it (frameworks send
        // `tools: []` with `tool_choice: "auto"` when a run has none); a forced call needs one.
        let forces_a_call = matches!(choice, ToolChoice::Required | ToolChoice::Named(_));
        if forces_a_call {
            return Err(ApiError::invalid(
                "tool_choice",
                "`tool_choice` needs `tools`",
            ));
        }
        return Ok(None);
    }
    if tools.len() > MAX_TOOLS {
        return Err(ApiError::invalid(
            "tools",
            format!("at most {MAX_TOOLS} tools per request, got {}", tools.len()),
        ));
    }
    let functions = tools
        .iter()
        .enumerate()
        .map(|(index, tool)| function_of(tool, index))
        .collect::<Result<Vec<_>, _>>()?;
    for (index, function) in functions.iter().enumerate() {
        if functions[..index].iter().any(|f| f.name == function.name) {
            return Err(ApiError::invalid(
                format!("tools[{index}].function.name"),
                format!("two tools are named {:?}", function.name),
            ));
        }
    }
    if let ToolChoice::Named(name) = &choice {
        if !functions.iter().any(|f| &f.name == name) {
            return Err(ApiError::invalid(
                "tool_choice",
                format!("`tool_choice` names {name:?}, which is not one of the tools"),
            ));
        }
    }
    Ok(Some(ToolsRequest {
        tools,
        functions,
        choice,
        parallel_tool_calls: parallel_tool_calls.unwrap_or(true),
    }))
}

fn parse_choice(value: Option<&Value>, has_tools: bool) -> Result<ToolChoice, ApiError> {
    let default = if has_tools {
        ToolChoice::Auto
    } else {
        ToolChoice::None
    };
    let named = |value: &Value| {
        let function = value.get("function")?;
        let name = function.get("name")?.as_str()?;
        (value.get("type").and_then(Value::as_str) == Some("function"))
            .then(|| ToolChoice::Named(name.to_string()))
    };
    match value {
        None | Some(Value::Null) => Ok(default),
        Some(Value::String(choice)) => match choice.as_str() {
            "none" => Ok(ToolChoice::None),
            "auto" => Ok(ToolChoice::Auto),
            "required" => Ok(ToolChoice::Required),
            other => Err(ApiError::invalid(
                "tool_choice",
                format!(
                    "unknown `tool_choice` {other:?}: expected none, auto, required or a function"
                ),
            )),
        },
        Some(object) => named(object).ok_or_else(|| {
            ApiError::invalid(
                "tool_choice",
                "`tool_choice` must be none, auto, required or \
                 {\"type\": \"function\", \"function\": {\"name\": ...}}",
            )
        }),
    }
}

/// One `{"type": "function", "function": {"name", "description", "parameters"}}`.
fn function_of(tool: &Value, index: usize) -> Result<ToolFunction, ApiError> {
    let field = |name: &str| format!("tools[{index}].{name}");
    if tool.get("type").and_then(Value::as_str) != Some("function") {
        return Err(ApiError::invalid(
            field("type"),
            "only tools of type \"function\" are supported",
        ));
    }
    let function = tool
        .get("function")
        .filter(|f| f.is_object())
        .ok_or_else(|| ApiError::invalid(field("function"), "a tool needs a `function` object"))?;
    let name = function.get("name").and_then(Value::as_str).unwrap_or("");
    let valid_name = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.');
    if !valid_name {
        return Err(ApiError::invalid(
            field("function.name"),
            "a function name must be 1-64 letters, digits, '_', '-' or '.'",
        ));
    }
    if !matches!(
        function.get("strict"),
        None | Some(Value::Null | Value::Bool(_))
    ) {
        return Err(ApiError::invalid(
            field("function.strict"),
            "`strict` must be a boolean",
        ));
    }
    let parameters = function.get("parameters").cloned().unwrap_or(Value::Null);
    if !(parameters.is_null() || parameters.is_object()) {
        return Err(ApiError::invalid(
            field("function.parameters"),
            "`parameters` must be a JSON schema object",
        ));
    }
    Ok(ToolFunction {
        name: name.to_string(),
        parameters,
    })
}

impl ToolsRequest {
    /// The tools the prompt offers (none with `tool_choice: "none"`).
    pub fn offered(&self) -> Option<&[Value]> {
        (self.choice != ToolChoice::None).then_some(self.tools.as_slice())
    }

    /// The schema that forces the call, for `required` and a named function.
    pub fn forced_spec(&self) -> Option<RequestedSpec> {
        let (schema, strict) = match &self.choice {
            ToolChoice::None | ToolChoice::Auto => return None,
            ToolChoice::Required => (
                required_calls_schema(&self.functions, self.parallel_tool_calls),
                self.all_strict(),
            ),
            ToolChoice::Named(name) => {
                let index = self.functions.iter().position(|f| &f.name == name)?;
                (
                    named_call_schema(&self.functions[index]),
                    self.is_strict(index),
                )
            }
        };
        Some(tools_spec(schema, strict, "tools".into()))
    }

    /// What is compiled to check the tools even when nothing is forced: every tool's parameters
    /// as one schema, strict when every function asked for `strict: true`; when only some did,
    /// each of those on its own, strict. So a strict function is enforced whole or refused (as
    /// OpenAI's are) while a lenient one beside it is served as vLLM serves it: what a strict
    /// schema holds compiles the same either way, so the lenient grammar of them all enforces
    /// the strict ones whole.
    pub fn validation_specs(&self) -> Vec<RequestedSpec> {
        let all = required_calls_schema(&self.functions, true);
        let mut specs = vec![tools_spec(all, self.all_strict(), "tools".into())];
        if !self.all_strict() {
            let strict_ones = (0..self.functions.len()).filter(|&index| self.is_strict(index));
            specs.extend(strict_ones.map(|index| {
                tools_spec(
                    named_call_schema(&self.functions[index]),
                    true,
                    format!("tools[{index}].function.parameters"),
                )
            }));
        }
        specs
    }

    /// Whether the function of tool `index` asked for `strict: true`.
    fn is_strict(&self, index: usize) -> bool {
        self.tools
            .get(index)
            .is_some_and(|tool| tool["function"]["strict"] == Value::Bool(true))
    }

    /// Whether every function asked for `strict: true`.
    fn all_strict(&self) -> bool {
        (0..self.functions.len()).all(|index| self.is_strict(index))
    }

    /// How the output becomes `tool_calls`; `None` with `tool_choice: "none"`.
    pub fn output(&self, config: ToolCallConfig) -> Result<Option<ToolOutput>, ApiError> {
        match &self.choice {
            ToolChoice::None => Ok(None),
            ToolChoice::Required => Ok(Some(ToolOutput::Parsed {
                format: ToolCallFormat::JsonArray,
                parallel: self.parallel_tool_calls,
            })),
            ToolChoice::Named(name) => Ok(Some(ToolOutput::Named(name.clone()))),
            ToolChoice::Auto => match (config.enable_auto_tool_choice, config.parser) {
                (true, Some(format)) => Ok(Some(ToolOutput::Parsed {
                    format,
                    parallel: self.parallel_tool_calls,
                })),
                _ => Err(ApiError::invalid(
                    "tool_choice",
                    "\"auto\" tool choice (the default when `tools` are given) needs the server \
                     started with --enable-auto-tool-choice and --tool-call-parser; or use \
                     tool_choice \"required\", a named function or \"none\"",
                )),
            },
        }
    }
}

/// A tools' schema as a spec (strict or lenient), refused under `field`.
fn tools_spec(schema: Value, strict: bool, field: String) -> RequestedSpec {
    let schema = if strict {
        strict_schema(schema)
    } else {
        schema
    };
    RequestedSpec {
        spec: OutputSpec::JsonSchema(schema),
        field,
    }
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
