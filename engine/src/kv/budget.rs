//! Sizing the GPU's KV cache from `gpu_memory_utilization`, as vLLM does: the instance may use
//! `fraction × total` bytes of the GPU; the KV cache gets what the weights, the peak activations
//! of a worst-case step and the memory outside candle's pool (CUDA context growth, cuBLAS
//! workspaces, kernels) leave of it. Pure arithmetic over measured numbers.

use crate::error::{EngineError, Result};

/// What the measurements were (bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryMeasurements {
    pub total_bytes: usize,
    /// Free memory before the model was loaded.
    pub free_at_start_bytes: usize,
    /// Free memory after the profiling step.
    pub free_after_profile_bytes: usize,
    /// What candle's pool held from the driver after the profiling step.
    pub pool_reserved_after_profile_bytes: usize,
    /// Live weights before the profiling step.
    pub weights_bytes: usize,
    /// The pool's peak during the profiling step (weights included).
    pub peak_during_profile_bytes: usize,
    /// The profiling step's own small KV cache, counted in the peak but not needed afterwards.
    pub profile_cache_bytes: usize,
}

/// How the budget splits (bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KvBudget {
    pub requested_bytes: usize,
    pub weights_bytes: usize,
    /// Activations and workspaces of the worst-case step, above the weights.
    pub peak_step_bytes: usize,
    /// Growth outside candle's pool since start-up (context, cuBLAS, loaded kernels).
    pub non_pool_bytes: usize,
    pub kv_cache_bytes: usize,
}

/// Splits `fraction × total` into weights, peak step activations, other memory and KV cache.
pub fn kv_budget(fraction: f64, m: &MemoryMeasurements) -> Result<KvBudget> {
    let requested_bytes = (m.total_bytes as f64 * fraction) as usize;
    let peak_step_bytes = m
        .peak_during_profile_bytes
        .saturating_sub(m.weights_bytes)
        .saturating_sub(m.profile_cache_bytes);
    let used_since_start = m
        .free_at_start_bytes
        .saturating_sub(m.free_after_profile_bytes);
    let non_pool_bytes = used_since_start.saturating_sub(m.pool_reserved_after_profile_bytes);
    let needed = m.weights_bytes + peak_step_bytes + non_pool_bytes;
    if needed >= requested_bytes {
        return Err(EngineError::Config(format!(
            "gpu_memory_utilization {fraction} allows {requested_bytes} bytes, but the weights ({}), the peak of a \
             worst-case step ({peak_step_bytes}) and CUDA's own memory ({non_pool_bytes}) already take {needed}: \
             no room is left for the KV cache; raise --gpu-memory-utilization or lower --max-num-batched-tokens",
            m.weights_bytes
        )));
    }
    Ok(KvBudget {
        requested_bytes,
        weights_bytes: m.weights_bytes,
        peak_step_bytes,
        non_pool_bytes,
        kv_cache_bytes: requested_bytes - needed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: usize = 1 << 30;

    fn h100() -> MemoryMeasurements {
        MemoryMeasurements {
            total_bytes: 80 * GIB,
            free_at_start_bytes: 79 * GIB,
            free_after_profile_bytes: 79 * GIB - 4 * GIB,
            pool_reserved_after_profile_bytes: 3 * GIB + GIB / 2,
            weights_bytes: 3 * GIB,
            peak_during_profile_bytes: 3 * GIB + GIB + GIB / 4,
            profile_cache_bytes: GIB / 4,
        }
    }

    #[test]
    fn the_kv_cache_gets_what_weights_activations_and_overhead_leave() {
        let budget = kv_budget(0.9, &h100()).expect("fits");
        assert_eq!(budget.requested_bytes, (80.0 * GIB as f64 * 0.9) as usize);
        assert_eq!(budget.weights_bytes, 3 * GIB);
        assert_eq!(
            budget.peak_step_bytes, GIB,
            "the profiling cache is not an activation"
        );
        assert_eq!(budget.non_pool_bytes, GIB / 2);
        assert_eq!(
            budget.kv_cache_bytes,
            budget.requested_bytes - 3 * GIB - GIB - GIB / 2
        );
    }

    #[test]
    fn too_small_a_fraction_is_a_clear_error() {
        let error = kv_budget(0.05, &h100())
            .expect_err("5% is too little")
            .to_string();
        assert!(
            error.contains("no room is left for the KV cache"),
            "{error}"
        );
        assert!(error.contains("--gpu-memory-utilization"), "{error}");
    }
}
