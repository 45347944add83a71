//! `GET /v1/responses/{id}/input_items`: a stored response's own `input` as the Responses
//! items the SDK's `responses.input_items.list` reads (each with an id and a status), a page at
//! a time (`limit` 1–100, default 20; `order` `desc` (the default) or `asc`; `after` an item id).

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::openai::error::ApiError;
use crate::openai::wire::responses::ItemStatus;
use crate::openai::wire::responses_input_items::{
    InputContentPart, InputItem, InputItemList, InputMessage, InputMessageContent,
};

const DEFAULT_LIMIT: usize = 20;
const MAX_LIMIT: usize = 100;

/// The list's query, as OpenAI takes it (other parameters, such as `include`, have nothing to
/// add here and are ignored).
#[derive(Debug, Default, Deserialize)]
pub struct ListQuery {
    after: Option<String>,
    limit: Option<usize>,
    order: Option<String>,
}

/// `input` (already checked by the request's conversion) as items with ids: a string is one
/// user message; an item without an `id` gets one from the response's id and its place.
pub fn input_items(input: &Value, response_id: &str) -> Vec<InputItem> {
    let suffix = response_id.strip_prefix("resp_").unwrap_or(response_id);
    let id = |prefix: &str, index: usize| format!("{prefix}_{suffix}_in{index}");
    match input {
        Value::String(text) => {
            let content = InputMessageContent::Text(vec![string_part("user", text)]);
            vec![InputItem::Message(completed_message(
                "user".into(),
                content,
                id("msg", 0),
            ))]
        }
        Value::Array(items) => {
            let item = |(index, item)| item_of(item, |prefix| id(prefix, index));
            items.iter().cloned().enumerate().map(item).collect()
        }
        _ => Vec::new(),
    }
}

/// One input item in the shape the API returns it, `id` naming an item by its id prefix (for
/// one that has no id of its own).
fn item_of(item: Value, id: impl Fn(&str) -> String) -> InputItem {
    let own_id = item.get("id").and_then(Value::as_str).map(String::from);
    match (other_item_prefix(&item), item) {
        (Some(prefix), Value::Object(fields)) => {
            InputItem::Other(completed(fields, own_id.unwrap_or_else(|| id(prefix))))
        }
        (_, message) => {
            InputItem::Message(message_of(&message, own_id.unwrap_or_else(|| id("msg"))))
        }
    }
}

/// The id prefix of an item other than a message (`None` for a message, whose `type` may be
/// left out).
fn other_item_prefix(item: &Value) -> Option<&'static str> {
    let kind = item.get("type").and_then(Value::as_str)?;
    match kind {
        "message" => None,
        "function_call" => Some("fc"),
        "function_call_output" => Some("fco"),
        "reasoning" => Some("rs"),
        _ => Some("msg"),
    }
}

/// A message item: its role (`user` without one), its content (a string as one part).
fn message_of(message: &Value, id: String) -> InputMessage {
    let role = message["role"].as_str().unwrap_or("user").to_string();
    let content = match &message["content"] {
        Value::String(text) => InputMessageContent::Text(vec![string_part(&role, text)]),
        parts => InputMessageContent::Parts(parts.clone()),
    };
    completed_message(role, content, id)
}

/// A completed message item.
fn completed_message(role: String, content: InputMessageContent, id: String) -> InputMessage {
    InputMessage {
        kind: "message",
        role,
        content,
        status: ItemStatus::Completed,
        id,
    }
}

/// A string content's one part: an assistant's is `output_text`, anyone else's `input_text`.
fn string_part(role: &str, text: &str) -> InputContentPart {
    let text = text.to_string();
    match role {
        "assistant" => InputContentPart::OutputText {
            text,
            annotations: Vec::new(),
        },
        _ => InputContentPart::InputText { text },
    }
}

/// A client's item with `status` `completed` when it has none (or `null`), and `id` (where its
/// own is not a string: in its place, else last).
fn completed(mut fields: Map<String, Value>, id: String) -> Map<String, Value> {
    if fields.get("status").is_none_or(Value::is_null) {
        fields.insert("status".into(), Value::from("completed"));
    }
    fields.insert("id".into(), Value::from(id));
    fields
}

/// One page of `items` as a list object (`data`, `first_id`, `last_id`, `has_more`).
pub fn page(items: &[InputItem], query: &ListQuery) -> Result<InputItemList, ApiError> {
    let limit = query.limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(ApiError::invalid(
            "limit",
            format!("`limit` must be between 1 and {MAX_LIMIT}, got {limit}"),
        ));
    }
    let ordered: Vec<&InputItem> = match query.order.as_deref().unwrap_or("desc") {
        "desc" => items.iter().rev().collect(),
        "asc" => items.iter().collect(),
        other => {
            return Err(ApiError::invalid(
                "order",
                format!("`order` must be `asc` or `desc`, got {other:?}"),
            ))
        }
    };
    let start = match &query.after {
        None => 0,
        Some(after) => {
            let place = ordered.iter().position(|item| item.id() == after.as_str());
            1 + place.ok_or_else(|| {
                ApiError::invalid("after", format!("no input item with id {after:?}"))
            })?
        }
    };
    let data: Vec<InputItem> = ordered
        .iter()
        .skip(start)
        .take(limit)
        .map(|item| (*item).clone())
        .collect();
    let id_of = |item: Option<&InputItem>| item.map(|item| item.id().to_string());
    Ok(InputItemList {
        object: "list",
        first_id: id_of(data.first()),
        last_id: id_of(data.last()),
        has_more: start + data.len() < ordered.len(),
        data,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn as_json(items: &[InputItem]) -> Vec<Value> {
        let json = |item| serde_json::to_value(item).expect("an item serializes");
        items.iter().map(json).collect()
    }

    /// A page as the JSON it is written as (what the assertions read).
    fn page(items: &[InputItem], query: &ListQuery) -> Result<Value, ApiError> {
        let page = super::page(items, query)?;
        Ok(serde_json::to_value(page).expect("a page serializes"))
    }

    fn query(after: Option<&str>, limit: Option<usize>, order: Option<&str>) -> ListQuery {
        ListQuery {
            after: after.map(String::from),
            limit,
            order: order.map(String::from),
        }
    }

    #[test]
    fn a_string_is_one_user_message_and_items_keep_their_ids() {
        let items = as_json(&input_items(&json!("Hi"), "resp_abc"));
        assert_eq!(
            items,
            [
                json!({"type": "message", "role": "user", "id": "msg_abc_in0",
                "content": [{"type": "input_text", "text": "Hi"}], "status": "completed"})
            ]
        );
        let input = json!([
            {"role": "assistant", "content": "Earlier."},
            {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "f",
                "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "7"},
        ]);
        let items = as_json(&input_items(&input, "resp_abc"));
        assert_eq!(items[0]["content"][0]["type"], "output_text");
        assert_eq!(items[0]["id"], "msg_abc_in0");
        assert_eq!(items[1]["id"], "fc_1", "the client's id is kept");
        assert_eq!(items[1]["status"], "completed");
        assert_eq!(items[2]["id"], "fco_abc_in2");
    }

    #[test]
    fn pages_follow_the_order_and_the_cursor() {
        let input = json!(["a", "b", "c", "d", "e"]
            .iter()
            .map(|t| json!({"role": "user", "content": t}))
            .collect::<Vec<_>>());
        let items = input_items(&input, "resp_x");
        let texts = |page: &Value| -> Vec<String> {
            page["data"]
                .as_array()
                .unwrap_or(&Vec::new())
                .iter()
                .map(|item| {
                    item["content"][0]["text"]
                        .as_str()
                        .unwrap_or("")
                        .to_string()
                })
                .collect()
        };
        let newest = page(&items, &query(None, Some(2), None)).expect("a page");
        assert_eq!(texts(&newest), ["e", "d"]);
        assert_eq!(newest["has_more"], true);
        assert_eq!(newest["last_id"], "msg_x_in3");
        let next = page(&items, &query(Some("msg_x_in3"), Some(2), None)).expect("a page");
        assert_eq!(texts(&next), ["c", "b"]);
        let last = page(&items, &query(Some("msg_x_in1"), Some(2), None)).expect("a page");
        assert_eq!(
            (texts(&last), last["has_more"].clone()),
            (vec!["a".into()], json!(false))
        );
        let oldest = page(&items, &query(None, None, Some("asc"))).expect("a page");
        assert_eq!(texts(&oldest), ["a", "b", "c", "d", "e"]);
        assert_eq!(oldest["first_id"], "msg_x_in0");
        let empty = page(&[], &query(None, None, None)).expect("a page");
        assert_eq!(
            (empty["first_id"].clone(), empty["has_more"].clone()),
            (Value::Null, json!(false))
        );
    }

    #[test]
    fn bad_queries_are_400s_naming_the_parameter() {
        let items = input_items(&json!("x"), "resp_q");
        for (query, param) in [
            (query(None, Some(0), None), "limit"),
            (query(None, Some(101), None), "limit"),
            (query(None, None, Some("newest")), "order"),
            (query(Some("msg_nope"), None, None), "after"),
        ] {
            let error = page(&items, &query).expect_err("refused");
            assert_eq!(error.param.as_deref(), Some(param));
        }
    }
}
