use clap::CommandFactory;

use super::*;

#[test]
fn defaults_match_the_documentation() {
    let args = ServerArgs::try_parse_from(["pagoda-server"]).expect("no flags needed");
    assert_eq!(args.port, 8000);
    assert_eq!(args.engine.max_num_seqs, 256);
    assert_eq!(args.metrics_namespace, MetricsNamespace::Pagoda);
    assert!(!args.engine.no_enable_prefix_caching);
    assert_eq!(args.max_request_body_bytes, 16 << 20);
    assert_eq!(args.http_header_read_timeout, 10.0);
    assert_eq!(args.http_keep_alive_timeout, 75.0);
    assert_eq!(args.http_body_read_timeout, 60.0);
    assert_eq!(args.max_connections, 4096);
    assert_eq!(args.engine_stall_timeout, 60.0);
    assert!(args.allowed_roles.is_empty() && !args.allow_special_tokens_in_content);
}

#[test]
fn log_levels_read_as_vllm_writes_them() {
    let level = |flags: &[&str]| {
        let argv = std::iter::once("pagoda-server").chain(flags.iter().copied());
        ServerArgs::try_parse_from(argv).map(|args| args.log_level.directive())
    };
    assert_eq!(level(&[]).expect("default"), "info");
    assert_eq!(
        level(&["--uvicorn-log-level", "warning"]).expect("ok"),
        "warn"
    );
    assert_eq!(level(&["--log-level", "warn"]).expect("ok"), "warn");
    assert_eq!(
        level(&["--uvicorn-log-level", "critical"]).expect("ok"),
        "error"
    );
    assert_eq!(level(&["--log-level", "debug"]).expect("ok"), "debug");
    assert!(level(&["--log-level", "loud"]).is_err());
}

#[test]
fn every_flag_is_documented_with_a_default_or_an_environment_variable() {
    let command = ServerArgs::command();
    for arg in command.get_arguments() {
        let id = arg.get_id().as_str();
        if id == "help" || id == "version" {
            continue;
        }
        assert!(arg.get_help().is_some(), "--{id} has no help text");
    }
    let help = ServerArgs::command().render_long_help().to_string();
    for flag in [
        "--max-waiting-requests",
        "--metrics-namespace",
        "--mock-tpot-ms",
        "PAGODA_PORT",
    ] {
        assert!(help.contains(flag), "{flag} missing from --help");
    }
}

#[test]
fn bucket_lists_are_one_value_each() {
    // `std::vec::Vec` (not `Vec`) keeps clap from reading the list as repeated values.
    let args = ServerArgs::try_parse_from(["pagoda-server", "--ttft-buckets", "0.05,0.2,1"])
        .expect("valid");
    assert_eq!(args.ttft_buckets, Some(vec![0.05, 0.2, 1.0]));
    assert!(ServerArgs::try_parse_from(["pagoda-server", "--itl-buckets", "1,0.5"]).is_err());
}

#[test]
fn lora_modules_take_several_values_per_flag_and_repeat() {
    let args = ServerArgs::try_parse_from([
        "pagoda-server",
        "--enable-lora",
        "--lora-modules",
        "a=/adapters/a",
        r#"{"name": "b", "path": "/adapters/b", "base_model_name": "base"}"#,
        "--port",
        "9000",
        "--lora-modules",
        "c=/adapters/c",
    ])
    .expect("valid flags");
    let names: Vec<_> = args.lora_modules.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["a", "b", "c"]);
    assert_eq!(
        args.lora_modules[1].base_model_name.as_deref(),
        Some("base")
    );
    assert!(args.engine.enable_lora);
    let bad = ServerArgs::try_parse_from(["pagoda-server", "--lora-modules", "nopath"]);
    let error = bad.expect_err("a module without a path").to_string();
    assert!(error.contains("name=path"), "{error}");
}

#[test]
fn vllm_runtime_lora_variable_reads_as_vllm_does() {
    for on in ["true", "True", " 1 ", "TRUE"] {
        assert!(vllm_flag_is_on(on), "{on:?}");
    }
    for off in ["false", "0", "", "yes"] {
        assert!(!vllm_flag_is_on(off), "{off:?}");
    }
    let flag = ServerArgs::try_parse_from(["pagoda-server", "--allow-runtime-lora-updating"])
        .expect("valid flags");
    assert!(flag.runtime_lora_updating());
}

#[test]
fn served_model_names_split_on_commas() {
    let args =
        ServerArgs::try_parse_from(["pagoda-server", "--served-model-name", "a,b"]).expect("valid");
    assert_eq!(args.served_model_name, ["a", "b"]);
}
