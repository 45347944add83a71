//! `pagoda-bench serve`'s sampling flags, `vllm bench serve`'s "sampling parameters" group: each
//! one given is sent with every request (OpenAI's fields, and vLLM's `top_k`, `min_p`,
//! `repetition_penalty` that vLLM, SGLang and pagoda accept); `--extra-body` wins over them.

use clap::Args;
use serde_json::{json, Map, Value};

use crate::client::Endpoint;

#[derive(Debug, Clone, Default, Args)]
pub struct SamplingArgs {
    /// Sampling temperature sent with every request.
    #[arg(long, default_value_t = 0.0)]
    pub temperature: f64,
    /// top_p sent with every request. [default: not sent]
    #[arg(long)]
    pub top_p: Option<f64>,
    /// top_k sent with every request (vLLM's field). [default: not sent]
    #[arg(long, allow_hyphen_values = true)]
    pub top_k: Option<i64>,
    /// min_p sent with every request (vLLM's field). [default: not sent]
    #[arg(long)]
    pub min_p: Option<f64>,
    /// frequency_penalty sent with every request. [default: not sent]
    #[arg(long, allow_hyphen_values = true)]
    pub frequency_penalty: Option<f64>,
    /// presence_penalty sent with every request. [default: not sent]
    #[arg(long, allow_hyphen_values = true)]
    pub presence_penalty: Option<f64>,
    /// repetition_penalty sent with every request (vLLM's field). [default: not sent]
    #[arg(long)]
    pub repetition_penalty: Option<f64>,
    /// Log-probabilities of the N most likely tokens at each position: `logprobs: N` on
    /// /v1/completions, `logprobs: true, top_logprobs: N` on chat. [default: not asked]
    #[arg(long, value_name = "N")]
    pub logprobs: Option<u32>,
}

impl SamplingArgs {
    /// The body fields of the flags given (temperature and top_p travel on their own).
    pub fn body_fields(&self, endpoint: Endpoint) -> Map<String, Value> {
        let mut fields = Map::new();
        let optional = [
            ("top_k", self.top_k.map(Value::from)),
            ("min_p", self.min_p.map(Value::from)),
            ("frequency_penalty", self.frequency_penalty.map(Value::from)),
            ("presence_penalty", self.presence_penalty.map(Value::from)),
            (
                "repetition_penalty",
                self.repetition_penalty.map(Value::from),
            ),
        ];
        for (key, value) in optional {
            if let Some(value) = value {
                fields.insert(key.to_string(), value);
            }
        }
        if let Some(num_logprobs) = self.logprobs {
            match endpoint {
                Endpoint::Completions => {
                    fields.insert("logprobs".into(), json!(num_logprobs));
                }
                Endpoint::Chat => {
                    fields.insert("logprobs".into(), json!(true));
                    fields.insert("top_logprobs".into(), json!(num_logprobs));
                }
            }
        }
        fields
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_flags_given_are_sent_in_each_endpoints_words() {
        let none = SamplingArgs::default();
        assert!(none.body_fields(Endpoint::Chat).is_empty());
        let given = SamplingArgs {
            top_k: Some(20),
            min_p: Some(0.05),
            frequency_penalty: Some(-0.5),
            presence_penalty: Some(0.25),
            repetition_penalty: Some(1.1),
            logprobs: Some(3),
            ..SamplingArgs::default()
        };
        let completions = Value::Object(given.body_fields(Endpoint::Completions));
        assert_eq!(
            completions,
            json!({"top_k": 20, "min_p": 0.05, "frequency_penalty": -0.5,
                   "presence_penalty": 0.25, "repetition_penalty": 1.1, "logprobs": 3})
        );
        let chat = Value::Object(given.body_fields(Endpoint::Chat));
        assert_eq!(chat["logprobs"], json!(true));
        assert_eq!(chat["top_logprobs"], json!(3));
        assert_eq!(chat["top_k"], json!(20));
    }
}
