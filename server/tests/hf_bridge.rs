//! The default model as a Hugging Face directory: the GGUF is converted
//! (`pagoda_engine::testing::convert_gguf_to_hf` for config and f32 safetensors,
//! `pagoda_text::hf_files::write_tokenizer_files` for the tokenizer and chat template) and the
//! directory must behave as the GGUF does: same prompt ids, same logits, same greedy tokens.
//!
//! Needs the default model: `scripts/fetch-default-model.sh` puts it in `models/`.
//! The converted directory (~540 MB of f32 weights, ~2 s to write) is a temporary directory,
//! shared by the tests running at the same time and removed when the last of them is done.
//! The whole file takes about a minute on two cores (measured 2026-11-21: 56 s).

#![allow(clippy::unwrap_used)]

mod common;

use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};
use std::time::Instant;

use pagoda_engine::models::WeightFormat;
use pagoda_engine::testing::{convert_gguf_to_hf, last_token_logits};
use pagoda_engine::{EngineConfig, FinishReason, SamplingParams, StopConditions};
use pagoda_server::generate::TextGenerator;
use pagoda_text::hf_files::write_tokenizer_files;
use pagoda_text::template::{ChatMessage, ChatTemplate};
use pagoda_text::tokenizer::TextTokenizer;
use pagoda_text::tokenizer_spec::read_tokenizer_spec;

/// The questions of `default_model_chat.rs` and a phrase each answer must contain.
const QUESTIONS: &[(&str, &str)] = &[
    ("What is the capital of France?", "Paris"),
    ("What is the capital of Japan?", "Tokyo"),
    ("What is the chemical symbol for water?", "H2O"),
    ("What is 2+2?", "is 4"),
];

/// Prompts whose greedy continuations are compared: raw text, and chat questions.
const RAW_PROMPTS: &[&str] = &[
    "The capital of France is",
    "Once upon a time, in a small village,",
    "def fibonacci(n):\n",
    "Prime numbers: 2, 3, 5, 7,",
];
const CHAT_PROMPTS: &[&str] = &[
    "What is the capital of France?",
    "What is the chemical symbol for water?",
    "Write a short poem about the sea.",
    "Explain photosynthesis in one sentence.",
];
const MAX_TOKENS: usize = 24;

/// The converted directory, removed when the last test holding it is done with it.
struct Bridge {
    dir: tempfile::TempDir,
    gguf: PathBuf,
}

/// The converted directory, shared by the tests that run at the same time: with the default two
/// test threads it is converted once per run. Conversion takes ~2 s.
fn bridge() -> Arc<Bridge> {
    static SHARED: Mutex<Weak<Bridge>> = Mutex::new(Weak::new());
    let mut shared = SHARED.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(bridge) = shared.upgrade() {
        return bridge;
    }
    let gguf = common::model_path();
    let dir = tempfile::Builder::new()
        .prefix("pagoda-hf-bridge-")
        .tempdir()
        .unwrap();
    let start = Instant::now();
    convert_gguf_to_hf(&gguf, dir.path()).unwrap();
    let weights_s = start.elapsed().as_secs_f64();
    let spec = read_tokenizer_spec(&gguf).unwrap();
    let tokenizer = TextTokenizer::from_spec(&spec).unwrap();
    write_tokenizer_files(&tokenizer, spec.chat_template.as_deref(), dir.path()).unwrap();
    eprintln!(
        "converted in {weights_s:.1} s (weights), {:.1} s (all)",
        start.elapsed().as_secs_f64()
    );
    let bridge = Arc::new(Bridge { dir, gguf });
    *shared = Arc::downgrade(&bridge);
    bridge
}

fn config(weight_format: WeightFormat) -> EngineConfig {
    EngineConfig {
        weight_format,
        kv_cache_memory_bytes: Some(64 << 20),
        max_model_len: Some(1024),
        ..EngineConfig::default()
    }
}

#[test]
fn tokenizer_json_and_template_match_the_gguf() {
    let gguf = common::model_path();
    let spec = read_tokenizer_spec(&gguf).unwrap();
    let from_gguf = TextTokenizer::from_spec(&spec).unwrap();
    let dir = tempfile::tempdir().unwrap();
    write_tokenizer_files(&from_gguf, spec.chat_template.as_deref(), dir.path()).unwrap();
    let files = pagoda_text::hf_files::HfTokenizerFiles::read(dir.path()).unwrap();
    let from_json = &files.tokenizer;
    let reference = common::reference::reference();
    assert!(reference.samples.len() >= 40);
    for sample in &reference.samples {
        for special in [false, true] {
            let want = from_gguf.encode(&sample.text, special).unwrap();
            let got = from_json.encode(&sample.text, special).unwrap();
            assert_eq!(got, want, "{} (add_special_tokens {special})", sample.name);
            assert_eq!(
                from_json.decode(&got, false).unwrap(),
                from_gguf.decode(&want, false).unwrap()
            );
        }
    }
    assert_eq!(from_json.eos_token_ids(), from_gguf.eos_token_ids());
    assert_eq!(from_json.bos_token_id(), from_gguf.bos_token_id());
    assert_eq!(from_json.vocab_size(), from_gguf.vocab_size());

    let token = |id: Option<u32>| id.map(|id| spec.tokens[id as usize].clone());
    let gguf_template = ChatTemplate::new(
        spec.chat_template.as_deref().unwrap(),
        token(spec.bos_token_id),
        token(spec.eos_token_id),
    )
    .unwrap();
    let hf_template = ChatTemplate::new(
        files.chat_template.as_deref().unwrap(),
        files.bos_token.clone(),
        files.eos_token.clone(),
    )
    .unwrap();
    let multi_turn = vec![
        ChatMessage::new("system", "Answer briefly."),
        ChatMessage::new("user", "Hi!"),
        ChatMessage::new("assistant", "Hello! How can I help?"),
        ChatMessage::new("user", "Name a colour."),
    ];
    let chats = reference
        .chat
        .iter()
        .map(|c| (c.name.as_str(), c.messages.clone(), c.add_generation_prompt))
        .chain([("multi_turn", multi_turn.clone(), true)])
        .chain([("multi_turn_no_prompt", multi_turn, false)]);
    for (name, messages, add_generation_prompt) in chats {
        let want = gguf_template.render(&messages, add_generation_prompt);
        assert_eq!(
            hf_template.render(&messages, add_generation_prompt),
            want,
            "{name}"
        );
        let want = want.unwrap();
        assert_eq!(
            from_json.encode(&want, false).unwrap(),
            from_gguf.encode(&want, false).unwrap(),
            "{name}"
        );
    }
}

fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

/// Prompt ids and greedy output ids of every compared prompt.
fn greedy_runs(generator: &TextGenerator) -> Vec<(Vec<u32>, Vec<u32>)> {
    let raw = RAW_PROMPTS
        .iter()
        .map(|text| generator.raw_prompt_ids(text).unwrap());
    let chat = CHAT_PROMPTS.iter().map(|question| {
        let messages = [ChatMessage::new("user", *question)];
        generator.chat_prompt_ids(&messages).unwrap()
    });
    raw.chain(chat)
        .map(|prompt| {
            let stop = StopConditions {
                max_tokens: Some(MAX_TOKENS),
                ..StopConditions::default()
            };
            let generation = generator
                .generate(prompt.clone(), SamplingParams::greedy(), stop, |_| {})
                .unwrap();
            (prompt, generation.token_ids)
        })
        .collect()
}

/// Runs the compared prompts on the GGUF and on the directory; returns both, timed.
fn both_runs(bridge: &Bridge, format: WeightFormat) -> [Vec<(Vec<u32>, Vec<u32>)>; 2] {
    [bridge.gguf.as_path(), bridge.dir.path()].map(|path| {
        let start = Instant::now();
        let generator = TextGenerator::load(path, config(format)).unwrap();
        let runs = greedy_runs(&generator);
        eprintln!(
            "{format:?} {}: {:.1} s",
            path.display(),
            start.elapsed().as_secs_f64()
        );
        runs
    })
}

/// The chat prompt of `question`, by the GGUF's own tokenizer and template.
fn gguf_chat_prompt(question: &str) -> Vec<u32> {
    let spec = read_tokenizer_spec(&common::model_path()).unwrap();
    let tokenizer = TextTokenizer::from_spec(&spec).unwrap();
    let token = |id: Option<u32>| id.map(|id| spec.tokens[id as usize].clone());
    let template = spec.chat_template.as_deref().unwrap();
    let template = ChatTemplate::new(template, token(spec.bos_token_id), token(spec.eos_token_id));
    let text = template
        .unwrap()
        .render(&[ChatMessage::new("user", question)], true)
        .unwrap();
    tokenizer.encode(&text, false).unwrap()
}

/// The largest logit difference of the two forms after one prefill of a chat prompt.
fn max_prefill_logit_difference(bridge: &Bridge, format: WeightFormat) -> f32 {
    let prompt = gguf_chat_prompt(QUESTIONS[0].0);
    let want = last_token_logits(&bridge.gguf, format, &prompt).unwrap();
    let got = last_token_logits(bridge.dir.path(), format, &prompt).unwrap();
    let diff = max_abs_diff(&want, &got);
    eprintln!(
        "{format:?}: max |logit difference| {diff:e} ({} prompt tokens)",
        prompt.len()
    );
    diff
}

/// Greedy outputs of both forms: same prompt ids, and the count of output tokens that agree
/// up to each prompt's first difference.
fn compare_greedy_runs(bridge: &Bridge, format: WeightFormat) -> (usize, usize) {
    let [gguf, hf] = both_runs(bridge, format);
    let (mut same, mut total) = (0, 0);
    for ((gguf, hf), index) in gguf.iter().zip(&hf).zip(0..) {
        assert_eq!(hf.0, gguf.0, "prompt {index}: the same prompt ids");
        total += gguf.1.len();
        same += gguf.1.iter().zip(&hf.1).take_while(|(a, b)| a == b).count();
    }
    eprintln!("{format:?}: {same} of {total} greedy tokens agree");
    (same, total)
}

// Both forms hold the same f32 values; q and k differ by a permutation of rows within each head,
// which changes only the order of the sums in q·k. Measured (2026-11-21): max |logit difference|
// 4.0e-5 after a 37-token prefill (logits span about ±20); greedy tokens identical, 163 of 163
// (and 588 of 588 with 128 tokens per prompt).
#[test]
fn f32_weights_give_the_same_logits_and_greedy_tokens() {
    let bridge = bridge();
    let diff = max_prefill_logit_difference(&bridge, WeightFormat::F32);
    assert!(diff < 1e-3, "max logit difference {diff}");
    let (same, total) = compare_greedy_runs(&bridge, WeightFormat::F32);
    assert_eq!(same, total, "f32 greedy tokens differ");
}

// int8 groups run along a row, so the permutation moves whole int8 rows: the two forms quantize
// to the same int8 values and stay as close as f32 does. Measured (2026-11-21): max |logit
// difference| 3.8e-5; greedy tokens 163 of 163 (588 of 588 with 128 tokens per prompt).
#[test]
fn int8_weights_give_the_same_greedy_tokens() {
    let bridge = bridge();
    let diff = max_prefill_logit_difference(&bridge, WeightFormat::Int8);
    assert!(diff < 1e-3, "max logit difference {diff}");
    let (same, total) = compare_greedy_runs(&bridge, WeightFormat::Int8);
    assert_eq!(same, total, "int8 greedy tokens differ");
}

#[test]
fn the_directory_answers_chat_prompts() {
    let bridge = bridge();
    let generator = TextGenerator::load(bridge.dir.path(), EngineConfig::default()).unwrap();
    // The same ids end generation: the model's (config.json and generation_config.json against
    // the GGUF's metadata) and the tokenizer's end-of-turn tokens.
    let gguf = TextGenerator::load(&bridge.gguf, config(WeightFormat::Int8)).unwrap();
    let model_eos = |g: &TextGenerator| g.handle().info().model.eos_token_ids.clone();
    assert_eq!(model_eos(&generator), model_eos(&gguf));
    assert_eq!(
        generator.tokenizer().eos_token_ids(),
        gguf.tokenizer().eos_token_ids()
    );
    drop(gguf);
    for &(question, expected) in QUESTIONS {
        let prompt = generator
            .chat_prompt_ids(&[ChatMessage::new("user", question)])
            .unwrap();
        let stop = StopConditions {
            max_tokens: Some(32),
            ..StopConditions::default()
        };
        let answer = generator
            .generate(prompt, SamplingParams::greedy(), stop, |_| {})
            .unwrap();
        assert!(
            answer.text.contains(expected),
            "{question}: {:?}",
            answer.text
        );
        assert_eq!(
            answer.finish_reason,
            FinishReason::Stop {
                stop_token_id: None
            },
            "{question}: the answer ends its turn by itself"
        );
    }
}
