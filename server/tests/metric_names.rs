//! `docs/metric-names.txt`, the one list of metric names, against running servers: the default
//! model with LoRA adapters and prompt lookup on, under each `--metrics-namespace`, after a
//! request of each kind (base model, adapter, structured output). The series they export, with
//! their `# TYPE`s, are exactly the list, and every listed series is documented in
//! docs/metrics.md. `PAGODA_BLESS=1` rewrites the list instead of comparing.
//!
//! Needs the default model: `scripts/fetch-default-model.sh` puts it in `models/`.
#![allow(clippy::unwrap_used)]

mod common;

use common::api::{client, post_json, scrape};
use common::lora::{module_args, write_adapters};
use common::model_path;
use common::server::ServerProcess;
use pagoda_e2e::metric_names::{self, MetricList, LIST_PATH, NAMESPACES};
use pagoda_e2e::tools::repo_file;
use reqwest::{Client, StatusCode};
use serde_json::{json, Value};

const NGRAM: &str =
    r#"{"method":"ngram","num_speculative_tokens":3,"prompt_lookup_min":2,"prompt_lookup_max":3}"#;

async fn ok(client: &Client, server: &ServerProcess, path: &str, body: Value) {
    let reply = post_json(client, &server.url(path), &body).await;
    assert_eq!(reply.status, StatusCode::OK, "{path}: {}", reply.text());
}

/// The families one server exports under `namespace` once it has served each kind of request.
async fn exported(namespace: &str) -> MetricList {
    let dir = tempfile::tempdir().unwrap();
    let adapters = write_adapters(dir.path(), &[1]);
    let model = model_path().display().to_string();
    let mut args: Vec<String> = [
        "--model",
        &model,
        "--kv-cache-memory",
        "64MiB",
        "--max-model-len",
        "1024",
        "--metrics-namespace",
        namespace,
        "--speculative-config",
        NGRAM,
        "--enable-lora",
    ]
    .map(String::from)
    .to_vec();
    args.extend(module_args(&adapters));
    let server = ServerProcess::start(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let client = client();
    for model in [None, Some("a0")] {
        let mut body = json!({"prompt": "one two one two one", "max_tokens": 6});
        if let Some(model) = model {
            body["model"] = json!(model);
        }
        ok(&client, &server, "/v1/completions", body).await;
    }
    let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}},
        "required": ["n"]});
    let structured = json!({
        "messages": [{"role": "user", "content": "A number, as JSON."}],
        "max_tokens": 12,
        "response_format": {"type": "json_schema", "json_schema": {"name": "n", "schema": schema}},
    });
    ok(&client, &server, "/v1/chat/completions", structured).await;
    let scrape = scrape(&client, &server).await;
    scrape.check_families_declared();
    scrape.types.into_iter().collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_metric_list_is_exactly_what_servers_export_and_is_documented() {
    let mut series = MetricList::new();
    for namespace in NAMESPACES {
        series.extend(exported(namespace).await);
    }
    let path = repo_file(LIST_PATH);
    if std::env::var_os("PAGODA_BLESS").is_some() {
        std::fs::write(&path, metric_names::render(&series)).unwrap();
    }
    let listed = metric_names::listed();
    let missing: Vec<_> = series
        .iter()
        .filter(|s| !listed.contains_key(s.0))
        .collect();
    let gone: Vec<_> = listed
        .iter()
        .filter(|s| !series.contains_key(s.0))
        .collect();
    assert!(
        missing.is_empty() && gone.is_empty(),
        "{LIST_PATH} differs from the servers' series (PAGODA_BLESS=1 rewrites it): exported \
         but not listed {missing:?}; listed but not exported {gone:?}"
    );
    assert_eq!(listed, series, "{LIST_PATH}: a series' type changed");

    let contract = std::fs::read_to_string(repo_file("docs/metrics.md")).unwrap();
    for name in listed.keys() {
        let documented = [format!("`{name}`"), format!("`{name}{{")];
        assert!(
            documented
                .iter()
                .any(|form| contract.contains(form.as_str())),
            "{name} is not in docs/metrics.md"
        );
    }
}
