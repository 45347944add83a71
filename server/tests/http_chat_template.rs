//! `--chat-template` (vLLM's flag) against the real binary on the mock engine (a byte
//! tokenizer: one token per byte, so `/tokenize` then `/detokenize` gives the rendered prompt
//! back): a Jinja file or an inline template replaces the model's, and one that does not compile
//! stops the server at start with the reason.

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
