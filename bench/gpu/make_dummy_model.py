#!/usr/bin/env python3
"""Writes a Hugging Face-style model directory with a real model's shapes and no weights, for
`pagoda-server --load-format dummy` (random weights, like vLLM's `--load-format dummy`): a
benchmark of the shape, not of the model.

    bench/gpu/make_dummy_model.py --shape {llama-3.2-1b,qwen3-0.6b,tiny} --out DIR

DIR gets:
  config.json             the published shapes (the keys engine/src/models/hf_config.rs reads)
  generation_config.json  BOS and EOS ids, as the published model's (no sampling defaults)
  tokenizer.json          a synthetic tokenizer of exactly vocab_size tokens (below)
  tokenizer_config.json   BOS/EOS texts and a small chat template, so chat requests work too
  README.txt              what this is

The tokenizer is a WordLevel model whose ordinary tokens are "▁" + lowercase letters (the id in
base 26, e.g. "▁aaab"), with a Metaspace pre-tokenizer ("▁" for spaces, prepended to every
piece) and a Metaspace decoder that turns "▁" back into spaces. So every ordinary token decodes
to " " + letters and encodes back to itself: the words `pagoda-bench` builds exact-length random
prompts from (bench-client/src/dataset/exact_len.rs). Names with digits ("w0") would not be
words. The special tokens (BOS, EOS, end of turn, unk, chat markers) sit at the published
models' ids where those exist. Llama shapes add BOS through a post-processor, as Llama 3's
tokenizer.json does; Qwen3 adds none.

Standard library only (Python 3.9+): it runs on the GPU machine.
"""

import argparse
import json
import math
import os
import sys

# The published config.json of each model, reduced to the keys that matter (plus the usual
# companions, which the loader ignores).
SHAPES = {
    # meta-llama/Llama-3.2-1B(-Instruct)
    "llama-3.2-1b": {
        "config": {
            "architectures": ["LlamaForCausalLM"],
            "model_type": "llama",
            "vocab_size": 128256,
            "hidden_size": 2048,
            "intermediate_size": 8192,
            "num_hidden_layers": 16,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "head_dim": 64,
            "hidden_act": "silu",
            "rms_norm_eps": 1e-05,
            "rope_theta": 500000.0,
            "rope_scaling": {
                "rope_type": "llama3",
                "factor": 32.0,
                "low_freq_factor": 1.0,
                "high_freq_factor": 4.0,
                "original_max_position_embeddings": 8192,
            },
            "max_position_embeddings": 131072,
            "tie_word_embeddings": True,
            "attention_bias": False,
            "attention_dropout": 0.0,
            "mlp_bias": False,
            "initializer_range": 0.02,
            "pretraining_tp": 1,
            "use_cache": True,
            "torch_dtype": "bfloat16",
            "bos_token_id": 128000,
            "eos_token_id": 128001,
        },
        "family": "llama3",
        "special": {
            "<|begin_of_text|>": 128000,
            "<|end_of_text|>": 128001,
            "<unk>": 128002,
            "<|start_header_id|>": 128006,
            "<|end_header_id|>": 128007,
            "<|eom_id|>": 128008,
            "<|eot_id|>": 128009,
        },
        "generation_eos": [128001, 128008, 128009],
    },
    # Qwen/Qwen3-0.6B
    "qwen3-0.6b": {
        "config": {
            "architectures": ["Qwen3ForCausalLM"],
            "model_type": "qwen3",
            "vocab_size": 151936,
            "hidden_size": 1024,
            "intermediate_size": 3072,
            "num_hidden_layers": 28,
            "num_attention_heads": 16,
            "num_key_value_heads": 8,
            "head_dim": 128,
            "hidden_act": "silu",
            "rms_norm_eps": 1e-06,
            "rope_theta": 1000000.0,
            "rope_scaling": None,
            "max_position_embeddings": 40960,
            "max_window_layers": 28,
            "sliding_window": None,
            "use_sliding_window": False,
            "tie_word_embeddings": True,
            "attention_bias": False,
            "attention_dropout": 0.0,
            "initializer_range": 0.02,
            "use_cache": True,
            "torch_dtype": "bfloat16",
            "bos_token_id": 151643,
            "eos_token_id": 151645,
        },
        "family": "chatml",
        "special": {
            "<|endoftext|>": 151643,
            "<|im_start|>": 151644,
            "<|im_end|>": 151645,
            "<unk>": 151646,
        },
        "generation_eos": [151645, 151643],
    },
    # A Llama small enough for CPU tests (tests/tests/gpu_bench_kit.rs).
    "tiny": {
        "config": {
            "architectures": ["LlamaForCausalLM"],
            "model_type": "llama",
            "vocab_size": 512,
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "head_dim": 16,
            "hidden_act": "silu",
            "rms_norm_eps": 1e-05,
            "rope_theta": 10000.0,
            "max_position_embeddings": 2048,
            "tie_word_embeddings": True,
            "attention_bias": False,
            "mlp_bias": False,
            "torch_dtype": "bfloat16",
            "bos_token_id": 1,
            "eos_token_id": 2,
        },
        "family": "llama3",
        "special": {
            "<unk>": 0,
            "<|begin_of_text|>": 1,
            "<|end_of_text|>": 2,
            "<|start_header_id|>": 3,
            "<|end_header_id|>": 4,
            "<|eot_id|>": 5,
        },
        "generation_eos": [2, 5],
    },
}

# Per family: BOS and EOS texts (tokenizer_config.json), whether BOS is added to every encoding,
# and a chat template (Jinja; the server renders it and encodes the text without adding BOS, so
# the template writes BOS itself where the family has one).
FAMILIES = {
    "llama3": {
        "bos": "<|begin_of_text|>",
        "eos": "<|eot_id|>",
        "add_bos": True,
        "chat_template": (
            "{{- bos_token }}"
            "{%- for message in messages %}"
            "{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'"
            " + message['content'] | trim + '<|eot_id|>' }}"
            "{%- endfor %}"
            "{%- if add_generation_prompt %}"
            "{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}"
            "{%- endif %}"
        ),
    },
    "chatml": {
        "bos": None,
        "eos": "<|im_end|>",
        "add_bos": False,
        "chat_template": (
            "{%- for message in messages %}"
            "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
            "{%- endfor %}"
            "{%- if add_generation_prompt %}"
            "{{- '<|im_start|>assistant\\n' }}"
            "{%- endif %}"
        ),
    },
}

SPACE = "\u2581"  # "▁", SentencePiece's space marker


def word(token_id, width):
    """`token_id` in base 26 as `width` lowercase letters ("aa", "ab", ...)."""
    letters = []
    for _ in range(width):
        token_id, digit = divmod(token_id, 26)
        letters.append(chr(ord("a") + digit))
    return "".join(reversed(letters))


def vocabulary(vocab_size, special):
    """The WordLevel vocabulary: every id from 0 to vocab_size - 1 exactly once."""
    width = max(2, math.ceil(math.log(vocab_size, 26)))
    by_id = {token_id: text for text, token_id in special.items()}
    if len(by_id) != len(special) or any(not 0 <= i < vocab_size for i in by_id):
        raise ValueError("special token ids must be distinct and inside the vocabulary")
    vocab = {}
    for token_id in range(vocab_size):
        vocab[by_id.get(token_id) or SPACE + word(token_id, width)] = token_id
    assert len(vocab) == vocab_size
    return vocab


def metaspace(prepend_scheme):
    return {"type": "Metaspace", "replacement": SPACE, "prepend_scheme": prepend_scheme, "split": True}


def bos_post_processor(bos, bos_id):
    """`BOS $A` (and `BOS $A BOS $B` for pairs), as Llama 3's tokenizer.json has it."""

    def special():
        return {"SpecialToken": {"id": bos, "type_id": 0}}

    def sequence(name, type_id):
        return {"Sequence": {"id": name, "type_id": type_id}}

    return {
        "type": "TemplateProcessing",
        "single": [special(), sequence("A", 0)],
        "pair": [special(), sequence("A", 0), {"SpecialToken": {"id": bos, "type_id": 1}}, sequence("B", 1)],
        "special_tokens": {bos: {"id": bos, "ids": [bos_id], "tokens": [bos]}},
    }


def tokenizer_json(shape):
    config, family = shape["config"], FAMILIES[shape["family"]]
    special = shape["special"]
    added = [
        {
            "id": token_id,
            "content": text,
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": False,
            "special": True,
        }
        for text, token_id in sorted(special.items(), key=lambda item: item[1])
    ]
    post_processor = None
    if family["add_bos"]:
        post_processor = bos_post_processor(family["bos"], special[family["bos"]])
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        # "always": a piece without a leading space still gets "▁" ("hello" → "▁hello").
        "pre_tokenizer": metaspace("always"),
        "post_processor": post_processor,
        # "never": the first token keeps its space, so one token decodes to " " + letters.
        "decoder": metaspace("never"),
        "model": {
            "type": "WordLevel",
            "vocab": vocabulary(config["vocab_size"], special),
            "unk_token": "<unk>",
        },
    }


def tokenizer_config(shape):
    family = FAMILIES[shape["family"]]
    added = {
        str(token_id): {
            "content": text,
            "lstrip": False,
            "normalized": False,
            "rstrip": False,
            "single_word": False,
            "special": True,
        }
        for text, token_id in sorted(shape["special"].items(), key=lambda item: item[1])
    }
    return {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "added_tokens_decoder": added,
        "add_bos_token": family["add_bos"],
        "add_eos_token": False,
        "bos_token": family["bos"],
        "eos_token": family["eos"],
        "unk_token": "<unk>",
        "pad_token": None,
        "clean_up_tokenization_spaces": False,
        "model_max_length": shape["config"]["max_position_embeddings"],
        "chat_template": family["chat_template"],
    }


def generation_config(shape):
    config = shape["config"]
    out = {"eos_token_id": shape["generation_eos"], "transformers_version": "4.56.0"}
    if config.get("bos_token_id") is not None:
        out = {"bos_token_id": config["bos_token_id"], **out}
    return out


def readme(name, shape):
    config = shape["config"]
    sizes = (
        f"hidden {config['hidden_size']}, intermediate {config['intermediate_size']}, "
        f"{config['num_hidden_layers']} layers, {config['num_attention_heads']} heads, "
        f"{config['num_key_value_heads']} KV heads, head_dim {config['head_dim']}, "
        f"vocab {config['vocab_size']}"
    )
    return f"""Random-weight model shape "{name}" for benchmarks: NOT a trained model.

Written by bench/gpu/make_dummy_model.py. config.json has the shapes of
{config['architectures'][0]} ({name}):
{sizes}.
There are no weight files: serve it with

  pagoda-server --model THIS_DIR --load-format dummy

which initialises every weight randomly (like vLLM's --load-format dummy). Outputs are random
tokens: speed and memory are those of the real model, quality is not.

tokenizer.json is synthetic: {config['vocab_size']} WordLevel tokens ("\u2581" + lowercase letters,
and the special tokens), so that random prompts of exact lengths can be built. It is not the
model's real tokenizer: token counts of real text differ.
"""


def write_json(path, value):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(value, f, indent=2, ensure_ascii=False)
        f.write("\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", required=True, choices=sorted(SHAPES))
    parser.add_argument("--out", required=True, help="directory to write (created if missing)")
    args = parser.parse_args(argv)
    shape = SHAPES[args.shape]
    os.makedirs(args.out, exist_ok=True)
    write_json(os.path.join(args.out, "config.json"), shape["config"])
    write_json(os.path.join(args.out, "generation_config.json"), generation_config(shape))
    with open(os.path.join(args.out, "tokenizer.json"), "w", encoding="utf-8") as f:
        # One line: the vocabulary has up to 152k entries.
        json.dump(tokenizer_json(shape), f, ensure_ascii=False, separators=(",", ":"))
    write_json(os.path.join(args.out, "tokenizer_config.json"), tokenizer_config(shape))
    with open(os.path.join(args.out, "README.txt"), "w", encoding="utf-8") as f:
        f.write(readme(args.shape, shape))
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
