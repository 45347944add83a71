//! Pagoda's OpenAI-compatible server: the HTTP API ([`routes`], [`openai`]) over the engine,
//! Prometheus metrics ([`metrics`]), and the text side of a model — tokenizer, chat template,
//! streaming detokenizer and stop strings. [`generate::TextGenerator`] ties these to an engine
//! for blocking, one-request-at-a-time use (the `pagoda-generate` command line and tests).

pub mod app;
pub mod args;
pub mod chat_prompt;
pub mod cli_values;
pub mod default_model;
pub mod detokenizer;
pub mod engine_health;
pub mod generate;
pub mod hf_files;
pub mod http_limits;
pub mod listener;
pub mod logging;
pub mod metrics;
pub mod middleware;
pub mod mock_engine;
pub mod mock_text;
pub mod openai;
pub mod prompt_side;
pub mod routes;
pub mod state;
pub mod stop_strings;
pub mod template;
pub mod tokenizer;
pub mod watchdog;
