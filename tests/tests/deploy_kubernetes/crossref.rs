//! The objects agree with each other, and with the server's behaviour as docs/server.md states it.

use serde_json::Value;

use crate::manifests::{
    at, container, containers, env_value, find, i64_at, load_one, match_labels, pod_labels,
    pod_spec, read, render, selects, shutdown_timeout, str_at,
};

fn cpu_deployment() -> Value {
    load_one("base/deployment.yaml")
}

/// The Deployment of both variants: the plain CPU file, and the GPU overlay as kustomize renders it.
fn both_deployments() -> Vec<(&'static str, Value)> {
    let gpu = render("gpu");
    vec![
        ("cpu", cpu_deployment()),
        ("gpu", find(&gpu, "Deployment", "pagoda-server").clone()),
    ]
}

#[test]
fn the_service_selects_the_server_pods_of_both_variants_and_no_bench_pod() {
    let service = load_one("base/service.yaml");
    let selector = crate::manifests::string_map(at(&service, "/spec/selector"));
    for (variant, deployment) in both_deployments() {
        assert!(selects(&selector, pod_labels(&deployment)), "{variant}");
        // The Deployment's own selector is the Service's: same pods, no more, no fewer.
        assert_eq!(
            match_labels(at(&deployment, "/spec/selector")),
            selector,
            "{variant}"
        );
    }
    let job = load_one("bench/bench-job.yaml");
    assert!(
        !selects(&selector, pod_labels(&job)),
        "bench pods would get traffic"
    );
    let deployment = cpu_deployment();
    let server = container(&deployment, "pagoda-server");
    let ports = at(server, "/ports").as_array().expect("a list");
    for port in at(&service, "/spec/ports").as_array().expect("a list") {
        let target = &port["targetPort"];
        let found = ports
            .iter()
            .any(|p| p["name"] == *target || p["containerPort"] == *target);
        assert!(
            found,
            "the Service targets {target}, which the container does not declare"
        );
    }
}

/// A probe's port: the container port it names, or its number.
fn probe_port(container: &Value, port: &Value) -> i64 {
    let ports = at(container, "/ports").as_array().expect("a list");
    let declared = ports
        .iter()
        .find(|p| p["name"] == *port || p["containerPort"] == *port)
        .unwrap_or_else(|| panic!("probe port {port} is not a declared container port"));
    i64_at(declared, "/containerPort")
}

#[test]
fn probes_ask_health_on_the_servers_port_and_tolerate_the_drain() {
    for (variant, deployment) in both_deployments() {
        let server = container(&deployment, "pagoda-server");
        let listen: i64 = env_value(server, "PAGODA_PORT")
            .unwrap_or("8000")
            .parse()
            .expect("a port");
        for probe in ["startupProbe", "readinessProbe", "livenessProbe"] {
            let get = at(server, &format!("/{probe}/httpGet"));
            assert_eq!(str_at(get, "/path"), "/health", "{variant} {probe}");
            assert_eq!(
                probe_port(server, at(get, "/port")),
                listen,
                "{variant} {probe}"
            );
        }
        // /health answers 503 while draining: liveness must not restart a draining server.
        let liveness = at(server, "/livenessProbe");
        let tolerated = i64_at(liveness, "/periodSeconds") * i64_at(liveness, "/failureThreshold");
        assert!(
            tolerated as f64 > shutdown_timeout(server),
            "{variant}: liveness fails after {tolerated} s, within the drain"
        );
        // The startup probe covers a model load of minutes; readiness reacts within seconds.
        let startup = at(server, "/startupProbe");
        let load = i64_at(startup, "/periodSeconds") * i64_at(startup, "/failureThreshold");
        assert!(load >= 300, "{variant}: {load} s to load the model");
        let readiness = at(server, "/readinessProbe");
        let react = i64_at(readiness, "/periodSeconds") * i64_at(readiness, "/failureThreshold");
        assert!(react <= 15, "{variant}: readiness takes {react} s to react");
    }
}

/// SIGTERM comes after the preStop sleep; then the server drains for its shutdown timeout. The
/// grace period must cover both, or SIGKILL cuts requests the drain would have finished.
#[test]
fn the_grace_period_outlasts_the_prestop_sleep_and_the_drain() {
    for (variant, deployment) in both_deployments() {
        let spec = pod_spec(&deployment);
        let grace = i64_at(spec, "/terminationGracePeriodSeconds") as f64;
        let server = container(&deployment, "pagoda-server");
        let pre_stop = i64_at(server, "/lifecycle/preStop/sleep/seconds") as f64;
        let drain = shutdown_timeout(server);
        assert!(drain > 0.0, "{variant}: a drain of {drain} s");
        assert!(
            grace >= pre_stop + drain + 5.0,
            "{variant}: grace {grace} s < preStop {pre_stop} s + drain {drain} s + 5 s to exit"
        );
    }
}

#[test]
fn the_hpa_scales_the_deployment_on_the_adapters_metric() {
    let hpa = load_one("base/hpa.yaml");
    let deployment = cpu_deployment();
    assert_eq!(
        at(&hpa, "/spec/scaleTargetRef"),
        &serde_json::json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "name": str_at(&deployment, "/metadata/name")})
    );
    let metrics = at(&hpa, "/spec/metrics").as_array().expect("a list");
    assert_eq!(metrics.len(), 1);
    assert_eq!(str_at(&metrics[0], "/type"), "Pods");
    let values = load_one("prometheus-adapter/values.yaml");
    let served = str_at(&values, "/rules/custom/0/name/as");
    assert_eq!(str_at(&metrics[0], "/pods/metric/name"), served);
    assert_eq!(str_at(&metrics[0], "/pods/target/type"), "AverageValue");
    let target: f64 = str_at(&metrics[0], "/pods/target/averageValue")
        .parse()
        .expect("a plain number of waiting requests");
    assert!(
        target >= 1.0,
        "a target below one waiting request never settles"
    );
    let (min, max) = (
        i64_at(&hpa, "/spec/minReplicas"),
        i64_at(&hpa, "/spec/maxReplicas"),
    );
    let replicas = i64_at(&deployment, "/spec/replicas");
    assert!(min <= replicas && replicas <= max && min < max);
    // Up at once (a new replica needs its model load first), down slowly.
    let up = i64_at(&hpa, "/spec/behavior/scaleUp/stabilizationWindowSeconds");
    let down = i64_at(&hpa, "/spec/behavior/scaleDown/stabilizationWindowSeconds");
    assert!(up < down, "scale-up window {up} s, scale-down {down} s");
}

#[test]
fn the_pdb_covers_the_server_pods_and_keeps_one_serving() {
    let pdb = load_one("base/pdb.yaml");
    let deployment = cpu_deployment();
    let selector = match_labels(at(&pdb, "/spec/selector"));
    assert_eq!(selector, match_labels(at(&deployment, "/spec/selector")));
    assert!(selects(&selector, pod_labels(&deployment)));
    let unavailable = i64_at(&pdb, "/spec/maxUnavailable");
    let min_replicas = i64_at(&load_one("base/hpa.yaml"), "/spec/minReplicas");
    assert!(
        unavailable >= 1,
        "a PDB that allows no eviction blocks every node drain"
    );
    assert!(
        unavailable < min_replicas,
        "a drain could take every replica"
    );
}

#[test]
fn the_deployment_serves_the_model_from_the_read_only_volume() {
    let deployment = cpu_deployment();
    assert_eq!(i64_at(&deployment, "/spec/replicas"), 2);
    assert_eq!(
        i64_at(&deployment, "/spec/strategy/rollingUpdate/maxUnavailable"),
        0
    );
    let server = container(&deployment, "pagoda-server");
    assert_eq!(str_at(server, "/image"), "pagoda/pagoda:0.1.0-cpu");
    assert!(
        server.get("command").is_none(),
        "the image's entrypoint is pagoda-server"
    );
    let http = at(server, "/ports/0");
    assert_eq!(
        (str_at(http, "/name"), i64_at(http, "/containerPort")),
        ("http", 8000)
    );
    let model = env_value(server, "PAGODA_MODEL").expect("PAGODA_MODEL");
    let mount = at(server, "/volumeMounts")
        .as_array()
        .expect("a list")
        .iter()
        .find(|m| model.starts_with(&format!("{}/", str_at(m, "/mountPath"))))
        .unwrap_or_else(|| panic!("no volume holds {model}"));
    assert_eq!(at(mount, "/readOnly"), true);
    let volume = find_volume(pod_spec(&deployment), str_at(mount, "/name"));
    assert_eq!(at(volume, "/persistentVolumeClaim/readOnly"), true);
    let claim = load_one("base/models-pvc.yaml");
    assert_eq!(
        str_at(volume, "/persistentVolumeClaim/claimName"),
        str_at(&claim, "/metadata/name")
    );
    for spread in at(pod_spec(&deployment), "/topologySpreadConstraints")
        .as_array()
        .expect("a list")
    {
        let selector = match_labels(at(spread, "/labelSelector"));
        assert!(selects(&selector, pod_labels(&deployment)), "{spread}");
    }
}

fn find_volume<'a>(spec: &'a Value, name: &str) -> &'a Value {
    at(spec, "/volumes")
        .as_array()
        .expect("a list")
        .iter()
        .find(|v| v["name"] == name)
        .unwrap_or_else(|| panic!("no volume {name}"))
}

#[test]
fn the_bench_job_is_indexed_and_runs_the_generated_script() {
    let job = load_one("bench/bench-job.yaml");
    assert_eq!(str_at(&job, "/spec/completionMode"), "Indexed");
    let completions = i64_at(&job, "/spec/completions");
    assert_eq!(i64_at(&job, "/spec/parallelism"), completions);
    assert!(completions >= 2);
    assert_eq!(i64_at(&job, "/spec/backoffLimit"), 0);
    let bench = container(&job, "pagoda-bench");
    let pods: i64 = env_value(bench, "BENCH_NUM_PODS")
        .expect("BENCH_NUM_PODS")
        .parse()
        .expect("n");
    assert_eq!(pods, completions, "BENCH_NUM_PODS is the number of pods");
    // The command runs run-bench.sh from the volume of the ConfigMap kustomize generates.
    let kustomization = load_one("bench/kustomization.yaml");
    let generator = at(&kustomization, "/configMapGenerator/0");
    assert_eq!(
        at(generator, "/files"),
        &serde_json::json!(["run-bench.sh"])
    );
    assert_eq!(at(generator, "/options/disableNameSuffixHash"), true);
    let script_volume = at(pod_spec(&job), "/volumes")
        .as_array()
        .expect("a list")
        .iter()
        .find(|v| v["configMap"]["name"] == at(generator, "/name").clone())
        .expect("a volume of the generated ConfigMap");
    let mount = at(bench, "/volumeMounts")
        .as_array()
        .expect("a list")
        .iter()
        .find(|m| m["name"] == script_volume["name"])
        .expect("the script volume is mounted");
    let script = format!("{}/run-bench.sh", str_at(mount, "/mountPath"));
    assert_eq!(
        at(bench, "/command"),
        &serde_json::json!(["/bin/sh", script])
    );
    assert!(read("bench/run-bench.sh").starts_with("#!/bin/sh\n"));
    assert_bench_targets_the_service(&job);
}

/// The bench pods reach the Service by name and port, and mount the claims that exist.
fn assert_bench_targets_the_service(job: &Value) {
    let bench = container(job, "pagoda-bench");
    let service = load_one("base/service.yaml");
    let url = format!(
        "http://{}:{}",
        str_at(&service, "/metadata/name"),
        i64_at(&service, "/spec/ports/0/port")
    );
    assert_eq!(env_value(bench, "BENCH_BASE_URL"), Some(url.as_str()));
    let spec = pod_spec(job);
    let results = load_one("bench/results-pvc.yaml");
    let models = load_one("base/models-pvc.yaml");
    for claim in [&results, &models] {
        let name = str_at(claim, "/metadata/name");
        let used = at(spec, "/volumes")
            .as_array()
            .expect("a list")
            .iter()
            .any(|v| v["persistentVolumeClaim"]["claimName"] == name);
        assert!(used, "the Job does not mount {name}");
    }
    let tokenizer = env_value(bench, "BENCH_TOKENIZER").expect("BENCH_TOKENIZER");
    let server = cpu_deployment();
    assert_eq!(
        Some(tokenizer),
        env_value(container(&server, "pagoda-server"), "PAGODA_MODEL"),
        "the bench counts prompt tokens with the served model's tokenizer"
    );
}

/// Every pod these recipes start runs as uid 10001, unprivileged, read-only, with no API token
/// and no service-link variables (a Service's PAGODA_… variables would reach the server).
#[test]
fn every_pod_runs_locked_down() {
    let mut workloads: Vec<Value> = both_deployments().into_iter().map(|(_, d)| d).collect();
    for file in [
        "bench/bench-job.yaml",
        "model-loader.yaml",
        "bench/results-reader.yaml",
    ] {
        workloads.push(load_one(file));
    }
    for workload in &workloads {
        let name = str_at(workload, "/metadata/name");
        let spec = pod_spec(workload);
        assert_eq!(at(spec, "/automountServiceAccountToken"), false, "{name}");
        assert_eq!(at(spec, "/enableServiceLinks"), false, "{name}");
        let pod = at(spec, "/securityContext");
        assert_eq!(at(pod, "/runAsNonRoot"), true, "{name}");
        assert_eq!(i64_at(pod, "/runAsUser"), 10001, "{name}");
        assert_eq!(i64_at(pod, "/runAsGroup"), 10001, "{name}");
        assert_eq!(
            str_at(pod, "/seccompProfile/type"),
            "RuntimeDefault",
            "{name}"
        );
        for c in containers(workload) {
            let security = at(c, "/securityContext");
            assert_eq!(at(security, "/allowPrivilegeEscalation"), false, "{name}");
            assert_eq!(at(security, "/readOnlyRootFilesystem"), true, "{name}");
            assert_eq!(
                at(security, "/capabilities/drop"),
                &serde_json::json!(["ALL"])
            );
            for needed in ["/resources/requests/cpu", "/resources/limits/memory"] {
                assert!(c.pointer(needed).is_some(), "{name}: no {needed}");
            }
        }
    }
}
