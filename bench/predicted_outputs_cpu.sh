#!/usr/bin/env bash
# What OpenAI's Predicted Outputs (`prediction`) add to prompt lookup on the default model (CPU):
# the copy workload of bench/spec_decode_cpu.sh (chat requests that repeat, quote or lightly
# edit a ~500-token passage), greedy, 128 output tokens, one request at a time, three ways side
# by side in each round: a server without speculation, one with prompt lookup, and the same one
# with each request's `prediction` set to the passage it quotes (what an editor sends). Writes
# each request's line (bench/predicted_outputs_client.py), the servers' logs and a summary
# (median TPOT, tokens, acceptance, identical texts) under
# bench/results/predicted_outputs_cpu/DATE/.
#
#   bench/predicted_outputs_cpu.sh [--rounds 2] [--num-prompts 8] [--k 5]
#                                  [--bin-dir target/release] [--no-build]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
. bench/common.sh
ROUNDS=2 NUM_PROMPTS=8 K=5 BIN_DIR=target/release BUILD=1
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) ROUNDS=$2; shift 2 ;;
    --num-prompts) NUM_PROMPTS=$2; shift 2 ;;
    --k) K=$2; shift 2 ;;
    --bin-dir) BIN_DIR=$2; shift 2 ;;
    --no-build) BUILD=0; shift ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
MODEL=$(scripts/fetch-default-model.sh)
[ "$BUILD" = 1 ] && cargo build --release --locked -q -p pagoda-server
OUT="bench/results/predicted_outputs_cpu/$(date -u +%Y-%m-%d)"
mkdir -p "$OUT"
SPEC="{\"method\": \"ngram\", \"num_speculative_tokens\": $K, \"prompt_lookup_min\": 2, \"prompt_lookup_max\": 5}"
python3 bench/spec_decode_workload.py "$OUT/copy.jsonl" --num-prompts "$NUM_PROMPTS"
PORT_OFF=$(free_port)
PORT_NGRAM=$(free_port)
"$BIN_DIR/pagoda-server" --model "$MODEL" --port "$PORT_OFF" --host 127.0.0.1 \
  --disable-log-requests >"$OUT/server-off.log" 2>&1 &
OFF=$!
"$BIN_DIR/pagoda-server" --model "$MODEL" --port "$PORT_NGRAM" --host 127.0.0.1 \
  --disable-log-requests --speculative-config "$SPEC" >"$OUT/server-ngram.log" 2>&1 &
NGRAM=$!
trap 'stop_pid $OFF; stop_pid $NGRAM' EXIT
wait_healthy "http://127.0.0.1:$PORT_OFF/health" $OFF "$OUT/server-off.log" 120
wait_healthy "http://127.0.0.1:$PORT_NGRAM/health" $NGRAM "$OUT/server-ngram.log" 120
CLIENT="python3 bench/predicted_outputs_client.py"
for round in $(seq "$ROUNDS"); do
  $CLIENT "http://127.0.0.1:$PORT_OFF" "$OUT/copy.jsonl" >"$OUT/off-$round.jsonl"
  $CLIENT "http://127.0.0.1:$PORT_NGRAM" "$OUT/copy.jsonl" >"$OUT/lookup-$round.jsonl"
  $CLIENT "http://127.0.0.1:$PORT_NGRAM" "$OUT/copy.jsonl" --predict >"$OUT/predicted-$round.jsonl"
done
python3 - "$OUT" "$ROUNDS" <<'PY' | tee "$OUT/summary.md"
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def load(mode, r):
    return [json.loads(l) for l in open(f"{out}/{mode}-{r}.jsonl")]
modes = ["off", "lookup", "predicted"]
runs = {m: [load(m, r) for r in range(1, rounds + 1)] for m in modes}
def median_tpot(m):  # median over rounds of the round's median TPOT
    return statistics.median(statistics.median(x["tpot_ms"] for x in run if x["tpot_ms"]) for run in runs[m])
off = median_tpot("off")
print("| mode | TPOT ms (median) | TPOT off ÷ mode | tokens | accepted | rejected | acceptance | texts as without speculation |")
print("|---|---|---|---|---|---|---|---|")
for m in modes:
    flat = [x for run in runs[m] for x in run]
    same = sum(a["text"] == b["text"] for ra, rb in zip(runs["off"], runs[m]) for a, b in zip(ra, rb))
    accepted = sum(x["accepted"] or 0 for x in flat)
    rejected = sum(x["rejected"] or 0 for x in flat)
    rate = f"{100 * accepted / (accepted + rejected):.1f} %" if accepted + rejected else "—"
    tpot = median_tpot(m)
    print(f"| {m} | {tpot:.1f} | {off / tpot:.2f}× | {sum(x['completion_tokens'] for x in flat)} "
          f"| {accepted} | {rejected} | {rate} | {same}/{len(flat)} |")
PY
