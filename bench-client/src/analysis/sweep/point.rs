//! What a sweep varies ([`SweepAxis`]) and what one of its runs left ([`SweepPoint`]).

/// What a sweep varies, and the values it takes.
#[derive(Debug, Clone, PartialEq)]
pub enum SweepAxis {
    /// Poisson (or gamma) arrival rates in requests per second.
    RequestRate(Vec<f64>),
    /// Closed-loop concurrency limits (requests in flight).
    Concurrency(Vec<usize>),
}

impl SweepAxis {
    /// The loads in the order given, as numbers.
    pub fn loads(&self) -> Vec<f64> {
        match self {
            SweepAxis::RequestRate(rates) => rates.clone(),
            SweepAxis::Concurrency(levels) => levels.iter().map(|&c| c as f64).collect(),
        }
    }

    /// The result key this axis sets (`request_rate` or `max_concurrency`), also used as the name
    /// of the load column in the summary files.
    pub fn key(&self) -> &'static str {
        match self {
            SweepAxis::RequestRate(_) => "request_rate",
            SweepAxis::Concurrency(_) => "max_concurrency",
        }
    }

    /// Axis label for plots, with its unit.
    pub fn label(&self) -> &'static str {
        match self {
            SweepAxis::RequestRate(_) => "Request rate (req/s)",
            SweepAxis::Concurrency(_) => "Max concurrency (requests)",
        }
    }
}

/// One finished run of a sweep: the load it ran at and its saved result.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepPoint {
    pub load: f64,
    pub result: serde_json::Value,
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn axis_names_its_key_label_and_loads() {
        let rates = SweepAxis::RequestRate(vec![1.0, 2.5]);
        assert_eq!(rates.key(), "request_rate");
        assert_eq!(rates.loads(), vec![1.0, 2.5]);
        assert!(rates.label().contains("req/s"));
        let levels = SweepAxis::Concurrency(vec![1, 8]);
        assert_eq!(levels.key(), "max_concurrency");
        assert_eq!(levels.loads(), vec![1.0, 8.0]);
    }
}
