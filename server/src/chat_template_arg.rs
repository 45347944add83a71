//! `--chat-template` (vLLM's flag): a Jinja file, or the template itself inline, that replaces
//! the model's chat template — a fine-tune whose file lacks one, or that was trained on another.

use std::path::Path;

use anyhow::{bail, Context};
use pagoda_text::prompt_side::PromptSide;
use pagoda_text::template::ChatTemplate;

/// The template text `value` names: the file's contents when a file is there, else `value`
/// itself when it reads as a Jinja template (it holds `{{` or `{%`).
pub fn chat_template_source(value: &str) -> anyhow::Result<String> {
    let path = Path::new(value);
    if path.is_file() {
        return std::fs::read_to_string(path)
            .with_context(|| format!("--chat-template: cannot read {}", path.display()));
    }
    if value.contains("{{") || value.contains("{%") {
        return Ok(value.to_string());
    }
    bail!("--chat-template {value:?}: no such file, and not a Jinja template ({{{{ … }}}} or {{% … %}})")
}

/// Checks `source` compiles, before the model loads (a typo should not cost a model load).
pub fn check_chat_template(source: &str) -> anyhow::Result<()> {
    ChatTemplate::new(source, None, None)
        .map(|_| ())
        .context("--chat-template does not compile")
}

/// `side` with its template replaced by `source` (the model's BOS and EOS texts kept).
pub fn with_chat_template(mut side: PromptSide, source: &str) -> anyhow::Result<PromptSide> {
    side.template = side
        .template
        .with_source(source)
        .context("--chat-template does not compile")?;
    Ok(side)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pagoda_text::template::ChatMessage;

    #[test]
    fn a_file_or_an_inline_template_is_read_and_anything_else_refused() {
        let dir = tempfile::tempdir().expect("a directory");
        let file = dir.path().join("t.jinja");
        std::fs::write(&file, "{% for m in messages %}[{{ m.role }}]{% endfor %}").expect("writes");
        let from_file = chat_template_source(file.to_str().expect("utf-8")).expect("read");
        assert!(from_file.starts_with("{% for"));
        let inline = "{{ messages[0].content }}!";
        assert_eq!(chat_template_source(inline).expect("inline"), inline);
        let missing = dir.path().join("missing.jinja");
        let error = chat_template_source(missing.to_str().expect("utf-8")).expect_err("refused");
        assert!(error.to_string().contains("no such file"), "{error}");
        assert!(check_chat_template("{% for m in messages %}").is_err());
        assert!(check_chat_template(inline).is_ok());
    }

    #[test]
    fn the_replacement_renders_with_the_models_special_tokens() {
        let original =
            ChatTemplate::new("{{ bos_token }}x", Some("<s>".into()), None).expect("compiles");
        let replaced = original
            .with_source(
                "{{ bos_token }}{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}",
            )
            .expect("compiles");
        let prompt = replaced
            .render(&[ChatMessage::new("user", "hi")], true)
            .expect("renders");
        assert_eq!(prompt, "<s><user>hi");
    }
}
