use pagoda_engine::validate::RequestLimits;

use super::*;
use crate::openai::request::body::{StopField, StreamOptions};
use crate::openai::request::plan::{RequestPlan, Resolved};
use pagoda_engine::RequestId;

/// What the engine checks a request against in these tests.
const LIMITS: RequestLimits = RequestLimits {
    vocab_size: 1000,
    max_model_len: 4096,
    kv_capacity_tokens: 4096,
    max_logprobs: 20,
};

/// The fields as a request handler checks them: here, then once by the engine.
fn params(fields: CommonFields) -> Result<CheckedFields, ApiError> {
    let checked = CheckedFields::check(&fields, None, &ParamDefaults::default())?;
    let plan = RequestPlan::new(checked.clone(), Resolved::default());
    LIMITS.validate(plan.engine.engine_request(RequestId(1), vec![1, 2, 3]))?;
    Ok(checked)
}

#[test]
fn defaults_are_openai_and_model_defaults_fill_unset_fields() {
    let plain = params(CommonFields::default()).expect("valid");
    assert_eq!(plain.sampling.temperature, 1.0);
    assert_eq!(plain.n, 1);
    assert!(plain.skip_special_tokens);
    let defaults = ParamDefaults {
        sampling: SamplingDefaults {
            temperature: Some(0.2),
            top_p: Some(0.9),
            ..SamplingDefaults::default()
        },
        extra_stop_token_ids: vec![7],
        eos_token_ids: vec![2],
        tokens_as_ids: false,
        ..ParamDefaults::default()
    };
    let fields = CommonFields {
        top_p: Some(0.5),
        ..CommonFields::default()
    };
    let filled = CheckedFields::check(&fields, None, &defaults).expect("valid");
    assert_eq!(filled.sampling.temperature, 0.2);
    assert_eq!(filled.sampling.top_p, 0.5);
    assert_eq!(filled.stop.stop_token_ids, [7]);
    assert_eq!(
        filled.ending_token_ids,
        [7, 2],
        "the end-of-turn and EOS ids end a choice"
    );
}

#[test]
fn the_models_max_new_tokens_applies_only_when_max_tokens_is_unset() {
    let defaults = ParamDefaults {
        sampling: SamplingDefaults {
            max_new_tokens: Some(64),
            ..SamplingDefaults::default()
        },
        ..ParamDefaults::default()
    };
    let unset = CheckedFields::check(&CommonFields::default(), None, &defaults);
    assert_eq!(unset.expect("valid").stop.max_tokens, Some(64));
    let fields = CommonFields {
        max_tokens: Some(5),
        ..CommonFields::default()
    };
    let set = CheckedFields::check(&fields, None, &defaults).expect("valid");
    assert_eq!(set.stop.max_tokens, Some(5));
    let none = params(CommonFields::default()).expect("valid");
    assert_eq!(
        none.stop.max_tokens, None,
        "no default: what the context leaves"
    );
}

#[test]
fn ignore_eos_drops_the_end_of_turn_ids() {
    let defaults = ParamDefaults {
        extra_stop_token_ids: vec![7],
        eos_token_ids: vec![2],
        ..ParamDefaults::default()
    };
    let fields = CommonFields {
        ignore_eos: Some(true),
        stop_token_ids: Some(vec![3]),
        ..CommonFields::default()
    };
    let p = CheckedFields::check(&fields, None, &defaults).expect("valid");
    assert_eq!(p.stop.stop_token_ids, [3]);
    assert_eq!(p.ending_token_ids, [3], "EOS does not end the choice");
}

#[test]
fn bad_values_name_their_field() {
    let cases = [
        (
            CommonFields {
                n: Some(0),
                ..Default::default()
            },
            "n",
        ),
        (
            CommonFields {
                temperature: Some(-1.0),
                ..Default::default()
            },
            "temperature",
        ),
        (
            CommonFields {
                temperature: Some(2.5),
                ..Default::default()
            },
            "temperature",
        ),
        (
            CommonFields {
                top_p: Some(1.5),
                ..Default::default()
            },
            "top_p",
        ),
        (
            CommonFields {
                top_k: Some(-5),
                ..Default::default()
            },
            "top_k",
        ),
        (
            CommonFields {
                max_tokens: Some(0),
                ..Default::default()
            },
            "max_tokens",
        ),
        (
            CommonFields {
                presence_penalty: Some(3.0),
                ..Default::default()
            },
            "presence_penalty",
        ),
        (
            CommonFields {
                stop: Some(StopField::One(String::new())),
                ..Default::default()
            },
            "stop",
        ),
        (
            CommonFields {
                stream_options: Some(StreamOptions::default()),
                ..Default::default()
            },
            "stream_options",
        ),
    ];
    let bad_biases = [
        serde_json::json!("x"),
        serde_json::json!([1, 2]),
        serde_json::json!(3),
        serde_json::json!({"x": 5}),
        serde_json::json!({"-1": 5}),
        serde_json::json!({"1": "5"}),
        serde_json::json!({"1": 100.5}),
        serde_json::json!({"1": -101}),
    ];
    let cases = cases.into_iter().chain(bad_biases.into_iter().map(|bias| {
        let fields = CommonFields {
            logit_bias: Some(bias),
            ..Default::default()
        };
        (fields, "logit_bias")
    }));
    for (fields, field) in cases {
        let error = params(fields).expect_err(field);
        assert_eq!(error.param.as_deref(), Some(field), "{}", error.message);
    }
}

#[test]
fn logit_bias_maps_token_ids_to_biases() {
    let fields = CommonFields {
        logit_bias: Some(serde_json::json!({"7": 100, " 3 ": -100, "12": 0.5})),
        ..Default::default()
    };
    let mut bias = params(fields).expect("valid").sampling.logit_bias;
    bias.sort_by_key(|&(id, _)| id);
    assert_eq!(bias, [(3, -100.0), (7, 100.0), (12, 0.5)]);
    let none = params(CommonFields::default()).expect("valid");
    assert!(none.sampling.logit_bias.is_empty());
}

#[test]
fn allowed_token_ids_reach_the_engine_and_are_checked_there() {
    let allowed = |ids: Vec<u32>| {
        params(CommonFields {
            allowed_token_ids: Some(ids),
            ..Default::default()
        })
    };
    let given = allowed(vec![5, 2]).expect("valid");
    assert_eq!(given.sampling.allowed_token_ids, Some(vec![5, 2]));
    for bad in [vec![], vec![1, u32::MAX]] {
        let error = allowed(bad).expect_err("refused");
        assert_eq!(error.param.as_deref(), Some("allowed_token_ids"));
    }
    assert_eq!(
        params(CommonFields::default())
            .expect("valid")
            .sampling
            .allowed_token_ids,
        None
    );
}

#[test]
fn logprob_token_ids_need_logprobs_and_an_empty_list_is_none() {
    let fields = |ids: Vec<u32>| CommonFields {
        logprob_token_ids: Some(ids),
        ..Default::default()
    };
    let asked = CheckedFields::check(&fields(vec![4, 2]), Some(0), &ParamDefaults::default())
        .expect("valid");
    assert_eq!(asked.sampling.logprob_token_ids, Some(vec![4, 2]));
    let error = params(fields(vec![4])).expect_err("needs logprobs");
    assert_eq!(error.param.as_deref(), Some("logprob_token_ids"));
    let empty = params(fields(vec![])).expect("an empty list is no list");
    assert_eq!(empty.sampling.logprob_token_ids, None);
}
