//! Keeps the engine pool's other workers polling for jobs while a CPU forward pass runs.
//!
//! A CPU forward pass is ~150 short parallel products and attention calls in a row, with a few
//! tens of microseconds of sequential work (norms, rope, residual adds) between them. Rayon's
//! idle workers spin only briefly and then sleep, so most products began by waking a sleeping
//! worker through the kernel (a futex wake; tens of microseconds on a virtual machine, ~25 a
//! step). Here each other worker runs a polling job for the length of the pass instead: it
//! takes the pass's jobs as soon as they are pushed, and gives its core back to the scheduler
//! every few idle rounds. This is how llama.cpp's threads wait between a graph's operations.
//! Between steps the workers sleep as before.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};

use rayon::Yield;

/// The most tokens a step may have for its pass to be run with polling workers while candle's
/// barrier pool is on. Its element-wise operations of 65,536 values or more run on that pool,
/// whose thread needs the core a polling worker would hold (measured: a 128-token prefill
/// 10-25% slower with polling). With the pool off (`cpu_threads::use_one_cpu_pool`, as the
/// binaries run) every step is polled (a 128-token prefill ~0.92x the time, 1,024 tokens the
/// same).
const MAX_POLLING_STEP_TOKENS: usize = 16;

/// Whether a CPU step of `num_tokens` tokens runs with polling workers.
pub fn worth_polling(num_tokens: usize) -> bool {
    num_tokens <= MAX_POLLING_STEP_TOKENS || crate::cpu_threads::candle_pool_is_off()
}

/// Idle rounds between two `sched_yield`s of a polling worker (a round is one look for a job).
const SPIN_ROUNDS_PER_OS_YIELD: u32 = 64;

thread_local! {
    /// Whether this thread already runs a polling job (further ones nested in it return at once).
    static POLLING: Cell<bool> = const { Cell::new(false) };
}

/// Runs `work` on the current thread while the pool's other workers poll for its parallel jobs.
/// Outside a rayon pool, or in a pool of one thread, it only runs `work`.
pub fn with_workers_polling<R>(work: impl FnOnce() -> R) -> R {
    let num_helpers = rayon::current_num_threads().saturating_sub(1);
    let Some(owner) = rayon::current_thread_index() else {
        return work();
    };
    if num_helpers == 0 || POLLING.get() {
        return work();
    }
    let done = AtomicBool::new(false);
    rayon::in_place_scope(|scope| {
        for _ in 0..num_helpers {
            scope.spawn(|_| poll_until(&done, owner));
        }
        // Set when `work` returns or unwinds: the scope waits for the polling jobs, which stop
        // only then (a panicking pass must fail its step, not hang the engine).
        let _stop = StopPolling(&done);
        work()
    })
}

/// Tells the polling jobs to stop when dropped.
struct StopPolling<'a>(&'a AtomicBool);

impl Drop for StopPolling<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

/// Runs pool jobs until `done`. Returns at once on the owner's thread (which may pop a polling
/// job while it waits inside `work`, and must not spin there) and inside another polling job.
fn poll_until(done: &AtomicBool, owner: usize) {
    if rayon::current_thread_index() == Some(owner) || POLLING.get() {
        return;
    }
    POLLING.set(true);
    let mut idle_rounds = 0u32;
    while !done.load(Ordering::Acquire) {
        match rayon::yield_now() {
            Some(Yield::Executed) => idle_rounds = 0,
            Some(Yield::Idle) => {
                idle_rounds = idle_rounds.wrapping_add(1);
                if idle_rounds.is_multiple_of(SPIN_ROUNDS_PER_OS_YIELD) {
                    std::thread::yield_now();
                } else {
                    std::hint::spin_loop();
                }
            }
            None => break,
        }
    }
    POLLING.set(false);
}

#[cfg(test)]
mod tests {
    use super::*;
    use rayon::prelude::*;
    use std::sync::atomic::AtomicUsize;

    fn pool(num_threads: usize) -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new()
            .num_threads(num_threads)
            .build()
            .expect("a test thread pool")
    }

    #[test]
    fn parallel_work_inside_gives_the_same_results_and_the_helpers_return() {
        for num_threads in [1, 2, 4] {
            let sums = pool(num_threads).install(|| {
                with_workers_polling(|| {
                    (0..200)
                        .map(|round| (0..10_000u64).into_par_iter().map(|i| i * round).sum())
                        .collect::<Vec<u64>>()
                })
            });
            let expected: Vec<u64> = (0..200).map(|round| 49_995_000 * round).collect();
            assert_eq!(sums, expected, "{num_threads} threads");
        }
    }

    #[test]
    fn the_other_worker_takes_the_pass_jobs_while_polling() {
        let num_taken_while_polling = AtomicUsize::new(0);
        pool(2).install(|| {
            let owner = rayon::current_thread_index();
            with_workers_polling(|| {
                for _ in 0..100 {
                    (0..2).into_par_iter().with_max_len(1).for_each(|_| {
                        std::thread::sleep(std::time::Duration::from_micros(100));
                        if rayon::current_thread_index() != owner && POLLING.get() {
                            num_taken_while_polling.fetch_add(1, Ordering::Relaxed);
                        }
                    });
                }
            })
        });
        assert!(num_taken_while_polling.load(Ordering::Relaxed) > 0);
    }

    #[test]
    fn a_panicking_pass_stops_the_helpers_and_unwinds() {
        let pool = pool(2);
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            pool.install(|| {
                with_workers_polling(|| {
                    let _: u64 = (0..1_000u64).into_par_iter().sum();
                    panic!("the model failed");
                })
            })
        }));
        assert!(outcome.is_err());
        // The pool still runs work afterwards: no worker was left polling.
        let sum: u64 = pool.install(|| with_workers_polling(|| (0..100u64).into_par_iter().sum()));
        assert_eq!(sum, 4_950);
    }

    #[test]
    fn nests_and_runs_outside_a_pool() {
        assert_eq!(with_workers_polling(|| 7), 7);
        let value = pool(2).install(|| with_workers_polling(|| with_workers_polling(|| 11)));
        assert_eq!(value, 11);
    }
}
