//! `pagoda-bench serve` flags of closed-loop conversations (`--multi-turn` for ShareGPT,
//! `--dataset-name conversation`), checked once and turned into the dataset's and the runner's
//! settings.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::bail;
use clap::Args;

use crate::cli::dataset_name::DatasetName;
use crate::dataset::{ConversationSource, SyntheticConversationConfig};
use crate::runner::{ConversationConfig, ConversationSummary};

/// Conversations in a closed loop: turn t + 1 is sent after turn t has ended and the think time
/// has passed, with the model's actual replies in its history.
#[derive(Debug, Clone, Args)]
pub struct ConversationArgs {
    /// sharegpt: send each conversation's human turns in a closed loop with the model's actual
    /// replies as history (--num-prompts then counts conversations).
    #[arg(long)]
    pub multi_turn: bool,
    /// conversation: turns per conversation.
    #[arg(long, default_value_t = 5)]
    pub num_turns: usize,
    /// conversation: tokens of new user text per turn (exact, by the tokenizer).
    #[arg(long, default_value_t = 128)]
    pub turn_input_len: usize,
    /// conversation: tokens to generate per turn.
    #[arg(long, default_value_t = 64)]
    pub turn_output_len: usize,
    /// conversation: tokens of a system prompt every conversation opens with, the same for all
    /// (0: none).
    #[arg(long, default_value_t = 0)]
    pub system_prompt_len: usize,
    /// Conversations: milliseconds from a turn's end to the next turn's send.
    #[arg(long, value_name = "MS", default_value_t = 0.0)]
    pub think_time: f64,
    /// Conversations: send `NAME: conv-<seed>-<conversation id>` with every turn (for
    /// session-affinity routers), e.g. --session-header X-Session-ID.
    #[arg(long, value_name = "NAME")]
    pub session_header: Option<String>,
}

impl ConversationArgs {
    /// Whether the run is one of conversations; an error for conversation flags without one.
    pub fn is_conversation_run(&self, dataset: DatasetName) -> anyhow::Result<bool> {
        if self.multi_turn && dataset != DatasetName::Sharegpt {
            bail!("--multi-turn replays ShareGPT conversations: it needs --dataset-name sharegpt");
        }
        let conversations = self.multi_turn || dataset == DatasetName::Conversation;
        if !conversations && (self.think_time != 0.0 || self.session_header.is_some()) {
            bail!(
                "--think-time and --session-header apply to conversations: use \
                 --dataset-name conversation or --dataset-name sharegpt --multi-turn"
            );
        }
        if !(self.think_time.is_finite() && self.think_time >= 0.0) {
            bail!(
                "--think-time {} must be a number of ms >= 0",
                self.think_time
            );
        }
        Ok(conversations)
    }

    /// The synthetic `conversation` dataset.
    pub fn synthetic(&self) -> ConversationSource {
        ConversationSource::Synthetic(SyntheticConversationConfig {
            num_turns: self.num_turns,
            turn_input_tokens: self.turn_input_len,
            turn_output_tokens: self.turn_output_len,
            system_prompt_tokens: self.system_prompt_len,
        })
    }

    /// ShareGPT conversations (`--multi-turn`).
    pub fn sharegpt(&self, path: PathBuf, output_tokens: Option<usize>) -> ConversationSource {
        ConversationSource::ShareGpt {
            path,
            output_tokens,
        }
    }

    /// The runner's settings, for a conversation run; session ids are `conv-<seed>-<id>`.
    pub fn runner_config(&self, seed: u64) -> ConversationConfig {
        ConversationConfig {
            think_time: Duration::from_secs_f64(self.think_time / 1e3),
            session_header: self.session_header.clone(),
            session_prefix: format!("conv-{seed}"),
        }
    }
}

/// The lines the report prints about a run's conversations.
pub fn render_conversations(summary: &ConversationSummary) -> String {
    let line = |label: &str, value: String| format!("{label:<40} {value}\n");
    let mut out = format!("{:-^50}\n", " Conversations ");
    out += &line(
        "Conversations started / scheduled:",
        format!("{} / {}", summary.num_started, summary.num_conversations),
    );
    out += &line(
        "Completed / failed / cut by duration:",
        format!(
            "{} / {} / {}",
            summary.num_completed, summary.num_failed, summary.num_cut_short
        ),
    );
    out += &line(
        "Mean turns per conversation:",
        format!("{:.2}", summary.mean_turns),
    );
    out += &line("Think time (ms):", format!("{:.1}", summary.think_time_ms));
    if let Some(header) = &summary.session_header {
        out += &line("Session header:", header.clone());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::serve_args::ServeArgs;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        serve: ServeArgs,
    }

    fn parse(line: &str) -> ServeArgs {
        Cli::try_parse_from(line.split(' ')).expect("parses").serve
    }

    #[test]
    fn conversation_flags_need_a_conversation_run() {
        let args = parse("x --dataset-name conversation --think-time 250 --session-header X-S");
        assert!(args
            .conversation
            .is_conversation_run(args.dataset_name)
            .is_ok_and(|c| c));
        let config = args.conversation.runner_config(3);
        assert_eq!(config.think_time, Duration::from_millis(250));
        assert_eq!(config.session_prefix, "conv-3");
        for line in [
            "x --dataset-name random --think-time 10",
            "x --dataset-name random --session-header X-S",
            "x --dataset-name random --multi-turn",
            "x --dataset-name conversation --think-time=-1",
        ] {
            let args = parse(line);
            let error = args.conversation.is_conversation_run(args.dataset_name);
            assert!(error.is_err(), "{line}");
        }
        let plain = parse("x --dataset-name sharegpt");
        assert!(plain
            .conversation
            .is_conversation_run(plain.dataset_name)
            .is_ok_and(|c| !c));
    }
}
