//! Known sequences in → the text exposition parsed → exact counts, sums and bucket counts.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use super::test_support::*;
use super::*;

/// STOPPED: ttft 0.5, e2e 2.5, queue 0.2, prefill 0.3, decode 2.0, inference 2.3, per output
/// token 2.0 / 4. ONE_TOKEN: ttft 1.2, e2e 1.2, queue 0.1, prefill 1.1, decode 0, inference 1.1,
/// and no time per output token.
fn assert_latencies(scrape: &Scrape, namespace: MetricsNamespace) {
    let n = |base: &str| namespace.series(base);
    let ttft = [
        ("0.25", 0.0),
        ("0.5", 1.0),
        ("1.0", 1.0),
        ("2.5", 2.0),
        ("+Inf", 2.0),
    ];
    assert_histogram(scrape, &n("time_to_first_token_seconds"), 2.0, 1.7, &ttft);
    let e2e = [("1.0", 0.0), ("1.5", 1.0), ("2.5", 2.0), ("+Inf", 2.0)];
    assert_histogram(scrape, &n("e2e_request_latency_seconds"), 2.0, 3.7, &e2e);
    let queue = [("0.3", 2.0)];
    assert_histogram(scrape, &n("request_queue_time_seconds"), 2.0, 0.3, &queue);
    let prefill = [("0.3", 1.0), ("1.0", 1.0), ("1.5", 2.0)];
    assert_histogram(
        scrape,
        &n("request_prefill_time_seconds"),
        2.0,
        1.4,
        &prefill,
    );
    let decode = [("0.3", 1.0), ("1.5", 1.0), ("2.0", 2.0)];
    assert_histogram(scrape, &n("request_decode_time_seconds"), 2.0, 2.0, &decode);
    let inference = [("1.0", 0.0), ("1.5", 1.0), ("2.5", 2.0)];
    assert_histogram(
        scrape,
        &n("request_inference_time_seconds"),
        2.0,
        3.4,
        &inference,
    );
    let tpot = [("0.4", 0.0), ("0.5", 1.0), ("+Inf", 1.0)];
    let tpot_name = n("request_time_per_output_token_seconds");
    assert_histogram(scrape, &tpot_name, 1.0, 0.5, &tpot);
}

/// STOPPED: 12 prompt tokens (4 cached), 5 generated, stop. ONE_TOKEN: 3 prompt, 1 generated,
/// length.
fn assert_sizes_and_reasons(scrape: &Scrape, namespace: MetricsNamespace) {
    let n = |base: &str| namespace.series(base);
    let prompt = [("2.0", 0.0), ("5.0", 1.0), ("20.0", 2.0), ("1000.0", 2.0)];
    assert_histogram(scrape, &n("request_prompt_tokens"), 2.0, 15.0, &prompt);
    let generation = [("1.0", 1.0), ("2.0", 1.0), ("5.0", 2.0)];
    assert_histogram(
        scrape,
        &n("request_generation_tokens"),
        2.0,
        6.0,
        &generation,
    );
    let computed = [("2.0", 0.0), ("5.0", 1.0), ("10.0", 2.0)];
    let computed_name = n("request_prefill_kv_computed_tokens");
    assert_histogram(scrape, &computed_name, 2.0, 11.0, &computed);
    let success = n("request_success_total");
    for (reason, want) in [
        ("stop", 1.0),
        ("length", 1.0),
        ("abort", 0.0),
        ("error", 0.0),
    ] {
        let l = labels(&[("finished_reason", reason)]);
        assert_eq!(scrape.value(&success, &l), want, "{success} {reason}");
    }
}

#[test]
fn finished_sequences_land_in_exact_buckets_in_both_namespaces() {
    let engine = TinyEngine::start();
    for namespace in NAMESPACES {
        let metrics = Metrics::new(config(namespace), (*engine).clone()).unwrap();
        metrics.record_finished(&STOPPED.build());
        metrics.record_finished(&ONE_TOKEN.build());
        let scrape = Scrape::parse(&metrics.render());
        assert_latencies(&scrape, namespace);
        assert_sizes_and_reasons(&scrape, namespace);
    }
}

#[test]
fn each_finished_sequence_counts_its_preemptions() {
    let engine = TinyEngine::start();
    let metrics = Metrics::new(config(MetricsNamespace::Vllm), (*engine).clone()).unwrap();
    metrics.record_finished(&STOPPED.build());
    let mut preempted = ONE_TOKEN.build();
    preempted.timings.num_preemptions = 3;
    metrics.record_finished(&preempted);
    let scrape = Scrape::parse(&metrics.render());
    let buckets = [("1.0", 1.0), ("2.0", 1.0), ("3.0", 2.0), ("20.0", 2.0)];
    assert_histogram(&scrape, "vllm:request_num_preemptions", 2.0, 3.0, &buckets);
}

#[test]
fn sequences_without_a_first_token_record_no_ttft() {
    let engine = TinyEngine::start();
    let metrics = Metrics::new(config(MetricsNamespace::Vllm), (*engine).clone()).unwrap();
    metrics.record_finished(&ABORTED_IN_QUEUE.build());
    let scheduled_then_aborted = Seq {
        scheduled_ms: Some(100),
        finished_ms: 400,
        ..ABORTED_IN_QUEUE
    };
    metrics.record_finished(&scheduled_then_aborted.build());
    let scrape = Scrape::parse(&metrics.render());

    let count = |name: &str| scrape.value(&format!("vllm:{name}_count"), &labels(&[]));
    assert_eq!(count("time_to_first_token_seconds"), 0.0);
    assert_eq!(count("request_prefill_time_seconds"), 0.0);
    assert_eq!(count("request_decode_time_seconds"), 0.0);
    assert_eq!(count("request_time_per_output_token_seconds"), 0.0);
    // Only the second was ever scheduled.
    assert_histogram(&scrape, "vllm:request_queue_time_seconds", 1.0, 0.1, &[]);
    assert_histogram(
        &scrape,
        "vllm:request_inference_time_seconds",
        1.0,
        0.3,
        &[],
    );
    assert_histogram(&scrape, "vllm:e2e_request_latency_seconds", 2.0, 3.4, &[]);
    let generation = [("1.0", 2.0)];
    assert_histogram(
        &scrape,
        "vllm:request_generation_tokens",
        2.0,
        0.0,
        &generation,
    );
    let aborts = labels(&[("finished_reason", "abort")]);
    assert_eq!(scrape.value("vllm:request_success_total", &aborts), 2.0);
}

#[test]
fn failed_sequences_count_as_error_and_record_no_latency() {
    let engine = TinyEngine::start();
    let metrics = Metrics::new(config(MetricsNamespace::Vllm), (*engine).clone()).unwrap();
    metrics.record_failed();
    metrics.record_failed();
    let scrape = Scrape::parse(&metrics.render());
    let errors = labels(&[("finished_reason", "error")]);
    assert_eq!(scrape.value("vllm:request_success_total", &errors), 2.0);
    let e2e_count = scrape.value("vllm:e2e_request_latency_seconds_count", &labels(&[]));
    assert_eq!(e2e_count, 0.0);
}

#[test]
fn inter_token_gaps_and_request_parameters() {
    let engine = TinyEngine::start();
    let metrics = Metrics::new(config(MetricsNamespace::Pagoda), (*engine).clone()).unwrap();
    for ms in [20, 200, 3000] {
        metrics.record_inter_token_latency(Duration::from_millis(ms));
    }
    metrics.record_request_params(1, 16);
    metrics.record_request_params(2, 100);
    metrics.record_max_num_generation_tokens(7);
    let scrape = Scrape::parse(&metrics.render());

    let itl = [("0.025", 1.0), ("0.2", 2.0), ("2.5", 2.0), ("5.0", 3.0)];
    assert_histogram(
        &scrape,
        "pagoda:inter_token_latency_seconds",
        3.0,
        3.22,
        &itl,
    );
    let n = [("1.0", 1.0), ("2.0", 2.0), ("20.0", 2.0)];
    assert_histogram(&scrape, "pagoda:request_params_n", 2.0, 3.0, &n);
    let max_tokens = [("10.0", 0.0), ("20.0", 1.0), ("100.0", 2.0)];
    assert_histogram(
        &scrape,
        "pagoda:request_params_max_tokens",
        2.0,
        116.0,
        &max_tokens,
    );
    let max_generation = [("5.0", 0.0), ("10.0", 1.0)];
    let name = "pagoda:request_max_num_generation_tokens";
    assert_histogram(&scrape, name, 1.0, 7.0, &max_generation);
}
