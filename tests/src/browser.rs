//! A real headless browser, Debian's `chromium`, for the tests of generated HTML pages: the
//! DOM it parsed, every message the page logged to its console, and a screenshot decoded to
//! pixels. A missing chromium fails the test with the command that installs it.
//!
//! Console messages: with `--enable-logging=stderr --v=0` Chromium writes every console message
//! of the page — uncaught exceptions (`"Uncaught Error: …"`) and `console.error` alike — to
//! stderr as a line containing `:CONSOLE`; [`PageLoad::console`] holds those lines.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How to install the browser on Debian.
pub const INSTALL_CHROMIUM: &str = "apt-get install -y chromium";
/// The longest one browser run may take.
const BROWSER_TIMEOUT: Duration = Duration::from_secs(90);

/// `chromium` (or `chromium-browser`) on `PATH`; panics with the install command.
pub fn chromium() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .flat_map(|dir| ["chromium", "chromium-browser"].map(|name| dir.join(name)))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| panic!("chromium is not installed: run `{INSTALL_CHROMIUM}`"))
}

/// What the browser made of a page.
#[derive(Debug, Clone)]
pub struct PageLoad {
    /// The DOM after loading, serialised (`--dump-dom`).
    pub dom: String,
    /// Every console message the page produced (stderr lines with `:CONSOLE`).
    pub console: Vec<String>,
}

/// Runs headless chromium with `args` and the page's `file://` URL last; returns (stdout,
/// stderr). A fresh profile directory per run, so runs in parallel do not share a lock.
fn run_chromium(page: &Path, args: &[&str]) -> (String, String) {
    let profile = tempfile::tempdir().expect("profile dir");
    let page = page.canonicalize().expect("the page exists");
    let mut child = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("chromium does not run ({e}): `{INSTALL_CHROMIUM}`"));
    // Read both pipes while it runs: a DOM larger than a pipe's buffer would block it.
    let stdout = read_in_background(child.stdout.take());
    let stderr = read_in_background(child.stderr.take());
    let deadline = Instant::now() + BROWSER_TIMEOUT;
    while child.try_wait().expect("chromium status").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "chromium took over {BROWSER_TIMEOUT:?} on {}",
                page.display()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let text = |reader: std::thread::JoinHandle<String>| reader.join().unwrap_or_default();
    (text(stdout), text(stderr))
}

/// Reads a child's pipe to the end on a thread of its own.
fn read_in_background(pipe: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut bytes);
        }
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

fn console_lines(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter(|line| line.contains(":CONSOLE"))
        .map(str::to_string)
        .collect()
}

/// Loads `page` and returns its DOM and console messages.
pub fn load_page(page: &Path) -> PageLoad {
    let (dom, stderr) = run_chromium(page, &["--dump-dom"]);
    assert!(
        dom.contains("<html"),
        "chromium dumped no DOM for {}:\n{stderr}",
        page.display()
    );
    PageLoad {
        dom,
        console: console_lines(&stderr),
    }
}

/// A screenshot of `page` in a `width × height` window, saved to `png`; returns the console
/// messages of that load too.
pub fn screenshot(page: &Path, png: &Path, width: u32, height: u32) -> Vec<String> {
    let (_, stderr) = run_chromium(
        page,
        &[
            &format!("--screenshot={}", png.display()),
            &format!("--window-size={width},{height}"),
            "--hide-scrollbars",
        ],
    );
    assert!(png.is_file(), "no screenshot written:\n{stderr}");
    console_lines(&stderr)
}

/// A decoded image: 8-bit RGB(A) rows.
#[derive(Debug, Clone)]
pub struct Pixels {
    pub width: u32,
    pub height: u32,
    /// Bytes per pixel (3 or 4).
    pub channels: usize,
    pub data: Vec<u8>,
}

impl Pixels {
    /// The RGB of every pixel.
    pub fn rgb(&self) -> impl Iterator<Item = [u8; 3]> + '_ {
        self.data
            .chunks_exact(self.channels)
            .map(|p| [p[0], p[1], p[2]])
    }
}

/// Decodes a PNG file (any bit depth, expanded to 8-bit colour).
pub fn decode_png(path: &Path) -> Pixels {
    let file = std::fs::File::open(path).expect("the PNG exists");
    let mut decoder = png::Decoder::new(std::io::BufReader::new(file));
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = decoder.read_info().expect("a PNG");
    let mut data = vec![0; reader.output_buffer_size().expect("a sane size")];
    let info = reader.next_frame(&mut data).expect("a frame");
    data.truncate(info.buffer_size());
    let channels = match info.color_type {
        png::ColorType::Rgb => 3,
        png::ColorType::Rgba => 4,
        other => panic!("a screenshot in colour expected, got {other:?}"),
    };
    Pixels {
        width: info.width,
        height: info.height,
        channels,
        data,
    }
}
