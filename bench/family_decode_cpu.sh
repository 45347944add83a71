#!/usr/bin/env bash
# Dense families pay nothing for the seam: the engine's decode on random-weight Hugging Face
# directories of one shape, one per dense family, as ratios to the same-shape Llama.
#
#   bench/family_decode_cpu.sh                     # 5 rounds: ~20 minutes on the idle 2-core machine
#                                                  # (27 with waits for other jobs), +1 minute to build the models
#   ROUNDS=1 FAMILIES="llama gemma2" bench/family_decode_cpu.sh
#
# 1. With transformers and a fixed seed (PYTHON, below) it writes, once, into
#    BENCH_MODELS/family-<shape>/<family>/, one directory per family of the SAME shape (default
#    SmolLM2-135M's: hidden 576, 30 layers, 9 query heads and 3 KV heads of 64, MLP 1536, vocab
#    49,152, tied embeddings; 135 M parameters): LlamaForCausalLM (the baseline),
#    MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, Gemma2ForCausalLM, Gemma3ForCausalLM,
#    Phi3ForCausalLM, GraniteForCausalLM, each with its own features on: Mistral a sliding window
#    (SLIDING, 128 tokens, shorter than the 129..256-token decode contexts), Qwen2 q/k/v biases,
#    Qwen3 q/k RMS norms, Gemma 2 GeGLU (gelu-tanh), four (1 + w) norms a layer, embeddings x
#    sqrt(hidden), query_pre_attn_scalar, attention softcap 50 and final softcap 30, sliding window on
#    every other layer; Gemma 3 the same plus q/k norms, five sliding layers to one global, its two
#    RoPE bases, no softcaps (its defaults); Phi-3 fused qkv_proj and gate_up_proj (sliding_window
#    2047 as Phi-3-mini-4k); Granite its four multipliers (granite-3.x-2b's values). Weights:
#    transformers' default init, then every tensor that is not a norm weight re-drawn N(0, 0.02)
#    from one torch.Generator (SEED) in named_parameters() order; stored in bf16. The tokenizer is
#    the default model's (AutoTokenizer.from_pretrained(models/, gguf_file=...)).
# 2. Times the engine in-process with engine/examples/offline_bench.rs (random 128-token prompts,
#    128 generated tokens, greedy, ignore_eos; closed loops of 1 and 8 sequences, REQUESTS
#    requests per sequence; one warm-up request), --weight-format WEIGHT_FORMAT, one process per
#    family and round; the families are interleaved, in an order rotated each round, so that the
#    machine's noise falls on all of them.
# 3. Prints the table (bench/family_decode_table.py): per family the median over rounds of c=1
#    TPOT, c=8 TPOT and c=8 output tok/s, and the median over rounds of each round's ratio to that
#    round's Llama (the issue's target: every family within 10% of Llama). Runs during which other
#    processes kept more than 0.2 CPUs busy are left out, and the table lists them
#    (`python3 bench/family_decode_table.py OUT --max-other-cpus X` to redo it with another limit).
#
# Environment (defaults in brackets):
#   ROUNDS [5]  REQUESTS [2]  CONCURRENCY [1,8]  WEIGHT_FORMAT [int8]  SEED [0]
#   FAMILIES [llama mistral qwen2 qwen3 gemma2 gemma3 phi3 granite]
#   HIDDEN [576] LAYERS [30] HEADS [9] KV_HEADS [3] HEAD_DIM [64] INTERMEDIATE [1536] SLIDING [128]
#   PYTHON [/work/refenv/bin/python]  BENCH_MODELS [~/.cache/pagoda/bench-models]
#   OFFLINE_BENCH [built here: cargo build --release -p pagoda-engine --example offline_bench]
#   OUT [bench/results/family_decode_cpu/<UTC date>]: runs.jsonl (every offline_bench line, tagged),
#     meta.json, table.md, logs/
#   MAX_OTHER_CPUS [0.5]: before each run, measure for 5 s how many CPUs other processes keep busy
#     (/proc/stat; none of this script's runs is going then) and wait 60 s at a time, at most
#     LOAD_WAIT_S [600] s over the whole script, while it is above this; that figure and the
#     1-minute load average at each start (and the load at each end) are recorded
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
COMMAND="bench/family_decode_cpu.sh"
for var in ROUNDS REQUESTS CONCURRENCY WEIGHT_FORMAT SEED FAMILIES HIDDEN LAYERS HEADS KV_HEADS HEAD_DIM INTERMEDIATE SLIDING THREADS; do
  if [ -n "${!var:-}" ]; then COMMAND="$var=\"${!var}\" $COMMAND"; fi
done
PYTHON=${PYTHON:-/work/refenv/bin/python}
BENCH_MODELS=${BENCH_MODELS:-${XDG_CACHE_HOME:-$HOME/.cache}/pagoda/bench-models}
ROUNDS=${ROUNDS:-5} REQUESTS=${REQUESTS:-2} CONCURRENCY=${CONCURRENCY:-1,8}
WEIGHT_FORMAT=${WEIGHT_FORMAT:-int8} SEED=${SEED:-0}
FAMILIES=${FAMILIES:-llama mistral qwen2 qwen3 gemma2 gemma3 phi3 granite}
HIDDEN=${HIDDEN:-576} LAYERS=${LAYERS:-30} HEADS=${HEADS:-9} KV_HEADS=${KV_HEADS:-3}
HEAD_DIM=${HEAD_DIM:-64} INTERMEDIATE=${INTERMEDIATE:-1536} SLIDING=${SLIDING:-128}
MAX_OTHER_CPUS=${MAX_OTHER_CPUS:-0.5} LOAD_WAIT_S=${LOAD_WAIT_S:-600}
SHAPE="h$HIDDEN-l$LAYERS-q$HEADS-kv$KV_HEADS-d$HEAD_DIM-i$INTERMEDIATE-w$SLIDING-s$SEED"
MODELS="$BENCH_MODELS/family-$SHAPE"

# --- 1. the models ---
missing=()
for fam in $FAMILIES; do [ -s "$MODELS/$fam/config.json" ] || missing+=("$fam"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "family_decode_cpu: building ${missing[*]} in $MODELS" >&2
  HIDDEN=$HIDDEN LAYERS=$LAYERS HEADS=$HEADS KV_HEADS=$KV_HEADS HEAD_DIM=$HEAD_DIM \
    INTERMEDIATE=$INTERMEDIATE SLIDING=$SLIDING SEED=$SEED \
    "$PYTHON" - "$(scripts/fetch-default-model.sh)" "$MODELS" "${missing[@]}" <<'PY'
import os, shutil, sys
import torch
import transformers
from transformers import AutoTokenizer

gguf, models, families = sys.argv[1], sys.argv[2], sys.argv[3:]
E = lambda k: int(os.environ[k])
tok = AutoTokenizer.from_pretrained(os.path.dirname(os.path.abspath(gguf)),
                                    gguf_file=os.path.basename(gguf))
L, W = E("LAYERS"), E("SLIDING")
base = dict(vocab_size=len(tok), hidden_size=E("HIDDEN"), intermediate_size=E("INTERMEDIATE"),
            num_hidden_layers=L, num_attention_heads=E("HEADS"),
            num_key_value_heads=E("KV_HEADS"), head_dim=E("HEAD_DIM"),
            max_position_embeddings=8192, rms_norm_eps=1e-5, tie_word_embeddings=True,
            initializer_range=0.02, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
            pad_token_id=tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id,
            rope_parameters=dict(rope_type="default", rope_theta=100000.0))
def without(d, *keys):
    return {k: v for k, v in d.items() if k not in keys}
specs = {
    "llama": ("LlamaConfig", "LlamaForCausalLM", base),
    "mistral": ("MistralConfig", "MistralForCausalLM", dict(base, sliding_window=W)),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", dict(without(base, "head_dim"), use_sliding_window=False)),
    "qwen3": ("Qwen3Config", "Qwen3ForCausalLM", dict(base, use_sliding_window=False)),
    "gemma2": ("Gemma2Config", "Gemma2ForCausalLM", dict(
        base, hidden_activation="gelu_pytorch_tanh", query_pre_attn_scalar=E("HEAD_DIM"),
        attn_logit_softcapping=50.0, final_logit_softcapping=30.0, sliding_window=W,
        layer_types=["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(L)])),
    "gemma3": ("Gemma3TextConfig", "Gemma3ForCausalLM", dict(
        without(base, "rope_parameters"), hidden_activation="gelu_pytorch_tanh",
        query_pre_attn_scalar=E("HEAD_DIM"), sliding_window=W,
        layer_types=["full_attention" if (i + 1) % 6 == 0 else "sliding_attention" for i in range(L)],
        rope_parameters={"sliding_attention": dict(rope_type="default", rope_theta=10000.0),
                         "full_attention": dict(rope_type="default", rope_theta=1000000.0)})),
    "phi3": ("Phi3Config", "Phi3ForCausalLM", dict(
        without(base, "head_dim"), sliding_window=2047, original_max_position_embeddings=8192)),
    "granite": ("GraniteConfig", "GraniteForCausalLM", dict(
        without(base, "head_dim"), embedding_multiplier=12.0, attention_multiplier=0.015625,
        residual_multiplier=0.22, logits_scaling=8.0)),
}
for fam in families:
    cfg_cls, model_cls, kw = specs[fam]
    cfg = getattr(transformers, cfg_cls)(**kw)
    torch.manual_seed(E("SEED"))
    model = getattr(transformers, model_cls)(cfg).to(torch.float32)
    gen = torch.Generator().manual_seed(E("SEED"))
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.ndim == 1 and "norm" in name:
                continue  # the family's neutral norm weight: 1, or 0 for Gemma's (1 + w)
            p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float32) * 0.02)
    out = os.path.join(models, fam)
    tmp = out + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    model.to(torch.bfloat16).save_pretrained(tmp, safe_serialization=True)
    tok.save_pretrained(tmp)
    shutil.rmtree(out, ignore_errors=True)
    os.rename(tmp, out)
    n = sum(p.numel() for p in model.parameters())
    names = [k for k, _ in model.named_parameters() if ".layers.0." in k]
    print(f"family_decode_cpu: {fam}: {model_cls}, {n / 1e6:.1f} M parameters; layer 0: "
          + ", ".join(k.split(".layers.0.")[1] for k in names), file=sys.stderr)
PY
fi

# --- 2. the runs ---
if [ -z "${OFFLINE_BENCH:-}" ]; then
  cargo build --release -q -p pagoda-engine --example offline_bench
  OFFLINE_BENCH=${CARGO_TARGET_DIR:-target}/release/examples/offline_bench
fi
OUT=${OUT:-bench/results/family_decode_cpu/$(date -u +%Y-%m-%d)}
mkdir -p "$OUT/logs"
RUNS="$OUT/runs.jsonl"
: >"$RUNS"
META_COMMAND=$COMMAND META_SHAPE=$SHAPE META_MODELS=$MODELS META_OFFLINE_BENCH=$OFFLINE_BENCH \
  META_DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ) META_COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown) \
  META_CPU=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs) META_CPUS=$(nproc) \
  META_ROUNDS=$ROUNDS META_REQUESTS=$REQUESTS META_CONCURRENCY=$CONCURRENCY \
  META_WEIGHT_FORMAT=$WEIGHT_FORMAT META_FAMILIES=$FAMILIES \
  "$PYTHON" -c 'import json, os, sys
json.dump({k[5:].lower(): v for k, v in sorted(os.environ.items()) if k.startswith("META_")},
          open(sys.argv[1], "w"), indent=1)' "$OUT/meta.json"
# Busy CPU seconds of the whole machine (user, nice, system, irq, softirq, steal) from /proc/stat.
machine_busy_s() { awk -v hz="$(getconf CLK_TCK)" '/^cpu / {print ($2 + $3 + $4 + $7 + $8 + $9) / hz}' /proc/stat; }
# Before a run, while none of ours runs: the CPUs other processes keep busy over QUIET_WINDOW_S
# [5] s (OTHER_CPUS) and the 1-minute load average (LOAD_AT_START). The load average alone cannot
# tell others' work from this script's previous run (2 busy threads a moment ago), so the wait is
# on OTHER_CPUS: while it is above MAX_OTHER_CPUS [0.5], wait 60 s, at most LOAD_WAIT_S in all.
WAITED_S=0
# CPU seconds of this shell's waited-for children so far into CHILD_CPU (`times`, second line; not
# in $(...): a subshell has no children of this shell).
children_cpu_s() {
  times >"$OUT/logs/times.txt"
  CHILD_CPU=$(awk 'NR == 2 {s = 0; for (i = 1; i <= 2; i++) {split($i, t, "m"); s += t[1] * 60 + t[2]}; print s}' "$OUT/logs/times.txt")
}
wait_for_quiet() {
  local b0 b1
  while :; do
    b0=$(machine_busy_s)
    sleep "${QUIET_WINDOW_S:-5}"
    b1=$(machine_busy_s)
    OTHER_CPUS=$(awk -v a="$b0" -v b="$b1" -v w="${QUIET_WINDOW_S:-5}" 'BEGIN {printf "%.2f", (b - a) / w}')
    LOAD_AT_START=$(cut -d' ' -f1 /proc/loadavg)
    if awk -v o="$OTHER_CPUS" -v m="$MAX_OTHER_CPUS" 'BEGIN {exit !(o > m)}' && [ "$WAITED_S" -lt "$LOAD_WAIT_S" ]; then
      echo "   other processes keep $OTHER_CPUS CPUs busy (load $LOAD_AT_START): waiting 60 s" >&2
      sleep 60
      WAITED_S=$((WAITED_S + 60))
    else
      return 0
    fi
  done
}
read -r -a FAMS <<<"$FAMILIES"
N=${#FAMS[@]}
for round in $(seq "$ROUNDS"); do
  for k in $(seq 0 $((N - 1))); do
    fam=${FAMS[$(((k + round - 1) % N))]}
    wait_for_quiet
    echo "== round $round/$ROUNDS: $fam (load $LOAD_AT_START, other CPUs $OTHER_CPUS)" >&2
    start=$(date -u +%Y-%m-%dT%H:%M:%SZ)
    children_cpu_s
    busy0=$(machine_busy_s) child0=$CHILD_CPU t0=$EPOCHREALTIME
    RAYON_NUM_THREADS=${THREADS:-2} "$OFFLINE_BENCH" "$MODELS/$fam" --concurrency "$CONCURRENCY" \
      --rounds "$REQUESTS" --weight-format "$WEIGHT_FORMAT" \
      >"$OUT/logs/$fam-r$round.out" 2>"$OUT/logs/$fam-r$round.err" || {
      echo "   offline_bench failed on $fam: see $OUT/logs/$fam-r$round.err" >&2
      tail -n 5 "$OUT/logs/$fam-r$round.err" >&2
      continue
    }
    load_end=$(cut -d' ' -f1 /proc/loadavg)
    # CPUs other processes kept busy during the run: machine busy time less offline_bench's own.
    children_cpu_s
    other_during=$(awk -v b0="$busy0" -v b1="$(machine_busy_s)" -v c0="$child0" -v c1="$CHILD_CPU" \
      -v t0="$t0" -v t1="$EPOCHREALTIME" 'BEGIN {v = ((b1 - b0) - (c1 - c0)) / (t1 - t0); printf "%.2f", v < 0 ? 0 : v}')
    while read -r line; do
      case "$line" in "{"*)
        echo "{\"family\": \"$fam\", \"round\": $round, \"start\": \"$start\", \"load_start\": $LOAD_AT_START, \"other_cpus_before\": $OTHER_CPUS, \"load_end\": $load_end, \"other_cpus_during\": $other_during, \"run\": $line}" >>"$RUNS" ;;
      esac
    done <"$OUT/logs/$fam-r$round.out"
  done
done
"$PYTHON" bench/family_decode_table.py "$OUT" | tee "$OUT/table.md"
