// Paged attention for Pagoda's CUDA path (docs/cuda.md).
//
// Cache layout per layer: [num_blocks, num_kv_heads, block_size, head_dim] in the model dtype, so
// that one KV head's keys of a block are contiguous.
//
// `cache_write_*` puts each new token's key and value into its slot (slot < 0: padding, skipped).
//
// `paged_attention_*` computes, for every query token of a step, softmax(q·Kᵀ·scale)·V over its
// sequence's cached context, read in place through the block table. One thread block handles one
// work item (a tile of consecutive query tokens of one sequence, and a chunk of the query heads
// that share one KV head) for one KV head and one partition of the key range. The tile's rows
// (tokens × heads) read each key and value once from global memory (GQA and multi-token prefill
// tiles share the loads). Rows keep an online softmax; decode of long contexts splits the key
// range into partitions (split-K) and `paged_attention_reduce_*` merges the partitions.
//
// Every step the scheduler produces goes through the same kernel: decodes (1-token tiles),
// prefills, chunked-prefill continuations and prefills after a prefix-cache hit (tiles whose
// first position is past 0), mixed in one launch, with causal and sliding-window masks.
//
// Keys and values move in 16-byte vectors (8 bf16/f16 or 4 f32 values) from the cache into shared
// memory, where they stay in the cache's dtype (half the shared memory of f32 for bf16/f16, so
// more thread blocks fit on an SM); rows convert to f32 as they read them. The block size is a
// compile-time parameter for the common sizes (16, 32: the block-table lookups divide by a
// constant), with a runtime-size instantiation (`_bs0`) for any other.

#include "dtype.cuh"

namespace {

constexpr int kWarpSize = 32;
constexpr int kNumWarps = 4;
constexpr int kThreads = kNumWarps * kWarpSize;
constexpr int kRowsPerWarp = 4;
// Rows (query token × head pairs) of one work item; the host builds work items that fit.
constexpr int kMaxRows = kNumWarps * kRowsPerWarp;
// Keys staged in shared memory at a time: one per lane.
constexpr int kKeyTile = kWarpSize;
// Ints per work item: seq, first_token, num_tokens, first_position, head_start, num_heads.
constexpr int kWorkFields = 6;

using pagoda::from_float;
using pagoda::to_float;

__device__ __forceinline__ float warp_max(float x) {
#pragma unroll
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, offset));
  }
  return x;
}

__device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    x += __shfl_xor_sync(0xffffffffu, x, offset);
  }
  return x;
}

// First key position a query at `position` attends to (window = 0: no sliding window).
__device__ __forceinline__ int first_key(int position, int window) {
  return window > 0 ? max(0, position + 1 - window) : 0;
}

// Number of partitions of a work item's key range.
__device__ __forceinline__ int num_partitions_of(int key_lo, int key_hi, int partition_size) {
  return (key_hi - key_lo + partition_size - 1) / partition_size;
}

struct AttnParams {
  int num_heads;
  int num_kv_heads;
  int block_size;
  int max_blocks_per_seq;
  int q_row_stride;      // elements between tokens in q
  int out_row_stride;    // elements between tokens in out
  float scale;
  int window;            // 0 = none
  int partition_size;    // keys per partition, a multiple of kKeyTile
  int max_partitions;    // grid z; 1 = write the output directly
  float softcap;         // scaled scores become softcap * tanh(score / softcap); 0 = none
};

// Cache index of (block, kv_head, offset, 0).
__device__ __forceinline__ long long cache_base(int block, int kv_head, int offset,
                                                int num_kv_heads, int block_size, int head_dim) {
  return ((static_cast<long long>(block) * num_kv_heads + kv_head) * block_size + offset) *
         head_dim;
}

// One 16-byte load or store: kVecOf<T> values. A row of D values starts 16-byte aligned in the
// cache (the buffers come from the driver's allocator, rows are D values apart and every
// supported D is a multiple of kVecOf<T>) and in shared memory (the tiles below are aligned and
// their row strides are multiples of 16 bytes).
using Vec16 = uint4;
template <typename T>
constexpr int kVecOf = static_cast<int>(sizeof(Vec16) / sizeof(T));

// 32-bit word `w` (0–3) of a vector; `w` is a compile-time constant in the unrolled loops.
__device__ __forceinline__ unsigned word_of(const Vec16& v, int w) {
  return w == 0 ? v.x : w == 1 ? v.y : w == 2 ? v.z : v.w;
}

// Value `e` of a vector of T as f32, from the bits (little-endian: value 0 is the low half).
template <typename T>
__device__ __forceinline__ float vec_value(const Vec16& v, int e);
template <>
__device__ __forceinline__ float vec_value<float>(const Vec16& v, int e) {
  return __uint_as_float(word_of(v, e));
}
template <>
__device__ __forceinline__ float vec_value<__nv_bfloat16>(const Vec16& v, int e) {
  const unsigned word = word_of(v, e / 2);
  return __uint_as_float(e % 2 == 0 ? word << 16 : word & 0xffff0000u);
}
template <>
__device__ __forceinline__ float vec_value<__half>(const Vec16& v, int e) {
  const unsigned word = word_of(v, e / 2);
  return __half2float(__ushort_as_half(static_cast<unsigned short>(e % 2 == 0 ? word : word >> 16)));
}

// Block size BS > 0: known at compile time; BS = 0: read from the parameters.
template <typename T, int D, int BS>
__device__ void attention_block(const T* __restrict__ q, const T* __restrict__ key_cache,
                                const T* __restrict__ value_cache,
                                const int* __restrict__ block_tables,
                                const int* __restrict__ seq_lens, const int* __restrict__ work,
                                T* __restrict__ out, float* __restrict__ partial_acc,
                                float* __restrict__ partial_ml, const AttnParams p) {
  constexpr int kChunks = (D + kWarpSize - 1) / kWarpSize;
  constexpr int kVec = kVecOf<T>;
  static_assert(D % kVec == 0, "a row of keys is whole 16-byte vectors");
  constexpr int kVecsPerRow = D / kVec;
  // A key row is padded by one vector: a lane reads its key's row in 16-byte vectors, and the
  // 8 lanes of each phase of such a warp-wide read then hit 8 different groups of 4 banks.
  constexpr int kKeyStride = D + kVec;
  __shared__ __align__(16) float q_s[kMaxRows][D];
  __shared__ __align__(16) T k_s[kKeyTile][kKeyStride];
  __shared__ __align__(16) T v_s[kKeyTile][D];
  const int block_size = BS > 0 ? BS : p.block_size;

  const int* item = work + blockIdx.x * kWorkFields;
  const int seq = item[0], first_token = item[1], num_tokens = item[2];
  const int first_position = item[3], head_start = item[4], num_item_heads = item[5];
  const int kv_head = blockIdx.y, partition = blockIdx.z;
  const int group = p.num_heads / p.num_kv_heads;
  const int num_rows = num_tokens * num_item_heads;
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;

  const int key_lo = first_key(first_position, p.window);
  const int key_hi = min(first_position + num_tokens, seq_lens[seq]);
  if (partition >= num_partitions_of(key_lo, key_hi, p.partition_size)) return;
  const int part_lo = key_lo + partition * p.partition_size;
  const int part_hi = min(key_hi, part_lo + p.partition_size);
  const int* table = block_tables + static_cast<long long>(seq) * p.max_blocks_per_seq;

  // Stage the scaled queries of every row: row r = token (r / heads) × head (r % heads).
  for (int i = threadIdx.x; i < num_rows * D; i += kThreads) {
    const int row = i / D, d = i % D;
    const int token = first_token + row / num_item_heads;
    const int head = kv_head * group + head_start + row % num_item_heads;
    q_s[row][d] = to_float(q[static_cast<long long>(token) * p.q_row_stride + head * D + d]) * p.scale;
  }

  float row_max[kRowsPerWarp], row_sum[kRowsPerWarp], acc[kRowsPerWarp][kChunks];
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
    row_max[i] = -INFINITY;
    row_sum[i] = 0.f;
#pragma unroll
    for (int c = 0; c < kChunks; ++c) acc[i][c] = 0.f;
  }

  for (int tile_lo = part_lo; tile_lo < part_hi; tile_lo += kKeyTile) {
    const int tile_len = min(kKeyTile, part_hi - tile_lo);
    __syncthreads();  // the previous tile is consumed (and q_s is written, the first time)
    for (int i = threadIdx.x; i < tile_len * kVecsPerRow; i += kThreads) {
      const int j = i / kVecsPerRow, d = (i % kVecsPerRow) * kVec;
      const int position = tile_lo + j;
      const long long at = cache_base(table[position / block_size], kv_head,
                                      position % block_size, p.num_kv_heads, block_size, D) + d;
      *reinterpret_cast<Vec16*>(&k_s[j][d]) = *reinterpret_cast<const Vec16*>(key_cache + at);
      *reinterpret_cast<Vec16*>(&v_s[j][d]) = *reinterpret_cast<const Vec16*>(value_cache + at);
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < kRowsPerWarp; ++i) {
      const int row = warp + i * kNumWarps;
      if (row >= num_rows) break;  // warp-uniform
      const int position = first_position + row / num_item_heads;
      const int key_position = tile_lo + lane;
      float score = -INFINITY;
      if (lane < tile_len && key_position <= position &&
          key_position >= first_key(position, p.window)) {
        float dot = 0.f;
#pragma unroll
        for (int d = 0; d < D; d += kVec) {
          const Vec16 keys = *reinterpret_cast<const Vec16*>(&k_s[lane][d]);
#pragma unroll
          for (int e = 0; e < kVec; e += 4) {
            // Every lane reads the same 4 query values: one broadcast.
            const float4 query = *reinterpret_cast<const float4*>(&q_s[row][d + e]);
            dot += query.x * vec_value<T>(keys, e) + query.y * vec_value<T>(keys, e + 1) +
                   query.z * vec_value<T>(keys, e + 2) + query.w * vec_value<T>(keys, e + 3);
          }
        }
        score = p.softcap > 0.f ? p.softcap * tanhf(dot / p.softcap) : dot;
      }
      const float new_max = fmaxf(row_max[i], warp_max(score));
      if (new_max == -INFINITY) continue;  // every key so far is masked for this row
      const float weight = score == -INFINITY ? 0.f : __expf(score - new_max);
      const float correction = __expf(row_max[i] - new_max);
      row_sum[i] = row_sum[i] * correction + warp_sum(weight);
#pragma unroll
      for (int c = 0; c < kChunks; ++c) acc[i][c] *= correction;
      for (int j = 0; j < tile_len; ++j) {
        const float w = __shfl_sync(0xffffffffu, weight, j);
#pragma unroll
        for (int c = 0; c < kChunks; ++c) {
          const int d = lane + c * kWarpSize;
          if (d < D) acc[i][c] += w * to_float(v_s[j][d]);
        }
      }
      row_max[i] = new_max;
    }
  }

#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
    const int row = warp + i * kNumWarps;
    if (row >= num_rows) break;
    const int token = first_token + row / num_item_heads;
    const int head = kv_head * group + head_start + row % num_item_heads;
    if (p.max_partitions == 1) {
      const float inv = row_sum[i] > 0.f ? 1.f / row_sum[i] : 0.f;
#pragma unroll
      for (int c = 0; c < kChunks; ++c) {
        const int d = lane + c * kWarpSize;
        if (d < D) {
          out[static_cast<long long>(token) * p.out_row_stride + head * D + d] =
              from_float<T>(acc[i][c] * inv);
        }
      }
    } else {
      const long long slot =
          ((static_cast<long long>(blockIdx.x) * p.num_kv_heads + kv_head) * p.max_partitions +
           partition) * kMaxRows + row;
#pragma unroll
      for (int c = 0; c < kChunks; ++c) {
        const int d = lane + c * kWarpSize;
        if (d < D) partial_acc[slot * D + d] = acc[i][c];
      }
      if (lane == 0) {
        partial_ml[slot * 2] = row_max[i];
        partial_ml[slot * 2 + 1] = row_sum[i];
      }
    }
  }
}

// Merges the partitions of each row: out = Σ acc_p·e^(m_p−M) / Σ l_p·e^(m_p−M).
template <typename T, int D>
__device__ void reduce_block(const int* __restrict__ seq_lens, const int* __restrict__ work,
                             const float* __restrict__ partial_acc,
                             const float* __restrict__ partial_ml, T* __restrict__ out,
                             const AttnParams p) {
  const int* item = work + blockIdx.x * kWorkFields;
  const int seq = item[0], first_token = item[1], num_tokens = item[2];
  const int first_position = item[3], head_start = item[4], num_item_heads = item[5];
  const int kv_head = blockIdx.y;
  const int group = p.num_heads / p.num_kv_heads;
  const int key_lo = first_key(first_position, p.window);
  const int key_hi = min(first_position + num_tokens, seq_lens[seq]);
  const int num_parts = num_partitions_of(key_lo, key_hi, p.partition_size);
  const long long first_slot =
      (static_cast<long long>(blockIdx.x) * p.num_kv_heads + kv_head) * p.max_partitions * kMaxRows;
  for (int i = threadIdx.x; i < num_tokens * num_item_heads * D; i += blockDim.x) {
    const int row = i / D, d = i % D;
    float global_max = -INFINITY;
    for (int part = 0; part < num_parts; ++part) {
      global_max = fmaxf(global_max, partial_ml[(first_slot + part * kMaxRows + row) * 2]);
    }
    float total = 0.f, value = 0.f;
    for (int part = 0; part < num_parts; ++part) {
      const long long slot = first_slot + part * kMaxRows + row;
      const float m = partial_ml[slot * 2];
      if (m == -INFINITY) continue;
      const float w = __expf(m - global_max);
      total += partial_ml[slot * 2 + 1] * w;
      value += partial_acc[slot * D + d] * w;
    }
    const int token = first_token + row / num_item_heads;
    const int head = kv_head * group + head_start + row % num_item_heads;
    out[static_cast<long long>(token) * p.out_row_stride + head * D + d] =
        from_float<T>(total > 0.f ? value / total : 0.f);
  }
}

template <typename T>
__device__ void cache_write(const T* __restrict__ key, const T* __restrict__ value,
                            T* __restrict__ key_cache, T* __restrict__ value_cache,
                            const int* __restrict__ slot_mapping, int num_kv_heads, int head_dim,
                            int block_size, int key_row_stride, int value_row_stride) {
  const int token = blockIdx.x;
  const int slot = slot_mapping[token];
  if (slot < 0) return;
  const int block = slot / block_size, offset = slot % block_size;
  for (int i = threadIdx.x; i < num_kv_heads * head_dim; i += blockDim.x) {
    const int head = i / head_dim, d = i % head_dim;
    const long long dst =
        ((static_cast<long long>(block) * num_kv_heads + head) * block_size + offset) * head_dim + d;
    key_cache[dst] = key[static_cast<long long>(token) * key_row_stride + i];
    value_cache[dst] = value[static_cast<long long>(token) * value_row_stride + i];
  }
}

}  // namespace

#define PAGODA_ATTENTION_BS(TYPE, NAME, D, BS)                                                    \
  extern "C" __global__ void __launch_bounds__(kThreads)                                          \
      paged_attention_##NAME##_d##D##_bs##BS(                                                     \
          const TYPE* q, const TYPE* key_cache, const TYPE* value_cache,                        \
          const int* block_tables, const int* seq_lens, const int* work, TYPE* out,             \
          float* partial_acc, float* partial_ml, AttnParams params) {                           \
    attention_block<TYPE, D, BS>(q, key_cache, value_cache, block_tables, seq_lens, work, out,  \
                                 partial_acc, partial_ml, params);                               \
  }

#define PAGODA_ATTENTION(TYPE, NAME, D)                                                           \
  PAGODA_ATTENTION_BS(TYPE, NAME, D, 0)                                                           \
  PAGODA_ATTENTION_BS(TYPE, NAME, D, 16)                                                          \
  PAGODA_ATTENTION_BS(TYPE, NAME, D, 32)                                                          \
  extern "C" __global__ void paged_attention_reduce_##NAME##_d##D(                               \
      const int* seq_lens, const int* work, const float* partial_acc, const float* partial_ml,  \
      TYPE* out, AttnParams params) {                                                             \
    reduce_block<TYPE, D>(seq_lens, work, partial_acc, partial_ml, out, params);                 \
  }

#define PAGODA_ATTENTION_ALL_HEAD_DIMS(TYPE, NAME) \
  PAGODA_ATTENTION(TYPE, NAME, 16)                 \
  PAGODA_ATTENTION(TYPE, NAME, 32)                 \
  PAGODA_ATTENTION(TYPE, NAME, 64)                 \
  PAGODA_ATTENTION(TYPE, NAME, 80)                 \
  PAGODA_ATTENTION(TYPE, NAME, 96)                 \
  PAGODA_ATTENTION(TYPE, NAME, 128)

PAGODA_ATTENTION_ALL_HEAD_DIMS(float, f32)
PAGODA_ATTENTION_ALL_HEAD_DIMS(__half, f16)
PAGODA_ATTENTION_ALL_HEAD_DIMS(__nv_bfloat16, bf16)

#define PAGODA_CACHE_WRITE(TYPE, NAME)                                                          \
  extern "C" __global__ void cache_write_##NAME(                                                \
      const TYPE* key, const TYPE* value, TYPE* key_cache, TYPE* value_cache,                   \
      const int* slot_mapping, int num_kv_heads, int head_dim, int block_size,                  \
      int key_row_stride, int value_row_stride) {                                               \
    cache_write<TYPE>(key, value, key_cache, value_cache, slot_mapping, num_kv_heads, head_dim, \
                      block_size, key_row_stride, value_row_stride);                            \
  }

PAGODA_CACHE_WRITE(float, f32)
PAGODA_CACHE_WRITE(__half, f16)
PAGODA_CACHE_WRITE(__nv_bfloat16, bf16)
