//! A conversation workload's requests → one [`ConversationPlan`] per conversation, and the
//! growing history each turn is sent with.

use super::super::outcome::RunError;
use crate::workload::{Message, Prompt, RequestSpec};

/// One turn as the dataset gave it.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct TurnPlan {
    /// What this turn adds before the reply: the opening messages (a system prompt, the first
    /// user message) for the first turn, the new user message for later ones.
    pub new_messages: Vec<Message>,
    /// Tokens of `new_messages` by the dataset's count.
    pub input_tokens: usize,
    pub output_tokens: usize,
    /// The `model` the turn names instead of the run's.
    pub model: Option<String>,
}

/// One conversation's turns, in order.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct ConversationPlan {
    pub turns: Vec<TurnPlan>,
}

/// Groups `specs` by conversation (in the order each conversation first appears), each one's
/// turns by index. Every spec must carry `conversation`, and each conversation's turns must be
/// `0, 1, …` without a gap or a repeat.
pub(super) fn plans_of(specs: &[RequestSpec]) -> Result<Vec<ConversationPlan>, RunError> {
    let bad = |message: String| Err(RunError::BadConversation(message));
    let mut order: Vec<usize> = Vec::new();
    let mut by_id: std::collections::HashMap<usize, Vec<(usize, &RequestSpec)>> =
        std::collections::HashMap::new();
    for (index, spec) in specs.iter().enumerate() {
        let Some((id, turn)) = spec.conversation else {
            return bad(format!("request {index} is not a turn of a conversation"));
        };
        let turns = by_id.entry(id).or_insert_with(|| {
            order.push(id);
            Vec::new()
        });
        turns.push((turn, spec));
    }
    let mut plans = Vec::with_capacity(order.len());
    for id in order {
        let mut turns = by_id.remove(&id).unwrap_or_default();
        turns.sort_by_key(|(turn, _)| *turn);
        if turns.iter().enumerate().any(|(k, (turn, _))| k != *turn) {
            return bad(format!(
                "conversation {id}: its turns are not 0, 1, 2, … without gaps"
            ));
        }
        let turns = turns
            .into_iter()
            .map(|(turn, spec)| turn_plan(turn, spec))
            .collect::<Result<_, _>>()?;
        plans.push(ConversationPlan { turns });
    }
    Ok(plans)
}

fn turn_plan(turn: usize, spec: &RequestSpec) -> Result<TurnPlan, RunError> {
    let mut messages = spec.prompt.as_messages();
    if turn > 0 {
        // A dataset's own history (ShareGPT's answers) is replaced by the actual replies.
        messages = messages.split_off(messages.len().saturating_sub(1));
    }
    if messages.is_empty() {
        return Err(RunError::BadConversation(format!(
            "turn {turn} of a conversation has no message"
        )));
    }
    Ok(TurnPlan {
        new_messages: messages,
        input_tokens: spec.input_tokens,
        output_tokens: spec.output_tokens,
        model: spec.model.clone(),
    })
}

/// What a conversation has said so far: every turn's messages and the model's actual replies.
#[derive(Debug, Default)]
pub(super) struct History {
    messages: Vec<Message>,
    /// Tokens of `messages` by the dataset's counts and the replies' output tokens: the prompt
    /// length recorded when a server sends no usage (counted again with the tokenizer, when
    /// there is one, after the request).
    num_tokens: usize,
}

impl History {
    /// The request of `turn`: the history so far, then the turn's new messages.
    pub fn request(&self, turn: &TurnPlan, conversation: (usize, usize)) -> RequestSpec {
        let mut messages = Vec::with_capacity(self.messages.len() + turn.new_messages.len());
        messages.extend_from_slice(&self.messages);
        messages.extend_from_slice(&turn.new_messages);
        RequestSpec {
            prompt: Prompt::Messages(messages),
            input_tokens: self.num_tokens + turn.input_tokens,
            output_tokens: turn.output_tokens,
            conversation: Some(conversation),
            model: turn.model.clone(),
        }
    }

    /// Adds a completed turn: its messages and the model's reply (`reply_tokens` long).
    pub fn push(&mut self, turn: &TurnPlan, reply: String, reply_tokens: usize) {
        self.messages.extend_from_slice(&turn.new_messages);
        self.messages.push(Message {
            role: "assistant".into(),
            content: reply,
        });
        self.num_tokens += turn.input_tokens + reply_tokens;
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn spec(id: usize, turn: usize, messages: &[(&str, &str)]) -> RequestSpec {
        RequestSpec {
            prompt: Prompt::Messages(
                messages
                    .iter()
                    .map(|(role, content)| Message {
                        role: role.to_string(),
                        content: content.to_string(),
                    })
                    .collect(),
            ),
            input_tokens: 3,
            output_tokens: 5,
            conversation: Some((id, turn)),
            model: None,
        }
    }

    #[test]
    fn groups_interleaved_turns_and_keeps_only_the_new_user_message() {
        let specs = [
            spec(7, 0, &[("system", "be brief"), ("user", "a0")]),
            spec(2, 0, &[("user", "b0")]),
            spec(
                7,
                1,
                &[("user", "a0"), ("assistant", "dataset"), ("user", "a1")],
            ),
        ];
        let plans = plans_of(&specs).unwrap();
        assert_eq!(plans.len(), 2);
        assert_eq!(plans[0].turns.len(), 2, "conversation 7 first");
        assert_eq!(plans[0].turns[0].new_messages.len(), 2, "the opening kept");
        assert_eq!(plans[0].turns[1].new_messages[0].content, "a1");
        let mut history = History::default();
        history.push(&plans[0].turns[0], "actual reply".into(), 4);
        let next = history.request(&plans[0].turns[1], (0, 1));
        let contents: Vec<String> = next
            .prompt
            .as_messages()
            .into_iter()
            .map(|m| m.content)
            .collect();
        assert_eq!(contents, ["be brief", "a0", "actual reply", "a1"]);
        assert_eq!(next.input_tokens, 3 + 4 + 3);
    }

    #[test]
    fn refuses_gaps_and_independent_requests() {
        let gap = [spec(1, 0, &[("user", "x")]), spec(1, 2, &[("user", "y")])];
        assert!(matches!(plans_of(&gap), Err(RunError::BadConversation(_))));
        let mut plain = spec(1, 0, &[("user", "x")]);
        plain.conversation = None;
        assert!(matches!(
            plans_of(&[plain]),
            Err(RunError::BadConversation(_))
        ));
    }
}
