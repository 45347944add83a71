//! Reading `deploy/kubernetes/`: its YAML files, kustomize's rendering of a variant, and the
//! fields the tests compare.

use std::collections::BTreeMap;

use pagoda_e2e::tools::{repo_file, run_tool_ok};
use serde_json::Value;

/// The recipes' directory, from the repository root.
pub const K8S_DIR: &str = "deploy/kubernetes";

/// A path under `deploy/kubernetes/`, from the repository root.
pub fn k8s_path(relative: &str) -> String {
    format!("{K8S_DIR}/{relative}")
}

/// The text of a file under `deploy/kubernetes/`.
pub fn read(relative: &str) -> String {
    let path = repo_file(&k8s_path(relative));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// The non-empty YAML documents of `text`, as JSON values. Documents are split at `---` lines:
/// one at column 0 cannot be inside a block scalar, whose lines are indented.
pub fn documents(text: &str, origin: &str) -> Vec<Value> {
    let mut chunks = vec![String::new()];
    for line in text.lines() {
        if line == "---" || line.starts_with("--- ") {
            chunks.push(String::new());
        } else if let Some(chunk) = chunks.last_mut() {
            chunk.push_str(line);
            chunk.push('\n');
        }
    }
    chunks
        .iter()
        .map(|chunk| {
            serde_yaml::from_str::<Value>(chunk)
                .unwrap_or_else(|e| panic!("{origin} is not YAML: {e}"))
        })
        .filter(|document| !document.is_null())
        .collect()
}

/// The documents of a file under `deploy/kubernetes/`.
pub fn load(relative: &str) -> Vec<Value> {
    documents(&read(relative), relative)
}

/// The only document of a file under `deploy/kubernetes/`.
pub fn load_one(relative: &str) -> Value {
    let mut all = load(relative);
    assert_eq!(all.len(), 1, "{relative} should hold one document");
    all.remove(0)
}

/// `kubectl kustomize deploy/kubernetes/<dir>`: the objects a `kubectl apply -k` would send.
pub fn render(dir: &str) -> Vec<Value> {
    let yaml = run_tool_ok("kubectl", &["kustomize", &k8s_path(dir)]);
    documents(&yaml, &format!("kubectl kustomize {dir}"))
}

/// The object of `kind` named `name` among `objects`.
pub fn find<'a>(objects: &'a [Value], kind: &str, name: &str) -> &'a Value {
    let mut found = objects
        .iter()
        .filter(|o| o["kind"] == kind && o["metadata"]["name"] == name);
    let object = found
        .next()
        .unwrap_or_else(|| panic!("no {kind} {name} among {} objects", objects.len()));
    assert!(found.next().is_none(), "two objects {kind} {name}");
    object
}

/// The field at a JSON pointer (`/spec/replicas`); fails the test naming it when absent.
pub fn at<'a>(value: &'a Value, pointer: &str) -> &'a Value {
    value.pointer(pointer).unwrap_or_else(|| {
        panic!(
            "{} has no {pointer}",
            value["metadata"]["name"].as_str().unwrap_or("the object")
        )
    })
}

pub fn str_at<'a>(value: &'a Value, pointer: &str) -> &'a str {
    at(value, pointer)
        .as_str()
        .unwrap_or_else(|| panic!("{pointer} is not a string"))
}

pub fn i64_at(value: &Value, pointer: &str) -> i64 {
    at(value, pointer)
        .as_i64()
        .unwrap_or_else(|| panic!("{pointer} is not an integer"))
}

/// The pod spec of a Pod, or of a workload's pod template.
pub fn pod_spec(object: &Value) -> &Value {
    match object["kind"].as_str() {
        Some("Pod") => at(object, "/spec"),
        _ => at(object, "/spec/template/spec"),
    }
}

/// The labels its pods get: a Pod's own, or the pod template's.
pub fn pod_labels(object: &Value) -> &Value {
    match object["kind"].as_str() {
        Some("Pod") => at(object, "/metadata/labels"),
        _ => at(object, "/spec/template/metadata/labels"),
    }
}

/// The container `name` of a Pod or workload.
pub fn container<'a>(object: &'a Value, name: &str) -> &'a Value {
    containers(object)
        .into_iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no container {name}"))
}

pub fn containers(object: &Value) -> Vec<&Value> {
    let list = at(pod_spec(object), "/containers")
        .as_array()
        .expect("containers is a list");
    assert!(!list.is_empty(), "no containers");
    list.iter().collect()
}

/// A label selector as its `matchLabels`; these manifests use no `matchExpressions`.
pub fn match_labels(selector: &Value) -> BTreeMap<String, String> {
    assert!(
        selector.get("matchExpressions").is_none(),
        "a selector with matchExpressions: {selector}"
    );
    string_map(at(selector, "/matchLabels"))
}

/// A map of strings (labels, a Service's selector).
pub fn string_map(value: &Value) -> BTreeMap<String, String> {
    value
        .as_object()
        .unwrap_or_else(|| panic!("not a map: {value}"))
        .iter()
        .map(|(k, v)| {
            let v = v.as_str().unwrap_or_else(|| panic!("{k}: not a string"));
            (k.clone(), v.to_string())
        })
        .collect()
}

/// Whether every pair of `selector` is among `labels` (how Kubernetes matches `matchLabels`).
pub fn selects(selector: &BTreeMap<String, String>, labels: &Value) -> bool {
    let labels = string_map(labels);
    !selector.is_empty() && selector.iter().all(|(k, v)| labels.get(k) == Some(v))
}

/// The literal value of environment variable `name` of a container.
pub fn env_value<'a>(container: &'a Value, name: &str) -> Option<&'a str> {
    container["env"]
        .as_array()?
        .iter()
        .find(|e| e["name"] == name)
        .and_then(|e| e["value"].as_str())
}

/// Seconds of the server's drain after SIGTERM, as a container configures it: `--shutdown-timeout`
/// in its args, else `PAGODA_SHUTDOWN_TIMEOUT`, else the server's default (30).
pub fn shutdown_timeout(container: &Value) -> f64 {
    let args: Vec<&str> = container["args"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let from_args = args.iter().enumerate().find_map(|(i, arg)| {
        arg.strip_prefix("--shutdown-timeout=")
            .or_else(|| (*arg == "--shutdown-timeout").then(|| args.get(i + 1).copied())?)
    });
    let text = from_args.or_else(|| env_value(container, "PAGODA_SHUTDOWN_TIMEOUT"));
    text.map_or(30.0, |t| {
        t.parse()
            .unwrap_or_else(|_| panic!("shutdown timeout {t:?}"))
    })
}

/// A Kubernetes duration of whole seconds or minutes (`5s`, `1m`), in seconds.
pub fn duration_seconds(text: &str) -> u64 {
    let (number, unit) = text.split_at(text.len().saturating_sub(1));
    let number: u64 = number
        .parse()
        .unwrap_or_else(|_| panic!("duration {text:?}"));
    match unit {
        "s" => number,
        "m" => number * 60,
        _ => panic!("duration {text:?}: only s and m are used here"),
    }
}
