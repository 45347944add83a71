//! `--chat-template` (vLLM's flag) against the real binary on the mock engine (a byte
//! tokenizer: one token per byte, so `/tokenize` then `/detokenize` gives the rendered prompt
//! back): a Jinja file or an inline template replaces the model's, and one that does not compile
//! stops the server at start with the reason.
//! Also what else shapes the prompt: `--chat-template-content-format`, `reasoning_effort` and
//! `documents`, `truncate_prompt_tokens`.

mod common;

use common::api::{client, post_json};
use common::server::{mock_start_failure, ServerProcess};
use serde_json::{json, Value};

/// The prompt the server renders for one user message `hi` (with the generation prompt).
async fn rendered_prompt(server: &ServerProcess) -> String {
    let http = client();
    let messages = json!([{"role": "user", "content": "hi"}]);
    let tokenized = post_json(
        &http,
        &server.url("/tokenize"),
        &json!({"model": "mock", "messages": messages}),
    )
    .await;
    assert!(tokenized.status.is_success(), "{}", tokenized.text());
    let tokens = tokenized.json()["tokens"].clone();
    let detokenized = post_json(
        &http,
        &server.url("/detokenize"),
        &json!({"model": "mock", "tokens": tokens}),
    )
    .await;
    assert!(detokenized.status.is_success(), "{}", detokenized.text());
    detokenized.json()["prompt"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| panic!("{}", detokenized.text()))
}

#[tokio::test]
async fn a_template_file_or_an_inline_template_replaces_the_models() {
    let dir = tempfile::tempdir().expect("a directory");
    let file = dir.path().join("fine-tune.jinja");
    let template = "{% for m in messages %}<<{{ m.role }}>>{{ m.content }}{% endfor %}\
                    {% if add_generation_prompt %}<<assistant>>{% endif %}";
    std::fs::write(&file, template).expect("writes");
    let path = file.to_str().expect("utf-8");
    let from_file = ServerProcess::start(&["--mock", "--chat-template", path]);
    assert_eq!(rendered_prompt(&from_file).await, "<<user>>hi<<assistant>>");
    drop(from_file);

    let inline = ServerProcess::start(&[
        "--mock",
        "--chat-template",
        "Q: {{ messages[0].content }}\nA:",
    ]);
    assert_eq!(rendered_prompt(&inline).await, "Q: hi\nA:");
    // The chat route renders with it too: the mock answers, the prompt is counted from it.
    let http = client();
    let chat = post_json(
        &http,
        &inline.url("/v1/chat/completions"),
        &json!({"model": "mock", "messages": [{"role": "user", "content": "hi"}],
                "max_tokens": 2}),
    )
    .await;
    let body: Value = chat.json();
    assert_eq!(body["usage"]["prompt_tokens"], "Q: hi\nA:".len(), "{body}");
}

#[test]
fn a_template_that_cannot_be_read_or_compiled_stops_the_server_at_start() {
    for (value, reason) in [
        ("{% for m in messages %}", "does not compile"),
        ("/nonexistent/template.jinja", "no such file"),
    ] {
        let stderr = mock_start_failure(&["--chat-template", value]);
        assert!(stderr.contains(reason), "{value}: {stderr}");
    }
}

/// `--chat-template-content-format` (vLLM's): a template that only loops over OpenAI content
/// parts gets them (`auto` finds it out; `openai` says so), and `string` gives it text.
#[tokio::test]
async fn a_template_that_reads_content_parts_gets_them() {
    let parts_only = "{% for m in messages %}[{{ m.role }}]{% for part in m.content %}\
                      {% if part.type == 'text' %}{{ part.text }}{% endif %}{% endfor %}{% endfor %}";
    for (format, expected) in [
        ("auto", "[user]hi"),
        ("openai", "[user]hi"),
        ("string", "[user]"),
    ] {
        let server = ServerProcess::start(&[
            "--mock",
            "--chat-template",
            parts_only,
            "--chat-template-content-format",
            format,
        ]);
        assert_eq!(rendered_prompt(&server).await, expected, "{format}");
    }
    let said = mock_start_failure(&["--chat-template-content-format", "list"]);
    assert!(said.contains("--chat-template-content-format"), "{said}");
}

/// `reasoning_effort` and `documents` reach the template as vLLM passes them (with
/// `enable_thinking` off for `"none"`, on otherwise, unless `chat_template_kwargs` set it), on
/// chat, `/tokenize` and the Responses API (`reasoning.effort`) alike.
#[tokio::test]
async fn reasoning_effort_and_documents_reach_the_template() {
    let template = "{{ reasoning_effort }}|{{ enable_thinking }}|\
                    {% for d in documents %}{{ d.title }};{% endfor %}";
    let server = ServerProcess::start(&["--mock", "--chat-template", template]);
    let http = client();
    let rendered = |extra: Value| {
        let http = http.clone();
        let url = server.url("/tokenize");
        async move {
            let mut body =
                json!({"model": "mock", "messages": [{"role": "user", "content": "hi"}]});
            for (key, value) in extra.as_object().expect("an object") {
                body[key] = value.clone();
            }
            let tokens = post_json(&http, &url, &body).await.json()["tokens"].clone();
            let url = url.replace("/tokenize", "/detokenize");
            let text = post_json(&http, &url, &json!({"tokens": tokens})).await;
            text.json()["prompt"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        }
    };
    assert_eq!(rendered(json!({})).await, "||");
    assert_eq!(
        rendered(json!({"reasoning_effort": "low", "documents": [{"title": "A"}, {"title": "B"}]}))
            .await,
        "low|True|A;B;"
    );
    assert_eq!(
        rendered(json!({"reasoning_effort": "none"})).await,
        "none|False|"
    );
    let own =
        json!({"reasoning_effort": "none", "chat_template_kwargs": {"enable_thinking": true}});
    assert_eq!(rendered(own).await, "none|True|");
    // Chat and Responses accept it; a wrong value is a 400 naming the field.
    for (path, body) in [
        (
            "/v1/chat/completions",
            json!({"model": "mock", "max_tokens": 2, "reasoning_effort": "high",
                                        "messages": [{"role": "user", "content": "hi"}]}),
        ),
        (
            "/v1/responses",
            json!({"model": "mock", "max_output_tokens": 2, "input": "hi",
                                 "reasoning": {"effort": "high"}}),
        ),
    ] {
        let reply = post_json(&http, &server.url(path), &body).await;
        assert_eq!(reply.status.as_u16(), 200, "{path}: {}", reply.text());
    }
    let bad = post_json(
        &http,
        &server.url("/v1/chat/completions"),
        &json!({"model": "mock", "reasoning_effort": "extreme",
                "messages": [{"role": "user", "content": "hi"}]}),
    )
    .await;
    assert_eq!(bad.status.as_u16(), 400);
    assert_eq!(bad.json()["error"]["param"], "reasoning_effort");
}

/// vLLM's `truncate_prompt_tokens`: only the prompt's last tokens are read (and counted, and
/// echoed), its first with `truncation_side: "right"`; 0, below -1, or more than the model's
/// length is a 400 naming the field, and so is a side other than left or right.
#[tokio::test]
async fn truncate_prompt_tokens_keeps_the_prompt_s_last_tokens() {
    let server = ServerProcess::start(&["--mock"]);
    let http = client();
    let completion = |extra: Value| {
        let (http, url) = (http.clone(), server.url("/v1/completions"));
        async move {
            let mut body = json!({"model": "mock", "prompt": "abcdefghij", "max_tokens": 2});
            for (key, value) in extra.as_object().expect("an object") {
                body[key] = value.clone();
            }
            post_json(&http, &url, &body).await
        }
    };
    let whole = completion(json!({})).await.json();
    let truncated = completion(json!({"truncate_prompt_tokens": 4, "echo": true})).await;
    let body = truncated.json();
    assert_eq!(truncated.status.as_u16(), 200, "{body}");
    assert_eq!(body["usage"]["prompt_tokens"], 4, "{body}");
    assert!(
        whole["usage"]["prompt_tokens"].as_u64() > Some(4),
        "{whole}"
    );
    // The byte tokenizer reads one token per byte: the echo is the prompt's last four letters.
    let text = body["choices"][0]["text"].as_str().unwrap_or_default();
    assert!(text.starts_with("ghij"), "{body}");
    // `truncation_side: "right"` keeps the first four instead.
    let first = completion(json!({"truncate_prompt_tokens": 4, "echo": true,
                                  "truncation_side": "right"}))
    .await
    .json();
    assert_eq!(first["usage"]["prompt_tokens"], 4, "{first}");
    let text = first["choices"][0]["text"].as_str().unwrap_or_default();
    assert!(text.starts_with("abcd"), "{first}");
    let chat = post_json(
        &http,
        &server.url("/v1/chat/completions"),
        &json!({"model": "mock", "max_tokens": 2, "truncate_prompt_tokens": 3,
                "messages": [{"role": "user", "content": "a long enough question"}]}),
    )
    .await
    .json();
    assert_eq!(chat["usage"]["prompt_tokens"], 3, "{chat}");
    for bad in [json!(0), json!(-2), json!(1_000_000)] {
        let reply = completion(json!({"truncate_prompt_tokens": bad})).await;
        assert_eq!(reply.status.as_u16(), 400, "{bad}");
        assert_eq!(reply.json()["error"]["param"], "truncate_prompt_tokens");
    }
    let sideways = completion(json!({"truncate_prompt_tokens": 2, "truncation_side": "up"})).await;
    assert_eq!(sideways.status.as_u16(), 400);
    assert_eq!(sideways.json()["error"]["param"], "truncation_side");
}
