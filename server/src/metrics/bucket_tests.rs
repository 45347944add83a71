//! Buckets (vLLM's defaults, overrides, validation, flag parsing) and number formatting.
#![allow(clippy::unwrap_used)]

use super::buckets::build_1_2_5_buckets;
use super::exposition::format_float;
use super::test_support::*;
use super::*;

#[test]
fn default_buckets_are_vllms() {
    let engine = TinyEngine::start();
    let metrics = Metrics::new(config(MetricsNamespace::Vllm), (*engine).clone()).unwrap();
    let scrape = Scrape::parse(&metrics.render());
    let bounds = |name: &str| scrape.bucket_bounds(name, &labels(&[]));

    let ttft = bounds("vllm:time_to_first_token_seconds");
    assert_eq!(ttft.len(), 23);
    assert_eq!((ttft[0].as_str(), ttft[21].as_str()), ("0.001", "2560.0"));
    let itl = bounds("vllm:inter_token_latency_seconds");
    assert_eq!(
        (itl.len(), itl[0].as_str(), itl[18].as_str()),
        (20, "0.01", "80.0")
    );
    assert_eq!(itl, bounds("vllm:request_time_per_output_token_seconds"));
    let e2e = bounds("vllm:e2e_request_latency_seconds");
    assert_eq!(
        (e2e.len(), e2e[0].as_str(), e2e[20].as_str()),
        (22, "0.3", "7680.0")
    );
    for family in ["queue", "inference", "prefill", "decode"] {
        assert_eq!(e2e, bounds(&format!("vllm:request_{family}_time_seconds")));
    }
    let prompt = bounds("vllm:request_prompt_tokens");
    let want_prompt = [
        "1.0", "2.0", "5.0", "10.0", "20.0", "50.0", "100.0", "200.0", "500.0",
    ];
    assert_eq!(prompt[..9], want_prompt);
    assert_eq!(prompt[9..], ["1000.0", "+Inf"]);
    let n = bounds("vllm:request_params_n");
    assert_eq!(n, ["1.0", "2.0", "5.0", "10.0", "20.0", "+Inf"]);
}

#[test]
fn bucket_overrides_replace_the_defaults() {
    let engine = TinyEngine::start();
    let buckets = HistogramBuckets {
        ttft_s: vec![0.05, 0.5, 5.0],
        itl_s: vec![0.01, 0.1],
        e2e_s: vec![1.0, 10.0],
    };
    for namespace in NAMESPACES {
        let config = MetricsConfig {
            buckets: buckets.clone(),
            ..config(namespace)
        };
        let metrics = Metrics::new(config, (*engine).clone()).unwrap();
        metrics.record_finished(&STOPPED.build());
        let scrape = Scrape::parse(&metrics.render());
        let bounds = |base: &str| scrape.bucket_bounds(&namespace.series(base), &labels(&[]));

        let ttft = bounds("time_to_first_token_seconds");
        assert_eq!(ttft, ["0.05", "0.5", "5.0", "+Inf"]);
        let ttft_05 = labels(&[("le", "0.5")]);
        let ttft_bucket = namespace.series("time_to_first_token_seconds_bucket");
        assert_eq!(scrape.value(&ttft_bucket, &ttft_05), 1.0);
        for base in [
            "inter_token_latency_seconds",
            "request_time_per_output_token_seconds",
        ] {
            assert_eq!(bounds(base), ["0.01", "0.1", "+Inf"], "{base}");
        }
        for base in [
            "e2e_request_latency_seconds",
            "request_queue_time_seconds",
            "request_inference_time_seconds",
            "request_prefill_time_seconds",
            "request_decode_time_seconds",
        ] {
            assert_eq!(bounds(base), ["1.0", "10.0", "+Inf"], "{base}");
        }
    }
}

#[test]
fn invalid_buckets_are_rejected_with_the_flag_named() {
    let with_ttft = |ttft_s: Vec<f64>| HistogramBuckets {
        ttft_s,
        ..HistogramBuckets::default()
    };
    let cases = [
        (vec![], "no buckets given"),
        (vec![0.1, f64::NAN], "not a finite number"),
        (vec![0.1, f64::INFINITY], "not a finite number"),
        (vec![0.1, 0.1], "strictly increasing"),
        (vec![1.0, 0.5], "strictly increasing"),
    ];
    for (bounds, why) in cases {
        let message = with_ttft(bounds.clone())
            .validate()
            .unwrap_err()
            .to_string();
        assert!(message.starts_with("--ttft-buckets: "), "{message}");
        assert!(message.contains(why), "{bounds:?}: {message}");
    }
    let itl = HistogramBuckets {
        itl_s: vec![0.2, 0.1],
        ..HistogramBuckets::default()
    };
    assert!(itl
        .validate()
        .unwrap_err()
        .to_string()
        .starts_with("--itl-buckets"));
    let e2e = HistogramBuckets {
        e2e_s: vec![],
        ..HistogramBuckets::default()
    };
    assert!(e2e
        .validate()
        .unwrap_err()
        .to_string()
        .starts_with("--e2e-buckets"));

    let engine = TinyEngine::start();
    let config = MetricsConfig {
        buckets: with_ttft(vec![1.0, 0.5]),
        ..config(MetricsNamespace::Pagoda)
    };
    let error = Metrics::new(config, (*engine).clone()).unwrap_err();
    assert!(
        matches!(error, MetricsError::UnorderedBuckets { .. }),
        "{error}"
    );
}

#[test]
fn bucket_flags_parse_comma_separated_seconds() {
    assert_eq!(parse_buckets("0.05, 0.5,5").unwrap(), vec![0.05, 0.5, 5.0]);
    assert_eq!(parse_buckets("1").unwrap(), vec![1.0]);
    for bad in ["", "0.1,,1", "0.1,abc", "1,0.5", "0.1,inf"] {
        assert!(parse_buckets(bad).is_err(), "{bad:?} accepted");
    }
    let message = parse_buckets("0.1,abc").unwrap_err().to_string();
    assert!(message.contains("\"abc\""), "{message}");
}

#[test]
fn one_two_five_buckets_stop_at_max_model_len() {
    assert_eq!(
        build_1_2_5_buckets(100),
        [1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0]
    );
    assert_eq!(build_1_2_5_buckets(4096).last(), Some(&2000.0));
    assert_eq!(build_1_2_5_buckets(1), [1.0]);
    assert_eq!(build_1_2_5_buckets(0), [1.0]);
}

#[test]
fn floats_are_written_as_prometheus_client_writes_them() {
    let cases = [
        (1.0, "1.0"),
        (0.0, "0.0"),
        (0.001, "0.001"),
        (0.3, "0.3"),
        (2560.0, "2560.0"),
        (100_000.0, "100000.0"),
        (1_000_000.0, "1e+06"),
        (1_234_567.0, "1.234567e+06"),
        (2_000_000.5, "2.0000005e+06"),
        (1e-5, "1e-05"),
        (1.5e17, "1.5e+17"),
        (-2.5, "-2.5"),
        (f64::INFINITY, "+Inf"),
    ];
    for (value, want) in cases {
        assert_eq!(format_float(value), want, "{value}");
    }
}

#[test]
fn namespaces_parse_and_print() {
    for namespace in NAMESPACES {
        assert_eq!(
            namespace.to_string().parse::<MetricsNamespace>().unwrap(),
            namespace
        );
    }
    assert_eq!(MetricsNamespace::Vllm.series("x"), "vllm:x");
    assert!("VLLM".parse::<MetricsNamespace>().is_err());
    let clap = <MetricsNamespace as clap::ValueEnum>::from_str("vllm", false).unwrap();
    assert_eq!(clap, MetricsNamespace::Vllm);
}
