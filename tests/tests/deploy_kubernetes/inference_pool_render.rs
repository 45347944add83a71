//! `inference-pool/` as kustomize renders it, the EPP's plugin file and the series it reads, the
//! Gateway and HTTPRoute: every standard object validates, the server Deployment is base's plus
//! the KV-event publisher, the plugins score on the series the real `pagoda-server` exports, the
//! route sends the Gateway's traffic to the pool.

use std::collections::BTreeSet;

use pagoda_e2e::binaries::ensure_built;
use serde_json::Value;

use crate::inference_pool::{epp_config_path, epp_deployment, pool, GAIE_RELEASE, POOL_GROUP};
use crate::launch::{container_env, http_get, EnvServer, Startup};
use crate::manifests::{at, container, env_value, find, load_one, read, render, str_at};
use crate::no_schema::assert_keys;

/// The plugin types v1.5.0's EPP registers (`cmd/epp/runner/runner.go`) that a config of
/// scorers, a picker and the metrics data layer may use.
const PLUGIN_TYPES: &[&str] = &[
    "queue-scorer",
    "kv-cache-utilization-scorer",
    "prefix-cache-scorer",
    "lora-affinity-scorer",
    "running-requests-size-scorer",
    "token-load-scorer",
    "max-score-picker",
    "random-picker",
    "weighted-random-picker",
    "single-profile-handler",
    "metrics-data-source",
    "core-metrics-extractor",
];

fn plugins() -> Value {
    load_one("inference-pool/epp-plugins.yaml")
}

/// The series names the core metrics extractor's engine config reads, by field.
fn engine_specs() -> Vec<(String, String)> {
    let config = plugins();
    let extractor = plugin(&config, "core-metrics-extractor");
    let engine = str_at(extractor, "/parameters/defaultEngine");
    let engines = at(extractor, "/parameters/engineConfigs")
        .as_array()
        .expect("a list");
    let mine = engines
        .iter()
        .find(|e| e["name"] == engine)
        .expect("the default engine");
    let fields = [
        "queuedRequestsSpec",
        "runningRequestsSpec",
        "kvUsageSpec",
        "loraSpec",
        "cacheInfoSpec",
    ];
    assert_keys(mine, &[&["name"][..], &fields[..]].concat());
    fields
        .iter()
        .map(|f| (f.to_string(), str_at(mine, &format!("/{f}")).to_string()))
        .collect()
}

fn plugin<'a>(config: &'a Value, kind: &str) -> &'a Value {
    at(config, "/plugins")
        .as_array()
        .expect("a list")
        .iter()
        .find(|p| p["type"] == kind)
        .unwrap_or_else(|| panic!("no {kind} plugin"))
}

/// The EndpointPickerConfig: v1.5.0's fields and plugin types, every reference to a declared
/// plugin, queue, KV-cache and prefix scorers weighted in, fed by /metrics over HTTP.
#[test]
fn the_picker_scores_queue_kv_cache_and_prefix() {
    let config = plugins();
    assert_eq!(
        config["apiVersion"],
        "inference.networking.x-k8s.io/v1alpha1"
    );
    assert_eq!(config["kind"], "EndpointPickerConfig");
    let fields = [
        "apiVersion",
        "kind",
        "featureGates",
        "plugins",
        "schedulingProfiles",
        "dataLayer",
        "parser",
    ];
    assert_keys(&config, &fields);
    let mut names = BTreeSet::new();
    for p in at(&config, "/plugins").as_array().expect("a list") {
        assert_keys(p, &["name", "type", "parameters"]);
        let kind = str_at(p, "/type");
        assert!(
            PLUGIN_TYPES.contains(&kind),
            "GAIE {GAIE_RELEASE} has no plugin {kind}"
        );
        // A plugin without a name is named after its type.
        let name = p["name"].as_str().unwrap_or(kind).to_string();
        assert!(names.insert(name.clone()), "two plugins named {name}");
    }
    let profiles = at(&config, "/schedulingProfiles")
        .as_array()
        .expect("a list");
    assert_eq!(profiles.len(), 1, "one profile: single-profile-handler");
    let mut weights = std::collections::BTreeMap::new();
    for entry in at(&profiles[0], "/plugins").as_array().expect("a list") {
        let name = str_at(entry, "/pluginRef");
        assert!(
            names.contains(name),
            "the profile names an undeclared plugin {name}"
        );
        weights.insert(name.to_string(), entry["weight"].as_f64());
    }
    for scorer in [
        "queue-scorer",
        "kv-cache-utilization-scorer",
        "prefix-cache-scorer",
    ] {
        let weight = weights.get(scorer).copied().flatten();
        assert!(
            weight.is_some_and(|w| w > 0.0),
            "{scorer} weighs {weight:?}"
        );
    }
    assert!(weights.contains_key("max-score-picker"));
    let source = at(&config, "/dataLayer/sources/0");
    assert_eq!(at(source, "/pluginRef"), "metrics-data-source");
    assert_eq!(
        at(source, "/extractors"),
        &serde_json::json!([{"pluginRef": "core-metrics-extractor"}])
    );
    let scrape = at(plugin(&config, "metrics-data-source"), "/parameters");
    let monitor = load_one("base/servicemonitor.yaml");
    assert_eq!(at(scrape, "/path"), at(&monitor, "/spec/endpoints/0/path"));
    assert_eq!(at(scrape, "/scheme"), "http");
    let prefix = at(plugin(&config, "prefix-cache-scorer"), "/parameters");
    assert_eq!(
        at(prefix, "/autoTune"),
        true,
        "block size from vllm:cache_config_info"
    );
}

/// Every series the picker reads is one of the router contract's (docs/metrics.md) and of the
/// metric list (docs/metric-names.txt).
#[test]
fn the_picker_reads_the_router_contracts_series() {
    let list = pagoda_e2e::metric_names::listed();
    let docs =
        std::fs::read_to_string(pagoda_e2e::tools::repo_file("docs/metrics.md")).expect("docs");
    let contract = docs
        .split("## Router contract")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("a Router contract section");
    for (field, series) in engine_specs() {
        assert!(series.starts_with("vllm:"), "{field}: {series}");
        assert!(
            contract.contains(&format!("| `{series}` |")),
            "{field}: {series} is no router series"
        );
        assert!(
            list.contains_key(&series),
            "{field}: {series} is not listed"
        );
    }
}

/// The real server, with the Deployment's environment, exports the series the picker reads
/// (the LoRA one only with LoRA on), and vllm:cache_config_info's block_size and num_gpu_blocks
/// as the integers the picker parses them into.
#[test]
fn the_server_exports_what_the_picker_reads() {
    ensure_built();
    let deployment = load_one("base/deployment.yaml");
    let server = match EnvServer::start(&container_env(container(&deployment, "pagoda-server"))) {
        Startup::Listening(server) => server,
        Startup::Exited(code, log) => panic!("the server exited ({code:?}):\n{log}"),
    };
    let (status, metrics) = http_get(&format!("{}/metrics", server.base_url));
    assert_eq!(status, 200);
    let line_of = |series: &str| {
        metrics
            .lines()
            .find(|l| l.starts_with(&format!("{series}{{")) || l.starts_with(&format!("{series} ")))
            .map(str::to_string)
    };
    for (field, series) in engine_specs() {
        match line_of(&series) {
            Some(line) if field == "cacheInfoSpec" => {
                for label in ["block_size", "num_gpu_blocks"] {
                    let value =
                        label_value(&line, label).unwrap_or_else(|| panic!("{line}: no {label}"));
                    let n: u64 = value
                        .parse()
                        .unwrap_or_else(|_| panic!("{label}={value:?}"));
                    assert!(n > 0, "{line}");
                }
            }
            Some(_) => {}
            None if field == "loraSpec" => {}
            None => panic!("{field}: no {series} series in:\n{metrics}"),
        }
    }
}

fn label_value<'a>(line: &'a str, label: &str) -> Option<&'a str> {
    let start = line.find(&format!("{label}=\""))? + label.len() + 2;
    line[start..].split('"').next()
}

fn kinds(objects: &[Value]) -> BTreeSet<String> {
    objects
        .iter()
        .map(|o| format!("{}/{}", str_at(o, "/kind"), str_at(o, "/metadata/name")))
        .collect()
}

/// `kubectl kustomize inference-pool`: base's objects and the router's, every standard one
/// valid; the EPP mounts the generated ConfigMap, which holds epp-plugins.yaml as it is.
#[test]
fn the_overlay_renders_base_and_the_router_and_validates() {
    let objects = crate::schema::render_and_validate("inference-pool");
    let config_map = objects
        .iter()
        .find(|o| o["kind"] == "ConfigMap")
        .expect("the generated ConfigMap");
    let config_name = str_at(config_map, "/metadata/name");
    assert!(
        config_name.starts_with("pagoda-epp-plugins-"),
        "{config_name}: a hash suffix"
    );
    let mut expected = kinds(&render("."));
    for object in [
        "Deployment/pagoda-epp",
        "Service/pagoda-epp",
        "ServiceAccount/pagoda-epp",
        "Role/pagoda-epp",
        "RoleBinding/pagoda-epp",
        "InferencePool/pagoda",
        "Gateway/pagoda-gateway",
        "HTTPRoute/pagoda",
    ] {
        expected.insert(object.to_string());
    }
    expected.insert(format!("ConfigMap/{config_name}"));
    assert_eq!(kinds(&objects), expected);
    for object in &objects {
        assert_eq!(
            object["metadata"]["labels"]["app.kubernetes.io/part-of"],
            "pagoda"
        );
    }
    let file = epp_config_path(&epp_deployment());
    let key = file.rsplit('/').next().expect("a file name");
    assert_eq!(
        str_at(config_map, &format!("/data/{key}")),
        read("inference-pool/epp-plugins.yaml")
    );
    let epp = find(&objects, "Deployment", "pagoda-epp");
    let volumes = at(epp, "/spec/template/spec/volumes")
        .as_array()
        .expect("a list");
    assert!(
        volumes
            .iter()
            .any(|v| v["configMap"]["name"] == config_name),
        "{volumes:?}"
    );
    assert_server_is_base_plus_kv_events(&objects);
}

/// The overlay's server Deployment: base's, plus the KV-event publisher's flag, its port and
/// the POD_IP its topic names, and nothing else.
fn assert_server_is_base_plus_kv_events(objects: &[Value]) {
    let base = render(".");
    let plain = find(&base, "Deployment", "pagoda-server");
    let routed = find(objects, "Deployment", "pagoda-server");
    let server = container(routed, "pagoda-server");
    let args = at(server, "/args").as_array().expect("a list");
    assert_eq!(args.len(), 2);
    assert_eq!(args[0], "--kv-events-config");
    let config: Value = serde_json::from_str(args[1].as_str().expect("a string")).expect("JSON");
    assert_kv_events(&config, server);
    let mut stripped = routed.clone();
    let c = &mut stripped["spec"]["template"]["spec"]["containers"][0];
    c.as_object_mut().expect("a map").remove("args");
    let env = c["env"].as_array_mut().expect("a list");
    env.retain(|e| e["name"] != "POD_IP");
    let ports = c["ports"].as_array_mut().expect("a list");
    ports.retain(|p| p["name"] != "kv-events");
    assert_eq!(&stripped, plain);
}

/// vLLM's --kv-events-config fields: on, ZMQ, bound on the port the container declares, with
/// the topic llm-d's subscriber parses, kv@<pod IP>@<served model name>.
fn assert_kv_events(config: &Value, server: &Value) {
    let fields = [
        "enable_kv_cache_events",
        "publisher",
        "endpoint",
        "replay_endpoint",
        "buffer_steps",
        "hwm",
        "max_queue_size",
        "topic",
    ];
    assert_keys(config, &fields);
    assert_eq!(at(config, "/enable_kv_cache_events"), true);
    assert_eq!(at(config, "/publisher"), "zmq");
    let ports = at(server, "/ports").as_array().expect("a list");
    let port = ports
        .iter()
        .find(|p| p["name"] == "kv-events")
        .expect("a kv-events port");
    let endpoint = format!("tcp://*:{}", port["containerPort"]);
    assert_eq!(str_at(config, "/endpoint"), endpoint);
    let served = env_value(server, "PAGODA_SERVED_MODEL_NAME").expect("a served name");
    let model = served.split(',').next().expect("a name");
    assert_eq!(str_at(config, "/topic"), format!("kv@$(POD_IP)@{model}"));
    let env = at(server, "/env").as_array().expect("a list");
    let pod_ip = env
        .iter()
        .find(|e| e["name"] == "POD_IP")
        .expect("POD_IP, for $(POD_IP)");
    assert_eq!(at(pod_ip, "/valueFrom/fieldRef/fieldPath"), "status.podIP");
}

/// Gateway and HTTPRoute have no schema here: Gateway API v1's fields; the route sends every
/// path of the Gateway's listener to the pool, by the group and kind GAIE defines.
#[test]
fn the_route_sends_the_gateways_traffic_to_the_pool() {
    let gateway = load_one("inference-pool/gateway.yaml");
    assert_eq!(gateway["apiVersion"], "gateway.networking.k8s.io/v1");
    assert_eq!(gateway["kind"], "Gateway");
    assert_keys(at(&gateway, "/spec"), &["gatewayClassName", "listeners"]);
    assert!(!str_at(&gateway, "/spec/gatewayClassName").is_empty());
    let listeners = at(&gateway, "/spec/listeners").as_array().expect("a list");
    for listener in listeners {
        assert_keys(listener, &["name", "port", "protocol", "hostname"]);
        assert_eq!(str_at(listener, "/protocol"), "HTTP");
    }
    let route = load_one("inference-pool/httproute.yaml");
    assert_eq!(route["apiVersion"], "gateway.networking.k8s.io/v1");
    assert_eq!(route["kind"], "HTTPRoute");
    assert_keys(at(&route, "/spec"), &["parentRefs", "rules", "hostnames"]);
    let parent = at(&route, "/spec/parentRefs/0");
    assert_keys(parent, &["group", "kind", "name", "sectionName"]);
    assert_eq!(at(parent, "/group"), "gateway.networking.k8s.io");
    assert_eq!(at(parent, "/kind"), "Gateway");
    assert_eq!(at(parent, "/name"), at(&gateway, "/metadata/name"));
    assert!(listeners.iter().any(|l| l["name"] == parent["sectionName"]));
    let rules = at(&route, "/spec/rules").as_array().expect("a list");
    assert_eq!(rules.len(), 1);
    let rule = &rules[0];
    assert_keys(rule, &["matches", "backendRefs", "timeouts"]);
    assert_eq!(
        at(rule, "/matches/0/path"),
        &serde_json::json!({"type": "PathPrefix", "value": "/"})
    );
    let backends = at(rule, "/backendRefs").as_array().expect("a list");
    assert_eq!(backends.len(), 1);
    // No port: an InferencePool's target ports are its own.
    assert_keys(&backends[0], &["group", "kind", "name"]);
    assert_eq!(at(&backends[0], "/group"), POOL_GROUP);
    assert_eq!(at(&backends[0], "/kind"), "InferencePool");
    assert_eq!(at(&backends[0], "/name"), at(&pool(), "/metadata/name"));
    let timeout = crate::manifests::duration_seconds(str_at(rule, "/timeouts/request"));
    assert!(
        timeout >= 60,
        "a request timeout of {timeout} s cuts long generations"
    );
}
