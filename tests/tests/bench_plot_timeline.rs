//! `pagoda-bench serve --plot-timeline` (vLLM's flag) against `pagoda-server --mock`: the page
//! lands beside the result file as `<result>.timeline.html`, loads in Debian's chromium without a
//! console message, holds the chart as an SVG, paints inter-token gaps in the thresholds'
//! colours, and references nothing outside itself.

use pagoda_e2e::bench::{run_bench_ok, serve_against_mock};
use pagoda_e2e::binaries::ensure_built;
use pagoda_e2e::browser::{chromium, decode_png, load_page, screenshot};
use pagoda_e2e::html::external_references;
use pagoda_e2e::server::ServerProcess;

/// Pixels of exactly `rgb` in a screenshot.
fn count_color(png: &std::path::Path, rgb: [u8; 3]) -> usize {
    decode_png(png).rgb().filter(|pixel| *pixel == rgb).count()
}

#[test]
fn plot_timeline_writes_a_page_of_colored_inter_token_gaps_beside_the_result() {
    chromium();
    ensure_built();
    // 5 ms between tokens: gaps far under the 200 ms threshold (whatever the machine's load), so
    // the bars are green.
    let server = ServerProcess::start(&[
        "--mock",
        "--mock-ttft-ms",
        "20",
        "--mock-tpot-ms",
        "5",
        "--disable-log-requests",
    ]);
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().display().to_string();
    let mut args = serve_against_mock(&server.base_url);
    args.extend(
        [
            "--random-input-len",
            "16",
            "--random-output-len",
            "24",
            "--ignore-eos",
            "--num-prompts",
            "12",
            "--max-concurrency",
            "4",
            "--plot-timeline",
            "--timeline-itl-thresholds",
            "200,400",
            "--result-dir",
            &out,
            "--result-filename",
            "run.json",
        ]
        .map(String::from),
    );
    run_bench_ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
    // Only the timeline: the result itself is saved with --save-result.
    assert!(!dir.path().join("run.json").exists());
    let page = dir.path().join("run.timeline.html");
    let html = std::fs::read_to_string(&page).expect("the timeline page");
    assert!(external_references(&html).is_empty());
    let loaded = load_page(&page);
    assert!(loaded.console.is_empty(), "{:#?}", loaded.console);
    let opening = "id=\"chart-itl-timeline-0\">";
    let at = loaded.dom.find(opening).expect("the chart in the DOM");
    assert!(loaded.dom[at + opening.len()..]
        .trim_start()
        .starts_with("<svg"));
    let png = dir.path().join("run.timeline.png");
    let console = screenshot(&page, &png, 1000, 1000);
    assert!(console.is_empty(), "{console:#?}");
    let green = count_color(&png, [0x10, 0x96, 0x18]);
    assert!(green > 2000, "{green} pixels of green (gaps under 200 ms)");
    assert!(
        html.contains("ITL ≥ 400 ms"),
        "the thresholds in the legend"
    );
}

/// `--plot-dataset-stats` (vLLM's flag): `<result>.dataset_stats.png` and `.svg` beside the result
/// file — four charts of the requests' lengths, drawn (not a blank canvas), every request counted.
#[test]
fn plot_dataset_stats_draws_the_request_lengths_beside_the_result() {
    ensure_built();
    let server = ServerProcess::start(&["--mock", "--disable-log-requests"]);
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().display().to_string();
    let mut args = serve_against_mock(&server.base_url);
    args.extend(
        [
            "--random-input-len",
            "64",
            "--random-output-len",
            "16",
            "--random-range-ratio",
            "0.5",
            "--ignore-eos",
            "--num-prompts",
            "24",
            "--plot-dataset-stats",
            "--save-result",
            "--result-dir",
            &out,
            "--result-filename",
            "run.json",
        ]
        .map(String::from),
    );
    run_bench_ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(dir.path().join("run.json").exists());
    let png = decode_png(&dir.path().join("run.dataset_stats.png"));
    assert_eq!((png.width, png.height), (1600, 1000));
    let drawn = png.rgb().filter(|pixel| *pixel != [0xff; 3]).count();
    assert!(drawn > 20_000, "{drawn} pixels drawn");
    let svg = std::fs::read_to_string(dir.path().join("run.dataset_stats.svg")).expect("the SVG");
    for title in [
        "Prompt tokens",
        "Output tokens",
        "Total tokens",
        "Tokens per request",
    ] {
        assert!(svg.contains(title), "{title}");
    }
}
