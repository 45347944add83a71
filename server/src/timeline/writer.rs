//! The timeline file: a thread that appends the lines it receives and flushes whenever it has
//! nothing more to write, so a line reaches the disk as soon as the writer is idle.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::mpsc;

use super::clock::UnixClock;

/// Sends finished requests' lines to the writer thread; cheap to clone.
#[derive(Debug, Clone)]
pub struct TimelineWriter {
    lines: mpsc::Sender<String>,
    clock: UnixClock,
}

impl TimelineWriter {
    /// Creates (truncates) `path` and starts the writer thread.
    pub fn create(path: &Path) -> std::io::Result<Self> {
        let file = File::create(path)?;
        let (lines, received) = mpsc::channel::<String>();
        std::thread::Builder::new()
            .name("pagoda-timeline".into())
            .spawn(move || write_lines(BufWriter::new(file), &received))?;
        Ok(Self {
            lines,
            clock: UnixClock::now(),
        })
    }

    pub fn clock(&self) -> &UnixClock {
        &self.clock
    }

    /// Queues one JSON line; dropped silently when the writer thread is gone (a full disk must
    /// not fail requests).
    pub fn send(&self, line: String) {
        let _ = self.lines.send(line);
    }
}

fn write_lines(mut out: BufWriter<File>, received: &mpsc::Receiver<String>) {
    while let Ok(line) = received.recv() {
        let mut ok = writeln!(out, "{line}").is_ok();
        while let Ok(line) = received.try_recv() {
            ok &= writeln!(out, "{line}").is_ok();
        }
        if !ok || out.flush().is_err() {
            tracing::warn!("cannot write the request timeline: lines are being lost");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_reach_the_file_in_order() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("timeline.jsonl");
        let writer = TimelineWriter::create(&path).expect("created");
        for i in 0..100 {
            writer.send(format!("{{\"i\": {i}}}"));
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let text = std::fs::read_to_string(&path).expect("readable");
            if text.lines().count() == 100 {
                let expected: Vec<String> = (0..100).map(|i| format!("{{\"i\": {i}}}")).collect();
                assert_eq!(text.lines().collect::<Vec<_>>(), expected);
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "lines never flushed: {text:?}"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
}
