//! Runs a real Prometheus (Debian package `prometheus`) on a free port with a configuration the
//! test writes, and queries it over its HTTP API.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::tools::tool;

/// A running Prometheus; killed when dropped. Its data lives in a temporary directory.
#[derive(Debug)]
pub struct PrometheusProcess {
    child: Child,
    pub base_url: String,
    client: reqwest::Client,
    _data_dir: tempfile::TempDir,
}

/// One series of a query result: its labels and its (time, value) samples.
#[derive(Debug, Clone)]
pub struct Series {
    pub labels: serde_json::Map<String, Value>,
    pub samples: Vec<(f64, f64)>,
}

impl Series {
    pub fn label(&self, name: &str) -> &str {
        self.labels.get(name).and_then(Value::as_str).unwrap_or("")
    }
}

/// A port nothing listens on now (bound, then released).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port()
}

impl PrometheusProcess {
    /// Starts `prometheus` with the YAML configuration `config` (written into its data
    /// directory; rule file paths in it should be absolute) and waits until it is ready.
    pub async fn start(config: &str) -> Self {
        let data_dir = tempfile::tempdir().expect("a temporary directory");
        let config_path = data_dir.path().join("prometheus.yml");
        std::fs::write(&config_path, config).expect("config written");
        let port = free_port();
        let child = Command::new(tool("prometheus"))
            .arg(format!("--config.file={}", config_path.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                data_dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--log.level=warn")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("prometheus starts");
        let prometheus = Self {
            child,
            base_url: format!("http://127.0.0.1:{port}"),
            client: reqwest::Client::new(),
            _data_dir: data_dir,
        };
        prometheus.wait_ready(Duration::from_secs(30)).await;
        prometheus
    }

    async fn wait_ready(&self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            let ready = self
                .client
                .get(format!("{}/-/ready", self.base_url))
                .send()
                .await;
            if ready.is_ok_and(|response| response.status().is_success()) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        panic!(
            "prometheus at {} was not ready within {timeout:?}",
            self.base_url
        );
    }

    /// GET /api/v1/<path> with `params`; panics unless Prometheus answers `status: success`.
    pub async fn api(&self, path: &str, params: &[(&str, String)]) -> Value {
        let response = self
            .client
            .get(format!("{}/api/v1/{path}", self.base_url))
            .query(params)
            .send()
            .await
            .unwrap_or_else(|e| panic!("prometheus {path}: {e}"));
        let body: Value = response.json().await.expect("prometheus answers JSON");
        assert_eq!(
            body["status"], "success",
            "prometheus {path} {params:?}: {body}"
        );
        body["data"].clone()
    }

    /// Evaluates `expr` at every `step` from `start` to `end` (Unix seconds), as Grafana does.
    pub async fn query_range(&self, expr: &str, start: f64, end: f64, step: &str) -> Vec<Series> {
        let params = [
            ("query", expr.to_string()),
            ("start", format!("{start:.3}")),
            ("end", format!("{end:.3}")),
            ("step", step.to_string()),
        ];
        let data = self.api("query_range", &params).await;
        parse_matrix(&data["result"])
    }

    /// Evaluates `expr` now.
    pub async fn query(&self, expr: &str) -> Vec<Series> {
        let data = self.api("query", &[("query", expr.to_string())]).await;
        let result = data["result"].as_array().cloned().unwrap_or_default();
        result
            .into_iter()
            .map(|item| Series {
                labels: item["metric"].as_object().cloned().unwrap_or_default(),
                samples: vec![sample(&item["value"])],
            })
            .collect()
    }

    /// The label sets of the series matching `selector` (`/api/v1/series`).
    pub async fn series(&self, selector: &str) -> Vec<serde_json::Map<String, Value>> {
        let data = self
            .api("series", &[("match[]", selector.to_string())])
            .await;
        let items = data.as_array().cloned().unwrap_or_default();
        items
            .into_iter()
            .filter_map(|item| item.as_object().cloned())
            .collect()
    }

    /// The rule groups Prometheus loaded (`/api/v1/rules`).
    pub async fn rule_groups(&self) -> Vec<Value> {
        let data = self.api("rules", &[]).await;
        data["groups"].as_array().cloned().unwrap_or_default()
    }

    /// Waits until every target of the configuration has been scraped at least once.
    pub async fn wait_for_scrapes(&self, num_targets: usize, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            let scraped = self.query("up").await.len();
            if scraped >= num_targets {
                return;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        panic!("prometheus did not scrape {num_targets} targets within {timeout:?}");
    }
}

fn sample(pair: &Value) -> (f64, f64) {
    let time = pair[0].as_f64().unwrap_or(f64::NAN);
    let value = pair[1]
        .as_str()
        .and_then(|v| v.parse().ok())
        .unwrap_or(f64::NAN);
    (time, value)
}

fn parse_matrix(result: &Value) -> Vec<Series> {
    let items = result.as_array().cloned().unwrap_or_default();
    items
        .into_iter()
        .map(|item| Series {
            labels: item["metric"].as_object().cloned().unwrap_or_default(),
            samples: item["values"]
                .as_array()
                .map(|values| values.iter().map(sample).collect())
                .unwrap_or_default(),
        })
        .collect()
}

/// Unix time now, in seconds.
pub fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |elapsed| elapsed.as_secs_f64())
}

/// An absolute path as a YAML string (for rule_files entries).
pub fn yaml_path(path: &Path) -> String {
    format!("{:?}", path.display().to_string())
}

impl Drop for PrometheusProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
