//! The loads of `pagoda-bench sweep`: `--request-rates 1,2,4,8` and `--concurrencies 1,8,32`,
//! and the serve flags of each load.

use std::fmt::Display;
use std::str::FromStr;

use crate::analysis::sweep::SweepAxis;
use crate::cli::serve_args::ServeArgs;

/// `--request-rates`: distinct, finite, positive requests per second, in the order given.
#[derive(Debug, Clone, PartialEq)]
pub struct RateList(pub Vec<f64>);

/// `--concurrencies`: distinct limits of requests in flight, each at least 1, in the order given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConcurrencyList(pub Vec<usize>);

impl FromStr for RateList {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let rates = parse_list(text, "request rate", |rate: &f64| {
            rate.is_finite() && *rate > 0.0
        })?;
        Ok(Self(rates))
    }
}

impl FromStr for ConcurrencyList {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        Ok(Self(parse_list(text, "concurrency", |level: &usize| {
            *level >= 1
        })?))
    }
}

/// A comma-separated list of distinct values that each pass `valid`.
fn parse_list<T>(text: &str, what: &str, valid: fn(&T) -> bool) -> Result<Vec<T>, String>
where
    T: FromStr + PartialEq + Display,
{
    let mut values: Vec<T> = Vec::new();
    for part in text.split(',').map(str::trim) {
        let value = part
            .parse::<T>()
            .ok()
            .filter(valid)
            .ok_or_else(|| format!("{part:?} is not a valid {what} (in {text:?})"))?;
        if values.contains(&value) {
            return Err(format!("{what} {value} is given twice (in {text:?})"));
        }
        values.push(value);
    }
    Ok(values)
}

/// The serve flags of each load of `axis`: the sweep's own flags with `--request-rate` or
/// `--max-concurrency` set to the load. Returned with the load as a number, in the given order.
pub fn load_args(serve: &ServeArgs, axis: &SweepAxis) -> Vec<(f64, ServeArgs)> {
    match axis {
        SweepAxis::RequestRate(rates) => rates
            .iter()
            .map(|&rate| (rate, with_rate(serve, rate)))
            .collect(),
        SweepAxis::Concurrency(levels) => levels
            .iter()
            .map(|&level| {
                let mut args = serve.clone();
                args.max_concurrency = Some(level);
                (level as f64, args)
            })
            .collect(),
    }
}

/// `serve` with `--request-rate rate`.
pub fn with_rate(serve: &ServeArgs, rate: f64) -> ServeArgs {
    let mut args = serve.clone();
    args.request_rate = rate.to_string();
    args
}

/// The file a load's result is saved under: `request_rate-4.json`, `max_concurrency-32.json`.
pub fn point_file_name(axis_key: &str, load: f64) -> String {
    format!("{axis_key}-{load}.json")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn rate_lists_parse_and_reject_bad_values() {
        assert_eq!(
            "1, 2,4.5,8".parse::<RateList>(),
            Ok(RateList(vec![1.0, 2.0, 4.5, 8.0]))
        );
        assert_eq!("0.5".parse::<RateList>(), Ok(RateList(vec![0.5])));
        for bad in ["", "1,,2", "0", "-1", "inf", "nan", "1,x", "2,2"] {
            assert!(bad.parse::<RateList>().is_err(), "{bad:?}");
        }
        let twice = "1,2,1".parse::<RateList>().unwrap_err();
        assert!(twice.contains("given twice"), "{twice}");
    }

    #[test]
    fn concurrency_lists_parse_and_reject_bad_values() {
        assert_eq!(
            "1,8,32".parse::<ConcurrencyList>(),
            Ok(ConcurrencyList(vec![1, 8, 32]))
        );
        for bad in ["0", "1.5", "-2", "8,8", ""] {
            assert!(bad.parse::<ConcurrencyList>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn each_load_sets_its_flag_and_file_name() {
        use clap::Parser;
        #[derive(Debug, Parser)]
        struct Wrapper {
            #[command(flatten)]
            serve: ServeArgs,
        }
        let serve = Wrapper::parse_from(["x", "--max-concurrency", "4"]).serve;
        let rates = load_args(&serve, &SweepAxis::RequestRate(vec![2.0, 0.5]));
        let shown: Vec<(f64, &str, Option<usize>)> = rates
            .iter()
            .map(|(load, a)| (*load, a.request_rate.as_str(), a.max_concurrency))
            .collect();
        assert_eq!(shown, vec![(2.0, "2", Some(4)), (0.5, "0.5", Some(4))]);
        let levels = load_args(&serve, &SweepAxis::Concurrency(vec![1, 16]));
        assert_eq!(levels[1].0, 16.0);
        assert_eq!(levels[1].1.max_concurrency, Some(16));
        assert_eq!(levels[1].1.request_rate, "inf");
        assert_eq!(
            point_file_name("request_rate", 0.5),
            "request_rate-0.5.json"
        );
        assert_eq!(
            point_file_name("max_concurrency", 32.0),
            "max_concurrency-32.json"
        );
    }
}
