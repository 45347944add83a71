//! `deploy/kubernetes/monitoring/`: the PrometheusRule and the Grafana dashboards ConfigMap for
//! Prometheus Operator clusters are fresh copies of the sources (`deploy/prometheus/rules/`,
//! `grafana/dashboards/`), valid, and render with kustomize.

use pagoda_e2e::tools::{repo_file, run_tool_ok};
use serde_yaml::Value;

fn yaml_file(relative: &str) -> Value {
    let text = std::fs::read_to_string(repo_file(relative)).expect(relative);
    serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{relative}: {e}"))
}

fn rendered() -> Vec<Value> {
    let text = run_tool_ok("kubectl", &["kustomize", "deploy/kubernetes/monitoring"]);
    text.split("\n---\n")
        .map(|doc| serde_yaml::from_str(doc).expect("kustomize writes YAML"))
        .collect()
}

fn object<'a>(objects: &'a [Value], kind: &str) -> &'a Value {
    objects
        .iter()
        .find(|o| o["kind"].as_str() == Some(kind))
        .unwrap_or_else(|| panic!("kustomize rendered no {kind}"))
}

#[test]
fn generated_files_are_fresh() {
    run_tool_ok(
        "python3",
        &["deploy/kubernetes/monitoring/build.py", "--check"],
    );
}

#[test]
fn the_configmap_passes_the_kubernetes_schema() {
    let output = run_tool_ok(
        "kubernetes-validate",
        &[
            "--strict",
            "deploy/kubernetes/monitoring/grafana-dashboards.yaml",
        ],
    );
    assert!(output.contains("passed"), "{output}");
}

/// `value` with every run of whitespace in its strings made one space: kustomize re-writes
/// folded scalars with extra line breaks, which PromQL ignores.
fn squeeze(value: &Value) -> Value {
    match value {
        Value::String(text) => Value::String(text.split_whitespace().collect::<Vec<_>>().join(" ")),
        Value::Sequence(items) => Value::Sequence(items.iter().map(squeeze).collect()),
        Value::Mapping(map) => {
            Value::Mapping(map.iter().map(|(k, v)| (k.clone(), squeeze(v))).collect())
        }
        other => other.clone(),
    }
}

fn rule_file_groups() -> Vec<Value> {
    let mut groups = Vec::new();
    for file in ["pagoda-recording.rules.yml", "pagoda-alerts.rules.yml"] {
        let source = yaml_file(&format!("deploy/prometheus/rules/{file}"));
        groups.extend(source["groups"].as_sequence().cloned().expect("groups"));
    }
    groups
}

#[test]
fn the_prometheus_rule_holds_exactly_the_rule_files_groups() {
    let file = yaml_file("deploy/kubernetes/monitoring/prometheus-rules.yaml");
    let groups = file["spec"]["groups"]
        .as_sequence()
        .cloned()
        .expect("spec.groups");
    assert!(!groups.is_empty());
    assert_eq!(
        groups,
        rule_file_groups(),
        "the PrometheusRule differs from the rule files"
    );

    let objects = rendered();
    let rule = object(&objects, "PrometheusRule");
    assert_eq!(
        rule["apiVersion"].as_str(),
        Some("monitoring.coreos.com/v1")
    );
    assert!(rule["metadata"]["labels"]["release"].is_string());
    let expected = squeeze(&Value::Sequence(rule_file_groups()));
    assert_eq!(
        squeeze(&rule["spec"]["groups"]),
        expected,
        "kustomize changed the rules"
    );
    // The operator accepts only its fields in spec.
    let spec_keys: Vec<&str> = rule["spec"]
        .as_mapping()
        .expect("spec")
        .keys()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(spec_keys, ["groups"]);
}

#[test]
fn the_configmap_holds_every_dashboard_for_the_grafana_sidecar() {
    let objects = rendered();
    let configmap = object(&objects, "ConfigMap");
    assert_eq!(
        configmap["metadata"]["labels"]["grafana_dashboard"].as_str(),
        Some("1")
    );
    let data = configmap["data"].as_mapping().expect("data");
    let dir = repo_file("grafana/dashboards");
    let mut num_dashboards = 0;
    for entry in std::fs::read_dir(&dir).expect("grafana/dashboards") {
        let path = entry.expect("an entry").path();
        if path.extension().is_none_or(|ext| ext != "json") {
            continue;
        }
        num_dashboards += 1;
        let name = path.file_name().and_then(|n| n.to_str()).expect("a name");
        let embedded = data
            .get(name)
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("{name} is not in the ConfigMap"));
        let embedded: serde_json::Value = serde_json::from_str(embedded).expect("JSON");
        let source: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).expect("readable")).expect("JSON");
        assert_eq!(embedded, source, "{name} differs from grafana/dashboards");
    }
    assert_eq!(
        data.len(),
        num_dashboards,
        "the ConfigMap has extra entries"
    );
}
