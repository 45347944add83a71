//! `--mock`: the engine's mock executor behind the real scheduler, with the text side of
//! `--model` when given (only its tokenizer is read) or a built-in byte tokenizer.

use std::time::Duration;

use anyhow::{bail, Context};
use pagoda_engine::models::ModelConfig;
use pagoda_engine::{
    start_mock_engine, EngineConfig, EngineHandle, MockConfig, MockOutputLen, MockStall,
};
use pagoda_text::prompt_side::PromptSide;
use pagoda_text::template::{ChatTemplate, CHATML_TEMPLATE};

use crate::args::ServerArgs;
use crate::mock_text::{byte_tokenizer, mock_output_token_ids, BYTE_TOKENIZER_VOCAB_SIZE};
use crate::prompt_side_setup::load_prompt_side;

/// Context length the mock claims with the built-in tokenizer.
pub const MOCK_CONTEXT_LEN: usize = 8192;

/// Parses `--mock-output-len`.
pub fn parse_output_len(text: &str) -> anyhow::Result<MockOutputLen> {
    let parts: Vec<&str> = text.split(':').collect();
    let number = |s: &str| {
        s.parse::<f64>()
            .with_context(|| format!("--mock-output-len {text:?}: {s:?} is not a number"))
    };
    Ok(match parts.as_slice() {
        ["max-tokens"] => MockOutputLen::MaxTokens,
        ["fixed", n] => MockOutputLen::Fixed(number(n)? as usize),
        ["uniform", min, max] => MockOutputLen::Uniform { min: number(min)? as usize, max: number(max)? as usize },
        ["normal", mean, std_dev] => MockOutputLen::Normal { mean: number(mean)?, std_dev: number(std_dev)? },
        _ => bail!("--mock-output-len {text:?}: expected max-tokens, fixed:N, uniform:MIN:MAX or normal:MEAN:STD_DEV"),
    })
}

fn millis(value: f64, flag: &str) -> anyhow::Result<Duration> {
    if !(value.is_finite() && value >= 0.0) {
        bail!("{flag} must be a number of milliseconds >= 0");
    }
    Ok(Duration::from_secs_f64(value / 1000.0))
}

/// Starts the mock engine; returns it with the text side and the name of what it imitates.
pub fn start_mock(
    args: &ServerArgs,
    config: EngineConfig,
) -> anyhow::Result<(EngineHandle, PromptSide, String)> {
    // The text side of `--tokenizer`, else of `--model`: the mock imitates what it reads.
    let text_path = args.tokenizer.as_ref().or(args.engine.model.as_ref());
    let (prompt_side, model, root) = match text_path {
        Some(path) => {
            let side = load_prompt_side(args, path)?;
            let eos = side.stop_token_ids.clone();
            let vocab_size = side.tokenizer.vocab_size();
            let model = ModelConfig::mock(vocab_size, eos, MOCK_CONTEXT_LEN);
            (side, model, path.display().to_string())
        }
        None => {
            let tokenizer = byte_tokenizer()?;
            let eos = tokenizer.eos_token_ids();
            let template = ChatTemplate::new(CHATML_TEMPLATE, None, Some("<|endoftext|>".into()))?;
            let side = PromptSide {
                stop_token_ids: eos.clone(),
                tokenizer,
                template,
            };
            let model = ModelConfig::mock(BYTE_TOKENIZER_VOCAB_SIZE, eos, MOCK_CONTEXT_LEN);
            (side, model, "mock".to_string())
        }
    };
    let mock = MockConfig {
        ttft: millis(args.mock.mock_ttft_ms, "--mock-ttft-ms")?,
        tpot: millis(args.mock.mock_tpot_ms, "--mock-tpot-ms")?,
        jitter: args.mock.mock_jitter,
        seed: args.mock.mock_seed,
        output_len: parse_output_len(&args.mock.mock_output_len)?,
        output_token_ids: mock_output_token_ids(&prompt_side.tokenizer)?,
        fail_after_tokens: args.mock.mock_fail_after_tokens,
        stall: match args.mock.mock_stall_after_tokens {
            None => None,
            Some(after_tokens) => Some(MockStall {
                after_tokens,
                duration: millis(args.mock.mock_stall_ms, "--mock-stall-ms")?,
            }),
        },
        step_time_per_token: Duration::ZERO,
    };
    let engine = start_mock_engine(config, model, mock)?;
    tracing::info!(
        ttft_ms = args.mock.mock_ttft_ms,
        tpot_ms = args.mock.mock_tpot_ms,
        "mock engine started (no model compute)"
    );
    Ok((engine, prompt_side, root))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_lengths_parse() {
        assert!(matches!(
            parse_output_len("max-tokens"),
            Ok(MockOutputLen::MaxTokens)
        ));
        assert!(matches!(
            parse_output_len("fixed:12"),
            Ok(MockOutputLen::Fixed(12))
        ));
        assert!(matches!(
            parse_output_len("uniform:1:9"),
            Ok(MockOutputLen::Uniform { min: 1, max: 9 })
        ));
        assert!(parse_output_len("normal:100:20").is_ok());
        assert!(parse_output_len("fixed").is_err());
        assert!(parse_output_len("fixed:x").is_err());
    }
}
