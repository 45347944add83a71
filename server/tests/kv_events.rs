//! KV-cache events (`--kv-events-config`) as routers read them: a pyzmq + msgpack subscriber
//! (`tests/python/test_kv_events.py`) checks the events against the prefix cache's own
//! statistics on the mock engine, replays after a restart, and a stuck subscriber; two replicas
//! of the default model behind a small event-driven picker (`tests/python/test_kv_events_routing.py`)
//! check that the events lead a conversation's next turn to the replica holding its prefix.
//!
//! Needs pyzmq and msgpack (`.ci/run` installs them); the routing test needs the default model.

mod common;

use common::server::{mock_start_failure, ServerProcess};
use pagoda_e2e::prometheus::free_port;

const TOPIC: &str = "kv@test@mock";

fn events_config(port: u16, replay_port: u16, topic: &str) -> String {
    format!(
        r#"{{"enable_kv_cache_events": true, "publisher": "zmq", "endpoint": "tcp://*:{port}",
            "replay_endpoint": "tcp://*:{replay_port}", "topic": "{topic}", "buffer_steps": 1000}}"#
    )
}

fn require_zmq() {
    common::python::require_modules(&common::python::python(), &["zmq", "msgpack"]);
}

#[test]
fn a_subscriber_sees_what_the_prefix_cache_holds_and_replays_what_it_missed() {
    require_zmq();
    let (port, replay_port) = (free_port(), free_port());
    let config = events_config(port, replay_port, TOPIC);
    // 22 blocks of 16 tokens for the mock's shape: prompts of 100 tokens evict each other.
    let server = ServerProcess::start(&[
        "--mock",
        "--max-model-len",
        "256",
        "--kv-cache-memory",
        "8MiB",
        "--kv-events-config",
        &config,
    ]);
    common::python::run_unittest(
        "test_kv_events.py",
        &[
            ("PAGODA_BASE_URL", server.url("/v1")),
            ("PAGODA_METRICS_URL", server.url("/metrics")),
            (
                "PAGODA_KV_EVENTS_ENDPOINT",
                format!("tcp://127.0.0.1:{port}"),
            ),
            (
                "PAGODA_KV_REPLAY_ENDPOINT",
                format!("tcp://127.0.0.1:{replay_port}"),
            ),
            ("PAGODA_KV_TOPIC", TOPIC.to_string()),
            ("PAGODA_MODEL_NAME", "mock".to_string()),
        ],
    );
}

#[test]
fn the_events_lead_a_conversation_to_the_replica_holding_its_prefix() {
    require_zmq();
    let model = common::model_path();
    let model = model.to_str().expect("a UTF-8 model path");
    let ports: Vec<(u16, u16)> = (0..2).map(|_| (free_port(), free_port())).collect();
    let replicas: Vec<ServerProcess> = ports
        .iter()
        .enumerate()
        .map(|(i, &(port, replay_port))| {
            let config = events_config(port, replay_port, &format!("kv@replica-{i}@smollm2"));
            ServerProcess::start(&[
                "--model",
                model,
                "--served-model-name",
                "smollm2",
                "--max-model-len",
                "4096",
                "--kv-events-config",
                &config,
            ])
        })
        .collect();
    let urls: Vec<String> = replicas.iter().map(|r| r.url("")).collect();
    let endpoints: Vec<String> = ports
        .iter()
        .map(|(port, _)| format!("tcp://127.0.0.1:{port}"))
        .collect();
    common::python::run_unittest(
        "test_kv_events_routing.py",
        &[
            ("PAGODA_REPLICA_URLS", urls.join(",")),
            ("PAGODA_KV_EVENTS_ENDPOINTS", endpoints.join(",")),
            (
                "PAGODA_KV_TOPICS",
                "kv@replica-0@smollm2,kv@replica-1@smollm2".into(),
            ),
            ("PAGODA_MODEL_NAME", "smollm2".to_string()),
        ],
    );
}

#[test]
fn a_bad_config_or_a_taken_port_stops_the_server_with_the_reason() {
    let cases = [
        (
            r#"{"enable_kv_cache_events": true, "endpoit": "tcp://*:5557"}"#,
            "endpoit",
        ),
        (
            r#"{"enable_kv_cache_events": true, "hwm": 5}"#,
            "hwm 5 is not supported",
        ),
        (
            r#"{"enable_kv_cache_events": true, "endpoint": "inproc://x"}"#,
            "inproc",
        ),
        ("not json", "JSON object"),
    ];
    for (config, needle) in cases {
        let stderr = mock_start_failure(&["--kv-events-config", config]);
        assert!(stderr.contains(needle), "{config}: {stderr}");
    }
    let taken = std::net::TcpListener::bind("0.0.0.0:0").expect("a port");
    let port = taken.local_addr().expect("its address").port();
    let config = format!(r#"{{"enable_kv_cache_events": true, "endpoint": "tcp://*:{port}"}}"#);
    let stderr = mock_start_failure(&["--kv-events-config", &config]);
    assert!(
        stderr.contains(&format!("cannot bind the KV-events socket tcp://*:{port}")),
        "{stderr}"
    );
}
