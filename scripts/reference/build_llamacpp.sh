#!/usr/bin/env bash
# Builds the llama.cpp used for the reference fixtures (engine/tests/fixtures/families): the
# llama.cpp vendored in llama-cpp-python 0.3.36's source package on PyPI, into a separate build
# directory `build-ref` next to bench/build_llama_server.sh's `build` (same cache, same source),
# then compiles scripts/reference/llamacpp_logits.cpp against the resulting libllama. Prints the
# build directory on stdout; progress goes to stderr. Idempotent: steps whose outputs exist are
# skipped (delete "$BUILD" to rebuild from scratch).
#
#   scripts/reference/build_llamacpp.sh     # -> ~/.cache/pagoda/llama.cpp/llama_cpp_python-0.3.36/vendor/llama.cpp/build-ref
#
# Outputs (under $BUILD/bin): libllama.so, libggml*.so, llama-perplexity, llama-server,
# llamacpp_logits (the logits dumper the fixture script runs).
#
# Flags: Release, CPU only, and a *fixed*, portable instruction set rather than -DGGML_NATIVE=ON:
# AVX/AVX2/FMA/F16C on, AVX512 and AMX off. On the Xeon this was first run on, llama.cpp's AMX
# kernels (which GGML_NATIVE enables there) die with SIGILL, and a fixed set also makes the logits
# independent of the machine's extensions (within float rounding of the same kernels).
#
# Environment (defaults in brackets):
#   LLAMA_CPP_PYTHON_VERSION [0.3.36]
#   LLAMA_CPP_CACHE [${XDG_CACHE_HOME:-~/.cache}/pagoda/llama.cpp]
#   LLAMA_BUILD_JOBS [nproc]
#   CMAKE [cmake on PATH, else /work/refenv/bin/cmake]: cmake >= 3.14 (pip install cmake works)
set -euo pipefail
VERSION=${LLAMA_CPP_PYTHON_VERSION:-0.3.36}
CACHE=${LLAMA_CPP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pagoda/llama.cpp}
JOBS=${LLAMA_BUILD_JOBS:-$(nproc)}
SRC="$CACHE/llama_cpp_python-$VERSION/vendor/llama.cpp"
BUILD="$SRC/build-ref"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CMAKE=${CMAKE:-$(command -v cmake || echo /work/refenv/bin/cmake)}
[ -x "$CMAKE" ] || { echo "build_llamacpp: cmake not found (pip install cmake, or set CMAKE=)" >&2; exit 2; }
command -v c++ >/dev/null || { echo "build_llamacpp: c++ not found" >&2; exit 2; }

mkdir -p "$CACHE"
ARCHIVE="$CACHE/llama_cpp_python-$VERSION.tar.gz"
if [ ! -s "$ARCHIVE" ]; then
  echo "build_llamacpp: downloading llama-cpp-python $VERSION's source package into $CACHE" >&2
  python3 -m pip download --quiet --disable-pip-version-check --no-deps \
    --no-binary llama-cpp-python "llama-cpp-python==$VERSION" -d "$CACHE" >&2
fi
if [ ! -f "$SRC/CMakeLists.txt" ]; then
  echo "build_llamacpp: unpacking $ARCHIVE" >&2
  tar -xzf "$ARCHIVE" -C "$CACHE"
fi

if [ ! -x "$BUILD/bin/llama-server" ] || [ ! -x "$BUILD/bin/llama-perplexity" ]; then
  echo "build_llamacpp: configuring $BUILD" >&2
  "$CMAKE" -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON \
    -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
    -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF \
    -DGGML_AVX_VNNI=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF \
    -DGGML_CUDA=OFF -DGGML_VULKAN=OFF -DGGML_METAL=OFF -DGGML_BLAS=OFF \
    -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
    >"$CACHE/build-ref-configure.log" 2>&1 ||
    { tail -n 30 "$CACHE/build-ref-configure.log" >&2; exit 1; }
  echo "build_llamacpp: building llama, llama-perplexity, llama-server with $JOBS jobs (~25 min on 2 cores; log: $CACHE/build-ref-build.log)" >&2
  "$CMAKE" --build "$BUILD" --config Release --target llama llama-perplexity llama-server -j"$JOBS" \
    >"$CACHE/build-ref-build.log" 2>&1 || { tail -n 30 "$CACHE/build-ref-build.log" >&2; exit 1; }
fi

TOOL="$BUILD/bin/llamacpp_logits"
if [ ! -x "$TOOL" ] || [ "$HERE/llamacpp_logits.cpp" -nt "$TOOL" ]; then
  echo "build_llamacpp: compiling $TOOL" >&2
  c++ -O2 -std=c++17 -o "$TOOL" "$HERE/llamacpp_logits.cpp" \
    -I"$SRC/include" -I"$SRC/ggml/include" -L"$BUILD/bin" -lllama -lggml -lggml-base \
    -Wl,-rpath,"$BUILD/bin"
fi
echo "$BUILD"
