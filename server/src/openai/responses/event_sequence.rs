//! A streamed response's events, numbered as they are made: each event of
//! `wire/responses_events.rs` from what it carries, with the next `sequence_number` (counting
//! from 0). `events.rs` decides which to write.

use crate::openai::wire::logprobs::ChatTokenLogprob;
use crate::openai::wire::responses::{MessageContent, OutputItem, ResponseObject};
use crate::openai::wire::responses_events::{
    ContentPartEvent, ContentPartEventType, FunctionCallArgumentsDeltaEvent,
    FunctionCallArgumentsDeltaType, FunctionCallArgumentsDoneEvent, FunctionCallArgumentsDoneType,
    OutputItemEvent, OutputItemEventType, OutputTextDeltaEvent, OutputTextDeltaType,
    OutputTextDoneEvent, OutputTextDoneType, ReasoningTextDeltaEvent, ReasoningTextDeltaType,
    ReasoningTextDoneEvent, ReasoningTextDoneType, ResponseEvent, ResponseEventType,
    ResponseStreamEvent,
};

/// Where a content event belongs: its item's id and place in the output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemPlace {
    pub item_id: String,
    pub output_index: usize,
}

/// The number of a response's next event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventSequence {
    next: u64,
}

impl EventSequence {
    fn number(&mut self) -> u64 {
        let number = self.next;
        self.next += 1;
        number
    }

    pub fn response(
        &mut self,
        kind: ResponseEventType,
        response: ResponseObject,
    ) -> ResponseStreamEvent {
        ResponseStreamEvent::Response(ResponseEvent {
            response: Box::new(response),
            kind,
            sequence_number: self.number(),
        })
    }

    pub fn item(
        &mut self,
        kind: OutputItemEventType,
        output_index: usize,
        item: OutputItem,
    ) -> ResponseStreamEvent {
        ResponseStreamEvent::OutputItem(OutputItemEvent {
            output_index,
            item,
            kind,
            sequence_number: self.number(),
        })
    }

    /// A message's part (the only part of content 0).
    pub fn part(
        &mut self,
        kind: ContentPartEventType,
        place: ItemPlace,
        part: MessageContent,
    ) -> ResponseStreamEvent {
        ResponseStreamEvent::ContentPart(ContentPartEvent {
            item_id: place.item_id,
            output_index: place.output_index,
            content_index: 0,
            part,
            kind,
            sequence_number: self.number(),
        })
    }

    pub fn text_delta(
        &mut self,
        place: ItemPlace,
        delta: String,
        logprobs: Vec<ChatTokenLogprob>,
    ) -> ResponseStreamEvent {
        ResponseStreamEvent::OutputTextDelta(OutputTextDeltaEvent {
            item_id: place.item_id,
            output_index: place.output_index,
            content_index: 0,
            delta,
            logprobs,
            kind: OutputTextDeltaType::OutputTextDelta,
            sequence_number: self.number(),
        })
    }

    pub fn text_done(
        &mut self,
        place: ItemPlace,
        text: String,
        logprobs: Vec<ChatTokenLogprob>,
    ) -> ResponseStreamEvent {
        ResponseStreamEvent::OutputTextDone(OutputTextDoneEvent {
            item_id: place.item_id,
            output_index: place.output_index,
            content_index: 0,
            text,
            logprobs,
            kind: OutputTextDoneType::OutputTextDone,
            sequence_number: self.number(),
        })
    }

    pub fn reasoning_delta(&mut self, place: ItemPlace, delta: String) -> ResponseStreamEvent {
        ResponseStreamEvent::ReasoningTextDelta(ReasoningTextDeltaEvent {
            item_id: place.item_id,
            output_index: place.output_index,
            content_index: 0,
            delta,
            kind: ReasoningTextDeltaType::ReasoningTextDelta,
            sequence_number: self.number(),
        })
    }

    pub fn reasoning_done(&mut self, place: ItemPlace, text: String) -> ResponseStreamEvent {
        ResponseStreamEvent::ReasoningTextDone(ReasoningTextDoneEvent {
            item_id: place.item_id,
            output_index: place.output_index,
            content_index: 0,
            text,
            kind: ReasoningTextDoneType::ReasoningTextDone,
            sequence_number: self.number(),
        })
    }

    pub fn arguments_delta(&mut self, place: ItemPlace, delta: String) -> ResponseStreamEvent {
        ResponseStreamEvent::FunctionCallArgumentsDelta(FunctionCallArgumentsDeltaEvent {
            item_id: place.item_id,
            output_index: place.output_index,
            delta,
            kind: FunctionCallArgumentsDeltaType::FunctionCallArgumentsDelta,
            sequence_number: self.number(),
        })
    }

    pub fn arguments_done(
        &mut self,
        place: ItemPlace,
        arguments: String,
        name: String,
    ) -> ResponseStreamEvent {
        ResponseStreamEvent::FunctionCallArgumentsDone(FunctionCallArgumentsDoneEvent {
            item_id: place.item_id,
            output_index: place.output_index,
            arguments,
            name,
            kind: FunctionCallArgumentsDoneType::FunctionCallArgumentsDone,
            sequence_number: self.number(),
        })
    }
}
