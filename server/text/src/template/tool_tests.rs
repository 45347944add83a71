#![allow(clippy::unwrap_used)]

use super::*;

/// SmolLM2-Instruct's template, which knows nothing of tools.
const SMOLLM2: &str = "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

/// A small template in the style of Qwen2.5's, which renders tools, tool calls and results itself.
const QWEN_STYLE: &str = r#"{%- if tools %}
{{- '<|im_start|>system\n' }}
{%- if messages[0].role == 'system' %}{{- messages[0].content + '\n\n' }}{%- endif %}
{{- '# Tools\n<tools>' }}
{%- for tool in tools %}{{- '\n' + tool | tojson }}{%- endfor %}
{{- '\n</tools><|im_end|>\n' }}
{%- elif messages[0].role == 'system' %}
{{- '<|im_start|>system\n' + messages[0].content + '<|im_end|>\n' }}
{%- endif %}
{%- for message in messages %}
{%- if message.role == 'user' or (message.role == 'assistant' and not message.tool_calls) %}
{{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>\n' }}
{%- elif message.role == 'assistant' %}
{{- '<|im_start|>assistant' }}
{%- if message.content %}{{- '\n' + message.content }}{%- endif %}
{%- for tool_call in message.tool_calls %}
{%- if tool_call.function is defined %}{%- set tool_call = tool_call.function %}{%- endif %}
{{- '\n<tool_call>\n{"name": "' + tool_call.name + '", "arguments": ' }}{{- tool_call.arguments | tojson }}{{- '}\n</tool_call>' }}
{%- endfor %}
{{- '<|im_end|>\n' }}
{%- elif message.role == 'tool' %}
{{- '<|im_start|>user\n<tool_response>\n' + message.content + '\n</tool_response><|im_end|>\n' }}
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\n' }}{%- endif %}"#;

fn template(source: &str) -> ChatTemplate {
    ChatTemplate::new(source, None, None).unwrap()
}

fn tools() -> Vec<serde_json::Value> {
    vec![serde_json::json!({
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather in a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}
        }
    })]
}

/// A conversation with a tool call (its arguments' keys out of alphabetical order) and two results.
fn conversation() -> Vec<ChatMessage> {
    serde_json::from_str(
        r#"[{"role": "user", "content": "Weather in Paris and Rome?"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"unit\": \"C\"}"}},
                {"id": "c2", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Rome\"}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "18"},
            {"role": "tool", "tool_call_id": "c2", "content": "24"}]"#,
    )
    .unwrap()
}

/// The tool as the request wrote it: keys keep their order (serde_json's `preserve_order`).
const TOOL_JSON: &str = r#"{"type": "function", "function": {"name": "get_weather", "description": "Weather in a city", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}"#;

fn preamble() -> String {
    format!(
        "# Tools\n\nYou can call functions to help with the user's request. Their signatures are \
         listed in JSON inside <tools></tools> tags:\n<tools>\n{TOOL_JSON}\n</tools>\n\n\
         To call a function, reply with a JSON object holding its name and arguments inside \
         <tool_call></tool_call> tags, one block per call:\n\
         <tool_call>\n{{\"name\": <function-name>, \"arguments\": <args-json-object>}}\n</tool_call>"
    )
}

#[test]
fn which_templates_render_tools() {
    assert!(!template(SMOLLM2).renders_tools());
    assert!(!template(CHATML_TEMPLATE).renders_tools());
    assert!(template(QWEN_STYLE).renders_tools());
    assert!(
        !template("{{ 'tools' }}{% for tools in messages %}{{ tools }}{% endfor %}")
            .renders_tools()
    );
}

#[test]
fn a_template_without_tools_gets_a_preamble_system_message() {
    let t = template(SMOLLM2);
    let out = t
        .render_with_tools(&[ChatMessage::new("user", "Hi")], Some(&tools()), true)
        .unwrap();
    let expected = format!(
        "<|im_start|>system\n{}<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n",
        preamble()
    );
    assert_eq!(out, expected);
}

#[test]
fn the_preamble_joins_the_first_system_message() {
    let messages = [
        ChatMessage::new("system", "Be brief."),
        ChatMessage::new("user", "Hi"),
    ];
    let out = template(SMOLLM2)
        .render_with_tools(&messages, Some(&tools()), false)
        .unwrap();
    assert_eq!(
        out,
        format!(
            "<|im_start|>system\nBe brief.\n\n{}<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n",
            preamble()
        )
    );
}

#[test]
fn tool_calls_and_results_become_text_for_a_template_without_tools() {
    let out = template(SMOLLM2)
        .render_with_tools(&conversation(), Some(&tools()), true)
        .unwrap();
    let history = out.rsplit_once("</tool_call><|im_end|>\n").unwrap().1;
    assert!(out.contains(
        "<|im_start|>assistant\n\
         <tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"C\"}}\n</tool_call>\n\
         <tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}\n</tool_call><|im_end|>\n"
    ), "{out}");
    assert_eq!(
        history,
        "<|im_start|>user\n<tool_response>\n18\n</tool_response>\n\
         <tool_response>\n24\n</tool_response><|im_end|>\n<|im_start|>assistant\n"
    );
}

#[test]
fn without_tools_a_template_without_tools_renders_as_before() {
    let t = template(SMOLLM2);
    let messages = [ChatMessage::new("user", "Hi")];
    let plain = t.render(&messages, true).unwrap();
    assert_eq!(
        t.render_with_tools(&messages, Some(&[]), true).unwrap(),
        plain
    );
    assert_eq!(t.render_with_tools(&messages, None, true).unwrap(), plain);
}

#[test]
fn a_template_with_tools_renders_them_itself() {
    let out = template(QWEN_STYLE)
        .render_with_tools(&conversation(), Some(&tools()), true)
        .unwrap();
    assert_eq!(
        out,
        format!(
            "<|im_start|>system\n# Tools\n<tools>\n{TOOL_JSON}\n</tools><|im_end|>\n\
             <|im_start|>user\nWeather in Paris and Rome?<|im_end|>\n\
             <|im_start|>assistant\n\
             <tool_call>\n{{\"name\": \"get_weather\", \"arguments\": {{\"city\": \"Paris\", \"unit\": \"C\"}}}}\n</tool_call>\n\
             <tool_call>\n{{\"name\": \"get_weather\", \"arguments\": {{\"city\": \"Rome\"}}}}\n</tool_call><|im_end|>\n\
             <|im_start|>user\n<tool_response>\n18\n</tool_response><|im_end|>\n\
             <|im_start|>user\n<tool_response>\n24\n</tool_response><|im_end|>\n\
             <|im_start|>assistant\n"
        )
    );
    let without_tools = template(QWEN_STYLE)
        .render(&[ChatMessage::new("user", "Hi")], false)
        .unwrap();
    assert_eq!(without_tools, "<|im_start|>user\nHi<|im_end|>\n");
}

#[test]
fn templates_see_tool_calls_ids_and_names() {
    let source = "{% for m in messages %}{% for c in m.tool_calls or [] %}\
                  [{{ c.id }} {{ c.type }} {{ c.function.name }} {{ c.function.arguments.unit }} {{ c.arguments | tojson }}]\
                  {% endfor %}{% if m.tool_call_id %}({{ m.tool_call_id }}){% endif %}{% endfor %}\
                  {% if tools is none %}no tools{% endif %}";
    let out = template(source).render(&conversation(), false).unwrap();
    assert_eq!(
        out,
        r#"[c1 function get_weather C {"city": "Paris", "unit": "C"}][c2 function get_weather  {"city": "Rome"}](c1)(c2)no tools"#
    );
}

#[test]
fn tool_call_arguments_that_are_not_json_are_an_error() {
    let mut messages = conversation();
    if let Some(calls) = messages[1].tool_calls.as_mut() {
        calls[1].function.arguments = "{\"city\": ".into();
    }
    let err = template(QWEN_STYLE)
        .render_with_tools(&messages, Some(&tools()), true)
        .unwrap_err();
    match &err {
        TemplateError::InvalidToolCallArguments { name, .. } => assert_eq!(name, "get_weather"),
        other => panic!("expected invalid arguments, got {other:?}"),
    }
    assert!(
        err.to_string()
            .contains("\"get_weather\" are not valid JSON"),
        "{err}"
    );
}

#[test]
fn tool_calls_without_arguments_are_rendered_with_an_empty_object() {
    let with = |arguments: &str| {
        let mut messages = conversation();
        if let Some(calls) = messages[1].tool_calls.as_mut() {
            calls[1].function.arguments = arguments.into();
        }
        template(QWEN_STYLE)
            .render_with_tools(&messages, Some(&tools()), true)
            .expect("rendered")
    };
    let empty_object = with("{}");
    assert!(empty_object.contains("\"arguments\": {}"), "{empty_object}");
    assert_eq!(with(""), empty_object);
    assert_eq!(with("  "), empty_object);
    let null_arguments: ChatMessage = serde_json::from_str(
        r#"{"role": "assistant", "tool_calls": [{"id": "c", "type": "function",
            "function": {"name": "f", "arguments": null}}]}"#,
    )
    .expect("null arguments are taken");
    let calls = null_arguments.tool_calls.expect("calls");
    assert_eq!(calls[0].function.arguments, "");
}

/// A request's `chat_template_kwargs` reach the template as variables (Qwen3's
/// `enable_thinking`); the server's own variables cannot be replaced.
#[test]
fn keyword_arguments_are_template_variables() {
    let source = "{% for m in messages %}{{ m.content }}{% endfor %}\
        {% if enable_thinking is defined and not enable_thinking %}<think></think>{% endif %}";
    let t = ChatTemplate::new(source, None, None).unwrap();
    let messages = [ChatMessage::new("user", "Hi")];
    let kwargs = |value: serde_json::Value| value.as_object().unwrap().clone();
    let off = kwargs(serde_json::json!({"enable_thinking": false}));
    assert_eq!(
        t.render_with(&messages, None, true, &off).unwrap(),
        "Hi<think></think>"
    );
    let on = kwargs(serde_json::json!({"enable_thinking": true}));
    assert_eq!(t.render_with(&messages, None, true, &on).unwrap(), "Hi");
    let none = serde_json::Map::new();
    assert_eq!(t.render_with(&messages, None, true, &none).unwrap(), "Hi");
    let forged = kwargs(serde_json::json!({"messages": []}));
    let error = t.render_with(&messages, None, true, &forged).unwrap_err();
    assert!(error.to_string().contains("messages"), "{error}");
}
