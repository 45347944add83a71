//! The committed tokenizer reference (`data/smollm2_tokenizer_reference.json`, made by
//! `data/gen_tokenizer_reference.py`): texts with their token ids, and rendered chat prompts.
#![allow(dead_code)]

use pagoda_text::template::ChatMessage;
use serde::Deserialize;

#[derive(Deserialize)]
pub struct Reference {
    pub samples: Vec<Sample>,
    pub chat: Vec<Chat>,
}

#[derive(Deserialize)]
pub struct Sample {
    pub name: String,
    pub text: String,
    pub ids: Vec<u32>,
    pub decoded: String,
    pub decoded_skip_special: String,
    /// transformers' ids where its GGUF conversion disagrees with the original pipeline.
    pub transformers_ids: Option<Vec<u32>>,
}

#[derive(Deserialize)]
pub struct Chat {
    pub name: String,
    pub messages: Vec<ChatMessage>,
    pub add_generation_prompt: bool,
    pub prompt: String,
}

pub fn reference() -> Reference {
    serde_json::from_str(include_str!("../data/smollm2_tokenizer_reference.json"))
        .expect("the committed reference parses")
}
