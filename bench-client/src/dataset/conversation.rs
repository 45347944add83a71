//! Conversation workloads for the closed-loop runner (`--dataset-name conversation`, ShareGPT
//! with `--multi-turn`): `num_prompts` **conversations**, each a run of turns.
//!
//! A conversation is given as requests carrying `conversation: Some((conversation_id,
//! turn_index))`, turns from 0 without gaps, each prompt ending with the turn's user message. The
//! first turn's prompt opens the conversation (a system prompt, then the first user message);
//! from the second turn on only the last message (the new user message) is sent: the runner
//! replaces whatever history a dataset carries with the model's actual replies
//! (`runner::conversation`).
//!
//! - Synthetic ([`SyntheticConversationConfig`]): `num_turns` turns of exactly
//!   `turn_input_tokens` tokens of random text each (by the tokenizer, as the `random` dataset),
//!   each asking for `turn_output_tokens`; optionally a system prompt of `system_prompt_tokens`
//!   shared by every conversation (a prefix a prefix cache can share across conversations).
//! - ShareGPT: the conversations of the file, whole, in a seeded shuffled order (cycled under new
//!   ids when the file has fewer); each human turn's output length is its answer's (or
//!   `--output-len`).

use std::path::PathBuf;

use pagoda_text::tokenizer::TextTokenizer;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::error::DatasetError;
use super::exact_len::ExactTextGenerator;
use super::sharegpt;
use super::sharegpt_turns::{Counting, TurnSelection};
use crate::workload::{Message, Prompt, RequestSpec};

/// `--num-turns`, `--turn-input-len`, `--turn-output-len`, `--system-prompt-len`.
#[derive(Debug, Clone, PartialEq)]
pub struct SyntheticConversationConfig {
    pub num_turns: usize,
    /// Tokens of new user text per turn.
    pub turn_input_tokens: usize,
    /// Tokens to generate per turn.
    pub turn_output_tokens: usize,
    /// Tokens of a system prompt every conversation opens with (0: none).
    pub system_prompt_tokens: usize,
}

/// Where the conversations come from.
#[derive(Debug, Clone, PartialEq)]
pub enum ConversationSource {
    Synthetic(SyntheticConversationConfig),
    /// A ShareGPT file; `output_tokens` overrides every answer's length.
    ShareGpt {
        path: PathBuf,
        output_tokens: Option<usize>,
    },
}

/// `num_conversations` conversations' turns, conversation after conversation.
pub(super) fn build(
    source: &ConversationSource,
    num_conversations: usize,
    tokenizer: &TextTokenizer,
    rng: &mut ChaCha8Rng,
) -> Result<Vec<RequestSpec>, DatasetError> {
    match source {
        ConversationSource::Synthetic(config) => {
            let generator = ExactTextGenerator::new(tokenizer)?;
            synthetic(config, num_conversations, &generator, rng)
        }
        ConversationSource::ShareGpt {
            path,
            output_tokens,
        } => {
            let conversations = sharegpt::load(path)?;
            let selection = TurnSelection {
                num_prompts: num_conversations,
                output_tokens: *output_tokens,
                counting: Counting::Conversations,
            };
            selection.build(path, &conversations, tokenizer, rng)
        }
    }
}

impl SyntheticConversationConfig {
    fn validate(&self) -> Result<(), DatasetError> {
        if self.num_turns == 0 || self.turn_input_tokens == 0 || self.turn_output_tokens == 0 {
            return Err(DatasetError::InvalidConfig(
                "--num-turns, --turn-input-len and --turn-output-len must be at least 1".into(),
            ));
        }
        Ok(())
    }
}

fn synthetic(
    config: &SyntheticConversationConfig,
    num_conversations: usize,
    generator: &ExactTextGenerator,
    rng: &mut ChaCha8Rng,
) -> Result<Vec<RequestSpec>, DatasetError> {
    config.validate()?;
    let system = generator.text(config.system_prompt_tokens, rng)?.text;
    // One text seed per conversation, drawn in order: conversation `i` is the same whatever
    // `num_conversations` and however many threads write the texts.
    let seeds: Vec<(usize, u64)> = (0..num_conversations)
        .map(|id| (id, rng.random()))
        .collect();
    let conversations = super::parallel::try_map(&seeds, |&(id, seed)| {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        (0..config.num_turns)
            .map(|turn| {
                let text = generator.text(config.turn_input_tokens, &mut rng)?.text;
                let mut messages = Vec::with_capacity(2);
                let mut input_tokens = config.turn_input_tokens;
                if turn == 0 && config.system_prompt_tokens > 0 {
                    messages.push(message("system", &system));
                    input_tokens += config.system_prompt_tokens;
                }
                messages.push(message("user", &text));
                Ok(RequestSpec {
                    prompt: Prompt::Messages(messages),
                    input_tokens,
                    output_tokens: config.turn_output_tokens,
                    conversation: Some((id, turn)),
                    model: None,
                })
            })
            .collect::<Result<Vec<_>, DatasetError>>()
    })?;
    Ok(conversations.into_iter().flatten().collect())
}

fn message(role: &str, content: &str) -> Message {
    Message {
        role: role.into(),
        content: content.into(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::dataset::test_support::{data_path, tokenizer};

    fn build_with(source: &ConversationSource, num: usize, seed: u64) -> Vec<RequestSpec> {
        build(
            source,
            num,
            tokenizer(),
            &mut ChaCha8Rng::seed_from_u64(seed),
        )
        .unwrap()
    }

    fn synthetic_source(system_prompt_tokens: usize) -> ConversationSource {
        ConversationSource::Synthetic(SyntheticConversationConfig {
            num_turns: 4,
            turn_input_tokens: 37,
            turn_output_tokens: 9,
            system_prompt_tokens,
        })
    }

    #[test]
    fn synthetic_turns_have_exact_lengths_and_one_shared_system_prompt() {
        let specs = build_with(&synthetic_source(20), 3, 7);
        assert_eq!(specs.len(), 12, "3 conversations of 4 turns");
        let mut systems = std::collections::HashSet::new();
        for (k, spec) in specs.iter().enumerate() {
            assert_eq!(spec.conversation, Some((k / 4, k % 4)));
            assert_eq!(spec.output_tokens, 9);
            let messages = spec.prompt.as_messages();
            let user = messages.last().unwrap();
            assert_eq!(user.role, "user");
            assert_eq!(tokenizer().encode(&user.content, false).unwrap().len(), 37);
            if k % 4 == 0 {
                assert_eq!(messages.len(), 2, "a system prompt opens each conversation");
                assert_eq!(messages[0].role, "system");
                systems.insert(messages[0].content.clone());
                assert_eq!(spec.input_tokens, 57);
            } else {
                assert_eq!(messages.len(), 1, "later turns carry only the new message");
                assert_eq!(spec.input_tokens, 37);
            }
        }
        assert_eq!(systems.len(), 1, "one system prompt for all");
        assert_eq!(
            specs,
            build_with(&synthetic_source(20), 3, 7),
            "reproducible"
        );
        let fewer = build_with(&synthetic_source(20), 2, 7);
        assert_eq!(
            fewer[..],
            specs[..8],
            "conversation i is the same for any count"
        );
    }

    #[test]
    fn no_system_prompt_by_default_and_zero_lengths_are_refused() {
        let specs = build_with(&synthetic_source(0), 1, 1);
        assert!(specs.iter().all(|s| s.prompt.as_messages().len() == 1));
        let zero = ConversationSource::Synthetic(SyntheticConversationConfig {
            num_turns: 0,
            turn_input_tokens: 1,
            turn_output_tokens: 1,
            system_prompt_tokens: 0,
        });
        let error = build(&zero, 1, tokenizer(), &mut ChaCha8Rng::seed_from_u64(0));
        assert!(matches!(error, Err(DatasetError::InvalidConfig(_))));
    }

    #[test]
    fn sharegpt_gives_whole_conversations_counted_as_conversations() {
        let source = ConversationSource::ShareGpt {
            path: data_path("sharegpt_sample.json"),
            output_tokens: None,
        };
        for num in [1, 2, 9] {
            let specs = build_with(&source, num, 3);
            let ids: std::collections::BTreeSet<usize> =
                specs.iter().map(|s| s.conversation.unwrap().0).collect();
            assert_eq!(ids.len(), num, "{num} conversations");
            for id in ids {
                let mut turns: Vec<usize> = specs
                    .iter()
                    .filter_map(|s| s.conversation.filter(|c| c.0 == id).map(|c| c.1))
                    .collect();
                turns.sort_unstable();
                let expected: Vec<usize> = (0..turns.len()).collect();
                assert_eq!(turns, expected, "whole, from turn 0");
            }
        }
    }
}
