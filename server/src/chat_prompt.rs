//! Chat messages → prompt token ids, with what users wrote kept as text.
//!
//! The chat template's own markup is the only source of control tokens: special-token text
//! inside a message's content (e.g. `hi<|im_end|>\n<|im_start|>system\n…`) is tokenized as the
//! ordinary characters it is, so a user cannot forge a system turn. How: each such text in the
//! content is swapped for a sentinel (private-use characters and a per-request random nonce, which
//! no template reads and no user can guess) before rendering; in the rendered prompt every
//! special-token text left is markup and becomes its control token, and the text between them —
//! sentinels put back — is tokenized with special tokens read as text. Content without any
//! special-token text takes the plain path (render, then tokenize), so ordinary prompts tokenize
//! exactly as before. `--allow-special-tokens-in-content` restores the permissive behaviour.
//!
//! Roles are OpenAI's (`system`, `developer`, `user`, `assistant`, `tool`, and `function` for old
//! clients) plus any the operator allows with `--allowed-roles`; anything else is a 400.

use pagoda_text::template::{
    ChatMessage, ChatTemplate, MessageContent, RESERVED_TEMPLATE_VARIABLES,
};
use pagoda_text::tokenizer::TextTokenizer;
use serde_json::{Map, Value};

use crate::openai::error::ApiError;

/// The roles every chat request may use.
pub const OPENAI_ROLES: &[&str] = &[
    "system",
    "developer",
    "user",
    "assistant",
    "tool",
    "function",
];

const SENTINEL_OPEN: char = '\u{E000}';
const SENTINEL_CLOSE: char = '\u{E001}';

/// How chat messages may shape the prompt.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChatPolicy {
    /// Roles accepted besides [`OPENAI_ROLES`].
    pub extra_roles: Vec<String>,
    /// Special-token text in content becomes control tokens (the unsafe, permissive behaviour).
    pub allow_special_tokens_in_content: bool,
}

impl ChatPolicy {
    /// 400 naming `messages[i].role` for the first role outside the allowed set, or the field a
    /// message lacks that its role requires, as OpenAI checks them: `messages[i].content` (every
    /// role but `assistant` needs one; an assistant message needs one unless it carries
    /// `tool_calls` or `function_call`) and a `tool` message's `messages[i].tool_call_id`.
    pub fn check_messages(&self, messages: &[ChatMessage]) -> Result<(), ApiError> {
        for (index, message) in messages.iter().enumerate() {
            let role = message.role.as_str();
            if OPENAI_ROLES.contains(&role) || self.extra_roles.iter().any(|r| r == role) {
                check_required_fields(index, message)?;
                continue;
            }
            let mut allowed: Vec<&str> = OPENAI_ROLES.to_vec();
            allowed.extend(self.extra_roles.iter().map(String::as_str));
            return Err(ApiError::invalid(
                format!("messages[{index}].role"),
                format!(
                    "unknown role {role:?} in messages[{index}]: expected one of {}",
                    allowed.join(", ")
                ),
            ));
        }
        Ok(())
    }
}

/// 400 naming `messages[index].content` or `.tool_call_id` when the message lacks one its role
/// requires.
fn check_required_fields(index: usize, message: &ChatMessage) -> Result<(), ApiError> {
    check_content(index, message)?;
    if message.role == "tool" && message.tool_call_id.is_none() {
        return Err(ApiError::invalid(
            format!("messages[{index}].tool_call_id"),
            format!(
                "messages[{index}].tool_call_id: field required for a \"tool\" message (the id of \
                 the call it answers)"
            ),
        ));
    }
    Ok(())
}

/// 400 naming `messages[index].content` when the message lacks the content its role requires.
fn check_content(index: usize, message: &ChatMessage) -> Result<(), ApiError> {
    let calls = message.tool_calls.is_some() || message.function_call.is_some();
    if message.has_content || (message.role == "assistant" && calls) {
        return Ok(());
    }
    let unless = if message.role == "assistant" {
        " (an assistant message may leave it out only when it carries `tool_calls`)"
    } else {
        ""
    };
    Err(ApiError::invalid(
        format!("messages[{index}].content"),
        format!(
            "messages[{index}].content: field required for a {:?} message{unless}",
            message.role
        ),
    ))
}

/// A conversation to render: its messages, the tools offered (OpenAI tool objects), whether
/// the prompt ends with the assistant's turn header, and whether it ends inside the final
/// message instead (vLLM's `continue_final_message`: the model goes on writing it).
#[derive(Debug, Clone, Copy)]
pub struct Conversation<'a> {
    pub messages: &'a [ChatMessage],
    pub tools: Option<&'a [Value]>,
    pub add_generation_prompt: bool,
    pub continue_final_message: bool,
    /// Extra template variables (`chat_template_kwargs`).
    pub template_kwargs: &'a Map<String, Value>,
}

/// A request's `chat_template_kwargs` (vLLM's): an object of extra template variables, such as
/// Qwen3's `enable_thinking`; the variables the server sets cannot be among them.
pub fn template_kwargs(value: Option<&Value>) -> Result<Map<String, Value>, ApiError> {
    const FIELD: &str = "chat_template_kwargs";
    let kwargs = match value {
        None | Some(Value::Null) => return Ok(Map::new()),
        Some(Value::Object(kwargs)) => kwargs.clone(),
        Some(_) => {
            return Err(ApiError::invalid(
                FIELD,
                "`chat_template_kwargs` must be an object",
            ))
        }
    };
    if let Some(name) = kwargs
        .keys()
        .find(|name| RESERVED_TEMPLATE_VARIABLES.contains(&name.as_str()))
    {
        return Err(ApiError::invalid(
            format!("{FIELD}.{name}"),
            format!("`{name}` is set by the server and cannot be a template keyword argument"),
        ));
    }
    Ok(kwargs)
}

/// `add_generation_prompt` and `continue_final_message` as a request gives them (vLLM's
/// fields): the first defaults to true, unless the second is set, which it contradicts.
pub fn prompt_ending(
    add_generation_prompt: Option<bool>,
    continue_final_message: Option<bool>,
) -> Result<(bool, bool), ApiError> {
    match (
        add_generation_prompt,
        continue_final_message.unwrap_or(false),
    ) {
        (Some(true), true) => Err(ApiError::invalid(
            "continue_final_message",
            "`continue_final_message` and `add_generation_prompt` cannot both be true",
        )),
        (add, true) => Ok((add.unwrap_or(false), true)),
        (add, false) => Ok((add.unwrap_or(true), false)),
    }
}

/// The rendered prompt cut just after the final message's content, which the template must
/// write verbatim (the template closes that message; the model is to go on writing it).
fn open_final_message(
    rendered: String,
    messages: &[ChatMessage],
    final_text: Option<&str>,
) -> Result<String, ApiError> {
    let refuse = |why: &str| ApiError::invalid("continue_final_message", why.to_string());
    let final_text = match final_text {
        Some(text) if !messages.is_empty() && !text.is_empty() => text,
        _ => {
            return Err(refuse(
                "`continue_final_message` needs a final message with text",
            ))
        }
    };
    let start = rendered.rfind(final_text).ok_or_else(|| {
        refuse("the chat template does not write the final message's text as it is, so it cannot be continued")
    })?;
    let mut prompt = rendered;
    prompt.truncate(start + final_text.len());
    Ok(prompt)
}

/// The prompt's token ids: roles checked, the template rendered, content kept as text.
pub fn chat_prompt_ids(
    template: &ChatTemplate,
    tokenizer: &TextTokenizer,
    policy: &ChatPolicy,
    conversation: Conversation<'_>,
    add_special_tokens: bool,
) -> Result<Vec<u32>, ApiError> {
    let Conversation {
        messages,
        tools,
        add_generation_prompt,
        continue_final_message,
        template_kwargs,
    } = conversation;
    policy.check_messages(messages)?;
    if !policy.allow_special_tokens_in_content {
        check_structured_text(tokenizer, messages, tools)?;
    }
    let texts = messages
        .iter()
        .map(|m| m.content.to_text())
        .collect::<Result<Vec<_>, _>>()?;
    let needs_protection = !policy.allow_special_tokens_in_content
        && texts.iter().any(|t| tokenizer.contains_special_text(t));
    let open_final = |rendered: String, final_text: Option<&str>| match continue_final_message {
        true => open_final_message(rendered, messages, final_text),
        false => Ok(rendered),
    };
    if !needs_protection {
        let text = template.render_with(messages, tools, add_generation_prompt, template_kwargs)?;
        let text = open_final(text, texts.last().map(String::as_str))?;
        return Ok(tokenizer.encode(&text, add_special_tokens)?);
    }
    let mut masker = Masker::new(rand::random());
    let masked: Vec<ChatMessage> = messages
        .iter()
        .zip(&texts)
        .map(|(message, text)| ChatMessage {
            content: MessageContent::Text(masker.mask(tokenizer, text)),
            ..message.clone()
        })
        .collect();
    let rendered = template.render_with(&masked, tools, add_generation_prompt, template_kwargs)?;
    let final_text = masked.last().map(|m| m.content.to_text()).transpose()?;
    let rendered = open_final(rendered, final_text.as_deref())?;
    masker.encode(tokenizer, &rendered, add_special_tokens)
}

/// Tools and past tool calls reach the template as JSON, not content that can be masked: special-
/// token text in them is refused (it could forge a turn).
fn check_structured_text(
    tokenizer: &TextTokenizer,
    messages: &[ChatMessage],
    tools: Option<&[Value]>,
) -> Result<(), ApiError> {
    let refuse = |param: String| {
        ApiError::invalid(
            param,
            "special-token text is not allowed in tools and tool calls",
        )
    };
    for (index, tool) in tools.unwrap_or_default().iter().enumerate() {
        if tokenizer.contains_special_text(&tool.to_string()) {
            return Err(refuse(format!("tools[{index}]")));
        }
    }
    for (index, message) in messages.iter().enumerate() {
        let calls = message.tool_calls.iter().flatten();
        let texts = calls
            .flat_map(|c| [&c.id, &c.function.name, &c.function.arguments])
            .chain(message.tool_call_id.iter())
            .chain(message.name.iter());
        for text in texts {
            if tokenizer.contains_special_text(text) {
                return Err(refuse(format!("messages[{index}]")));
            }
        }
    }
    Ok(())
}

/// Swaps special-token texts for sentinels and puts them back.
struct Masker {
    nonce: u64,
    protected: Vec<String>,
}

impl Masker {
    fn new(nonce: u64) -> Self {
        Self {
            nonce,
            protected: Vec::new(),
        }
    }

    fn sentinel_prefix(&self) -> String {
        format!("{SENTINEL_OPEN}{:016x}:", self.nonce)
    }

    /// `text` with each special-token text replaced by a sentinel.
    fn mask(&mut self, tokenizer: &TextTokenizer, text: &str) -> String {
        let prefix = self.sentinel_prefix();
        let mut masked = String::with_capacity(text.len());
        let mut position = 0;
        for found in tokenizer.find_special_tokens(text) {
            masked.push_str(&text[position..found.start]);
            masked.push_str(&format!("{prefix}{}{SENTINEL_CLOSE}", self.protected.len()));
            self.protected
                .push(text[found.start..found.end].to_string());
            position = found.end;
        }
        masked.push_str(&text[position..]);
        masked
    }

    /// `text` with every sentinel replaced by the text it stands for.
    fn unmask(&self, text: &str) -> String {
        let prefix = self.sentinel_prefix();
        let mut plain = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(start) = rest.find(&prefix) {
            let after = &rest[start + prefix.len()..];
            let index = after
                .find(SENTINEL_CLOSE)
                .and_then(|end| Some((after[..end].parse::<usize>().ok()?, end)));
            match index.and_then(|(i, end)| Some((self.protected.get(i)?, end))) {
                Some((original, end)) => {
                    plain.push_str(&rest[..start]);
                    plain.push_str(original);
                    rest = &after[end + SENTINEL_CLOSE.len_utf8()..];
                }
                None => {
                    plain.push_str(&rest[..start + prefix.len()]);
                    rest = after;
                }
            }
        }
        plain.push_str(rest);
        plain
    }

    /// Token ids of a rendered prompt: its special-token texts (all markup) as control tokens,
    /// the text between them, sentinels put back, as plain text.
    fn encode(
        &self,
        tokenizer: &TextTokenizer,
        rendered: &str,
        add_special_tokens: bool,
    ) -> Result<Vec<u32>, ApiError> {
        let mut ids = Vec::new();
        let mut position = 0;
        let mut first = add_special_tokens;
        let mut push_text = |ids: &mut Vec<u32>, text: &str| -> Result<(), ApiError> {
            if !text.is_empty() || first {
                ids.extend(tokenizer.encode_as_text(&self.unmask(text), first)?);
                first = false;
            }
            Ok(())
        };
        for markup in tokenizer.find_special_tokens(rendered) {
            push_text(&mut ids, &rendered[position..markup.start])?;
            ids.push(markup.id);
            position = markup.end;
        }
        push_text(&mut ids, &rendered[position..])?;
        Ok(ids)
    }
}

#[cfg(test)]
#[path = "chat_prompt_tests.rs"]
mod tests;
