#![allow(clippy::unwrap_used)]

use super::*;

use ReasoningFormat::{DeepSeekR1, Qwen3};

const OUTPUTS: &[&str] = &[
    "<think>\nThe user wants a colour.\n</think>\n\nBlue.",
    "Thinking without an opening tag.</think>The answer.",
    "<think>cut short while thinking",
    "No reasoning at all.",
    "",
    "<think>",
    "<thi",
    "</think>only an answer",
    "<think>a < b and </thinking> is not the tag</think>é 🌍 </think> stays",
    " <think>leading space</think>x",
];

/// Every split of `text` into pieces (each char alone, all two-way splits) streams to the
/// whole-text split.
fn assert_streams_as_split(format: ReasoningFormat, text: &str) {
    let (reasoning, content) = format.split(text);
    let expected = (reasoning.unwrap_or_default(), content);
    let mut splits: Vec<Vec<&str>> = (0..=text.len())
        .filter(|&at| text.is_char_boundary(at))
        .map(|at| vec![&text[..at], &text[at..]])
        .collect();
    let chars: Vec<String> = text.chars().map(String::from).collect();
    splits.push(chars.iter().map(String::as_str).collect());
    for pieces in splits {
        let mut stream = format.streaming();
        let (mut reasoning, mut content) = (String::new(), String::new());
        for piece in &pieces {
            let delta = stream.push(piece);
            reasoning.push_str(&delta.reasoning);
            content.push_str(&delta.content);
        }
        let delta = stream.finish();
        reasoning.push_str(&delta.reasoning);
        content.push_str(&delta.content);
        assert_eq!((reasoning, content), expected, "{format:?} {pieces:?}");
    }
}

#[test]
fn streamed_pieces_add_up_to_the_whole_split() {
    for format in [DeepSeekR1, Qwen3] {
        for text in OUTPUTS {
            assert_streams_as_split(format, text);
        }
    }
}

#[test]
fn deepseek_reasons_until_the_closing_tag_with_or_without_the_opening_one() {
    assert_eq!(
        DeepSeekR1.split(OUTPUTS[0]),
        (
            Some("\nThe user wants a colour.\n".into()),
            "\n\nBlue.".into()
        )
    );
    assert_eq!(
        DeepSeekR1.split(OUTPUTS[1]),
        (
            Some("Thinking without an opening tag.".into()),
            "The answer.".into()
        )
    );
    assert_eq!(
        DeepSeekR1.split(OUTPUTS[2]),
        (Some("cut short while thinking".into()), String::new())
    );
    assert_eq!(DeepSeekR1.split("</think>x"), (None, "x".into()));
}

#[test]
fn qwen3_reasons_only_after_an_opening_tag() {
    assert_eq!(
        Qwen3.split(OUTPUTS[0]),
        (
            Some("\nThe user wants a colour.\n".into()),
            "\n\nBlue.".into()
        )
    );
    assert_eq!(Qwen3.split(OUTPUTS[1]), (None, OUTPUTS[1].into()));
    assert_eq!(Qwen3.split(OUTPUTS[3]), (None, OUTPUTS[3].into()));
    assert_eq!(
        Qwen3.split(OUTPUTS[8]),
        (
            Some("a < b and </thinking> is not the tag".into()),
            "é 🌍 </think> stays".into()
        )
    );
}

#[test]
fn reasoning_streams_promptly() {
    let mut stream = Qwen3.streaming();
    assert_eq!(stream.push("<thi"), ReasoningDelta::default());
    let delta = stream.push("nk>Hmm </thi");
    assert_eq!(
        (delta.reasoning.as_str(), delta.content.as_str()),
        ("Hmm ", "")
    );
    let delta = stream.push("nk>Yes");
    assert_eq!(
        (delta.reasoning.as_str(), delta.content.as_str()),
        ("", "Yes")
    );
}

#[test]
fn parser_names() {
    for name in ReasoningFormat::CLI_NAMES {
        assert!(name.parse::<ReasoningFormat>().is_ok());
    }
    assert!("granite".parse::<ReasoningFormat>().is_err());
}

/// Tokens (as the model generates them, one piece each) counted as reasoning.
fn reasoning_tokens(format: ReasoningFormat, tokens: &[&str]) -> usize {
    let mut stream = format.streaming();
    for token in tokens {
        stream.push_tokens(token, 1);
    }
    stream.finish();
    stream.num_reasoning_tokens()
}

#[test]
fn reasoning_tokens_are_those_from_the_opening_tag_to_the_closing_one() {
    let thinking = [
        "<think>", "\n", "Blue", " is", " nice", "</think>", "\n\n", "Blue", ".",
    ];
    assert_eq!(reasoning_tokens(Qwen3, &thinking), 6);
    assert_eq!(reasoning_tokens(DeepSeekR1, &thinking), 6);
    // The tag split over several tokens counts whole, once it is known to be the tag.
    let split_tag = ["<", "th", "ink", ">", "hm", "</", "think", ">", "ok"];
    assert_eq!(reasoning_tokens(Qwen3, &split_tag), 8);
    // No reasoning: nothing counted, even for a start that looked like a tag.
    assert_eq!(reasoning_tokens(Qwen3, &["<", "b", ">", "bold"]), 0);
    assert_eq!(reasoning_tokens(Qwen3, &["Plain", " answer"]), 0);
    // DeepSeek-R1 reasons from the first token, without an opening tag.
    assert_eq!(
        reasoning_tokens(DeepSeekR1, &["Let", " me", "</think>", "Yes"]),
        3
    );
    // Cut short while thinking: every token is reasoning, held ones included.
    assert_eq!(reasoning_tokens(DeepSeekR1, &["<th"]), 1);
    assert_eq!(
        reasoning_tokens(Qwen3, &["<think>", "still", " going", "</th"]),
        4
    );
    // A piece standing for several tokens counts them all.
    let mut stream = Qwen3.streaming();
    stream.push_tokens("<think>a", 3);
    stream.push_tokens("b</think>c", 2);
    stream.push_tokens("d", 1);
    assert_eq!(stream.num_reasoning_tokens(), 5);
}
