//! A chat request's plan, built once from its body: the [`RequestPlan`] every endpoint has, the
//! tools it offers the template, and [`ChatText`] — how its replies are read (reasoning split,
//! tool calls) and written (echo, role, legacy `function_call`).

use pagoda_text::reasoning::ReasoningFormat;
use pagoda_text::tool_calls::ToolCallFormat;

use crate::chat_prompt::prompt_ending;
use crate::openai::error::ApiError;
use crate::openai::request::bad_words::bad_words_token_ids;
use crate::openai::request::body::ChatCompletionRequest;
use crate::openai::request::fields::CheckedFields;
use crate::openai::request::model_select::select_model;
use crate::openai::request::plan::{RequestPlan, Resolved, SharedConstraint};
use crate::openai::request::prediction::predicted_token_ids;
use crate::openai::request::thinking_budget::thinking_budget;
use crate::openai::tools::constrain::{compile_requested, TOOL_CALL_KIND};
use crate::openai::tools::legacy_functions::read_legacy_functions;
use crate::openai::tools::output::ToolOutput;
use crate::openai::tools::output_spec::requested_spec;
use crate::openai::tools::request::{parse_tools, ToolsRequest};
use crate::state::AppState;

/// What a chat request asks for, checked and complete.
#[derive(Debug)]
pub struct ChatPlan {
    pub plan: RequestPlan,
    /// The tools the request offers (rendered into the prompt) and what it forces.
    pub tools: Option<ToolsRequest>,
    pub text: ChatText,
}

/// How a chat reply's text is read and written.
#[derive(Debug, Clone)]
pub struct ChatText {
    /// How tool calls are read from the output (`None`: no tools offered).
    pub tool_output: Option<ToolOutput>,
    /// How the thinking is split from the answer (`--reasoning-parser`).
    pub reasoning: Option<ReasoningFormat>,
    /// vLLM's `include_reasoning: false`: the thinking is split off and left out.
    pub hide_reasoning: bool,
    /// vLLM's chat `echo`: the final assistant message the output continues, written first.
    pub echo: Option<String>,
    /// The replies' role (`assistant` unless `--response-role` or the prompt's ending says).
    pub role: String,
    /// The request offered deprecated `functions`: calls are answered as `function_call`.
    pub legacy_functions: bool,
}

impl ChatPlan {
    /// Checks the request's fields, then resolves its model, words, tools and grammar (reading
    /// its deprecated `functions` into `tools` on the way).
    pub async fn build(
        state: &AppState,
        request: &mut ChatCompletionRequest,
    ) -> Result<Self, ApiError> {
        let model = select_model(state, request.options.fields.model.as_deref()).await?;
        let legacy_functions = read_legacy_functions(request)?;
        if request.messages.is_empty() {
            return Err(ApiError::invalid(
                "messages",
                "`messages` must contain at least one message",
            ));
        }
        let logprobs = requested_logprobs(request)?;
        let fields = CheckedFields::check(&request.options.common(), logprobs, &state.defaults)?;
        let hide_reasoning =
            request.options.include_reasoning == Some(false) && state.reasoning.is_some();
        let thinking_budget = thinking_budget(
            request.options.thinking_token_budget,
            state.reasoning,
            &state.tokenizer,
        )?;
        let bad_words = bad_words_token_ids(
            &state.tokenizer,
            request.options.fields.bad_words.as_deref(),
        )?;
        let tools = parse_tools(
            request.options.tools.as_ref(),
            request.options.tool_choice.as_ref(),
            request.options.parallel_tool_calls,
        )?;
        let tool_output = match &tools {
            Some(tools) => tools.output(state.tool_calls)?,
            None => None,
        };
        let resolved = Resolved {
            model,
            bad_words,
            thinking_budget,
            constraint: constrain(state, request, tools.as_ref()).await?,
            echo: false,
            keep_special_tokens: reads_special_tokens(tool_output.as_ref()),
            hide_reasoning,
            predicted_token_ids: predicted_token_ids(
                &state.tokenizer,
                request.options.prediction.as_ref(),
                state.engine.info().max_model_len,
            )?,
        };
        let text = ChatText {
            tool_output,
            reasoning: state.reasoning,
            hide_reasoning,
            echo: echoed_text(request)?,
            role: response_role(state, request),
            legacy_functions,
        };
        Ok(Self {
            plan: RequestPlan::new(fields, resolved),
            tools,
            text,
        })
    }
}

/// Whether the tool-call parser reads special tokens from the text: Mistral's calls start with
/// `[TOOL_CALLS]`, a special token, which then stays in the text.
fn reads_special_tokens(tool_output: Option<&ToolOutput>) -> bool {
    matches!(
        tool_output,
        Some(ToolOutput::Parsed {
            format: ToolCallFormat::Mistral,
            ..
        })
    )
}

/// Chat's `logprobs` and `top_logprobs` as the number of alternatives asked for.
fn requested_logprobs(request: &ChatCompletionRequest) -> Result<Option<usize>, ApiError> {
    match (request.options.logprobs, request.options.top_logprobs) {
        (Some(true), top) => Ok(Some(top.unwrap_or(0) as usize)),
        (_, Some(top)) if top > 0 => Err(ApiError::invalid(
            "top_logprobs",
            "`top_logprobs` requires `logprobs` to be true",
        )),
        _ => Ok(None),
    }
}

/// The replies' role, as vLLM chooses it: `--response-role` after a generation prompt, else the
/// role of the last message (the one the output continues).
fn response_role(state: &AppState, request: &ChatCompletionRequest) -> String {
    // A contradicting pair is refused when the prompt is rendered; the role does not matter then.
    let ends_with_generation_prompt = prompt_ending(
        request.options.add_generation_prompt,
        request.options.continue_final_message,
    )
    .map_or(true, |(add_generation_prompt, _)| add_generation_prompt);
    match request.messages.last() {
        Some(last) if !ends_with_generation_prompt => last.role.clone(),
        _ => state.response_role.clone(),
    }
}

/// vLLM's chat `echo`: the text of the final message when it is the assistant's, which the
/// output then starts with.
fn echoed_text(request: &ChatCompletionRequest) -> Result<Option<String>, ApiError> {
    let last = request.messages.last().filter(|m| m.role == "assistant");
    match (request.options.echo, last) {
        (Some(true), Some(message)) => {
            let text = message.content.to_text().map_err(|error| {
                let last = request.messages.len() - 1;
                ApiError::invalid(format!("messages[{last}].content"), error.to_string())
            })?;
            Ok((!text.is_empty()).then_some(text))
        }
        _ => Ok(None),
    }
}

/// Compiles what constrains the output: a forced tool call, or the request's structured-output
/// field. Tools are compiled even when nothing is forced, so bad parameter schemas are a 400.
async fn constrain(
    state: &AppState,
    request: &ChatCompletionRequest,
    tools: Option<&ToolsRequest>,
) -> Result<Option<SharedConstraint>, ApiError> {
    let compiler = state.grammar_compiler.as_deref();
    let requested = requested_spec(
        &request.options.fields,
        request.options.response_format.as_ref(),
    )?;
    let forced = tools.and_then(ToolsRequest::forced_spec);
    if let (Some(requested), Some(_)) = (&requested, &forced) {
        return Err(ApiError::invalid(
            requested.field.clone(),
            format!(
                "`{}` cannot be combined with a tool_choice that forces a call",
                requested.field
            ),
        ));
    }
    // Without a compiler (a tokenizer llguidance cannot read) only forced calls need one.
    if let (Some(tools), Some(_)) = (tools, compiler) {
        for spec in tools.validation_specs() {
            compile_requested(compiler, &state.metrics, &spec).await?;
        }
    }
    let (spec, kind) = match (forced, requested) {
        (Some(forced), _) => (forced, TOOL_CALL_KIND),
        (None, Some(requested)) => {
            let kind = requested.spec.kind();
            (requested, kind)
        }
        (None, None) => return Ok(None),
    };
    let constraint = compile_requested(compiler, &state.metrics, &spec).await?;
    state.metrics.record_structured_request(kind);
    Ok(Some(constraint))
}
