//! LoRA adapters over HTTP on the default model: selection by `model`, `/v1/models`, per-adapter
//! metrics, prefix caches kept apart, mixed batches, and runtime load/unload under load with no
//! failed request and no leaked block. Adapters are random PEFT directories
//! (`pagoda_engine::testing::TinyLoraSpec`, the layout `scripts/make-lora-adapter.py` writes).
//!
//! Needs the default model: `scripts/fetch-default-model.sh` puts it in `models/`.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::api::{client, engine_idle, get, post_json, scrape, wait_for_metrics, SseReader};
use common::lora::{module_args, write_adapters};
use common::model_path;
use common::server::ServerProcess;
use reqwest::{Client, StatusCode};
use serde_json::{json, Value};

/// A prompt of several full KV blocks (16 tokens each) once templated.
const LONG_PROMPT: &str = "Describe, in a few careful sentences, how a lighthouse keeper spent \
    the long winter nights on a remote island far from the coast, and what she saw.";

fn start(extra: &[String]) -> ServerProcess {
    let model = model_path().display().to_string();
    let mut args: Vec<&str> = vec![
        "--model",
        &model,
        "--enable-lora",
        "--kv-cache-memory",
        "64MiB",
        "--max-model-len",
        "1024",
    ];
    args.extend(extra.iter().map(String::as_str));
    ServerProcess::start(&args)
}

async fn complete(client: &Client, server: &ServerProcess, model: &str, prompt: &str) -> Value {
    let body = json!({"model": model, "prompt": prompt, "max_tokens": 12, "temperature": 0,
        "ignore_eos": true});
    let reply = post_json(client, &server.url("/v1/completions"), &body).await;
    assert_eq!(reply.status, StatusCode::OK, "{model}: {}", reply.text());
    reply.json()
}

fn text(response: &Value) -> String {
    response["choices"][0]["text"].as_str().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adapters_are_selected_by_model_listed_and_measured_apart() {
    let dir = tempfile::tempdir().unwrap();
    let adapters = write_adapters(dir.path(), &[1, 2, 3]);
    let mut extra = module_args(&adapters);
    extra.extend([
        "--max-loras".into(),
        "3".into(),
        "--max-cpu-loras".into(),
        "3".into(),
    ]);
    let server = start(&extra);
    let client = client();

    let models = get(&client, &server.url("/v1/models")).await.json();
    let base = models["data"][0]["id"].as_str().unwrap().to_string();
    let listed: Vec<(&str, &str)> = models["data"]
        .as_array()
        .unwrap()
        .iter()
        .skip(1)
        .map(|m| (m["id"].as_str().unwrap(), m["parent"].as_str().unwrap()))
        .collect();
    assert_eq!(
        listed,
        [
            ("a0", base.as_str()),
            ("a1", base.as_str()),
            ("a2", base.as_str())
        ]
    );

    let prompt = "The capital of France is";
    let mut alone = Vec::new();
    for model in [base.as_str(), "a0", "a1", "a2"] {
        let response = complete(&client, &server, model, prompt).await;
        assert_eq!(response["model"], model, "responses name the adapter");
        alone.push(text(&response));
    }
    assert!(
        alone[1..].iter().any(|t| *t != alone[0]),
        "an adapter changes the output: {alone:?}"
    );
    let together = futures_util::future::join_all(
        [base.as_str(), "a0", "a1", "a2"].map(|model| complete(&client, &server, model, prompt)),
    )
    .await;
    let together: Vec<String> = together.iter().map(text).collect();
    assert_eq!(
        together, alone,
        "a mixed batch gives each request what it gets alone"
    );

    let unknown = post_json(
        &client,
        &server.url("/v1/completions"),
        &json!({"model": "nope", "prompt": "hi", "max_tokens": 2}),
    )
    .await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    assert_eq!(unknown.expect_openai_error()["code"], "model_not_found");

    let hits = "pagoda:prefix_cache_hits_total";
    let before = scrape(&client, &server).await;
    complete(&client, &server, "a0", LONG_PROMPT).await;
    complete(&client, &server, "a1", LONG_PROMPT).await;
    complete(&client, &server, &base, LONG_PROMPT).await;
    let after_others = scrape(&client, &server).await;
    assert_eq!(
        after_others.delta(&before, hits, &[]),
        0.0,
        "no adapter reads another's blocks"
    );
    complete(&client, &server, "a0", LONG_PROMPT).await;
    let after_same = scrape(&client, &server).await;
    assert!(
        after_same.delta(&after_others, hits, &[]) >= 16.0,
        "a0 reads its own blocks"
    );

    let ttft = "pagoda:time_to_first_token_seconds_count";
    assert_eq!(after_same.value(ttft, &[("model_name", "a0")]), 4.0);
    assert_eq!(after_same.value(ttft, &[("model_name", "a2")]), 2.0);
    assert!(after_same.value(ttft, &[("model_name", &base)]) >= 3.0);
    for name in ["a0", "a1", "a2"] {
        assert_eq!(
            after_same.value("pagoda:lora_adapter_loaded", &[("adapter", name)]),
            1.0
        );
        // The router contract's residency series, idle adapters included (vLLM PR #45411).
        let residency = [
            ("adapter_name", name),
            ("level", "cpu"),
            ("pinned", "false"),
        ];
        assert_eq!(
            after_same.value("vllm:lora_adapter_loaded", &residency),
            1.0
        );
    }
    let tier = [("model_name", base.as_str()), ("engine", "0")];
    assert_eq!(
        after_same.value("vllm:num_cpu_loaded_lora_adapters", &tier),
        3.0
    );
    assert_eq!(
        after_same.value("vllm:num_gpu_loaded_lora_adapters", &tier),
        0.0
    );
    let routers_info = after_same
        .series("vllm:lora_requests_info", &[("max_lora", "3")])
        .count();
    assert_eq!(
        routers_info, 1,
        "the routers' LoRA info under the default namespace too"
    );
    let info = after_same
        .series("pagoda:lora_requests_info", &[("max_lora", "3")])
        .count();
    assert_eq!(info, 1, "{}", common::api::brief(&after_same));
}

/// Streams `max_tokens` tokens from `model`; returns the finish reason.
async fn stream(client: Client, url: String, model: String) -> String {
    let body = json!({"model": model, "prompt": "Once upon a time", "max_tokens": 48,
        "ignore_eos": true, "stream": true});
    let response = client.post(&url).json(&body).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let mut reader = SseReader::new(response);
    let mut reason = String::new();
    while let Some(data) = reader.next_data().await.unwrap() {
        if data == "[DONE]" {
            break;
        }
        let chunk: Value = serde_json::from_str(&data).unwrap();
        assert!(chunk.get("error").is_none(), "{data}");
        if let Some(r) = chunk["choices"][0]["finish_reason"].as_str() {
            reason = r.to_string();
        }
    }
    reason
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adapters_load_and_unload_at_runtime_under_load() {
    let dir = tempfile::tempdir().unwrap();
    let adapters = write_adapters(dir.path(), &[5, 6]);
    let mut extra = module_args(&adapters[..1]);
    extra.extend([
        "--max-loras".into(),
        "2".into(),
        "--allow-runtime-lora-updating".into(),
        "--api-key".into(),
        "k".into(),
        // vLLM's names, so the LoRA gauge is checked against vLLM's exact label set.
        "--metrics-namespace".into(),
        "vllm".into(),
    ]);
    let server = start(&extra);
    let client = reqwest::Client::builder()
        .default_headers(
            [(reqwest::header::AUTHORIZATION, "Bearer k".parse().unwrap())]
                .into_iter()
                .collect(),
        )
        .timeout(Duration::from_secs(120))
        .build()
        .unwrap();
    let url = server.url("/v1/completions");
    let streams: Vec<_> = (0..4)
        .map(|_| tokio::spawn(stream(client.clone(), url.clone(), "a0".into())))
        .collect();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let load = |name: &str, path: &Path| json!({"lora_name": name, "lora_path": path.display().to_string()});
    let loaded = post_json(
        &client,
        &server.url("/v1/load_lora_adapter"),
        &load("a1", &adapters[1].1),
    )
    .await;
    assert_eq!(loaded.status, StatusCode::OK, "{}", loaded.text());
    let unload_a0 = json!({"lora_name": "a0"});
    let unloaded = post_json(&client, &server.url("/v1/unload_lora_adapter"), &unload_a0).await;
    assert_eq!(unloaded.status, StatusCode::OK, "{}", unloaded.text());
    let late = tokio::spawn(stream(client.clone(), url.clone(), "a1".into()));
    for handle in streams {
        assert_eq!(
            handle.await.unwrap(),
            "length",
            "a stream of the unloaded adapter finishes"
        );
    }
    assert_eq!(late.await.unwrap(), "length");

    let gone = post_json(
        &client,
        &url,
        &json!({"model": "a0", "prompt": "x", "max_tokens": 1}),
    )
    .await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND);
    let again = post_json(&client, &server.url("/v1/unload_lora_adapter"), &unload_a0).await;
    assert_eq!(again.status, StatusCode::NOT_FOUND, "{}", again.text());
    let duplicate = post_json(
        &client,
        &server.url("/v1/load_lora_adapter"),
        &load("a1", &adapters[1].1),
    )
    .await;
    assert_eq!(duplicate.status, StatusCode::BAD_REQUEST);

    let broken = dir.path().join("dora");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::copy(
        adapters[1].1.join("adapter_model.safetensors"),
        broken.join("adapter_model.safetensors"),
    )
    .unwrap();
    std::fs::write(
        broken.join("adapter_config.json"),
        r#"{"r": 8, "use_dora": true}"#,
    )
    .unwrap();
    let refused = post_json(
        &client,
        &server.url("/v1/load_lora_adapter"),
        &load("d", &broken),
    )
    .await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST);
    let error = refused.expect_openai_error();
    assert!(
        error["message"].as_str().unwrap().contains("use_dora"),
        "{error}"
    );
    let missing = post_json(
        &client,
        &server.url("/v1/load_lora_adapter"),
        &json!({"lora_name": "x"}),
    )
    .await;
    assert_eq!(missing.status, StatusCode::BAD_REQUEST);
    // A path with nothing there is vLLM's 404, naming the path.
    let nowhere = dir.path().join("no-such-adapter");
    let absent = post_json(
        &client,
        &server.url("/v1/load_lora_adapter"),
        &load("x", &nowhere),
    )
    .await;
    assert_eq!(absent.status, StatusCode::NOT_FOUND, "{}", absent.text());
    let error = absent.expect_openai_error();
    assert_eq!(error["param"], "lora_path");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains(&format!("No adapter found for {}", nowhere.display())),
        "{error}"
    );

    let models = get(&client, &server.url("/v1/models")).await.json();
    let ids: Vec<&str> = models["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids[1..], ["a1"]);
    let idle = wait_for_metrics(&client, &server, Duration::from_secs(30), |s| {
        engine_idle(s, "vllm")
    })
    .await;
    let info: Vec<_> = idle.series("vllm:lora_requests_info", &[]).collect();
    assert_eq!(info.len(), 1, "{info:?}");
    let label_names: Vec<&str> = info[0].labels.keys().map(String::as_str).collect();
    assert_eq!(
        label_names,
        ["max_lora", "running_lora_adapters", "waiting_lora_adapters"],
        "vLLM's labels, no more"
    );
    let unauthorized = post_json(
        &reqwest::Client::new(),
        &server.url("/v1/unload_lora_adapter"),
        &unload_a0,
    )
    .await;
    assert_eq!(unauthorized.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runtime_routes_are_off_without_the_flag_and_broken_modules_stop_the_start() {
    let server = ServerProcess::start(&["--mock"]);
    let client = client();
    let body = json!({"lora_name": "a", "lora_path": "/tmp"});
    let reply = post_json(&client, &server.url("/v1/load_lora_adapter"), &body).await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);

    let output = Command::new(pagoda_e2e::binaries::binary_path("pagoda-server"))
        .args([
            "--model",
            &model_path().display().to_string(),
            "--enable-lora",
        ])
        .args([
            "--lora-modules",
            "broken=/nonexistent/adapter",
            "--port",
            "0",
        ])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("/nonexistent/adapter") && stderr.contains("broken"),
        "{stderr}"
    );
}
