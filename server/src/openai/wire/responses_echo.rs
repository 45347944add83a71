//! The request settings a Response echoes (`tool_choice`, `text`, `metadata`): the request's own
//! value as it sent it (checked before), or the typed default OpenAI echoes without one.

use serde::Serialize;
use serde_json::Value;

/// A request setting the Response echoes: as the request sent it (already checked), or the
/// default OpenAI echoes when the request set none.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Echoed<T> {
    AsSent(Value),
    Default(T),
}

impl<T> Echoed<T> {
    /// The request's value, or `default` when it sent none.
    pub fn or_default(sent: Option<&Value>, default: T) -> Self {
        sent.map_or(Self::Default(default), |value| Self::AsSent(value.clone()))
    }
}

/// `tool_choice` as a mode (`"auto"` is the default).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolChoiceMode {
    None,
    Auto,
    Required,
}

/// `text`: the output's format (`{"format": {"type": "text"}}` is the default).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TextConfig {
    pub format: TextFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TextFormat {
    /// Plain text.
    Text,
}

impl TextConfig {
    /// Plain text, the default.
    pub const PLAIN: Self = Self {
        format: TextFormat::Text,
    };
}

/// `metadata`: up to 16 string pairs (none is the default, written `{}`).
pub type Metadata = std::collections::BTreeMap<String, String>;

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::openai::wire::responses::ResponseShell;

    /// Without a setting the shell echoes OpenAI's defaults; with one, the request's value as sent.
    #[test]
    fn echoed_settings_are_the_defaults_or_what_was_sent() {
        let plain = serde_json::to_value(ResponseShell::for_tests("resp_1")).expect("JSON");
        assert_eq!(plain["tool_choice"], json!("auto"));
        assert_eq!(plain["text"], json!({"format": {"type": "text"}}));
        assert_eq!(plain["metadata"], json!({}));
        let modes = [ToolChoiceMode::None, ToolChoiceMode::Required];
        assert_eq!(json!(modes), json!(["none", "required"]));
        let sent = json!({"format": {"type": "json_object"}});
        let text = Echoed::or_default(Some(&sent), TextConfig::PLAIN);
        assert_eq!(json!(text), sent);
        let unsent: Echoed<Metadata> = Echoed::or_default(None, Metadata::new());
        assert_eq!(json!(unsent), json!({}));
    }
}
