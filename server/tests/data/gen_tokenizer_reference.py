#!/usr/bin/env python3
"""Generate `smollm2_tokenizer_reference.json`: token ids for the default model's tokenizer, produced by
implementations independent of Pagoda, for `server/tests/tokenizer_reference.rs` to compare against.

Environment used for the committed JSON (Python 3.11.7, CPU only, no torch):

    python3 -m venv /tmp/refenv
    /tmp/refenv/bin/pip install transformers==5.23.0 tokenizers==0.23.3 gguf==0.19.0 jinja2==3.1.6
    /tmp/refenv/bin/python server/tests/data/gen_tokenizer_reference.py \
        models/SmolLM2-135M-Instruct.Q4_1.gguf server/tests/data/smollm2_tokenizer_reference.json

Two tokenizers are built from the GGUF metadata:

* `transformers`: Hugging Face transformers' own GGUF tokenizer conversion
  (`transformers.integrations.gguf.gguf_tokenizer_mapping.convert_gguf_tokenizer`, the function that
  `AutoTokenizer.from_pretrained(dir, gguf_file=...)` calls). `from_pretrained` itself cannot run here:
  transformers 5.x's GGUF metadata reader imports torch, so this script reads the metadata with the
  `gguf` package and hands it to the converter exactly as `get_gguf_tokenizer` would.
* `original`: the same vocabulary, merges and added tokens, with the pre-tokenizer of the original
  Hugging Face SmolLM2 `tokenizer.json` (which llama.cpp calls "smollm"):
  Sequence[Digits(individual_digits=True), ByteLevel(add_prefix_space=False, use_regex=True)],
  and a ByteLevel decoder.

transformers 5.23 has no entry for the "smollm" pre-tokenizer, so it falls back to GPT-2's ByteLevel
regex without the Digits split. The two differ where whitespace or a letter-less symbol run precedes
a digit (GPT-2's ` ?\\p{N}+` keeps one space with the digits; the Digits split isolates the digits first,
so the spaces before them form one run that BPE can merge, e.g. "a  1" -> [a, ĠĠ, 1] vs [a, Ġ, Ġ, 1]).
The reference ids (`ids`) are the `original` ones; where transformers differs its ids are recorded
as `transformers_ids` with a `discrepancy` note.
"""

import hashlib
import json
import sys
from importlib.metadata import version

import gguf
from tokenizers import Tokenizer, decoders, pre_tokenizers
from transformers import PreTrainedTokenizerFast
from transformers.integrations.gguf.gguf_tokenizer_mapping import (
    GGUF_TOKENIZER_MAPPING,
    convert_gguf_tokenizer,
)

TEXTS = {
    "empty": "",
    "english": "Hello world! The quick brown fox jumps over the lazy dog.",
    "english_punct": "Don't stop: it's a \"test\", isn't it? (Yes—really…) 'quoted' [x] {y}",
    "contractions": "I'm sure they've said we'll go; you'd know he's right.",
    "leading_space": " leading space and trailing space ",
    "accents": "Café, naïve, résumé, jalapeño, Ångström, Øresund, façade.",
    "german": "Größenmaßstäbe für Straßenübergänge",
    "cjk_chinese": "你好，世界！今天天气很好。",
    "cjk_japanese": "こんにちは、世界。カタカナとひらがな、漢字。",
    "korean": "안녕하세요 세계",
    "emoji_simple": "I love pizza 🍕 and cats 🐱!",
    "emoji_zwj": "Family: 👨‍👩‍👧‍👦, flags: 🇫🇷🇯🇵, skin tone: 👍🏽, heart: ❤️",
    "rtl_arabic": "مرحبا بالعالم",
    "rtl_hebrew": "שלום עולם",
    "mixed_scripts": "English, Русский, Ελληνικά, हिन्दी, ไทย",
    "math_symbols": "∑ x² + √y ≤ ∞ ± ½ → λ",
    "python_code": "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n",
    "rust_code": (
        "fn main() {\n    let v: Vec<u32> = (0..10).collect();\n"
        "    for x in &v {\n        println!(\"{x:>4}\");\n    }\n}\n"
    ),
    "json_snippet": '{"name": "Pagoda", "version": 1, "tags": ["llm", "serving"]}',
    "html": "<div class=\"a\">&nbsp;<b>bold</b></div>",
    "url_email": "Visit https://example.com/path?q=1&r=2 or mail me@example.org.",
    "multiple_spaces": "a  b   c    d     e",
    "tabs": "col1\tcol2\t\tcol3\n\tindented",
    "newlines": "line1\nline2\n\nline4\n\n\n\nline8",
    "crlf": "windows\r\nline\r\n",
    "trailing_spaces": "trailing   ",
    "only_whitespace": " \t \n  ",
    "digits": "0123456789",
    "long_number": "3.14159265358979323846 and 1,000,000,000 and 2024-06-30",
    "spaced_digits": "a  1, x =  42,\n\n 7 and\t9",
    "arabic_indic_digits": "Numbers ١٢٣ and ٤٥٦",
    "special_im": "<|im_start|>user\nHi there<|im_end|>\n",
    "special_endoftext": "end of doc<|endoftext|>start of next",
    "special_adjacent": "<|im_start|><|im_end|><|endoftext|>",
    "special_lookalike": "<|im_start|  <im_end> <|endoftext",
    "repeated_chars": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "repeated_punct": "!!!??? ... --- ___ ***",
    "replacement_char": "bad byte \ufffd here",
    "zero_width": "zero\u200bwidth\u200cjoin\u200d and nbsp\u00a0here",
}

CONVERSATIONS = {
    "with_system": [
        {"role": "system", "content": "You are a concise assistant."},
        {"role": "user", "content": "What is the capital of France?"},
        {"role": "assistant", "content": "Paris."},
        {"role": "user", "content": "And of Japan?"},
    ],
    "without_system": [
        {"role": "user", "content": "Hi!"},
        {"role": "assistant", "content": "Hello! How can I help?"},
        {"role": "user", "content": "Tell me a joke."},
    ],
}

DISCREPANCY = (
    "transformers 5.23 builds GGUF pre-tokenizer 'smollm' as plain GPT-2 ByteLevel (no Digits split); "
    "the original SmolLM2 tokenizer.json splits digits individually first, so whitespace/symbols "
    "before a digit are pre-tokenized differently"
)


def read_metadata(path):
    """The tokenizer keys of the file, as `get_gguf_tokenizer` reads them."""
    reader = gguf.GGUFReader(path)
    wanted = ("tokenizer.", "general.architecture")
    return {k: f.contents() for k, f in reader.fields.items() if k.startswith(wanted)}


def transformers_tokenizer(metadata):
    """Transformers' conversion, plus the tokenizer_config it would build (chat template, specials)."""
    tokenizer_dict = {
        name: metadata[f"tokenizer.{key}"]
        for key, name in GGUF_TOKENIZER_MAPPING["tokenizer"].items()
        if f"tokenizer.{key}" in metadata
    }
    backend, _ = convert_gguf_tokenizer(metadata["general.architecture"], tokenizer_dict)
    config = {
        name: metadata[f"tokenizer.{key}"]
        for key, name in GGUF_TOKENIZER_MAPPING["tokenizer_config"].items()
        if f"tokenizer.{key}" in metadata
    }
    tokens = tokenizer_dict["tokens"]
    for name, key in (("bos_token", "bos_token_id"), ("eos_token", "eos_token_id"),
                      ("unk_token", "unknown_token_id"), ("pad_token", "padding_token_id")):
        token_id = metadata.get(f"tokenizer.ggml.{key}")
        config[name] = tokens[token_id] if token_id is not None else None
    return backend, PreTrainedTokenizerFast(tokenizer_object=backend, **config)


def original_tokenizer(backend):
    """The same model and added tokens, with the original SmolLM2 tokenizer.json pipeline."""
    tok = Tokenizer.from_str(backend.to_str())
    tok.normalizer = None
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
    ])
    tok.decoder = decoders.ByteLevel()
    return tok


def sample(name, text, original, transformers_backend):
    ids = original.encode(text, add_special_tokens=False).ids
    entry = {
        "name": name,
        "text": text,
        "ids": ids,
        "decoded": original.decode(ids, skip_special_tokens=False),
        "decoded_skip_special": original.decode(ids, skip_special_tokens=True),
    }
    hf_ids = transformers_backend.encode(text, add_special_tokens=False).ids
    if hf_ids != ids:
        entry["transformers_ids"] = hf_ids
        entry["discrepancy"] = DISCREPANCY
    return entry


def main(model_path, out_path):
    metadata = read_metadata(model_path)
    backend, hf_tokenizer = transformers_tokenizer(metadata)
    original = original_tokenizer(backend)
    samples = [sample(name, text, original, backend) for name, text in TEXTS.items()]
    chats = []
    for name, messages in CONVERSATIONS.items():
        prompt = hf_tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        chats.append({"name": name, "messages": messages, "add_generation_prompt": True, "prompt": prompt})
        samples.append(sample(f"chat_prompt_{name}", prompt, original, backend))
    with open(model_path, "rb") as f:
        sha256 = hashlib.sha256(f.read()).hexdigest()
    out = {
        "generator": "server/tests/data/gen_tokenizer_reference.py",
        "versions": {p: version(p) for p in ("transformers", "tokenizers", "gguf", "jinja2")},
        "model_file": model_path.rsplit("/", 1)[-1],
        "model_sha256": sha256,
        "reference": "original SmolLM2 tokenizer.json pipeline: "
                     "Sequence[Digits(individual_digits=true), ByteLevel(add_prefix_space=false, use_regex=true)], "
                     "BPE, ByteLevel decoder; special tokens = GGUF token_type 3",
        "transformers_pre_tokenizer": str(backend.pre_tokenizer),
        "num_discrepancies": sum("transformers_ids" in s for s in samples),
        "samples": samples,
        "chat": chats,
    }
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"wrote {len(samples)} samples ({out['num_discrepancies']} discrepancies) to {out_path}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
