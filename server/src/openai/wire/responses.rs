//! The Responses API's objects (`/v1/responses`): the Response in each of its states, its
//! output items (a reasoning item, a message with its `output_text` part, function calls), and
//! the small answers of `POST /v1/responses/input_tokens` and `DELETE /v1/responses/{id}`.
//! `responses/object.rs` builds them from a request and a chat answer; the streamed events are
//! `responses_events.rs`, a stored response's input `responses_input_items.rs`.

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::logprobs::ChatTokenLogprob;
use super::responses_echo::{Echoed, Metadata, TextConfig, ToolChoiceMode};
use super::responses_usage::ResponsesUsage;

/// What every state of one response shares: its id, time and model, and the request's
/// settings as OpenAI echoes them (its defaults where the request set none).
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct ResponseShell {
    /// `resp_` and 32 random hex digits.
    pub id: String,
    /// Always `response`.
    #[schema(value_type = String)]
    pub object: &'static str,
    /// Unix seconds.
    pub created_at: u64,
    pub model: String,
    pub instructions: Option<String>,
    pub max_output_tokens: Option<u64>,
    pub parallel_tool_calls: bool,
    /// The request's value as it wrote it (0.7 is written 0.7, as OpenAI echoes it).
    pub temperature: Option<f64>,
    /// As `temperature`.
    pub top_p: Option<f64>,
    /// The request's, `"auto"` without one.
    #[schema(value_type = Object)]
    pub tool_choice: Echoed<ToolChoiceMode>,
    /// The request's tools as it sent them.
    pub tools: Vec<Value>,
    /// The request's, `{"format": {"type": "text"}}` without one.
    #[schema(value_type = Object)]
    pub text: Echoed<TextConfig>,
    /// The request's, `{}` without one.
    #[schema(value_type = Object)]
    pub metadata: Echoed<Metadata>,
    pub previous_response_id: Option<String>,
    /// The request's, as it sent it.
    pub reasoning: Option<Value>,
    pub store: bool,
    /// `disabled` or `auto`.
    pub truncation: String,
    pub user: Option<String>,
    pub top_logprobs: u32,
    pub background: bool,
}

/// The Response object (`object` `response`): the shell's fields, then its state.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct ResponseObject {
    #[serde(flatten)]
    pub shell: ResponseShell,
    pub status: ResponseStatus,
    /// Set when `status` is `incomplete`, else `null`.
    pub incomplete_details: Option<IncompleteDetails>,
    /// Set when `status` is `failed`, else `null`.
    pub error: Option<ResponseError>,
    pub output: Vec<OutputItem>,
    /// `null` until the response has ended (and for a failed one).
    pub usage: Option<ResponsesUsage>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ResponseStatus {
    /// A background response not yet started (its first answer).
    Queued,
    InProgress,
    Completed,
    /// The output hit `max_output_tokens`.
    Incomplete,
    Failed,
    /// A background response stopped by `POST /v1/responses/{id}/cancel`.
    Cancelled,
}

impl ResponseStatus {
    /// The status as it is written.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::InProgress => "in_progress",
            Self::Completed => "completed",
            Self::Incomplete => "incomplete",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    /// Whether a response in this status is still being written (a background one).
    pub fn is_running(self) -> bool {
        matches!(self, Self::Queued | Self::InProgress)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
pub struct IncompleteDetails {
    pub reason: IncompleteReason,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum IncompleteReason {
    MaxOutputTokens,
}

/// Why a response failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct ResponseError {
    /// `server_error` for an engine error.
    pub code: String,
    pub message: String,
}

/// One item of a Response's `output`, its `type` first.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum OutputItem {
    Message(OutputMessage),
    Reasoning(ReasoningItem),
    FunctionCall(FunctionCallItem),
}

/// An output item's state: `incomplete` when the token limit (or an error, or a cancel) cut it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ItemStatus {
    InProgress,
    Completed,
    Incomplete,
}

/// The assistant's text, as one `output_text` part (none while it opens in a stream).
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct OutputMessage {
    /// `msg_`, the response id's hex digits, the item's place in `output`.
    pub id: String,
    pub status: ItemStatus,
    /// Always `assistant`.
    #[schema(value_type = String)]
    pub role: &'static str,
    pub content: Vec<MessageContent>,
}

/// A part of a message's `content`, its `type` first.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum MessageContent {
    OutputText(OutputText),
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct OutputText {
    pub text: String,
    /// Always empty: the server cites nothing.
    pub annotations: Vec<Value>,
    /// The text's tokens as chat's `logprobs.content` writes them (empty unless asked for).
    pub logprobs: Vec<ChatTokenLogprob>,
}

/// The thinking a `--reasoning-parser` split from the answer.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct ReasoningItem {
    /// `rs_`, the response id's hex digits, the item's place in `output`.
    pub id: String,
    /// Always empty: the server writes no summaries.
    pub summary: Vec<Value>,
    /// The thinking as one `reasoning_text` part (none while it opens in a stream).
    pub content: Vec<ReasoningContent>,
    pub status: ItemStatus,
}

/// A part of a reasoning item's `content`, its `type` first.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ReasoningContent {
    ReasoningText(ReasoningText),
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct ReasoningText {
    pub text: String,
}

/// One tool call of the answer.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct FunctionCallItem {
    /// `fc_`, the response id's hex digits, the item's place in `output`.
    pub id: String,
    /// The chat call's id (`call_` and 24 alphanumerics), which a `function_call_output` names.
    pub call_id: String,
    pub name: String,
    /// The arguments' JSON text (empty while it opens in a stream).
    pub arguments: String,
    pub status: ItemStatus,
}

/// `POST /v1/responses/input_tokens`: how many tokens the request's prompt would be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
pub struct InputTokensCount {
    /// Always `response.input_tokens`.
    #[schema(value_type = String)]
    pub object: &'static str,
    pub input_tokens: usize,
}

/// `DELETE /v1/responses/{id}`'s answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct DeletedResponse {
    pub id: String,
    /// Always `response`.
    #[schema(value_type = String)]
    pub object: &'static str,
    /// Always `true`: an unknown id is a 404.
    pub deleted: bool,
}

impl InputTokensCount {
    pub fn new(input_tokens: usize) -> Self {
        Self {
            object: "response.input_tokens",
            input_tokens,
        }
    }
}

impl DeletedResponse {
    pub fn new(id: String) -> Self {
        Self {
            id,
            object: "response",
            deleted: true,
        }
    }
}

/// A shell as a request with no settings makes it, created at 7 (tests).
#[cfg(test)]
impl ResponseShell {
    pub fn for_tests(id: &str) -> Self {
        Self {
            id: id.into(),
            object: "response",
            created_at: 7,
            model: "m".into(),
            instructions: None,
            max_output_tokens: None,
            parallel_tool_calls: true,
            temperature: None,
            top_p: None,
            tool_choice: Echoed::Default(ToolChoiceMode::Auto),
            tools: Vec::new(),
            text: Echoed::Default(TextConfig::PLAIN),
            metadata: Echoed::Default(Metadata::new()),
            previous_response_id: None,
            reasoning: None,
            store: true,
            truncation: "disabled".into(),
            user: None,
            top_logprobs: 0,
            background: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::openai::wire::responses_usage::{InputTokensDetails, OutputTokensDetails};

    fn shell() -> ResponseShell {
        ResponseShell {
            max_output_tokens: Some(3),
            temperature: Some(0.7),
            ..ResponseShell::for_tests("resp_1")
        }
    }

    #[test]
    fn statuses_name_themselves_as_they_are_written() {
        use ResponseStatus::*;
        for status in [Queued, InProgress, Completed, Incomplete, Failed, Cancelled] {
            assert_eq!(json!(status), json!(status.as_str()));
        }
        assert!(Queued.is_running() && InProgress.is_running() && !Cancelled.is_running());
    }

    #[test]
    fn a_response_writes_the_shell_then_its_state_in_order_with_nulls() {
        let part = MessageContent::OutputText(OutputText {
            text: "Hi".into(),
            annotations: Vec::new(),
            logprobs: Vec::new(),
        });
        let message = OutputItem::Message(OutputMessage {
            id: "msg_1_0".into(),
            status: ItemStatus::Incomplete,
            role: "assistant",
            content: vec![part],
        });
        let usage = ResponsesUsage {
            input_tokens: 2,
            input_tokens_details: InputTokensDetails {
                cached_tokens: 0,
                cache_write_tokens: 0,
            },
            output_tokens: 3,
            output_tokens_details: OutputTokensDetails {
                reasoning_tokens: 0,
            },
            total_tokens: 5,
        };
        let response = ResponseObject {
            shell: shell(),
            status: ResponseStatus::Incomplete,
            incomplete_details: Some(IncompleteDetails {
                reason: IncompleteReason::MaxOutputTokens,
            }),
            error: None,
            output: vec![message],
            usage: Some(usage),
        };
        let expected = concat!(
            r#"{"id":"resp_1","object":"response","created_at":7,"model":"m","instructions":null,"#,
            r#""max_output_tokens":3,"parallel_tool_calls":true,"temperature":0.7,"#,
            r#""top_p":null,"tool_choice":"auto","tools":[],"text":{"format":{"type":"text"}},"#,
            r#""metadata":{},"previous_response_id":null,"reasoning":null,"store":true,"#,
            r#""truncation":"disabled","user":null,"top_logprobs":0,"background":false,"#,
            r#""status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"#,
            r#""error":null,"output":[{"type":"message","id":"msg_1_0","status":"incomplete","#,
            r#""role":"assistant","content":[{"type":"output_text","text":"Hi","annotations":[],"#,
            r#""logprobs":[]}]}],"usage":{"input_tokens":2,"input_tokens_details":"#,
            r#"{"cached_tokens":0,"cache_write_tokens":0},"output_tokens":3,"#,
            r#""output_tokens_details":{"reasoning_tokens":0},"total_tokens":5}}"#
        );
        assert_eq!(
            serde_json::to_string(&response).expect("serializes"),
            expected
        );
    }

    #[test]
    fn items_and_answers_write_their_type_first() {
        let reasoning = OutputItem::Reasoning(ReasoningItem {
            id: "rs_1_0".into(),
            summary: Vec::new(),
            content: vec![ReasoningContent::ReasoningText(ReasoningText {
                text: "hmm".into(),
            })],
            status: ItemStatus::Completed,
        });
        let call = OutputItem::FunctionCall(FunctionCallItem {
            id: "fc_1_1".into(),
            call_id: "call_a".into(),
            name: "w".into(),
            arguments: "{}".into(),
            status: ItemStatus::InProgress,
        });
        let written = serde_json::to_string(&[reasoning, call]).expect("serializes");
        assert_eq!(
            written,
            concat!(
                r#"[{"type":"reasoning","id":"rs_1_0","summary":[],"content":[{"type":"#,
                r#""reasoning_text","text":"hmm"}],"status":"completed"},{"type":"function_call","#,
                r#""id":"fc_1_1","call_id":"call_a","name":"w","arguments":"{}","#,
                r#""status":"in_progress"}]"#
            )
        );
        let answers = (
            InputTokensCount::new(4),
            DeletedResponse::new("resp_1".into()),
        );
        assert_eq!(
            serde_json::to_string(&answers).expect("serializes"),
            r#"[{"object":"response.input_tokens","input_tokens":4},{"id":"resp_1","object":"response","deleted":true}]"#
        );
    }
}
