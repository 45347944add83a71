#!/usr/bin/env bash
# Which of the project's source files one request runs through: the server runs under valgrind's
# callgrind with instrumentation off; once it is up, one idle window and then one request are
# each recorded (callgrind_control), and every source file with executed instructions in the
# request's window (its own code or code inlined from it, by the line tables) is listed —
# minus the files that also run while idle (the watchdog's ticks and the like), listed apart.
# Files are counted per crate as the newcomer issues count them (server/src, server/text,
# engine); tests are not built into the binary, so none are counted.
#
#   scripts/request-path-files.sh [--binary target/release/pagoda-server] [--endpoint chat|completions]
#                                 [--no-stream] [--max-tokens 8] [--json OUT.json]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
. bench/common.sh
BINARY=target/release/pagoda-server
ENDPOINT=chat
STREAM=true
MAX_TOKENS=8
JSON_OUT=""
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) BINARY=$2; shift 2 ;;
    --endpoint) ENDPOINT=$2; shift 2 ;;
    --no-stream) STREAM=false; shift ;;
    --max-tokens) MAX_TOKENS=$2; shift 2 ;;
    --json) JSON_OUT=$2; shift 2 ;;
    *) echo "unknown flag $1" >&2; exit 2 ;;
  esac
done
command -v valgrind >/dev/null || { echo "needs valgrind (apt-get install valgrind)" >&2; exit 2; }
MODEL=$(scripts/fetch-default-model.sh)
TMP=$(mktemp -d)
PORT=${PORT:-$(free_port)}
valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$TMP/cg.out" \
  "$BINARY" --model "$MODEL" --port "$PORT" --host 127.0.0.1 --max-model-len 1024 \
  --max-num-seqs 4 --disable-log-requests >"$TMP/server.log" 2>&1 &
SERVER=$!
trap 'rc=$?; stop_pid $SERVER; rm -rf "$TMP"; exit $rc' EXIT
# Start-up under valgrind is slow (the model loads at a tenth of its speed).
wait_healthy "http://127.0.0.1:$PORT/health" $SERVER "$TMP/server.log" 900
case "$ENDPOINT" in
  chat) URL=/v1/chat/completions
        BODY="{\"messages\":[{\"role\":\"user\",\"content\":\"Name a colour.\"}],\"max_tokens\":$MAX_TOKENS,\"stream\":$STREAM}" ;;
  completions) URL=/v1/completions
        BODY="{\"prompt\":\"Name a colour:\",\"max_tokens\":$MAX_TOKENS,\"stream\":$STREAM}" ;;
  *) echo "unknown endpoint $ENDPOINT" >&2; exit 2 ;;
esac
# A first request warms what runs once (lazy statics, first-use allocations): not counted.
curl -sf "http://127.0.0.1:$PORT$URL" -H 'Content-Type: application/json' -d "$BODY" >/dev/null
record() {  # record NAME COMMAND...: instrumentation on while COMMAND runs, then a dump
  local name=$1; shift
  callgrind_control -i on $SERVER >/dev/null
  local started=$(date +%s.%N)
  "$@"
  callgrind_control -d "$name" $SERVER >/dev/null
  callgrind_control -i off $SERVER >/dev/null
  python3 -c "import sys; print(float(sys.argv[2]) - float(sys.argv[1]))" "$started" "$(date +%s.%N)"
}
request() { curl -sf "http://127.0.0.1:$PORT$URL" -H 'Content-Type: application/json' -d "$BODY" >"$TMP/reply"; }
REQUEST_S=$(record request request)
IDLE_S=$(python3 -c "print(max(2.0, 1.5 * $REQUEST_S))")
record idle sleep "$IDLE_S" >/dev/null
stop_pid $SERVER 120
python3 - "$TMP" "$ROOT" "$BINARY" "$ENDPOINT" "$STREAM" "$JSON_OUT" <<'PY'
import glob, json, os, re, subprocess, sys
tmp, root, binary, endpoint, stream, json_out = sys.argv[1:]
def files_with_cost(path):
    """Source files with executed instructions in one callgrind dump (own and inlined code)."""
    names, files, current = {}, set(), None
    ref = re.compile(r"^(fl|fi|fe|cfi|cfl)=\((\d+)\)(?: (.*))?$")
    for line in open(path, errors="replace"):
        line = line.rstrip("\n")
        m = ref.match(line)
        if m:
            if m.group(3) is not None:
                names[m.group(2)] = m.group(3)
            if m.group(1) in ("fl", "fi", "fe"):
                current = names.get(m.group(2))
            continue
        if current is None or not line or not (line[0].isdigit() or line[0] in "+-*"):
            continue
        costs = line.split()[1:]
        if any(c != "0" for c in costs):
            files.add(current)
    return files
def dumps():
    """The dumps in the order they were taken: the request's, then the idle window's."""
    found = [p for p in glob.glob(os.path.join(tmp, "cg.out.*")) if p.rsplit(".", 1)[1].isdigit()]
    return sorted(found, key=lambda p: int(p.rsplit(".", 1)[1]))
def project(files):
    """The project's own source files among `files`, relative to the checkout they were built
    from (the build directory may be shared by several checkouts)."""
    own = re.compile(r"^/.*?/((?:engine|server|bench-client|tests)/.*\.rs)$")
    out = set()
    for f in files:
        if "/.cargo/" in f or f.startswith("/rustc/"):
            continue
        m = own.match(f) if os.path.isabs(f) else re.match(r"^((?:engine|server|bench-client|tests)/.*\.rs)$", f)
        if m:
            out.add(m.group(1))
    return out
taken = dumps()
if len(taken) < 2:
    sys.exit(f"expected two callgrind dumps in {tmp}, found {taken}")
request, idle = project(files_with_cost(taken[0])), project(files_with_cost(taken[1]))
path = sorted(request - idle)
def crate(f):
    for prefix in ("server/src/", "server/text/", "server/structured/", "engine/cuda-kernels/", "engine/"):
        if f.startswith(prefix):
            return prefix.rstrip("/")
    return f.split("/")[0]
by_crate = {}
for f in path:
    by_crate[crate(f)] = by_crate.get(crate(f), 0) + 1
commit = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
result = {"endpoint": endpoint, "stream": stream == "true", "binary": binary, "commit": commit,
          "num_files": len(path), "by_crate": by_crate, "files": path,
          "also_while_idle": sorted(request & idle)}
print(json.dumps({k: v for k, v in result.items() if k != "files"}, indent=1))
for f in path:
    print(f)
if json_out:
    json.dump(result, open(json_out, "w"), indent=1)
PY
