//! The Grafana dashboards of `grafana/dashboards/`: their panels' queries and template
//! variables, and Grafana's variable interpolation, done the way Grafana does it for one
//! selection of the variables.

use std::path::PathBuf;

use pagoda_e2e::tools::repo_file;
use serde_json::Value;

/// One query of one panel.
#[derive(Debug, Clone)]
pub struct PanelQuery {
    pub dashboard: String,
    pub panel: String,
    pub ref_id: String,
    pub expr: String,
}

impl PanelQuery {
    pub fn name(&self) -> String {
        format!("{} / {} / {}", self.dashboard, self.panel, self.ref_id)
    }
}

pub fn dashboard_files() -> Vec<PathBuf> {
    let dir = repo_file("grafana/dashboards");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no dashboards in {}", dir.display());
    files
}

pub fn load(path: &PathBuf) -> Value {
    let text = std::fs::read_to_string(path).expect("dashboard readable");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every panel of a dashboard, rows' nested panels included, rows themselves excluded.
pub fn panels(dashboard: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    for panel in dashboard["panels"].as_array().into_iter().flatten() {
        if panel["type"] == "row" {
            out.extend(panel["panels"].as_array().into_iter().flatten().cloned());
        } else {
            out.push(panel.clone());
        }
    }
    out
}

/// Every panel query of every dashboard.
pub fn all_queries() -> Vec<PanelQuery> {
    let mut queries = Vec::new();
    for path in dashboard_files() {
        let dashboard = load(&path);
        let title = dashboard["title"].as_str().unwrap_or_default().to_string();
        for panel in panels(&dashboard) {
            for target in panel["targets"].as_array().into_iter().flatten() {
                queries.push(PanelQuery {
                    dashboard: title.clone(),
                    panel: panel["title"].as_str().unwrap_or_default().to_string(),
                    ref_id: target["refId"].as_str().unwrap_or_default().to_string(),
                    expr: target["expr"].as_str().unwrap_or_default().to_string(),
                });
            }
        }
    }
    queries
}

/// The `label_values(<selector>, <label>)` definitions of the query variables: (name,
/// selector, label).
pub fn label_values_variables() -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for path in dashboard_files() {
        let dashboard = load(&path);
        for variable in dashboard["templating"]["list"]
            .as_array()
            .into_iter()
            .flatten()
        {
            if variable["type"] != "query" {
                continue;
            }
            let definition = variable["definition"].as_str().unwrap_or_default();
            let inner = definition
                .strip_prefix("label_values(")
                .and_then(|rest| rest.strip_suffix(')'))
                .unwrap_or_else(|| panic!("unexpected variable query {definition:?}"));
            let (selector, label) = inner
                .rsplit_once(',')
                .expect("label_values(selector, label)");
            let name = variable["name"].as_str().unwrap_or_default().to_string();
            out.push((name, selector.trim().to_string(), label.trim().to_string()));
        }
    }
    out
}

/// Replaces `$name` and `${name}` with each value, longest names first (so `$__range` is not
/// taken for a prefix of another), and fails on a variable left over.
pub fn interpolate(expr: &str, values: &[(&str, String)]) -> String {
    let mut sorted: Vec<&(&str, String)> = values.iter().collect();
    sorted.sort_by_key(|(name, _)| std::cmp::Reverse(name.len()));
    let mut out = expr.to_string();
    for (name, value) in sorted {
        out = out
            .replace(&format!("${{{name}}}"), value)
            .replace(&format!("${name}"), value);
    }
    assert!(
        !out.contains('$'),
        "a variable is not set in {out:?} (from {expr:?})"
    );
    out
}

/// The variable selection the test looks at: one namespace, one job, everything else "All".
pub fn selection(namespace: &str, job: &str, range_seconds: u64) -> Vec<(&'static str, String)> {
    vec![
        ("namespace", namespace.to_string()),
        ("job", job.to_string()),
        ("instance", ".*".to_string()),
        ("model_name", ".*".to_string()),
        ("ttft_slo", "1.0".to_string()),
        ("tpot_slo", "0.1".to_string()),
        (
            "__rate_interval",
            super::scenario::RATE_INTERVAL.to_string(),
        ),
        ("__range", format!("{range_seconds}s")),
    ]
}
