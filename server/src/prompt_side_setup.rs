//! The text side as the flags set it up: `--tokenizer` (another directory's tokenizer and
//! template), its fit to the model's vocabulary, and `--chat-template-content-format`.

use std::path::Path;

use anyhow::{bail, Context};
use pagoda_text::prompt_side::PromptSide;
use pagoda_text::template::ContentFormat;

use crate::args::ServerArgs;

/// `--chat-template-content-format`: `auto` keeps what rendering a probe found; the format is
/// logged either way.
pub fn with_content_format(mut prompt_side: PromptSide, arg: &str) -> PromptSide {
    let format = match arg {
        "string" => ContentFormat::String,
        "openai" => ContentFormat::OpenAi,
        _ => prompt_side.template.content_format(),
    };
    prompt_side.template = prompt_side.template.with_content_format(format);
    tracing::info!(
        content_format = format.as_str(),
        "the chat template is given message content as {}",
        match format {
            ContentFormat::String => "text",
            ContentFormat::OpenAi => "a list of OpenAI parts",
        }
    );
    prompt_side
}

/// The text side: the model's own, or `--tokenizer`'s.
pub fn load_prompt_side(args: &ServerArgs, model_path: &Path) -> anyhow::Result<PromptSide> {
    let Some(tokenizer_path) = &args.tokenizer else {
        return Ok(PromptSide::load(model_path)?);
    };
    PromptSide::load(tokenizer_path).with_context(|| {
        format!(
            "--tokenizer {}: cannot read a tokenizer there (a Hugging Face directory with \
             tokenizer.json, or a GGUF file; nothing is downloaded)",
            tokenizer_path.display()
        )
    })
}

/// A `--tokenizer` whose ids go past the model's vocabulary cannot be served.
pub fn check_tokenizer_fits(
    prompt_side: &PromptSide,
    model_vocab_size: usize,
) -> anyhow::Result<()> {
    let tokenizer_vocab_size = prompt_side.tokenizer.vocab_size();
    if tokenizer_vocab_size > model_vocab_size {
        bail!(
            "the tokenizer has {tokenizer_vocab_size} tokens, more than the model's vocabulary \
             of {model_vocab_size}: give --tokenizer the tokenizer this model was trained with"
        );
    }
    Ok(())
}
