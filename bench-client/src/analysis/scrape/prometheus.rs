//! A small parser of the Prometheus text exposition format (version 0.0.4, and the parts of
//! OpenMetrics a server may mix in: `# EOF`, `_created` samples).
//!
//! Samples are grouped into families: a `# TYPE name histogram` family owns `name_bucket`,
//! `name_sum`, `name_count` (and `name_created`); a counter family owns `name_total`. A sample no
//! `# TYPE` announced is its own untyped family. A line that cannot be parsed is skipped and
//! counted, so one odd series never loses a whole scrape.

use std::collections::BTreeMap;

use super::histogram::Histogram;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricKind {
    Counter,
    Gauge,
    Histogram,
    Summary,
    Untyped,
}

impl MetricKind {
    fn parse(text: &str) -> Self {
        match text {
            "counter" => Self::Counter,
            "gauge" => Self::Gauge,
            "histogram" | "gaugehistogram" => Self::Histogram,
            "summary" => Self::Summary,
            _ => Self::Untyped,
        }
    }

    /// The sample-name suffixes a family of this kind owns (besides its bare name).
    fn suffixes(self) -> &'static [&'static str] {
        match self {
            Self::Counter => &["_total", "_created"],
            Self::Histogram => &["_bucket", "_sum", "_count", "_created"],
            Self::Summary => &["_sum", "_count", "_created"],
            Self::Gauge | Self::Untyped => &[],
        }
    }
}

/// One sample line.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// The full sample name (`…_bucket`, `…_total`).
    pub name: String,
    pub labels: Vec<(String, String)>,
    pub value: f64,
}

impl Sample {
    pub fn label(&self, name: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Family {
    pub kind: MetricKind,
    pub help: Option<String>,
    pub samples: Vec<Sample>,
}

/// One parsed scrape.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Exposition {
    pub families: BTreeMap<String, Family>,
    /// Lines that could not be parsed.
    pub num_skipped_lines: usize,
}

impl Exposition {
    pub fn parse(text: &str) -> Self {
        let mut exposition = Self::default();
        for line in text.lines() {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let parsed = match line.strip_prefix('#') {
                Some(comment) => exposition.comment(comment),
                None => exposition.sample(line),
            };
            if parsed.is_none() {
                exposition.num_skipped_lines += 1;
            }
        }
        exposition
    }

    /// `# TYPE name kind`, `# HELP name text`; other comments are ignored.
    fn comment(&mut self, comment: &str) -> Option<()> {
        let mut words = comment.trim_start().splitn(3, ' ');
        let keyword = words.next()?;
        if keyword != "TYPE" && keyword != "HELP" {
            return Some(());
        }
        let name = words.next()?;
        let rest = words.next().unwrap_or("").trim();
        let family = self.families.entry(name.to_string()).or_insert(Family {
            kind: MetricKind::Untyped,
            help: None,
            samples: Vec::new(),
        });
        if keyword == "TYPE" {
            family.kind = MetricKind::parse(rest);
        } else {
            family.help = Some(unescape(rest));
        }
        Some(())
    }

    fn sample(&mut self, line: &str) -> Option<()> {
        let sample = parse_sample(line)?;
        let family_name = self.family_of(&sample.name);
        self.families
            .entry(family_name)
            .or_insert(Family {
                kind: MetricKind::Untyped,
                help: None,
                samples: Vec::new(),
            })
            .samples
            .push(sample);
        Some(())
    }

    /// The family a sample name belongs to.
    fn family_of(&self, sample_name: &str) -> String {
        if self.families.contains_key(sample_name) {
            return sample_name.to_string();
        }
        for (name, family) in &self.families {
            if let Some(suffix) = sample_name.strip_prefix(name.as_str()) {
                if family.kind.suffixes().contains(&suffix) {
                    return name.clone();
                }
            }
        }
        sample_name.to_string()
    }

    /// The sum over all label sets of the samples named exactly `sample_name` (a counter's
    /// `…_total`, a gauge's name); `None` when there are none.
    pub fn sum(&self, sample_name: &str) -> Option<f64> {
        let mut samples = self.samples_named(sample_name).peekable();
        samples.peek()?;
        Some(samples.map(|s| s.value).sum())
    }

    /// Every sample named `sample_name`, whatever its family.
    pub fn samples_named<'a>(&'a self, sample_name: &'a str) -> impl Iterator<Item = &'a Sample> {
        let family = self.family_of(sample_name);
        self.families
            .get(&family)
            .into_iter()
            .flat_map(|f| f.samples.iter())
            .filter(move |s| s.name == sample_name)
    }

    /// The histogram family `name`, its label sets merged (bucket counts, sums and counts added
    /// per bound); `None` when it has no buckets.
    pub fn histogram(&self, name: &str) -> Option<Histogram> {
        let bucket_name = format!("{name}_bucket");
        let mut buckets: Vec<(f64, f64)> = Vec::new();
        for sample in self.samples_named(&bucket_name) {
            let le = parse_value(sample.label("le")?)?;
            match buckets.iter_mut().find(|(bound, _)| *bound == le) {
                Some((_, count)) => *count += sample.value,
                None => buckets.push((le, sample.value)),
            }
        }
        if buckets.is_empty() {
            return None;
        }
        buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
        Some(Histogram {
            buckets,
            sum: self.sum(&format!("{name}_sum")).unwrap_or(0.0),
            count: self.sum(&format!("{name}_count")).unwrap_or(0.0),
        })
    }

    /// Names of all families.
    pub fn family_names(&self) -> impl Iterator<Item = &str> {
        self.families.keys().map(String::as_str)
    }
}

/// `name{label="value",…} value [timestamp]`.
fn parse_sample(line: &str) -> Option<Sample> {
    let name_end = line.find(|c: char| c == '{' || c.is_whitespace())?;
    let name = &line[..name_end];
    if name.is_empty() {
        return None;
    }
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if let Some(after_brace) = rest.strip_prefix('{') {
        let (parsed, after_labels) = parse_labels(after_brace)?;
        labels = parsed;
        rest = after_labels;
    }
    let value = parse_value(rest.split_whitespace().next()?)?;
    Some(Sample {
        name: name.to_string(),
        labels,
        value,
    })
}

/// The labels after `{`; returns them and the text after the closing `}`.
fn parse_labels(mut text: &str) -> Option<(Vec<(String, String)>, &str)> {
    let mut labels = Vec::new();
    loop {
        text = text.trim_start();
        if let Some(rest) = text.strip_prefix('}') {
            return Some((labels, rest));
        }
        let eq = text.find('=')?;
        let key = text[..eq].trim().to_string();
        let quoted = text[eq + 1..].trim_start().strip_prefix('"')?;
        let (value, after) = parse_quoted(quoted)?;
        labels.push((key, value));
        text = after.trim_start();
        text = text.strip_prefix(',').unwrap_or(text);
    }
}

/// A label value after its opening quote, with `\\`, `\"` and `\n` escapes; returns the value
/// and the text after the closing quote.
fn parse_quoted(text: &str) -> Option<(String, &str)> {
    let mut value = String::new();
    let mut chars = text.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((value, &text[i + 1..])),
            '\\' => match chars.next()?.1 {
                'n' => value.push('\n'),
                other => value.push(other),
            },
            other => value.push(other),
        }
    }
    None
}

/// A sample value or `le` bound: Go's float syntax, `+Inf`, `-Inf`, `NaN`.
pub fn parse_value(text: &str) -> Option<f64> {
    match text {
        "+Inf" | "Inf" | "+inf" | "inf" => Some(f64::INFINITY),
        "-Inf" | "-inf" => Some(f64::NEG_INFINITY),
        "NaN" | "nan" => Some(f64::NAN),
        _ => text.parse().ok(),
    }
}

fn unescape(text: &str) -> String {
    text.replace("\\n", "\n").replace("\\\\", "\\")
}

/// A counter's increase from `earlier` (`None`: not exported then, so from zero) to `later`. A
/// counter that went down was reset (a server restart): the later value alone.
pub(super) fn counter_delta(earlier: Option<f64>, later: f64) -> f64 {
    let earlier = earlier.unwrap_or(0.0);
    if later >= earlier {
        later - earlier
    } else {
        later
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = r#"# HELP vllm:num_requests_waiting Number of requests waiting.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="m"} 3.0
# HELP vllm:num_preemptions_total Cumulative preemptions.
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{engine="0",model_name="m"} 7.0
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{engine="0",model_name="m",le="0.1"} 1.0
vllm:time_to_first_token_seconds_bucket{engine="0",model_name="m",le="1.0"} 4.0
vllm:time_to_first_token_seconds_bucket{engine="0",model_name="m",le="+Inf"} 5.0
vllm:time_to_first_token_seconds_count{engine="0",model_name="m"} 5.0
vllm:time_to_first_token_seconds_sum{engine="0",model_name="m"} 3.25
# TYPE http_requests counter
http_requests_total{handler="/v1/x",status="2xx"} 2 1712345678000
http_requests_total{handler="/v1/y",status="4xx"} 1
weird_untyped{path="a \"quoted\" \\ path\nx",} 1e-3
this line is broken {
# EOF
"#;

    #[test]
    fn families_labels_and_values() {
        let exposition = Exposition::parse(TEXT);
        assert_eq!(exposition.num_skipped_lines, 1);
        let waiting = &exposition.families["vllm:num_requests_waiting"];
        assert_eq!(waiting.kind, MetricKind::Gauge);
        assert_eq!(waiting.help.as_deref(), Some("Number of requests waiting."));
        assert_eq!(waiting.samples[0].label("model_name"), Some("m"));
        assert_eq!(exposition.sum("vllm:num_requests_waiting"), Some(3.0));
        assert_eq!(exposition.sum("vllm:num_preemptions_total"), Some(7.0));
        // A counter family named without `_total` owns the `_total` samples.
        assert_eq!(exposition.families["http_requests"].samples.len(), 2);
        assert_eq!(exposition.sum("http_requests_total"), Some(3.0));
        let weird = &exposition.families["weird_untyped"];
        assert_eq!(weird.kind, MetricKind::Untyped);
        assert_eq!(
            weird.samples[0].label("path"),
            Some("a \"quoted\" \\ path\nx")
        );
        assert_eq!(weird.samples[0].value, 0.001);
        assert_eq!(exposition.sum("absent"), None);
    }

    #[test]
    fn histogram_family() {
        let exposition = Exposition::parse(TEXT);
        let family = &exposition.families["vllm:time_to_first_token_seconds"];
        assert_eq!(family.kind, MetricKind::Histogram);
        assert_eq!(family.samples.len(), 5);
        let histogram = exposition
            .histogram("vllm:time_to_first_token_seconds")
            .expect("a histogram");
        assert_eq!(
            histogram.buckets,
            [(0.1, 1.0), (1.0, 4.0), (f64::INFINITY, 5.0)]
        );
        assert_eq!(histogram.count, 5.0);
        assert_eq!(histogram.sum, 3.25);
    }

    #[test]
    fn label_sets_are_merged() {
        let text = "# TYPE h histogram\n\
                    h_bucket{model=\"a\",le=\"1\"} 1\nh_bucket{model=\"a\",le=\"+Inf\"} 2\n\
                    h_bucket{model=\"b\",le=\"1\"} 3\nh_bucket{model=\"b\",le=\"+Inf\"} 3\n\
                    h_sum{model=\"a\"} 1\nh_sum{model=\"b\"} 2\nh_count{model=\"a\"} 2\nh_count{model=\"b\"} 3\n";
        let histogram = Exposition::parse(text).histogram("h").expect("a histogram");
        assert_eq!(histogram.buckets, [(1.0, 4.0), (f64::INFINITY, 5.0)]);
        assert_eq!((histogram.sum, histogram.count), (3.0, 5.0));
    }

    #[test]
    fn special_values() {
        assert_eq!(parse_value("+Inf"), Some(f64::INFINITY));
        assert_eq!(parse_value("-Inf"), Some(f64::NEG_INFINITY));
        assert!(parse_value("NaN").is_some_and(f64::is_nan));
        assert_eq!(parse_value("1.234567e+06"), Some(1_234_567.0));
        assert_eq!(parse_value("x"), None);
    }
}
