#!/usr/bin/env bash
# Builds a Qwen3-MoE-shaped model with random weights for benchmarking the mixture-of-experts path
# against llama.cpp (bench/moe_vs_llamacpp.sh), and prints the path of its Q8_0 GGUF on stdout
# (progress on stderr). Does nothing but print the path when the GGUF is already there.
#
#   bench/make_moe_gguf.sh        # -> ~/.cache/pagoda/bench-models/qwen3moe-h1024-l16-e64-top8/model-q8_0.gguf
#
# The model: transformers' Qwen3MoeConfig / Qwen3MoeForCausalLM, every layer sparse (decoder_sparse_step
# 1, no mlp_only_layers), norm_topk_prob true; by default hidden 1024, 16 layers, 16 query heads and 4
# KV heads of 128, 64 experts of 512, top-8, untied output head: 1.78 B parameters, of which ~0.33 B
# are active per token (a scaled-down Qwen3-30B-A3B: 2048 hidden, 48 layers, 128 experts of 768,
# top-8). Weights drawn with a fixed seed, one torch.Generator in named_parameters() order: norm
# weights 1, every other tensor N(0, 0.02) (transformers' initializer_range), stored in bf16
# (3.6 GB). The tokenizer is the default model's (models/SmolLM2-135M-Instruct.Q4_1.gguf, read by
# transformers' AutoTokenizer with gguf_file=), so vocab_size is 49,152. llama.cpp's own
# convert_hf_to_gguf.py (through scripts/reference/convert_hf_to_gguf_tiny.py, which only changes
# what happens to an unrecognised pre-tokenizer; this one is recognised: tokenizer.ggml.pre
# "smollm") writes the Q8_0 GGUF (1.9 GB; experts as ffn_{gate,up,down}_exps, router in F32).
# Measured (2026-12-02, 2 cores): 2 min 17 s, peak RSS 6.4 GB.
#
# Environment (defaults in brackets):
#   PYTHON [/work/refenv/bin/python]: torch, transformers (5.x), gguf, safetensors
#   BENCH_MODELS [~/.cache/pagoda/bench-models]: where the model directory goes (outside the repo)
#   MOE_HIDDEN [1024] MOE_LAYERS [16] MOE_HEADS [16] MOE_KV_HEADS [4] MOE_HEAD_DIM [128]
#   MOE_EXPERTS [64] MOE_TOP_K [8] MOE_INTERMEDIATE [512] MOE_SEED [0]
#   LLAMA_CPP_SRC [the llama.cpp source bench/build_llama_server.sh unpacks]
#   OUTTYPE [q8_0]: the converter's --outtype
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
PYTHON=${PYTHON:-/work/refenv/bin/python}
BENCH_MODELS=${BENCH_MODELS:-${XDG_CACHE_HOME:-$HOME/.cache}/pagoda/bench-models}
MOE_HIDDEN=${MOE_HIDDEN:-1024} MOE_LAYERS=${MOE_LAYERS:-16} MOE_HEADS=${MOE_HEADS:-16}
MOE_KV_HEADS=${MOE_KV_HEADS:-4} MOE_HEAD_DIM=${MOE_HEAD_DIM:-128} MOE_EXPERTS=${MOE_EXPERTS:-64}
MOE_TOP_K=${MOE_TOP_K:-8} MOE_INTERMEDIATE=${MOE_INTERMEDIATE:-512} MOE_SEED=${MOE_SEED:-0}
OUTTYPE=${OUTTYPE:-q8_0}
LLAMA_CPP_SRC=${LLAMA_CPP_SRC:-${XDG_CACHE_HOME:-$HOME/.cache}/pagoda/llama.cpp/llama_cpp_python-0.3.36/vendor/llama.cpp}
NAME="qwen3moe-h$MOE_HIDDEN-l$MOE_LAYERS-e$MOE_EXPERTS-top$MOE_TOP_K-i$MOE_INTERMEDIATE-s$MOE_SEED"
DIR="$BENCH_MODELS/$NAME"
GGUF="$DIR/model-$OUTTYPE.gguf"
if [ -s "$GGUF" ]; then
  echo "$GGUF"
  exit 0
fi
[ -f "$LLAMA_CPP_SRC/convert_hf_to_gguf.py" ] || {
  echo "make_moe_gguf: llama.cpp's convert_hf_to_gguf.py not found under $LLAMA_CPP_SRC (run bench/build_llama_server.sh)" >&2
  exit 2
}
DEFAULT_GGUF=$(scripts/fetch-default-model.sh)
mkdir -p "$DIR"
if [ ! -s "$DIR/hf/config.json" ]; then
  echo "make_moe_gguf: building $DIR/hf (random weights, seed $MOE_SEED)" >&2
  rm -rf "$DIR/hf.tmp"
  MOE_HIDDEN=$MOE_HIDDEN MOE_LAYERS=$MOE_LAYERS MOE_HEADS=$MOE_HEADS MOE_KV_HEADS=$MOE_KV_HEADS \
    MOE_HEAD_DIM=$MOE_HEAD_DIM MOE_EXPERTS=$MOE_EXPERTS MOE_TOP_K=$MOE_TOP_K \
    MOE_INTERMEDIATE=$MOE_INTERMEDIATE MOE_SEED=$MOE_SEED \
    "$PYTHON" - "$DEFAULT_GGUF" "$DIR/hf.tmp" <<'PY'
import os, sys
import torch
from transformers import AutoTokenizer, Qwen3MoeConfig, Qwen3MoeForCausalLM

gguf, out = sys.argv[1:]
env = lambda k: int(os.environ[k])
tok = AutoTokenizer.from_pretrained(os.path.dirname(os.path.abspath(gguf)),
                                    gguf_file=os.path.basename(gguf))
tok.save_pretrained(out)
cfg = Qwen3MoeConfig(
    vocab_size=len(tok), hidden_size=env("MOE_HIDDEN"), num_hidden_layers=env("MOE_LAYERS"),
    num_attention_heads=env("MOE_HEADS"), num_key_value_heads=env("MOE_KV_HEADS"),
    head_dim=env("MOE_HEAD_DIM"), intermediate_size=4 * env("MOE_HIDDEN"),
    moe_intermediate_size=env("MOE_INTERMEDIATE"), num_experts=env("MOE_EXPERTS"),
    num_experts_per_tok=env("MOE_TOP_K"), norm_topk_prob=True, decoder_sparse_step=1,
    mlp_only_layers=[], max_position_embeddings=4096, rms_norm_eps=1e-6,
    rope_parameters=dict(rope_type="default", rope_theta=1000000.0), use_sliding_window=False,
    tie_word_embeddings=False, initializer_range=0.02, router_aux_loss_coef=0.001,
    bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
    pad_token_id=tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id,
    dtype="bfloat16")
torch.set_default_dtype(torch.bfloat16)
with torch.device("meta"):
    model = Qwen3MoeForCausalLM(cfg)
model = model.to_empty(device="cpu")
gen = torch.Generator().manual_seed(env("MOE_SEED"))
total = 0
with torch.no_grad():
    for name, p in model.named_parameters():
        if p.ndim == 1 and "norm" in name:
            p.fill_(1.0)
        else:
            # In slices along the first axis: at most one f32 slice of a stacked expert tensor.
            for i in range(p.shape[0]):
                p[i].copy_(torch.randn(p[i].shape, generator=gen, dtype=torch.float32) * 0.02)
        total += p.numel()
print(f"make_moe_gguf: {total / 1e9:.3f} B parameters; config: {cfg.to_json_string()}", file=sys.stderr)
model.save_pretrained(out, safe_serialization=True)
PY
  mv "$DIR/hf.tmp" "$DIR/hf"
fi
echo "make_moe_gguf: converting with $LLAMA_CPP_SRC/convert_hf_to_gguf.py --outtype $OUTTYPE" >&2
PYTHONHASHSEED=0 "$PYTHON" scripts/reference/convert_hf_to_gguf_tiny.py "$LLAMA_CPP_SRC/convert_hf_to_gguf.py" \
  "$DIR/hf" --outtype "$OUTTYPE" --outfile "$GGUF.tmp" >"$DIR/convert.log" 2>&1 || {
  tail -n 30 "$DIR/convert.log" >&2
  exit 1
}
grep -iE 'pre-tokenizer|tokenizer.ggml.pre|convert_hf_to_gguf_tiny' "$DIR/convert.log" >&2 || true
mv "$GGUF.tmp" "$GGUF"
echo "$GGUF"
