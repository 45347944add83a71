//! KV-cache events for routers that route by where a prefix is cached (llm-d's precise prefix
//! scorer, Dynamo's KV router): vLLM's `--kv-events-config`, wire format and ZMQ protocol.

pub mod config;
pub mod publisher;
pub mod wire;

pub use config::KvEventsConfig;
