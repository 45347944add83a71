//! ShareGPT conversations → requests: every human turn becomes a request whose prompt is the
//! conversation so far (system, user and the dataset's assistant answers) plus that turn, and
//! whose output length is the dataset's answer to it.
//!
//! Selection: conversations in a seeded shuffled order, whole, until `num_prompts` turns are
//! taken (the last conversation may stop early; a short file is cycled, each pass under new
//! conversation ids). Order: a uniformly random merge of the conversations that keeps each one's
//! turns in order, so a conversation's next turn usually comes many requests after the previous
//! one, as it would from a user who reads the answer first.
//!
//! Each request carries `conversation: Some((conversation_id, turn_index))`. Since the history is
//! the dataset's own answers, a turn never needs the server's reply to the previous one: the
//! runner may send every request at its scheduled time (vLLM's behaviour, and an open-loop
//! benchmark's). A runner that wants closed-loop conversations can hold turn `t` until turn
//! `t − 1` has completed.

use std::collections::HashMap;
use std::path::Path;

use pagoda_text::tokenizer::TextTokenizer;
use rand::seq::SliceRandom;
use rand::Rng;

use super::error::DatasetError;
use super::read::count_tokens;
use super::sharegpt::{Conversation, Speaker};
use crate::workload::{Message, Prompt, RequestSpec};

/// How many turns to take and how long their answers are.
#[derive(Debug, Clone, Copy)]
pub(super) struct TurnSelection {
    /// Turns, or whole conversations (see `counting`).
    pub num_prompts: usize,
    /// Overrides every answer's length (`--output-len`).
    pub output_tokens: Option<usize>,
    pub counting: Counting,
}

/// What `num_prompts` counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Counting {
    /// Turns: the last conversation may stop early (open-loop replay).
    Turns,
    /// Whole conversations (closed-loop conversations, `--multi-turn`).
    Conversations,
}

/// A human turn to replay: its position in the conversation's turns, and its answer's.
#[derive(Debug, Clone, Copy)]
struct Replayable {
    human: usize,
    answer: Option<usize>,
}

/// `(input_tokens, output_tokens)` per `(conversation, human turn position)`.
type TokenCache = HashMap<(usize, usize), (usize, usize)>;

impl TurnSelection {
    pub fn build(
        &self,
        path: &Path,
        conversations: &[Conversation],
        tokenizer: &TextTokenizer,
        rng: &mut impl Rng,
    ) -> Result<Vec<RequestSpec>, DatasetError> {
        if self.output_tokens == Some(0) {
            return Err(DatasetError::InvalidConfig(
                "--output-len must be at least 1".into(),
            ));
        }
        if self.num_prompts == 0 {
            return Ok(Vec::new());
        }
        let playable: Vec<(usize, Vec<Replayable>)> = conversations
            .iter()
            .enumerate()
            .map(|(index, conversation)| (index, self.replayable_turns(conversation)))
            .filter(|(_, turns)| !turns.is_empty())
            .collect();
        if playable.is_empty() {
            return Err(DatasetError::Empty {
                path: path.display().to_string(),
                message: "no human turn has an answer (--output-len replays unanswered turns)"
                    .into(),
            });
        }
        let num_turns: Vec<usize> = playable.iter().map(|(_, turns)| turns.len()).collect();
        let slots = select_slots(&num_turns, self.num_prompts, self.counting, rng);
        let mut cache = TokenCache::new();
        interleave(&slots, rng)
            .into_iter()
            .map(|(slot, turn_index)| {
                let (conversation, turns) = &playable[slots[slot].0];
                let turn = turns[turn_index];
                let mut request =
                    self.request(conversations, *conversation, turn, tokenizer, &mut cache)?;
                request.conversation = Some((slot, turn_index));
                Ok(request)
            })
            .collect()
    }

    /// Human turns with an answer (or every human turn, when the answer length is given).
    /// The turns of `conversations` this selection can replay, counted.
    pub fn num_replayable(&self, conversations: &[Conversation]) -> usize {
        conversations
            .iter()
            .map(|conversation| self.replayable_turns(conversation).len())
            .sum()
    }

    fn replayable_turns(&self, conversation: &Conversation) -> Vec<Replayable> {
        let turns = &conversation.turns;
        (0..turns.len())
            .filter(|&position| turns[position].speaker == Speaker::Human)
            .map(|human| Replayable {
                human,
                answer: turns
                    .get(human + 1)
                    .filter(|turn| turn.speaker == Speaker::Gpt)
                    .map(|_| human + 1),
            })
            .filter(|turn| turn.answer.is_some() || self.output_tokens.is_some())
            .collect()
    }

    fn request(
        &self,
        conversations: &[Conversation],
        conversation: usize,
        turn: Replayable,
        tokenizer: &TextTokenizer,
        cache: &mut TokenCache,
    ) -> Result<RequestSpec, DatasetError> {
        let turns = &conversations[conversation].turns;
        let messages: Vec<Message> = turns[..=turn.human]
            .iter()
            .map(|t| Message {
                role: t.speaker.role().to_string(),
                content: t.text.clone(),
            })
            .collect();
        let prompt = Prompt::Messages(messages);
        let key = (conversation, turn.human);
        let (input_tokens, output_tokens) = match cache.get(&key) {
            Some(&counts) => counts,
            None => {
                let input_tokens = count_tokens(tokenizer, &prompt.as_text())?;
                let output_tokens = match (self.output_tokens, turn.answer) {
                    (Some(n), _) => n,
                    (None, Some(answer)) => count_tokens(tokenizer, &turns[answer].text)?.max(1),
                    (None, None) => 1, // Unreachable: unanswered turns need the override.
                };
                cache.insert(key, (input_tokens, output_tokens));
                (input_tokens, output_tokens)
            }
        };
        Ok(RequestSpec {
            prompt,
            input_tokens,
            output_tokens,
            conversation: None,
            model: None,
        })
    }
}

/// Conversations (given by their number of turns) in a shuffled order, whole, cycled until
/// `num_prompts` turns (or conversations): `(conversation, turns taken)` per slot, the slot being
/// the conversation id.
fn select_slots(
    num_turns: &[usize],
    num_prompts: usize,
    counting: Counting,
    rng: &mut impl Rng,
) -> Vec<(usize, usize)> {
    let mut order: Vec<usize> = (0..num_turns.len()).collect();
    order.shuffle(rng);
    let mut slots = Vec::new();
    let mut num_left = num_prompts;
    for &conversation in order.iter().cycle() {
        if num_left == 0 {
            break;
        }
        let num_taken = match counting {
            Counting::Turns => num_turns[conversation].min(num_left),
            Counting::Conversations => num_turns[conversation],
        };
        slots.push((conversation, num_taken));
        num_left -= match counting {
            Counting::Turns => num_taken,
            Counting::Conversations => 1,
        };
    }
    slots
}

/// A uniformly random merge of the slots' turns that keeps each slot's in order:
/// `(slot, turn index)` per request. (Shuffling the multiset of slot ids, then numbering each
/// slot's occurrences, draws every order-preserving merge with equal probability.)
fn interleave(slots: &[(usize, usize)], rng: &mut impl Rng) -> Vec<(usize, usize)> {
    let mut sequence: Vec<usize> = slots
        .iter()
        .enumerate()
        .flat_map(|(slot, &(_, num_taken))| std::iter::repeat_n(slot, num_taken))
        .collect();
    sequence.shuffle(rng);
    let mut next_turn = vec![0; slots.len()];
    sequence
        .into_iter()
        .map(|slot| {
            next_turn[slot] += 1;
            (slot, next_turn[slot] - 1)
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::collections::BTreeMap;

    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    use super::*;
    use crate::dataset::sharegpt::load;
    use crate::dataset::test_support::{data_path, tokenizer};

    fn build(num_prompts: usize, output_tokens: Option<usize>, seed: u64) -> Vec<RequestSpec> {
        let path = data_path("sharegpt_sample.json");
        let conversations = load(&path).unwrap();
        let selection = TurnSelection {
            num_prompts,
            output_tokens,
            counting: Counting::Turns,
        };
        selection
            .build(
                &path,
                &conversations,
                tokenizer(),
                &mut ChaCha8Rng::seed_from_u64(seed),
            )
            .unwrap()
    }

    /// Every answered human turn of the sample, as `(history length, answer)`.
    fn sample_turns() -> Vec<(usize, String)> {
        let conversations = load(&data_path("sharegpt_sample.json")).unwrap();
        let mut turns = Vec::new();
        for conversation in &conversations {
            for (i, pair) in conversation.turns.windows(2).enumerate() {
                if pair[0].speaker == Speaker::Human && pair[1].speaker == Speaker::Gpt {
                    turns.push((i + 1, pair[1].text.clone()));
                }
            }
        }
        turns
    }

    #[test]
    fn every_answered_turn_is_replayed_once_with_its_history() {
        let num_turns = sample_turns().len();
        let requests = build(num_turns, None, 3);
        assert_eq!(requests.len(), num_turns);
        let mut by_conversation: BTreeMap<usize, Vec<&RequestSpec>> = BTreeMap::new();
        for request in &requests {
            let (id, _) = request.conversation.unwrap();
            by_conversation.entry(id).or_default().push(request);
        }
        for turns in by_conversation.values() {
            for (index, request) in turns.iter().enumerate() {
                assert_eq!(request.conversation.unwrap().1, index, "turns in order");
                let Prompt::Messages(messages) = &request.prompt else {
                    panic!("messages")
                };
                assert_eq!(messages.last().unwrap().role, "user");
                if index > 0 {
                    let Prompt::Messages(previous) = &turns[index - 1].prompt else {
                        panic!()
                    };
                    assert!(messages.starts_with(previous), "history is kept");
                    assert_eq!(messages[previous.len()].role, "assistant");
                }
                let text = request.prompt.as_text();
                assert_eq!(
                    request.input_tokens,
                    tokenizer().encode(&text, false).unwrap().len()
                );
            }
        }
        let mut expected: Vec<(usize, usize)> = sample_turns()
            .iter()
            .map(|(n, answer)| (*n, tokenizer().encode(answer, false).unwrap().len().max(1)))
            .collect();
        let mut got: Vec<(usize, usize)> = requests
            .iter()
            .map(|r| (r.prompt.as_messages().len(), r.output_tokens))
            .collect();
        expected.sort_unstable();
        got.sort_unstable();
        assert_eq!(
            got, expected,
            "(history length, answer tokens) of every turn"
        );
    }

    #[test]
    fn a_short_file_is_cycled_under_new_conversation_ids() {
        let num_turns = sample_turns().len();
        let requests = build(num_turns * 2 + 1, None, 5);
        assert_eq!(requests.len(), num_turns * 2 + 1);
        let ids: std::collections::HashSet<usize> =
            requests.iter().map(|r| r.conversation.unwrap().0).collect();
        let num_conversations = load(&data_path("sharegpt_sample.json")).unwrap().len();
        assert!(ids.len() > num_conversations, "each pass has its own ids");
    }

    #[test]
    fn the_output_override_applies_to_every_turn_and_replays_unanswered_ones() {
        let is_unanswered =
            |r: &RequestSpec| r.prompt.as_messages().last().unwrap().content == "And three more?";
        let requests = build(sample_turns().len() + 1, Some(33), 1);
        assert!(requests.iter().all(|r| r.output_tokens == 33));
        assert_eq!(requests.iter().filter(|r| is_unanswered(r)).count(), 1);
        let requests = build(sample_turns().len(), None, 1);
        assert!(
            !requests.iter().any(is_unanswered),
            "no answer, no output length: skipped"
        );
    }

    #[test]
    fn the_merge_interleaves_conversations() {
        let requests = build(sample_turns().len(), None, 9);
        let ids: Vec<usize> = requests.iter().map(|r| r.conversation.unwrap().0).collect();
        let contiguous = ids.windows(2).filter(|w| w[0] != w[1]).count() + 1;
        let num_conversations: std::collections::HashSet<&usize> = ids.iter().collect();
        assert!(
            contiguous > num_conversations.len(),
            "conversations are interleaved: {ids:?}"
        );
    }
}
