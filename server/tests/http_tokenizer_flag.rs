//! vLLM's `--tokenizer PATH`: the text side (tokenizer, chat template, end-of-turn ids) comes from
//! another directory than the weights. The default model's tokenizer is written out as a Hugging
//! Face directory with a chat template of our own, so that a prompt shows which side served it.
//! Needs the default model (`scripts/fetch-default-model.sh`).
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::api::{client, post_json};
use common::server::ServerProcess;
use pagoda_engine::testing::{Family, TinyHfSpec};
use pagoda_text::hf_files::write_tokenizer_files;
use pagoda_text::tokenizer::TextTokenizer;
use pagoda_text::tokenizer_spec::read_tokenizer_spec;
use serde_json::json;

/// A template the model's own never renders: every message as `[ROLE] content`.
const MARKED_TEMPLATE: &str = "{% for m in messages %}[{{ m.role | upper }}] {{ m.content }}\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

/// The default model's tokenizer as a Hugging Face directory with `MARKED_TEMPLATE`.
fn marked_tokenizer_dir() -> tempfile::TempDir {
    let spec = read_tokenizer_spec(&common::model_path()).unwrap();
    let tokenizer = TextTokenizer::from_spec(&spec).unwrap();
    let dir = tempfile::tempdir().unwrap();
    write_tokenizer_files(&tokenizer, Some(MARKED_TEMPLATE), dir.path()).unwrap();
    dir
}

/// The text `/tokenize` renders a one-message chat to.
async fn rendered_prompt(server: &ServerProcess) -> String {
    let reply = post_json(
        &client(),
        &server.url("/tokenize"),
        &json!({"messages": [{"role": "user", "content": "What is the capital of France?"}]}),
    )
    .await;
    let tokens = reply.json()["tokens"].clone();
    let text = post_json(
        &client(),
        &server.url("/detokenize"),
        &json!({"tokens": tokens}),
    )
    .await;
    text.json()["prompt"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn the_tokenizer_directory_s_template_and_tokens_serve_the_model() {
    let dir = marked_tokenizer_dir();
    let model = common::model_path();
    let server = ServerProcess::start(&[
        "--model",
        model.to_str().unwrap(),
        "--tokenizer",
        dir.path().to_str().unwrap(),
    ]);
    let prompt = rendered_prompt(&server).await;
    assert!(
        prompt.starts_with("[USER] What is the capital of France?"),
        "{prompt:?}"
    );
    // The model answers through the other directory's tokens, and stops at its end of turn.
    let reply = post_json(
        &client(),
        &server.url("/v1/chat/completions"),
        &json!({"messages": [{"role": "user", "content": "What is the capital of France?"}],
                "max_tokens": 32, "temperature": 0}),
    )
    .await;
    let body = reply.json();
    let answer = body["choices"][0]["message"]["content"].as_str().unwrap();
    assert!(answer.contains("Paris"), "{body}");
    drop(server);

    // Without the flag, the model's own template.
    let own = ServerProcess::start(&["--model", model.to_str().unwrap()]);
    assert!(rendered_prompt(&own).await.starts_with("<|im_start|>"));
}

/// The server's stderr when it fails to start with these flags.
fn start_failure(flags: &[&str]) -> String {
    let output = Command::new(pagoda_e2e::binaries::binary_path("pagoda-server"))
        .args(["--host", "127.0.0.1", "--port", "0"])
        .args(flags)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(!output.status.success(), "{flags:?} started: {stderr}");
    stderr
}

#[test]
fn a_tokenizer_larger_than_the_model_or_missing_stops_the_start() {
    let tokenizer = marked_tokenizer_dir();
    // A tiny model (random weights, a few hundred tokens) under the 49,152-token tokenizer.
    let tiny = tempfile::tempdir().unwrap();
    let config = TinyHfSpec::for_family(Family::Llama).config_json();
    std::fs::write(tiny.path().join("config.json"), config.to_string()).unwrap();
    let said = start_failure(&[
        "--model",
        tiny.path().to_str().unwrap(),
        "--load-format",
        "dummy",
        "--tokenizer",
        tokenizer.path().to_str().unwrap(),
    ]);
    assert!(said.contains("more than the model's vocabulary"), "{said}");

    let missing = Path::new("/nonexistent/tokenizer");
    let said = start_failure(&["--mock", "--tokenizer", missing.to_str().unwrap()]);
    assert!(
        said.contains("--tokenizer /nonexistent/tokenizer"),
        "{said}"
    );
}

/// vLLM's chat `add_special_tokens`: off by default (the template writes what the model needs);
/// on, the tokenizer's own special tokens (here a BOS) come on top. The default model's tokenizer
/// is written out as one that prepends BOS.
#[tokio::test]
async fn chat_add_special_tokens_prepends_the_tokenizer_s_bos() {
    let mut spec = read_tokenizer_spec(&common::model_path()).unwrap();
    spec.add_bos_token = true;
    let bos = spec.bos_token_id.expect("the default model names a BOS");
    let tokenizer = TextTokenizer::from_spec(&spec).unwrap();
    let dir = tempfile::tempdir().unwrap();
    write_tokenizer_files(&tokenizer, Some(MARKED_TEMPLATE), dir.path()).unwrap();
    let model = common::model_path();
    let server = ServerProcess::start(&[
        "--model",
        model.to_str().unwrap(),
        "--tokenizer",
        dir.path().to_str().unwrap(),
    ]);
    let messages = json!([{"role": "user", "content": "Hi"}]);
    let prompt = |add_special_tokens: Option<bool>| {
        let mut body = json!({"messages": messages, "max_tokens": 1,
                              "return_token_ids": true});
        if let Some(add) = add_special_tokens {
            body["add_special_tokens"] = json!(add);
        }
        let url = server.url("/v1/chat/completions");
        async move {
            let reply = post_json(&client(), &url, &body).await.json();
            let ids: Vec<u64> = reply["prompt_token_ids"]
                .as_array()
                .unwrap_or_else(|| panic!("{reply}"))
                .iter()
                .map(|id| id.as_u64().unwrap())
                .collect();
            ids
        }
    };
    let plain = prompt(None).await;
    assert_eq!(prompt(Some(false)).await, plain);
    let with_bos = prompt(Some(true)).await;
    assert_eq!(with_bos[0], u64::from(bos), "{with_bos:?}");
    assert_eq!(&with_bos[1..], &plain[..]);
}
