//! What kubernetes-validate has no schema for, checked field by field: the kustomizations, the
//! ServiceMonitor custom resource, the Prometheus Adapter's Helm values.

use std::collections::BTreeSet;

use pagoda_e2e::tools::repo_file;
use serde_json::Value;

use crate::manifests::{at, duration_seconds, k8s_path, load_one, match_labels, selects, str_at};

/// The kustomizations have no schema in kubernetes-validate: their fields are checked here, and
/// every file or directory they name exists (`kubectl kustomize` above proves they render).
#[test]
fn every_kustomization_names_existing_files() {
    let allowed: BTreeSet<&str> = [
        "apiVersion",
        "kind",
        "resources",
        "labels",
        "images",
        "patches",
        "configMapGenerator",
    ]
    .into();
    for dir in [".", "base", "gpu", "bench", "inference-pool"] {
        let file = format!("{dir}/kustomization.yaml");
        let kustomization = load_one(&file);
        assert_eq!(
            kustomization["apiVersion"], "kustomize.config.k8s.io/v1beta1",
            "{file}"
        );
        assert_eq!(kustomization["kind"], "Kustomization", "{file}");
        for key in kustomization.as_object().expect("a map").keys() {
            assert!(allowed.contains(key.as_str()), "{file}: unexpected {key}");
        }
        let base = repo_file(&k8s_path(dir));
        let mut named: Vec<String> = Vec::new();
        for resource in kustomization["resources"].as_array().into_iter().flatten() {
            named.push(resource.as_str().expect("a path").to_string());
        }
        for patch in kustomization["patches"].as_array().into_iter().flatten() {
            named.push(str_at(patch, "/path").to_string());
        }
        for generator in kustomization["configMapGenerator"]
            .as_array()
            .into_iter()
            .flatten()
        {
            for f in at(generator, "/files").as_array().expect("a list") {
                named.push(f.as_str().expect("a path").to_string());
            }
        }
        assert!(!named.is_empty(), "{file} names nothing");
        for name in named {
            let path = base.join(&name);
            let ok = path.is_file() || path.join("kustomization.yaml").is_file();
            assert!(
                ok,
                "{file} names {name}, which is neither a file nor a kustomization"
            );
        }
    }
}

/// ServiceMonitor (monitoring.coreos.com/v1) has no schema in kubernetes-validate: its fields are
/// checked against the operator's API here, and what they point at against the Service.
#[test]
fn servicemonitor_has_the_operators_fields_and_scrapes_the_service() {
    let monitor = load_one("base/servicemonitor.yaml");
    assert_eq!(monitor["apiVersion"], "monitoring.coreos.com/v1");
    assert_eq!(monitor["kind"], "ServiceMonitor");
    assert_keys(&monitor, &["apiVersion", "kind", "metadata", "spec"]);
    let metadata = at(&monitor, "/metadata");
    assert_keys(metadata, &["name", "labels", "namespace", "annotations"]);
    let spec = at(&monitor, "/spec");
    let spec_fields = [
        "selector",
        "endpoints",
        "namespaceSelector",
        "jobLabel",
        "targetLabels",
    ];
    assert_keys(spec, &spec_fields);
    let service = load_one("base/service.yaml");
    let selector = match_labels(at(spec, "/selector"));
    assert!(selects(&selector, at(&service, "/metadata/labels")));
    let endpoints = at(spec, "/endpoints").as_array().expect("a list");
    assert!(!endpoints.is_empty());
    for endpoint in endpoints {
        assert_scrapes_a_service_port(endpoint, &service);
    }
}

/// An endpoint of the ServiceMonitor: the operator's fields, a port the Service names, /metrics
/// every 5 s.
fn assert_scrapes_a_service_port(endpoint: &Value, service: &Value) {
    let endpoint_fields = [
        "port",
        "path",
        "scheme",
        "interval",
        "scrapeTimeout",
        "honorLabels",
        "relabelings",
        "metricRelabelings",
    ];
    assert_keys(endpoint, &endpoint_fields);
    let port = str_at(endpoint, "/port");
    let ports = at(service, "/spec/ports").as_array().expect("a list");
    assert!(
        ports.iter().any(|p| p["name"] == port),
        "the Service has no port {port}"
    );
    assert_eq!(str_at(endpoint, "/path"), "/metrics");
    assert_eq!(str_at(endpoint, "/scheme"), "http");
    let interval = duration_seconds(str_at(endpoint, "/interval"));
    let timeout = duration_seconds(str_at(endpoint, "/scrapeTimeout"));
    assert_eq!(
        interval, 5,
        "the 5 s scrape of deploy/prometheus/prometheus.yml"
    );
    assert!(
        timeout < interval,
        "the operator refuses scrapeTimeout > interval"
    );
}

/// Fails unless every key of the map `value` is one of `allowed`.
pub fn assert_keys(value: &Value, allowed: &[&str]) {
    for key in value.as_object().expect("a map").keys() {
        assert!(
            allowed.contains(&key.as_str()),
            "unexpected field {key} in {value}"
        );
    }
}

/// The Prometheus Adapter values have no schema: the rule's shape is checked here (the Prometheus
/// integration test evaluates its queries against a real Prometheus).
#[test]
fn the_adapter_rule_maps_both_metric_namespaces_to_pods() {
    let values = load_one("prometheus-adapter/values.yaml");
    assert_eq!(at(&values, "/rules/default"), false);
    let rules = at(&values, "/rules/custom").as_array().expect("a list");
    assert_eq!(rules.len(), 1);
    let rule = &rules[0];
    let pattern = "^(pagoda|vllm):num_requests_waiting$";
    assert_eq!(str_at(rule, "/name/matches"), pattern);
    assert_eq!(str_at(rule, "/name/as"), "pagoda_num_requests_waiting");
    let series = str_at(rule, "/seriesQuery");
    assert!(
        series.contains(&format!("__name__=~\"{pattern}\"")),
        "{series}"
    );
    assert!(
        series.contains("namespace!=\"\"") && series.contains("pod!=\"\""),
        "{series}"
    );
    assert_eq!(
        str_at(rule, "/resources/overrides/namespace/resource"),
        "namespace"
    );
    assert_eq!(str_at(rule, "/resources/overrides/pod/resource"), "pod");
    let query = str_at(rule, "/metricsQuery");
    for needed in [pattern, "<<.LabelMatchers>>", "by (<<.GroupBy>>)"] {
        assert!(query.contains(needed), "{query} lacks {needed}");
    }
}
