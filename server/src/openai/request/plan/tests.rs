use pagoda_engine::validate::RequestLimits;

use super::*;
use crate::generation_defaults::ParamDefaults;
use crate::openai::request::body::{CommonFields, StreamOptions};

/// What the engine checks a request against in these tests.
const LIMITS: RequestLimits = RequestLimits {
    vocab_size: 1000,
    max_model_len: 4096,
    kv_capacity_tokens: 4096,
    max_logprobs: 20,
};

fn checked(fields: &CommonFields, logprobs: Option<usize>) -> CheckedFields {
    CheckedFields::check(fields, logprobs, &ParamDefaults::default()).expect("valid fields")
}

/// The plan of `fields` with nothing resolved, checked by the engine too.
fn plan(fields: CommonFields) -> Result<RequestPlan, ApiError> {
    let checked = CheckedFields::check(&fields, None, &ParamDefaults::default())?;
    let plan = RequestPlan::new(checked, Resolved::default());
    LIMITS.validate(plan.engine.engine_request(RequestId(1), vec![1, 2, 3]))?;
    Ok(plan)
}

#[test]
fn negative_seeds_are_seeds() {
    let plan = |seed| {
        plan(CommonFields {
            seed: Some(seed),
            ..Default::default()
        })
        .expect("valid")
    };
    assert_eq!(plan(-1).engine.seed_for_choice(0), Some(u64::MAX));
    assert_ne!(
        plan(-2).engine.seed_for_choice(0),
        plan(-1).engine.seed_for_choice(0)
    );
    assert_eq!(plan(i64::MIN).engine.seed_for_choice(0), Some(1 << 63));
}

#[test]
fn seeds_differ_per_choice() {
    let fields = CommonFields {
        seed: Some(41),
        n: Some(3),
        ..CommonFields::default()
    };
    let p = plan(fields).expect("valid");
    assert_eq!(p.engine.seed_for_choice(0), Some(41));
    assert_eq!(p.engine.seed_for_choice(2), Some(43));
}

#[test]
fn prompt_logprobs_are_checked_and_echo_with_logprobs_asks_the_engine_for_them() {
    let asked = |n: i64, stream: bool| {
        plan(CommonFields {
            prompt_logprobs: Some(n),
            stream: Some(stream),
            ..CommonFields::default()
        })
    };
    let five = asked(5, false).expect("valid");
    assert_eq!(five.reply.prompt_logprobs, Some(5));
    assert_eq!(
        five.engine
            .engine_request(RequestId(1), vec![1])
            .prompt_logprobs,
        Some(5)
    );
    for bad in [asked(21, false), asked(-1, false), asked(0, true)] {
        assert_eq!(
            bad.expect_err("refused").param.as_deref(),
            Some("prompt_logprobs")
        );
    }
    let with_echo = |max_tokens: u64, logprobs: Option<usize>| {
        let fields = CommonFields {
            max_tokens: Some(max_tokens),
            ..CommonFields::default()
        };
        let resolved = Resolved {
            echo: true,
            ..Resolved::default()
        };
        RequestPlan::new(checked(&fields, logprobs), resolved)
    };
    let prompt_only = with_echo(0, Some(2));
    assert_eq!(prompt_only.text.echo, Some(Echo::PromptOnly));
    assert!(prompt_only.echoes_prompt_only());
    let request = prompt_only.engine.engine_request(RequestId(1), vec![1, 2]);
    assert_eq!(
        (request.stop.max_tokens, request.prompt_logprobs),
        (Some(1), Some(2))
    );
    LIMITS
        .validate(request)
        .expect("one token is generated, then left out");
    let echoed = with_echo(4, None);
    assert_eq!(echoed.text.echo, Some(Echo::PromptAndOutput));
    assert_eq!(
        echoed.engine.prompt_logprobs, None,
        "no logprobs: no prompt rows"
    );
}

#[test]
fn hidden_reasoning_drops_the_generated_logprobs_and_ids_but_not_the_prompts() {
    let fields = CommonFields {
        return_token_ids: Some(true),
        logprob_token_ids: Some(vec![3]),
        ..CommonFields::default()
    };
    let shown = RequestPlan::new(checked(&fields, Some(2)), Resolved::default());
    assert_eq!(shown.logprobs(), Some(2));
    assert!(shown.reply.return_generated_token_ids && shown.reply.return_prompt_token_ids);
    let resolved = Resolved {
        hide_reasoning: true,
        ..Resolved::default()
    };
    let hidden = RequestPlan::new(checked(&fields, Some(2)), resolved);
    assert_eq!(hidden.logprobs(), None);
    assert_eq!(hidden.engine.sampling.logprob_token_ids, None);
    assert!(!hidden.reply.return_generated_token_ids);
    assert!(hidden.reply.return_prompt_token_ids);
}

#[test]
fn resolved_words_budget_grammar_and_model_reach_the_engine_request() {
    let resolved = Resolved {
        model: SelectedModel {
            lora: None,
            name: "tuned".into(),
        },
        bad_words: vec![vec![5, 6]],
        keep_special_tokens: true,
        ..Resolved::default()
    };
    let plan = RequestPlan::new(checked(&CommonFields::default(), None), resolved);
    assert_eq!(plan.reply.model, "tuned");
    assert!(!plan.text.skip_special_tokens);
    let request = plan.engine.engine_request(RequestId(7), vec![1]);
    assert_eq!(request.sampling.bad_words, [vec![5, 6]]);
    assert_eq!(request.id, RequestId(7));
}

#[test]
fn the_servers_stream_interval_and_forced_usage_apply_to_streams_only() {
    let defaults = ParamDefaults {
        stream_interval: 4,
        force_include_usage: true,
        ..ParamDefaults::default()
    };
    let fields = |stream: bool, interval: Option<i64>| CommonFields {
        stream: Some(stream),
        stream_interval: interval,
        ..CommonFields::default()
    };
    let check = |fields: CommonFields| CheckedFields::check(&fields, None, &defaults);
    let raised = check(fields(true, Some(2))).expect("valid");
    assert_eq!(raised.stream_interval, 4, "the server's is the least");
    assert_eq!(
        check(fields(true, Some(9))).expect("valid").stream_interval,
        9
    );
    assert_eq!(
        check(fields(false, Some(9)))
            .expect("valid")
            .stream_interval,
        1
    );
    assert!(raised.include_usage && !raised.continuous_usage_stats);
    let continuous = CommonFields {
        stream_options: Some(StreamOptions {
            include_usage: Some(true),
            continuous_usage_stats: Some(true),
        }),
        ..fields(true, None)
    };
    assert!(check(continuous).expect("valid").continuous_usage_stats);
    let zero = check(fields(true, Some(0))).expect_err("at least 1");
    assert_eq!(zero.param.as_deref(), Some("stream_interval"));
}
