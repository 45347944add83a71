//! Structured outputs for Pagoda: a request's JSON schema, JSON-object mode, regex, choice or
//! Lark or GBNF grammar ([`OutputSpec`]) compiled by llguidance for the model's vocabulary into an engine
//! [`pagoda_engine::TokenConstraint`] ([`GrammarCompiler`]), with limits and a cache; and the
//! schemas that force tool calls ([`tool_schema`]).
//!
//! - `spec`: what a request asks for, its canonical text and kind.
//! - `gbnf`: GBNF grammars (llama.cpp's, vLLM's EBNF examples) converted to Lark.
//! - `compiler`: compilation off the runtime, time/size/concurrency limits, the cache.
//! - `matcher`: the compiled grammar and each sequence's matcher, as the engine sees them.
//! - `vocabulary`: the model's tokens as llguidance's token trie.
//! - `tool_schema`: JSON schemas for `tool_choice: "required"` and a named function.

mod cache;
mod closed_objects;
mod compiler;
mod error;
mod gbnf;
mod matcher;
mod schema_normalize;
mod spec;
pub mod tool_schema;
mod vocabulary;

pub use compiler::{CompileLimits, Compiled, GrammarCompiler};
pub use error::StructuredError;
pub use matcher::{CompiledGrammar, MaskObserver};
pub use spec::{strict_schema, OutputSpec};
