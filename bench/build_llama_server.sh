#!/usr/bin/env bash
# Builds llama.cpp's `llama-server` (CPU) from the llama-cpp-python source package on PyPI, whose
# vendor/llama.cpp is a pinned llama.cpp, into a cache outside the repository, and prints the
# binary's path on stdout (progress goes to stderr). Does nothing but print the path when the
# binary is already there. The build takes ~25 minutes on 2 cores; it is not part of CI.
#
#   bench/build_llama_server.sh            # -> ~/.cache/pagoda/llama.cpp/llama_cpp_python-0.3.36/vendor/llama.cpp/build/bin/llama-server
#
# Environment (defaults in brackets):
#   LLAMA_CPP_PYTHON_VERSION [0.3.36]: the llama-cpp-python release whose llama.cpp is built
#   LLAMA_CPP_CACHE [${XDG_CACHE_HOME:-~/.cache}/pagoda/llama.cpp]: where the source package is
#     downloaded, unpacked and built
#   LLAMA_BUILD_JOBS [nproc]: parallel compile jobs
# Needs python3 with pip, cmake (>= 3.14) and a C/C++ compiler.
#
# The configuration: Release, this machine's vector extensions named one by one instead of
# -DGGML_NATIVE=ON: AVX2/FMA/F16C always, the AVX-512 family (F, VBMI, VNNI, BF16) and AVX-VNNI when
# /proc/cpuinfo lists them, AMX always off. On the Xeons we bench on, GGML_NATIVE turns on
# llama.cpp's AMX kernels, which die there with SIGILL; everything else the CPU has stays on, so
# llama.cpp keeps its fastest working kernels. Targets: llama-server and llama-perplexity (the
# latter for bench/perplexity_vs_llamacpp.sh) and the libraries they link (tests, examples, the web UI off),
# OpenMP when the compiler has it (llama.cpp's default), shared libraries found by the binary's
# rpath in build/bin. The package is fetched with `--no-binary llama-cpp-python` rather than
# `--no-binary :all:`: the result is the same source archive, but `:all:` would also compile the
# build backend's own dependencies (cmake, ninja) from source just to read the package's metadata.
set -euo pipefail
VERSION=${LLAMA_CPP_PYTHON_VERSION:-0.3.36}
CACHE=${LLAMA_CPP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pagoda/llama.cpp}
JOBS=${LLAMA_BUILD_JOBS:-$(nproc)}
SRC="$CACHE/llama_cpp_python-$VERSION/vendor/llama.cpp"
BUILD="$SRC/build"
BIN="$BUILD/bin/llama-server"
if [ -x "$BIN" ] && [ -x "$BUILD/bin/llama-perplexity" ]; then
  echo "$BIN"
  exit 0
fi
for tool in cmake c++ cc; do
  command -v "$tool" >/dev/null || { echo "build_llama_server: $tool not found (apt-get install cmake g++)" >&2; exit 2; }
done
mkdir -p "$CACHE"
START=$SECONDS
ARCHIVE="$CACHE/llama_cpp_python-$VERSION.tar.gz"
if [ ! -s "$ARCHIVE" ]; then
  echo "build_llama_server: downloading llama-cpp-python $VERSION's source package into $CACHE" >&2
  python3 -m pip download --quiet --disable-pip-version-check --no-deps \
    --no-binary llama-cpp-python "llama-cpp-python==$VERSION" -d "$CACHE" >&2
fi
[ -s "$ARCHIVE" ] || { echo "build_llama_server: $ARCHIVE not downloaded" >&2; exit 1; }
if [ ! -f "$SRC/CMakeLists.txt" ]; then
  echo "build_llama_server: unpacking $ARCHIVE" >&2
  tar -xzf "$ARCHIVE" -C "$CACHE"
fi
has_flag() { grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -qx "$1"; }
on_if() { if has_flag "$2"; then echo "-D$1=ON"; else echo "-D$1=OFF"; fi; }
ISA_FLAGS=(-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
  "$(on_if GGML_AVX512 avx512f)" "$(on_if GGML_AVX512_VBMI avx512vbmi)"
  "$(on_if GGML_AVX512_VNNI avx512_vnni)" "$(on_if GGML_AVX512_BF16 avx512_bf16)"
  "$(on_if GGML_AVX_VNNI avx_vnni)" -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF)
echo "build_llama_server: configuring $SRC (${ISA_FLAGS[*]})" >&2
cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release "${ISA_FLAGS[@]}" \
  -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
  -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF >"$CACHE/cmake-configure.log" 2>&1 ||
  { tail -n 30 "$CACHE/cmake-configure.log" >&2; exit 1; }
echo "build_llama_server: building llama-server with $JOBS jobs (~25 minutes on 2 cores; log: $CACHE/cmake-build.log)" >&2
BUILD_START=$SECONDS
cmake --build "$BUILD" --config Release --target llama-server llama-perplexity -j"$JOBS" >"$CACHE/cmake-build.log" 2>&1 ||
  { tail -n 30 "$CACHE/cmake-build.log" >&2; exit 1; }
[ -x "$BIN" ] || { echo "build_llama_server: the build finished but $BIN is missing" >&2; exit 1; }
echo "build_llama_server: built in $((SECONDS - BUILD_START)) s ($((SECONDS - START)) s with download and configuration): $("$BIN" --version 2>&1 | grep -m1 version)" >&2
echo "$BIN"
