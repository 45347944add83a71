//! A streamed response's events, from a chat choice's streamed deltas: `response.created`, then
//! per output item `response.output_item.added`, its deltas (`response.reasoning_text.delta`,
//! `response.output_text.delta`, `response.function_call_arguments.delta`), their `.done`
//! events and `response.output_item.done`, and last `response.completed` (or `incomplete`).
//! Every event carries its `sequence_number` (`event_sequence.rs` numbers them).

use crate::openai::responses::event_sequence::{EventSequence, ItemPlace};
use crate::openai::responses::object::{
    last_item_status, message_item, reasoning_item, status_of, text_part,
};
use crate::openai::wire::chat::ChatChunkDelta;
use crate::openai::wire::logprobs::ChatTokenLogprob;
use crate::openai::wire::responses::{
    FunctionCallItem, ItemStatus, OutputItem, ResponseError, ResponseObject, ResponseShell,
    ResponseStatus,
};
use crate::openai::wire::responses_events::{
    ContentPartEventType, OutputItemEventType, ResponseEventType, ResponseStreamEvent,
};
use crate::openai::wire::responses_usage::ResponsesUsage;
use crate::openai::wire::tool_calls::ToolCallDelta;
use crate::openai::wire::usage::Usage;

/// The output item being written.
#[derive(Debug, Clone, PartialEq)]
enum OpenItem {
    Reasoning {
        text: String,
    },
    Message {
        text: String,
        logprobs: Vec<ChatTokenLogprob>,
    },
    /// A chat call's id and function name (from its opening delta), its arguments so far.
    Call {
        call_id: String,
        name: String,
        arguments: String,
    },
}

/// Turns one choice's chat deltas into Responses events, keeping the output for the end.
#[derive(Debug, Clone)]
pub struct ResponseEvents {
    shell: ResponseShell,
    sequence: EventSequence,
    output: Vec<OutputItem>,
    open: Option<OpenItem>,
    /// Log-probabilities of tokens whose text is still held back (a possible stop string).
    pending_logprobs: Vec<ChatTokenLogprob>,
    /// Whitespace not yet in a message: before calls it is none (as in the whole response).
    pending_text: String,
}

impl ResponseEvents {
    pub fn new(shell: ResponseShell) -> Self {
        Self {
            shell,
            sequence: EventSequence::default(),
            output: Vec::new(),
            open: None,
            pending_logprobs: Vec::new(),
            pending_text: String::new(),
        }
    }

    /// `response.created` and `response.in_progress`.
    pub fn opening(&mut self) -> Vec<ResponseStreamEvent> {
        let response = self
            .shell
            .object(ResponseStatus::InProgress, Vec::new(), None);
        vec![
            self.sequence
                .response(ResponseEventType::Created, response.clone()),
            self.sequence
                .response(ResponseEventType::InProgress, response),
        ]
    }

    /// The events of one streamed chat delta (`reasoning_content`, `content`, `tool_calls`) and
    /// its log-probabilities (chat's `logprobs.content`).
    pub fn on_delta(
        &mut self,
        delta: &ChatChunkDelta,
        logprobs: &[ChatTokenLogprob],
    ) -> Vec<ResponseStreamEvent> {
        let mut events = Vec::new();
        if let Some(text) = delta.reasoning_content.as_deref().filter(|t| !t.is_empty()) {
            if !matches!(self.open, Some(OpenItem::Reasoning { .. })) {
                events.extend(self.open_item(OpenItem::Reasoning {
                    text: String::new(),
                }));
            }
            events.push(self.reasoning_delta(text));
        }
        self.pending_logprobs.extend(logprobs.iter().cloned());
        let text = delta.content.as_deref().unwrap_or("");
        let is_open = matches!(self.open, Some(OpenItem::Message { .. }));
        if !is_open && !text.is_empty() && text.trim().is_empty() {
            self.pending_text.push_str(text);
        } else if !text.is_empty() {
            events.extend(self.message_text(text));
        }
        for call in delta.tool_calls.iter().flatten() {
            self.pending_text.clear();
            events.extend(self.on_call_delta(call));
        }
        events
    }

    /// Text of the message (opened first when another item, or none, is open), after the
    /// whitespace held before it.
    fn message_text(&mut self, text: &str) -> Vec<ResponseStreamEvent> {
        let mut events = Vec::new();
        if !matches!(self.open, Some(OpenItem::Message { .. })) {
            let message = OpenItem::Message {
                text: String::new(),
                logprobs: Vec::new(),
            };
            events.extend(self.open_item(message));
        }
        let text = std::mem::take(&mut self.pending_text) + text;
        let logprobs = std::mem::take(&mut self.pending_logprobs);
        if let Some(OpenItem::Message {
            text: all,
            logprobs: kept,
        }) = &mut self.open
        {
            all.push_str(&text);
            kept.extend(logprobs.iter().cloned());
        }
        let place = self.open_place();
        events.push(self.sequence.text_delta(place, text, logprobs));
        events
    }

    /// The last events: the open item closed and `response.completed` (`response.incomplete`
    /// when the output hit `max_output_tokens`); also the final Response object.
    pub fn finish(
        &mut self,
        finish_reason: &str,
        chat_usage: &Usage,
    ) -> (Vec<ResponseStreamEvent>, ResponseObject) {
        let status = status_of(finish_reason);
        let has_calls = self
            .output
            .iter()
            .any(|item| matches!(item, OutputItem::FunctionCall(_)))
            || matches!(self.open, Some(OpenItem::Call { .. }));
        let mut events = match self.pending_text.is_empty() || has_calls {
            true => Vec::new(),
            // An answer of whitespace alone is still the answer.
            false => self.message_text(""),
        };
        events.extend(self.close_item(last_item_status(status)));
        let usage = ResponsesUsage::from(chat_usage);
        let response = self.shell.object(status, self.output.clone(), Some(usage));
        let kind = match status {
            ResponseStatus::Incomplete => ResponseEventType::Incomplete,
            _ => ResponseEventType::Completed,
        };
        events.push(self.sequence.response(kind, response.clone()));
        (events, response)
    }

    /// The open item closed as incomplete, then `response.failed` with the error; also the
    /// failed Response object.
    pub fn fail(
        &mut self,
        code: &str,
        message: &str,
    ) -> (Vec<ResponseStreamEvent>, ResponseObject) {
        let mut events = self.close_item(ItemStatus::Incomplete);
        let error = ResponseError {
            code: code.into(),
            message: message.into(),
        };
        let response = self.shell.failed(self.output.clone(), error);
        events.push(
            self.sequence
                .response(ResponseEventType::Failed, response.clone()),
        );
        (events, response)
    }

    /// A cancelled background response: the open item closed as incomplete (its `.done`
    /// events), then `response.cancelled` with the Response object, status `cancelled`, the
    /// output written so far and the usage so far (the Responses API names no event for a
    /// cancellation; a follower of the stream needs a last one to tell it from a lost
    /// connection).
    pub fn cancel(&mut self, chat_usage: &Usage) -> (Vec<ResponseStreamEvent>, ResponseObject) {
        let mut events = self.close_item(ItemStatus::Incomplete);
        let usage = ResponsesUsage::from(chat_usage);
        let output = self.output.clone();
        let response = self
            .shell
            .object(ResponseStatus::Cancelled, output, Some(usage));
        events.push(
            self.sequence
                .response(ResponseEventType::Cancelled, response.clone()),
        );
        (events, response)
    }

    /// The open item's id and place (the next place when none is open).
    fn open_place(&self) -> ItemPlace {
        let output_index = self.output.len();
        let prefix = self.open.as_ref().map_or("msg", OpenItem::id_prefix);
        ItemPlace {
            item_id: self.shell.item_id(prefix, output_index),
            output_index,
        }
    }

    fn reasoning_delta(&mut self, delta: &str) -> ResponseStreamEvent {
        if let Some(OpenItem::Reasoning { text }) = &mut self.open {
            text.push_str(delta);
        }
        let place = self.open_place();
        self.sequence.reasoning_delta(place, delta.into())
    }

    fn on_call_delta(&mut self, call: &ToolCallDelta) -> Vec<ResponseStreamEvent> {
        let mut events = Vec::new();
        match call {
            ToolCallDelta::Opening { id, function, .. } => {
                let opened = OpenItem::Call {
                    call_id: id.clone(),
                    name: function.name.clone(),
                    arguments: String::new(),
                };
                events.extend(self.open_item(opened));
                if !function.arguments.is_empty() {
                    events.push(self.arguments_delta(&function.arguments));
                }
            }
            ToolCallDelta::Arguments { function, .. } => {
                events.push(self.arguments_delta(&function.arguments));
            }
        }
        events
    }

    fn arguments_delta(&mut self, delta: &str) -> ResponseStreamEvent {
        if let Some(OpenItem::Call { arguments, .. }) = &mut self.open {
            arguments.push_str(delta);
        }
        let place = self.open_place();
        self.sequence.arguments_delta(place, delta.into())
    }

    /// Closes the open item (as completed) and opens `item`: `response.output_item.added`
    /// with it empty (and a message's empty part).
    fn open_item(&mut self, item: OpenItem) -> Vec<ResponseStreamEvent> {
        let mut events = self.close_item(ItemStatus::Completed);
        self.open = Some(item);
        let place = self.open_place();
        let (id, output_index) = (place.item_id.clone(), place.output_index);
        match &self.open {
            Some(OpenItem::Message { .. }) => {
                let added = message_item(id, Vec::new(), ItemStatus::InProgress);
                let kind = OutputItemEventType::Added;
                events.push(self.sequence.item(kind, output_index, added));
                let part = text_part("", &[]);
                events.push(self.sequence.part(ContentPartEventType::Added, place, part));
            }
            Some(open) => {
                let added = open.output(id, ItemStatus::InProgress);
                let kind = OutputItemEventType::Added;
                events.push(self.sequence.item(kind, output_index, added));
            }
            None => {}
        }
        events
    }

    /// The open item's `.done` events with `status` (`incomplete` when the token limit or an
    /// error cut it short), the item kept in the output.
    fn close_item(&mut self, status: ItemStatus) -> Vec<ResponseStreamEvent> {
        let Some(item) = self.open.take() else {
            return Vec::new();
        };
        let output_index = self.output.len();
        let place = ItemPlace {
            item_id: self.shell.item_id(item.id_prefix(), output_index),
            output_index,
        };
        let done = item.output(place.item_id.clone(), status);
        let mut events = Vec::new();
        match item {
            OpenItem::Reasoning { text } => {
                events.push(self.sequence.reasoning_done(place, text));
            }
            OpenItem::Message { text, logprobs } => {
                let part = text_part(&text, &logprobs);
                events.push(self.sequence.text_done(place.clone(), text, logprobs));
                events.push(self.sequence.part(ContentPartEventType::Done, place, part));
            }
            OpenItem::Call {
                name, arguments, ..
            } => events.push(self.sequence.arguments_done(place, arguments, name)),
        }
        let kind = OutputItemEventType::Done;
        events.push(self.sequence.item(kind, output_index, done.clone()));
        self.output.push(done);
        events
    }
}

impl OpenItem {
    /// The prefix of its item's id.
    fn id_prefix(&self) -> &'static str {
        match self {
            Self::Reasoning { .. } => "rs",
            Self::Message { .. } => "msg",
            Self::Call { .. } => "fc",
        }
    }

    /// Its output item, what was written so far, as `status`.
    fn output(&self, id: String, status: ItemStatus) -> OutputItem {
        match self {
            Self::Reasoning { text } => reasoning_item(id, text, status),
            Self::Message { text, logprobs } => {
                message_item(id, vec![text_part(text, logprobs)], status)
            }
            Self::Call {
                call_id,
                name,
                arguments,
            } => OutputItem::FunctionCall(FunctionCallItem {
                id,
                call_id: call_id.clone(),
                name: name.clone(),
                arguments: arguments.clone(),
                status,
            }),
        }
    }
}

#[cfg(test)]
mod tests;
