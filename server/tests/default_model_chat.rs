//! The default model (SmolLM2-135M-Instruct) through `TextGenerator`, greedy: it answers fixed chat
//! prompts sensibly, batching does not change answers, `ignore_eos` and over-long prompts behave.
//!
//! Needs the default model: `scripts/fetch-default-model.sh` puts it in `models/`.
//! The engine runs with its default configuration (int8 weights, f32 activations), as users run
//! it; the answers below match an independent numpy f32 forward pass of the same file.

mod common;

use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::Instant;

use pagoda_engine::{EngineConfig, EngineError, FinishReason, SamplingParams, StopConditions};
use pagoda_server::generate::{GenerateError, Generation, TextGenerator};
use pagoda_text::template::ChatMessage;

/// Prompts and a phrase the answer must contain. Greedy answers (int8 and f32 weights alike):
/// "The capital of France is Paris.", "The capital of Japan is Tokyo.",
/// "The chemical symbol for water is H2O.", "The answer to this classic math problem is 4."
const QUESTIONS: &[(&str, &str)] = &[
    ("What is the capital of France?", "Paris"),
    ("What is the capital of Japan?", "Tokyo"),
    ("What is the chemical symbol for water?", "H2O"),
    ("What is 2+2?", "is 4"),
];

/// One engine for the whole file. Tests take turns on it, so a request run "alone" is alone.
fn generator() -> MutexGuard<'static, TextGenerator> {
    static GENERATOR: OnceLock<Mutex<TextGenerator>> = OnceLock::new();
    let generator = GENERATOR.get_or_init(|| {
        // The default configuration, int8 weights included: what users run.
        let config = EngineConfig::default();
        let generator =
            TextGenerator::load(common::model_path(), config).expect("the default model loads");
        Mutex::new(generator)
    });
    // A failed test must not fail the others through a poisoned lock.
    generator
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn stop_after(max_tokens: usize) -> StopConditions {
    StopConditions {
        max_tokens: Some(max_tokens),
        ..StopConditions::default()
    }
}

fn ask(generator: &TextGenerator, question: &str) -> Result<Generation, GenerateError> {
    let prompt = generator.chat_prompt_ids(&[ChatMessage::new("user", question)])?;
    generator.generate(prompt, SamplingParams::greedy(), stop_after(32), |_| {})
}

#[test]
fn answers_simple_questions() {
    let generator = generator();
    let mut wrong = Vec::new();
    for &(question, expected) in QUESTIONS {
        let mut streamed = String::new();
        let prompt = generator
            .chat_prompt_ids(&[ChatMessage::new("user", question)])
            .expect("the prompt renders");
        let answer = generator
            .generate(prompt, SamplingParams::greedy(), stop_after(32), |delta| {
                streamed.push_str(delta)
            })
            .expect("generation succeeds");
        assert_eq!(
            streamed, answer.text,
            "{question}: streamed text = final text"
        );
        if !answer.text.contains(expected) {
            wrong.push(format!("{question:?} -> {:?}", answer.text));
        }
        // Each is a one-sentence answer that ends the turn by itself.
        assert_eq!(
            answer.finish_reason,
            FinishReason::Stop {
                stop_token_id: None
            },
            "{question}: {:?}",
            answer.text
        );
        assert_eq!(answer.usage.completion_tokens, answer.token_ids.len());
        assert!(answer.ttft.is_some_and(|ttft| ttft <= answer.total));
    }
    assert!(wrong.is_empty(), "wrong answers:\n{}", wrong.join("\n"));
}

#[test]
fn concurrent_requests_give_the_same_text_as_alone() {
    let generator = generator();
    let questions: Vec<&str> = QUESTIONS.iter().take(3).map(|&(q, _)| q).collect();
    let alone: Vec<Generation> = questions
        .iter()
        .map(|q| ask(&generator, q).expect("generation succeeds"))
        .collect();
    let together: Vec<(Instant, Generation)> = std::thread::scope(|scope| {
        let threads: Vec<_> = questions
            .iter()
            .map(|q| {
                let generator = &*generator;
                scope.spawn(move || (Instant::now(), ask(generator, q)))
            })
            .collect();
        threads
            .into_iter()
            .map(|t| {
                let (start, result) = t.join().expect("no thread panics");
                (start, result.expect("generation succeeds"))
            })
            .collect()
    });
    // The requests really ran at the same time: every one started before any one ended.
    let last_start = together.iter().map(|(s, _)| *s).max().expect("some");
    let first_end = together.iter().map(|(s, g)| *s + g.total).min();
    assert!(first_end.is_some_and(|end| last_start < end));
    for ((question, alone), (_, together)) in questions.iter().zip(&alone).zip(&together) {
        assert_eq!(alone.text, together.text, "{question}");
        assert_eq!(alone.token_ids, together.token_ids, "{question}");
    }
}

#[test]
fn ignore_eos_generates_exactly_max_tokens() {
    let generator = generator();
    let prompt = generator
        .chat_prompt_ids(&[ChatMessage::new("user", QUESTIONS[0].0)])
        .expect("the prompt renders");
    let stop = StopConditions {
        ignore_eos: true,
        ..stop_after(12)
    };
    let generation = generator
        .generate(prompt, SamplingParams::greedy(), stop, |_| {})
        .expect("generation succeeds");
    assert_eq!(generation.finish_reason, FinishReason::Length);
    assert_eq!(generation.usage.completion_tokens, 12);
    assert_eq!(generation.token_ids.len(), 12);
    // Without ignore_eos the answer ends after 8 tokens; here it ran past that EOS.
    let eos = generator.tokenizer().eos_token_ids();
    assert!(
        generation.token_ids[..11].iter().any(|id| eos.contains(id)),
        "{:?}",
        generation.token_ids
    );
}

#[test]
fn a_prompt_longer_than_max_model_len_is_an_error() {
    let generator = generator();
    let max_model_len = generator.handle().info().max_model_len;
    let long_question = "hello ".repeat(max_model_len + 10);
    let prompt = generator
        .chat_prompt_ids(&[ChatMessage::new("user", long_question)])
        .expect("the prompt renders");
    assert!(prompt.len() > max_model_len);
    let result = generator.generate(prompt, SamplingParams::greedy(), stop_after(8), |_| {
        panic!("no text for a refused request")
    });
    assert!(
        matches!(
            &result,
            Err(GenerateError::Engine(EngineError::RequestTooLarge(m))) if m.contains("max_model_len")
        ),
        "{result:?}"
    );
    // The engine still serves afterwards.
    let answer = ask(&generator, QUESTIONS[0].0).expect("generation succeeds");
    assert!(answer.text.contains("Paris"), "{:?}", answer.text);
}
