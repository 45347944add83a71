//! The GPU benchmark kit (`bench/gpu/`) on the CPU, so that its scripts do not rot between the
//! rare runs on a GPU machine: the dummy model's tokenizer serves benchmark 2's workload with exact
//! token counts; `summarize.py` turns results into the expected Markdown rows; `pack.sh` and
//! `run.sh` agree on the carried files; and `run.sh --smoke` runs every step (the tiny shape on
//! `--device cpu`, stand-ins for the CUDA-only executables) from a carry folder that `pack.sh`
//! packed. No GPU or nvcc needed; needs python3 and bash.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use pagoda_e2e::bench::{number, read_json, run_bench_ok};
use pagoda_e2e::binaries::{binary_path, ensure_built};
use pagoda_e2e::prometheus::free_port;
use pagoda_e2e::server::ServerProcess;
use pagoda_e2e::tools::{repo_file, repo_root};
use serde_json::{json, Value};

const RUN_SH: &str = "bench/gpu/run.sh";
const PACK_SH: &str = "bench/gpu/pack.sh";
const MAKE_MODEL: &str = "bench/gpu/make_dummy_model.py";
const SUMMARIZE: &str = "bench/gpu/summarize.py";

/// Runs `program args…` from the repository root; echoes its output into the test log.
fn run(program: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
    let output = Command::new(program)
        .args(args)
        .envs(env.iter().copied())
        .current_dir(repo_root())
        .output()
        .unwrap_or_else(|e| panic!("{program} does not run: {e}"));
    eprintln!(
        "[{program} {}]\n{}",
        args.join(" "),
        String::from_utf8_lossy(&output.stdout)
    );
    eprintln!("[{program}] {}", String::from_utf8_lossy(&output.stderr));
    output
}

/// Runs `program args…` and fails the test unless it exits 0; returns its stdout.
fn run_ok(program: &str, args: &[&str], env: &[(&str, &str)]) -> String {
    let output = run(program, args, env);
    assert!(
        output.status.success(),
        "{program} {args:?} failed ({}):\n{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// `make_dummy_model.py --shape tiny` into `dir`.
fn tiny_model(dir: &Path) -> String {
    let out = dir.display().to_string();
    run_ok(
        "python3",
        &[MAKE_MODEL, "--shape", "tiny", "--out", &out],
        &[],
    );
    out
}

/// Benchmark 2's workload flags, as run.sh uses them.
fn serve_flags() -> Vec<String> {
    run_ok("bash", &[RUN_SH, "--print-serve-flags"], &[])
        .lines()
        .map(str::to_string)
        .collect()
}

/// The value after `flag` in `flags`.
fn flag_value(flags: &[String], flag: &str) -> usize {
    let at = flags
        .iter()
        .position(|f| f == flag)
        .unwrap_or_else(|| panic!("run.sh's serve flags have no {flag}: {flags:?}"));
    flags[at + 1].parse().expect("a number")
}

/// `POST url` with a JSON body → (status, body).
fn post_json(url: &str, body: Value) -> (u16, Value) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async {
        let response = reqwest::Client::new()
            .post(url)
            .json(&body)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{url}: {e}"));
        let status = response.status().as_u16();
        (status, response.json().await.expect("a JSON body"))
    })
}

fn assert_all(result: &Value, key: &str, expected: u64, count: usize) {
    let values = result.get(key).and_then(Value::as_array).expect(key);
    assert_eq!(values.len(), count, "{key}: {values:?}");
    assert!(
        values.iter().all(|v| v.as_u64() == Some(expected)),
        "{key}: every request should have {expected}: {values:?}"
    );
}

/// The line of `markdown` that starts with `prefix`; fails the test when there is none.
fn line_starting<'a>(markdown: &'a str, prefix: &str) -> &'a str {
    markdown
        .lines()
        .find(|line| line.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line starting with {prefix:?} in:\n{markdown}"))
}

#[test]
fn pack_and_run_parse_and_agree_on_the_carried_files() {
    for script in [RUN_SH, PACK_SH] {
        run_ok("bash", &["-n", script], &[]);
    }
    for script in [MAKE_MODEL, SUMMARIZE] {
        let parse = "import ast, sys; ast.parse(open(sys.argv[1]).read(), sys.argv[1])";
        run_ok("python3", &["-c", parse, script], &[]);
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
               "bandwidth_gbps": 1200.0}),
        json!({"batch_size": 256, "context_len": 512, "step_ms_mean": 8.5, "step_ms_p50": 8.0,
               "floor_ms": 2.4, "weights_bytes": 2_900_000_000u64, "kv_bytes_read": 4_294_967_296u64,
               "bandwidth_gbps": 850.0}),
    ];
    let jsonl: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(folder.join("decode_bench.jsonl"), jsonl).expect("decode lines");
    let markdown = run_ok("python3", &[SUMMARIZE, &folder.display().to_string()], &[]);
    assert!(
        markdown.starts_with("## GPU benchmarks: Test GPU"),
        "{markdown}"
    );
    assert_eq!(
        line_starting(&markdown, "| 1 |"),
        "| 1 | 2.00 ms | 2.50 ms | 1.00 ms | 50% | 1,200 | 500 |"
    );
    assert_eq!(
        line_starting(&markdown, "| 256 |"),
        "| 256 | 8.00 ms | 8.50 ms | 2.40 ms | 30% | 850 | 32,000 |"
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

/// A stand-in for a CUDA-only executable: a shell script.
fn write_script(path: &Path, body: &str) {
    std::fs::write(
        path,
        format!("#!/usr/bin/env bash\nset -euo pipefail\n{body}\n"),
    )
    .expect("script");
    let status = Command::new("chmod")
        .args(["+x", &path.display().to_string()])
        .status()
        .expect("chmod");
    assert!(status.success());
}

/// The whole kit as the GPU machine runs it, on the CPU: pack.sh packs the binaries of this
/// build (and stand-ins for the CUDA executables) into a carry folder, and run.sh --smoke unpacks
/// them and runs all four steps with the tiny shape on `--device cpu`.
#[test]
fn run_sh_smoke_runs_every_step_from_a_packed_carry_folder() {
    ensure_built();
    let dir = tempfile::tempdir().expect("temp dir");
    let from = dir.path().join("built");
    std::fs::create_dir_all(&from).expect("dir");
    for name in ["pagoda-server", "pagoda-bench"] {
        std::os::unix::fs::symlink(binary_path(name), from.join(name)).expect("symlink");
    }
    // The decode benchmark's line format (summarize.py's header documents it).
    write_script(
        &from.join("gpu_decode_bench"),
        r#"out=
while [ $# -gt 0 ]; do case "$1" in --out) out=$2; shift 2 ;; --model|--batch-sizes|--context-len) shift 2 ;; *) echo "unexpected $1" >&2; exit 2 ;; esac; done
{
  echo '{"kind":"machine","gpu":"stand-in","measured_bandwidth_gbps":3000.0}'
  echo '{"batch_size":1,"context_len":512,"step_ms_mean":1.1,"step_ms_p50":1.0,"floor_ms":0.5,"weights_bytes":1000,"kv_bytes_read":10,"bandwidth_gbps":1500.0}'
} >"$out""#,
    );
    write_script(
        &from.join("gpu_tests_standin"),
        r#"[ "$*" = "--test-threads=1 --nocapture" ] || { echo "unexpected arguments: $*" >&2; exit 2; }
echo "test result: ok. 1 passed; 0 failed""#,
    );
    let carry = dir.path().join("carry");
    let packed = run_ok(
        "bash",
        &[
            PACK_SH,
            "--from",
            &from.display().to_string(),
            "--carry-dir",
            &carry.display().to_string(),
            "--max-mib",
            "1024",
        ],
        &[],
    );
    assert!(packed.contains("total: "), "{packed}");
    for name in [
        "pagoda-server",
        "pagoda-bench",
        "gpu_decode_bench",
        "gpu_tests_standin",
    ] {
        assert!(
            carry.join("bin").join(format!("{name}.gz")).is_file(),
            "{name}.gz"
        );
    }
    assert!(carry.join("REVISION").is_file());

    let out: PathBuf = dir.path().join("out");
    let port = free_port().to_string();
    let output = run(
        "bash",
        &[
            RUN_SH,
            "--smoke",
            "--carry-dir",
            &carry.display().to_string(),
            "--port",
            &port,
        ],
        &[("OUT", &out.display().to_string())],
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "run.sh --smoke failed:\n{stdout}");

    let summary = read_json(&out.join("summary.json"));
    let steps: Vec<(String, String)> = summary["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap_or("").to_string(),
                s["status"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    let names: Vec<&str> = steps.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["gpu_tests", "decode_bench", "serve", "sweep"]);
    assert!(steps.iter().all(|(_, status)| status == "ok"), "{steps:?}");
    assert_eq!(summary["device"], "cpu");
    let machine = std::fs::read_to_string(out.join("machine.txt")).expect("machine.txt");
    let revision = std::fs::read_to_string(carry.join("REVISION")).expect("REVISION");
    assert!(
        machine.contains(&format!(
            "revision: {}",
            revision.lines().next().unwrap_or("?")
        )),
        "{machine}"
    );

    let serve = read_json(&out.join("serve_tiny.json"));
    let requested = number(&summary["params"], "serve_num_prompts");
    assert_eq!(number(&serve, "completed"), requested);
    assert_eq!(
        number(&serve, "total_output_tokens"),
        requested * flag_value(&serve_flags(), "--random-output-len") as f64
    );
    assert_eq!(serve["shape"], "tiny");
    let sweep = read_json(&out.join("sweep_tiny").join("summary.json"));
    let rates = summary["params"]["sweep_rates"].as_str().expect("rates");
    assert_eq!(
        sweep["rows"].as_array().map(Vec::len),
        Some(rates.split(',').count()),
        "{sweep}"
    );

    let markdown = std::fs::read_to_string(out.join("summary.md")).expect("summary.md");
    assert!(stdout.contains(&markdown), "run.sh prints summary.md");
    assert_eq!(
        line_starting(&markdown, "| 1 |"),
        "| 1 | 1.00 ms | 1.10 ms | 0.50 ms | 50% | 1,500 | 1,000 |"
    );
    line_starting(&markdown, "| **Pagoda** (this run) |");
    for rate in rates.split(',') {
        line_starting(&markdown, &format!("| {rate} |"));
    }
    assert!(
        markdown.contains("**Steps:** gpu_tests ok") && markdown.contains("sweep ok"),
        "{markdown}"
    );
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
        run_ok(
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
