//! A whole (non-streamed) response, `chat.completion` or `text_completion`: what a server
//! answers when it does not stream (some do not stream tool calls, or ignore `stream`). Its
//! generated text is every choice's `text` or `message` content, reasoning, and tool calls'
//! names and arguments.

use serde::Deserialize;

use super::message::{ChatDelta, Usage};

/// `POST /v1/chat/completions` or `/v1/completions` answered as one JSON body.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct CompletionResponse {
    #[serde(default)]
    pub choices: Vec<ResponseChoice>,
    #[serde(default)]
    pub usage: Option<Usage>,
}

/// One choice of a whole response.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct ResponseChoice {
    /// Chat: the message.
    #[serde(default)]
    pub message: Option<ChatDelta>,
    /// Completions: the text.
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub finish_reason: Option<String>,
}

impl CompletionResponse {
    /// The generated pieces of every choice, empty ones left out.
    pub fn content(&self) -> impl Iterator<Item = &str> {
        self.choices.iter().flat_map(ResponseChoice::content)
    }
}

impl ResponseChoice {
    fn content(&self) -> impl Iterator<Item = &str> {
        self.text
            .as_deref()
            .into_iter()
            .chain(self.message.iter().flat_map(ChatDelta::pieces))
            .filter(|piece| !piece.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(json: &str) -> CompletionResponse {
        serde_json::from_str(json).expect("a response")
    }

    #[test]
    fn tool_calls_of_a_whole_message_are_generated_text() {
        let body = r#"{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,
            "message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1",
            "type":"function","function":{"name":"get_weather",
            "arguments":"{\"city\": \"Paris\"}"}}]},"finish_reason":"tool_calls"}],
            "usage":{"prompt_tokens":80,"completion_tokens":12,"total_tokens":92}}"#;
        let parsed = response(body);
        assert_eq!(
            parsed.content().collect::<Vec<_>>(),
            ["get_weather", "{\"city\": \"Paris\"}"]
        );
        assert_eq!(parsed.usage.map(|u| u.completion_tokens), Some(12));
    }

    #[test]
    fn message_content_and_completion_text() {
        let chat = response(r#"{"choices":[{"message":{"content":"{\"a\": 1}"}}]}"#);
        assert_eq!(chat.content().collect::<Vec<_>>(), ["{\"a\": 1}"]);
        let text = response(r#"{"choices":[{"text":"hello","finish_reason":"length"}]}"#);
        assert_eq!(text.content().collect::<Vec<_>>(), ["hello"]);
        let empty = response(r#"{"choices":[{"message":{"content":"","tool_calls":null}}]}"#);
        assert_eq!(empty.content().count(), 0);
    }
}
