#!/usr/bin/env python3
"""Builds the per-family reference fixtures in engine/tests/fixtures/families/.

For every model family (see FAMILIES) this script

1. builds a tiny random model with transformers' own class (fixed seed, float32, weights drawn
   with a larger spread than the default initialisation so that logits are not flat and greedy
   tokens are decisive) and a tiny tokenizer trained on the paragraphs in CORPUS, and saves them
   with ``save_pretrained(safe_serialization=True)`` into ``<family>/hf/``;
2. runs transformers (eager attention, float32, batch 1) on three fixed prompts: one prefill
   forward over the prompt, then NUM_DECODE_STEPS greedy decode steps with transformers' KV cache,
   and writes the tokens and every row's logits to ``<family>/transformers.safetensors``;
3. converts ``hf/`` to GGUF with llama.cpp's own ``convert_hf_to_gguf.py`` (``--outtype f32`` and
   ``--outtype q8_0``) into ``model-f32.gguf`` / ``model-q8_0.gguf``;
4. runs llama.cpp (``llamacpp_logits``, built by build_llamacpp.sh from llamacpp_logits.cpp) on the
   same tokens, teacher-forced (the prompt in one llama_decode, then transformers' greedy tokens one
   llama_decode each), and writes ``llamacpp-f32.safetensors`` / ``llamacpp-q8_0.safetensors``;
5. prints a one-line comparison per family and rewrites ``SUMMARY.md``.

Usage (from the repository root, with the reference venv; see scripts/reference/README.md)::

    /work/refenv/bin/python scripts/reference/make_family_fixtures.py                 # everything
    /work/refenv/bin/python scripts/reference/make_family_fixtures.py --family llama3  # one family
    /work/refenv/bin/python scripts/reference/make_family_fixtures.py --stage hf       # steps 1-2 only
    /work/refenv/bin/python scripts/reference/make_family_fixtures.py --stage llamacpp # steps 3-5 only

Stages: ``hf`` (steps 1-2, needs only torch/transformers), ``llamacpp`` (steps 3-5, needs the
llama.cpp build and an existing ``hf/``), ``summary`` (step 5 only, from the files on disk),
``all`` (default: hf + llamacpp + summary). ``SUMMARY.md`` always covers every family that has all
the files. ``variants`` builds the diagnostic variants in VARIANTS in a temporary directory and
prints their comparison (the numbers quoted in the families' notes); it writes no fixture.

Deterministic: rerunning it with the same package versions writes byte-identical files.

Pinned versions the committed fixtures were made with (other versions may change the bytes, and
possibly the numbers): torch 2.15.0, transformers 5.23.0, safetensors 0.8.0, numpy 2.4.6,
sentencepiece 0.2.3, tokenizers 0.23.3, llama.cpp as vendored in llama-cpp-python 0.3.36 (its
gguf-py 0.19.0 is what the converter imports).
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable

import numpy as np
import torch
from safetensors.numpy import load_file as load_np, save_file as save_np

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "engine" / "tests" / "fixtures" / "families"
HERE = Path(__file__).resolve().parent
LLAMA_CPP_PYTHON_VERSION = "0.3.36"
LLAMA_CPP = Path(os.environ.get(
    "LLAMA_CPP_SRC",
    Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "pagoda" / "llama.cpp"
    / f"llama_cpp_python-{LLAMA_CPP_PYTHON_VERSION}" / "vendor" / "llama.cpp"))
LLAMA_BUILD = Path(os.environ.get("LLAMA_CPP_BUILD", LLAMA_CPP / "build-ref"))

NUM_DECODE_STEPS = 8
VOCAB_SIZE = 320
# Special token ids shared by every family's tokenizer (prompts avoid 0..3).
UNK_ID, BOS_ID, EOS_ID, PAD_ID = 0, 1, 2, 3
N_SPECIAL = 4

# Text the tiny tokenizers are trained on (written for this purpose).
CORPUS = """\
The engine reads a batch of prompts, splits them into pages of key and value vectors, and keeps
those pages in a pool that every request can borrow from. When a request finishes, its pages go
back to the pool; when the pool runs dry, the scheduler pauses the newest request and lets the
older ones finish first. Nothing in this loop is clever, but every part of it has to be exact.
A tiny model is useful precisely because it is small: its weights fit in a few hundred kilobytes,
its logits can be printed on one screen, and a wrong rotary angle or a missing bias shows up as a
difference in the third decimal place instead of hiding inside a thousand layers of noise.
Seven quiet herons waited by the river while the ferry crossed twice an hour, carrying bicycles,
baskets of plums, a violin in a green case and, once, a goat that refused to leave the deck.
Numbers matter too: 3, 14, 159, 2653, 58979, and the dates 1969-07-20 or 2001-09-11 are tokens
like any other. Punctuation (commas, colons; dashes - and quotes "like these") must survive.
Softcapping squeezes large scores through a hyperbolic tangent; sliding windows forget the distant
past; mixtures of experts send each token to the few feed-forward blocks its router prefers.
On Mondays the bakery sells rye, on Thursdays it sells brioche, and on every other day it sells
whatever the baker dreamed about, which is usually bread shaped like a lighthouse or a whale.
Quantization rounds each block of thirty-two weights to eight-bit integers with one shared scale;
the error is small, but it is not zero, so a reference must say which copy of the weights it used.
Jugglers, zebras, xylophones and quizzical wombats keep the rarer letters of the alphabet busy.
"""


# ----------------------------------------------------------------------------------------------
# Families
# ----------------------------------------------------------------------------------------------

@dataclasses.dataclass
class Family:
    """One fixture family: the transformers classes, config overrides and prompt lengths."""
    id: str
    config_class: str
    model_class: str
    config: dict
    tokenizer: str = "spm"          # "spm" (tokenizer.model) or "bpe" (tokenizer.json)
    tokenizer_class: str = "LlamaTokenizer"
    prompt_lengths: tuple = (5, 13, 21)
    seed: int = 0
    # Norm weights are "(1 + w)" in Gemma (neutral value 0) and "w" elsewhere (neutral value 1);
    # the init below perturbs each norm around its default value, so no flag is needed.
    notes: str = ""


def base_config(**overrides) -> dict:
    cfg = dict(
        vocab_size=VOCAB_SIZE,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        max_position_embeddings=128,
        rms_norm_eps=1e-5,
        bos_token_id=BOS_ID,
        eos_token_id=EOS_ID,
        pad_token_id=PAD_ID,
        tie_word_embeddings=False,
        dtype="float32",
    )
    cfg.update(overrides)
    return cfg


def _longrope_factors() -> tuple[list, list]:
    # head_dim / 2 = 8 distinct factors each, between ~1 and ~4.
    short = [1.0, 1.05, 1.12, 1.2, 1.35, 1.5, 1.7, 1.9]
    long = [1.1, 1.3, 1.6, 2.0, 2.4, 2.9, 3.4, 3.9]
    return short, long


def _gemma_qpas_note(variant_delta: str) -> str:
    return ("llama.cpp ignores query_pre_attn_scalar (24): it scales queries by 1/sqrt(head_dim) "
            "(1/sqrt(n_embd/n_head) for the 27B layer count only; both are 16 here) and the GGUF "
            "has no field for it; rows differ from row 1 on (row 0 attends only to itself). "
            "Checked with `--stage variants`: the same model with query_pre_attn_scalar 16 agrees "
            f"to {variant_delta} (F32), all of it from ggml's FP16 lookup table for GELU "
            "(emulating that table in transformers brings prompt 0 to 7e-6)")


def families() -> list[Family]:
    short_f, long_f = _longrope_factors()
    fams = [
        Family("llama3", "LlamaConfig", "LlamaForCausalLM", base_config(
            rope_parameters=dict(rope_type="llama3", rope_theta=1000.0, factor=8.0,
                                 low_freq_factor=1.0, high_freq_factor=4.0,
                                 original_max_position_embeddings=16),
        ), seed=1),
        Family("qwen2", "Qwen2Config", "Qwen2ForCausalLM", base_config(
            tie_word_embeddings=True, rms_norm_eps=1e-6,
            rope_parameters=dict(rope_type="default", rope_theta=10000.0),
            use_sliding_window=False,
        ), tokenizer_class="Qwen2Tokenizer", seed=2),
        Family("qwen3", "Qwen3Config", "Qwen3ForCausalLM", base_config(
            rms_norm_eps=1e-6,
            rope_parameters=dict(rope_type="default", rope_theta=10000.0),
            use_sliding_window=False,
        ), tokenizer_class="Qwen2Tokenizer", seed=3),
        Family("mistral", "MistralConfig", "MistralForCausalLM", base_config(
            sliding_window=8,
            rope_parameters=dict(rope_type="default", rope_theta=10000.0),
        ), seed=4, notes=(
            "llama.cpp has no sliding window for MistralForCausalLM: the converter maps it to the "
            "`llama` arch and writes no sliding_window, so llama.cpp attends to the whole context. "
            "Rows agree (~1e-5) while a query sees <= 8 tokens (rows 0-7) and diverge from row 8 on; "
            "transformers (window 8) is the reference")),
        Family("gemma2", "Gemma2Config", "Gemma2ForCausalLM", base_config(
            num_hidden_layers=4, tie_word_embeddings=True, rms_norm_eps=1e-6,
            hidden_activation="gelu_pytorch_tanh",
            query_pre_attn_scalar=24, attn_logit_softcapping=50.0, final_logit_softcapping=30.0,
            sliding_window=8,
            rope_parameters=dict(rope_type="default", rope_theta=10000.0),
        ), tokenizer_class="GemmaTokenizer", seed=5, notes=(
            _gemma_qpas_note("2.6e-3"))),
        Family("gemma3", "Gemma3TextConfig", "Gemma3ForCausalLM", base_config(
            num_hidden_layers=6, intermediate_size=64, tie_word_embeddings=True, rms_norm_eps=1e-6,
            hidden_activation="gelu_pytorch_tanh",
            query_pre_attn_scalar=24, sliding_window=8,
            rope_parameters={
                "full_attention": dict(rope_type="linear", factor=8.0, rope_theta=1000000.0),
                "sliding_attention": dict(rope_type="default", rope_theta=10000.0),
            },
        ), tokenizer_class="GemmaTokenizer", seed=6, notes=(
            _gemma_qpas_note("3.1e-3") + "; that check also covers the linear rope factor 8 "
            "on the global layer and rope_local_base_freq on the sliding ones, which llama.cpp "
            "handles as transformers does")),
        Family("phi3", "Phi3Config", "Phi3ForCausalLM", base_config(
            max_position_embeddings=128, original_max_position_embeddings=32,
            sliding_window=None, hidden_act="silu",
            rope_parameters=dict(rope_type="longrope", rope_theta=10000.0,
                                 short_factor=short_f, long_factor=long_f),
        ), prompt_lengths=(37, 41, 45), seed=7, notes=(
            "every forward is past original_max_position_embeddings 32, so transformers uses "
            "long_factor throughout; both apply the longrope attention factor "
            "sqrt(1 + ln(128/32)/ln(32)) = 1.18322 to cos and sin (q.k scaled by its square); "
            "llama.cpp picks long factors because n_ctx 256 > 32")),
        Family("granite", "GraniteConfig", "GraniteForCausalLM", base_config(
            tie_word_embeddings=True,
            embedding_multiplier=12.0, attention_multiplier=0.1, residual_multiplier=0.3,
            logits_scaling=4.0,
            rope_parameters=dict(rope_type="default", rope_theta=10000.0),
        ), tokenizer_class="LlamaTokenizer", seed=8),
        Family("mixtral", "MixtralConfig", "MixtralForCausalLM", base_config(
            intermediate_size=32, num_local_experts=8, num_experts_per_tok=2,
            sliding_window=None,
            rope_parameters=dict(rope_type="default", rope_theta=10000.0),
        ), seed=9),
        Family("qwen3moe", "Qwen3MoeConfig", "Qwen3MoeForCausalLM", base_config(
            tie_word_embeddings=True, rms_norm_eps=1e-6, moe_intermediate_size=32, num_experts=16, num_experts_per_tok=4,
            norm_topk_prob=True, decoder_sparse_step=1, mlp_only_layers=[],
            use_sliding_window=False,
            rope_parameters=dict(rope_type="default", rope_theta=10000.0),
        ), tokenizer="bpe", tokenizer_class="Qwen2Tokenizer", seed=10),
        Family("qwen2moe", "Qwen2MoeConfig", "Qwen2MoeForCausalLM", base_config(
            rms_norm_eps=1e-6, moe_intermediate_size=32, shared_expert_intermediate_size=64,
            num_experts=8, num_experts_per_tok=2, norm_topk_prob=False,
            decoder_sparse_step=1, mlp_only_layers=[], use_sliding_window=False,
            rope_parameters=dict(rope_type="default", rope_theta=10000.0),
        ), tokenizer="bpe", tokenizer_class="Qwen2Tokenizer", seed=11),
        Family("qwen2_yarn", "Qwen2Config", "Qwen2ForCausalLM", base_config(
            tie_word_embeddings=True, rms_norm_eps=1e-6, max_position_embeddings=128,
            use_sliding_window=False,
            rope_parameters=dict(rope_type="yarn", rope_theta=10000.0, factor=4.0,
                                 original_max_position_embeddings=32),
        ), tokenizer_class="Qwen2Tokenizer", seed=12),
        Family("gpt_oss", "GptOssConfig", "GptOssForCausalLM", base_config(
            intermediate_size=32, num_local_experts=8, num_experts_per_tok=2,
            sliding_window=8, attention_bias=True, swiglu_limit=7.0,
            rope_parameters=dict(rope_type="yarn", rope_theta=150000.0, factor=4.0,
                                 beta_fast=32.0, beta_slow=1.0, truncate=False,
                                 original_max_position_embeddings=32),
        ), tokenizer="bpe", tokenizer_class="PreTrainedTokenizerFast", seed=13, notes=(
            "llama.cpp ignores YaRN `truncate: false` (GPT-OSS's real setting): it always rounds "
            "the correction range to integers (floor/ceil), as transformers does only with "
            "truncate true; row 0 (position 0, no rotation) agrees to 1e-5, later rows differ. "
            "Checked with `--stage variants`: with truncate true F32 agrees to 1.6e-5. Expert "
            "weights are plain float32 (not MXFP4); the converter accepts them with a warning")),
    ]
    return fams


# ----------------------------------------------------------------------------------------------
# Tokenizers
# ----------------------------------------------------------------------------------------------

def _corpus_lines() -> list[str]:
    return [line for line in CORPUS.splitlines() if line.strip()]


def write_spm_tokenizer(out: Path, fam: Family) -> None:
    """Trains a SentencePiece BPE model of exactly VOCAB_SIZE pieces and writes tokenizer.model,
    tokenizer_config.json and special_tokens_map.json. Ids: 0 <unk>, 1 <s>, 2 </s>, 3 <pad>."""
    import sentencepiece as spm

    n_extra = 0
    for _ in range(4):
        buf = io.BytesIO()
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(_corpus_lines()), model_writer=buf,
            vocab_size=VOCAB_SIZE, model_type="bpe", character_coverage=1.0,
            unk_id=UNK_ID, bos_id=BOS_ID, eos_id=EOS_ID, pad_id=PAD_ID,
            user_defined_symbols=[f"<extra_{i}>" for i in range(n_extra)],
            hard_vocab_limit=False, num_threads=1, minloglevel=2,
            split_digits=True, byte_fallback=False, normalization_rule_name="identity",
        )
        sp = spm.SentencePieceProcessor(model_proto=buf.getvalue())
        if sp.vocab_size() == VOCAB_SIZE:
            break
        n_extra += VOCAB_SIZE - sp.vocab_size()
    else:
        raise RuntimeError(f"sentencepiece vocab is {sp.vocab_size()}, not {VOCAB_SIZE}")
    (out / "tokenizer.model").write_bytes(buf.getvalue())
    special = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>"}
    tok_cfg = dict(special, tokenizer_class=fam.tokenizer_class, add_bos_token=True,
                   add_eos_token=False, model_max_length=fam.config["max_position_embeddings"])
    if fam.tokenizer_class == "GemmaTokenizer":
        tok_cfg["mask_token"] = None  # else transformers' GemmaTokenizer appends a <mask> (id 320)
    _write_json(out / "tokenizer_config.json", tok_cfg)
    _write_json(out / "special_tokens_map.json", special)


def write_bpe_tokenizer(out: Path, fam: Family) -> None:
    """Trains a byte-level BPE (tokenizers library) of exactly VOCAB_SIZE tokens, saved through
    transformers' PreTrainedTokenizerFast (tokenizer.json + tokenizer_config.json)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    specials = ["<unk>", "<s>", "</s>", "<pad>"]
    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB_SIZE, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(_corpus_lines(), trainer=trainer)
    n = tok.get_vocab_size()
    if n < VOCAB_SIZE:
        tok.add_tokens([f"<extra_{i}>" for i in range(VOCAB_SIZE - n)])
    assert tok.get_vocab_size() == VOCAB_SIZE, tok.get_vocab_size()
    for i, s in enumerate(specials):
        assert tok.token_to_id(s) == i
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>",
                                   unk_token="<unk>", pad_token="<pad>",
                                   model_max_length=fam.config["max_position_embeddings"])
    fast.save_pretrained(str(out))


def _write_json(path: Path, obj) -> None:
    path.write_text(json.dumps(obj, indent=2, sort_keys=True) + "\n")


# ----------------------------------------------------------------------------------------------
# Tiny models
# ----------------------------------------------------------------------------------------------

MATRIX_STD = 0.15
EMBED_STD = 0.3
ROUTER_STD = 0.6
BIAS_STD = 0.1
NORM_STD = 0.2


def randomise(model: torch.nn.Module, seed: int) -> None:
    """Re-draws every parameter with a fixed generator, in named_parameters() order:
    norm weights = their default (1, or 0 for Gemma's (1 + w) norms) + N(0, NORM_STD);
    attention sinks (GPT-OSS) N(0, 1); biases N(0, BIAS_STD); MoE router weights N(0, ROUTER_STD) (decisive top-k);
    embeddings and lm_head N(0, EMBED_STD); every other matrix (and 3-D expert tensor) N(0, MATRIX_STD).
    The output rows of the special tokens 0..3 are scaled by 0.1 so greedy decoding never
    picks them (the engine under test may stop at EOS)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = lambda std: torch.randn(p.shape, generator=gen, dtype=torch.float32) * std
            if name.endswith("sinks"):
                p.copy_(noise(1.0))
            elif p.ndim == 1 and "norm" in name:
                p.copy_(p + noise(NORM_STD))
            elif p.ndim == 1:
                p.copy_(noise(BIAS_STD))
            elif name.endswith("embed_tokens.weight") or name.endswith("lm_head.weight"):
                p.copy_(noise(EMBED_STD))
            elif (".gate.weight" in name or "router" in name) and "shared" not in name:
                p.copy_(noise(ROUTER_STD))
            else:
                p.copy_(noise(MATRIX_STD))
        out = model.get_output_embeddings().weight
        out[:N_SPECIAL] *= 0.1


def build_model(fam: Family):
    import transformers
    cfg_cls = getattr(transformers, fam.config_class)
    model_cls = getattr(transformers, fam.model_class)
    cfg = cfg_cls(**fam.config)
    cfg._attn_implementation = "eager"
    torch.manual_seed(fam.seed)
    model = model_cls(cfg).to(torch.float32)
    randomise(model, fam.seed)
    model.eval()
    return model


def make_prompts(fam: Family) -> list[list[int]]:
    rng = np.random.RandomState(1000 + fam.seed)
    return [[int(t) for t in rng.randint(N_SPECIAL, VOCAB_SIZE, size=n)] for n in fam.prompt_lengths]


def transformers_logits(model, prompt: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """One prefill forward over the prompt, then NUM_DECODE_STEPS greedy steps with the KV cache.
    Returns (tokens [len + steps] int64, logits [len + steps, vocab] float32)."""
    with torch.no_grad():
        ids = torch.tensor([prompt], dtype=torch.long)
        out = model(input_ids=ids, use_cache=True)
        rows = [out.logits[0].float()]
        past = out.past_key_values
        tokens = list(prompt)
        nxt = int(torch.argmax(out.logits[0, -1]))
        for _ in range(NUM_DECODE_STEPS):
            tokens.append(nxt)
            out = model(input_ids=torch.tensor([[nxt]], dtype=torch.long), past_key_values=past,
                        use_cache=True)
            past = out.past_key_values
            rows.append(out.logits[0].float())
            nxt = int(torch.argmax(out.logits[0, -1]))
    logits = torch.cat(rows, dim=0).numpy().astype(np.float32)
    return np.array(tokens, dtype=np.int64), logits


def stage_hf(fam: Family) -> None:
    d = FIXTURES / fam.id
    hf = d / "hf"
    if hf.exists():
        shutil.rmtree(hf)
    hf.mkdir(parents=True)
    model = build_model(fam)
    model.save_pretrained(str(hf), safe_serialization=True)
    if fam.tokenizer == "spm":
        write_spm_tokenizer(hf, fam)
    else:
        write_bpe_tokenizer(hf, fam)
    prompts = make_prompts(fam)
    (d / "prompts.json").write_text(
        '{"prompts": [\n' + ",\n".join("  " + json.dumps(p) for p in prompts)
        + f'\n], "num_decode_steps": {NUM_DECODE_STEPS}}}\n')

    # Logits from the model exactly as saved (reload, so the fixture is what hf/ holds).
    import transformers
    model = getattr(transformers, fam.model_class).from_pretrained(
        str(hf), dtype=torch.float32, attn_implementation="eager")
    model.eval()
    tensors = {}
    for i, p in enumerate(prompts):
        toks, logits = transformers_logits(model, p)
        tensors[f"p{i}.tokens"] = toks
        tensors[f"p{i}.logits"] = logits
        greedy = toks[len(p):]
        if np.any(greedy < N_SPECIAL):
            print(f"warning: {fam.id} p{i} greedy tokens include a special id: {greedy}")
    save_np(tensors, str(d / "transformers.safetensors"))
    print(f"{fam.id}: hf/ + transformers.safetensors written "
          f"({sum(f.stat().st_size for f in hf.iterdir()) // 1024} KiB in hf/)")


# ----------------------------------------------------------------------------------------------
# llama.cpp
# ----------------------------------------------------------------------------------------------

CONVERT_WRAPPER = HERE / "convert_hf_to_gguf_tiny.py"


def convert(fam: Family, outtype: str) -> Path:
    d = FIXTURES / fam.id
    out = d / f"model-{outtype}.gguf"
    env = dict(os.environ, PYTHONHASHSEED="0")
    cmd = [sys.executable, str(CONVERT_WRAPPER), str(LLAMA_CPP / "convert_hf_to_gguf.py"),
           str(d / "hf"), "--outtype", outtype, "--outfile", str(out)]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.stderr.write(r.stdout[-4000:] + r.stderr[-8000:])
        raise RuntimeError(f"{fam.id}: convert_hf_to_gguf --outtype {outtype} failed")
    return out


def llamacpp_logits(gguf: Path, seqs: list[tuple[int, np.ndarray]]) -> list[np.ndarray]:
    tool = LLAMA_BUILD / "bin" / "llamacpp_logits"
    with tempfile.TemporaryDirectory() as tmp:
        inp = Path(tmp) / "seqs.txt"
        outp = Path(tmp) / "logits.bin"
        inp.write_text("".join(f"{n} " + " ".join(str(int(t)) for t in toks) + "\n"
                               for n, toks in seqs))
        r = subprocess.run([str(tool), str(gguf), str(inp), str(outp), "2"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.stderr.write(r.stdout[-4000:] + r.stderr[-8000:])
            raise RuntimeError(f"llamacpp_logits failed on {gguf}")
        raw = outp.read_bytes()
    n_seq, n_vocab = np.frombuffer(raw[:8], dtype="<i4")
    off = 8
    res = []
    for _ in range(n_seq):
        (n_rows,) = np.frombuffer(raw[off:off + 4], dtype="<i4")
        off += 4
        cnt = int(n_rows) * int(n_vocab)
        res.append(np.frombuffer(raw[off:off + 4 * cnt], dtype="<f4").reshape(n_rows, n_vocab).copy())
        off += 4 * cnt
    assert off == len(raw)
    return res


def stage_llamacpp(fam: Family) -> None:
    d = FIXTURES / fam.id
    ref = load_np(str(d / "transformers.safetensors"))
    prompts = json.loads((d / "prompts.json").read_text())["prompts"]
    seqs = [(len(p), ref[f"p{i}.tokens"]) for i, p in enumerate(prompts)]
    for outtype in ("f32", "q8_0"):
        gguf = convert(fam, outtype)
        rows = llamacpp_logits(gguf, seqs)
        tensors = {}
        for i, (_, toks) in enumerate(seqs):
            tensors[f"p{i}.tokens"] = toks.astype(np.int64)
            tensors[f"p{i}.logits"] = rows[i].astype(np.float32)
        save_np(tensors, str(d / f"llamacpp-{outtype}.safetensors"))


# ----------------------------------------------------------------------------------------------
# Summary
# ----------------------------------------------------------------------------------------------

def compare(fam_id: str) -> dict | None:
    d = FIXTURES / fam_id
    paths = [d / n for n in ("prompts.json", "transformers.safetensors",
                             "llamacpp-f32.safetensors", "llamacpp-q8_0.safetensors")]
    if not all(p.exists() for p in paths):
        return None
    prompts = json.loads(paths[0].read_text())["prompts"]
    ref = load_np(str(paths[1]))
    res = {"id": fam_id, "logit_absmax": 0.0}
    for kind, path in (("f32", paths[2]), ("q8_0", paths[3])):
        other = load_np(str(path))
        dmax, agree, total, sq, n = 0.0, 0, 0, 0.0, 0
        for i, p in enumerate(prompts):
            a, b = ref[f"p{i}.logits"], other[f"p{i}.logits"]
            assert np.array_equal(ref[f"p{i}.tokens"], other[f"p{i}.tokens"])
            assert a.shape == b.shape, (a.shape, b.shape)
            dmax = max(dmax, float(np.max(np.abs(a - b))))
            sq += float(np.sum((a.astype(np.float64) - b) ** 2))
            n += a.size
            res["logit_absmax"] = max(res["logit_absmax"], float(np.max(np.abs(a))))
            # Greedy agreement: llama.cpp's argmax at every row that chose a greedy token.
            rows = range(len(p) - 1, a.shape[0] - 1)
            for r in rows:
                total += 1
                agree += int(np.argmax(b[r]) == ref[f"p{i}.tokens"][r + 1])
        res[kind] = (dmax, agree, total, math.sqrt(sq / n))
    return res


def write_summary(fams: list[Family]) -> None:
    lines = [
        "# Family fixtures: transformers vs llama.cpp",
        "",
        "Written by scripts/reference/make_family_fixtures.py. max |Δlogit| is over every row of",
        "the 3 prompts (prefill + 8 decode steps), llama.cpp teacher-forced on transformers' tokens;",
        "rms = root-mean-square Δ over all logits; greedy = rows where llama.cpp's argmax equals",
        "transformers' greedy token (the 8 rows per prompt that chose g0..g7; 24 per family).",
        "",
        "| family | max \\|logit\\| | max \\|Δ\\| F32 | greedy F32 | max \\|Δ\\| Q8_0 | rms Δ Q8_0 | greedy Q8_0 | notes |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for fam in fams:
        r = compare(fam.id)
        if r is None:
            continue
        f32, q8 = r["f32"], r["q8_0"]
        line = (f"| {fam.id} | {r['logit_absmax']:.2f} | {f32[0]:.2e} | {f32[1]}/{f32[2]} | "
                f"{q8[0]:.2e} | {q8[3]:.2e} | {q8[1]}/{q8[2]} | {fam.notes} |")
        print(f"{fam.id}: max|Δ| f32 {f32[0]:.2e} (greedy {f32[1]}/{f32[2]}), "
              f"q8_0 {q8[0]:.2e} (greedy {q8[1]}/{q8[2]})")
        lines.append(line)
    lines += [
        "",
        "Reading this: F32 agreement to ~1e-5 means llama.cpp and transformers compute the same",
        "model; for those families both logits files are references. Where a note names a",
        "disagreement (mistral, gemma2, gemma3, gpt_oss) the llama.cpp files record what llama.cpp",
        "does with that config, and transformers.safetensors is the reference. Q8_0 differs by up",
        "to ~1 logit because llama.cpp also quantises the activations to 8 bits in Q8_0 matmuls;",
        "granite's small Δ is its logits_scaling (logits divided by 4).",
    ]
    (FIXTURES / "SUMMARY.md").write_text("\n".join(lines) + "\n")


# Diagnostic variants (--stage variants): the same family with one config change that removes
# a known llama.cpp/transformers disagreement, to show that it is the only one. Built in a
# temporary directory; nothing is written to the fixtures.
VARIANTS = {
    "gemma2": {"query_pre_attn_scalar": 16},
    "gemma3": {"query_pre_attn_scalar": 16},
    "gpt_oss": {"rope_parameters": dict(rope_type="yarn", rope_theta=150000.0, factor=4.0,
                                        beta_fast=32.0, beta_slow=1.0, truncate=True,
                                        original_max_position_embeddings=32)},
}


def stage_variants(fams: list[Family]) -> None:
    global FIXTURES
    saved = FIXTURES
    with tempfile.TemporaryDirectory() as tmp:
        FIXTURES = Path(tmp)
        try:
            for fam in fams:
                if fam.id not in VARIANTS:
                    continue
                var = dataclasses.replace(fam, config=dict(fam.config, **VARIANTS[fam.id]))
                stage_hf(var)
                stage_llamacpp(var)
                r = compare(var.id)
                print(f"variant {fam.id} {VARIANTS[fam.id]}: max|Δ| f32 {r['f32'][0]:.2e} "
                      f"(greedy {r['f32'][1]}/{r['f32'][2]}), q8_0 {r['q8_0'][0]:.2e}")
        finally:
            FIXTURES = saved


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--family", action="append", help="family id (repeatable); default: all")
    ap.add_argument("--stage", choices=["all", "hf", "llamacpp", "summary", "variants"], default="all")
    args = ap.parse_args()
    torch.set_num_threads(2)
    torch.use_deterministic_algorithms(True)
    fams = families()
    known = {f.id for f in fams}
    chosen = fams if not args.family else [f for f in fams if f.id in set(args.family)]
    for name in args.family or []:
        if name not in known:
            ap.error(f"unknown family {name!r}; known: {', '.join(sorted(known))}")
    if args.stage == "variants":
        stage_variants(chosen)
        return
    failed = []
    for fam in chosen:
        try:
            if args.stage in ("all", "hf"):
                stage_hf(fam)
            if args.stage in ("all", "llamacpp"):
                stage_llamacpp(fam)
        except Exception as e:  # keep going: report every family that fails at the end
            print(f"{fam.id}: FAILED: {e}", file=sys.stderr)
            failed.append(fam.id)
    write_summary(fams)
    if failed:
        sys.exit(f"failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
