//! The saturation knee: the load past which more offered load stops buying throughput and only
//! buys latency.
//!
//! Definition. Take the rows sorted by load, keeping those with a positive output throughput `T`
//! and a positive latency `P` (the chosen p99 metric). For each pair of neighbours `a → b`:
//!
//! - `load_gain_pct       = 100 · (L_b − L_a) / L_a`
//! - `throughput_gain_pct = 100 · (T_b − T_a) / T_a`
//! - `gain_ratio_pct      = 100 · throughput_gain_pct / load_gain_pct` — the share of the extra
//!   load that became extra throughput (100 = throughput follows load, 0 = flat);
//! - `latency_rise_pct    = 100 · (P_b − P_a) / P_a`.
//!
//! The knee is `a` in the first pair where `gain_ratio_pct < max_gain_ratio_pct` (default 50)
//! AND `latency_rise_pct > min_latency_rise_pct` (default 20): the last load before throughput
//! flattened while tail latency climbed. Both are required, so noise in one alone (a throughput
//! dip at flat latency, a latency blip while throughput still scales) is not a knee. `None`
//! means the sweep never saturated: sweep higher.

use super::summary::SummaryRow;

/// Which p99 latency must rise for a knee.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LatencyMetric {
    /// Queueing shows first and most in TTFT.
    #[default]
    P99Ttft,
    P99Tpot,
    P99Itl,
    P99E2el,
}

impl LatencyMetric {
    pub fn of(self, row: &SummaryRow) -> Option<f64> {
        match self {
            LatencyMetric::P99Ttft => row.p99_ttft_ms,
            LatencyMetric::P99Tpot => row.p99_tpot_ms,
            LatencyMetric::P99Itl => row.p99_itl_ms,
            LatencyMetric::P99E2el => row.p99_e2el_ms,
        }
    }

    /// The result key it is read from.
    pub fn key(self) -> &'static str {
        match self {
            LatencyMetric::P99Ttft => "p99_ttft_ms",
            LatencyMetric::P99Tpot => "p99_tpot_ms",
            LatencyMetric::P99Itl => "p99_itl_ms",
            LatencyMetric::P99E2el => "p99_e2el_ms",
        }
    }
}

/// Thresholds of the knee test; see the module documentation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KneeCriteria {
    pub max_gain_ratio_pct: f64,
    pub min_latency_rise_pct: f64,
    pub latency: LatencyMetric,
}

impl Default for KneeCriteria {
    fn default() -> Self {
        Self {
            max_gain_ratio_pct: 50.0,
            min_latency_rise_pct: 20.0,
            latency: LatencyMetric::P99Ttft,
        }
    }
}

/// Where a sweep saturated, with the numbers of the step that showed it.
#[derive(Debug, Clone, PartialEq)]
pub struct Knee {
    /// The knee's load (the last one before throughput flattened).
    pub load: f64,
    pub output_throughput: f64,
    /// The next load, where the flattening was seen.
    pub next_load: f64,
    pub gain_ratio_pct: f64,
    pub latency_rise_pct: f64,
}

/// The first knee in `rows` (any order), or `None` when the sweep never saturated.
pub fn find_knee(rows: &[SummaryRow], criteria: &KneeCriteria) -> Option<Knee> {
    let mut usable: Vec<(f64, f64, f64)> = rows
        .iter()
        .filter_map(|row| {
            let throughput = row.output_throughput.filter(|t| *t > 0.0)?;
            let latency = criteria.latency.of(row).filter(|p| *p > 0.0)?;
            (row.load > 0.0).then_some((row.load, throughput, latency))
        })
        .collect();
    usable.sort_by(|a, b| a.0.total_cmp(&b.0));
    usable.windows(2).find_map(|pair| {
        let ((load_a, tput_a, lat_a), (load_b, tput_b, lat_b)) = (pair[0], pair[1]);
        if load_b <= load_a {
            return None;
        }
        let load_gain_pct = 100.0 * (load_b - load_a) / load_a;
        let gain_ratio_pct = 100.0 * (100.0 * (tput_b - tput_a) / tput_a) / load_gain_pct;
        let latency_rise_pct = 100.0 * (lat_b - lat_a) / lat_a;
        let saturated = gain_ratio_pct < criteria.max_gain_ratio_pct
            && latency_rise_pct > criteria.min_latency_rise_pct;
        saturated.then_some(Knee {
            load: load_a,
            output_throughput: tput_a,
            next_load: load_b,
            gain_ratio_pct,
            latency_rise_pct,
        })
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A synthetic sweep: throughput follows `throughput(load)`, p99 TTFT follows `ttft(load)`.
    fn curve(
        loads: &[f64],
        throughput: impl Fn(f64) -> f64,
        ttft: impl Fn(f64) -> f64,
    ) -> Vec<SummaryRow> {
        loads
            .iter()
            .map(|&load| SummaryRow {
                load,
                output_throughput: Some(throughput(load)),
                p99_ttft_ms: Some(ttft(load)),
                p99_e2el_ms: Some(1000.0 + ttft(load)),
                ..SummaryRow::default()
            })
            .collect()
    }

    const LOADS: [f64; 7] = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0];

    /// Capacity 10 req/s at 100 tokens each; queueing makes TTFT explode past capacity.
    fn saturating(load: f64) -> f64 {
        100.0 * load.min(10.0)
    }
    fn queueing(load: f64) -> f64 {
        if load <= 10.0 {
            50.0 + load
        } else {
            50.0 * (load - 9.0) * 10.0
        }
    }

    #[test]
    fn knee_is_the_last_load_before_throughput_flattens() {
        let rows = curve(&LOADS, saturating, queueing);
        let knee = find_knee(&rows, &KneeCriteria::default()).expect("a knee");
        // 8 → 16: throughput 800 → 1000 (+25%) for +100% load: ratio 25% < 50%; TTFT 58 → 3500.
        assert_eq!(knee.load, 8.0);
        assert_eq!(knee.next_load, 16.0);
        assert!((knee.gain_ratio_pct - 25.0).abs() < 1e-9);
        assert!(knee.latency_rise_pct > 1000.0);
    }

    #[test]
    fn a_linear_sweep_has_no_knee() {
        let rows = curve(&LOADS, |l| 100.0 * l, |l| 50.0 + l);
        assert_eq!(find_knee(&rows, &KneeCriteria::default()), None);
    }

    #[test]
    fn flat_throughput_at_flat_latency_is_not_a_knee() {
        // The client, not the server, limits throughput: latency never rises.
        let rows = curve(&LOADS, saturating, |_| 50.0);
        assert_eq!(find_knee(&rows, &KneeCriteria::default()), None);
    }

    #[test]
    fn a_latency_blip_while_throughput_scales_is_not_a_knee() {
        let rows = curve(
            &LOADS,
            |l| 100.0 * l,
            |l| if l == 4.0 { 200.0 } else { 50.0 },
        );
        assert_eq!(find_knee(&rows, &KneeCriteria::default()), None);
    }

    #[test]
    fn thresholds_and_metric_are_honoured() {
        // Gentle saturation: +100% load buys +60% throughput with +30% latency each step.
        let rows = curve(
            &LOADS,
            |l| 100.0 * l.powf(0.678),
            |l| 50.0 * 1.3f64.powf(l.log2()),
        );
        assert_eq!(find_knee(&rows, &KneeCriteria::default()), None);
        let strict = KneeCriteria {
            max_gain_ratio_pct: 70.0,
            ..KneeCriteria::default()
        };
        assert_eq!(find_knee(&rows, &strict).map(|k| k.load), Some(1.0));
        // p99 E2EL = 1000 + TTFT rises far less than 20%.
        let e2el = KneeCriteria {
            latency: LatencyMetric::P99E2el,
            ..strict
        };
        assert_eq!(find_knee(&rows, &e2el), None);
    }

    #[test]
    fn unsorted_and_incomplete_rows_are_handled() {
        let mut rows = curve(&LOADS, saturating, queueing);
        rows.reverse();
        rows.push(SummaryRow {
            load: 12.0,
            ..SummaryRow::default()
        });
        assert_eq!(
            find_knee(&rows, &KneeCriteria::default()).map(|k| k.load),
            Some(8.0)
        );
        assert_eq!(find_knee(&[], &KneeCriteria::default()), None);
    }
}
