use serde_json::json;

use super::*;

fn request(body: Value) -> ResponsesRequest {
    serde_json::from_value(body).expect("a Responses request")
}

fn chat_request(body: Value) -> Result<ChatCompletionRequest, ApiError> {
    let request = request(body);
    let conversation = request.conversation(&[])?;
    request.chat_request(&conversation)
}

/// Messages as the JSON a chat client would have sent (text content, `null` where absent).
fn messages_json(messages: &[ChatMessage]) -> Value {
    let json = |m: &ChatMessage| {
        let mut value = serde_json::to_value(m).expect("a message serializes");
        if !m.has_content {
            value["content"] = Value::Null;
        }
        value
    };
    Value::Array(messages.iter().map(json).collect())
}

#[test]
fn a_string_input_is_one_user_message_after_the_instructions() {
    let chat = chat_request(
        json!({"input": "Hi", "instructions": "Be brief.", "model": "m",
        "max_output_tokens": 9, "temperature": 0.5, "top_k": 4, "seed": 3}),
    )
    .expect("converted");
    assert_eq!(
        messages_json(&chat.messages),
        json!([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}])
    );
    let fields = &chat.options.fields;
    assert_eq!(fields.max_tokens, Some(9));
    assert_eq!(fields.model.as_deref(), Some("m"));
    assert_eq!(fields.temperature, Some(0.5));
    // vLLM's sampling extras go through as they are.
    assert_eq!((fields.top_k, fields.seed), (Some(4), Some(3)));
    assert!(fields.stream_options.is_none());
}

#[test]
fn a_background_response_is_generated_as_a_stream_with_usage() {
    for body in [
        json!({"input": "x", "background": true}),
        json!({"input": "x", "background": true, "stream": false}),
        json!({"input": "x", "stream": true}),
    ] {
        let chat = chat_request(body.clone()).expect("converted");
        assert_eq!(chat.options.fields.stream, Some(true), "{body}");
        let options = chat.options.fields.stream_options.expect("stream options");
        assert_eq!(options.include_usage, Some(true), "{body}");
    }
    let chat = chat_request(json!({"input": "x"})).expect("converted");
    assert_eq!(chat.options.fields.stream, Some(false));
}

#[test]
fn items_become_chat_messages_with_calls_joined_to_one_assistant_turn() {
    let chat = chat_request(json!({"input": [
        {"role": "developer", "content": [{"type": "input_text", "text": "a"},
            {"type": "input_text", "text": "b"}]},
        {"type": "message", "role": "user", "content": "Weather?"},
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "function_call", "call_id": "c1", "name": "w", "arguments": "{\"city\":\"X\"}"},
        {"type": "function_call", "call_id": "c2", "name": "w", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
    ]}))
    .expect("converted");
    let messages = messages_json(&chat.messages);
    let messages = messages.as_array().expect("messages");
    assert_eq!(messages.len(), 4, "{messages:?}");
    assert_eq!(messages[0], json!({"role": "developer", "content": "a\nb"}));
    assert_eq!(messages[2]["role"], "assistant");
    assert_eq!(messages[2]["content"], Value::Null);
    let calls = messages[2]["tool_calls"].as_array().expect("calls");
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0]["id"], "c1");
    assert_eq!(calls[0]["function"]["arguments"], "{\"city\":\"X\"}");
    assert_eq!(
        messages[3],
        json!({"role": "tool", "tool_call_id": "c1", "content": "sunny"})
    );
}

#[test]
fn tools_choice_and_text_format_take_chats_shapes() {
    let chat = chat_request(json!({"input": "x",
        "tools": [{"type": "function", "name": "w", "description": "d",
            "parameters": {"type": "object"}, "strict": true}],
        "tool_choice": {"type": "function", "name": "w"},
        "text": {"format": {"type": "json_schema", "name": "p", "schema": {"type": "object"},
            "strict": true}},
        "stream": true, "top_logprobs": 2}))
    .expect("converted");
    let options = &chat.options;
    assert_eq!(
        options.tools,
        Some(
            json!([{"type": "function", "function": {"name": "w", "description": "d",
            "parameters": {"type": "object"}, "strict": true}}])
        )
    );
    assert_eq!(
        options.tool_choice,
        Some(json!({"type": "function", "function": {"name": "w"}}))
    );
    assert_eq!(
        options.response_format,
        Some(
            json!({"type": "json_schema", "json_schema": {"name": "p", "schema": {"type": "object"},
            "strict": true}})
        )
    );
    let stream_options = options
        .fields
        .stream_options
        .as_ref()
        .expect("stream options");
    assert_eq!(stream_options.include_usage, Some(true));
    assert_eq!(
        (options.logprobs, options.top_logprobs),
        (Some(true), Some(2))
    );
    let plain = chat_request(json!({"input": "x", "text": {"format": {"type": "text"}}}));
    assert!(plain.expect("converted").options.response_format.is_none());
}

#[test]
fn chat_fields_with_responses_spellings_are_read_from_those_only() {
    let chat = chat_request(json!({"input": "x", "max_tokens": 5, "n": 3, "echo": true,
        "response_format": {"type": "json_object"}, "max_completion_tokens": 7,
        "stream_options": {"include_usage": true}, "logprobs": true,
        "reasoning_effort": "low", "chat_template_kwargs": {"enable_thinking": false}}))
    .expect("converted");
    let options = &chat.options;
    assert_eq!(options.fields.max_tokens, None);
    assert_eq!(options.max_completion_tokens, None);
    assert_eq!(options.fields.n, None);
    assert_eq!(options.echo, None);
    assert_eq!(options.response_format, None);
    assert!(options.fields.stream_options.is_none());
    assert_eq!(options.logprobs, None);
    // Chat's own fields without a Responses spelling pass.
    assert_eq!(options.reasoning_effort, Some(json!("low")));
    assert_eq!(
        options.chat_template_kwargs,
        Some(json!({"enable_thinking": false}))
    );
    let effort = chat_request(json!({"input": "x", "reasoning_effort": "low",
        "reasoning": {"effort": "high"}}))
    .expect("converted");
    assert_eq!(effort.options.reasoning_effort, Some(json!("high")));
}

#[test]
fn a_stored_conversation_comes_before_the_input_and_after_the_instructions() {
    let request = request(json!({"input": "and?", "instructions": "I"}));
    let history = [
        ChatMessage::new("user", "q"),
        ChatMessage::new("assistant", "a"),
    ];
    let conversation = request.conversation(&history).expect("conversation");
    assert_eq!(conversation.len(), 3);
    let chat = request.chat_request(&conversation).expect("converted");
    let roles: Vec<&str> = chat.messages.iter().map(|m| m.role.as_str()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "user"]);
}

#[test]
fn what_does_not_run_here_is_a_400_naming_the_field() {
    let cases = [
        (json!({"input": 3}), "input"),
        (json!({"input": []}), "input"),
        (
            json!({"input": [{"type": "item_reference", "id": "x"}]}),
            "input[0].type",
        ),
        (
            json!({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "u"}]}]}),
            "input[0].content[0]",
        ),
        (json!({"input": [{"content": "no role"}]}), "input[0].role"),
        (
            json!({"input": [{"type": "function_call_output", "output": "x"}]}),
            "input[0].call_id",
        ),
        (
            json!({"input": "x", "tools": [{"type": "web_search"}]}),
            "tools[0].type",
        ),
        (
            json!({"input": "x", "tool_choice": {"type": "function"}}),
            "tool_choice.name",
        ),
        (
            json!({"input": "x", "text": {"format": {"type": "yaml"}}}),
            "text.format.type",
        ),
        (
            json!({"input": "x", "background": true, "store": false}),
            "background",
        ),
        (
            json!({"input": "x", "conversation": "conv_1"}),
            "conversation",
        ),
        (json!({"input": "x", "prompt": {"id": "pmpt_1"}}), "prompt"),
        (json!({"input": "x", "max_tool_calls": 2}), "max_tool_calls"),
        (
            json!({"input": [{"type": "function_call_output", "call_id": "c",
                "output": [{"type": "input_image", "image_url": "u"}]}]}),
            "input[0].output[0]",
        ),
        (
            json!({"input": "x", "truncation": "sometimes"}),
            "truncation",
        ),
        (
            json!({"input": [{"role": "tool", "content": "7"}]}),
            "input[0].role",
        ),
    ];
    for (body, field) in cases {
        let error = chat_request(body.clone()).expect_err("refused");
        assert_eq!(
            error.param.as_deref(),
            Some(field),
            "{body}: {}",
            error.message
        );
    }
}

#[test]
fn chat_fields_are_named_as_the_responses_request_spells_them() {
    assert_eq!(responses_param("messages[2].content"), "input");
    assert_eq!(responses_param("max_tokens"), "max_output_tokens");
    assert_eq!(
        responses_param("response_format.json_schema.schema"),
        "text.format.schema"
    );
    assert_eq!(
        responses_param("tools[1].function.parameters"),
        "tools[1].parameters"
    );
    assert_eq!(responses_param("temperature"), "temperature");
}
