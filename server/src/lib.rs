//! Pagoda's OpenAI-compatible server: the HTTP API ([`routes`], [`openai`]) over the engine and
//! the text side of a model (the `pagoda-text` crate: tokenizer, chat template, streaming
//! detokenizer and stop strings), with Prometheus metrics ([`metrics`]).
//! [`generate::TextGenerator`] ties the text side to an engine for blocking,
//! one-request-at-a-time use (the `pagoda-generate` command line and tests).

pub mod admission;
pub mod app;
pub mod args;
pub mod chat_prompt;
pub mod chat_template_arg;
pub mod cli_values;
pub mod cors;
pub mod engine_health;
pub mod generate;
pub mod generation_defaults;
pub mod http_limits;
pub mod kv_events;
pub mod listener;
pub mod logging;
pub mod lora;
pub mod lora_routes;
pub mod lora_setup;
pub mod metrics;
pub mod middleware;
pub mod mock_args;
pub mod mock_engine;
pub mod mock_text;
pub mod openai;
pub mod openapi;
pub mod prompt_side_setup;
pub mod routes;
pub mod state;
pub mod timeline;
pub mod tls;
pub mod tool_call_config;
pub mod unix_time;
pub mod vllm_compat_args;
pub mod watchdog;
