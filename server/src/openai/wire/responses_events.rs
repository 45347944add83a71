//! A streamed response's events (the `data:` of each server-sent event): each writes its own
//! fields, then `type` and `sequence_number` (counting from 0 over the response's events).
//! `responses/events.rs` writes them from a chat choice's deltas.

use serde::Serialize;
use utoipa::ToSchema;

use super::logprobs::ChatTokenLogprob;
use super::responses::{MessageContent, OutputItem, ResponseObject};

/// A kind of event: an enum whose variants write as the event's `type`, and
/// [`as_str`](ResponseEventType::as_str) gives the same name for the SSE `event:` line.
macro_rules! event_type {
    ($(#[$meta:meta])* $name:ident { $($(#[$doc:meta])* $variant:ident = $wire:literal,)+ }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
        pub enum $name {
            $($(#[$doc])* #[serde(rename = $wire)] $variant,)+
        }

        impl $name {
            /// The event's `type`, as it is written.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $wire,)+
                }
            }
        }
    };
}

/// Any event of a streamed response.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[serde(untagged)]
pub enum ResponseStreamEvent {
    Response(ResponseEvent),
    OutputItem(OutputItemEvent),
    ContentPart(ContentPartEvent),
    OutputTextDelta(OutputTextDeltaEvent),
    OutputTextDone(OutputTextDoneEvent),
    ReasoningTextDelta(ReasoningTextDeltaEvent),
    ReasoningTextDone(ReasoningTextDoneEvent),
    FunctionCallArgumentsDelta(FunctionCallArgumentsDeltaEvent),
    FunctionCallArgumentsDone(FunctionCallArgumentsDoneEvent),
}

impl ResponseStreamEvent {
    /// The event's `type` (the SSE `event:` line's name).
    pub fn event_type(&self) -> &'static str {
        match self {
            Self::Response(event) => event.kind.as_str(),
            Self::OutputItem(event) => event.kind.as_str(),
            Self::ContentPart(event) => event.kind.as_str(),
            Self::OutputTextDelta(event) => event.kind.as_str(),
            Self::OutputTextDone(event) => event.kind.as_str(),
            Self::ReasoningTextDelta(event) => event.kind.as_str(),
            Self::ReasoningTextDone(event) => event.kind.as_str(),
            Self::FunctionCallArgumentsDelta(event) => event.kind.as_str(),
            Self::FunctionCallArgumentsDone(event) => event.kind.as_str(),
        }
    }
}

/// The Response in a new state: first `created` and `in_progress`, last one of the others.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct ResponseEvent {
    pub response: Box<ResponseObject>,
    #[serde(rename = "type")]
    pub kind: ResponseEventType,
    pub sequence_number: u64,
}

event_type! {
    ResponseEventType {
        Created = "response.created",
        InProgress = "response.in_progress",
        Completed = "response.completed",
        /// The output hit `max_output_tokens`.
        Incomplete = "response.incomplete",
        /// An engine error; the Response carries it.
        Failed = "response.failed",
        /// A cancelled background response (OpenAI names no event for it; a follower of the
        /// stream needs a last one to tell it from a lost connection).
        Cancelled = "response.cancelled",
    }
}

/// An output item opened (`added`: empty, `in_progress`) or closed (`done`: whole, with its
/// final status).
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct OutputItemEvent {
    pub output_index: usize,
    pub item: OutputItem,
    #[serde(rename = "type")]
    pub kind: OutputItemEventType,
    pub sequence_number: u64,
}

event_type! {
    OutputItemEventType {
        Added = "response.output_item.added",
        Done = "response.output_item.done",
    }
}

/// A message's `output_text` part opened (empty) or closed (whole).
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct ContentPartEvent {
    pub item_id: String,
    pub output_index: usize,
    pub content_index: usize,
    pub part: MessageContent,
    #[serde(rename = "type")]
    pub kind: ContentPartEventType,
    pub sequence_number: u64,
}

event_type! {
    ContentPartEventType {
        Added = "response.content_part.added",
        Done = "response.content_part.done",
    }
}

/// Text added to the open message, with its tokens' log-probabilities (chat's
/// `logprobs.content` entries; empty unless asked for).
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct OutputTextDeltaEvent {
    pub item_id: String,
    pub output_index: usize,
    pub content_index: usize,
    pub delta: String,
    pub logprobs: Vec<ChatTokenLogprob>,
    #[serde(rename = "type")]
    pub kind: OutputTextDeltaType,
    pub sequence_number: u64,
}

event_type! {
    OutputTextDeltaType {
        OutputTextDelta = "response.output_text.delta",
    }
}

/// The message's whole text, and all its tokens' log-probabilities.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct OutputTextDoneEvent {
    pub item_id: String,
    pub output_index: usize,
    pub content_index: usize,
    pub text: String,
    pub logprobs: Vec<ChatTokenLogprob>,
    #[serde(rename = "type")]
    pub kind: OutputTextDoneType,
    pub sequence_number: u64,
}

event_type! {
    OutputTextDoneType {
        OutputTextDone = "response.output_text.done",
    }
}

/// Thinking added to the open reasoning item.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct ReasoningTextDeltaEvent {
    pub item_id: String,
    pub output_index: usize,
    pub content_index: usize,
    pub delta: String,
    #[serde(rename = "type")]
    pub kind: ReasoningTextDeltaType,
    pub sequence_number: u64,
}

event_type! {
    ReasoningTextDeltaType {
        ReasoningTextDelta = "response.reasoning_text.delta",
    }
}

/// The reasoning item's whole thinking.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct ReasoningTextDoneEvent {
    pub item_id: String,
    pub output_index: usize,
    pub content_index: usize,
    pub text: String,
    #[serde(rename = "type")]
    pub kind: ReasoningTextDoneType,
    pub sequence_number: u64,
}

event_type! {
    ReasoningTextDoneType {
        ReasoningTextDone = "response.reasoning_text.done",
    }
}

/// Arguments text added to the open function call.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct FunctionCallArgumentsDeltaEvent {
    pub item_id: String,
    pub output_index: usize,
    pub delta: String,
    #[serde(rename = "type")]
    pub kind: FunctionCallArgumentsDeltaType,
    pub sequence_number: u64,
}

event_type! {
    FunctionCallArgumentsDeltaType {
        FunctionCallArgumentsDelta = "response.function_call_arguments.delta",
    }
}

/// The function call's whole arguments, and its name.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct FunctionCallArgumentsDoneEvent {
    pub item_id: String,
    pub output_index: usize,
    pub arguments: String,
    pub name: String,
    #[serde(rename = "type")]
    pub kind: FunctionCallArgumentsDoneType,
    pub sequence_number: u64,
}

event_type! {
    FunctionCallArgumentsDoneType {
        FunctionCallArgumentsDone = "response.function_call_arguments.done",
    }
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::openai::wire::responses::{ItemStatus, OutputText, ReasoningItem};

    #[test]
    fn events_write_their_fields_then_type_and_sequence_number() {
        let delta = ResponseStreamEvent::OutputTextDelta(OutputTextDeltaEvent {
            item_id: "msg_1_0".into(),
            output_index: 0,
            content_index: 0,
            delta: "Hi".into(),
            logprobs: vec![ChatTokenLogprob {
                token: "Hi".into(),
                logprob: -0.5,
                bytes: b"Hi".to_vec(),
                top_logprobs: Vec::new(),
            }],
            kind: OutputTextDeltaType::OutputTextDelta,
            sequence_number: 4,
        });
        assert_eq!(
            serde_json::to_string(&delta).expect("serializes"),
            concat!(
                r#"{"item_id":"msg_1_0","output_index":0,"content_index":0,"delta":"Hi","#,
                r#""logprobs":[{"token":"Hi","logprob":-0.5,"bytes":[72,105],"top_logprobs":[]}],"#,
                r#""type":"response.output_text.delta","#,
                r#""sequence_number":4}"#
            )
        );
        let part = ResponseStreamEvent::ContentPart(ContentPartEvent {
            item_id: "msg_1_0".into(),
            output_index: 0,
            content_index: 0,
            part: MessageContent::OutputText(OutputText {
                text: String::new(),
                annotations: Vec::new(),
                logprobs: Vec::new(),
            }),
            kind: ContentPartEventType::Added,
            sequence_number: 3,
        });
        assert_eq!(
            serde_json::to_string(&part).expect("serializes"),
            concat!(
                r#"{"item_id":"msg_1_0","output_index":0,"content_index":0,"part":{"type":"#,
                r#""output_text","text":"","annotations":[],"logprobs":[]},"#,
                r#""type":"response.content_part.added","sequence_number":3}"#
            )
        );
    }

    #[test]
    fn item_and_call_events_name_their_kind() {
        let added = ResponseStreamEvent::OutputItem(OutputItemEvent {
            output_index: 1,
            item: OutputItem::Reasoning(ReasoningItem {
                id: "rs_1_1".into(),
                summary: Vec::new(),
                content: Vec::new(),
                status: ItemStatus::InProgress,
            }),
            kind: OutputItemEventType::Added,
            sequence_number: 2,
        });
        let done = ResponseStreamEvent::FunctionCallArgumentsDone(FunctionCallArgumentsDoneEvent {
            item_id: "fc_1_2".into(),
            output_index: 2,
            arguments: "{}".into(),
            name: "w".into(),
            kind: FunctionCallArgumentsDoneType::FunctionCallArgumentsDone,
            sequence_number: 9,
        });
        // The SSE `event:` line names what the `data:` object's `type` says.
        for event in [&added, &done] {
            let json = serde_json::to_value(event).expect("serializes");
            assert_eq!(json["type"], event.event_type());
        }
        let kinds = [ResponseEventType::Created, ResponseEventType::Cancelled];
        assert!(kinds
            .iter()
            .all(|kind| serde_json::json!(kind) == kind.as_str()));
        assert_eq!(
            serde_json::to_string(&[added, done]).expect("serializes"),
            concat!(
                r#"[{"output_index":1,"item":{"type":"reasoning","id":"rs_1_1","summary":[],"#,
                r#""content":[],"status":"in_progress"},"type":"response.output_item.added","#,
                r#""sequence_number":2},{"item_id":"fc_1_2","output_index":2,"arguments":"{}","#,
                r#""name":"w","type":"response.function_call_arguments.done","sequence_number":9}]"#
            )
        );
    }
}
