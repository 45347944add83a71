//! Tiny random-weight Hugging Face models of every family (written by a teammate).
