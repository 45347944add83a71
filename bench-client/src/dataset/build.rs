//! [`build_workload`]: a [`DatasetConfig`] → the workload's requests, reproducibly from a seed.

use std::path::PathBuf;

use pagoda_text::tokenizer::TextTokenizer;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::conversation::{self, ConversationSource};
use super::error::DatasetError;
use super::exact_len::ExactTextGenerator;
use super::prefix_repetition::{self, PrefixRepetitionConfig};
use super::random::{self, RandomConfig};
use super::{jsonl, sharegpt, sharegpt_turns};
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
    /// Closed-loop conversations: `num_prompts` counts conversations, not requests.
    Conversations(ConversationSource),
}

/// The workload: `num_prompts` requests (conversations, for [`DatasetConfig::Conversations`])
/// from `config`, the same for the same `seed`.
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
                counting: sharegpt_turns::Counting::Turns,
            };
            turns.build(path, &conversations, tokenizer, &mut rng)
        }
        DatasetConfig::CustomJsonl {
            path,
            output_tokens,
        } => jsonl::build(path, *output_tokens, num_prompts, tokenizer),
        DatasetConfig::Conversations(source) => {
            conversation::build(source, num_prompts, tokenizer, &mut rng)
        }
    }
}

/// How many distinct requests a file dataset holds (ShareGPT: the human turns it can replay;
/// JSON Lines: its lines); `None` for the generated datasets, which never run out. A workload
/// longer than this repeats requests (vLLM's oversampling; `--no-oversample` stops there).
pub fn dataset_size(config: &DatasetConfig) -> Result<Option<usize>, DatasetError> {
    match config {
        DatasetConfig::ShareGpt {
            path,
            output_tokens,
        } => {
            let turns = sharegpt_turns::TurnSelection {
                num_prompts: 0,
                output_tokens: *output_tokens,
                counting: sharegpt_turns::Counting::Turns,
            };
            Ok(Some(turns.num_replayable(&sharegpt::load(path)?)))
        }
        DatasetConfig::CustomJsonl {
            path,
            output_tokens,
        } => Ok(Some(jsonl::num_requests(path, *output_tokens)?)),
        _ => Ok(None),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::dataset::test_support::{data_path, tokenizer};

    #[test]
    fn a_file_dataset_s_size_is_its_distinct_requests() {
        let sharegpt = DatasetConfig::ShareGpt {
            path: data_path("sharegpt_sample.json"),
            output_tokens: None,
        };
        let size = dataset_size(&sharegpt).unwrap().expect("a file dataset");
        assert!(size >= 3, "{size}");
        // One workload of exactly that size repeats nothing; one request more repeats one.
        let whole = build_workload(&sharegpt, size, tokenizer(), 3).unwrap();
        let distinct: std::collections::HashSet<String> =
            whole.iter().map(|r| format!("{:?}", r.prompt)).collect();
        assert_eq!(distinct.len(), size);
        let mut file = tempfile::NamedTempFile::new().unwrap();
        std::io::Write::write_all(&mut file, b"{\"prompt\": \"a\"}\n\n{\"prompt\": \"b\"}\n")
            .unwrap();
        let jsonl = DatasetConfig::CustomJsonl {
            path: file.path().to_path_buf(),
            output_tokens: Some(4),
        };
        assert_eq!(dataset_size(&jsonl).unwrap(), Some(2));
        let random = DatasetConfig::Random(RandomConfig::default());
        assert_eq!(dataset_size(&random).unwrap(), None);
    }

    #[test]
    fn every_dataset_gives_num_prompts_reproducibly() {
        let configs = [
            DatasetConfig::Random(RandomConfig {
                input_tokens: 40,
                output_tokens: 8,
                range_ratio: crate::dataset::RangeRatio::both(0.5),
                prefix_tokens: 4,
                ..RandomConfig::default()
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
