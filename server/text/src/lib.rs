//! Pagoda's text side of a model, apart from the engine and the HTTP server: the tokenizer
//! ([`tokenizer`], rebuilt from a GGUF header's [`tokenizer_spec`] or read from a Hugging Face
//! `tokenizer.json`), the chat template ([`template`]), the Hugging Face tokenizer files
//! ([`hf_files`]), all of these for one model at once ([`prompt_side`]), and the way back from
//! token ids to text: the streaming [`detokenizer`], [`stop_strings`], and the [`reasoning`] and
//! [`tool_calls`] in the output.

pub mod detokenizer;
pub mod hf_files;
pub mod prompt_side;
pub mod reasoning;
pub mod stop_strings;
pub mod template;
pub mod tokenizer;
pub mod tokenizer_spec;
pub mod tool_calls;
