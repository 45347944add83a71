// Fused element-wise kernels of the decoder layers (docs/cuda.md), each replacing several
// candle launches (and the host-to-device copies of shapes and strides that candle's kernels
// make for non-contiguous inputs) with one launch that reads its inputs once:
//
// `silu_mul_*`: the SwiGLU activation of the fused gate/up projection,
//   out[r][j] = silu(gate_up[r][j]) · gate_up[r][width + j], computed in f32, rounded once.
// `add_rms_norm_*`: the residual add and the next RMS norm of a decoder layer in one pass:
//   sum = x + residual (rounded to the dtype, as candle's add), normed = sum · rsqrt(mean(sum²)
//   + eps) · weight (in f32, rounded once, as candle's rms_norm on that sum).
// `rope_qk_*`: rotary position embedding of each token's query and key heads, read from strided
//   rows (e.g. the q and k parts of the fused qkv projection) and written to contiguous rows,
//   with the step's per-token cos/sin rows; `interleaved` picks the pairs (2i, 2i+1) (GGUF
//   Llama) instead of (i, i + d/2) (Hugging Face Llama, Qwen).

#include "dtype.cuh"

namespace {

using pagoda::from_float;
using pagoda::to_float;

template <typename T>
__device__ void silu_mul(const T* __restrict__ gate_up, T* __restrict__ out, int num_rows,
                         int width) {
  const long long total = static_cast<long long>(num_rows) * width;
  const long long step = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += step) {
    const long long row = i / width;
    const long long col = i - row * width;
    const T* source = gate_up + row * 2 * width;
    const float gate = to_float(source[col]);
    const float up = to_float(source[width + col]);
    out[i] = from_float<T>(gate / (1.f + __expf(-gate)) * up);
  }
}

// One thread block per row.
template <typename T>
__device__ void add_rms_norm(const T* __restrict__ x, const T* __restrict__ residual,
                             const T* __restrict__ weight, T* __restrict__ sum,
                             T* __restrict__ normed, int width, float eps) {
  __shared__ float partial[32];
  const long long offset = static_cast<long long>(blockIdx.x) * width;
  float squares = 0.f;
  for (int i = threadIdx.x; i < width; i += blockDim.x) {
    const T rounded = from_float<T>(to_float(x[offset + i]) + to_float(residual[offset + i]));
    sum[offset + i] = rounded;
    const float value = to_float(rounded);
    squares += value * value;
  }
  for (int step = 16; step > 0; step /= 2) squares += __shfl_xor_sync(0xffffffffu, squares, step);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) partial[warp] = squares;
  __syncthreads();
  const int num_warps = (blockDim.x + 31) / 32;
  float total = lane < num_warps ? partial[lane] : 0.f;
  for (int step = 16; step > 0; step /= 2) total += __shfl_xor_sync(0xffffffffu, total, step);
  const float scale = rsqrtf(total / static_cast<float>(width) + eps);
  // Each thread reads back only the elements it wrote.
  for (int i = threadIdx.x; i < width; i += blockDim.x) {
    normed[offset + i] = from_float<T>(to_float(sum[offset + i]) * scale * to_float(weight[i]));
  }
}

// One thread block per token; its threads walk the (head, pair) couples of the token's query
// heads, then key heads.
template <typename T>
__device__ void rope_qk(const T* __restrict__ q, int q_row_stride, const T* __restrict__ k,
                        int k_row_stride, const T* __restrict__ cos, const T* __restrict__ sin,
                        T* __restrict__ q_out, T* __restrict__ k_out, int num_heads,
                        int num_kv_heads, int head_dim, int interleaved) {
  const int token = blockIdx.x;
  const int half = head_dim / 2;
  const int total = (num_heads + num_kv_heads) * half;
  const T* cos_row = cos + static_cast<long long>(token) * half;
  const T* sin_row = sin + static_cast<long long>(token) * half;
  for (int p = threadIdx.x; p < total; p += blockDim.x) {
    const int head = p / half;
    const int i = p - head * half;
    const bool is_query = head < num_heads;
    const int h = is_query ? head : head - num_heads;
    const T* source = is_query ? q + static_cast<long long>(token) * q_row_stride + h * head_dim
                               : k + static_cast<long long>(token) * k_row_stride + h * head_dim;
    T* target = is_query ? q_out + (static_cast<long long>(token) * num_heads + h) * head_dim
                         : k_out + (static_cast<long long>(token) * num_kv_heads + h) * head_dim;
    const int first = interleaved ? 2 * i : i;
    const int second = interleaved ? 2 * i + 1 : i + half;
    const float c = to_float(cos_row[i]);
    const float s = to_float(sin_row[i]);
    const float x0 = to_float(source[first]);
    const float x1 = to_float(source[second]);
    target[first] = from_float<T>(x0 * c - x1 * s);
    target[second] = from_float<T>(x0 * s + x1 * c);
  }
}

}  // namespace

#define PAGODA_FUSED(TYPE, NAME)                                                                \
  extern "C" __global__ void silu_mul_##NAME(const TYPE* gate_up, TYPE* out, int num_rows,     \
                                             int width) {                                      \
    silu_mul<TYPE>(gate_up, out, num_rows, width);                                             \
  }                                                                                            \
  extern "C" __global__ void add_rms_norm_##NAME(const TYPE* x, const TYPE* residual,          \
                                                 const TYPE* weight, TYPE* sum, TYPE* normed,  \
                                                 int width, float eps) {                       \
    add_rms_norm<TYPE>(x, residual, weight, sum, normed, width, eps);                          \
  }                                                                                            \
  extern "C" __global__ void rope_qk_##NAME(                                                   \
      const TYPE* q, int q_row_stride, const TYPE* k, int k_row_stride, const TYPE* cos,       \
      const TYPE* sin, TYPE* q_out, TYPE* k_out, int num_heads, int num_kv_heads,              \
      int head_dim, int interleaved) {                                                          \
    rope_qk<TYPE>(q, q_row_stride, k, k_row_stride, cos, sin, q_out, k_out, num_heads,         \
                  num_kv_heads, head_dim, interleaved);                                        \
  }

PAGODA_FUSED(float, f32)
PAGODA_FUSED(__half, f16)
PAGODA_FUSED(__nv_bfloat16, bf16)
