// Sampling on the GPU for rows with no penalty, bias, ban, grammar or log-probabilities
// (docs/cuda.md): temperature, top-k, top-p and min-p, then a draw by inverse CDF with a uniform
// number the host drew from the sequence's own seeded generator. Only the token id goes back.
//
// No sort: one thread block per row finds each filter's threshold on the softmax weights
// w_i = exp((x_i - max) / temperature) (the most likely token weighs exactly 1) by bisection
// over the bit patterns of positive floats (monotone in the value), so the threshold found is
// exactly a weight of the row:
//   top-k: the largest t with #{w >= t} >= k (the k-th largest weight);
//   top-p: the largest t with sum{w >= t} >= top_p * (mass left by top-k);
//   min-p: t = min_p (the largest weight is 1).
// Kept: w >= every threshold and w > 0. The draw walks the kept tokens in vocabulary order, as the
// host pipeline does: each thread sums its contiguous chunk, a block scan gives each chunk's
// offset, and the thread whose chunk holds `uniform * kept mass` finds the token. Ties at a
// threshold are all kept (the host keeps the lowest ids among tied weights). The host twin of
// this kernel is engine/src/sampling/thresholds.rs.

#include <math_constants.h>

namespace {

constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / 32;
// Below this the host pipeline's exponential is 0 and the token drops out.
constexpr float kMinExponent = -87.3f;

struct RowSampling {
  int row;
  float inv_temperature;
  int top_k;  // 0 = off
  float top_p;  // >= 1 = off
  float min_p;  // <= 0 = off
  float uniform;  // in [0, 1)
};

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

// Number of weights >= t (as a float sum of ones: exact below 2^24 entries).
__device__ float count_at_least(const float* weights, int vocab, float t, float* shared) {
  float count = 0.f;
  for (int i = threadIdx.x; i < vocab; i += kThreads) count += weights[i] >= t ? 1.f : 0.f;
  return block_sum(count, shared);
}

__device__ float mass_at_least(const float* weights, int vocab, float t, float* shared) {
  float mass = 0.f;
  for (int i = threadIdx.x; i < vocab; i += kThreads) {
    const float w = weights[i];
    mass += w >= t ? w : 0.f;
  }
  return block_sum(mass, shared);
}

// The largest positive float t in [low, 1] with `at_least(t) >= goal` (true at `low`).
template <typename AtLeast>
__device__ float largest_threshold(float low, float goal, AtLeast at_least) {
  unsigned int lo = __float_as_uint(low), hi = __float_as_uint(1.f);
  while (lo < hi) {
    const unsigned int mid = lo + (hi - lo + 1) / 2;
    if (at_least(__uint_as_float(mid)) >= goal) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return __uint_as_float(lo);
}

}  // namespace

// The argmax of every row (ties to the lowest index, NaN skipped, token 0 when nothing is
// finite or +inf), one block of kThreads per row: the greedy rows' token (candle's argmax took
// 113 µs for one 128k row on an H200).
extern "C" __global__ void __launch_bounds__(kThreads)
    argmax_rows(const float* __restrict__ logits, int vocab, unsigned int* __restrict__ tokens) {
  __shared__ float best_values[kWarps];
  __shared__ int best_indices[kWarps];
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
  for (int offset = 16; offset > 0; offset /= 2) {
    const float other = __shfl_xor_sync(0xffffffffu, best, offset);
    const int other_index = __shfl_xor_sync(0xffffffffu, index, offset);
    if (other > best || (other == best && other_index < index)) {
      best = other;
      index = other_index;
    }
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) {
    best_values[warp] = best;
    best_indices[warp] = index;
  }
  __syncthreads();
  if (warp == 0) {
    best = best_values[lane];
    index = best_indices[lane];
    for (int offset = 16; offset > 0; offset /= 2) {
      const float other = __shfl_xor_sync(0xffffffffu, best, offset);
      const int other_index = __shfl_xor_sync(0xffffffffu, index, offset);
      if (other > best || (other == best && other_index < index)) {
        best = other;
        index = other_index;
      }
    }
    if (lane == 0) tokens[blockIdx.x] = index < vocab ? static_cast<unsigned int>(index) : 0u;
  }
}

// One block of kThreads per sampled row. `weights`: scratch of num_rows * vocab floats.
extern "C" __global__ void __launch_bounds__(kThreads)
    sample_filtered(const float* __restrict__ logits, int vocab,
                    const RowSampling* __restrict__ params, float* __restrict__ weights_scratch,
                    unsigned int* __restrict__ tokens) {
  __shared__ float shared[kWarps];
  __shared__ float chunk_offsets[kThreads];
  __shared__ unsigned int chosen;
  const RowSampling p = params[blockIdx.x];
  const float* row = logits + static_cast<long long>(p.row) * vocab;
  float* weights = weights_scratch + static_cast<long long>(blockIdx.x) * vocab;

  float local_max = -CUDART_INF_F;
  for (int i = threadIdx.x; i < vocab; i += kThreads) {
    const float x = row[i];
    if (x > local_max) local_max = x;  // NaN never compares greater
  }
  const float max_logit = block_max(local_max, shared);
  if (threadIdx.x == 0) chosen = 0xffffffffu;
  __syncthreads();
  if (max_logit == CUDART_INF_F || max_logit == -CUDART_INF_F) {
    // +inf takes all the mass; nothing possible at all: token 0 (as the host pipeline).
    if (max_logit == CUDART_INF_F) {
      for (int i = threadIdx.x; i < vocab; i += kThreads) {
        if (row[i] == CUDART_INF_F) atomicMin(&chosen, static_cast<unsigned int>(i));
      }
    }
    __syncthreads();
    if (threadIdx.x == 0) tokens[blockIdx.x] = chosen == 0xffffffffu ? 0u : chosen;
    return;
  }
  for (int i = threadIdx.x; i < vocab; i += kThreads) {
    weights[i] = weight_of(row[i], max_logit, p.inv_temperature);
  }
  __syncthreads();

  // Smallest positive float: "w > 0".
  float threshold = __uint_as_float(1u);
  if (p.top_k > 0) {
    const float goal = static_cast<float>(p.top_k);
    if (count_at_least(weights, vocab, threshold, shared) > goal) {
      threshold = largest_threshold(threshold, goal, [&](float t) {
        return count_at_least(weights, vocab, t, shared);
      });
    }
  }
  if (p.top_p < 1.f) {
    const float goal = p.top_p * mass_at_least(weights, vocab, threshold, shared);
    threshold = largest_threshold(threshold, goal, [&](float t) {
      return mass_at_least(weights, vocab, t, shared);
    });
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
  chunk_offsets[threadIdx.x] = chunk_mass;
  __syncthreads();
  if (threadIdx.x == 0) {
    // A serial exclusive scan of 1024 sums: one thread, negligible beside the passes above.
    float running = 0.f;
    for (int t = 0; t < kThreads; ++t) {
      const float mass = chunk_offsets[t];
      chunk_offsets[t] = running;
      running += mass;
    }
    shared[0] = running;
  }
  __syncthreads();
  const float total = shared[0];
  const float target = p.uniform * total;
  float cumulative = chunk_offsets[threadIdx.x];
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
