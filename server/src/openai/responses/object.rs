//! The Response object: the request's settings as OpenAI echoes them, the output items (reasoning,
//! a message, function calls) read from a chat answer, and usage in Responses' names. The shapes
//! are `wire/responses.rs`'s; this builds them.

use pagoda_text::template::{AssistantToolCall, ChatMessage};

use crate::openai::responses::request::ResponsesRequest;
use crate::openai::wire::chat::ChatChoice;
use crate::openai::wire::logprobs::ChatTokenLogprob;
use crate::openai::wire::responses::{
    FunctionCallItem, IncompleteDetails, IncompleteReason, ItemStatus, MessageContent, OutputItem,
    OutputMessage, OutputText, ReasoningContent, ReasoningItem, ReasoningText, ResponseError,
    ResponseObject, ResponseShell, ResponseStatus,
};
use crate::openai::wire::responses_echo::{Echoed, Metadata, TextConfig, ToolChoiceMode};
use crate::openai::wire::responses_usage::ResponsesUsage;
use crate::openai::wire::tool_calls::ToolCall;

impl ResponseShell {
    pub fn new(id: String, created_at_s: u64, model: String, request: &ResponsesRequest) -> Self {
        Self {
            id,
            object: "response",
            created_at: created_at_s,
            model,
            instructions: request.instructions.clone(),
            max_output_tokens: request.max_output_tokens,
            parallel_tool_calls: request.parallel_tool_calls.unwrap_or(true),
            temperature: request.temperature,
            top_p: request.top_p,
            tool_choice: Echoed::or_default(request.tool_choice.as_ref(), ToolChoiceMode::Auto),
            tools: request.tools.clone().unwrap_or_default(),
            text: Echoed::or_default(request.text.as_ref(), TextConfig::PLAIN),
            metadata: Echoed::or_default(request.metadata.as_ref(), Metadata::new()),
            previous_response_id: request.previous_response_id.clone(),
            reasoning: request.reasoning.clone(),
            store: request.store.unwrap_or(true),
            truncation: request.truncation.as_deref().unwrap_or("disabled").into(),
            user: request.user.clone(),
            top_logprobs: request.top_logprobs.unwrap_or(0),
            background: request.background.unwrap_or(false),
        }
    }

    /// The Response in a state: `queued`, `in_progress`, `completed`, `incomplete`
    /// (`finish_reason` `length`: the output hit `max_output_tokens`) or `cancelled`.
    pub fn object(
        &self,
        status: ResponseStatus,
        output: Vec<OutputItem>,
        usage: Option<ResponsesUsage>,
    ) -> ResponseObject {
        let incomplete = status == ResponseStatus::Incomplete;
        ResponseObject {
            shell: self.clone(),
            status,
            incomplete_details: incomplete.then_some(IncompleteDetails {
                reason: IncompleteReason::MaxOutputTokens,
            }),
            error: None,
            output,
            usage,
        }
    }

    /// The Response `failed` with `error`, its output so far and no usage.
    pub fn failed(&self, output: Vec<OutputItem>, error: ResponseError) -> ResponseObject {
        ResponseObject {
            shell: self.clone(),
            status: ResponseStatus::Failed,
            incomplete_details: None,
            error: Some(error),
            output,
            usage: None,
        }
    }

    /// An output item's id: its kind's prefix, the response's id, its place.
    pub fn item_id(&self, prefix: &str, output_index: usize) -> String {
        let suffix = self.id.strip_prefix("resp_").unwrap_or(&self.id);
        format!("{prefix}_{suffix}_{output_index}")
    }
}

/// The status a chat `finish_reason` gives a response.
pub fn status_of(finish_reason: &str) -> ResponseStatus {
    match finish_reason {
        "length" => ResponseStatus::Incomplete,
        _ => ResponseStatus::Completed,
    }
}

/// The status of the item a response ended in: `incomplete` when the response is (the token
/// limit cut it, as OpenAI marks it), else `completed`.
pub fn last_item_status(status: ResponseStatus) -> ItemStatus {
    match status {
        ResponseStatus::Incomplete => ItemStatus::Incomplete,
        _ => ItemStatus::Completed,
    }
}

pub fn reasoning_item(id: String, text: &str, status: ItemStatus) -> OutputItem {
    let content = match text.is_empty() {
        true => Vec::new(),
        false => vec![ReasoningContent::ReasoningText(ReasoningText {
            text: text.into(),
        })],
    };
    OutputItem::Reasoning(ReasoningItem {
        id,
        summary: Vec::new(),
        content,
        status,
    })
}

pub fn text_part(text: &str, logprobs: &[ChatTokenLogprob]) -> MessageContent {
    MessageContent::OutputText(OutputText {
        text: text.into(),
        annotations: Vec::new(),
        logprobs: logprobs.to_vec(),
    })
}

pub fn message_item(id: String, content: Vec<MessageContent>, status: ItemStatus) -> OutputItem {
    OutputItem::Message(OutputMessage {
        id,
        status,
        role: "assistant",
        content,
    })
}

/// A function call item of a whole chat call.
pub fn function_call_item(id: String, call: &ToolCall, status: ItemStatus) -> OutputItem {
    OutputItem::FunctionCall(FunctionCallItem {
        id,
        call_id: call.id.clone(),
        name: call.function.name.clone(),
        arguments: call.function.arguments.clone(),
        status,
    })
}

/// What a finished chat choice writes, in output order.
enum Written<'a> {
    Reasoning(&'a str),
    Text(&'a str, &'a [ChatTokenLogprob]),
    Call(&'a ToolCall),
}

/// A finished chat choice's reasoning, text and tool calls.
fn written(choice: &ChatChoice) -> Vec<Written<'_>> {
    let message = &choice.message;
    let mut written = Vec::new();
    let reasoning = message
        .reasoning_content
        .as_ref()
        .and_then(Option::as_deref);
    if let Some(reasoning) = reasoning.filter(|r| !r.is_empty()) {
        written.push(Written::Reasoning(reasoning));
    }
    let calls = message.tool_calls.as_deref().unwrap_or_default();
    // Whitespace before calls is no message (a reasoning model's blank line after thinking).
    let text = message.content.as_deref().unwrap_or("");
    let is_blank_before_calls = !calls.is_empty() && text.trim().is_empty();
    if !text.is_empty() && !is_blank_before_calls {
        let logprobs = choice.logprobs.as_ref().map(|l| l.content.as_slice());
        written.push(Written::Text(text, logprobs.unwrap_or_default()));
    }
    written.extend(calls.iter().map(Written::Call));
    written
}

/// The output items of a finished chat choice: its reasoning, its text, its tool calls.
pub fn output_items(shell: &ResponseShell, choice: &ChatChoice) -> Vec<OutputItem> {
    let written = written(choice);
    let status = status_of(&choice.finish_reason);
    let last = written.len().saturating_sub(1);
    let item = |(index, written)| {
        let status = match index == last {
            true => last_item_status(status),
            false => ItemStatus::Completed,
        };
        match written {
            Written::Reasoning(text) => reasoning_item(shell.item_id("rs", index), text, status),
            Written::Text(text, logprobs) => {
                let part = text_part(text, logprobs);
                message_item(shell.item_id("msg", index), vec![part], status)
            }
            Written::Call(call) => function_call_item(shell.item_id("fc", index), call, status),
        }
    };
    written.into_iter().enumerate().map(item).collect()
}

/// The assistant's chat message an output stands for (what a later `previous_response_id`
/// continues from; reasoning is left out, as chat templates leave it out).
pub fn assistant_message(output: &[OutputItem]) -> ChatMessage {
    let texts: Vec<&str> = output
        .iter()
        .filter_map(|item| match item {
            OutputItem::Message(message) => Some(&message.content),
            _ => None,
        })
        .flatten()
        .map(|MessageContent::OutputText(part)| part.text.as_str())
        .collect();
    let calls = output.iter().filter_map(|item| match item {
        OutputItem::FunctionCall(call) => Some(AssistantToolCall::function(
            &call.call_id,
            &call.name,
            &call.arguments,
        )),
        _ => None,
    });
    let content = (!texts.is_empty()).then(|| texts.join(""));
    ChatMessage::assistant(content, calls.collect())
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;
    use crate::openai::responses::chat_json;

    fn shell() -> ResponseShell {
        let request: ResponsesRequest =
            serde_json::from_value(json!({"input": "x"})).expect("request");
        ResponseShell::new("resp_t".into(), 1, "m".into(), &request)
    }

    /// The items as the JSON the Response writes (what the assertions read).
    fn output_items(shell: &ResponseShell, choice: &Value) -> Vec<Value> {
        let items = super::output_items(shell, &chat_json::choice(choice));
        let json = |item| serde_json::to_value(item).expect("an item serializes");
        items.iter().map(json).collect()
    }

    #[test]
    fn blank_text_before_calls_is_no_item_and_a_cut_item_is_incomplete() {
        let call = json!({"id": "call_a", "type": "function",
            "function": {"name": "w", "arguments": "{\"city\": \"Par"}});
        let choice = json!({"finish_reason": "length", "message": {"role": "assistant",
            "content": "\n\n", "reasoning_content": "hmm", "tool_calls": [call]}});
        let output = output_items(&shell(), &choice);
        let types: Vec<&str> = output
            .iter()
            .map(|i| i["type"].as_str().unwrap_or(""))
            .collect();
        assert_eq!(types, ["reasoning", "function_call"]);
        assert_eq!(output[0]["status"], "completed");
        assert_eq!(output[1]["status"], "incomplete");
        assert_eq!(output[1]["call_id"], "call_a");
        let answer = json!({"finish_reason": "stop", "message": {"content": "\n"}});
        assert_eq!(
            output_items(&shell(), &answer)[0]["content"][0]["text"],
            "\n"
        );
    }

    #[test]
    fn the_assistant_message_joins_the_text_and_carries_the_calls() {
        let call = json!({"id": "call_a", "type": "function",
            "function": {"name": "w", "arguments": "{}"}});
        let choice = json!({"finish_reason": "tool_calls", "message": {"content": "Sure.",
            "reasoning_content": "hmm", "tool_calls": [call]}});
        let output = super::output_items(&shell(), &chat_json::choice(&choice));
        assert_eq!(
            serde_json::to_string(&assistant_message(&output)).expect("serializes"),
            concat!(
                r#"{"role":"assistant","content":"Sure.","tool_calls":[{"id":"call_a","#,
                r#""type":"function","function":{"name":"w","arguments":"{}"}}]}"#
            )
        );
        let thinking = json!({"message": {"reasoning_content": "hmm"}});
        let thinking_only = super::output_items(&shell(), &chat_json::choice(&thinking));
        let no_text: ChatMessage =
            serde_json::from_value(json!({"role": "assistant", "content": null})).expect("reads");
        assert_eq!(assistant_message(&thinking_only), no_text);
    }
}
