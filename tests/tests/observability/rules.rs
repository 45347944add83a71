//! The Prometheus rules of `deploy/prometheus/rules/` and the Prometheus Adapter rules of
//! `deploy/kubernetes/prometheus-adapter/values.yaml`, read as the tools read them.

use pagoda_e2e::tools::repo_file;
use serde_yaml::Value;

/// A recording rule (`record`) or an alert (`alert`), with its expression.
#[derive(Debug, Clone)]
pub struct Rule {
    pub name: String,
    pub expr: String,
}

fn load_yaml(relative: &str) -> Value {
    let path = repo_file(relative);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{relative}: {e}"));
    serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{relative}: {e}"))
}

fn rules_of(relative: &str, kind: &str) -> Vec<Rule> {
    let file = load_yaml(relative);
    let groups = file["groups"].as_sequence().cloned().unwrap_or_default();
    let rules: Vec<Rule> = groups
        .iter()
        .flat_map(|group| group["rules"].as_sequence().cloned().unwrap_or_default())
        .filter_map(|rule| {
            Some(Rule {
                name: rule[kind].as_str()?.to_string(),
                expr: rule["expr"].as_str()?.to_string(),
            })
        })
        .collect();
    assert!(!rules.is_empty(), "no {kind} rules in {relative}");
    rules
}

pub fn recording_rules() -> Vec<Rule> {
    rules_of(
        "deploy/prometheus/rules/pagoda-recording.rules.yml",
        "record",
    )
}

pub fn alert_rules() -> Vec<Rule> {
    rules_of("deploy/prometheus/rules/pagoda-alerts.rules.yml", "alert")
}

/// A Prometheus Adapter custom-metrics rule: the series it discovers and the query it runs.
#[derive(Debug, Clone)]
pub struct AdapterRule {
    pub series_query: String,
    pub metrics_query: String,
    pub metric_name: String,
}

pub fn adapter_rules() -> Vec<AdapterRule> {
    let values = load_yaml("deploy/kubernetes/prometheus-adapter/values.yaml");
    let custom = values["rules"]["custom"]
        .as_sequence()
        .cloned()
        .unwrap_or_default();
    assert!(
        !custom.is_empty(),
        "no rules.custom in the Prometheus Adapter values"
    );
    custom
        .iter()
        .map(|rule| AdapterRule {
            series_query: rule["seriesQuery"]
                .as_str()
                .expect("seriesQuery")
                .to_string(),
            metrics_query: rule["metricsQuery"]
                .as_str()
                .expect("metricsQuery")
                .to_string(),
            metric_name: rule["name"]["as"].as_str().expect("name.as").to_string(),
        })
        .collect()
}

/// The adapter's Go template, filled the way it fills it for one series of some pods.
pub fn render_metrics_query(rule: &AdapterRule, series: &str, label_matchers: &str) -> String {
    rule.metrics_query
        .replace("<<.Series>>", series)
        .replace("<<.LabelMatchers>>", label_matchers)
        .replace("<<.GroupBy>>", "pod")
}
