#!/bin/sh
# One client of a distributed pagoda-bench run: the script of every pod of the indexed Job in
# bench-job.yaml (mounted from the ConfigMap that bench/kustomization.yaml generates from this
# file), and runnable as it is on any host, the way tests/tests/deploy_kubernetes/run.rs runs it.
#
# Pod i (JOB_COMPLETION_INDEX) sends its share of the load with --client-id i and a distinct
# seed, saves its detailed records as part-i.json in the shared results directory, and exits.
# Pod 0 then waits for every part and merges them into merged.json. All pods wait for each other
# before sending (ready-i files), so the clients' runs overlap as `merge` expects.
#
# Settings (environment; defaults in brackets):
#   JOB_COMPLETION_INDEX      this pod's index, 0 ≤ i < BENCH_NUM_PODS (set by Kubernetes)
#   BENCH_NUM_PODS            number of client pods: the Job's completions [4]
#   BENCH_BASE_URL            the server [http://pagoda-server:8000]
#   BENCH_TOTAL_RATE          requests/s over all pods, or inf [20]
#   BENCH_NUM_PROMPTS         requests over all pods [1000]
#   BENCH_MAX_CONCURRENCY     in-flight limit over all pods [none]
#   BENCH_WORKLOAD_ARGS       workload flags of `pagoda-bench serve`, split on spaces
#                             [--dataset-name random --random-input-len 512 --random-output-len 128]
#   BENCH_SEED                base seed; pod i uses BENCH_SEED + i [0]
#   BENCH_TOKENIZER           --tokenizer (the served model's file) [pagoda-bench's default]
#   BENCH_PERCENTILES         --metric-percentiles, for every part and the merge [50,90,99]
#   BENCH_PERCENTILE_METRICS  --percentile-metrics [ttft,tpot,itl,e2el]
#   BENCH_RESULTS_DIR         the shared directory [/results]
#   BENCH_RUN_ID              this run's subdirectory of it; must be new for every run [run]
#   BENCH_START_TIMEOUT       seconds to wait for every pod to be ready [600]
#   BENCH_MERGE_TIMEOUT       seconds pod 0 waits for the other parts after its own run [600]
#   BENCH_POLL_SECONDS        seconds between looks at the shared directory [1]
#   PAGODA_BENCH              the pagoda-bench binary [pagoda-bench, from PATH]
#   OPENAI_API_KEY            read by pagoda-bench when the server requires a key
# Needs only a POSIX sh, awk, date, mkdir, mv, sleep and touch.
# shellcheck disable=SC2015 # `check && check || die` dies when either check fails, as meant
set -eu

INDEX="${JOB_COMPLETION_INDEX:?JOB_COMPLETION_INDEX is not set (the pod index of an Indexed Job)}"
NUM_PODS="${BENCH_NUM_PODS:-4}"
BASE_URL="${BENCH_BASE_URL:-http://pagoda-server:8000}"
TOTAL_RATE="${BENCH_TOTAL_RATE:-20}"
NUM_PROMPTS="${BENCH_NUM_PROMPTS:-1000}"
MAX_CONCURRENCY="${BENCH_MAX_CONCURRENCY:-}"
WORKLOAD_ARGS="${BENCH_WORKLOAD_ARGS:---dataset-name random --random-input-len 512 --random-output-len 128}"
SEED="${BENCH_SEED:-0}"
TOKENIZER="${BENCH_TOKENIZER:-}"
PERCENTILES="${BENCH_PERCENTILES:-50,90,99}"
PERCENTILE_METRICS="${BENCH_PERCENTILE_METRICS:-ttft,tpot,itl,e2el}"
RUN_DIR="${BENCH_RESULTS_DIR:-/results}/${BENCH_RUN_ID:-run}"
START_TIMEOUT="${BENCH_START_TIMEOUT:-600}"
MERGE_TIMEOUT="${BENCH_MERGE_TIMEOUT:-600}"
POLL="${BENCH_POLL_SECONDS:-1}"
BENCH="${PAGODA_BENCH:-pagoda-bench}"

log() { echo "run-bench[$INDEX]: $*" >&2; }
die() { log "$*"; exit 1; }

is_count() { case "$1" in '' | *[!0-9]*) return 1 ;; *) return 0 ;; esac; }

# This pod's share of an integer total: the remainder goes to the lowest indices.
share() { echo $(($1 / NUM_PODS + (INDEX < $1 % NUM_PODS ? 1 : 0))); }

# The indices i (space-separated) for which $RUN_DIR/<$1>i<$2> does not exist yet.
missing() {
  i=0 out=""
  while [ "$i" -lt "$NUM_PODS" ]; do
    [ -e "$RUN_DIR/$1$i$2" ] || out="$out $i"
    i=$((i + 1))
  done
  echo "$out"
}

# Whether a pod left a failure marker.
any_failed() {
  for marker in "$RUN_DIR"/failed-*; do
    [ -e "$marker" ] && return 0
  done
  return 1
}

# await WHAT PREFIX SUFFIX TIMEOUT: waits until every pod's file exists; fails when a pod failed
# or at the deadline.
await() {
  deadline=$(($(date +%s) + $4))
  while :; do
    left=$(missing "$2" "$3")
    [ -z "$left" ] && return 0
    if any_failed; then die "a pod failed (see the failed-* files in $RUN_DIR)"; fi
    [ "$(date +%s)" -lt "$deadline" ] || die "no $1 from pod(s)$left after $4 s"
    sleep "$POLL"
  done
}

is_count "$NUM_PODS" && [ "$NUM_PODS" -ge 1 ] || die "BENCH_NUM_PODS must be a count ≥ 1"
is_count "$INDEX" && [ "$INDEX" -lt "$NUM_PODS" ] || die "index $INDEX is not below $NUM_PODS"
is_count "$NUM_PROMPTS" && [ "$NUM_PROMPTS" -ge "$NUM_PODS" ] ||
  die "BENCH_NUM_PROMPTS ($NUM_PROMPTS) must be at least BENCH_NUM_PODS ($NUM_PODS)"
mkdir -p "$RUN_DIR"
[ ! -e "$RUN_DIR/part-$INDEX.json" ] && [ ! -e "$RUN_DIR/merged.json" ] ||
  die "$RUN_DIR holds an earlier run: set a new BENCH_RUN_ID"

set -- serve --base-url "$BASE_URL" --num-prompts "$(share "$NUM_PROMPTS")" \
  --seed $((SEED + INDEX)) --client-id "$INDEX" --save-detailed --disable-progress \
  --metric-percentiles "$PERCENTILES" --percentile-metrics "$PERCENTILE_METRICS" \
  --result-dir "$RUN_DIR" --result-filename ".part-$INDEX.json.tmp"
if [ "$TOTAL_RATE" = inf ]; then
  set -- "$@" --request-rate inf
else
  set -- "$@" --request-rate "$(awk -v r="$TOTAL_RATE" -v n="$NUM_PODS" 'BEGIN { print r / n }')"
fi
if [ -n "$MAX_CONCURRENCY" ]; then
  is_count "$MAX_CONCURRENCY" && [ "$MAX_CONCURRENCY" -ge "$NUM_PODS" ] ||
    die "BENCH_MAX_CONCURRENCY must be a count ≥ BENCH_NUM_PODS"
  set -- "$@" --max-concurrency "$(share "$MAX_CONCURRENCY")"
fi
if [ -n "$TOKENIZER" ]; then set -- "$@" --tokenizer "$TOKENIZER"; fi

touch "$RUN_DIR/ready-$INDEX"
await "ready-*" ready- "" "$START_TIMEOUT"
log "sending: $BENCH $*"
# shellcheck disable=SC2086 # the workload flags are split on purpose
if ! "$BENCH" "$@" $WORKLOAD_ARGS; then
  touch "$RUN_DIR/failed-$INDEX"
  die "pagoda-bench serve failed"
fi
# Whole files only: the other pods look for part-i.json.
mv "$RUN_DIR/.part-$INDEX.json.tmp" "$RUN_DIR/part-$INDEX.json"
log "saved $RUN_DIR/part-$INDEX.json"
[ "$INDEX" -eq 0 ] || exit 0

await "result" part- .json "$MERGE_TIMEOUT"
set --
i=0
while [ "$i" -lt "$NUM_PODS" ]; do
  set -- "$@" "$RUN_DIR/part-$i.json"
  i=$((i + 1))
done
"$BENCH" merge --metric-percentiles "$PERCENTILES" --percentile-metrics "$PERCENTILE_METRICS" \
  --output "$RUN_DIR/.merged.json.tmp" "$@"
mv "$RUN_DIR/.merged.json.tmp" "$RUN_DIR/merged.json"
log "merged $NUM_PODS parts into $RUN_DIR/merged.json"
