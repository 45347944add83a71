//! The waiting-queue cap (`--max-waiting-requests`): a request is refused with 429 when that many
//! sequences are already waiting for their first token.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// A request refused because the waiting queue is full (the API answers 429 with
/// `Retry-After`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueFull {
    pub max_waiting_requests: usize,
}

/// Counts sequences submitted that have not produced their first token yet.
#[derive(Debug, Clone)]
pub struct Admission {
    num_waiting: Arc<AtomicUsize>,
    max_waiting_requests: usize,
}

/// One waiting sequence; released on its first token or when dropped.
#[derive(Debug)]
pub struct WaitingSlot {
    num_waiting: Arc<AtomicUsize>,
}

impl Drop for WaitingSlot {
    fn drop(&mut self) {
        self.num_waiting.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Admission {
    pub fn new(max_waiting_requests: usize) -> Self {
        Self {
            num_waiting: Arc::new(AtomicUsize::new(0)),
            max_waiting_requests,
        }
    }

    pub fn num_waiting(&self) -> usize {
        self.num_waiting.load(Ordering::Acquire)
    }

    /// Reserves `n` slots at once (all the choices of one request), or refuses.
    pub fn try_admit(&self, n: usize) -> Result<Vec<WaitingSlot>, QueueFull> {
        let admitted =
            self.num_waiting
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |current| {
                    let next = current.checked_add(n)?;
                    (next <= self.max_waiting_requests || current == 0).then_some(next)
                });
        match admitted {
            Ok(_) => Ok((0..n)
                .map(|_| WaitingSlot {
                    num_waiting: Arc::clone(&self.num_waiting),
                })
                .collect()),
            Err(_) => Err(QueueFull {
                max_waiting_requests: self.max_waiting_requests,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::openai::error::ApiError;

    #[test]
    fn refuses_past_the_cap_and_frees_slots_on_drop() {
        let admission = Admission::new(2);
        let first = admission.try_admit(2).expect("fits");
        assert_eq!(admission.num_waiting(), 2);
        let refused = admission.try_admit(1).expect_err("full");
        assert_eq!(ApiError::from(refused).status.as_u16(), 429);
        drop(first);
        assert_eq!(admission.num_waiting(), 0);
        assert!(admission.try_admit(1).is_ok());
    }

    #[test]
    fn an_empty_queue_always_admits_one_request() {
        let admission = Admission::new(1);
        let slots = admission
            .try_admit(4)
            .expect("n larger than the cap still runs alone");
        assert_eq!(slots.len(), 4);
        assert!(admission.try_admit(1).is_err());
    }
}
