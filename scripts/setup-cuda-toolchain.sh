#!/usr/bin/env bash
# Sets up the CUDA 13.0 toolchain that `cargo build --features cuda` needs, from PyPI (no GPU and
# no system CUDA needed to compile): nvcc 13.0 and the CUDA 13.0 libraries (the versions the H100
# machines' driver 580 accepts), `libX.so` link names for the wheels' `libX.so.N`, and a stub
# `libcuda.so` that exists only for linking (the real one comes with the driver).
#
# Idempotent: a first run downloads ~570 MB and takes ~20 s; a rerun takes ~1 s.
# Installs into $CUDA_TC (default ~/.cache/cuda-13.0-toolchain), never into the repository, and
# writes $CUDA_TC/env.sh, which exports CUDA_HOME, PATH, CUDA_COMPUTE_CAP and CUDARC_CUDA_VERSION:
#   scripts/setup-cuda-toolchain.sh && source ~/.cache/cuda-13.0-toolchain/env.sh
#   cargo build --release --features cuda -p pagoda-server
# CUDA_COMPUTE_CAP (default 90 = H100) picks the GPU architecture the kernels are built for.
# Prints the path of env.sh last.
set -euo pipefail
CUDA_TC=${CUDA_TC:-${XDG_CACHE_HOME:-$HOME/.cache}/cuda-13.0-toolchain}
COMPUTE_CAP=${CUDA_COMPUTE_CAP:-90}
TOOLKIT_VERSION=13.0.2
mkdir -p "$CUDA_TC"
CUDA_TC=$(cd "$CUDA_TC" && pwd)

if [ ! -x "$CUDA_TC/venv/bin/pip" ]; then
  python3 -c "import ensurepip, venv" 2>/dev/null || {
    echo "python3-venv is missing (Debian: apt-get install python3-venv)" >&2
    exit 1
  }
  python3 -m venv "$CUDA_TC/venv"
fi
# The crt and nvvm extras pin cicc/ptxas to 13.0: unpinned ones (13.5) emit PTX the 580 driver
# cannot load ("Unsupported .version 9.5").
if ! "$CUDA_TC/venv/bin/pip" show cuda-toolkit 2>/dev/null | grep -qx "Version: $TOOLKIT_VERSION"; then
  "$CUDA_TC/venv/bin/pip" install -q --disable-pip-version-check \
    "cuda-toolkit[nvcc,crt,nvvm,cudart,cccl,cublas,curand,nvrtc]==$TOOLKIT_VERSION" </dev/null
fi
ROOT=$("$CUDA_TC/venv/bin/python" -c 'import os, nvidia; print(os.path.join(list(nvidia.__path__)[0], "cu13"))')
"$ROOT/bin/nvcc" --version | grep -q "release 13.0" || {
  echo "$ROOT/bin/nvcc is not CUDA 13.0" >&2
  exit 1
}
# The wheels ship libX.so.N only; the linker's -lX needs libX.so.
for lib in cudart:13 cublas:13 cublasLt:13 nvrtc:13 curand:10; do
  ln -sf "lib${lib%%:*}.so.${lib##*:}" "$ROOT/lib/lib${lib%%:*}.so"
done
# Link-time stand-in for the driver's libcuda.so.1: every cu* entry point of cuda.h, each
# returning CUDA_ERROR_STUB_LIBRARY (34). Named libcuda.so only, so the loader never picks it.
mkdir -p "$ROOT/lib/stubs"
if [ ! -f "$ROOT/lib/stubs/libcuda.so" ]; then
  grep -oE '\bcu[A-Z][A-Za-z0-9_]*' "$ROOT/include/cuda.h" | sort -u \
    | awk '{ for (s = 0; s < 3; s++) { suffix = s == 0 ? "" : (s == 1 ? "_ptds" : "_ptsz");
             print "int " $1 suffix "(void) { return 34; }" } }' \
    | sort -u >"$ROOT/lib/stubs/libcuda_stub.c"
  gcc -shared -fPIC -o "$ROOT/lib/stubs/libcuda.so" -Wl,-soname,libcuda.so.1 \
    "$ROOT/lib/stubs/libcuda_stub.c"
fi
cat >"$CUDA_TC/env.sh" <<ENV
export CUDA_HOME="$ROOT" CUDA_PATH="$ROOT" CUDA_ROOT="$ROOT"
export PATH="$ROOT/bin:\$PATH"
# The GPU architecture to build for (90 = H100); without it candle's build asks nvidia-smi.
export CUDA_COMPUTE_CAP="\${CUDA_COMPUTE_CAP:-$COMPUTE_CAP}"
# cudarc's bindings for the CUDA 13.0 driver API (driver 580).
export CUDARC_CUDA_VERSION=13000
ENV
echo "$CUDA_TC/env.sh"
