//! The Prometheus rules of `deploy/prometheus/rules/` and their unit tests
//! (`deploy/prometheus/tests/*.test.yml`), run with `promtool` (Debian package `prometheus`):
//! the rule files and `prometheus.yml` are valid, every unit test passes, every alert is tested
//! both firing and silent, every recording rule has an expected value, every alert carries its
//! runbook and severity, rules and their tests read only series of the metric list
//! (docs/metric-names.txt, kept equal to what the server exports), and the unit tests fail when
//! a rule changes (so they test something).

use pagoda_e2e::metric_names::{self, MetricList, NAMESPACES};
use pagoda_e2e::tools::{repo_file, run_tool, run_tool_ok};
use serde_yaml::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

const RECORDING_RULES: &str = "deploy/prometheus/rules/pagoda-recording.rules.yml";
const ALERT_RULES: &str = "deploy/prometheus/rules/pagoda-alerts.rules.yml";
const PROMETHEUS_CONFIG: &str = "deploy/prometheus/prometheus.yml";
const TESTS_DIR: &str = "deploy/prometheus/tests";

fn read_yaml(path: &Path) -> Value {
    let text =
        fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{} is not YAML: {e}", path.display()))
}

/// `value[key]` as a sequence; empty when absent (as promtool reads a missing list).
fn seq<'a>(value: &'a Value, key: &str) -> &'a [Value] {
    value
        .get(key)
        .and_then(Value::as_sequence)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

fn str_at<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

/// The unit-test files, `deploy/prometheus/tests/*.test.yml`, relative to the repository root.
fn test_files() -> Vec<String> {
    let dir = repo_file(TESTS_DIR);
    let mut files: Vec<String> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").file_name())
        .map(|name| name.to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".test.yml"))
        .map(|name| format!("{TESTS_DIR}/{name}"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no *.test.yml in {TESTS_DIR}");
    files
}

/// The groups of a rule file, in file order: (group name, its rules).
fn rule_groups(path: &Path) -> Vec<(String, Vec<Value>)> {
    let doc = read_yaml(path);
    seq(&doc, "groups")
        .iter()
        .map(|group| {
            let name = str_at(group, "name").expect("every rule group has a name");
            (name.to_owned(), seq(group, "rules").to_vec())
        })
        .collect()
}

fn alert_rules() -> Vec<Value> {
    let rules: Vec<Value> = rule_groups(&repo_file(ALERT_RULES))
        .into_iter()
        .flat_map(|(_, rules)| rules)
        .filter(|rule| rule.get("alert").is_some())
        .collect();
    assert!(!rules.is_empty(), "no alert in {ALERT_RULES}");
    rules
}

fn recording_rule_names() -> Vec<String> {
    let names: Vec<String> = rule_groups(&repo_file(RECORDING_RULES))
        .into_iter()
        .flat_map(|(_, rules)| rules)
        .filter_map(|rule| str_at(&rule, "record").map(str::to_owned))
        .collect();
    assert!(!names.is_empty(), "no recording rule in {RECORDING_RULES}");
    names
}

/// Every (file, test group) of the unit tests.
fn test_groups() -> Vec<(String, Value)> {
    test_files()
        .into_iter()
        .flat_map(|file| {
            let doc = read_yaml(&repo_file(&file));
            seq(&doc, "tests")
                .iter()
                .map(|group| (file.clone(), group.clone()))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The metric and rule names a PromQL expression mentions (its tokens of name characters).
fn names_in(expr: &str) -> impl Iterator<Item = &str> {
    expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
        .filter(|token| !token.is_empty())
}

#[test]
fn rule_files_pass_promtool_check() {
    run_tool_ok(
        "promtool",
        &["check", "rules", RECORDING_RULES, ALERT_RULES],
    );
}

#[test]
fn prometheus_config_passes_promtool_check() {
    // Also checks the rule files the configuration loads.
    run_tool_ok("promtool", &["check", "config", PROMETHEUS_CONFIG]);
}

#[test]
fn rule_unit_tests_pass() {
    let files = test_files();
    let mut args = vec!["test", "rules"];
    args.extend(files.iter().map(String::as_str));
    run_tool_ok("promtool", &args);
}

#[test]
fn every_alert_is_tested_firing_and_silent() {
    let rules = alert_rules();
    let annotations_of: BTreeMap<&str, BTreeSet<&str>> = rules
        .iter()
        .map(|rule| {
            let name = str_at(rule, "alert").expect("alert name");
            let keys = rule
                .get("annotations")
                .and_then(Value::as_mapping)
                .map(|m| m.keys().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            (name, keys)
        })
        .collect();

    let mut firing = BTreeSet::new();
    let mut silent = BTreeSet::new();
    for (file, group) in test_groups() {
        for case in seq(&group, "alert_rule_test") {
            let name = str_at(case, "alertname")
                .unwrap_or_else(|| panic!("{file}: an alert_rule_test without alertname"));
            // A misspelt name would make every "does not fire" case pass.
            let keys = annotations_of
                .get(name)
                .unwrap_or_else(|| panic!("{file}: alert_rule_test for unknown alert {name}"));
            let expected = seq(case, "exp_alerts");
            if expected.is_empty() {
                silent.insert(name.to_owned());
                continue;
            }
            firing.insert(name.to_owned());
            for alert in expected {
                let asserted: BTreeSet<&str> = alert
                    .get("exp_annotations")
                    .and_then(Value::as_mapping)
                    .map(|m| m.keys().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                assert_eq!(
                    &asserted, keys,
                    "{file}: a firing {name} must assert every rendered annotation"
                );
            }
        }
    }
    for name in annotations_of.keys() {
        assert!(
            firing.contains(*name),
            "no alert_rule_test where {name} fires (non-empty exp_alerts)"
        );
        assert!(
            silent.contains(*name),
            "no alert_rule_test where {name} must not fire (empty exp_alerts)"
        );
    }
}

/// The exported series a PromQL expression reads that the metric list lacks: `(pagoda|vllm):<base>`
/// must be listed under both namespaces, a literal `vllm:…`, `pagoda:…`, `http_…` or
/// `pagoda_…` name as it is.
fn unlisted_in(expr: &str, list: &MetricList) -> Vec<String> {
    let mut missing = Vec::new();
    for token in names_in(expr) {
        if let Some(base) = token.strip_prefix(':') {
            for namespace in NAMESPACES {
                let name = format!("{namespace}:{base}");
                if !list.contains_key(metric_names::family_of(list, &name)) {
                    missing.push(name);
                }
            }
        } else if ["vllm:", "pagoda:", "http_", "pagoda_"]
            .iter()
            .any(|prefix| token.starts_with(prefix))
            && !list.contains_key(metric_names::family_of(list, token))
        {
            missing.push(token.to_string());
        }
    }
    missing
}

#[test]
fn rules_and_their_tests_read_only_listed_series() {
    let list = metric_names::listed();
    let mut missing: BTreeSet<(String, String)> = BTreeSet::new();
    for file in [RECORDING_RULES, ALERT_RULES] {
        for (_, rules) in rule_groups(&repo_file(file)) {
            for rule in rules {
                let expr = str_at(&rule, "expr").expect("every rule has an expr");
                missing.extend(
                    unlisted_in(expr, &list)
                        .into_iter()
                        .map(|n| (file.into(), n)),
                );
            }
        }
    }
    for (file, group) in test_groups() {
        for input in seq(&group, "input_series") {
            let series = str_at(input, "series").expect("input_series without series");
            let name = series.split('{').next().unwrap_or(series);
            missing.extend(
                unlisted_in(name, &list)
                    .into_iter()
                    .map(|n| (file.clone(), n)),
            );
        }
    }
    assert!(
        missing.is_empty(),
        "series not in {} (a misspelt or retired name): {missing:?}",
        metric_names::LIST_PATH
    );
    // The check sees a misspelling.
    let misspelt = r#"rate({__name__=~"(pagoda|vllm):request_sucess_total"}[5m])"#;
    assert_eq!(unlisted_in(misspelt, &list).len(), 2);
}

#[test]
fn every_recording_rule_has_an_expected_value() {
    let mut tested = BTreeSet::new();
    for (_, group) in test_groups() {
        for case in seq(&group, "promql_expr_test") {
            if seq(case, "exp_samples").is_empty() {
                continue;
            }
            let expr = str_at(case, "expr").expect("promql_expr_test without expr");
            tested.extend(names_in(expr).map(str::to_owned));
        }
    }
    let untested: Vec<String> = recording_rule_names()
        .into_iter()
        .filter(|name| !tested.contains(name))
        .collect();
    assert!(
        untested.is_empty(),
        "recording rules with no promql_expr_test expecting a sample: {untested:?}"
    );
}

#[test]
fn alerts_have_runbooks_and_a_severity() {
    for rule in alert_rules() {
        let name = str_at(&rule, "alert").expect("alert name");
        for key in ["summary", "description", "runbook", "runbook_url"] {
            let text = rule
                .get("annotations")
                .and_then(|a| str_at(a, key))
                .unwrap_or_default();
            assert!(!text.trim().is_empty(), "{name}: annotation {key} missing");
        }
        let severity = rule.get("labels").and_then(|l| str_at(l, "severity"));
        assert!(
            matches!(severity, Some("warning" | "critical")),
            "{name}: label severity is {severity:?}, not warning or critical"
        );
    }
}

/// promtool evaluates rule groups in a random order unless `group_eval_order` lists them: an
/// alert would then read the recording rules of the previous evaluation in some runs and of
/// the current one in others (flaky tests). Every test file that loads the alert rules must
/// list every group, recording groups first.
#[test]
fn alert_tests_fix_the_group_evaluation_order() {
    let alert_rules = repo_file(ALERT_RULES)
        .canonicalize()
        .expect("alert rules exist");
    let recording_rules = repo_file(RECORDING_RULES)
        .canonicalize()
        .expect("recording rules exist");
    for file in test_files() {
        let path = repo_file(&file);
        let doc = read_yaml(&path);
        let dir = path.parent().expect("test file in a directory");
        let loaded: Vec<PathBuf> = seq(&doc, "rule_files")
            .iter()
            .map(|f| {
                let relative = f.as_str().expect("rule_files entries are paths");
                dir.join(relative)
                    .canonicalize()
                    .unwrap_or_else(|e| panic!("{file}: rule file {relative}: {e}"))
            })
            .collect();
        assert!(!loaded.is_empty(), "{file}: no rule_files");
        if !loaded.contains(&alert_rules) {
            continue;
        }
        assert_eq!(
            loaded,
            vec![recording_rules.clone(), alert_rules.clone()],
            "{file}: load the recording rules, then the alert rules"
        );
        let expected: Vec<String> = loaded
            .iter()
            .flat_map(|f| rule_groups(f).into_iter().map(|(name, _)| name))
            .collect();
        let order: Vec<String> = seq(&doc, "group_eval_order")
            .iter()
            .map(|g| g.as_str().expect("group names").to_owned())
            .collect();
        assert_eq!(
            order, expected,
            "{file}: group_eval_order must list every group, recording groups first"
        );
    }
}

/// A scratch copy of the rules and tests, laid out as in the repository (`rules/`, `tests/`),
/// so the tests' relative `rule_files` resolve to the copies.
struct Scratch {
    dir: tempfile::TempDir,
    tests: Vec<PathBuf>,
}

impl Scratch {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        for sub in ["rules", "tests"] {
            fs::create_dir(dir.path().join(sub)).expect("create scratch dir");
        }
        for rules in [RECORDING_RULES, ALERT_RULES] {
            let name = Path::new(rules).file_name().expect("file name");
            fs::copy(repo_file(rules), dir.path().join("rules").join(name)).expect("copy rules");
        }
        let tests = test_files()
            .iter()
            .map(|file| {
                let name = Path::new(file).file_name().expect("file name");
                let copy = dir.path().join("tests").join(name);
                fs::copy(repo_file(file), &copy).expect("copy test");
                copy
            })
            .collect();
        Scratch { dir, tests }
    }

    /// Replaces `from` by `to` in the copy of `rules`, which must hold it `count` times.
    fn edit(&self, rules: &str, from: &str, to: &str, count: usize) {
        let name = Path::new(rules).file_name().expect("file name");
        let path = self.dir.path().join("rules").join(name);
        let text = fs::read_to_string(&path).expect("read scratch rules");
        assert_eq!(text.matches(from).count(), count, "{from:?} in {rules}");
        fs::write(&path, text.replace(from, to)).expect("write scratch rules");
    }

    fn promtool_test(&self) -> Output {
        let mut args = vec!["test", "rules"];
        args.extend(
            self.tests
                .iter()
                .map(|p| p.to_str().expect("UTF-8 temp path")),
        );
        run_tool("promtool", &args)
    }
}

fn combined_output(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn rule_unit_tests_fail_when_an_alert_threshold_changes() {
    let scratch = Scratch::new();
    // Control: the copies pass as they are, so a failure below comes from the edit.
    let unchanged = scratch.promtool_test();
    assert!(
        unchanged.status.success(),
        "the scratch copy fails unedited:\n{}",
        combined_output(&unchanged)
    );
    scratch.edit(
        ALERT_RULES,
        "job_model:kv_cache_usage_perc:max > 0.95",
        "job_model:kv_cache_usage_perc:max > 0.99",
        1,
    );
    let changed = scratch.promtool_test();
    let text = combined_output(&changed);
    assert!(
        !changed.status.success(),
        "the tests pass with a KV-cache threshold of 99 %:\n{text}"
    );
    assert!(
        text.contains("PagodaKVCacheNearlyFull"),
        "the failure does not name the alert:\n{text}"
    );
}

#[test]
fn rule_unit_tests_fail_when_the_ttft_slo_bucket_is_misspelt() {
    // The server writes le="1.0"; a rule selecting le="1" would select nothing, and the TTFT
    // SLO ratios and alerts would silently disappear.
    let scratch = Scratch::new();
    scratch.edit(
        RECORDING_RULES,
        "time_to_first_token_seconds_bucket\", le=\"1.0\"",
        "time_to_first_token_seconds_bucket\", le=\"1\"",
        4,
    );
    let changed = scratch.promtool_test();
    let text = combined_output(&changed);
    assert!(
        !changed.status.success(),
        "the tests pass with le=\"1\":\n{text}"
    );
    assert!(
        text.contains("time_to_first_token_slo_miss") && text.contains("PagodaTTFTSLOBurnFast"),
        "the failure does not name the TTFT SLO rules and alert:\n{text}"
    );
}
