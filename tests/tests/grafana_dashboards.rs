//! The Grafana dashboards as files: generated from `grafana/build_dashboards.py` and up to date,
//! every panel described, with a unit and the datasource variable, laid out on the grid, reading
//! engine series only through the namespace variable and only series of the metric list
//! (docs/metric-names.txt, kept equal to what the server exports) under both namespaces,
//! and covering every signal the overview must show. (Their queries run against a real
//! Prometheus in observability_prometheus.rs.)

// Shares the dashboard reader of the Prometheus test; its scenario parts are unused here.
#[allow(dead_code)]
mod observability;

use std::collections::BTreeSet;

use observability::dashboards::{dashboard_files, load, panels};
use pagoda_e2e::metric_names;
use pagoda_e2e::tools::{repo_file, run_tool_ok};
use serde_json::Value;

#[test]
fn committed_dashboards_are_what_the_generator_writes() {
    run_tool_ok("python3", &["grafana/build_dashboards.py", "--check"]);
}

fn all_panels() -> Vec<(String, Value)> {
    dashboard_files()
        .iter()
        .flat_map(|path| {
            let dashboard = load(path);
            let title = dashboard["title"].as_str().unwrap_or_default().to_string();
            panels(&dashboard)
                .into_iter()
                .map(move |panel| (title.clone(), panel))
        })
        .collect()
}

fn exprs(panel: &Value) -> Vec<String> {
    panel["targets"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|target| target["expr"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn every_panel_has_a_description_a_unit_the_datasource_variable_and_queries() {
    for (dashboard, panel) in all_panels() {
        let name = format!("{dashboard} / {}", panel["title"]);
        let description = panel["description"].as_str().unwrap_or_default();
        assert!(
            description.len() > 40,
            "{name}: description {description:?}"
        );
        let unit = panel["fieldConfig"]["defaults"]["unit"]
            .as_str()
            .unwrap_or_default();
        assert!(!unit.is_empty(), "{name}: no unit");
        assert_eq!(
            panel["datasource"]["uid"], "${datasource}",
            "{name}: datasource"
        );
        let queries = exprs(&panel);
        assert!(
            !queries.is_empty() && queries.iter().all(|q| !q.is_empty()),
            "{name}: no query"
        );
        if panel["type"] == "stat" {
            let steps = panel["fieldConfig"]["defaults"]["thresholds"]["steps"].as_array();
            assert!(
                steps.is_some_and(|s| s.len() >= 2),
                "{name}: a tile needs thresholds"
            );
        }
    }
}

#[test]
fn panels_have_unique_ids_and_do_not_overlap_on_the_grid() {
    for path in dashboard_files() {
        let dashboard = load(&path);
        let items = dashboard["panels"].as_array().cloned().unwrap_or_default();
        let mut ids = BTreeSet::new();
        let mut cells = BTreeSet::new();
        for item in &items {
            assert!(
                ids.insert(item["id"].as_u64().expect("an id")),
                "duplicate id {}",
                item["id"]
            );
            let grid = &item["gridPos"];
            let [x, y, w, h] = ["x", "y", "w", "h"].map(|k| grid[k].as_u64().expect("gridPos"));
            assert!(x + w <= 24, "{} overflows the 24 columns", item["title"]);
            for cell in (x..x + w).flat_map(|cx| (y..y + h).map(move |cy| (cx, cy))) {
                assert!(
                    cells.insert(cell),
                    "{} overlaps another panel at {cell:?}",
                    item["title"]
                );
            }
        }
    }
}

/// The engine series a query reads: the names after `${namespace}:`, suffixes stripped.
fn engine_series(expr: &str) -> BTreeSet<String> {
    expr.split("${namespace}:")
        .skip(1)
        .map(|rest| {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|suffix| name.strip_suffix(suffix))
                .unwrap_or(&name)
                .to_string()
        })
        .collect()
}

#[test]
fn engine_series_are_read_through_the_namespace_variable_and_are_listed() {
    let list = metric_names::listed();
    for (_, panel) in all_panels() {
        for expr in exprs(&panel) {
            for literal in ["pagoda:", "vllm:"] {
                assert!(
                    !expr.contains(literal),
                    "{}: literal {literal} in {expr}",
                    panel["title"]
                );
            }
            for series in engine_series(&expr) {
                assert_eq!(
                    metric_names::namespaces_of(&list, &series),
                    metric_names::NAMESPACES,
                    "{series}: not in {} under both namespaces",
                    metric_names::LIST_PATH
                );
            }
        }
    }
}

#[test]
fn the_overview_shows_every_signal_operators_need() {
    let used: BTreeSet<String> = all_panels()
        .iter()
        .flat_map(|(_, p)| exprs(p))
        .flat_map(|e| engine_series(&e))
        .collect();
    for series in [
        "time_to_first_token_seconds",
        "inter_token_latency_seconds",
        "request_time_per_output_token_seconds",
        "e2e_request_latency_seconds",
        "request_queue_time_seconds",
        "request_prefill_time_seconds",
        "request_decode_time_seconds",
        "prompt_tokens_total",
        "generation_tokens_total",
        "num_requests_running",
        "num_requests_waiting",
        "kv_cache_usage_perc",
        "num_preemptions_total",
        "prefix_cache_hits_total",
        "prefix_cache_queries_total",
        "request_success_total",
        "request_prompt_tokens",
        "request_generation_tokens",
    ] {
        assert!(used.contains(series), "no panel reads {series}");
    }
    let all = all_panels();
    let heatmaps: Vec<String> = all
        .iter()
        .filter(|(_, p)| p["type"] == "heatmap")
        .flat_map(|(_, p)| exprs(p))
        .collect();
    for series in [
        "request_prompt_tokens_bucket",
        "request_generation_tokens_bucket",
    ] {
        assert!(
            heatmaps.iter().any(|e| e.contains(series)),
            "no heatmap of {series}"
        );
    }
    let tiles: Vec<String> = all
        .iter()
        .filter(|(_, p)| p["type"] == "stat")
        .flat_map(|(_, p)| exprs(p))
        .collect();
    for variable in ["$ttft_slo", "$tpot_slo"] {
        assert!(
            tiles.iter().any(|e| e.contains(variable)),
            "no SLO tile uses {variable}"
        );
    }
    let http: Vec<String> = all.iter().flat_map(|(_, p)| exprs(p)).collect();
    assert!(http
        .iter()
        .any(|e| e.contains("http_requests_total") && e.contains("5xx")));
}

#[test]
fn variables_cover_namespace_scope_and_slo_targets_with_valid_bucket_bounds() {
    let contract = std::fs::read_to_string(repo_file("docs/metrics.md")).expect("docs/metrics.md");
    let ttft_row = contract
        .lines()
        .find(|l| l.starts_with("| `--ttft-buckets`"))
        .expect("ttft");
    let itl_row = contract
        .lines()
        .find(|l| l.starts_with("| `--itl-buckets`"))
        .expect("itl");
    for path in dashboard_files() {
        let dashboard = load(&path);
        let variables = dashboard["templating"]["list"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let by_name = |name: &str| {
            variables
                .iter()
                .find(|v| v["name"] == name)
                .cloned()
                .unwrap_or_else(|| {
                    panic!("{} has no variable {name}", path.display());
                })
        };
        assert_eq!(by_name("namespace")["query"], "pagoda,vllm");
        for name in ["datasource", "job", "instance", "model_name"] {
            by_name(name);
        }
        // A target must be a bucket bound the server exports (default buckets, as written).
        for (name, row) in [("ttft_slo", ttft_row), ("tpot_slo", itl_row)] {
            let query = by_name(name)["query"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            for value in query.split(',') {
                let bound: f64 = value.parse().expect("a number");
                let listed = row.split(['|', ',']).any(|c| c.trim().parse() == Ok(bound));
                assert!(listed, "{name} value {value} is not a default bucket bound");
                assert!(
                    value.contains('.'),
                    "{name} value {value} must be written like le"
                );
            }
        }
    }
}
