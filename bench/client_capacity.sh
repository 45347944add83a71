#!/usr/bin/env bash
# Client capacity: how fast pagoda-bench can send on schedule, side by side with a reference
# Python asyncio+aiohttp client (bench/reference_client.py: vllm bench serve's approach), against
# the same pagoda-server --mock on this machine. For each open-loop rate (Poisson, 10 s of
# requests, 16-token streamed completions) both clients report achieved vs scheduled rate and
# send lag; a rate is *sustained* when achieved >= 99% of scheduled and p99 send lag < 1 ms.
# Then pagoda-bench's memory at 2,000 concurrent streams (peak RSS from /usr/bin/time -v).
#
#   bench/client_capacity.sh [--rates "5 10 20 50 100 200 400 800 1600"] [--seconds 10]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
RATES="5 10 20 50 100 200 400 800 1600"
SECONDS_PER_RATE=10
while [ $# -gt 0 ]; do
  case "$1" in
    --rates) RATES=$2; shift 2 ;;
    --seconds) SECONDS_PER_RATE=$2; shift 2 ;;
    *) echo "unknown flag $1" >&2; exit 2 ;;
  esac
done
python3 -c "import aiohttp" 2>/dev/null || python3 -m pip install --quiet aiohttp==3.14.5
MODEL=$(scripts/fetch-default-model.sh)
cargo build --release -q -p pagoda-server -p pagoda-bench --bins
OUT="bench/results/client_capacity-$(date -u +%Y-%m-%d).jsonl"
TMP=$(mktemp -d)
PORT=18641
./target/release/pagoda-server --mock --mock-tpot-ms 10 --port $PORT --host 127.0.0.1 \
  --max-num-seqs 4096 --max-waiting-requests 1000000 --kv-cache-memory 64GiB \
  --disable-log-requests 2>/dev/null &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; rm -rf "$TMP"' EXIT
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && break; sleep 0.1; done
pagoda_line() {
  python3 - "$1" "$2" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); s = r["pagoda"]["summary"]; i = s["integrity"]
lag = i.get("client_lag") or {}
print(json.dumps({"client": "pagoda-bench", "target_rate": float(sys.argv[2]),
  "scheduled_rate": i.get("scheduled_rate"), "achieved_rate": i.get("achieved_rate"),
  "p50_send_lag_ms": lag.get("p50_ms"), "p99_send_lag_ms": lag.get("p99_ms"), "max_send_lag_ms": lag.get("max_ms"),
  "completed": r["completed"], "failed": r.get("failed"), "chunks_per_s": r["output_throughput"],
  "fell_behind": i["fell_behind"], "reasons": i["reasons"]}))
PY
}
{
  echo "{\"date\": \"$(date -u +%Y-%m-%dT%H:%M:%SZ)\", \"commit\": \"$(git rev-parse --short HEAD)\", \"cpus\": $(nproc), \"cpu\": \"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)\", \"seconds_per_rate\": $SECONDS_PER_RATE}"
  for rate in $RATES; do
    n=$((rate * SECONDS_PER_RATE))
    ./target/release/pagoda-bench serve --base-url "http://127.0.0.1:$PORT" --model mock \
      --tokenizer "$MODEL" --endpoint /v1/completions --random-input-len 16 --random-output-len 16 \
      --num-prompts $n --request-rate "$rate" --seed 1 --disable-progress --save-result \
      --result-dir "$TMP" --result-filename "p$rate.json" >/dev/null 2>&1
    pagoda_line "$TMP/p$rate.json" "$rate"
    python3 bench/reference_client.py --url "http://127.0.0.1:$PORT" --rate "$rate" \
      --num-requests $n --max-tokens 16 --seed 1
  done
  /usr/bin/time -v ./target/release/pagoda-bench serve --base-url "http://127.0.0.1:$PORT" \
    --model mock --tokenizer "$MODEL" --endpoint /v1/completions --random-input-len 16 \
    --random-output-len 300 --num-prompts 2000 --request-rate inf --max-concurrency 2000 \
    --disable-progress --save-result --result-dir "$TMP" --result-filename mem.json \
    >/dev/null 2>"$TMP/time.txt"
  python3 - "$TMP/mem.json" "$TMP/time.txt" <<'PY'
import json, re, sys
r = json.load(open(sys.argv[1])); t = open(sys.argv[2]).read()
rss_kib = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", t).group(1))
print(json.dumps({"client": "pagoda-bench", "streams": 2000, "completed": r["completed"],
  "max_concurrent_requests": r["max_concurrent_requests"], "peak_rss_mib": rss_kib / 1024,
  "chunks_per_s": r["output_throughput"]}))
PY
} | tee -a "$OUT"
