//! The one list of metric names, `docs/metric-names.txt`: every series `pagoda-server` exports
//! under either `--metrics-namespace`, with its Prometheus type. `server/tests/metric_names.rs`
//! writes it from running servers and fails when it differs from what they export; the bench
//! scraper, the Grafana generator, the Prometheus rules and the Kubernetes picker's config are
//! checked against it.

use std::collections::BTreeMap;

use crate::tools::repo_file;

/// The list's path from the repository root.
pub const LIST_PATH: &str = "docs/metric-names.txt";

/// The engine namespaces a series name may carry.
pub const NAMESPACES: [&str; 2] = ["pagoda", "vllm"];

/// The list's header: what it is and how it is made.
const HEADER: &str = "\
# Every series pagoda-server exports, under --metrics-namespace pagoda and vllm, with its
# Prometheus type: the one list the server, pagoda-bench's scraper, the Grafana dashboards'
# generator, the Prometheus rules and the Kubernetes picker's config are checked against.
# Written by `PAGODA_BLESS=1 cargo test -p pagoda-server --test metric_names` from running
# servers (LoRA adapters and speculative decoding on, one request of each kind); the same
# test fails when it differs from what they export. Meanings and labels: docs/metrics.md.
";

/// Exported family name → type (`counter`, `gauge`, `histogram`).
pub type MetricList = BTreeMap<String, String>;

/// The list as committed.
pub fn listed() -> MetricList {
    let path = repo_file(LIST_PATH);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    parse(&text)
}

/// Reads `name type` lines, skipping comments and blank lines.
pub fn parse(text: &str) -> MetricList {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(|line| {
            let (name, kind) = line
                .split_once(' ')
                .unwrap_or_else(|| panic!("{LIST_PATH}: `{line}` is not `name type`"));
            (name.to_string(), kind.trim().to_string())
        })
        .collect()
}

/// The list's text for `series` (sorted by name).
pub fn render(series: &MetricList) -> String {
    let mut text = HEADER.to_string();
    for (name, kind) in series {
        text.push_str(&format!("{name} {kind}\n"));
    }
    text
}

/// A sample or selector name without a histogram's `_bucket`, `_sum` or `_count`, when what
/// is left is a listed histogram; otherwise the name itself.
pub fn family_of<'a>(list: &MetricList, name: &'a str) -> &'a str {
    ["_bucket", "_sum", "_count"]
        .iter()
        .filter_map(|suffix| name.strip_suffix(suffix))
        .find(|base| list.get(*base).map(String::as_str) == Some("histogram"))
        .unwrap_or(name)
}

/// The namespaces under which the engine series `base` is listed.
pub fn namespaces_of(list: &MetricList, base: &str) -> Vec<&'static str> {
    NAMESPACES
        .into_iter()
        .filter(|namespace| {
            let name = format!("{namespace}:{base}");
            list.contains_key(family_of(list, &name))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_reads_back_what_it_renders() {
        let series: MetricList = [
            ("http_requests_total", "counter"),
            ("vllm:time_to_first_token_seconds", "histogram"),
        ]
        .into_iter()
        .map(|(name, kind)| (name.to_string(), kind.to_string()))
        .collect();
        assert_eq!(parse(&render(&series)), series);
    }

    #[test]
    fn histogram_samples_name_their_family_and_other_names_stay_themselves() {
        let list = parse("vllm:e2e_request_latency_seconds histogram\nvllm:x_count counter\n");
        assert_eq!(
            family_of(&list, "vllm:e2e_request_latency_seconds_bucket"),
            "vllm:e2e_request_latency_seconds"
        );
        assert_eq!(family_of(&list, "vllm:x_count"), "vllm:x_count");
        assert_eq!(
            namespaces_of(&list, "e2e_request_latency_seconds_sum"),
            ["vllm"]
        );
        assert!(namespaces_of(&list, "unknown").is_empty());
    }

    #[test]
    fn the_committed_list_names_both_namespaces_and_only_known_types() {
        let list = listed();
        for (name, kind) in &list {
            assert!(
                ["counter", "gauge", "histogram"].contains(&kind.as_str()),
                "{name} {kind}"
            );
        }
        for namespace in NAMESPACES {
            let prefix = format!("{namespace}:");
            assert!(
                list.keys().filter(|n| n.starts_with(&prefix)).count() > 20,
                "{namespace} series in {LIST_PATH}"
            );
        }
    }
}
