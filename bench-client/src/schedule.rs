//! When each request is due: absolute send times in seconds from `t = 0`, computed up front from a
//! seed so that a run can be replayed and the sender never accumulates sleep drift.
//!
//! Inter-arrival gaps follow a gamma distribution with shape `k = burstiness` and scale
//! `θ = 1/(rate·k)`: the mean rate is `rate` and the coefficient of variation is `1/√k`
//! (`k = 1` is a Poisson process, `k < 1` burstier, `k → ∞` evenly spaced), as `vllm bench serve`.
//! The first request is due at `t = 0` (vLLM also waits one gap before it); times are not rescaled
//! to end at `n/rate` (vLLM does so without ramp-up), so the offered rate fluctuates like a real
//! arrival process and the report's measured rate is the one to quote.
//!
//! Ramp-up follows vLLM's `--ramp-up-strategy linear|exponential --ramp-up-start-rps
//! --ramp-up-end-rps`: with a request count, the rate for request `i` is the ramp at progress
//! `i/(n−1)` (linear in the request index, not in time). With a duration the ramp is over time
//! (rate at `t` is the ramp at `t/duration`), sampled exactly by mapping a unit-rate process
//! through the inverse of the cumulative rate.

use std::str::FromStr;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Guard against a typo (`--request-rate 1e9 --duration 3600`) allocating without bound.
const MAX_NUM_ARRIVALS: usize = 50_000_000;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScheduleError {
    #[error("invalid request rate {0:?}: expected \"inf\" or a number > 0")]
    InvalidRate(String),
    #[error("invalid burstiness {0}: expected a number > 0 (1 = Poisson)")]
    InvalidBurstiness(f64),
    #[error("invalid ramp-up: {0}")]
    InvalidRampUp(String),
    #[error("a ramp-up sets the rate itself: leave the request rate at \"inf\"")]
    RampUpWithRate,
    #[error("invalid duration {0} s: expected a finite number > 0")]
    InvalidDuration(f64),
    #[error("an infinite request rate sends unboundedly many requests in a duration")]
    UnboundedDuration,
    #[error("the schedule would exceed {MAX_NUM_ARRIVALS} requests")]
    TooManyArrivals,
}

/// Requests per second: `inf` sends everything at `t = 0`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RequestRate {
    Infinite,
    PerSecond(f64),
}

impl FromStr for RequestRate {
    type Err = ScheduleError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        if s.eq_ignore_ascii_case("inf") || s.eq_ignore_ascii_case("infinite") {
            return Ok(RequestRate::Infinite);
        }
        match s.parse::<f64>() {
            Ok(rate) if rate.is_finite() && rate > 0.0 => Ok(RequestRate::PerSecond(rate)),
            Ok(rate) if rate == f64::INFINITY => Ok(RequestRate::Infinite),
            _ => Err(ScheduleError::InvalidRate(s.to_string())),
        }
    }
}

impl std::fmt::Display for RequestRate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RequestRate::Infinite => write!(f, "inf"),
            RequestRate::PerSecond(rate) => write!(f, "{rate}"),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RampUpStrategy {
    Linear,
    Exponential,
}

impl FromStr for RampUpStrategy {
    type Err = ScheduleError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "linear" => Ok(RampUpStrategy::Linear),
            "exponential" => Ok(RampUpStrategy::Exponential),
            other => Err(ScheduleError::InvalidRampUp(format!(
                "unknown strategy {other:?} (linear or exponential)"
            ))),
        }
    }
}

/// A rate that rises from `start_rps` to `end_rps` over the run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RampUp {
    pub strategy: RampUpStrategy,
    pub start_rps: f64,
    pub end_rps: f64,
}

impl RampUp {
    /// The rate at `progress` in `[0, 1]`.
    pub fn rate_at(&self, progress: f64) -> f64 {
        match self.strategy {
            RampUpStrategy::Linear => self.start_rps + (self.end_rps - self.start_rps) * progress,
            RampUpStrategy::Exponential => {
                self.start_rps * (self.end_rps / self.start_rps).powf(progress)
            }
        }
    }

    /// The time at which `∫₀ᵗ rate = expected_count` for a ramp lasting `duration_s` (the rate
    /// stays at the ramp's curve past the end; callers stop at `duration_s`).
    fn time_of_cumulative(&self, expected_count: f64, duration_s: f64) -> f64 {
        let (start, end) = (self.start_rps, self.end_rps);
        match self.strategy {
            RampUpStrategy::Linear => {
                // Λ(t) = s·t + (e−s)·t²/(2D); the root written without cancellation.
                let a = (end - start) / (2.0 * duration_s);
                2.0 * expected_count / (start + (start * start + 4.0 * a * expected_count).sqrt())
            }
            RampUpStrategy::Exponential => {
                // Λ(t) = s·D/ln r · (r^(t/D) − 1).
                let ln_ratio = (end / start).ln();
                if ln_ratio == 0.0 {
                    return expected_count / start;
                }
                duration_s / ln_ratio * (expected_count * ln_ratio / (start * duration_s)).ln_1p()
            }
        }
    }

    fn validate(&self) -> Result<(), ScheduleError> {
        let invalid = |msg: String| Err(ScheduleError::InvalidRampUp(msg));
        let (start, end) = (self.start_rps, self.end_rps);
        // vLLM accepts a linear start of 0 but then fails on its first request (rate 0); here
        // it would make the first gaps of a counted run average `(n−1)/end` seconds.
        if !(start.is_finite() && end.is_finite() && start > 0.0) {
            return invalid(format!(
                "rates must be finite and > 0 (got {start} → {end})"
            ));
        }
        if start > end {
            return invalid(format!("start rate {start} exceeds end rate {end}"));
        }
        Ok(())
    }
}

/// A validated arrival process (build it with [`ScheduleConfig::new`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ScheduleConfig {
    rate: RequestRate,
    burstiness: f64,
    ramp_up: Option<RampUp>,
    seed: u64,
}

impl ScheduleConfig {
    /// `burstiness` is the gamma shape (> 0; `f64::INFINITY` gives evenly spaced requests). A
    /// ramp-up replaces the rate, which must then be [`RequestRate::Infinite`] (as vLLM).
    pub fn new(
        rate: RequestRate,
        burstiness: f64,
        ramp_up: Option<RampUp>,
        seed: u64,
    ) -> Result<Self, ScheduleError> {
        if let RequestRate::PerSecond(r) = rate {
            if !(r.is_finite() && r > 0.0) {
                return Err(ScheduleError::InvalidRate(r.to_string()));
            }
        }
        if burstiness.is_nan() || burstiness <= 0.0 {
            return Err(ScheduleError::InvalidBurstiness(burstiness));
        }
        if let Some(ramp) = &ramp_up {
            ramp.validate()?;
            if rate != RequestRate::Infinite {
                return Err(ScheduleError::RampUpWithRate);
            }
        }
        Ok(Self {
            rate,
            burstiness,
            ramp_up,
            seed,
        })
    }

    pub fn rate(&self) -> RequestRate {
        self.rate
    }

    pub fn burstiness(&self) -> f64 {
        self.burstiness
    }

    pub fn ramp_up(&self) -> Option<RampUp> {
        self.ramp_up
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// One inter-arrival gap of a process with unit mean rate (mean 1, CV `1/√burstiness`).
    fn unit_gap(&self, rng: &mut ChaCha8Rng) -> f64 {
        if self.burstiness.is_infinite() {
            1.0
        } else {
            sample_gamma(self.burstiness, rng) / self.burstiness
        }
    }
}

/// Send times of `num_requests` requests: nondecreasing seconds from 0, the first at 0.
pub fn arrival_times(num_requests: usize, config: &ScheduleConfig) -> Vec<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(config.seed);
    let last_index = num_requests.saturating_sub(1).max(1) as f64;
    let mut times = Vec::with_capacity(num_requests);
    let mut now_s = 0.0;
    for index in 0..num_requests {
        let rate = match (config.ramp_up, config.rate) {
            (Some(ramp), _) => ramp.rate_at(index as f64 / last_index),
            (None, RequestRate::PerSecond(rate)) => rate,
            (None, RequestRate::Infinite) => f64::INFINITY,
        };
        if index > 0 && rate.is_finite() {
            now_s += config.unit_gap(&mut rng) / rate;
        }
        times.push(now_s);
    }
    times
}

/// Send times of every request due before `duration_s` (the first at 0), for `--duration`.
pub fn arrival_times_for_duration(
    duration_s: f64,
    config: &ScheduleConfig,
) -> Result<Vec<f64>, ScheduleError> {
    if !(duration_s.is_finite() && duration_s > 0.0) {
        return Err(ScheduleError::InvalidDuration(duration_s));
    }
    let time_of = |expected_count: f64| match (config.ramp_up, config.rate) {
        (Some(ramp), _) => Ok(ramp.time_of_cumulative(expected_count, duration_s)),
        (None, RequestRate::PerSecond(rate)) => Ok(expected_count / rate),
        (None, RequestRate::Infinite) => Err(ScheduleError::UnboundedDuration),
    };
    let mut rng = ChaCha8Rng::seed_from_u64(config.seed);
    let mut times = Vec::new();
    let mut expected_count = 0.0;
    loop {
        let now_s = time_of(expected_count)?;
        if now_s >= duration_s {
            return Ok(times);
        }
        if times.len() == MAX_NUM_ARRIVALS {
            return Err(ScheduleError::TooManyArrivals);
        }
        times.push(now_s);
        expected_count += config.unit_gap(&mut rng);
    }
}

/// A Gamma(`shape`, 1) sample (Marsaglia & Tsang 2000; for `shape < 1`, the boost
/// `Gamma(k) = Gamma(k+1)·U^(1/k)`).
fn sample_gamma(shape: f64, rng: &mut impl Rng) -> f64 {
    if shape < 1.0 {
        let u: f64 = 1.0 - rng.random::<f64>();
        return sample_gamma(shape + 1.0, rng) * u.powf(1.0 / shape);
    }
    let d = shape - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        let x = standard_normal(rng);
        let v = 1.0 + c * x;
        if v <= 0.0 {
            continue;
        }
        let v = v * v * v;
        let u: f64 = 1.0 - rng.random::<f64>();
        if u < 1.0 - 0.0331 * x.powi(4) || u.ln() < 0.5 * x * x + d * (1.0 - v + v.ln()) {
            return d * v;
        }
    }
}

/// A standard normal sample (Box–Muller).
fn standard_normal(rng: &mut impl Rng) -> f64 {
    let u1: f64 = 1.0 - rng.random::<f64>(); // (0, 1]: ln is finite
    let u2: f64 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

#[cfg(test)]
mod tests;
