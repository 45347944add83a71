//! Datasets → workloads: every dataset becomes `num_prompts` [`RequestSpec`]s, reproducibly from
//! a seed (one `ChaCha8Rng` per build), with token counts by the model's own tokenizer.
//!
//! - `random`: random text of exact token lengths, optionally after one shared prefix.
//! - `prefix-repetition`: a few shared prefixes, each request one of them plus a unique suffix.
//! - `sharegpt`: every human turn of a ShareGPT file, replayed with its conversation's history.
//! - custom JSONL: one prompt or message list per line.
//!
//! Selection: synthetic datasets generate exactly `num_prompts` requests. A file with fewer
//! requests than `num_prompts` is cycled: after its last request the workload starts again from
//! its first (JSONL in file order; ShareGPT in the same shuffled conversation order, each pass
//! under new conversation ids).

mod exact_len;
mod jsonl;
mod parallel;
mod prefix_repetition;
mod random;
mod sharegpt;
mod sharegpt_turns;
#[cfg(test)]
pub(crate) mod test_support;

use std::path::PathBuf;

use pagoda_text::tokenizer::{TextTokenizer, TokenizerError};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

pub use exact_len::{ExactTextGenerator, TokenizedText};
pub use prefix_repetition::PrefixRepetitionConfig;
pub use random::RandomConfig;

use crate::workload::RequestSpec;

/// Which dataset to build a workload from (the CLI's `--dataset-name` and its options).
#[derive(Debug, Clone, PartialEq)]
pub enum DatasetConfig {
    Random(RandomConfig),
    PrefixRepetition(PrefixRepetitionConfig),
    /// A ShareGPT JSON file; `output_tokens` overrides every answer's length.
    ShareGpt {
        path: PathBuf,
        output_tokens: Option<usize>,
    },
    /// One JSON object per line; `output_tokens` overrides every line's own.
    CustomJsonl {
        path: PathBuf,
        output_tokens: Option<usize>,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    #[error("cannot read {path}: {message}")]
    Io { path: String, message: String },
    /// A ShareGPT file's problem; `entry` names it (`entry 3 (id "abc")`).
    #[error("{path}: {entry}: {message}")]
    ShareGpt {
        path: String,
        entry: String,
        message: String,
    },
    #[error("{path}:{line}: {message}")]
    Jsonl {
        path: String,
        line: usize,
        message: String,
    },
    #[error("{path}: {message}")]
    Empty { path: String, message: String },
    #[error("invalid dataset option: {0}")]
    InvalidConfig(String),
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    #[error("could not build a random text of exactly {num_tokens} tokens")]
    ExactLength { num_tokens: usize },
}

impl From<TokenizerError> for DatasetError {
    fn from(e: TokenizerError) -> Self {
        DatasetError::Tokenizer(e.to_string())
    }
}

/// The workload: `num_prompts` requests from `config`, the same for the same `seed`.
pub fn build_workload(
    config: &DatasetConfig,
    num_prompts: usize,
    tokenizer: &TextTokenizer,
    seed: u64,
) -> Result<Vec<RequestSpec>, DatasetError> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    match config {
        DatasetConfig::Random(random) => {
            let generator = ExactTextGenerator::new(tokenizer)?;
            random::build(random, num_prompts, &generator, &mut rng)
        }
        DatasetConfig::PrefixRepetition(repetition) => {
            let generator = ExactTextGenerator::new(tokenizer)?;
            prefix_repetition::build(repetition, num_prompts, &generator, &mut rng)
        }
        DatasetConfig::ShareGpt {
            path,
            output_tokens,
        } => {
            let conversations = sharegpt::load(path)?;
            let turns = sharegpt_turns::TurnSelection {
                num_prompts,
                output_tokens: *output_tokens,
            };
            turns.build(path, &conversations, tokenizer, &mut rng)
        }
        DatasetConfig::CustomJsonl {
            path,
            output_tokens,
        } => jsonl::build(path, *output_tokens, num_prompts, tokenizer),
    }
}

/// Prompt tokens of a prompt text: its own tokens, no chat template, no BOS.
fn count_tokens(tokenizer: &TextTokenizer, text: &str) -> Result<usize, DatasetError> {
    Ok(tokenizer.encode(text, false)?.len())
}

fn read_file(path: &std::path::Path) -> Result<String, DatasetError> {
    std::fs::read_to_string(path).map_err(|e| DatasetError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    })
}

/// The chat roles a message may have.
fn is_known_role(role: &str) -> bool {
    matches!(role, "system" | "user" | "assistant")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::dataset::test_support::{data_path, tokenizer};

    #[test]
    fn every_dataset_gives_num_prompts_reproducibly() {
        let configs = [
            DatasetConfig::Random(RandomConfig {
                input_tokens: 40,
                output_tokens: 8,
                range_ratio: 0.5,
                prefix_tokens: 4,
            }),
            DatasetConfig::PrefixRepetition(PrefixRepetitionConfig {
                num_prefixes: 3,
                prefix_tokens: 20,
                suffix_tokens: 10,
                output_tokens: 5,
            }),
            DatasetConfig::ShareGpt {
                path: data_path("sharegpt_sample.json"),
                output_tokens: None,
            },
        ];
        for config in &configs {
            for num_prompts in [0, 1, 7, 25] {
                let workload = build_workload(config, num_prompts, tokenizer(), 11).unwrap();
                assert_eq!(workload.len(), num_prompts, "{config:?}");
                assert_eq!(
                    workload,
                    build_workload(config, num_prompts, tokenizer(), 11).unwrap()
                );
            }
            let a = build_workload(config, 25, tokenizer(), 1).unwrap();
            assert_ne!(
                a,
                build_workload(config, 25, tokenizer(), 2).unwrap(),
                "{config:?}"
            );
        }
    }

    #[test]
    fn a_missing_file_names_the_path() {
        let config = DatasetConfig::CustomJsonl {
            path: PathBuf::from("/nonexistent/prompts.jsonl"),
            output_tokens: None,
        };
        let error = build_workload(&config, 3, tokenizer(), 0)
            .unwrap_err()
            .to_string();
        assert!(error.contains("/nonexistent/prompts.jsonl"), "{error}");
    }
}
