//! `GET /v1/responses/{id}/input_items`: a stored response's own `input` as items with ids and
//! statuses, a page at a time. `responses/input_items.rs` reads them from the request.

use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::openapi::schema::{AnyOfBuilder, ArrayBuilder, ObjectBuilder, Schema, Type};
use utoipa::openapi::{Ref, RefOr};
use utoipa::{PartialSchema, ToSchema};

use super::responses::ItemStatus;

/// One page of the items, as OpenAI lists them.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct InputItemList {
    /// Always `list`.
    #[schema(value_type = String)]
    pub object: &'static str,
    /// The page's first item's id (`null` for an empty page).
    pub first_id: Option<String>,
    pub last_id: Option<String>,
    /// Whether items follow the page's last.
    pub has_more: bool,
    pub data: Vec<InputItem>,
}

/// One input item (its schema: [`InputItem::schema`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum InputItem {
    Message(InputMessage),
    /// Any other item (`function_call`, `function_call_output`, `reasoning`): the client's own
    /// object, with `status` (`completed`) and `id` set where it had none.
    Other(Map<String, Value>),
}

/// A message of the input, in the API's shape.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct InputMessage {
    /// Always `message`.
    #[serde(rename = "type")]
    #[schema(value_type = String)]
    pub kind: &'static str,
    pub role: String,
    pub content: InputMessageContent,
    /// Always `completed`.
    pub status: ItemStatus,
    /// The client's id, or `msg_`, the response id's hex digits, `in` and the item's place.
    pub id: String,
}

/// A message's `content` (its schema: [`InputMessageContent::schema`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum InputMessageContent {
    /// A string sent as the content: one part.
    Text(Vec<InputContentPart>),
    /// The parts the client sent, as it sent them.
    Parts(Value),
}

/// A part read from a string content, its `type` first: `output_text` for an assistant's.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum InputContentPart {
    InputText {
        text: String,
    },
    OutputText {
        text: String,
        /// Always empty.
        annotations: Vec<Value>,
    },
}

impl InputItem {
    /// The item's id (every item has one once read).
    pub fn id(&self) -> &str {
        match self {
            Self::Message(message) => &message.id,
            Self::Other(fields) => fields.get("id").and_then(Value::as_str).unwrap_or(""),
        }
    }
}

/// The schema of a typed shape or the client's own JSON: `anyOf`, as a typed value passes for
/// the client's too (`oneOf`, what an untagged enum derives, would refuse it).
fn typed_or_echoed(
    typed: impl Into<RefOr<Schema>>,
    echoed: impl Into<RefOr<Schema>>,
    description: &str,
) -> RefOr<Schema> {
    let any_of = AnyOfBuilder::new().item(typed).item(echoed);
    any_of.description(Some(description)).into()
}

impl PartialSchema for InputItem {
    fn schema() -> RefOr<Schema> {
        let echoed = ObjectBuilder::new()
            .schema_type(Type::Object)
            .description(Some(
                "Any other item (`function_call`, `function_call_output`, `reasoning`): the \
             client's own object, with `status` (`completed`) and `id` set where it had none.",
            ));
        let message = Ref::from_schema_name(InputMessage::name());
        typed_or_echoed(message, echoed, "One input item.")
    }
}

impl ToSchema for InputItem {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        schemas.push((InputMessage::name().into(), InputMessage::schema()));
        <InputMessage as ToSchema>::schemas(schemas);
    }
}

impl PartialSchema for InputMessageContent {
    fn schema() -> RefOr<Schema> {
        let part = Ref::from_schema_name(InputContentPart::name());
        let text = ArrayBuilder::new()
            .items(part)
            .description(Some("A string sent as the content: one part."));
        let client_parts = ObjectBuilder::new().schema_type(Type::Object);
        let parts = ArrayBuilder::new()
            .items(client_parts)
            .description(Some("The parts the client sent, as it sent them."));
        typed_or_echoed(text.build(), parts.build(), "A message's `content`.")
    }
}

impl ToSchema for InputMessageContent {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        schemas.push((InputContentPart::name().into(), InputContentPart::schema()));
        <InputContentPart as ToSchema>::schemas(schemas);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_page_writes_messages_in_the_api_s_shape_and_other_items_as_sent() {
        let message = InputItem::Message(InputMessage {
            kind: "message",
            role: "assistant".into(),
            content: InputMessageContent::Text(vec![InputContentPart::OutputText {
                text: "Hi".into(),
                annotations: Vec::new(),
            }]),
            status: ItemStatus::Completed,
            id: "msg_1_in0".into(),
        });
        let Value::Object(output) = json!({"type": "function_call_output", "call_id": "c",
            "output": "7", "status": "completed", "id": "fco_1_in1"})
        else {
            unreachable!("an object")
        };
        let page = InputItemList {
            object: "list",
            first_id: Some("fco_1_in1".into()),
            last_id: Some("msg_1_in0".into()),
            has_more: false,
            data: vec![InputItem::Other(output), message],
        };
        assert_eq!(page.data[0].id(), "fco_1_in1");
        assert_eq!(
            serde_json::to_string(&page).expect("serializes"),
            concat!(
                r#"{"object":"list","first_id":"fco_1_in1","last_id":"msg_1_in0","has_more":false,"#,
                r#""data":[{"type":"function_call_output","call_id":"c","output":"7","#,
                r#""status":"completed","id":"fco_1_in1"},{"type":"message","role":"assistant","#,
                r#""content":[{"type":"output_text","text":"Hi","annotations":[]}],"#,
                r#""status":"completed","id":"msg_1_in0"}]}"#
            )
        );
    }
}
