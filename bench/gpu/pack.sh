#!/usr/bin/env bash
# Builds the GPU benchmark kit's binaries HERE, on the CPU build machine (no GPU needed), and packs
# them for bench/gpu/run.sh on the GPU machine, which has no Rust:
#   pagoda-server        release, --features cuda
#   pagoda-bench         release, CPU build (the client needs no GPU)
#   gpu_decode_bench     engine example, release, --features cuda
#   gpu_tests_<target>   the CUDA test executables of
#                        `cargo test --release --features cuda -p pagoda-engine --test gpu --no-run`
# Each is stripped of debug info (symbols stay, so backtraces keep function names) and gzipped
# into .gpu-carry/bin/ (gitignored); the total must stay under --max-mib (default 60; the device's
# carry limit is 64 MiB). Also writes .gpu-carry/REVISION (first line: the commit, "-dirty" with
# uncommitted changes; the GPU machine has no .git) and .gpu-carry/MANIFEST (sizes and sha256).
# The CUDA toolchain comes from scripts/setup-cuda-toolchain.sh (downloaded on first use).
#
#   bench/gpu/pack.sh [--carry-dir .gpu-carry] [--max-mib 60]
#   bench/gpu/pack.sh --from DIR [--carry-dir DIR]   # no build: pack the files of DIR named as
#                                                     # above (tests/tests/gpu_bench_kit.rs)
#
# Then give the device command `carry: [".gpu-carry"]` and run `bench/gpu/run.sh` there.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"

# What bench/gpu/run.sh expects in $CARRY/bin (each gzipped), besides the gpu_tests* executables.
BINARIES=(pagoda-server pagoda-bench gpu_decode_bench)
TEST_PREFIX=gpu_tests
# The engine's CUDA integration tests (engine/tests/<name>.rs), one executable each.
GPU_TEST_TARGETS=(gpu)

CARRY=.gpu-carry
MAX_MIB=60
FROM=
while [ $# -gt 0 ]; do
  case "$1" in
    --carry-dir) CARRY=$2; shift 2 ;;
    --max-mib) MAX_MIB=$2; shift 2 ;;
    --from) FROM=$2; shift 2 ;;
    *) echo "unknown flag $1" >&2; exit 2 ;;
  esac
done
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT

if [ -z "$FROM" ]; then
  ENV_SH=$(scripts/setup-cuda-toolchain.sh | tail -n 1)
  # shellcheck disable=SC1090
  source "$ENV_SH"
  cargo build --release --features cuda -p pagoda-server --bin pagoda-server
  cargo build --release -p pagoda-bench --bin pagoda-bench
  cargo build --release --features cuda -p pagoda-engine --example gpu_decode_bench
  cp target/release/pagoda-server target/release/pagoda-bench \
    target/release/examples/gpu_decode_bench "$STAGE/"
  test_args=()
  for target in "${GPU_TEST_TARGETS[@]}"; do test_args+=(--test "$target"); done
  cargo test --release --features cuda -p pagoda-engine "${test_args[@]}" --no-run \
    --message-format=json >"$STAGE/cargo-tests.json"
  # "<target> <executable>" for every test executable cargo built.
  python3 - "$STAGE/cargo-tests.json" >"$STAGE/tests.txt" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    try:
        message = json.loads(line)
    except ValueError:
        continue
    if (message.get("reason") == "compiler-artifact" and message.get("executable")
            and message.get("profile", {}).get("test") and "test" in message["target"]["kind"]):
        print(message["target"]["name"], message["executable"])
PY
  while read -r target executable; do
    cp "$executable" "$STAGE/${TEST_PREFIX}_$target"
  done <"$STAGE/tests.txt"
  rm "$STAGE/cargo-tests.json" "$STAGE/tests.txt"
else
  cp -L "$FROM"/* "$STAGE/"
fi

for name in "${BINARIES[@]}"; do
  [ -f "$STAGE/$name" ] || { echo "pack.sh: $name was not built (or is not in ${FROM:-target/release})" >&2; exit 1; }
done
shopt -s nullglob
tests=("$STAGE/$TEST_PREFIX"*)
shopt -u nullglob
[ ${#tests[@]} -gt 0 ] || { echo "pack.sh: no $TEST_PREFIX* test executable" >&2; exit 1; }

rm -rf "${CARRY:?}/bin"
mkdir -p "$CARRY/bin"
: >"$CARRY/MANIFEST"
for file in "${BINARIES[@]/#/$STAGE/}" "${tests[@]}"; do
  name=$(basename "$file")
  # ELF files lose their debug info; anything else (a test's stand-in script) is packed as it is.
  strip --strip-debug "$file" 2>/dev/null || true
  gzip -c "$file" >"$CARRY/bin/$name.gz"
  printf '%s\t%s bytes\t%s bytes gzipped\tsha256 %s\n' "$name" "$(stat -c %s "$file")" \
    "$(stat -c %s "$CARRY/bin/$name.gz")" "$(sha256sum "$file" | cut -d' ' -f1)" >>"$CARRY/MANIFEST"
done
{
  revision=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
  [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] && revision="$revision-dirty"
  echo "$revision"
  echo "built_utc: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "built_on: $(uname -srm), $(rustc --version 2>/dev/null || echo 'no rustc')"
  echo "source: ${FROM:-cargo build --release (--features cuda)}"
} >"$CARRY/REVISION"

total=$(du -cb "$CARRY"/bin/*.gz | tail -n 1 | cut -f1)
cat "$CARRY/MANIFEST"
echo "total: $total bytes ($((total / 1048576)) MiB; limit $MAX_MIB MiB), revision $(head -n 1 "$CARRY/REVISION")"
if [ "$total" -gt $((MAX_MIB * 1048576)) ]; then
  echo "pack.sh: $CARRY/bin is over $MAX_MIB MiB" >&2
  exit 1
fi
echo "carry: [\"$CARRY\"]   then run: bench/gpu/run.sh [--quick]"
