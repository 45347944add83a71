//! `--kv-events-config`: vLLM's JSON object (`KVEventsConfig`), field for field, so that a
//! deployment's flag runs unchanged. Unknown fields and values this server cannot honour are
//! refused by name.

use anyhow::{bail, Context};
use serde::Deserialize;

/// The queue depth vLLM documents as `hwm`; the ZMQ library holds this many messages per
/// subscriber (fixed), so another value cannot be honoured.
pub const ZMQ_QUEUE_MESSAGES_PER_SUBSCRIBER: usize = 100_000;

/// Where KV-cache events go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Publisher {
    /// Nowhere (events off).
    Null,
    /// A ZMQ PUB socket, with an optional ROUTER socket for replays.
    Zmq,
}

/// vLLM's `KVEventsConfig`, with its defaults.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct KvEventsConfig {
    pub enable_kv_cache_events: bool,
    /// `None`: `zmq` when events are enabled, else `null` (vLLM's rule).
    pub publisher: Option<Publisher>,
    /// The PUB socket: bound when it names a wildcard host (`*`, `::`) or is `ipc://`,
    /// otherwise connected (to a collector that binds).
    pub endpoint: String,
    /// The ROUTER socket that answers replay requests (always bound).
    pub replay_endpoint: Option<String>,
    /// How many of the latest batches a replay can return.
    pub buffer_steps: usize,
    /// Messages a subscriber may fall behind before it loses some (see
    /// `ZMQ_QUEUE_MESSAGES_PER_SUBSCRIBER`).
    pub hwm: usize,
    /// Batches waiting for the publisher before the engine drops new ones (and counts them).
    pub max_queue_size: usize,
    /// The first frame of every message; subscribers filter on its prefix.
    pub topic: String,
}

impl Default for KvEventsConfig {
    fn default() -> Self {
        Self {
            enable_kv_cache_events: false,
            publisher: None,
            endpoint: "tcp://*:5557".into(),
            replay_endpoint: None,
            buffer_steps: 10_000,
            hwm: ZMQ_QUEUE_MESSAGES_PER_SUBSCRIBER,
            max_queue_size: 100_000,
            topic: String::new(),
        }
    }
}

impl KvEventsConfig {
    /// Parses and checks the flag's JSON.
    pub fn parse(text: &str) -> anyhow::Result<Self> {
        let config: Self = serde_json::from_str(text).context(
            "--kv-events-config must be a JSON object with vLLM's KVEventsConfig fields",
        )?;
        config.check()?;
        Ok(config)
    }

    /// Whether events are published anywhere.
    pub fn publishes(&self) -> bool {
        self.publisher() == Publisher::Zmq
    }

    pub fn publisher(&self) -> Publisher {
        self.publisher.unwrap_or(if self.enable_kv_cache_events {
            Publisher::Zmq
        } else {
            Publisher::Null
        })
    }

    fn check(&self) -> anyhow::Result<()> {
        if self.publisher == Some(Publisher::Zmq) && !self.enable_kv_cache_events {
            bail!("--kv-events-config: publisher \"zmq\" needs \"enable_kv_cache_events\": true");
        }
        if !self.publishes() {
            return Ok(());
        }
        check_endpoint("endpoint", &self.endpoint)?;
        if let Some(replay) = &self.replay_endpoint {
            check_endpoint("replay_endpoint", replay)?;
        }
        if self.max_queue_size == 0 {
            bail!("--kv-events-config: max_queue_size must be at least 1");
        }
        if self.hwm != ZMQ_QUEUE_MESSAGES_PER_SUBSCRIBER {
            bail!(
                "--kv-events-config: hwm {} is not supported: the ZMQ publisher (the pure-Rust \
                 zeromq crate) holds {ZMQ_QUEUE_MESSAGES_PER_SUBSCRIBER} messages per subscriber, \
                 vLLM's default; leave hwm out",
                self.hwm
            );
        }
        Ok(())
    }
}

/// vLLM's rule: a wildcard host or a local transport is bound, anything else connected to.
pub fn binds(endpoint: &str) -> bool {
    endpoint.contains('*') || endpoint.contains("::") || endpoint.starts_with("ipc://")
}

fn check_endpoint(field: &str, endpoint: &str) -> anyhow::Result<()> {
    let Some((scheme, rest)) = endpoint.split_once("://") else {
        bail!(
            "--kv-events-config: {field} {endpoint:?} must look like tcp://HOST:PORT or ipc://PATH"
        );
    };
    match scheme {
        "tcp" => {
            let port = rest.rsplit_once(':').map(|(_, port)| port);
            if port.and_then(|p| p.parse::<u16>().ok()).is_none() {
                bail!("--kv-events-config: {field} {endpoint:?} needs a port (tcp://HOST:PORT)");
            }
        }
        "ipc" if !rest.is_empty() => {}
        "inproc" => bail!(
            "--kv-events-config: {field} {endpoint:?}: inproc:// reaches only this process; \
             use tcp:// or ipc://"
        ),
        _ => {
            bail!("--kv-events-config: {field} {endpoint:?}: only tcp:// and ipc:// are supported")
        }
    }
    Ok(())
}

/// The address the ZMQ library binds: its TCP transport takes an IP, so vLLM's `*` wildcard
/// becomes `0.0.0.0` (and `[::]` / `::` stays an IPv6 wildcard).
pub fn bind_address(endpoint: &str) -> String {
    endpoint.replacen("tcp://*:", "tcp://0.0.0.0:", 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vllm_defaults_and_the_publisher_rule() {
        let off = KvEventsConfig::parse("{}").expect("valid");
        assert_eq!(off, KvEventsConfig::default());
        assert!(!off.publishes());
        let on = KvEventsConfig::parse(r#"{"enable_kv_cache_events": true}"#).expect("valid");
        assert_eq!(on.publisher(), Publisher::Zmq);
        assert_eq!(on.endpoint, "tcp://*:5557");
        assert!(binds(&on.endpoint));
        assert!(!binds("tcp://collector:5557"));
        assert_eq!(bind_address(&on.endpoint), "tcp://0.0.0.0:5557");
        let null =
            KvEventsConfig::parse(r#"{"enable_kv_cache_events": true, "publisher": "null"}"#);
        assert!(!null.expect("valid").publishes());
        let full = KvEventsConfig::parse(
            r#"{"enable_kv_cache_events": true, "publisher": "zmq", "endpoint": "tcp://*:6000",
                "replay_endpoint": "tcp://*:6001", "buffer_steps": 5, "hwm": 100000,
                "max_queue_size": 7, "topic": "kv@pod"}"#,
        )
        .expect("valid");
        assert_eq!(full.replay_endpoint.as_deref(), Some("tcp://*:6001"));
        assert_eq!((full.buffer_steps, full.max_queue_size), (5, 7));
        assert_eq!(full.topic, "kv@pod");
    }

    #[test]
    fn refusals_name_what_is_wrong() {
        let cases = [
            (r#"{"enable_kv_cache_events": true, "bogus": 1}"#, "bogus"),
            (
                r#"{"enable_kv_cache_events": true, "publisher": "kafka"}"#,
                "kafka",
            ),
            (r#"{"publisher": "zmq"}"#, "enable_kv_cache_events"),
            (
                r#"{"enable_kv_cache_events": true, "endpoint": "localhost:5557"}"#,
                "tcp://",
            ),
            (
                r#"{"enable_kv_cache_events": true, "endpoint": "tcp://*"}"#,
                "port",
            ),
            (
                r#"{"enable_kv_cache_events": true, "endpoint": "inproc://x"}"#,
                "inproc",
            ),
            (
                r#"{"enable_kv_cache_events": true, "max_queue_size": 0}"#,
                "max_queue_size",
            ),
            (r#"{"enable_kv_cache_events": true, "hwm": 10}"#, "hwm 10"),
            ("[1]", "JSON object"),
        ];
        for (text, needle) in cases {
            let error = format!("{:#}", KvEventsConfig::parse(text).expect_err("refused"));
            assert!(error.contains(needle), "{text}: {error}");
        }
    }
}
