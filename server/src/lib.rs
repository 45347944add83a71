//! Pagoda's OpenAI-compatible server: turns chat messages into prompt token ids (chat template +
//! tokenizer) and generated token ids back into streamed text (incremental detokenizer).

pub mod detokenizer;
pub mod generate;
pub mod template;
pub mod tokenizer;
