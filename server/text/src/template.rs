//! Chat messages → prompt text, by the model's own Jinja chat template.
//!
//! Rendered with minijinja configured like transformers' `apply_chat_template`: `trim_blocks` and
//! `lstrip_blocks` on, Python string methods (`.strip()`, `.startswith()`, ...) through
//! minijinja-contrib's pycompat, `raise_exception(msg)`, `tojson` as Python's `json.dumps`, and `{% break %}`/`{% continue %}`.
//!
//! Templates see what transformers and vLLM give Hugging Face templates:
//! - `messages`, each with `role`, `content` (plain text: parts joined by newlines, and empty
//!   when the request gave `null` or nothing, as vLLM passes it; or, for a template that only
//!   reads OpenAI's content parts, `[{"type": "text", "text": …}]`: see [`ContentFormat`]),
//!   and where the request gave
//!   them `tool_calls`, `tool_call_id` and `name`. Each tool call is
//!   `{"id", "type", "function": {"name", "arguments"}, "name", "arguments"}` with the arguments
//!   parsed from their JSON text into an object (templates write `tool_call.arguments | tojson`);
//!   an empty `tool_calls` list is left out.
//! - `tools`: the request's tool objects (`{"type": "function", "function": {"name",
//!   "description", "parameters"}}`), or none.
//! - `add_generation_prompt`, `bos_token` and `eos_token`.
//!
//! A template that never mentions `tools` (see [`ChatTemplate::renders_tools`]) gets them another
//! way: [`ChatTemplate::render_with_tools`] describes them in a Hermes-style system preamble and
//! turns the conversation's tool calls and results into text (see `tool_fallback`).

mod content_format;
mod error;
mod messages;
mod tojson;
mod tool_fallback;
mod view;

pub use content_format::ContentFormat;
pub use error::TemplateError;
pub use messages::{AssistantToolCall, ChatMessage, ContentPart, FunctionCall, MessageContent};

use minijinja::{context, Environment, ErrorKind, Value};
use view::TemplateMessage;

/// ChatML, for models whose files carry no chat template.
pub const CHATML_TEMPLATE: &str = "{% for message in messages %}\
{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}\
{% endfor %}\
{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

const TEMPLATE_NAME: &str = "chat_template";
const TOOL_PREAMBLE_NAME: &str = "tool_preamble";

/// A compiled chat template plus the special tokens it may refer to.
#[derive(Debug, Clone)]
pub struct ChatTemplate {
    env: Environment<'static>,
    bos_token: Option<String>,
    eos_token: Option<String>,
    renders_tools: bool,
    content_format: ContentFormat,
}

impl ChatTemplate {
    /// Compiles `source`; a syntax error is reported with its line.
    pub fn new(
        source: &str,
        bos_token: Option<String>,
        eos_token: Option<String>,
    ) -> Result<Self, TemplateError> {
        let mut env = Environment::new();
        env.set_trim_blocks(true);
        env.set_lstrip_blocks(true);
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_function("raise_exception", raise_exception);
        env.add_filter("tojson", tojson::tojson);
        env.add_template_owned(TEMPLATE_NAME, source.to_string())
            .map_err(|e| TemplateError::Syntax(describe(&e)))?;
        env.add_template(TOOL_PREAMBLE_NAME, tool_fallback::TOOL_PREAMBLE_TEMPLATE)
            .map_err(|e| TemplateError::Syntax(describe(&e)))?;
        let renders_tools = env
            .get_template(TEMPLATE_NAME)
            .map_err(|e| TemplateError::Syntax(describe(&e)))?
            .undeclared_variables(false)
            .contains("tools");
        let mut template = Self {
            env,
            bos_token,
            eos_token,
            renders_tools,
            content_format: ContentFormat::String,
        };
        template.content_format = ContentFormat::detect(|format, text| {
            let probe = [ChatMessage::new("user", text)];
            template
                .render_in(format, &probe, None, true, &serde_json::Map::new())
                .ok()
        });
        Ok(template)
    }

    /// This template with `content` given in `format` (vLLM's `--chat-template-content-format`;
    /// by default the format found by rendering a probe, see [`ContentFormat`]).
    pub fn with_content_format(mut self, format: ContentFormat) -> Self {
        self.content_format = format;
        self
    }

    /// What the template is given as each message's `content`.
    pub fn content_format(&self) -> ContentFormat {
        self.content_format
    }

    /// Another template's `source` with this one's BOS and EOS texts (a served model's
    /// template replaced by `--chat-template`).
    pub fn with_source(&self, source: &str) -> Result<Self, TemplateError> {
        Self::new(source, self.bos_token.clone(), self.eos_token.clone())
    }

    /// Whether the template itself renders the request's tools (its source uses `tools`).
    pub fn renders_tools(&self) -> bool {
        self.renders_tools
    }

    /// The prompt for `messages`; with `add_generation_prompt`, ends with the assistant's turn header.
    pub fn render(
        &self,
        messages: &[ChatMessage],
        add_generation_prompt: bool,
    ) -> Result<String, TemplateError> {
        self.render_with_tools(messages, None, add_generation_prompt)
    }

    /// The prompt for `messages` offering the model `tools` (OpenAI tool objects). An empty list
    /// is no tools. If the template does not render tools, they are described in a system
    /// preamble instead, and tool calls and results in the conversation become text.
    pub fn render_with_tools(
        &self,
        messages: &[ChatMessage],
        tools: Option<&[serde_json::Value]>,
        add_generation_prompt: bool,
    ) -> Result<String, TemplateError> {
        self.render_with(
            messages,
            tools,
            add_generation_prompt,
            &serde_json::Map::new(),
        )
    }

    /// [`ChatTemplate::render_with_tools`] with extra template variables (a request's
    /// `chat_template_kwargs`, e.g. Qwen3's `enable_thinking`). They cannot replace the variables
    /// the server sets ([`RESERVED_TEMPLATE_VARIABLES`]): such a name is an error.
    pub fn render_with(
        &self,
        messages: &[ChatMessage],
        tools: Option<&[serde_json::Value]>,
        add_generation_prompt: bool,
        kwargs: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<String, TemplateError> {
        self.render_in(
            self.content_format,
            messages,
            tools,
            add_generation_prompt,
            kwargs,
        )
    }

    fn render_in(
        &self,
        content_format: ContentFormat,
        messages: &[ChatMessage],
        tools: Option<&[serde_json::Value]>,
        add_generation_prompt: bool,
        kwargs: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<String, TemplateError> {
        if let Some(name) = kwargs
            .keys()
            .find(|name| RESERVED_TEMPLATE_VARIABLES.contains(&name.as_str()))
        {
            return Err(TemplateError::Render(format!(
                "`{name}` is set by the server and cannot be a template keyword argument"
            )));
        }
        let mut view = messages
            .iter()
            .map(TemplateMessage::of)
            .collect::<Result<Vec<_>, TemplateError>>()?;
        let mut tools = tools.filter(|tools| !tools.is_empty());
        if let Some(offered) = tools.filter(|_| !self.renders_tools) {
            let preamble = self.render_named(
                TOOL_PREAMBLE_NAME,
                context! { tools => Value::from_serialize(offered) },
            )?;
            view = tool_fallback::with_tool_preamble(view, preamble);
            tools = None;
        }
        let messages = match content_format {
            ContentFormat::String => Value::from_serialize(&view),
            ContentFormat::OpenAi => {
                let view = serde_json::to_value(&view)
                    .map_err(|e| TemplateError::Render(format!("messages: {e}")))?;
                Value::from_serialize(content_format.apply(view))
            }
        };
        self.render_named(
            TEMPLATE_NAME,
            context! {
                messages => messages,
                tools => tools.map(Value::from_serialize),
                add_generation_prompt => add_generation_prompt,
                bos_token => self.bos_token.as_deref().unwrap_or(""),
                eos_token => self.eos_token.as_deref().unwrap_or(""),
                ..Value::from_serialize(kwargs)
            },
        )
    }

    fn render_named(&self, name: &str, context: Value) -> Result<String, TemplateError> {
        let template = self
            .env
            .get_template(name)
            .map_err(|e| TemplateError::Render(describe(&e)))?;
        template
            .render(context)
            .map_err(|e| TemplateError::Render(describe(&e)))
    }
}

/// The variables the server gives every template, which a request's keyword arguments cannot set.
pub const RESERVED_TEMPLATE_VARIABLES: &[&str] = &[
    "messages",
    "tools",
    "add_generation_prompt",
    "bos_token",
    "eos_token",
];

/// `raise_exception(message)`, as transformers defines it for templates to reject a conversation.
fn raise_exception(message: String) -> Result<minijinja::Value, minijinja::Error> {
    Err(minijinja::Error::new(ErrorKind::InvalidOperation, message))
}

/// The error with its chain of causes (a failing call inside a filter, ...).
fn describe(e: &minijinja::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tool_tests;
