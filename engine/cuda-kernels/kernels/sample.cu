// Sampling on the GPU for rows with no penalty, bias, ban or log-probabilities (docs/cuda.md):
// temperature, top-k, top-p and min-p, then a draw by inverse CDF with a uniform number the host
// drew from the sequence's own seeded generator. Only the token id goes back.
//
// A row may follow a grammar: its mask (one bit per token, vocab/32 words, computed by llguidance
// on the host while the forward pass ran) is uploaded, and a token outside it reads as -inf. When
// nothing the mask allows is possible, the row's token is the first one it allows (as the host
// pipeline's fallback, TokenMask::best_allowed of the raw row).
//
// No sort: one thread block per row finds each filter's threshold on the softmax weights
// w_i = exp((x_i - max) / temperature) (the most likely token weighs exactly 1) by a search
// over the bit patterns of positive floats (monotone in the value), so the threshold found is
// exactly a weight of the row. Each pass over the row measures kPivots points of the range and
// keeps one of the kPivots + 1 sub-ranges (~10 passes where bisection took ~30):
//   top-k: the largest t with #{w >= t} >= k (the k-th largest weight);
//   top-p: the largest t with sum{w >= t} >= top_p * (mass left by top-k);
//   min-p: t = min_p (the largest weight is 1).
// Kept: w >= every threshold and w > 0. The draw walks the kept tokens in vocabulary order, as the
// host pipeline does: each thread sums its contiguous chunk, a block scan gives each chunk's
// offset (a block scan), and the thread whose chunk holds `uniform * kept mass` finds the token. Ties at a
// threshold are all kept (the host keeps the lowest ids among tied weights). The host twin of
// this kernel is engine/src/sampling/thresholds.rs.

#include <math_constants.h>

namespace {

constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / 32;
// Points measured per pass of the threshold search (PIVOTS_PER_PASS of thresholds.rs).
constexpr int kPivots = 7;
// Below this the host pipeline's exponential is 0 and the token drops out.
constexpr float kMinExponent = -87.3f;

struct RowSampling {
  int row;
  float inv_temperature;
  int top_k;  // 0 = off
  float top_p;  // >= 1 = off
  float min_p;  // <= 0 = off
  float uniform;  // in [0, 1)
  int mask;  // the row's mask among the uploaded ones; -1 = none
};

// Whether `mask` (nullptr: every token) allows token `i`.
__device__ __forceinline__ bool allows(const unsigned int* mask, int i) {
  return mask == nullptr || ((mask[i >> 5] >> (i & 31)) & 1u) != 0u;
}

// Logit `i` of `row` as the mask leaves it: -inf outside it.
__device__ __forceinline__ float masked_logit(const float* row, const unsigned int* mask, int i) {
  return allows(mask, i) ? row[i] : -CUDART_INF_F;
}

// The lowest token `mask` allows (0 when none, or without a mask): every thread gets it.
__device__ __forceinline__ unsigned int first_allowed(const unsigned int* mask, int vocab, unsigned int* shared_first) {
  if (threadIdx.x == 0) *shared_first = 0xffffffffu;
  __syncthreads();
  if (mask != nullptr) {
    for (int i = threadIdx.x; i < vocab; i += kThreads) {
      if (allows(mask, i)) {
        atomicMin(shared_first, static_cast<unsigned int>(i));
        break;
      }
    }
  }
  __syncthreads();
  return *shared_first == 0xffffffffu ? 0u : *shared_first;
}

__device__ __forceinline__ float weight_of(float logit, float max_logit, float inv_temperature) {
  if (!(logit > -CUDART_INF_F)) return 0.f;  // -inf and NaN
  const float exponent = (logit - max_logit) * inv_temperature;
  return exponent < kMinExponent ? 0.f : expf(exponent);
}

// Block-wide reductions: every thread gets the result.
__device__ float block_sum(float value, float* shared) {
  for (int offset = 16; offset > 0; offset /= 2) value += __shfl_xor_sync(0xffffffffu, value, offset);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();
  if (lane == 0) shared[warp] = value;
  __syncthreads();
  float total = lane < kWarps ? shared[lane] : 0.f;
  for (int offset = 16; offset > 0; offset /= 2) total += __shfl_xor_sync(0xffffffffu, total, offset);
  return total;
}

__device__ float block_max(float value, float* shared) {
  for (int offset = 16; offset > 0; offset /= 2) {
    value = fmaxf(value, __shfl_xor_sync(0xffffffffu, value, offset));
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();
  if (lane == 0) shared[warp] = value;
  __syncthreads();
  float best = lane < kWarps ? shared[lane] : -CUDART_INF_F;
  for (int offset = 16; offset > 0; offset /= 2) {
    best = fmaxf(best, __shfl_xor_sync(0xffffffffu, best, offset));
  }
  return best;
}

// The warp's largest (best, index), ties to the lowest index; every lane gets it.
__device__ __forceinline__ void warp_argmax(float& best, int& index) {
  for (int offset = 16; offset > 0; offset /= 2) {
    const float other = __shfl_xor_sync(0xffffffffu, best, offset);
    const int other_index = __shfl_xor_sync(0xffffffffu, index, offset);
    if (other > best || (other == best && other_index < index)) {
      best = other;
      index = other_index;
    }
  }
}

// The block's largest (best, index) over every thread's, ties to the lowest index, written as
// this block's token (token 0 when no thread found one: index == vocab).
__device__ __forceinline__ void store_block_argmax(float best, int index, int vocab,
                                                   unsigned int* tokens) {
  __shared__ float best_values[kWarps];
  __shared__ int best_indices[kWarps];
  warp_argmax(best, index);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) {
    best_values[warp] = best;
    best_indices[warp] = index;
  }
  __syncthreads();
  if (warp == 0) {
    best = best_values[lane];
    index = best_indices[lane];
    warp_argmax(best, index);
    if (lane == 0) tokens[blockIdx.x] = index < vocab ? static_cast<unsigned int>(index) : 0u;
  }
}

// Block-wide sums of kPivots values at once (`shared`: kWarps * kPivots floats); every thread
// gets the totals.
__device__ void block_sums(float (&values)[kPivots], float* shared) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
#pragma unroll
  for (int j = 0; j < kPivots; ++j) {
    for (int offset = 16; offset > 0; offset /= 2) {
      values[j] += __shfl_xor_sync(0xffffffffu, values[j], offset);
    }
  }
  __syncthreads();
  if (lane == 0) {
#pragma unroll
    for (int j = 0; j < kPivots; ++j) shared[j * kWarps + warp] = values[j];
  }
  __syncthreads();
#pragma unroll
  for (int j = 0; j < kPivots; ++j) {
    float total = shared[j * kWarps + lane];
    for (int offset = 16; offset > 0; offset /= 2) total += __shfl_xor_sync(0xffffffffu, total, offset);
    values[j] = total;
  }
}

// One pass over the row: at each pivot, the number (kMass false; a float sum of ones, exact below
// 2^24 entries) or the mass (kMass true) of the weights >= the pivot.
template <bool kMass>
__device__ void at_least_pivots(const float* weights, int vocab, const float (&pivots)[kPivots],
                                float (&measured)[kPivots], float* shared) {
#pragma unroll
  for (int j = 0; j < kPivots; ++j) measured[j] = 0.f;
  for (int i = threadIdx.x; i < vocab; i += kThreads) {
    const float w = weights[i];
#pragma unroll
    for (int j = 0; j < kPivots; ++j) measured[j] += w >= pivots[j] ? (kMass ? w : 1.f) : 0.f;
  }
  block_sums(measured, shared);
}

// The largest positive float t in [low, 1] with at_least(t) >= goal (true at `low`): each pass
// measures the pivots lo + ceil(span * j / (kPivots + 1)), j = 1..kPivots, all in (lo, hi], and
// keeps the sub-range where at_least crosses the goal. Every thread holds the same sums, so the
// loop is uniform across the block.
template <bool kMass>
__device__ float largest_threshold(const float* weights, int vocab, float low, float goal,
                                   float* shared) {
  unsigned int lo = __float_as_uint(low), hi = __float_as_uint(1.f);
  while (lo < hi) {
    const unsigned long long span = hi - lo;
    unsigned int points[kPivots];
    float pivots[kPivots];
#pragma unroll
    for (int j = 0; j < kPivots; ++j) {
      points[j] = lo + static_cast<unsigned int>((span * (j + 1) + kPivots) / (kPivots + 1));
      pivots[j] = __uint_as_float(points[j]);
    }
    float measured[kPivots];
    at_least_pivots<kMass>(weights, vocab, pivots, measured, shared);
    unsigned int next_lo = lo, next_hi = hi;
    bool crossed = false;
#pragma unroll
    for (int j = 0; j < kPivots; ++j) {
      if (crossed) continue;
      if (measured[j] >= goal) {
        next_lo = points[j];
      } else {
        next_hi = points[j] - 1;
        crossed = true;
      }
    }
    lo = next_lo;
    hi = next_hi;
  }
  return __uint_as_float(lo);
}

// The sum of `value` over this warp's lanes up to and including this one.
__device__ __forceinline__ float warp_inclusive_scan(float value) {
  const int lane = threadIdx.x % 32;
  for (int offset = 1; offset < 32; offset *= 2) {
    const float before = __shfl_up_sync(0xffffffffu, value, offset);
    if (lane >= offset) value += before;
  }
  return value;
}

// The sum of `value` over the threads before this one (`shared`: kWarps + 1 floats), and in
// `total` the block's sum.
__device__ float block_exclusive_scan(float value, float* shared, float* total) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const float inclusive = warp_inclusive_scan(value);
  float exclusive = __shfl_up_sync(0xffffffffu, inclusive, 1);
  if (lane == 0) exclusive = 0.f;
  __syncthreads();
  if (lane == 31) shared[warp] = inclusive;
  __syncthreads();
  if (warp == 0) {
    const float warps_inclusive = warp_inclusive_scan(shared[lane]);
    float warps_before = __shfl_up_sync(0xffffffffu, warps_inclusive, 1);
    if (lane == 0) warps_before = 0.f;
    shared[lane] = warps_before;
    if (lane == 31) shared[kWarps] = warps_inclusive;
  }
  __syncthreads();
  *total = shared[kWarps];
  return shared[warp] + exclusive;
}

}  // namespace

// The argmax of every row (ties to the lowest index, NaN skipped, token 0 when nothing is
// finite or +inf), one block of kThreads per row: the greedy rows' token (candle's argmax took
// 113 µs for one 128k row on an H200).
extern "C" __global__ void __launch_bounds__(kThreads)
    argmax_rows(const float* __restrict__ logits, int vocab, unsigned int* __restrict__ tokens) {
  const float* row = logits + static_cast<long long>(blockIdx.x) * vocab;
  float best = -CUDART_INF_F;
  int index = vocab;  // "none yet": larger than every real index
  for (int i = threadIdx.x; i < vocab; i += kThreads) {
    const float x = row[i];
    if (x > best) {  // NaN never compares greater; the first maximum of this thread stays
      best = x;
      index = i;
    }
  }
  store_block_argmax(best, index, vocab, tokens);
}

// The best token each mask allows in its row (ties to the lowest id, NaN as -inf; the first
// allowed token when every allowed logit is -inf or NaN; token 0 when the mask allows none), one
// block of kThreads per entry of `rows`: greedy rows that follow a grammar (the host pipeline's
// TokenMask::best_allowed).
extern "C" __global__ void __launch_bounds__(kThreads)
    argmax_allowed_rows(const float* __restrict__ logits, int vocab, const int* __restrict__ rows,
                        const unsigned int* __restrict__ masks, int mask_words,
                        unsigned int* __restrict__ tokens) {
  const float* row = logits + static_cast<long long>(rows[blockIdx.x]) * vocab;
  const unsigned int* mask = masks + static_cast<long long>(blockIdx.x) * mask_words;
  float best = -CUDART_INF_F;
  int index = vocab;  // "none yet": larger than every real index
  for (int i = threadIdx.x; i < vocab; i += kThreads) {
    if (!allows(mask, i)) continue;
    const float x = isnan(row[i]) ? -CUDART_INF_F : row[i];
    if (index == vocab || x > best) {  // this thread's first allowed token, then strictly better
      best = x;
      index = i;
    }
  }
  store_block_argmax(best, index, vocab, tokens);
}

// One block of kThreads per sampled row. `weights`: scratch of num_rows * vocab floats.
// `masks`: the uploaded masks, `mask_words` words each (RowSampling::mask picks one).
extern "C" __global__ void __launch_bounds__(kThreads)
    sample_filtered(const float* __restrict__ logits, int vocab,
                    const RowSampling* __restrict__ params, const unsigned int* __restrict__ masks,
                    int mask_words, float* __restrict__ weights_scratch,
                    unsigned int* __restrict__ tokens) {
  __shared__ float shared[kWarps * kPivots];
  __shared__ unsigned int chosen;
  // Read in place (a copy of the struct spilled to local memory).
  const RowSampling& p = params[blockIdx.x];
  const float* row = logits + static_cast<long long>(p.row) * vocab;
  const unsigned int* mask =
      p.mask >= 0 ? masks + static_cast<long long>(p.mask) * mask_words : nullptr;
  float* weights = weights_scratch + static_cast<long long>(blockIdx.x) * vocab;

  float local_max = -CUDART_INF_F;
  for (int i = threadIdx.x; i < vocab; i += kThreads) {
    const float x = masked_logit(row, mask, i);
    if (x > local_max) local_max = x;  // NaN never compares greater
  }
  const float max_logit = block_max(local_max, shared);
  if (threadIdx.x == 0) chosen = 0xffffffffu;
  __syncthreads();
  if (max_logit == -CUDART_INF_F) {
    // Nothing possible: the first token the mask allows, token 0 without one (as the host).
    const unsigned int fallback = first_allowed(mask, vocab, &chosen);
    if (threadIdx.x == 0) tokens[blockIdx.x] = fallback;
    return;
  }
  if (max_logit == CUDART_INF_F) {
    // +inf takes all the mass: the first such token.
    for (int i = threadIdx.x; i < vocab; i += kThreads) {
      if (masked_logit(row, mask, i) == CUDART_INF_F) atomicMin(&chosen, static_cast<unsigned int>(i));
    }
    __syncthreads();
    if (threadIdx.x == 0) tokens[blockIdx.x] = chosen == 0xffffffffu ? 0u : chosen;
    return;
  }
  for (int i = threadIdx.x; i < vocab; i += kThreads) {
    weights[i] = weight_of(masked_logit(row, mask, i), max_logit, p.inv_temperature);
  }
  __syncthreads();

  // Smallest positive float: "w > 0".
  float threshold = __uint_as_float(1u);
  if (p.top_k > 0) {
    const float goal = static_cast<float>(p.top_k);
    float count = 0.f;
    for (int i = threadIdx.x; i < vocab; i += kThreads) count += weights[i] >= threshold ? 1.f : 0.f;
    if (block_sum(count, shared) > goal) {
      threshold = largest_threshold<false>(weights, vocab, threshold, goal, shared);
    }
  }
  if (p.top_p < 1.f) {
    float mass = 0.f;
    for (int i = threadIdx.x; i < vocab; i += kThreads) {
      const float w = weights[i];
      mass += w >= threshold ? w : 0.f;
    }
    const float goal = p.top_p * block_sum(mass, shared);
    threshold = largest_threshold<true>(weights, vocab, threshold, goal, shared);
  }
  if (p.min_p > 0.f) threshold = fmaxf(threshold, p.min_p);

  // The draw, in vocabulary order: each thread's contiguous chunk, offsets by a block scan.
  const int chunk = (vocab + kThreads - 1) / kThreads;
  const int first = threadIdx.x * chunk;
  const int last = min(vocab, first + chunk);
  float chunk_mass = 0.f;
  for (int i = first; i < last; ++i) {
    const float w = weights[i];
    chunk_mass += w >= threshold ? w : 0.f;
  }
  float total;
  float cumulative = block_exclusive_scan(chunk_mass, shared, &total);
  const float target = p.uniform * total;
  int last_kept = -1;
  for (int i = first; i < last; ++i) {
    const float w = weights[i];
    if (w < threshold) continue;
    last_kept = i;
    cumulative += w;
    if (cumulative > target) {
      atomicMin(&chosen, static_cast<unsigned int>(i));
      break;
    }
  }
  // Rounding left the target past every token: the last kept one (as the host pipeline).
  __shared__ int last_kept_of_row;
  if (threadIdx.x == 0) last_kept_of_row = -1;
  __syncthreads();
  if (last_kept >= 0) atomicMax(&last_kept_of_row, last_kept);
  __syncthreads();
  if (threadIdx.x == 0) {
    tokens[blockIdx.x] = chosen != 0xffffffffu ? chosen
                         : last_kept_of_row >= 0 ? static_cast<unsigned int>(last_kept_of_row)
                                                 : 0u;
  }
}
