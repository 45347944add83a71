//! Goodput, as vLLM defines it (from DistServe): the rate of completed requests that meet every
//! given service-level objective (`--goodput ttft:200 tpot:50 e2el:5000`, values in ms).

use serde::{Deserialize, Serialize};

use super::error::StatsError;
use super::metric::Metric;
use crate::record::RequestRecord;

/// One service-level objective: the request's `metric` must be at most `max_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Slo {
    pub metric: Metric,
    pub max_ms: f64,
}

/// The goodput of a run or window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GoodputSummary {
    pub slos: Vec<Slo>,
    /// Successful requests that met every SLO.
    pub num_good: usize,
    /// `num_good` per second of the duration the throughputs use.
    pub request_goodput: f64,
}

/// Parses `--goodput` specs such as `["ttft:200", "tpot:50"]`: a per-request metric (any
/// [`Metric`] but the ITLs, which have many values per request), a colon, a finite number of
/// milliseconds ≥ 0. A metric given twice is an error (vLLM silently keeps the last one).
pub fn parse_goodput(specs: &[String]) -> Result<Vec<Slo>, StatsError> {
    let mut slos: Vec<Slo> = Vec::with_capacity(specs.len());
    for spec in specs {
        let invalid = |reason: &str| StatsError::InvalidSlo {
            spec: spec.clone(),
            reason: reason.to_string(),
        };
        let (name, value) = spec
            .split_once(':')
            .ok_or_else(|| invalid("expected METRIC:MILLISECONDS, e.g. ttft:200"))?;
        let metric = Metric::parse(name)?;
        if !metric.is_per_request() {
            return Err(invalid("ITLs have many values per request; use tpot"));
        }
        let max_ms: f64 = value
            .trim()
            .parse()
            .map_err(|_| invalid("the value is not a number of milliseconds"))?;
        if !max_ms.is_finite() || max_ms < 0.0 {
            return Err(invalid("the value must be a finite number ≥ 0"));
        }
        if slos.iter().any(|slo| slo.metric == metric) {
            return Err(invalid("this metric already has an SLO"));
        }
        slos.push(Slo { metric, max_ms });
    }
    Ok(slos)
}

/// Whether a successful request meets every SLO (`value ≤ max`, as vLLM's `s >= r`). As in
/// vLLM, a request with at most one output token has TPOT 0 for this purpose. A request lacking
/// any other SLO metric (no first token for a TTFT SLO) does not meet it: vLLM would count its
/// default value 0 as met.
pub fn meets_slos(record: &RequestRecord, slos: &[Slo]) -> bool {
    record.is_success()
        && slos.iter().all(|slo| {
            let value_s = match slo.metric {
                Metric::Tpot if record.output_tokens <= 1 => Some(0.0),
                metric => metric.request_value_s(record),
            };
            value_s.is_some_and(|v| v * 1000.0 <= slo.max_ms)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::ErrorKind;
    use crate::stats::test_records::{failed, streamed};

    fn specs(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn parses_vllm_style_specs() {
        let slos = parse_goodput(&specs(&["ttft:200", "tpot:12.5", "e2el:5000"])).expect("valid");
        assert_eq!(
            slos,
            vec![
                Slo {
                    metric: Metric::Ttft,
                    max_ms: 200.0
                },
                Slo {
                    metric: Metric::Tpot,
                    max_ms: 12.5
                },
                Slo {
                    metric: Metric::E2el,
                    max_ms: 5000.0
                },
            ]
        );
        assert!(parse_goodput(&[]).expect("empty is fine").is_empty());
    }

    #[test]
    fn rejects_bad_specs() {
        for bad in [
            "ttft",
            "ttft:abc",
            "ttft:-1",
            "ttft:inf",
            "itl:20",
            "latency:5",
        ] {
            assert!(parse_goodput(&specs(&[bad])).is_err(), "{bad} accepted");
        }
        assert!(parse_goodput(&specs(&["ttft:1", "ttft:2"])).is_err());
    }

    #[test]
    fn counts_requests_meeting_all_slos() {
        let slos = parse_goodput(&specs(&["ttft:250", "tpot:125"])).expect("valid");
        // TTFT 250 ms, TPOT (1.5 - 0.25) / 9 = 139 ms: fails TPOT.
        let slow_decode = streamed(0, 0.0, 0.0, &[0.25], 1.5, 10);
        // TTFT 250 ms, TPOT 0.75 / 9 = 83 ms: good.
        let good = streamed(1, 0.0, 0.0, &[0.25], 1.0, 10);
        // TTFT 500 ms: fails TTFT.
        let slow_start = streamed(2, 0.0, 0.0, &[0.5], 0.75, 2);
        // One token: TPOT counts as 0, TTFT 125 ms: good.
        let one_token = streamed(3, 0.0, 0.0, &[0.125], 0.25, 1);
        // Exactly on both SLOs (TTFT 250 ms, TPOT 125 ms) is good (≤).
        let on_the_line = streamed(4, 0.0, 0.0, &[0.25], 0.375, 2);
        let error = failed(5, 0.0, 0.01, ErrorKind::Connection);
        let no_token = streamed(6, 0.0, 0.0, &[], 0.5, 0);
        let verdicts: Vec<bool> = [
            &slow_decode,
            &good,
            &slow_start,
            &one_token,
            &on_the_line,
            &error,
            &no_token,
        ]
        .iter()
        .map(|r| meets_slos(r, &slos))
        .collect();
        assert_eq!(verdicts, vec![false, true, false, true, true, false, false]);
    }
}
