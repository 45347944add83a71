//! Rebuilds a Hugging Face `tokenizers` pipeline from a GGUF [`TokenizerSpec`].
//!
//! * "gpt2": byte-level BPE. The vocabulary and merges are stored in GPT-2's byte alphabet; the
//!   pre-tokenizer comes from `tokenizer.ggml.pre` (llama.cpp's names), the decoder is ByteLevel.
//! * "llama": SentencePiece BPE. Merges are derived from the token scores when the file has none;
//!   spaces become `▁`, a `▁` is prepended to each text segment when `add_space_prefix` is set
//!   (as llama.cpp and SentencePiece do), and unknown characters fall back to `<0xXX>` byte tokens.
//!
//! Control tokens (type 3) and the BOS/EOS/UNK tokens become special added tokens, user-defined
//! tokens (type 4) plain added tokens, so that both are matched whole in the text.

use tokenizers::decoders::byte_fallback::ByteFallback;
use tokenizers::decoders::fuse::Fuse;
use tokenizers::decoders::sequence::Sequence as DecoderSequence;
use tokenizers::decoders::strip::Strip;
use tokenizers::decoders::DecoderWrapper;
use tokenizers::models::bpe::{Vocab, BPE};
use tokenizers::normalizers::{Prepend, Replace, Sequence as NormalizerSequence, NFC};
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::digits::Digits;
use tokenizers::pre_tokenizers::sequence::Sequence as PreTokenizerSequence;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::pre_tokenizers::PreTokenizerWrapper;
use tokenizers::{AddedToken, SplitDelimiterBehavior, Tokenizer};

use super::error::TokenizerError;
use crate::tokenizer_spec::{
    TokenizerSpec, TOKEN_TYPE_BYTE, TOKEN_TYPE_CONTROL, TOKEN_TYPE_USER_DEFINED,
};

/// SentencePiece's stand-in for a space.
const SPIECE_SPACE: &str = "\u{2581}";

/// llama.cpp's "llama3"/"llama-bpe" split: numbers in groups of up to three.
const LLAMA3_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
/// llama.cpp's "qwen2" split: digits one by one.
const QWEN2_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// Builds the tokenizer a spec describes, added tokens included.
pub(super) fn tokenizer_from_spec(spec: &TokenizerSpec) -> Result<Tokenizer, TokenizerError> {
    let mut tokenizer = match spec.model.as_str() {
        "gpt2" => byte_level_bpe(spec)?,
        "llama" => sentencepiece_bpe(spec)?,
        other => {
            return Err(TokenizerError::Unsupported(format!(
                "tokenizer model {other:?} (supported: \"gpt2\", \"llama\")"
            )))
        }
    };
    add_spec_tokens(&mut tokenizer, spec)?;
    Ok(tokenizer)
}

fn vocab(spec: &TokenizerSpec) -> Vocab {
    let mut vocab = Vocab::default();
    vocab.reserve(spec.tokens.len());
    for (id, token) in (0u32..).zip(&spec.tokens) {
        // A duplicated token keeps its first id, as llama.cpp's lookup does.
        vocab.entry(token.clone()).or_insert(id);
    }
    vocab
}

fn parse_merges(spec: &TokenizerSpec) -> Result<Vec<(String, String)>, TokenizerError> {
    spec.merges
        .iter()
        .map(|merge| {
            merge
                .split_once(' ')
                .map(|(l, r)| (l.to_string(), r.to_string()))
                .ok_or_else(|| TokenizerError::InvalidSpec(format!("merge {merge:?} has no space")))
        })
        .collect()
}

fn byte_level_bpe(spec: &TokenizerSpec) -> Result<Tokenizer, TokenizerError> {
    let bpe = BPE::builder()
        .vocab_and_merges(vocab(spec), parse_merges(spec)?)
        .build()?;
    let mut tokenizer = Tokenizer::new(bpe);
    tokenizer.with_pre_tokenizer(Some(byte_level_pre_tokenizer(spec.pre.as_deref())?));
    tokenizer.with_decoder(Some(ByteLevel::default()));
    if matches!(spec.pre.as_deref(), Some("qwen2" | "deepseek-r1-qwen")) {
        tokenizer.with_normalizer(Some(NFC)).map_err(library)?;
    }
    Ok(tokenizer)
}

/// The pre-tokenizer llama.cpp's `tokenizer.ggml.pre` names, for a byte-level vocabulary.
fn byte_level_pre_tokenizer(pre: Option<&str>) -> Result<PreTokenizerWrapper, TokenizerError> {
    // GPT-2's own regex, applied by ByteLevel itself.
    let gpt2 = ByteLevel::new(false, true, true);
    let split = |regex: &str| -> Result<PreTokenizerWrapper, TokenizerError> {
        let pattern = SplitPattern::Regex(regex.to_string());
        let split = Split::new(pattern, SplitDelimiterBehavior::Isolated, false)?;
        let bytes = ByteLevel::new(false, true, false);
        Ok(PreTokenizerSequence::new(vec![split.into(), bytes.into()]).into())
    };
    match pre {
        None | Some("default" | "gpt2" | "gpt-2") => Ok(gpt2.into()),
        // The original SmolLM tokenizer.json: digits one by one, then GPT-2's regex.
        Some("smollm") => {
            Ok(PreTokenizerSequence::new(vec![Digits::new(true).into(), gpt2.into()]).into())
        }
        Some("llama3" | "llama-v3" | "llama-bpe" | "smaug-bpe" | "falcon3") => split(LLAMA3_SPLIT),
        Some("qwen2" | "deepseek-r1-qwen") => split(QWEN2_SPLIT),
        Some(other) => Err(TokenizerError::Unsupported(format!(
            "byte-level pre-tokenizer {other:?} (supported: gpt2, smollm, llama3/llama-bpe, qwen2)"
        ))),
    }
}

fn sentencepiece_bpe(spec: &TokenizerSpec) -> Result<Tokenizer, TokenizerError> {
    let merges = if spec.merges.is_empty() {
        merges_from_scores(spec)?
    } else {
        parse_merges(spec)?
    };
    let has_byte_tokens =
        spec.token_types.contains(&TOKEN_TYPE_BYTE) || spec.tokens.iter().any(|t| t == "<0x00>");
    let mut builder = BPE::builder()
        .vocab_and_merges(vocab(spec), merges)
        .byte_fallback(has_byte_tokens)
        .fuse_unk(true);
    if let Some(unk) = spec.unknown_token_id {
        let token = spec.tokens.get(unk as usize).ok_or_else(|| {
            TokenizerError::InvalidSpec(format!("unknown token id {unk} is outside the vocabulary"))
        })?;
        builder = builder.unk_token(token.clone());
    }
    let mut tokenizer = Tokenizer::new(builder.build()?);
    let mut normalizers = Vec::new();
    let mut decoders: Vec<DecoderWrapper> = vec![
        Replace::new(SPIECE_SPACE, " ")?.into(),
        ByteFallback::new().into(),
        Fuse::new().into(),
    ];
    if spec.add_space_prefix {
        normalizers.push(Prepend::new(SPIECE_SPACE.to_string()).into());
        decoders.push(Strip::new(' ', 1, 0).into());
    }
    normalizers.push(Replace::new(" ", SPIECE_SPACE)?.into());
    tokenizer
        .with_normalizer(Some(NormalizerSequence::new(normalizers)))
        .map_err(library)?;
    tokenizer.with_decoder(Some(DecoderSequence::new(decoders)));
    Ok(tokenizer)
}

/// SentencePiece BPE merges: every split of a normal token into two tokens of the vocabulary,
/// ranked by the score of the merged token (higher first), ties by the pieces' ids.
fn merges_from_scores(spec: &TokenizerSpec) -> Result<Vec<(String, String)>, TokenizerError> {
    if spec.scores.len() != spec.tokens.len() {
        return Err(TokenizerError::InvalidSpec(
            "a SentencePiece vocabulary needs `tokenizer.ggml.scores` or `tokenizer.ggml.merges`"
                .into(),
        ));
    }
    let vocab = vocab(spec);
    let mut ranked: Vec<(f32, u32, u32)> = Vec::new();
    for (id, token) in spec.tokens.iter().enumerate() {
        if spec.token_type(id) != 1 {
            continue;
        }
        for (cut, _) in token.char_indices().skip(1) {
            let (left, right) = token.split_at(cut);
            if let (Some(&l), Some(&r)) = (vocab.get(left), vocab.get(right)) {
                ranked.push((spec.scores[id], l, r));
            }
        }
    }
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    let name = |id: u32| spec.tokens[id as usize].clone();
    Ok(ranked
        .into_iter()
        .map(|(_, l, r)| (name(l), name(r)))
        .collect())
}

/// Adds control tokens and BOS/EOS/UNK as special tokens, user-defined tokens as plain added
/// tokens. Their contents are in the vocabulary already, so no id changes.
fn add_spec_tokens(tokenizer: &mut Tokenizer, spec: &TokenizerSpec) -> Result<(), TokenizerError> {
    let named = [spec.bos_token_id, spec.eos_token_id, spec.unknown_token_id];
    let mut special = Vec::new();
    let mut user_defined = Vec::new();
    for (id, token) in (0u32..).zip(&spec.tokens) {
        let token_type = spec.token_type(id as usize);
        if token_type == TOKEN_TYPE_CONTROL || named.contains(&Some(id)) {
            special.push(AddedToken::from(token.clone(), true).normalized(false));
        } else if token_type == TOKEN_TYPE_USER_DEFINED {
            user_defined.push(AddedToken::from(token.clone(), false).normalized(false));
        }
    }
    tokenizer.add_special_tokens(special).map_err(library)?;
    tokenizer.add_tokens(user_defined).map_err(library)?;
    Ok(())
}

fn library(e: impl std::fmt::Display) -> TokenizerError {
    TokenizerError::Library(e.to_string().into())
}
