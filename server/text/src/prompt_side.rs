//! What a model implies on the text side: its tokenizer, its chat template and the token ids its
//! files say end a turn — read from the same GGUF file or Hugging Face directory as the weights.

use std::path::{Path, PathBuf};

use crate::hf_files::HfTokenizerFiles;
use crate::template::{ChatTemplate, TemplateError, CHATML_TEMPLATE};
use crate::tokenizer::{TextTokenizer, TokenizerError};
use crate::tokenizer_spec::{read_tokenizer_spec, TokenizerSpec, TokenizerSpecError};

/// Why a model's text side could not be read.
#[derive(Debug, thiserror::Error)]
pub enum PromptSideError {
    /// There is no file or directory at the model path.
    #[error("model file {} not found", .0.display())]
    ModelNotFound(PathBuf),
    /// The GGUF file cannot be read, or its tokenizer keys are malformed.
    #[error(transparent)]
    Spec(#[from] TokenizerSpecError),
    /// The tokenizer could not be built, or its Hugging Face files could not be read.
    #[error(transparent)]
    Tokenizer(#[from] TokenizerError),
    /// The chat template does not compile.
    #[error(transparent)]
    Template(#[from] TemplateError),
}

type Result<T, E = PromptSideError> = std::result::Result<T, E>;

/// A model's tokenizer and chat template, and the ids its prompt-side files say end generation.
#[derive(Debug)]
pub struct PromptSide {
    pub tokenizer: TextTokenizer,
    pub template: ChatTemplate,
    /// The tokenizer's EOS and end-of-turn ids, then any of generation_config.json.
    pub stop_token_ids: Vec<u32>,
}

impl PromptSide {
    /// Reads a GGUF file or a Hugging Face directory.
    pub fn load(model_path: &Path) -> Result<Self> {
        if model_path.is_dir() {
            Self::from_hf_dir(model_path)
        } else if model_path.is_file() {
            Self::from_gguf(model_path)
        } else {
            Err(PromptSideError::ModelNotFound(PathBuf::from(model_path)))
        }
    }

    fn from_gguf(path: &Path) -> Result<Self> {
        let spec = read_tokenizer_spec(path)?;
        let tokenizer = TextTokenizer::from_spec(&spec)?;
        Ok(Self {
            template: chat_template(&spec)?,
            stop_token_ids: tokenizer.eos_token_ids(),
            tokenizer,
        })
    }

    fn from_hf_dir(dir: &Path) -> Result<Self> {
        let files = HfTokenizerFiles::read(dir)?;
        let source = files.chat_template.as_deref().unwrap_or(CHATML_TEMPLATE);
        let template = ChatTemplate::new(source, files.bos_token, files.eos_token)?;
        let mut stop_token_ids = files.tokenizer.eos_token_ids();
        stop_token_ids.extend(files.generation_eos_token_ids);
        Ok(Self {
            tokenizer: files.tokenizer,
            template,
            stop_token_ids,
        })
    }
}

/// The file's chat template (ChatML when it has none), with its BOS/EOS token texts.
fn chat_template(spec: &TokenizerSpec) -> Result<ChatTemplate> {
    let token_text = |id: Option<u32>| id.and_then(|id| spec.tokens.get(id as usize).cloned());
    let source = spec.chat_template.as_deref().unwrap_or(CHATML_TEMPLATE);
    Ok(ChatTemplate::new(
        source,
        token_text(spec.bos_token_id),
        token_text(spec.eos_token_id),
    )?)
}

/// The tokenizer's EOS/end-of-turn ids that the model's own EOS list lacks, in order.
pub fn extra_stop_token_ids(tokenizer_eos: &[u32], model_eos: &[u32]) -> Vec<u32> {
    let mut extra: Vec<u32> = Vec::new();
    for &id in tokenizer_eos {
        if !model_eos.contains(&id) && !extra.contains(&id) {
            extra.push(id);
        }
    }
    extra
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extra_stop_ids_are_those_the_model_lacks() {
        assert_eq!(extra_stop_token_ids(&[2, 0], &[2]), [0]);
        assert_eq!(extra_stop_token_ids(&[2, 0, 0], &[]), [2, 0]);
        assert!(extra_stop_token_ids(&[2], &[2, 7]).is_empty());
    }
}
