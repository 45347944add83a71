//! `inference-pool/`: Pagoda's replicas behind the Gateway API Inference Extension (GAIE). The
//! InferencePool has no schema in kubernetes-validate, so its fields are checked here against
//! GAIE v1.5.0's API (`api/v1/inferencepool_types.go`), and what it points at against the other
//! objects: the pool selects the server pods on their HTTP port, its endpoint picker is the EPP
//! Service's ext-proc port, the EPP serves that pool with the pinned image and only the flags
//! v1.5.0 accepts, with read-only RBAC. `inference_pool_render` has the rest.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::manifests::{
    at, container, env_value, find, i64_at, load, load_one, match_labels, pod_labels, pod_spec,
    read, selects, str_at,
};
use crate::no_schema::assert_keys;

/// The GAIE release the recipe pins: the EPP image's tag and the CRDs the docs install.
pub const GAIE_RELEASE: &str = "v1.5.0";
/// InferencePool's API group (v1, since GAIE v1.0).
pub const POOL_GROUP: &str = "inference.networking.k8s.io";
/// The experimental group of InferenceObjective and InferenceModelRewrite in v1.5.0.
const X_GROUP: &str = "inference.networking.x-k8s.io";

/// The EPP's flags in v1.5.0 (`pkg/epp/server/options.go`, `pkg/common/observability/logging`),
/// without the deprecated metric flags (`--total-queued-requests-metric`…), which its `Validate`
/// refuses. The boolean ones take their value only as `--flag=value`.
const EPP_FLAGS: &[&str] = &[
    "grpc-port",
    "pool-group",
    "pool-namespace",
    "pool-name",
    "endpoint-selector",
    "endpoint-target-ports",
    "refresh-metrics-interval",
    "refresh-prometheus-metrics-interval",
    "metrics-staleness-threshold",
    "v",
    "zap-encoder",
    "zap-log-level",
    "zap-stacktrace-level",
    "zap-time-encoding",
    "metrics-port",
    "grpc-health-port",
    "cert-path",
    "config-file",
    "config-text",
];
const EPP_BOOL_FLAGS: &[&str] = &[
    "ha-enable-leader-election",
    "disable-endpoint-subset-filter",
    "tracing",
    "health-checking",
    "enable-pprof",
    "enable-cert-reload",
    "secure-serving",
    "metrics-endpoint-auth",
    "zap-devel",
];

pub fn pool() -> Value {
    load_one("inference-pool/inferencepool.yaml")
}

pub fn epp_deployment() -> Value {
    load_one("inference-pool/epp-deployment.yaml")
}

/// The EPP's flags by name, as its command line sets them. Fails on a flag v1.5.0 does not
/// have, a boolean without `=`, or a value with no flag before it.
pub fn epp_flags(epp: &Value) -> BTreeMap<String, String> {
    let args: Vec<&str> = at(epp, "/args")
        .as_array()
        .expect("a list")
        .iter()
        .map(|a| a.as_str().expect("a string"))
        .collect();
    let mut flags = BTreeMap::new();
    let mut i = 0;
    while i < args.len() {
        let flag = args[i]
            .strip_prefix("--")
            .unwrap_or_else(|| panic!("{:?} is a value with no flag", args[i]));
        let (name, value) = match flag.split_once('=') {
            Some((name, value)) => (name, value.to_string()),
            None if EPP_BOOL_FLAGS.contains(&flag) => panic!("--{flag} needs =true or =false"),
            None => {
                i += 1;
                let value = args
                    .get(i)
                    .unwrap_or_else(|| panic!("--{flag} has no value"));
                (flag, value.to_string())
            }
        };
        let known = EPP_FLAGS.contains(&name) || EPP_BOOL_FLAGS.contains(&name);
        assert!(known, "GAIE {GAIE_RELEASE}'s EPP has no flag --{name}");
        assert!(
            flags.insert(name.to_string(), value).is_none(),
            "--{name} twice"
        );
        i += 1;
    }
    flags
}

/// The port of `service` named `name`.
fn service_port<'a>(service: &'a Value, name: &str) -> &'a Value {
    at(service, "/spec/ports")
        .as_array()
        .expect("a list")
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("the Service has no port {name}"))
}

/// The number of the container port a Service's `targetPort` (a name or a number) names.
fn target_container_port(container: &Value, target: &Value) -> i64 {
    let ports = at(container, "/ports").as_array().expect("a list");
    let port = ports
        .iter()
        .find(|p| p["name"] == *target || p["containerPort"] == *target)
        .unwrap_or_else(|| panic!("targetPort {target} is not a container port"));
    i64_at(port, "/containerPort")
}

/// InferencePool has no schema here: v1.5.0's fields, required ones present, the server pods
/// (and no picker pod) selected on the port the server listens on.
#[test]
fn the_pool_selects_the_server_pods_on_their_http_port() {
    let pool = pool();
    assert_eq!(pool["apiVersion"], format!("{POOL_GROUP}/v1"));
    assert_eq!(pool["kind"], "InferencePool");
    assert_keys(&pool, &["apiVersion", "kind", "metadata", "spec"]);
    let spec = at(&pool, "/spec");
    let fields = [
        "selector",
        "targetPorts",
        "appProtocol",
        "endpointPickerRef",
    ];
    assert_keys(spec, &fields);
    for required in ["selector", "targetPorts", "endpointPickerRef"] {
        assert!(spec.get(required).is_some(), "the pool has no {required}");
    }
    assert_keys(at(spec, "/selector"), &["matchLabels"]);
    let selector = match_labels(at(spec, "/selector"));
    let server = load_one("base/deployment.yaml");
    assert_eq!(selector, match_labels(at(&server, "/spec/selector")));
    assert!(selects(&selector, pod_labels(&server)));
    assert!(
        !selects(&selector, pod_labels(&epp_deployment())),
        "the picker in its own pool"
    );
    let ports = at(spec, "/targetPorts").as_array().expect("a list");
    assert!((1..=8).contains(&ports.len()), "1 to 8 target ports");
    for port in ports {
        assert_keys(port, &["number"]);
    }
    let pagoda = container(&server, "pagoda-server");
    let http = target_container_port(pagoda, &Value::from("http"));
    assert_eq!(
        i64_at(&ports[0], "/number"),
        http,
        "the API and /metrics port"
    );
    let listen: i64 = env_value(pagoda, "PAGODA_PORT")
        .expect("PAGODA_PORT")
        .parse()
        .expect("n");
    assert_eq!(http, listen);
    let protocol = str_at(spec, "/appProtocol");
    assert!(
        ["http", "kubernetes.io/h2c"].contains(&protocol),
        "{protocol}"
    );
}

/// The pool's endpointPickerRef is the EPP Service's ext-proc port, which reaches the EPP's
/// gRPC port (v1.5.0's default, 9002, as no --grpc-port is given).
#[test]
fn the_pools_endpoint_picker_is_the_epp_services_ext_proc_port() {
    let pool = pool();
    let reference = at(&pool, "/spec/endpointPickerRef");
    assert_keys(reference, &["group", "kind", "name", "port", "failureMode"]);
    assert_eq!(reference.get("group").unwrap_or(&Value::from("")), "");
    assert_eq!(
        reference.get("kind").unwrap_or(&Value::from("Service")),
        "Service"
    );
    let service = load_one("inference-pool/epp-service.yaml");
    assert_eq!(
        str_at(reference, "/name"),
        str_at(&service, "/metadata/name")
    );
    assert_keys(at(reference, "/port"), &["number"]);
    let number = i64_at(reference, "/port/number");
    let ext_proc = service_port(&service, "grpc-ext-proc");
    assert_eq!(i64_at(ext_proc, "/port"), number);
    let epp = epp_deployment();
    let picker = container(&epp, "epp");
    let grpc_port: i64 = epp_flags(picker)
        .get("grpc-port")
        .map_or(9002, |p| p.parse().expect("a port"));
    assert_eq!(
        target_container_port(picker, at(ext_proc, "/targetPort")),
        grpc_port
    );
    let mode = str_at(reference, "/failureMode");
    assert!(["FailOpen", "FailClose"].contains(&mode), "{mode}");
    let selector = crate::manifests::string_map(at(&service, "/spec/selector"));
    assert!(selects(&selector, pod_labels(&epp)));
    assert!(!selects(
        &selector,
        pod_labels(&load_one("base/deployment.yaml"))
    ));
}

/// The EPP serves this pool (name, group, namespace from its own pod), with the pinned image and
/// the plugin file it mounts.
#[test]
fn the_epp_serves_this_pool_with_the_pinned_release() {
    let epp = epp_deployment();
    let picker = container(&epp, "epp");
    let image = format!("registry.k8s.io/gateway-api-inference-extension/epp:{GAIE_RELEASE}");
    assert_eq!(str_at(picker, "/image"), image);
    let flags = epp_flags(picker);
    let pool = pool();
    assert_eq!(
        flags.get("pool-name").map(String::as_str),
        Some(str_at(&pool, "/metadata/name"))
    );
    assert_eq!(
        flags.get("pool-group").map(String::as_str),
        Some(POOL_GROUP)
    );
    // Without --pool-namespace the EPP takes NAMESPACE: its own, where kustomize put the pool.
    assert!(!flags.contains_key("pool-namespace"));
    let namespace = env_entry(picker, "NAMESPACE");
    assert_eq!(
        str_at(namespace, "/valueFrom/fieldRef/fieldPath"),
        "metadata.namespace"
    );
    assert_eq!(epp_config_path(&epp), flags["config-file"]);
    assert_eq!(
        flags.get("tracing").map(String::as_str),
        Some("false"),
        "no OTLP collector"
    );
    assert_eq!(
        i64_at(&epp, "/spec/replicas"),
        1,
        "more need leader election"
    );
    let health: i64 = flags
        .get("grpc-health-port")
        .map_or(9003, |p| p.parse().expect("n"));
    for probe in ["livenessProbe", "readinessProbe"] {
        let port = at(picker, &format!("/{probe}/grpc/port"));
        assert_eq!(target_container_port(picker, port), health, "{probe}");
    }
    // The pins agree: the recipe's comments and the docs name the same release.
    let docs = std::fs::read_to_string(pagoda_e2e::tools::repo_file("docs/deploy-kubernetes.md"))
        .expect("the docs");
    let crds = format!("releases/download/{GAIE_RELEASE}/manifests.yaml");
    assert!(
        docs.contains(&crds),
        "the docs install other CRDs than {crds}"
    );
    for file in [
        "kustomization.yaml",
        "inferencepool.yaml",
        "epp-deployment.yaml",
    ] {
        let text = read(&format!("inference-pool/{file}"));
        assert!(text.contains(&format!("GAIE {GAIE_RELEASE}")), "{file}");
    }
}

fn env_entry<'a>(container: &'a Value, name: &str) -> &'a Value {
    at(container, "/env")
        .as_array()
        .expect("a list")
        .iter()
        .find(|e| e["name"] == name)
        .unwrap_or_else(|| panic!("no variable {name}"))
}

/// Where the EPP finds its plugins: the mount of the generated ConfigMap, and its one file.
pub fn epp_config_path(epp: &Value) -> String {
    let kustomization = load_one("inference-pool/kustomization.yaml");
    let generator = at(&kustomization, "/configMapGenerator/0");
    let files = at(generator, "/files").as_array().expect("a list");
    assert_eq!(files.len(), 1);
    let volume = at(pod_spec(epp), "/volumes")
        .as_array()
        .expect("a list")
        .iter()
        .find(|v| v["configMap"]["name"] == generator["name"])
        .expect("a volume of the generated ConfigMap");
    let mount = at(container(epp, "epp"), "/volumeMounts")
        .as_array()
        .expect("a list")
        .iter()
        .find(|m| m["name"] == volume["name"])
        .expect("the plugins volume is mounted");
    format!(
        "{}/{}",
        str_at(mount, "/mountPath"),
        files[0].as_str().expect("a name")
    )
}

/// The EPP reads pods and its pool, and InferenceObjectives, as v1.5.0's chart grants, and
/// writes nothing; its pod has the token it needs for that, and is otherwise locked down.
#[test]
fn the_epp_reads_pods_and_pools_and_runs_locked_down() {
    let rbac = load("inference-pool/epp-rbac.yaml");
    let account = find(&rbac, "ServiceAccount", "pagoda-epp");
    let role = find(&rbac, "Role", "pagoda-epp");
    let binding = find(&rbac, "RoleBinding", "pagoda-epp");
    let epp = epp_deployment();
    let spec = pod_spec(&epp);
    assert_eq!(
        at(spec, "/serviceAccountName"),
        at(account, "/metadata/name")
    );
    assert_eq!(at(spec, "/automountServiceAccountToken"), true);
    assert_eq!(at(binding, "/roleRef/kind"), "Role");
    assert_eq!(at(binding, "/roleRef/name"), at(role, "/metadata/name"));
    let subject = at(binding, "/subjects/0");
    assert_eq!(at(subject, "/kind"), "ServiceAccount");
    assert_eq!(at(subject, "/name"), at(account, "/metadata/name"));
    let rules = at(role, "/rules").as_array().expect("a list");
    for (group, resource) in [
        ("", "pods"),
        (POOL_GROUP, "inferencepools"),
        (X_GROUP, "inferenceobjectives"),
    ] {
        let granted = rules.iter().any(|r| {
            let has = |field: &str, v: &str| {
                r[field]
                    .as_array()
                    .is_some_and(|a| a.iter().any(|x| x == v))
            };
            has("apiGroups", group)
                && has("resources", resource)
                && ["get", "watch", "list"].iter().all(|v| has("verbs", v))
        });
        assert!(granted, "the EPP cannot watch {resource}");
    }
    for rule in rules {
        for verb in at(rule, "/verbs").as_array().expect("a list") {
            assert!(
                ["get", "watch", "list"].contains(&verb.as_str().expect("a verb")),
                "{rule}"
            );
        }
    }
    assert_eq!(at(spec, "/enableServiceLinks"), false);
    assert_eq!(at(spec, "/securityContext/runAsNonRoot"), true);
    let picker = container(&epp, "epp");
    let security = at(picker, "/securityContext");
    assert_eq!(at(security, "/allowPrivilegeEscalation"), false);
    assert_eq!(at(security, "/readOnlyRootFilesystem"), true);
    assert_eq!(
        at(security, "/capabilities/drop"),
        &serde_json::json!(["ALL"])
    );
    for needed in ["/resources/requests/cpu", "/resources/limits/memory"] {
        assert!(picker.pointer(needed).is_some(), "no {needed}");
    }
}
