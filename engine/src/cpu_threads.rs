//! The process's CPU threads for the model's kernels: one rayon pool (the engine's), not two.
//!
//! candle runs element-wise operations of 65,536 values or more on a barrier pool of its own
//! (`CANDLE_NUM_THREADS - 1` threads, by default one fewer than the cores), whose threads spin
//! 25,000 rounds after each operation before they sleep. Beside the engine's pool, which already
//! has a worker per core, that spin took the cores from the products: a 128-token prefill on 2
//! cores spent 14% of its CPU time in that spin, and ran 0.77–0.84× as long without the barrier
//! pool (docs/PERFORMANCE.md § One pool of CPU threads). With `CANDLE_NUM_THREADS=1` those
//! operations run on the calling worker.

/// candle's variable for its barrier pool's size.
const CANDLE_THREADS_VARIABLE: &str = "CANDLE_NUM_THREADS";

/// Turns off candle's barrier pool, unless `CANDLE_NUM_THREADS` is set (the operator's choice
/// stands). Call it first thing in `main`, before any other thread starts: it sets an
/// environment variable, which is only sound while no other thread reads the environment.
pub fn use_one_cpu_pool() {
    if let Some(value) = candle_threads_to_set(std::env::var_os(CANDLE_THREADS_VARIABLE)) {
        std::env::set_var(CANDLE_THREADS_VARIABLE, value);
    }
}

/// Whether candle's barrier pool has no threads (`CANDLE_NUM_THREADS=1`), read once.
pub fn candle_pool_is_off() -> bool {
    static OFF: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *OFF.get_or_init(|| std::env::var(CANDLE_THREADS_VARIABLE).as_deref() == Ok("1"))
}

/// The value to give `CANDLE_NUM_THREADS`, given what it holds now.
fn candle_threads_to_set(current: Option<std::ffi::OsString>) -> Option<&'static str> {
    match current {
        None => Some("1"),
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_thread_unless_the_operator_chose() {
        assert_eq!(candle_threads_to_set(None), Some("1"));
        assert_eq!(candle_threads_to_set(Some("3".into())), None);
        assert_eq!(candle_threads_to_set(Some("".into())), None);
    }
}
