# Sourced by bench/gpu/run.sh and profile.sh on the GPU machine: puts the CUDA 13 libraries the
# binaries link on LD_LIBRARY_PATH — the torch venv's wheels (`$TORCH_VENV`, default
# /opt/torch/.venv) and, when `ldconfig` does not know it, the driver's libcuda.so.1 (on the H200
# machines it sits in /usr/local/nvidia/lib64).
#
#   add_cuda_libraries DEVICE    # DEVICE cpu: the wheels only; returns 1 when libcuda is missing

add_cuda_libraries() {
  local lib libcuda
  for lib in "${TORCH_VENV:-/opt/torch/.venv}"/lib/python3*/site-packages/nvidia/cu13/lib; do
    [ -d "$lib" ] && export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  done
  [ "$1" = cuda ] || return 0
  ldconfig -p 2>/dev/null | grep 'libcuda\.so\.1 ' >/dev/null && return 0
  libcuda=$(find /usr/local/nvidia /usr/lib64 /usr/lib /lib -name 'libcuda.so.1' 2>/dev/null | head -n 1 || true)
  [ -n "$libcuda" ] || return 1
  LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$(dirname "$libcuda")"
  export LD_LIBRARY_PATH
}
