//! Schemas: `kubernetes-validate --strict` on every manifest and on kustomize's rendering of every
//! variant (`kubectl kustomize`, no cluster needed); the GPU overlay's differences from the base.

use std::collections::BTreeSet;
use std::path::Path;

use pagoda_e2e::tools::{repo_file, run_tool, run_tool_ok};
use serde_json::Value;

use crate::manifests::{
    at, container, find, k8s_path, load, load_one, read, render, str_at, K8S_DIR,
};

/// YAML files that are not Kubernetes objects, or not whole ones: checked elsewhere in this test.
const NOT_MANIFESTS: &[&str] = &[
    "kustomization.yaml",
    "base/kustomization.yaml",
    "gpu/kustomization.yaml",
    "bench/kustomization.yaml",
    "monitoring/kustomization.yaml",
    "gpu/deployment-patch.yaml",
    "inference-pool/kustomization.yaml",
    "inference-pool/kv-events-patch.yaml",
    "inference-pool/epp-plugins.yaml",
    "prometheus-adapter/values.yaml",
];

/// Kinds of custom resources, which kubernetes-validate has no schema for (it warns and passes
/// them): `servicemonitor_has_the_operators_fields` checks the ServiceMonitor,
/// `deploy_kubernetes_monitoring.rs` the PrometheusRule, `inference_pool` the InferencePool, the
/// Gateway and the HTTPRoute.
const CUSTOM_KINDS: &[&str] = &[
    "ServiceMonitor",
    "PrometheusRule",
    "InferencePool",
    "Gateway",
    "HTTPRoute",
];

/// Every `.yaml` file under `deploy/kubernetes/`, relative to it, sorted.
fn yaml_files() -> Vec<String> {
    fn walk(dir: &Path, root: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).expect("readable directory") {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                walk(&path, root, out);
            } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
                let relative = path.strip_prefix(root).expect("under the root");
                out.push(relative.display().to_string());
            }
        }
    }
    let root = repo_file(K8S_DIR);
    let mut files = Vec::new();
    walk(&root, &root, &mut files);
    files.sort();
    files
}

/// Runs `kubernetes-validate --strict` on `files` (paths from the repository root) holding
/// `objects` (each file's documents) and fails unless every object passed against a schema, or is
/// a custom resource it has no schema for.
fn validate_strict(files: &[(String, Vec<Value>)]) {
    let mut args = vec!["--strict"];
    args.extend(files.iter().map(|(file, _)| file.as_str()));
    let report = run_tool_ok("kubernetes-validate", &args);
    assert!(
        !report.contains("ERROR") && !report.contains("FATAL"),
        "{report}"
    );
    for (file, objects) in files {
        assert!(!objects.is_empty(), "{file} holds no object");
        for object in objects {
            let kind = str_at(object, "/kind");
            let name = str_at(object, "/metadata/name");
            let passed = format!(
                "INFO {file} passed for resource {}/{name}",
                kind.to_lowercase()
            );
            let no_schema = format!("WARN {file} Couldn't find schema for kind {kind} ");
            if CUSTOM_KINDS.contains(&kind) {
                assert!(report.contains(&no_schema), "{kind} in {file}:\n{report}");
            } else {
                assert!(
                    report.contains(&passed),
                    "{kind} {name} in {file}:\n{report}"
                );
            }
        }
    }
}

#[test]
fn every_manifest_passes_kubernetes_validate_strict() {
    let files = yaml_files();
    for skipped in NOT_MANIFESTS {
        assert!(files.iter().any(|f| f == skipped), "{skipped} is gone");
    }
    let manifests: Vec<(String, Vec<Value>)> = files
        .iter()
        .filter(|f| !NOT_MANIFESTS.contains(&f.as_str()))
        .map(|f| (k8s_path(f), load(f)))
        .collect();
    let names: BTreeSet<&str> = manifests.iter().map(|(f, _)| f.as_str()).collect();
    for expected in [
        "base/deployment.yaml",
        "base/hpa.yaml",
        "bench/bench-job.yaml",
    ] {
        assert!(names.contains(k8s_path(expected).as_str()), "{expected}");
    }
    validate_strict(&manifests);
}

/// The validator really is strict: a misspelt field fails it. Without this, a validator that
/// passed everything (a wrong schema directory, a lost flag) would pass the test above.
#[test]
fn kubernetes_validate_rejects_an_unknown_field() {
    let good = read("base/deployment.yaml");
    let bad = good.replacen(
        "imagePullPolicy: IfNotPresent",
        "imagePullPolicy: IfNotPresent\n          imagePulPolicy: Always",
        1,
    );
    assert_ne!(good, bad, "the mutation applies");
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("deployment.yaml");
    std::fs::write(&path, bad).expect("write");
    let output = run_tool(
        "kubernetes-validate",
        &["--strict", path.to_str().expect("UTF-8 path")],
    );
    let report = String::from_utf8_lossy(&output.stdout);
    assert!(!output.status.success(), "{report}");
    assert!(
        report.contains("ERROR") && report.contains("imagePulPolicy"),
        "{report}"
    );
}

/// Renders a variant into a file and validates every object kustomize produced.
pub fn render_and_validate(dir: &str) -> Vec<Value> {
    let objects = render(dir);
    let out = tempfile::tempdir().expect("temp dir");
    let path = out.path().join(format!("{}.yaml", dir.replace('/', "-")));
    let yaml: Vec<String> = objects
        .iter()
        .map(|o| serde_yaml::to_string(o).expect("YAML"))
        .collect();
    std::fs::write(&path, yaml.join("---\n")).expect("write");
    let file = path.to_str().expect("UTF-8 path").to_string();
    validate_strict(&[(file, objects.clone())]);
    objects
}

fn kinds(objects: &[Value]) -> BTreeSet<String> {
    objects
        .iter()
        .map(|o| format!("{}/{}", str_at(o, "/kind"), str_at(o, "/metadata/name")))
        .collect()
}

#[test]
fn every_variant_renders_with_kustomize_and_validates() {
    let server_objects: BTreeSet<String> = [
        "Deployment/pagoda-server",
        "HorizontalPodAutoscaler/pagoda-server",
        "PersistentVolumeClaim/pagoda-models",
        "PodDisruptionBudget/pagoda-server",
        "Service/pagoda-server",
        "ServiceMonitor/pagoda-server",
    ]
    .map(String::from)
    .into();
    let cpu = render_and_validate(".");
    assert_eq!(kinds(&cpu), server_objects);
    assert_eq!(kinds(&render_and_validate("gpu")), server_objects);
    let bench = render_and_validate("bench");
    let bench_objects: BTreeSet<String> = [
        "ConfigMap/pagoda-bench-script",
        "Job/pagoda-bench",
        "PersistentVolumeClaim/pagoda-bench-results",
    ]
    .map(String::from)
    .into();
    assert_eq!(kinds(&bench), bench_objects);
    // Every object is labelled part-of pagoda, and the selectors stayed as written.
    for object in cpu.iter().chain(&bench) {
        assert_eq!(
            object["metadata"]["labels"]["app.kubernetes.io/part-of"],
            "pagoda"
        );
    }
    let plain = load_one("base/deployment.yaml");
    let rendered = find(&cpu, "Deployment", "pagoda-server");
    assert_eq!(at(rendered, "/spec/selector"), at(&plain, "/spec/selector"));
    assert_eq!(
        rendered["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/part-of"],
        "pagoda"
    );
}

#[test]
fn the_bench_configmap_carries_run_bench_sh_as_it_is() {
    let bench = render("bench");
    let config_map = find(&bench, "ConfigMap", "pagoda-bench-script");
    assert_eq!(
        str_at(config_map, "/data/run-bench.sh"),
        read("bench/run-bench.sh")
    );
}

/// The GPU overlay: the base Deployment on a GPU node, with CUDA, and nothing else changed.
#[test]
fn the_gpu_overlay_changes_only_what_a_gpu_needs() {
    let cpu = render(".");
    let gpu = render("gpu");
    let cpu_deployment = find(&cpu, "Deployment", "pagoda-server");
    let gpu_deployment = find(&gpu, "Deployment", "pagoda-server");
    let server = container(gpu_deployment, "pagoda-server");
    assert_eq!(str_at(server, "/image"), "pagoda/pagoda:0.1.0-cuda");
    assert_eq!(at(server, "/resources/limits/nvidia.com~1gpu"), 1);
    let env = |c: &Value, n: &str| crate::manifests::env_value(c, n).map(str::to_string);
    assert_eq!(env(server, "PAGODA_DEVICE").as_deref(), Some("cuda"));
    assert_eq!(env(server, "PAGODA_KV_CACHE_MEMORY"), None);
    let utilization: f64 = env(server, "PAGODA_GPU_MEMORY_UTILIZATION")
        .expect("GPU memory utilization")
        .parse()
        .expect("a fraction");
    assert!(utilization > 0.0 && utilization <= 1.0);
    let spec = at(gpu_deployment, "/spec/template/spec");
    assert_eq!(at(spec, "/nodeSelector/nvidia.com~1gpu.present"), "true");
    let tolerations = at(spec, "/tolerations").as_array().expect("a list");
    assert!(tolerations
        .iter()
        .any(|t| t["key"] == "nvidia.com/gpu" && t["effect"] == "NoSchedule"));
    let shm = at(spec, "/volumes")
        .as_array()
        .expect("a list")
        .iter()
        .find(|v| v["emptyDir"]["medium"] == "Memory")
        .expect("a memory-backed emptyDir");
    let mounts = at(server, "/volumeMounts").as_array().expect("a list");
    assert!(mounts
        .iter()
        .any(|m| m["mountPath"] == "/dev/shm" && m["name"] == shm["name"]));
    let gib = |c: &Value| {
        let text = str_at(c, "/resources/limits/memory");
        text.strip_suffix("Gi")
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or_else(|| panic!("memory limit {text:?} in Gi"))
    };
    assert!(gib(server) > gib(container(cpu_deployment, "pagoda-server")));
    assert_same_apart_from_gpu(cpu_deployment, gpu_deployment);
}

/// Blanks what the GPU overlay may change; everything else must be the CPU Deployment's.
fn assert_same_apart_from_gpu(cpu: &Value, gpu: &Value) {
    let blank = |deployment: &Value| {
        let mut d = deployment.clone();
        let spec = &mut d["spec"]["template"]["spec"];
        for field in ["nodeSelector", "tolerations", "volumes"] {
            spec[field] = Value::Null;
        }
        assert_eq!(spec["containers"].as_array().map(Vec::len), Some(1));
        let server = &mut spec["containers"][0];
        for field in ["image", "env", "resources", "volumeMounts"] {
            server[field] = Value::Null;
        }
        server["startupProbe"]["failureThreshold"] = Value::Null;
        d
    };
    assert_eq!(blank(cpu), blank(gpu));
}
