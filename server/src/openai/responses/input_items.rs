//! `GET /v1/responses/{id}/input_items`: a stored response's own `input` as the Responses
//! items the SDK's `responses.input_items.list` reads (each with an id and a status), a page at
//! a time (`limit` 1–100, default 20; `order` `desc` (the default) or `asc`; `after` an item id).

use serde::Deserialize;
use serde_json::{json, Value};

use crate::openai::error::ApiError;

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
pub fn input_items(input: &Value, response_id: &str) -> Vec<Value> {
    let suffix = response_id.strip_prefix("resp_").unwrap_or(response_id);
    let items = match input {
        Value::String(text) => vec![json!({"role": "user", "content": text})],
        Value::Array(items) => items.clone(),
        _ => Vec::new(),
    };
    items
        .into_iter()
        .enumerate()
        .map(|(index, item)| with_id(item_of(item), suffix, index))
        .collect()
}

/// One input item in the shape the API returns it.
fn item_of(item: Value) -> Value {
    let kind = item
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("message");
    match kind {
        "message" => {
            let role = item["role"].as_str().unwrap_or("user").to_string();
            let part_type = match role.as_str() {
                "assistant" => "output_text",
                _ => "input_text",
            };
            let content = match &item["content"] {
                Value::String(text) if part_type == "output_text" => {
                    json!([{"type": part_type, "text": text, "annotations": []}])
                }
                Value::String(text) => json!([{"type": part_type, "text": text}]),
                parts => parts.clone(),
            };
            let mut message = json!({"type": "message", "role": role, "content": content,
                "status": "completed"});
            if let Some(id) = item.get("id") {
                message["id"] = id.clone();
            }
            message
        }
        _ => {
            let mut item = item;
            if item.get("status").is_none_or(Value::is_null) {
                item["status"] = json!("completed");
            }
            item
        }
    }
}

fn with_id(mut item: Value, suffix: &str, index: usize) -> Value {
    if item.get("id").and_then(Value::as_str).is_none() {
        let prefix = match item["type"].as_str() {
            Some("function_call") => "fc",
            Some("function_call_output") => "fco",
            Some("reasoning") => "rs",
            _ => "msg",
        };
        item["id"] = json!(format!("{prefix}_{suffix}_in{index}"));
    }
    item
}

/// One page of `items` as a list object (`data`, `first_id`, `last_id`, `has_more`).
pub fn page(items: &[Value], query: &ListQuery) -> Result<Value, ApiError> {
    let limit = query.limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(ApiError::invalid(
            "limit",
            format!("`limit` must be between 1 and {MAX_LIMIT}, got {limit}"),
        ));
    }
    let ordered: Vec<&Value> = match query.order.as_deref().unwrap_or("desc") {
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
            let place = ordered.iter().position(|item| item["id"] == after.as_str());
            1 + place.ok_or_else(|| {
                ApiError::invalid("after", format!("no input item with id {after:?}"))
            })?
        }
    };
    let data: Vec<Value> = ordered
        .iter()
        .skip(start)
        .take(limit)
        .map(|item| (*item).clone())
        .collect();
    let id_of = |item: Option<&Value>| item.map_or(Value::Null, |item| item["id"].clone());
    Ok(json!({
        "object": "list",
        "first_id": id_of(data.first()),
        "last_id": id_of(data.last()),
        "has_more": start + data.len() < ordered.len(),
        "data": data,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(after: Option<&str>, limit: Option<usize>, order: Option<&str>) -> ListQuery {
        ListQuery {
            after: after.map(String::from),
            limit,
            order: order.map(String::from),
        }
    }

    #[test]
    fn a_string_is_one_user_message_and_items_keep_their_ids() {
        let items = input_items(&json!("Hi"), "resp_abc");
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
        let items = input_items(&input, "resp_abc");
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
