//! The Grafana dashboards, the Prometheus recording and alert rules and the Prometheus Adapter
//! rules, evaluated by a real Prometheus scraping real pagoda-servers under load, in both metric
//! namespaces (`--metrics-namespace pagoda` and `vllm`).
//!
//! Six mock-engine servers (healthy, overloaded, faulty × two namespaces) and a target that is
//! down are scraped every second; pagoda-bench streams load into the healthy and overloaded ones
//! and failing requests go to the faulty ones. Then every query of every dashboard panel, every
//! variable query, every recording rule and every alert expression is evaluated over the load's
//! window through Prometheus's HTTP API, as Grafana and the rule manager would: each must return
//! data; panels must show the magnitudes the load makes certain; each alert must fire for the
//! servers built to trip it and never for the healthy ones. All failures are reported together.

mod observability;

use std::collections::BTreeSet;
use std::time::Duration;

use observability::dashboards::{self, PanelQuery};
use observability::expectations::{alert_subject, AlertSubject, PANEL_EXPECTATIONS};
use observability::rules::{self, render_metrics_query};
use observability::scenario::{self, Role, Target, DOWN_JOB, K8S_NAMESPACE, NAMESPACES};
use pagoda_e2e::prometheus::{free_port, unix_now, PrometheusProcess, Series};

const LOAD_DURATION: Duration = Duration::from_secs(35);
const STEP: &str = "1s";

/// The load's time window and the findings so far.
struct Check<'a> {
    prometheus: &'a PrometheusProcess,
    targets: &'a [Target],
    start: f64,
    end: f64,
    failures: Vec<String>,
}

impl Check<'_> {
    async fn range(&self, expr: &str) -> Vec<Series> {
        self.prometheus
            .query_range(expr, self.start, self.end, STEP)
            .await
    }

    fn fail(&mut self, message: String) {
        eprintln!("FAIL: {message}");
        self.failures.push(message);
    }

    fn target(&self, role: Role, namespace: &str) -> &Target {
        self.targets
            .iter()
            .find(|t| t.role == role && t.namespace == namespace)
            .expect("every role runs in every namespace")
    }

    fn namespace_of(&self, job: &str) -> Option<&'static str> {
        self.targets
            .iter()
            .find(|t| t.job == job)
            .map(|t| t.namespace)
    }

    fn range_seconds(&self) -> u64 {
        (self.end - self.start).ceil() as u64
    }
}

fn finite_values(series: &[Series]) -> Vec<f64> {
    series
        .iter()
        .flat_map(|s| s.samples.iter().map(|(_, value)| *value))
        .filter(|value| value.is_finite())
        .collect()
}

fn jobs_of(series: &[Series]) -> BTreeSet<String> {
    series.iter().map(|s| s.label("job").to_string()).collect()
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dashboards_rules_and_alerts_work_on_real_prometheus_in_both_namespaces() {
    let targets = scenario::start_targets();
    let config = scenario::prometheus_config(&targets, free_port());
    let prometheus = PrometheusProcess::start(&config).await;
    prometheus
        .wait_for_scrapes(targets.len() + 1, Duration::from_secs(30))
        .await;

    let start = unix_now();
    let bench = scenario::start_bench_load(&targets, LOAD_DURATION);
    let num_server_errors = scenario::drive_faulty(&targets, LOAD_DURATION).await;
    assert!(
        num_server_errors > 100,
        "the faulty servers answered {num_server_errors} 500s"
    );
    // Two more scrapes and rule evaluations of the final state.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let end = unix_now();
    drop(bench);

    let mut check = Check {
        prometheus: &prometheus,
        targets: &targets,
        start,
        end,
        failures: vec![],
    };
    check_rules_loaded_and_healthy(&mut check).await;
    check_dashboard_queries(&mut check).await;
    check_dashboard_variables(&mut check).await;
    check_panel_magnitudes(&mut check).await;
    check_recording_rules(&mut check).await;
    check_alerts(&mut check).await;
    check_adapter_rules(&mut check).await;
    assert!(
        check.failures.is_empty(),
        "{} failures:\n{}",
        check.failures.len(),
        check.failures.join("\n")
    );
}

/// Prometheus loaded every rule of the files and evaluates each without error.
async fn check_rules_loaded_and_healthy(check: &mut Check<'_>) {
    let groups = check.prometheus.rule_groups().await;
    let loaded: Vec<serde_json::Value> = groups
        .iter()
        .flat_map(|g| g["rules"].as_array().cloned().unwrap_or_default())
        .collect();
    let expected = rules::recording_rules().len() + rules::alert_rules().len();
    if loaded.len() != expected {
        check.fail(format!(
            "prometheus loaded {} rules, the files have {expected}",
            loaded.len()
        ));
    }
    for rule in loaded {
        if rule["health"] != "ok" {
            check.fail(format!(
                "rule {} is {}: {}",
                rule["name"], rule["health"], rule["lastError"]
            ));
        }
    }
}

/// Every panel query returns data with finite values, for the healthy server of each namespace.
async fn check_dashboard_queries(check: &mut Check<'_>) {
    let queries = dashboards::all_queries();
    assert!(
        queries.len() >= 30,
        "only {} panel queries found",
        queries.len()
    );
    for namespace in NAMESPACES {
        let job = check.target(Role::Healthy, namespace).job.clone();
        let selection = dashboards::selection(namespace, &job, check.range_seconds());
        for query in &queries {
            let expr = dashboards::interpolate(&query.expr, &selection);
            let series = check.range(&expr).await;
            if finite_values(&series).is_empty() {
                check.fail(format!(
                    "[{namespace}] {} returned no data: {expr}",
                    query.name()
                ));
            }
        }
    }
}

/// Every `label_values()` variable lists the jobs, instances and models of its namespace.
async fn check_dashboard_variables(check: &mut Check<'_>) {
    for namespace in NAMESPACES {
        let healthy = check.target(Role::Healthy, namespace).job.clone();
        let selection = dashboards::selection(namespace, &healthy, check.range_seconds());
        for (name, selector, label) in dashboards::label_values_variables() {
            let selector = dashboards::interpolate(&selector, &selection);
            let values: BTreeSet<String> = check
                .prometheus
                .series(&selector)
                .await
                .iter()
                .filter_map(|labels| {
                    labels
                        .get(&label)
                        .and_then(|v| v.as_str())
                        .map(String::from)
                })
                .collect();
            if values.is_empty() {
                check.fail(format!(
                    "[{namespace}] variable {name}: {selector} has no {label}"
                ));
            }
            if label == "job" && !values.contains(&healthy) {
                check.fail(format!(
                    "[{namespace}] variable job lacks {healthy}: {values:?}"
                ));
            }
        }
    }
}

/// Panels show what the load makes certain, per kind of server.
async fn check_panel_magnitudes(check: &mut Check<'_>) {
    let queries = dashboards::all_queries();
    let load_end = check.start + LOAD_DURATION.as_secs_f64();
    for expectation in PANEL_EXPECTATIONS {
        let query: &PanelQuery = queries
            .iter()
            .find(|q| q.panel == expectation.panel && q.ref_id == expectation.ref_id)
            .unwrap_or_else(|| panic!("no panel {:?}/{}", expectation.panel, expectation.ref_id));
        for namespace in NAMESPACES {
            let job = check.target(expectation.role, namespace).job.clone();
            let selection = dashboards::selection(namespace, &job, check.range_seconds());
            let expr = dashboards::interpolate(&query.expr, &selection);
            let series = check.range(&expr).await;
            // The second half of the load: rates and quantiles have a full window by then.
            let steady: Vec<Series> = series
                .into_iter()
                .map(|mut s| {
                    s.samples
                        .retain(|(t, _)| *t >= check.start + 17.0 && *t <= load_end);
                    s
                })
                .collect();
            let value = median(finite_values(&steady));
            if !(expectation.min..=expectation.max).contains(&value) {
                check.fail(format!(
                    "[{namespace}] {} for the {:?} server is {value}, expected {}..={}: {expr}",
                    query.name(),
                    expectation.role,
                    expectation.min,
                    expectation.max
                ));
            }
        }
    }
}

/// Every recording rule's expression returns data, and Prometheus recorded it, for servers of
/// both namespaces.
async fn check_recording_rules(check: &mut Check<'_>) {
    for rule in rules::recording_rules() {
        for expr in [rule.expr.as_str(), rule.name.as_str()] {
            let series = check.range(expr).await;
            let namespaces: BTreeSet<&str> = jobs_of(&series)
                .iter()
                .filter_map(|job| check.namespace_of(job))
                .collect();
            if finite_values(&series).is_empty() || namespaces.len() != NAMESPACES.len() {
                check.fail(format!(
                    "recording rule {}: {expr:?} has data for namespaces {namespaces:?}",
                    rule.name
                ));
            }
        }
    }
}

/// Every alert expression returns data for the servers built to trip it, in both namespaces,
/// and never for a healthy one; Prometheus's own ALERTS series agrees.
async fn check_alerts(check: &mut Check<'_>) {
    let healthy: BTreeSet<String> = check
        .targets
        .iter()
        .filter(|t| t.role == Role::Healthy)
        .map(|t| t.job.clone())
        .collect();
    for alert in rules::alert_rules() {
        let expected: BTreeSet<String> = match alert_subject(&alert.name) {
            AlertSubject::DownTarget => [DOWN_JOB.to_string()].into(),
            AlertSubject::Role(role) => NAMESPACES
                .iter()
                .map(|ns| check.target(role, ns).job.clone())
                .collect(),
        };
        let active = format!("ALERTS{{alertname=\"{}\"}}", alert.name);
        for (what, expr) in [
            ("expression", alert.expr.as_str()),
            ("ALERTS", active.as_str()),
        ] {
            let jobs = jobs_of(&check.range(expr).await);
            let missing: Vec<&String> = expected.difference(&jobs).collect();
            let wrong: Vec<&String> = healthy.intersection(&jobs).collect();
            if !missing.is_empty() || !wrong.is_empty() {
                check.fail(format!(
                    "alert {} ({what}): fired for {jobs:?}; missing {missing:?}, healthy {wrong:?}",
                    alert.name
                ));
            }
        }
    }
}

/// The Prometheus Adapter rules find the queue-depth series of both namespaces and their
/// metrics query returns each pod's queue, which grew on the overloaded ones.
async fn check_adapter_rules(check: &mut Check<'_>) {
    let pods: Vec<String> = check.targets.iter().map(Target::pod).collect();
    let matchers = format!("namespace=\"{K8S_NAMESPACE}\",pod=~\"{}\"", pods.join("|"));
    for rule in rules::adapter_rules() {
        let found = check.prometheus.series(&rule.series_query).await;
        let names: BTreeSet<String> = found
            .iter()
            .filter_map(|labels| {
                labels
                    .get("__name__")
                    .and_then(|v| v.as_str())
                    .map(String::from)
            })
            .collect();
        if names.len() != NAMESPACES.len() {
            check.fail(format!(
                "adapter {}: seriesQuery found {names:?}",
                rule.metric_name
            ));
        }
        for name in names {
            let namespace = name.split(':').next().unwrap_or_default();
            let expr = render_metrics_query(&rule, &name, &matchers);
            let series = check.range(&expr).await;
            let pods: Vec<&str> = series.iter().map(|s| s.label("pod")).collect();
            let unique: BTreeSet<&str> = pods.iter().copied().collect();
            let overloaded = check.target(Role::Overloaded, namespace).pod();
            let healthy = check.target(Role::Healthy, namespace).pod();
            let overloaded_peak = series
                .iter()
                .filter(|s| s.label("pod") == overloaded)
                .flat_map(|s| s.samples.iter().map(|(_, v)| *v))
                .fold(0.0_f64, f64::max);
            // One series per pod (the HPA averages over pods), the idle pod included.
            if unique.len() != pods.len()
                || !unique.contains(healthy.as_str())
                || overloaded_peak < 5.0
            {
                check.fail(format!(
                    "adapter {} for {name}: pods {pods:?}, {overloaded} queue peak {overloaded_peak}: {expr}",
                    rule.metric_name
                ));
            }
        }
    }
}
