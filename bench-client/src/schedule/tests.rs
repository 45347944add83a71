//! Tests of the arrival schedule: rates, dispersion, ramp-up, determinism.
#![allow(clippy::unwrap_used)]

use super::*;

fn config(rate: f64, burstiness: f64, seed: u64) -> ScheduleConfig {
    ScheduleConfig::new(RequestRate::PerSecond(rate), burstiness, None, seed).unwrap()
}

fn ramp(strategy: RampUpStrategy, start_rps: f64, end_rps: f64) -> ScheduleConfig {
    let ramp = RampUp {
        strategy,
        start_rps,
        end_rps,
    };
    ScheduleConfig::new(RequestRate::Infinite, 1.0, Some(ramp), 7).unwrap()
}

fn gaps(times: &[f64]) -> Vec<f64> {
    times.windows(2).map(|w| w[1] - w[0]).collect()
}

fn mean_and_cv(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, var.sqrt() / mean)
}

#[test]
fn parses_rates() {
    assert_eq!("inf".parse(), Ok(RequestRate::Infinite));
    assert_eq!("Infinite".parse(), Ok(RequestRate::Infinite));
    assert_eq!("12.5".parse(), Ok(RequestRate::PerSecond(12.5)));
    for bad in ["0", "-3", "nan", "abc", ""] {
        assert!(bad.parse::<RequestRate>().is_err(), "{bad}");
    }
    assert_eq!("exponential".parse(), Ok(RampUpStrategy::Exponential));
    assert!("step".parse::<RampUpStrategy>().is_err());
}

#[test]
fn gamma_sampler_matches_mean_and_variance() {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    for shape in [0.2, 0.5, 1.0, 2.5, 4.0, 30.0] {
        let xs: Vec<f64> = (0..200_000)
            .map(|_| sample_gamma(shape, &mut rng))
            .collect();
        let (mean, cv) = mean_and_cv(&xs);
        assert!(
            (mean / shape - 1.0).abs() < 0.02,
            "shape {shape}: mean {mean}"
        );
        let expected_cv = 1.0 / shape.sqrt();
        assert!(
            (cv / expected_cv - 1.0).abs() < 0.03,
            "shape {shape}: cv {cv}"
        );
        assert!(xs.iter().all(|&x| x >= 0.0 && x.is_finite()));
    }
}

#[test]
fn mean_rate_and_dispersion_follow_rate_and_burstiness() {
    for (burstiness, seed) in [(0.5, 11), (1.0, 12), (4.0, 13)] {
        let times = arrival_times(100_000, &config(50.0, burstiness, seed));
        let (mean_gap_s, cv) = mean_and_cv(&gaps(&times));
        assert!(
            (mean_gap_s / 0.02 - 1.0).abs() < 0.02,
            "k {burstiness}: mean {mean_gap_s}"
        );
        let expected_cv = 1.0 / burstiness.sqrt();
        assert!(
            (cv / expected_cv - 1.0).abs() < 0.05,
            "k {burstiness}: cv {cv}"
        );
    }
    // The brief's sizes: 20,000 Poisson arrivals at 50/s.
    let times = arrival_times(20_000, &config(50.0, 1.0, 5));
    let (mean_gap_s, _) = mean_and_cv(&gaps(&times));
    assert!((mean_gap_s / 0.02 - 1.0).abs() < 0.02, "mean {mean_gap_s}");
}

#[test]
fn times_start_at_zero_and_never_decrease() {
    let times = arrival_times(5_000, &config(200.0, 0.3, 3));
    assert_eq!(times[0], 0.0);
    assert!(times.windows(2).all(|w| w[0] <= w[1]));
    assert!(arrival_times(0, &config(1.0, 1.0, 3)).is_empty());
    assert_eq!(arrival_times(1, &config(1.0, 1.0, 3)), vec![0.0]);
}

#[test]
fn the_seed_determines_the_schedule() {
    let a = arrival_times(1_000, &config(10.0, 2.0, 42));
    assert_eq!(a, arrival_times(1_000, &config(10.0, 2.0, 42)));
    assert_ne!(a, arrival_times(1_000, &config(10.0, 2.0, 43)));
}

#[test]
fn infinite_rate_sends_everything_at_once() {
    let infinite = ScheduleConfig::new(RequestRate::Infinite, 1.0, None, 0).unwrap();
    assert_eq!(arrival_times(100, &infinite), vec![0.0; 100]);
    assert_eq!(
        arrival_times_for_duration(10.0, &infinite),
        Err(ScheduleError::UnboundedDuration)
    );
}

#[test]
fn infinite_burstiness_spaces_requests_evenly() {
    let times = arrival_times(101, &config(4.0, f64::INFINITY, 0));
    assert!(gaps(&times).iter().all(|g| (g - 0.25).abs() < 1e-12));
}

/// Ramp-up over a request count: the gap before request `i` has mean `1/rate(i/(n−1))`, so
/// the time spent on each quarter of the requests is the sum of those means.
#[test]
fn count_ramp_up_follows_the_rate_per_request_index() {
    let n = 40_000;
    for (strategy, start, end) in [
        (RampUpStrategy::Linear, 5.0, 100.0),
        (RampUpStrategy::Exponential, 5.0, 100.0),
        (RampUpStrategy::Linear, 20.0, 20.0),
    ] {
        let schedule = ramp(strategy, start, end);
        let times = arrival_times(n, &schedule);
        let ramp = schedule.ramp_up().unwrap();
        let quarter = n / 4;
        let mut previous_rate = 0.0;
        for q in 0..4 {
            let (first, last) = (q * quarter + 1, (q + 1) * quarter - 1);
            let expected_s: f64 = (first..=last)
                .map(|i| 1.0 / ramp.rate_at(i as f64 / (n - 1) as f64))
                .sum();
            let observed_s = times[last] - times[first - 1];
            assert!(
                (observed_s / expected_s - 1.0).abs() < 0.05,
                "{strategy:?} q{q} {observed_s} {expected_s}"
            );
            let rate = (last - first + 1) as f64 / observed_s;
            if start < end {
                assert!(
                    rate > previous_rate,
                    "{strategy:?}: rate fell in quarter {q}"
                );
            }
            previous_rate = rate;
        }
    }
}

/// Ramp-up over a duration: arrivals per time bin match `∫ rate dt` over the bin.
#[test]
fn duration_ramp_up_follows_the_rate_over_time() {
    let duration_s = 100.0;
    for (strategy, start, end) in [
        (RampUpStrategy::Linear, 10.0, 2000.0),
        (RampUpStrategy::Exponential, 100.0, 3000.0),
    ] {
        let schedule = ramp(strategy, start, end);
        let times = arrival_times_for_duration(duration_s, &schedule).unwrap();
        assert!(times.windows(2).all(|w| w[0] <= w[1]));
        let ramp = schedule.ramp_up().unwrap();
        // Expected count in [a, b): midpoint-rule integral of the rate.
        let expected = |a: f64, b: f64| {
            let steps = 1_000;
            let dt = (b - a) / steps as f64;
            (0..steps)
                .map(|i| ramp.rate_at((a + (i as f64 + 0.5) * dt) / duration_s) * dt)
                .sum::<f64>()
        };
        for bin in 0..4 {
            let (a, b) = (bin as f64 * 25.0, (bin + 1) as f64 * 25.0);
            let observed = times.iter().filter(|&&t| t >= a && t < b).count() as f64;
            let want = expected(a, b);
            assert!(
                (observed / want - 1.0).abs() < 0.05,
                "{strategy:?} bin {bin}: {observed} vs {want}"
            );
        }
    }
}

#[test]
fn duration_schedule_is_the_prefix_of_the_count_schedule() {
    let schedule = config(30.0, 0.7, 9);
    let by_duration = arrival_times_for_duration(60.0, &schedule).unwrap();
    assert!(by_duration.iter().all(|&t| t < 60.0));
    let n = by_duration.len();
    assert!(
        (n as f64 / 1800.0 - 1.0).abs() < 0.1,
        "{n} arrivals in 60 s at 30/s"
    );
    let by_count = arrival_times(n + 1, &schedule);
    for (a, b) in by_duration.iter().zip(&by_count) {
        assert!((a - b).abs() < 1e-9);
    }
    assert!(by_count[n] >= 60.0);
}

#[test]
fn rejects_invalid_configurations() {
    let per_second = RequestRate::PerSecond(5.0);
    let linear = |start_rps, end_rps| {
        Some(RampUp {
            strategy: RampUpStrategy::Linear,
            start_rps,
            end_rps,
        })
    };
    let exponential = Some(RampUp {
        strategy: RampUpStrategy::Exponential,
        start_rps: 0.0,
        end_rps: 9.0,
    });
    assert!(ScheduleConfig::new(per_second, 0.0, None, 0).is_err());
    assert!(ScheduleConfig::new(per_second, f64::NAN, None, 0).is_err());
    assert!(ScheduleConfig::new(RequestRate::PerSecond(-1.0), 1.0, None, 0).is_err());
    assert_eq!(
        ScheduleConfig::new(per_second, 1.0, linear(1.0, 2.0), 0),
        Err(ScheduleError::RampUpWithRate)
    );
    assert!(ScheduleConfig::new(RequestRate::Infinite, 1.0, linear(3.0, 2.0), 0).is_err());
    assert!(ScheduleConfig::new(RequestRate::Infinite, 1.0, linear(0.0, 5.0), 0).is_err());
    assert!(ScheduleConfig::new(RequestRate::Infinite, 1.0, exponential, 0).is_err());
    let ok = config(1.0, 1.0, 0);
    assert_eq!(
        arrival_times_for_duration(0.0, &ok),
        Err(ScheduleError::InvalidDuration(0.0))
    );
    assert!(arrival_times_for_duration(f64::INFINITY, &ok).is_err());
}
