//! Converts a GGUF model into a Hugging Face directory (written by a teammate).
