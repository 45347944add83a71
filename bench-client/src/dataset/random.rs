//! The `random` dataset (as vLLM's): random token text of exact lengths, lengths drawn around the
//! requested ones (uniformly as vLLM, or normally as guidellm and AIPerf), optionally after one
//! shared random prefix.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::error::DatasetError;
use super::exact_len::ExactTextGenerator;
use super::length_sampler::LengthSampler;
use super::parallel;
use crate::workload::RequestSpec;

/// `--random-range-ratio`: how far lengths spread around their means, the prompt's and the
/// output's (vLLM's flag takes one number for both or `{"input": r, "output": r}`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RangeRatio {
    pub input: f64,
    pub output: f64,
}

impl RangeRatio {
    pub fn both(ratio: f64) -> Self {
        Self {
            input: ratio,
            output: ratio,
        }
    }

    /// The flag's value: a number, or a JSON object with `input` and `output`.
    pub fn parse(text: &str) -> Result<Self, String> {
        if let Ok(ratio) = text.trim().parse::<f64>() {
            return Ok(Self::both(ratio));
        }
        let object: serde_json::Value = serde_json::from_str(text).map_err(|_| {
            format!("expected a number or {{\"input\": r, \"output\": r}}, got {text:?}")
        })?;
        let ratio = |key: &str| {
            object
                .get(key)
                .and_then(serde_json::Value::as_f64)
                .ok_or_else(|| {
                    format!("a range-ratio object needs a number under {key:?}, got {text}")
                })
        };
        Ok(Self {
            input: ratio("input")?,
            output: ratio("output")?,
        })
    }
}

/// `--random-input-len`, `--random-output-len`, `--random-range-ratio`, `--random-prefix-len`,
/// `--random-input-len-stddev`, `--random-output-len-stddev`.
#[derive(Debug, Clone, PartialEq)]
pub struct RandomConfig {
    /// Mean prompt tokens after the prefix.
    pub input_tokens: usize,
    /// Mean tokens to generate.
    pub output_tokens: usize,
    /// Lengths are uniform in `[len·(1−r), len·(1+r)]`; `0 ≤ r < 1`, the prompt's and the
    /// output's.
    pub range_ratio: RangeRatio,
    /// Prompt lengths are normal with this standard deviation (0: `range_ratio` spreads them).
    pub input_stddev: f64,
    /// Output lengths are normal with this standard deviation (0: `range_ratio` spreads them).
    pub output_stddev: f64,
    /// Tokens of one random prefix shared by every prompt (0: none).
    pub prefix_tokens: usize,
}

impl Default for RandomConfig {
    /// vLLM's defaults.
    fn default() -> Self {
        Self {
            input_tokens: 1024,
            output_tokens: 128,
            range_ratio: RangeRatio::both(0.0),
            input_stddev: 0.0,
            output_stddev: 0.0,
            prefix_tokens: 0,
        }
    }
}

impl RandomConfig {
    /// The samplers of the prompt and output lengths.
    fn samplers(&self) -> Result<(LengthSampler, LengthSampler), DatasetError> {
        Ok((
            LengthSampler::new(
                "--random-input-len",
                self.input_tokens,
                self.range_ratio.input,
                self.input_stddev,
            )?,
            LengthSampler::new(
                "--random-output-len",
                self.output_tokens,
                self.range_ratio.output,
                self.output_stddev,
            )?,
        ))
    }
}

pub(super) fn build(
    config: &RandomConfig,
    num_prompts: usize,
    generator: &ExactTextGenerator,
    rng: &mut impl Rng,
) -> Result<Vec<RequestSpec>, DatasetError> {
    let (input_lengths, output_lengths) = config.samplers()?;
    let prefix = generator.text(config.prefix_tokens, rng)?;
    // (input tokens, output tokens, text seed) per request, drawn in order: request `i` is the
    // same whatever `num_prompts` and however many threads write the texts.
    let plans: Vec<(usize, usize, u64)> = (0..num_prompts)
        .map(|_| {
            let input_tokens = input_lengths.sample(rng);
            (input_tokens, output_lengths.sample(rng), rng.random())
        })
        .collect();
    parallel::try_map(&plans, |&(input_tokens, output_tokens, seed)| {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let suffix = generator.continuation(&prefix, input_tokens, &mut rng)?;
        Ok(RequestSpec::text(
            format!("{}{suffix}", prefix.text),
            config.prefix_tokens + input_tokens,
            output_tokens,
        ))
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::dataset::length_sampler::length_range;
    use crate::dataset::test_support::tokenizer;
    use crate::workload::Prompt;

    fn build_random(config: &RandomConfig, num_prompts: usize, seed: u64) -> Vec<RequestSpec> {
        let generator = ExactTextGenerator::new(tokenizer()).unwrap();
        build(
            config,
            num_prompts,
            &generator,
            &mut ChaCha8Rng::seed_from_u64(seed),
        )
        .unwrap()
    }

    fn text(request: &RequestSpec) -> &str {
        match &request.prompt {
            Prompt::Text(text) => text,
            Prompt::Messages(_) => panic!("random prompts are texts"),
        }
    }

    #[test]
    fn prompts_have_exactly_their_token_counts() {
        let config = RandomConfig {
            input_tokens: 300,
            output_tokens: 50,
            range_ratio: RangeRatio::both(0.9),
            prefix_tokens: 0,
            ..RandomConfig::default()
        };
        let requests = build_random(&config, 60, 4);
        let (input_range, output_range) = (length_range(300, 0.9), length_range(50, 0.9));
        for request in &requests {
            assert_eq!(
                tokenizer().encode(text(request), false).unwrap().len(),
                request.input_tokens
            );
            assert!(input_range.contains(&request.input_tokens));
            assert!(output_range.contains(&request.output_tokens));
        }
        let distinct: std::collections::HashSet<_> =
            requests.iter().map(|r| r.input_tokens).collect();
        assert!(distinct.len() > 30, "lengths should vary: {distinct:?}");
    }

    #[test]
    fn prompt_and_output_spread_each_by_their_own_ratio() {
        let parsed = RangeRatio::parse(r#"{"input": 0, "output": 0.5}"#).expect("valid");
        assert_eq!(
            parsed,
            RangeRatio {
                input: 0.0,
                output: 0.5
            }
        );
        assert_eq!(RangeRatio::parse("0.25"), Ok(RangeRatio::both(0.25)));
        for bad in ["x", r#"{"input": 0.1}"#, r#"{"input": "a", "output": 0.1}"#] {
            assert!(RangeRatio::parse(bad).is_err(), "{bad}");
        }
        let config = RandomConfig {
            input_tokens: 40,
            output_tokens: 40,
            range_ratio: parsed,
            ..RandomConfig::default()
        };
        let requests = build_random(&config, 40, 9);
        assert!(requests.iter().all(|r| r.input_tokens == 40));
        let outputs: std::collections::HashSet<_> =
            requests.iter().map(|r| r.output_tokens).collect();
        assert!(outputs.len() > 5, "output lengths vary: {outputs:?}");
        assert!(outputs.iter().all(|n| length_range(40, 0.5).contains(n)));
    }

    #[test]
    fn a_shared_prefix_keeps_its_tokens_in_every_prompt() {
        for (prefix_tokens, input_tokens) in [(1, 1), (16, 3), (200, 100), (1000, 24)] {
            let config = RandomConfig {
                input_tokens,
                output_tokens: 8,
                range_ratio: RangeRatio::both(0.5),
                prefix_tokens,
                ..RandomConfig::default()
            };
            let requests = build_random(&config, 12, prefix_tokens as u64);
            let first = tokenizer().encode(text(&requests[0]), false).unwrap();
            let prefix_ids = &first[..prefix_tokens];
            for request in &requests {
                let ids = tokenizer().encode(text(request), false).unwrap();
                assert_eq!(ids.len(), request.input_tokens);
                assert!(request.input_tokens > prefix_tokens);
                assert_eq!(
                    &ids[..prefix_tokens],
                    prefix_ids,
                    "the shared prefix's tokens differ"
                );
            }
        }
    }

    #[test]
    fn a_longer_workload_starts_with_the_shorter_one() {
        let config = RandomConfig {
            input_tokens: 20,
            output_tokens: 4,
            range_ratio: RangeRatio::both(0.5),
            prefix_tokens: 3,
            ..RandomConfig::default()
        };
        let long = build_random(&config, 20, 6);
        assert_eq!(build_random(&config, 5, 6), long[..5]);
    }

    #[test]
    fn normal_lengths_vary_and_prompts_keep_their_exact_counts() {
        let config = RandomConfig {
            input_tokens: 200,
            output_tokens: 40,
            input_stddev: 60.0,
            output_stddev: 10.0,
            ..RandomConfig::default()
        };
        let requests = build_random(&config, 80, 9);
        for request in &requests {
            let ids = tokenizer().encode(text(request), false).unwrap();
            assert_eq!(ids.len(), request.input_tokens);
            assert!(request.output_tokens >= 1);
        }
        let inputs: Vec<f64> = requests.iter().map(|r| r.input_tokens as f64).collect();
        let mean = inputs.iter().sum::<f64>() / inputs.len() as f64;
        // Standard error of the mean: 60/√80 ≈ 6.7 tokens; the band is 4 of them.
        assert!((mean - 200.0).abs() < 27.0, "mean prompt length {mean}");
        assert!(
            inputs.iter().any(|&len| len < 140.0) && inputs.iter().any(|&len| len > 260.0),
            "a standard deviation of 60 reaches beyond one σ: {inputs:?}"
        );
    }

    #[test]
    fn rejects_invalid_options() {
        let generator = ExactTextGenerator::new(tokenizer()).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        for config in [
            RandomConfig {
                range_ratio: RangeRatio::both(1.0),
                ..RandomConfig::default()
            },
            RandomConfig {
                range_ratio: RangeRatio::both(-0.1),
                ..RandomConfig::default()
            },
            RandomConfig {
                input_tokens: 0,
                ..RandomConfig::default()
            },
            RandomConfig {
                output_tokens: 0,
                ..RandomConfig::default()
            },
            RandomConfig {
                range_ratio: RangeRatio::both(0.1),
                output_stddev: 3.0,
                ..RandomConfig::default()
            },
        ] {
            assert!(matches!(
                build(&config, 1, &generator, &mut rng),
                Err(DatasetError::InvalidConfig(_))
            ));
        }
    }
}
