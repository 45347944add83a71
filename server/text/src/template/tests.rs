#![allow(clippy::unwrap_used)]

use super::*;

/// SmolLM2-Instruct's template, as embedded in its GGUF (the real file is checked in
/// `server/tests/tokenizer_reference.rs`).
const SMOLLM2: &str = "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

fn template(source: &str) -> ChatTemplate {
    ChatTemplate::new(source, Some("<s>".into()), Some("</s>".into())).unwrap()
}

#[test]
fn renders_smollm2_with_and_without_system() {
    let t = template(SMOLLM2);
    let with_system = [
        ChatMessage::new("system", "Be brief."),
        ChatMessage::new("user", "Hi"),
    ];
    assert_eq!(
        t.render(&with_system, true).unwrap(),
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    );
    assert_eq!(
        t.render(&with_system[1..], false).unwrap(),
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n\
         <|im_start|>user\nHi<|im_end|>\n"
    );
}

#[test]
fn chatml_fallback() {
    let t = template(CHATML_TEMPLATE);
    let out = t.render(&[ChatMessage::new("user", "Hi")], true).unwrap();
    assert_eq!(
        out,
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    );
}

#[test]
fn content_parts_are_flattened_to_text() {
    let json = r#"[{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
                   {"role": "assistant", "content": "plain"}]"#;
    let messages: Vec<ChatMessage> = serde_json::from_str(json).unwrap();
    assert!(matches!(messages[0].content, MessageContent::Parts(_)));
    let t = template("{% for m in messages %}[{{ m.role }}:{{ m.content }}]{% endfor %}");
    assert_eq!(
        t.render(&messages, false).unwrap(),
        "[user:a\nb][assistant:plain]"
    );
}

#[test]
fn non_text_parts_are_rejected() {
    let json = r#"{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}"#;
    let message: ChatMessage = serde_json::from_str(json).unwrap();
    let err = template(CHATML_TEMPLATE)
        .render(&[message], false)
        .unwrap_err();
    assert_eq!(err, TemplateError::UnsupportedContent("image_url".into()));
}

#[test]
fn python_methods_tojson_and_special_tokens() {
    let source = "{{ bos_token }}{% for m in messages %}{% if m.content.startswith('x') %}\
                  {{ m.content.strip().upper() }}{% endif %}{% endfor %}\
                  {{ messages[0] | tojson }}{{ eos_token }}";
    let out = template(source)
        .render(&[ChatMessage::new("user", "x  hi  ")], false)
        .unwrap();
    assert_eq!(out, r#"<s>X  HI{"role": "user", "content": "x  hi  "}</s>"#);
}

#[test]
fn trim_and_lstrip_blocks_like_transformers() {
    let source = "{% for m in messages %}\n    {% if m.role == 'user' %}\n{{ m.content }}\n    {% endif %}\n{% endfor %}";
    let messages = [
        ChatMessage::new("user", "a"),
        ChatMessage::new("system", "b"),
    ];
    assert_eq!(template(source).render(&messages, false).unwrap(), "a\n");
}

#[test]
fn loop_controls_are_available() {
    let source = "{% for m in messages %}{% if m.role == 'stop' %}{% break %}{% endif %}{{ m.content }}{% endfor %}";
    let messages = [
        ChatMessage::new("user", "a"),
        ChatMessage::new("stop", "b"),
        ChatMessage::new("user", "c"),
    ];
    assert_eq!(template(source).render(&messages, false).unwrap(), "a");
}

#[test]
fn raise_exception_is_a_render_error() {
    let source = "{% if messages[0]['role'] != 'user' %}{{ raise_exception('Conversations must start with a user message') }}{% endif %}";
    let err = template(source)
        .render(&[ChatMessage::new("assistant", "x")], false)
        .unwrap_err();
    match err {
        TemplateError::Render(msg) => {
            assert!(msg.contains("must start with a user message"), "{msg}")
        }
        other => panic!("expected a render error, got {other:?}"),
    }
}

#[test]
fn syntax_errors_are_reported_with_their_line() {
    let err = ChatTemplate::new(
        "line one\n{% for m in messages %}{{ m.content }",
        None,
        None,
    )
    .unwrap_err();
    match err {
        TemplateError::Syntax(msg) => {
            assert!(msg.contains("line 2") || msg.contains(":2"), "{msg}")
        }
        other => panic!("expected a syntax error, got {other:?}"),
    }
}

#[test]
fn missing_special_tokens_render_empty() {
    let t = ChatTemplate::new("[{{ bos_token }}|{{ eos_token }}]", None, None).unwrap();
    assert_eq!(t.render(&[], false).unwrap(), "[|]");
}

#[test]
fn tojson_matches_python_json_dumps() {
    let messages = [ChatMessage::new("user", "<é> \"q\"\n")];
    let t = template(
        "{{ messages | tojson }}|{{ messages[0] | tojson(indent=2) }}|{{ [] | tojson(2) }}",
    );
    assert_eq!(
        t.render(&messages, false).unwrap(),
        "[{\"role\": \"user\", \"content\": \"<é> \\\"q\\\"\\n\"}]|\
         {\n  \"role\": \"user\",\n  \"content\": \"<é> \\\"q\\\"\\n\"\n}|[]"
    );
    let t = template("{{ {'b': [1, 2.5, none, true], 'a': {}} | tojson(sort_keys=true, separators=[',', ':']) }}");
    assert_eq!(
        t.render(&[], false).unwrap(),
        r#"{"a":{},"b":[1,2.5,null,true]}"#
    );
}

/// A template written for multimodal models: it only loops over the content's parts.
const PARTS_ONLY: &str = "{% for m in messages %}<{{ m['role'] }}>{% for part in m['content'] %}{% if part['type'] == 'text' %}{{ part['text'] }}{% endif %}{% endfor %}</{{ m['role'] }}>{% endfor %}";
/// One that takes either (Gemma 3's, Llama 4's way).
const EITHER: &str = "{% for m in messages %}{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for part in m['content'] %}{{ part['text'] }}{% endfor %}{% endif %}|{% endfor %}";

#[test]
fn the_content_format_is_found_by_rendering_and_can_be_forced() {
    assert_eq!(template(SMOLLM2).content_format(), ContentFormat::String);
    assert_eq!(
        template(CHATML_TEMPLATE).content_format(),
        ContentFormat::String
    );
    assert_eq!(template(EITHER).content_format(), ContentFormat::String);
    let parts = template(PARTS_ONLY);
    assert_eq!(parts.content_format(), ContentFormat::OpenAi);
    let messages = [
        ChatMessage::new("user", "Hi there"),
        ChatMessage::new("assistant", ""),
    ];
    assert_eq!(
        parts.render(&messages, false).unwrap(),
        "<user>Hi there</user><assistant></assistant>"
    );
    // Forced to strings, the parts-only template loses the text (vLLM's `string` does the same).
    let forced = template(PARTS_ONLY).with_content_format(ContentFormat::String);
    assert_eq!(
        forced.render(&messages, false).unwrap(),
        "<user></user><assistant></assistant>"
    );
    // A template that takes either renders the same text both ways.
    let either = template(EITHER);
    let as_parts = template(EITHER).with_content_format(ContentFormat::OpenAi);
    assert_eq!(
        either.render(&messages, false).unwrap(),
        as_parts.render(&messages, false).unwrap()
    );
}
