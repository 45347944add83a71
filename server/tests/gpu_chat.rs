//! `pagoda-server --device cuda` with the default model (SmolLM2-135M-Instruct, GGUF Q4_1 kept
//! quantized, bf16 activations): chat completions end to end, plain and streamed, and a batch of
//! concurrent requests. Needs the `cuda` feature and a GPU; elsewhere it prints why it is
//! skipped — or fails, with `PAGODA_REQUIRE_GPU=1` (set by bench/gpu/run.sh where a GPU is
//! expected). Needs the default model (`scripts/fetch-default-model.sh`).

mod common;

/// `PAGODA_REQUIRE_GPU=1`: skipping is a failure.
fn gpu_required() -> bool {
    std::env::var("PAGODA_REQUIRE_GPU").is_ok_and(|v| v == "1")
}

#[cfg(not(feature = "cuda"))]
#[test]
fn gpu_chat_needs_the_cuda_feature() {
    assert!(
        !gpu_required(),
        "PAGODA_REQUIRE_GPU=1 but this build has no `cuda` feature"
    );
    eprintln!("SKIPPED: the GPU server test needs `--features cuda` (docs/cuda.md)");
    assert!(!pagoda_engine::device::cuda_compiled());
}

#[cfg(feature = "cuda")]
#[tokio::test(flavor = "multi_thread")]
async fn the_default_model_chats_on_the_gpu() {
    use std::time::Duration;

    use common::api::{chat_body, client, post_json, within, SseReader};
    use common::server::ServerProcess;

    if !pagoda_engine::device::cuda_available(0) {
        assert!(
            !gpu_required(),
            "PAGODA_REQUIRE_GPU=1 but no usable CUDA device"
        );
        eprintln!("SKIPPED: no usable CUDA device (see `nvidia-smi` and docs/cuda.md)");
        return;
    }
    let model = common::model_path();
    let model = model.to_str().expect("a UTF-8 path");
    let server = ServerProcess::start(&[
        "--model",
        model,
        "--device",
        "cuda",
        "--gpu-memory-utilization",
        "0.5",
    ]);
    // The capacity comes from /metrics: the start-up log line saying it was already read by the
    // helper that waited for "listening on".
    let http = client();
    let scrape = common::api::scrape(&http, &server).await;
    let num_blocks = scrape.sum("pagoda:num_kv_blocks", &[]);
    assert!(
        num_blocks > 0.0,
        "a KV cache on the GPU: {num_blocks} blocks"
    );
    let url = server.url("/v1/chat/completions");

    let mut request = chat_body("What is the capital of France?", 24, false);
    request["temperature"] = 0.0.into();
    request["ignore_eos"] = false.into();
    let reply = post_json(&http, &url, &request).await;
    let body = reply.json();
    let answer = body["choices"][0]["message"]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(answer.contains("Paris"), "{body}");

    let stream_request = chat_body("Count from one to five.", 16, true);
    let response = http
        .post(&url)
        .json(&stream_request)
        .send()
        .await
        .expect("answered");
    assert_eq!(response.status(), 200);
    let payloads = within(Duration::from_secs(60), "the stream", async {
        SseReader::new(response)
            .rest()
            .await
            .expect("a clean stream")
    })
    .await;
    assert!(payloads.len() >= 16, "{payloads:?}");
    assert_eq!(payloads.last().map(String::as_str), Some("[DONE]"));

    let batch = (0..16).map(|i| {
        let body = chat_body(
            &format!("Write a sentence about the number {i}."),
            32,
            false,
        );
        let (http, url) = (http.clone(), url.clone());
        tokio::spawn(async move { post_json(&http, &url, &body).await.json() })
    });
    for handle in batch {
        let body = handle.await.expect("the request task");
        assert_eq!(body["usage"]["completion_tokens"], 32, "{body}");
    }
}
