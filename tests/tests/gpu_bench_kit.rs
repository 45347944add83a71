//! The GPU benchmark kit (`bench/gpu/`) on the CPU, so that its scripts do not rot between the
//! rare runs on a GPU machine: the dummy model's tokenizer serves benchmark 2's workload with exact
//! token counts; `summarize.py` turns results into the expected Markdown rows; `pack.sh` and
//! `run.sh` agree on the carried files; and `run.sh --smoke` runs every step (the tiny shape on
//! `--device cpu`, stand-ins for the CUDA-only executables) from a carry folder that `pack.sh`
//! packed. No GPU or nvcc needed; needs python3 and bash.

mod gpu_kit;

use pagoda_e2e::bench::{number, read_json, run_bench_ok};
use pagoda_e2e::binaries::ensure_built;
use pagoda_e2e::server::ServerProcess;
use pagoda_e2e::tools::{repo_file, run_program_ok};
use serde_json::json;

use gpu_kit::*;

#[test]
fn pack_and_run_parse_and_agree_on_the_carried_files() {
    for script in [RUN_SH, PACK_SH] {
        run_program_ok("bash", &["-n", script], &[]);
    }
    for script in [MAKE_MODEL, SUMMARIZE] {
        let parse = "import ast, sys; ast.parse(open(sys.argv[1]).read(), sys.argv[1])";
        run_program_ok("python3", &["-c", parse, script], &[]);
    }
    let pack = std::fs::read_to_string(repo_file(PACK_SH)).expect("pack.sh");
    let run_sh = std::fs::read_to_string(repo_file(RUN_SH)).expect("run.sh");
    // The names pack.sh produces and run.sh expects are each declared once, in the same words.
    for declaration in ["BINARIES=(", "TEST_PREFIX="] {
        let line = |text: &str, script: &str| {
            let lines: Vec<&str> = text
                .lines()
                .filter(|l| l.starts_with(declaration))
                .collect();
            assert_eq!(
                lines.len(),
                1,
                "{script} declares {declaration} once: {lines:?}"
            );
            lines[0].to_string()
        };
        assert_eq!(
            line(&pack, PACK_SH),
            line(&run_sh, RUN_SH),
            "pack.sh and run.sh disagree on {declaration}"
        );
    }
    // Both scripts use the declared names, and the revision file travels between them.
    for (script, text) in [(PACK_SH, &pack), (RUN_SH, &run_sh)] {
        for used in [
            "${BINARIES[@]",
            "$TEST_PREFIX",
            "$CARRY/REVISION",
            "CARRY=.gpu-carry",
        ] {
            assert!(text.contains(used), "{script} does not use {used}");
        }
    }
    // Every binary run.sh runs from the carry folder is a declared one.
    let declared: Vec<&str> = pack
        .lines()
        .find_map(|l| l.strip_prefix("BINARIES=("))
        .and_then(|rest| rest.strip_suffix(')'))
        .expect("BINARIES=(…) on one line")
        .split_whitespace()
        .collect();
    for invoked in run_sh.split("$BIN/").skip(1) {
        let name: String = invoked
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
            .collect();
        // `$BIN/$name`, `$BIN/$TEST_PREFIX`…: variables, not names.
        if !name.is_empty() {
            assert!(
                declared.contains(&name.as_str()),
                "run.sh runs $BIN/{name}, which is not in BINARIES {declared:?}"
            );
        }
    }
    let gitignore = std::fs::read_to_string(repo_file(".gitignore")).expect(".gitignore");
    assert!(
        gitignore.lines().any(|l| l == "/.gpu-carry"),
        ".gpu-carry must stay untracked"
    );
}

/// The brief of benchmark 2 on the tiny shape: the synthetic tokenizer builds prompts of exactly
/// the requested length, every request generates exactly its output length, chat works through
/// the template, and summarize.py reports the result beside the published anchors.
#[test]
fn the_tiny_dummy_model_serves_benchmark_2s_workload_with_exact_counts() {
    ensure_built();
    let dir = tempfile::tempdir().expect("temp dir");
    let model = tiny_model(&dir.path().join("tiny"));
    let server = ServerProcess::start(&[
        "--model",
        &model,
        "--load-format",
        "dummy",
        "--device",
        "cpu",
        "--dtype",
        "bfloat16",
        "--max-model-len",
        "2048",
        "--disable-log-requests",
    ]);

    let (status, chat) = post_json(
        &server.url("/v1/chat/completions"),
        json!({"messages": [{"role": "user", "content": "hello there"}], "max_tokens": 4}),
    );
    assert_eq!(status, 200, "{chat}");
    // The template's tokens: BOS, a header around "user", the two words, <|eot_id|>, the
    // assistant's header: 11 with this tokenizer (a word of the text is a token or <unk>).
    assert_eq!(number(&chat["usage"], "prompt_tokens"), 11.0, "{chat}");

    let results = dir.path().join("results");
    std::fs::create_dir_all(&results).expect("results dir");
    let flags = serve_flags();
    let (input_len, output_len) = (
        flag_value(&flags, "--random-input-len"),
        flag_value(&flags, "--random-output-len"),
    );
    let num_prompts = 8;
    let mut args: Vec<String> = vec!["serve".into(), "--base-url".into(), server.base_url.clone()];
    args.extend(["--tokenizer".into(), model.clone()]);
    args.extend(flags.iter().cloned());
    args.extend(
        [
            "--num-prompts",
            &num_prompts.to_string(),
            "--seed",
            "0",
            "--disable-progress",
            "--save-detailed",
            "--result-dir",
            &results.display().to_string(),
            "--result-filename",
            "serve_tiny.json",
            "--metadata",
            "shape=tiny",
        ]
        .map(String::from),
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    run_bench_ok(&args);
    drop(server);

    let result = read_json(&results.join("serve_tiny.json"));
    assert_eq!(
        number(&result, "completed"),
        num_prompts as f64,
        "completed"
    );
    assert_eq!(number(&result, "failed"), 0.0);
    assert_all(&result, "output_lens", output_len as u64, num_prompts);
    // The server's count: the prompt's tokens plus the BOS a Llama tokenizer adds.
    assert_all(&result, "input_lens", input_len as u64 + 1, num_prompts);

    // summarize.py on a synthetic folder: decode-bench lines written here, and this result.
    let folder = dir.path().join("summarize");
    std::fs::create_dir_all(&folder).expect("folder");
    std::fs::copy(
        results.join("serve_tiny.json"),
        folder.join("serve_tiny.json"),
    )
    .expect("copy");
    let lines = [
        json!({"kind": "machine", "gpu": "Test GPU", "measured_bandwidth_gbps": 3000.0}),
        json!({"batch_size": 1, "context_len": 512, "step_ms_mean": 2.5, "step_ms_p50": 2.0,
               "floor_ms": 1.0, "weights_bytes": 2_900_000_000u64, "kv_bytes_read": 16_777_216,
               "bandwidth_gbps": 1200.0, "greedy_step_ms_p50": 1.6, "greedy_step_ms_mean": 1.7,
               "sampled_step_ms_p50": 1.9}),
        json!({"batch_size": 32, "context_len": 512, "step_ms_mean": 3.0, "step_ms_p50": 3.0,
               "floor_ms": 1.5, "weights_bytes": 2_900_000_000u64, "kv_bytes_read": 536_870_912,
               "bandwidth_gbps": 1100.0, "greedy_step_ms_p50": 2.5, "greedy_step_ms_mean": 2.5,
               "sampled_step_ms_p50": 2.65}),
        json!({"batch_size": 256, "context_len": 512, "step_ms_mean": 8.5, "step_ms_p50": 8.0,
               "floor_ms": 2.4, "weights_bytes": 2_900_000_000u64, "kv_bytes_read": 4_294_967_296u64,
               "bandwidth_gbps": 850.0}),
    ];
    let jsonl: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(folder.join("decode_bench.jsonl"), jsonl).expect("decode lines");
    let markdown = run_program_ok("python3", &[SUMMARIZE, &folder.display().to_string()], &[]);
    assert!(
        markdown.starts_with("## GPU benchmarks: Test GPU"),
        "{markdown}"
    );
    assert_eq!(
        line_starting(&markdown, "| 1 |"),
        "| 1 | 2.00 ms | 2.50 ms | 1.00 ms | 50% | 1,200 | 500 | 1.60 ms | 625 | 1.90 ms | 0.30 ms |"
    );
    assert_eq!(
        line_starting(&markdown, "| 256 |"),
        "| 256 | 8.00 ms | 8.50 ms | 2.40 ms | 30% | 850 | 32,000 | — | — | — | — |"
    );
    // The sampling issue's GPU goal, read from the batch-32 row: 2.65 − 2.50 ms.
    assert!(
        markdown.contains("Sampling cost at batch 32 (sampled − greedy step p50): 0.15 ms; goal ≤ 0.2 ms: **met**."),
        "{markdown}"
    );
    assert!(markdown.contains("3,000 GB/s"), "{markdown}");
    let tput = number(&result, "output_throughput");
    assert!(line_starting(&markdown, "| **Pagoda** (this run) |").contains("**"));
    for (name, anchor) in [("vLLM", 10098.0), ("mistral.rs", 341.0)] {
        let row = line_starting(&markdown, &format!("| {name} (published"));
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let shown: f64 = cells[3].trim_end_matches('×').parse().expect("a ratio");
        let exact = tput / anchor;
        assert!(
            (shown - exact).abs() <= 0.051 * exact.max(1.0),
            "{row}: Pagoda {tput} tok/s ÷ {anchor} = {exact}"
        );
    }
    assert!(line_starting(&markdown, "| TTFT |").contains(" ms |"));
    assert!(markdown.contains("No `sweep_*/summary.json`"), "{markdown}");
}

/// The published shapes' synthetic tokenizers (152k and 128k tokens) load in the server and let
/// pagoda-bench build prompts of exact lengths: benchmark 3's 600-token prompts here, against the
/// mock engine (no model compute; it reads only the tokenizer files of the directory).
#[test]
fn the_published_shapes_tokenizers_build_exact_length_prompts() {
    ensure_built();
    let dir = tempfile::tempdir().expect("temp dir");
    // (shape, tokens the server adds to a completion prompt: Llama's BOS)
    for (shape, added) in [("llama-3.2-1b", 1), ("qwen3-0.6b", 0)] {
        let model = dir.path().join(shape).display().to_string();
        run_program_ok(
            "python3",
            &[MAKE_MODEL, "--shape", shape, "--out", &model],
            &[],
        );
        let config = read_json(&dir.path().join(shape).join("config.json"));
        let tokenizer = read_json(&dir.path().join(shape).join("tokenizer.json"));
        let vocab = tokenizer["model"]["vocab"].as_object().expect("vocab");
        assert_eq!(vocab.len() as f64, number(&config, "vocab_size"), "{shape}");
        let server = ServerProcess::start(&["--mock", "--model", &model, "--disable-log-requests"]);
        let results = dir.path().join(format!("{shape}-results"));
        let num_prompts = 4;
        run_bench_ok(&[
            "serve",
            "--base-url",
            &server.base_url,
            "--tokenizer",
            &model,
            "--endpoint",
            "/v1/completions",
            "--random-input-len",
            "600",
            "--random-output-len",
            "30",
            "--num-prompts",
            &num_prompts.to_string(),
            "--disable-progress",
            "--save-detailed",
            "--result-dir",
            &results.display().to_string(),
            "--result-filename",
            "mock.json",
        ]);
        let result = read_json(&results.join("mock.json"));
        assert_eq!(number(&result, "completed"), num_prompts as f64, "{shape}");
        assert_all(&result, "input_lens", 600 + added, num_prompts);
        assert_all(&result, "output_lens", 30, num_prompts);
    }
}
