#![allow(clippy::unwrap_used)]

use super::*;
use serde_json::json;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

fn ten_million_a_day() -> CapacityInputs {
    CapacityInputs {
        requests_per_day: 10_000_000.0,
        peak_factor: 3.0,
        headroom_fraction: 0.2,
        per_gpu_requests_per_s: 20.0,
    }
}

#[test]
fn gpus_for_ten_million_requests_a_day() {
    // 1e7 / 86400 = 115.7407 req/s; × 3 = 347.2222; 20 × 0.8 = 16; 347.2222 / 16 = 21.70 → 22.
    let plan = plan_capacity(ten_million_a_day()).unwrap();
    assert!(close(plan.avg_requests_per_s, 115.740_740_740_740_74));
    assert!(close(plan.peak_requests_per_s, 347.222_222_222_222_2));
    assert!(close(plan.usable_per_gpu_requests_per_s, 16.0));
    assert!(close(plan.exact_num_gpus, 21.701_388_888_888_89));
    assert_eq!(plan.num_gpus, 22);
    let text = plan.to_text();
    assert!(
        text.contains("= 115.741 req/s") && text.contains("ceil(21.701) = 22"),
        "{text}"
    );
    assert_eq!(plan.to_json()["num_gpus"], 22);
}

#[test]
fn exact_fits_do_not_round_up_and_zero_volume_needs_none() {
    // 1,728,000 req/day = 20 req/s; × 2 = 40; 25 × 0.8 = 20 → exactly 2 GPUs.
    let inputs = CapacityInputs {
        requests_per_day: 1_728_000.0,
        peak_factor: 2.0,
        headroom_fraction: 0.2,
        per_gpu_requests_per_s: 25.0,
    };
    assert_eq!(plan_capacity(inputs).unwrap().num_gpus, 2);
    let idle = CapacityInputs {
        requests_per_day: 0.0,
        ..inputs
    };
    assert_eq!(plan_capacity(idle).unwrap().num_gpus, 0);
}

#[test]
fn invalid_capacity_inputs_are_rejected() {
    let base = ten_million_a_day();
    for inputs in [
        CapacityInputs {
            peak_factor: 0.5,
            ..base
        },
        CapacityInputs {
            headroom_fraction: 1.0,
            ..base
        },
        CapacityInputs {
            headroom_fraction: -0.1,
            ..base
        },
        CapacityInputs {
            per_gpu_requests_per_s: 0.0,
            ..base
        },
        CapacityInputs {
            requests_per_day: f64::NAN,
            ..base
        },
    ] {
        assert!(
            matches!(plan_capacity(inputs), Err(PlanError::Invalid { .. })),
            "{inputs:?}"
        );
    }
}

#[test]
fn per_gpu_rate_comes_from_a_result() {
    let result = json!({"request_throughput": 12.5, "request_goodput": 9.0});
    assert_eq!(
        per_gpu_from_result(&result, PerGpuMetric::RequestThroughput),
        Ok(12.5)
    );
    assert_eq!(
        per_gpu_from_result(&result, PerGpuMetric::RequestGoodput),
        Ok(9.0)
    );
    let no_goodput = json!({"request_throughput": 12.5, "request_goodput": 0.0});
    assert_eq!(
        per_gpu_from_result(&no_goodput, PerGpuMetric::RequestGoodput),
        Err(PlanError::MissingMetric("request_goodput"))
    );
}

/// An 8B model in bf16 on 3350 GB/s, with Llama-3-8B's KV cache (32 layers × 8 KV heads ×
/// 128 dims × 2 (K and V) × 2 bytes = 131072 B/token) at 2048 tokens of context.
fn eight_b() -> RooflineInputs {
    RooflineInputs {
        num_params: 8e9,
        bytes_per_param: 2.0,
        memory_bandwidth_gb_per_s: 3350.0,
        kv_bytes_per_token: Some(131_072.0),
        context_tokens: Some(2048.0),
    }
}

#[test]
fn roofline_by_hand() {
    // weights 16e9 B + KV 268,435,456 B = 16,268,435,456 B per token;
    // 3.35e12 / 16,268,435,456 = 205.92023 tok/s; TPOT = 1000 / 205.92023 = 4.856249 ms.
    let roof = roofline(eight_b()).unwrap();
    assert!(close(roof.weight_bytes, 16e9));
    assert!(close(roof.kv_bytes, 268_435_456.0));
    assert!(close(roof.bytes_per_token, 16_268_435_456.0));
    assert!((roof.tokens_per_s - 205.920_23).abs() < 1e-5);
    assert!((roof.tpot_ms - 4.856_249).abs() < 1e-6);
    let without_kv = roofline(RooflineInputs {
        kv_bytes_per_token: None,
        context_tokens: None,
        ..eight_b()
    })
    .unwrap();
    assert!(close(without_kv.tokens_per_s, 209.375)); // 3350 / 16
}

#[test]
fn roofline_against_a_measured_tpot() {
    let roof = roofline(eight_b())
        .unwrap()
        .against(&json!({"mean_tpot_ms": 6.0, "median_tpot_ms": 5.5}));
    let measured = roof.measured.unwrap();
    assert!(close(measured.mean_fraction.unwrap(), roof.tpot_ms / 6.0)); // 4.856249 / 6 = 80.937%
    assert!(close(measured.median_fraction.unwrap(), roof.tpot_ms / 5.5)); // 4.856249 / 5.5 = 88.295%
    let text = roof.to_text();
    assert!(text.contains("= 1000 / 205.92 = 4.856 ms"), "{text}");
    assert!(
        text.contains("= 4.856 ms / 6 ms measured = 80.937% of the roofline"),
        "{text}"
    );
    assert!(
        text.contains("= 4.856 ms / 5.5 ms measured = 88.295% of the roofline"),
        "{text}"
    );
    assert!(text.contains("= 16 GB + 0.268 GB = 16.268 GB"), "{text}");
    assert!(close(
        roof.to_json()["measured"]["mean_tpot_ms"].as_f64().unwrap(),
        6.0
    ));
}

#[test]
fn invalid_roofline_inputs_are_rejected() {
    let half = RooflineInputs {
        context_tokens: None,
        ..eight_b()
    };
    assert_eq!(roofline(half), Err(PlanError::HalfKvCache));
    let no_bandwidth = RooflineInputs {
        memory_bandwidth_gb_per_s: 0.0,
        ..eight_b()
    };
    assert!(matches!(
        roofline(no_bandwidth),
        Err(PlanError::Invalid {
            field: "memory_bandwidth_gb_per_s",
            ..
        })
    ));
}
