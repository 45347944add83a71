//! Hugging Face tokenizer files, both ways.
//!
//! * Reading a model directory ([`HfTokenizerFiles::read`]), where transformers looks: the
//!   tokenizer in `tokenizer.json`; the chat template in `chat_template.jinja`, else in
//!   `tokenizer_config.json`'s `chat_template` (a string, or a list of `{name, template}` of which
//!   "default" is used); the BOS/EOS texts in `tokenizer_config.json`, else in
//!   `special_tokens_map.json` (each a string or a `{"content": ...}` object); and the ids of
//!   `generation_config.json`'s `eos_token_id` (a number or a list).
//! * Writing ([`write_tokenizer_files`]): a tokenizer and chat template as `tokenizer.json` and
//!   `tokenizer_config.json`, so a GGUF model's tokenizer can sit in a Hugging Face directory
//!   (the GGUF → Hugging Face bridge of the tests).

use std::path::Path;

use serde_json::{json, Value};
use tokenizers::processors::template::TemplateProcessing;

use crate::tokenizer::{Result, TextTokenizer, TokenizerError};

/// What a Hugging Face model directory says about turning chats into token ids and back.
#[derive(Debug)]
pub struct HfTokenizerFiles {
    pub tokenizer: TextTokenizer,
    /// The Jinja chat template; `None` when the directory has none.
    pub chat_template: Option<String>,
    pub bos_token: Option<String>,
    pub eos_token: Option<String>,
    /// `eos_token_id` of `generation_config.json`: ids that end generation too.
    pub generation_eos_token_ids: Vec<u32>,
}

impl HfTokenizerFiles {
    /// Reads the tokenizer files of `dir`; `tokenizer.json` is required, the rest optional.
    pub fn read(dir: &Path) -> Result<Self> {
        let tokenizer = TextTokenizer::from_tokenizer_json(dir.join("tokenizer.json"))?;
        let config = read_json(&dir.join("tokenizer_config.json"))?.unwrap_or(Value::Null);
        let special_map = read_json(&dir.join("special_tokens_map.json"))?.unwrap_or(Value::Null);
        let token = |key: &str| token_text(&config[key]).or_else(|| token_text(&special_map[key]));
        Ok(Self {
            chat_template: chat_template(dir, &config)?,
            bos_token: token("bos_token"),
            eos_token: token("eos_token"),
            generation_eos_token_ids: generation_eos_ids(&dir.join("generation_config.json")),
            tokenizer,
        })
    }
}

/// Writes `out_dir/tokenizer.json` and `out_dir/tokenizer_config.json` for `tokenizer`.
///
/// A tokenizer that prepends BOS itself (GGUF `add_bos_token`) gets a post-processor that does
/// it, as Hugging Face tokenizers do. The EOS written is the tokenizer's first end-of-generation
/// id (the model's EOS where it names one).
pub fn write_tokenizer_files(
    tokenizer: &TextTokenizer,
    chat_template: Option<&str>,
    out_dir: &Path,
) -> Result<()> {
    std::fs::create_dir_all(out_dir).map_err(|e| file_error(out_dir, e))?;
    let bos = tokenizer
        .bos_token_id()
        .and_then(|id| Some((tokenizer.id_to_token(id)?, id)));
    let add_bos = match &bos {
        Some((_, id)) => tokenizer.encode("", true)?.first() == Some(id),
        None => false,
    };
    let mut inner = tokenizer.inner().clone();
    if let (true, Some((text, id))) = (add_bos, &bos) {
        inner.with_post_processor(Some(bos_post_processor(text, *id)?));
    }
    let tokenizer_json = out_dir.join("tokenizer.json");
    inner.save(&tokenizer_json, false)?;
    let eos = tokenizer
        .eos_token_ids()
        .first()
        .and_then(|&id| tokenizer.id_to_token(id));
    let mut config = json!({
        "tokenizer_class": "PreTrainedTokenizerFast",
        "add_bos_token": add_bos,
        "add_eos_token": false,
        "bos_token": bos.map(|(text, _)| text),
        "eos_token": eos,
        "clean_up_tokenization_spaces": false,
    });
    if let Some(template) = chat_template {
        config["chat_template"] = json!(template);
    }
    let path = out_dir.join("tokenizer_config.json");
    let text = serde_json::to_string_pretty(&config).map_err(|e| file_error(&path, e))?;
    std::fs::write(&path, text).map_err(|e| file_error(&path, e))
}

/// `BOS $A` (and `BOS $A BOS $B` for pairs), as Llama's tokenizer.json files write it.
fn bos_post_processor(bos: &str, id: u32) -> Result<TemplateProcessing> {
    TemplateProcessing::builder()
        .try_single(format!("{bos} $A"))
        .and_then(|b| b.try_pair(format!("{bos} $A {bos}:1 $B:1")))
        .map_err(|e| TokenizerError::InvalidSpec(format!("BOS template: {e}")))?
        .special_tokens(vec![(bos.to_string(), id)])
        .build()
        .map_err(|e| TokenizerError::InvalidSpec(format!("BOS template: {e}")))
}

/// `chat_template.jinja` beside the config, else the config's `chat_template`.
fn chat_template(dir: &Path, config: &Value) -> Result<Option<String>> {
    let jinja = dir.join("chat_template.jinja");
    match std::fs::read_to_string(&jinja) {
        Ok(text) => return Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(file_error(&jinja, e)),
    }
    let config_path = dir.join("tokenizer_config.json");
    match &config["chat_template"] {
        Value::String(text) => Ok(Some(text.clone())),
        Value::Array(named) => named
            .iter()
            .find(|t| t["name"] == "default")
            .and_then(|t| t["template"].as_str())
            .map(|t| Some(t.to_string()))
            .ok_or_else(|| {
                file_error(
                    &config_path,
                    "`chat_template` is a list without a \"default\" template",
                )
            }),
        Value::Null => Ok(None),
        other => Err(file_error(
            &config_path,
            format!("`chat_template` must be a string or a list, not {other}"),
        )),
    }
}

/// A special token's text: a string, or an `{"content": ...}` object.
fn token_text(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Object(object) => object.get("content")?.as_str().map(String::from),
        _ => None,
    }
}

/// `eos_token_id` of a `generation_config.json` (a number or a list). The file is optional: none
/// when it is missing, and none, with a warning, when it is not JSON.
fn generation_eos_ids(path: &Path) -> Vec<u32> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    let Ok(config) = serde_json::from_str::<Value>(&text) else {
        tracing::warn!(path = %path.display(), "ignoring unparsable generation_config.json");
        return Vec::new();
    };
    match &config["eos_token_id"] {
        Value::Number(id) => id.as_u64().map(|id| vec![id as u32]).unwrap_or_default(),
        Value::Array(ids) => ids
            .iter()
            .filter_map(Value::as_u64)
            .map(|id| id as u32)
            .collect(),
        _ => Vec::new(),
    }
}

/// A JSON file's contents; `None` when there is no such file.
fn read_json(path: &Path) -> Result<Option<Value>> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(file_error(path, e)),
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| file_error(path, e))
}

fn file_error(path: &Path, e: impl std::fmt::Display) -> TokenizerError {
    TokenizerError::File {
        path: path.display().to_string(),
        message: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokenizer_spec::{TokenizerSpec, TOKEN_TYPE_CONTROL};

    /// A byte-level BPE vocabulary of a few words, with control tokens 0 (BOS) and 1 (EOS).
    fn spec(add_bos_token: bool) -> TokenizerSpec {
        let tokens: Vec<String> = [
            "<s>", "</s>", "h", "e", "l", "o", "he", "ll", "hell", "hello",
        ]
        .into_iter()
        .map(String::from)
        .collect();
        let mut token_types = vec![1; tokens.len()];
        token_types[..2].fill(TOKEN_TYPE_CONTROL);
        TokenizerSpec {
            model: "gpt2".into(),
            pre: None,
            merges: ["h e", "l l", "he ll", "hell o"].map(String::from).to_vec(),
            tokens,
            token_types,
            scores: Vec::new(),
            bos_token_id: Some(0),
            eos_token_id: Some(1),
            unknown_token_id: None,
            padding_token_id: None,
            add_bos_token,
            add_space_prefix: false,
            chat_template: None,
        }
    }

    #[test]
    fn written_files_read_back_as_the_same_tokenizer() {
        for add_bos in [false, true] {
            let original = TextTokenizer::from_spec(&spec(add_bos)).expect("builds");
            let dir = tempfile::tempdir().expect("temp dir");
            write_tokenizer_files(&original, Some("{{ bos_token }}"), dir.path()).expect("writes");
            let files = HfTokenizerFiles::read(dir.path()).expect("reads");
            for text in ["hello", "hellohe</s>", ""] {
                for special in [false, true] {
                    assert_eq!(
                        files.tokenizer.encode(text, special).expect("encodes"),
                        original.encode(text, special).expect("encodes"),
                        "{text:?}, add_bos_token {add_bos}, add_special_tokens {special}"
                    );
                }
            }
            assert_eq!(files.tokenizer.eos_token_ids(), original.eos_token_ids());
            assert_eq!(files.tokenizer.bos_token_id(), Some(0));
            assert_eq!(files.chat_template.as_deref(), Some("{{ bos_token }}"));
            assert_eq!(files.bos_token.as_deref(), Some("<s>"));
            assert_eq!(files.eos_token.as_deref(), Some("</s>"));
        }
    }

    fn write(dir: &Path, name: &str, value: &Value) {
        std::fs::write(dir.join(name), value.to_string()).expect("writes");
    }

    /// A directory with the tokenizer of `spec(false)` and the given tokenizer_config.json.
    fn directory(config: &Value) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("temp dir");
        let tokenizer = TextTokenizer::from_spec(&spec(false)).expect("builds");
        write_tokenizer_files(&tokenizer, None, dir.path()).expect("writes");
        write(dir.path(), "tokenizer_config.json", config);
        dir
    }

    #[test]
    fn chat_templates_are_found_where_transformers_looks() {
        let dir = directory(&json!({"chat_template": "plain"}));
        let read = |dir: &tempfile::TempDir| HfTokenizerFiles::read(dir.path()).expect("reads");
        assert_eq!(read(&dir).chat_template.as_deref(), Some("plain"));
        std::fs::write(dir.path().join("chat_template.jinja"), "from jinja").expect("writes");
        assert_eq!(read(&dir).chat_template.as_deref(), Some("from jinja"));

        let named = json!({"chat_template": [
            {"name": "tool_use", "template": "tools"},
            {"name": "default", "template": "chosen"},
        ]});
        assert_eq!(
            read(&directory(&named)).chat_template.as_deref(),
            Some("chosen")
        );
        assert_eq!(read(&directory(&json!({}))).chat_template, None);

        let no_default = json!({"chat_template": [{"name": "rag", "template": "x"}]});
        let error = HfTokenizerFiles::read(directory(&no_default).path()).expect_err("no default");
        assert!(
            error.to_string().contains("without a \"default\""),
            "{error}"
        );
    }

    #[test]
    fn special_tokens_and_generation_eos_ids() {
        let config = json!({"bos_token": {"content": "<s>", "lstrip": false}, "eos_token": null});
        let dir = directory(&config);
        write(
            dir.path(),
            "special_tokens_map.json",
            &json!({"eos_token": "</s>"}),
        );
        write(
            dir.path(),
            "generation_config.json",
            &json!({"eos_token_id": [1, 7]}),
        );
        let files = HfTokenizerFiles::read(dir.path()).expect("reads");
        assert_eq!(files.bos_token.as_deref(), Some("<s>"));
        assert_eq!(files.eos_token.as_deref(), Some("</s>"));
        assert_eq!(files.generation_eos_token_ids, [1, 7]);

        std::fs::remove_file(dir.path().join("tokenizer.json")).expect("removes");
        let error = HfTokenizerFiles::read(dir.path()).expect_err("tokenizer.json is required");
        assert!(error.to_string().contains("tokenizer.json"), "{error}");
    }

    #[test]
    fn generation_eos_ids_are_a_number_or_a_list() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("generation_config.json");
        assert!(generation_eos_ids(&path).is_empty(), "a missing file");
        std::fs::write(&path, r#"{"eos_token_id": [2, 7], "temperature": 0.6}"#).expect("write");
        assert_eq!(generation_eos_ids(&path), vec![2, 7]);
        std::fs::write(&path, r#"{"eos_token_id": 5}"#).expect("write");
        assert_eq!(generation_eos_ids(&path), vec![5]);
        std::fs::write(&path, "not json").expect("write");
        assert!(generation_eos_ids(&path).is_empty());
    }
}
