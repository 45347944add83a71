#!/usr/bin/env bash
# Fuzzes a running pagoda-server from its own /openapi.json with schemathesis (PyPI): every
# documented route with generated valid and invalid inputs (coverage, fuzzing and stateful
# phases), checking that nothing answers 5xx, that every answer's status, content type and body
# conform to the document, and that nothing hangs (a request past --request-timeout fails).
# Exits non-zero on any failure; failures are reproducible from the printed curl commands.
#
#   scripts/fuzz-openapi.sh BASE_URL [--api-key KEY] [--max-time SECONDS] [--max-examples N]
#
# Defaults: 120 s, 20 examples per operation per phase. Needs `schemathesis` (python3 -m pip
# install schemathesis==4.32.5; .ci/run installs it). $PAGODA_PYTHON picks the interpreter.
set -euo pipefail
BASE_URL=${1:?usage: scripts/fuzz-openapi.sh BASE_URL [--api-key KEY] [--max-time S] [--max-examples N]}
shift
API_KEY="" MAX_TIME=120 MAX_EXAMPLES=20
while [ $# -gt 0 ]; do
  case $1 in
    --api-key) API_KEY=$2; shift 2 ;;
    --max-time) MAX_TIME=$2; shift 2 ;;
    --max-examples) MAX_EXAMPLES=$2; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
PYTHON=${PAGODA_PYTHON:-python3}
headers=()
[ -n "$API_KEY" ] && headers=(-H "Authorization: Bearer $API_KEY")
exec "$PYTHON" -c 'import sys; from schemathesis.cli import schemathesis; sys.argv[0] = "schemathesis"; sys.exit(schemathesis())' \
  run "$BASE_URL/openapi.json" ${headers[@]+"${headers[@]}"} \
  --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance \
  --max-examples "$MAX_EXAMPLES" --max-time "$MAX_TIME" --request-timeout 30 \
  --generation-deterministic --no-color
