//! The client's own CPU time during a run: evidence for (or against) "the client ran out of CPU".
//!
//! Read from `/proc/self/stat` (`utime + stime`, all threads of the process, in clock ticks of
//! `USER_HZ`, which Linux fixes at 100 on every architecture it exposes to user space: 10 ms
//! resolution, plenty over a 1-second window). Elsewhere than Linux there is no figure (`None`).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// Clock ticks per second of `/proc/*/stat` times.
const USER_HZ: f64 = 100.0;
/// The window of `peak_utilization`.
const WINDOW: Duration = Duration::from_secs(1);

/// CPU used by the whole client process over a run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CpuUsage {
    /// User + system CPU seconds of the process, over the run.
    pub cpu_s: f64,
    pub wall_s: f64,
    /// Cores the process may use.
    pub num_cores: usize,
    /// `cpu_s / wall_s`: cores kept busy on average.
    pub mean_cores_busy: f64,
    /// `mean_cores_busy / num_cores`: 1 means the client had the whole machine busy.
    pub mean_utilization: f64,
    /// The highest utilization (of all cores) over any 1-second window of the run.
    pub peak_utilization: f64,
}

/// Process CPU seconds so far; `None` where `/proc/self/stat` cannot be read.
pub fn process_cpu_s() -> Option<f64> {
    parse_proc_stat(&std::fs::read_to_string("/proc/self/stat").ok()?)
}

/// `utime + stime` of a `/proc/PID/stat` line, in seconds. The command name (field 2) may hold
/// spaces and parentheses, so fields are counted after its last `)`.
pub fn parse_proc_stat(text: &str) -> Option<f64> {
    let after_name = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // After the name: state is field 3, utime field 14, stime field 15.
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / USER_HZ)
}

fn num_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Samples the process CPU time every second while a run goes on.
#[derive(Debug)]
pub struct CpuMonitor {
    started: Instant,
    cpu_at_start_s: f64,
    peak: Arc<Mutex<f64>>,
    sampler: tokio::task::JoinHandle<()>,
}

impl CpuMonitor {
    /// Starts sampling (on the current tokio runtime); `None` without `/proc`.
    pub fn start() -> Option<Self> {
        let cpu_at_start_s = process_cpu_s()?;
        let started = Instant::now();
        let peak = Arc::new(Mutex::new(0.0));
        let sampler = tokio::spawn(sample(cpu_at_start_s, Arc::clone(&peak)));
        Some(Self {
            started,
            cpu_at_start_s,
            peak,
            sampler,
        })
    }

    pub fn stop(self) -> Option<CpuUsage> {
        self.sampler.abort();
        let wall_s = self.started.elapsed().as_secs_f64();
        let cpu_s = (process_cpu_s()? - self.cpu_at_start_s).max(0.0);
        let num_cores = num_cores();
        let mean_cores_busy = if wall_s > 0.0 { cpu_s / wall_s } else { 0.0 };
        let mean_utilization = mean_cores_busy / num_cores as f64;
        let peak = *self.peak.lock().unwrap_or_else(|e| e.into_inner());
        Some(CpuUsage {
            cpu_s,
            wall_s,
            num_cores,
            mean_cores_busy,
            mean_utilization,
            // A run shorter than a window has only its mean.
            peak_utilization: peak.max(mean_utilization),
        })
    }
}

async fn sample(mut last_cpu_s: f64, peak: Arc<Mutex<f64>>) {
    let num_cores = num_cores() as f64;
    let mut last = Instant::now();
    let mut ticker = tokio::time::interval(WINDOW);
    ticker.tick().await;
    loop {
        ticker.tick().await;
        let Some(cpu_s) = process_cpu_s() else { return };
        let now = Instant::now();
        let wall_s = (now - last).as_secs_f64();
        if wall_s > 0.0 {
            let utilization = (cpu_s - last_cpu_s) / wall_s / num_cores;
            let mut peak = peak.lock().unwrap_or_else(|e| e.into_inner());
            *peak = peak.max(utilization);
        }
        last = now;
        last_cpu_s = cpu_s;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_stat_line_with_a_tricky_name() {
        let line = "4242 (pagoda (bench) x) S 1 4242 4242 0 -1 4194560 1043 0 0 0 250 75 0 0 20 0 \
                    9 0 123456 1000000 500 18446744073709551615";
        assert_eq!(parse_proc_stat(line), Some(3.25));
        assert_eq!(parse_proc_stat("garbage"), None);
    }

    #[test]
    fn reads_this_process() {
        if std::path::Path::new("/proc/self/stat").exists() {
            assert!(process_cpu_s().is_some_and(|s| s >= 0.0));
        }
    }
}
