//! A strict reader of the Prometheus text format (0.0.4), for asserting on `/metrics` scrapes.
//! Any line it cannot read fails the test: it doubles as a check of the exposition.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Write;
use std::process::{Command, Stdio};

/// One sample line: `name{labels} value`.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

impl Sample {
    /// Whether every `(key, value)` pair is among the sample's labels.
    pub fn has_labels(&self, wanted: &[(&str, &str)]) -> bool {
        wanted
            .iter()
            .all(|(k, v)| self.labels.get(*k).map(String::as_str) == Some(*v))
    }
}

/// A parsed scrape.
#[derive(Debug, Clone, Default)]
pub struct Scrape {
    pub text: String,
    pub samples: Vec<Sample>,
    /// `# TYPE` per family name.
    pub types: HashMap<String, String>,
    /// `# HELP` per family name.
    pub helps: HashMap<String, String>,
}

/// A histogram series: its buckets in order (the `le` text as exported), count and sum.
#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    pub buckets: Vec<(String, f64)>,
    pub count: f64,
    pub sum: f64,
}

impl Histogram {
    /// The cumulative count of the bucket whose `le` is exactly `le` (as exported).
    pub fn bucket(&self, le: &str) -> f64 {
        self.buckets
            .iter()
            .find(|(bound, _)| bound == le)
            .unwrap_or_else(|| panic!("no bucket le={le:?} in {:?}", self.buckets))
            .1
    }
}

impl Scrape {
    /// Parses a whole exposition; panics, naming the line, on anything malformed.
    pub fn parse(text: &str) -> Self {
        let mut scrape = Scrape {
            text: text.to_string(),
            ..Scrape::default()
        };
        for (number, line) in text.lines().enumerate() {
            let context = || format!("line {}: {line:?}", number + 1);
            if line.is_empty() {
                continue;
            }
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest
                    .split_once(' ')
                    .unwrap_or_else(|| panic!("{}", context()));
                let known = ["counter", "gauge", "histogram", "summary", "untyped"];
                assert!(known.contains(&kind), "unknown type at {}", context());
                let previous = scrape.types.insert(name.to_string(), kind.to_string());
                assert!(previous.is_none(), "second TYPE at {}", context());
            } else if let Some(rest) = line.strip_prefix("# HELP ") {
                let (name, help) = rest.split_once(' ').unwrap_or((rest, ""));
                scrape.helps.insert(name.to_string(), help.to_string());
            } else if line.starts_with('#') {
                continue;
            } else {
                let sample = parse_sample(line).unwrap_or_else(|e| panic!("{e} at {}", context()));
                scrape.samples.push(sample);
            }
        }
        scrape
    }

    /// The samples named `name` carrying every pair of `labels`.
    pub fn series<'a>(
        &'a self,
        name: &'a str,
        labels: &'a [(&str, &str)],
    ) -> impl Iterator<Item = &'a Sample> + 'a {
        self.samples
            .iter()
            .filter(move |s| s.name == name && s.has_labels(labels))
    }

    /// The sum over [`Scrape::series`]; 0 when there is none (a counter not created yet).
    pub fn sum(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.series(name, labels).map(|s| s.value).sum()
    }

    /// The value of the one sample named `name` with `labels`; panics if there is not exactly one.
    pub fn value(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        let found: Vec<&Sample> = self.series(name, labels).collect();
        assert_eq!(
            found.len(),
            1,
            "expected one {name}{labels:?}, found {found:?}"
        );
        found[0].value
    }

    /// Every sample name.
    pub fn names(&self) -> BTreeSet<&str> {
        self.samples.iter().map(|s| s.name.as_str()).collect()
    }

    /// `after − before` of the samples named `name` with `labels` (summed).
    pub fn delta(&self, before: &Scrape, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.sum(name, labels) - before.sum(name, labels)
    }

    /// The label sets of histogram `base` (read from its `_count` samples).
    pub fn histogram_label_sets(&self, base: &str) -> Vec<BTreeMap<String, String>> {
        let count = format!("{base}_count");
        self.samples
            .iter()
            .filter(|s| s.name == count)
            .map(|s| s.labels.clone())
            .collect()
    }

    /// Checks every histogram series of the scrape (see [`Scrape::histogram`]); returns how many.
    pub fn check_all_histograms(&self) -> usize {
        let mut num_checked = 0;
        for (base, kind) in &self.types {
            if kind != "histogram" {
                continue;
            }
            for labels in self.histogram_label_sets(base) {
                let pairs: Vec<(&str, &str)> = labels
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_str()))
                    .collect();
                self.histogram(base, &pairs);
                num_checked += 1;
            }
        }
        num_checked
    }

    /// Every sample belongs to a family declared with `# TYPE` and `# HELP` (a histogram's
    /// `_bucket`, `_count` and `_sum` to the histogram's family).
    pub fn check_families_declared(&self) {
        for sample in &self.samples {
            let family = ["_bucket", "_count", "_sum"]
                .iter()
                .filter_map(|suffix| sample.name.strip_suffix(suffix))
                .find(|base| self.types.get(*base).map(String::as_str) == Some("histogram"))
                .unwrap_or(&sample.name);
            assert!(
                self.types.contains_key(family),
                "{} has no # TYPE",
                sample.name
            );
            let help = self.helps.get(family).map(String::as_str).unwrap_or("");
            assert!(!help.is_empty(), "{} has no # HELP", sample.name);
        }
    }

    /// The histogram `base` (without `_bucket`) with `labels`, checked: buckets in increasing
    /// `le` order, cumulative (never decreasing), ending in `+Inf` equal to `_count`.
    pub fn histogram(&self, base: &str, labels: &[(&str, &str)]) -> Histogram {
        assert_eq!(
            self.types.get(base).map(String::as_str),
            Some("histogram"),
            "{base} is not declared a histogram"
        );
        let bucket_name = format!("{base}_bucket");
        let buckets: Vec<(String, f64)> = self
            .series(&bucket_name, labels)
            .map(|s| {
                (
                    s.labels.get("le").cloned().expect("a bucket has le"),
                    s.value,
                )
            })
            .collect();
        assert!(!buckets.is_empty(), "no buckets for {base}{labels:?}");
        let bounds: Vec<f64> = buckets
            .iter()
            .map(|(le, _)| parse_value(le).expect("le is a number"))
            .collect();
        assert!(
            bounds.windows(2).all(|w| w[0] < w[1]),
            "{base}{labels:?}: bucket bounds not strictly increasing: {buckets:?}"
        );
        assert!(
            buckets.windows(2).all(|w| w[0].1 <= w[1].1),
            "{base}{labels:?}: bucket counts not cumulative: {buckets:?}"
        );
        let (last_le, last_count) = buckets.last().cloned().expect("non-empty");
        assert_eq!(
            last_le, "+Inf",
            "{base}{labels:?}: the last bucket is not +Inf"
        );
        let count = self.value(&format!("{base}_count"), labels);
        let sum = self.value(&format!("{base}_sum"), labels);
        assert_eq!(last_count, count, "{base}{labels:?}: +Inf bucket != _count");
        Histogram {
            buckets,
            count,
            sum,
        }
    }
}

fn parse_value(text: &str) -> Result<f64, String> {
    match text {
        "+Inf" => Ok(f64::INFINITY),
        "-Inf" => Ok(f64::NEG_INFINITY),
        "NaN" => Ok(f64::NAN),
        _ => text
            .parse::<f64>()
            .map_err(|e| format!("bad value {text:?}: {e}")),
    }
}

fn is_name_char(c: char, first: bool) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == ':' || (!first && c.is_ascii_digit())
}

fn parse_sample(line: &str) -> Result<Sample, String> {
    let name_end = line
        .char_indices()
        .find(|&(i, c)| !is_name_char(c, i == 0))
        .map(|(i, _)| i)
        .unwrap_or(line.len());
    let name = &line[..name_end];
    if name.is_empty() {
        return Err("no metric name".into());
    }
    let mut rest = &line[name_end..];
    let mut labels = BTreeMap::new();
    if let Some(after_brace) = rest.strip_prefix('{') {
        let (parsed, remaining) = parse_labels(after_brace)?;
        labels = parsed;
        rest = remaining;
    }
    let rest = rest.strip_prefix(' ').ok_or("no space before the value")?;
    let mut fields = rest.split(' ');
    let value = parse_value(fields.next().ok_or("no value")?)?;
    if let Some(timestamp) = fields.next() {
        timestamp
            .parse::<i64>()
            .map_err(|e| format!("bad timestamp: {e}"))?;
    }
    if fields.next().is_some() {
        return Err("trailing fields".into());
    }
    Ok(Sample {
        name: name.to_string(),
        labels,
        value,
    })
}

/// Reads `key="value",...}`; returns the labels and what follows the `}`.
fn parse_labels(mut text: &str) -> Result<(BTreeMap<String, String>, &str), String> {
    let mut labels = BTreeMap::new();
    loop {
        if let Some(rest) = text.strip_prefix('}') {
            return Ok((labels, rest));
        }
        let (key, rest) = text.split_once("=\"").ok_or("label without =\"")?;
        if key.is_empty()
            || !key
                .chars()
                .enumerate()
                .all(|(i, c)| c != ':' && is_name_char(c, i == 0))
        {
            return Err(format!("bad label name {key:?}"));
        }
        let mut value = String::new();
        let mut chars = rest.char_indices();
        let end = loop {
            match chars.next() {
                Some((_, '\\')) => match chars.next() {
                    Some((_, 'n')) => value.push('\n'),
                    Some((_, '\\')) => value.push('\\'),
                    Some((_, '"')) => value.push('"'),
                    other => return Err(format!("bad escape {other:?}")),
                },
                Some((i, '"')) => break i,
                Some((_, c)) => value.push(c),
                None => return Err("unterminated label value".into()),
            }
        };
        if labels.insert(key.to_string(), value).is_some() {
            return Err(format!("label {key:?} twice"));
        }
        text = &rest[end + 1..];
        text = text.strip_prefix(',').unwrap_or(text);
    }
}

/// `promtool check metrics` on a scrape: its complaints, one per line.
pub fn promtool_complaints(exposition: &str) -> (Option<i32>, Vec<String>) {
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(exposition.as_bytes())
        .expect("promtool reads the exposition");
    let output = child.wait_with_output().expect("promtool finishes");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (
        output.status.code(),
        text.lines()
            .map(str::to_string)
            .filter(|l| !l.trim().is_empty())
            .collect(),
    )
}
