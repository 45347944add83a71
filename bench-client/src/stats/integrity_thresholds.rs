//! [`IntegrityThresholds`]: when the send-integrity check (see `integrity`) judges that the
//! client fell behind.

use serde::{Deserialize, Serialize};

/// When the client is judged to have fallen behind.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct IntegrityThresholds {
    /// Achieved ÷ scheduled request rate below this fails (default 0.99).
    pub min_rate_ratio: f64,
    /// A p99 client lag above this fails (default 10 ms: a client with spare CPU sends within
    /// well under a millisecond).
    pub max_p99_send_lag_ms: f64,
    /// Any client lag above this fails (default 100 ms: a stall that shifts the schedule).
    pub max_send_lag_ms: f64,
}

impl Default for IntegrityThresholds {
    fn default() -> Self {
        IntegrityThresholds {
            min_rate_ratio: 0.99,
            max_p99_send_lag_ms: 10.0,
            max_send_lag_ms: 100.0,
        }
    }
}
