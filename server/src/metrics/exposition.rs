//! The Prometheus text format (0.0.4), written the way Python's prometheus_client writes it, so
//! that series match vLLM's byte for byte where it matters: `le="1.0"` rather than `le="1"`
//! (a recording rule or alert that selects `{le="1.0"}` must keep matching), and values as Go
//! prints floats (`5.0`, `1.234567e+06`). The `prometheus` crate's own encoder writes `le="1"`.

use std::fmt::Write;

use prometheus::proto::{LabelPair, Metric, MetricFamily, MetricType};

/// Content type of [`encode`]'s output, for the `/metrics` response.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

pub(super) fn encode(families: &[MetricFamily]) -> String {
    let mut out = String::new();
    for family in families {
        write_family(&mut out, family);
    }
    out
}

fn type_name(kind: MetricType) -> &'static str {
    match kind {
        MetricType::COUNTER => "counter",
        MetricType::GAUGE => "gauge",
        MetricType::HISTOGRAM => "histogram",
        MetricType::SUMMARY => "summary",
        MetricType::UNTYPED => "untyped",
    }
}

fn write_family(out: &mut String, family: &MetricFamily) {
    let name = family.name();
    let kind = family.get_field_type();
    // Writing into a String cannot fail.
    let _ = writeln!(out, "# HELP {name} {}", escape_help(family.help()));
    let _ = writeln!(out, "# TYPE {name} {}", type_name(kind));
    for metric in family.get_metric() {
        match kind {
            MetricType::COUNTER => {
                write_sample(out, name, metric, None, metric.get_counter().get_value())
            }
            MetricType::GAUGE => {
                write_sample(out, name, metric, None, metric.get_gauge().get_value())
            }
            MetricType::HISTOGRAM => write_histogram(out, name, metric),
            // Never produced here: pagoda exports no summaries or untyped series.
            MetricType::SUMMARY | MetricType::UNTYPED => {}
        }
    }
}

fn write_histogram(out: &mut String, name: &str, metric: &Metric) {
    let histogram = metric.get_histogram();
    let bucket_name = format!("{name}_bucket");
    for bucket in histogram.get_bucket() {
        let le = format_float(bucket.upper_bound());
        let count = bucket.cumulative_count() as f64;
        write_sample(out, &bucket_name, metric, Some(&le), count);
    }
    let count = histogram.get_sample_count() as f64;
    write_sample(out, &bucket_name, metric, Some("+Inf"), count);
    write_sample(out, &format!("{name}_count"), metric, None, count);
    let sum = histogram.get_sample_sum();
    write_sample(out, &format!("{name}_sum"), metric, None, sum);
}

fn write_sample(out: &mut String, name: &str, metric: &Metric, le: Option<&str>, value: f64) {
    out.push_str(name);
    let labels = metric.get_label();
    if !labels.is_empty() || le.is_some() {
        out.push('{');
        let le_pair = le.map(|le| ("le", le));
        let pairs = labels
            .iter()
            .map(LabelPair::name)
            .zip(labels.iter().map(LabelPair::value));
        for (i, (key, value)) in pairs.chain(le_pair).enumerate() {
            if i > 0 {
                out.push(',');
            }
            let _ = write!(out, "{key}=\"{}\"", escape_label_value(value));
        }
        out.push('}');
    }
    let _ = writeln!(out, " {}", format_float(value));
}

fn escape_help(text: &str) -> String {
    text.replace('\\', "\\\\").replace('\n', "\\n")
}

fn escape_label_value(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// A float as prometheus_client writes it: Python's `repr` (shortest round-trip digits, always a
/// decimal point or an exponent), switching to Go's exponent form above six integer digits.
pub(super) fn format_float(value: f64) -> String {
    if value.is_nan() {
        return "NaN".into();
    }
    if value.is_infinite() {
        return if value > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    let magnitude = value.abs();
    if value != 0.0 && !(1e-4..1e16).contains(&magnitude) {
        return python_exponent_repr(value);
    }
    let mut text = value.to_string();
    if !text.contains('.') {
        text.push_str(".0");
    }
    let dot = text.find('.').unwrap_or(text.len());
    if value > 0.0 && dot > 6 {
        // prometheus_client's floatToGoString: 1234567.0 → "1.234567e+06".
        let digits = format!("{}{}", &text[1..dot], &text[dot + 1..]);
        let mantissa = format!("{}.{digits}", &text[..1]);
        let mantissa = mantissa.trim_end_matches(['0', '.']);
        return format!("{mantissa}e+0{}", dot - 1);
    }
    text
}

/// Python's `repr` of a float outside [1e-4, 1e16): `1e-05`, `1.5e+16`.
fn python_exponent_repr(value: f64) -> String {
    let text = format!("{value:e}");
    let Some((mantissa, exponent)) = text.split_once('e') else {
        return text;
    };
    let (sign, digits) = match exponent.strip_prefix('-') {
        Some(digits) => ('-', digits),
        None => ('+', exponent),
    };
    format!("{mantissa}e{sign}{digits:0>2}")
}
