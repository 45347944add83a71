//! Generating many prompts on every core. Each item gets its own seed up front, so the result does
//! not depend on the number of threads.

use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicUsize, Ordering};

/// `f` over `items` on up to `available_parallelism` threads, each taking the next item when it
/// is free; results in the items' order, or an error (the first by position among those hit,
/// after which the threads stop taking items).
pub fn try_map<T, U, E>(items: &[T], f: impl Fn(&T) -> Result<U, E> + Sync) -> Result<Vec<U>, E>
where
    T: Sync,
    U: Send,
    E: Send,
{
    let num_threads = std::thread::available_parallelism()
        .map_or(1, NonZeroUsize::get)
        .min(items.len());
    if num_threads <= 1 {
        return items.iter().map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        loop {
            let index = next.fetch_add(1, Ordering::Relaxed);
            let Some(item) = items.get(index) else {
                return done;
            };
            let result = f(item);
            let failed = result.is_err();
            done.push((index, result));
            if failed {
                next.store(items.len(), Ordering::Relaxed);
                return done;
            }
        }
    };
    let mut done: Vec<(usize, Result<U, E>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..num_threads).map(|_| scope.spawn(work)).collect();
        handles
            .into_iter()
            .flat_map(|handle| {
                handle
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    });
    done.sort_unstable_by_key(|(index, _)| *index);
    done.into_iter().map(|(_, result)| result).collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn keeps_order_and_reports_errors() {
        let items: Vec<u32> = (0..1000).collect();
        let doubled = try_map(&items, |&x| Ok::<_, String>(x * 2)).unwrap();
        assert_eq!(doubled, items.iter().map(|x| x * 2).collect::<Vec<_>>());
        let failed = try_map(&items, |&x| if x == 700 { Err(x) } else { Ok(x) });
        assert_eq!(failed, Err(700));
        assert_eq!(try_map(&[] as &[u32], |&x| Ok::<_, ()>(x)), Ok(vec![]));
    }
}
