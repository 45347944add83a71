//! Pagoda's OpenAI-compatible server: turns chat messages into prompt token ids (chat template +
//! tokenizer) and generated token ids back into streamed text (incremental detokenizer).
//! [`generate::TextGenerator`] ties these to an engine for blocking, one-request-at-a-time use
//! (the `pagoda-generate` command line and tests).

pub mod detokenizer;
pub mod generate;
pub mod hf_files;
pub mod template;
pub mod tokenizer;
