//! One request's timeline line: filled in as the response is written, sent to the file when the
//! response is done or dropped (a client that went away still leaves its line, marked
//! `"completed": false`).

use std::time::Instant;

use pagoda_engine::{RequestTimings, Usage};
use serde::Serialize;

use super::writer::TimelineWriter;

/// What a response write carried (see the module's doc of `timeline`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteKind {
    Opening,
    Delta,
    Finish,
    Usage,
    Error,
    Done,
    Response,
}

impl WriteKind {
    pub fn as_str(self) -> &'static str {
        match self {
            WriteKind::Opening => "opening",
            WriteKind::Delta => "delta",
            WriteKind::Finish => "finish",
            WriteKind::Usage => "usage",
            WriteKind::Error => "error",
            WriteKind::Done => "done",
            WriteKind::Response => "response",
        }
    }
}

/// One request's timeline, written as a line when dropped.
#[derive(Debug)]
pub struct RequestTrace {
    writer: TimelineWriter,
    request_id: String,
    received: Instant,
    stream: bool,
    /// The first finished choice's engine times.
    timings: Option<RequestTimings>,
    prompt_tokens: usize,
    completion_tokens: usize,
    num_preemptions: u32,
    writes: Vec<(Instant, WriteKind)>,
    completed: bool,
}

impl RequestTrace {
    pub fn new(
        writer: TimelineWriter,
        request_id: String,
        received: Instant,
        stream: bool,
    ) -> Self {
        Self {
            writer,
            request_id,
            received,
            stream,
            timings: None,
            prompt_tokens: 0,
            completion_tokens: 0,
            num_preemptions: 0,
            writes: Vec::new(),
            completed: false,
        }
    }

    /// A choice finished: its tokens count, the first one's engine times are kept.
    pub fn on_finished(&mut self, timings: &RequestTimings, usage: &Usage) {
        if self.timings.is_none() {
            self.timings = Some(*timings);
            self.prompt_tokens = usage.prompt_tokens;
        }
        self.completion_tokens += usage.completion_tokens;
        self.num_preemptions += timings.num_preemptions;
    }

    /// A write of `kind` was handed to the connection now; `Done` and `Response` complete the
    /// request.
    pub fn on_write(&mut self, kind: WriteKind) {
        self.writes.push((Instant::now(), kind));
        if matches!(kind, WriteKind::Done | WriteKind::Response) {
            self.completed = true;
        }
    }

    /// The line as it is written.
    fn line(&self) -> TimelineLine<'_> {
        let clock = self.writer.clock();
        let unix = |at: Instant| clock.unix_s(at);
        let timings = self.timings.as_ref();
        TimelineLine {
            request_id: &self.request_id,
            received_unix_s: unix(self.received),
            queued_unix_s: timings.map(|t| unix(t.queued)),
            scheduled_unix_s: timings.and_then(|t| t.first_scheduled).map(unix),
            first_token_unix_s: timings.and_then(|t| t.first_token).map(unix),
            finished_unix_s: timings.map(|t| unix(t.finished)),
            prompt_tokens: self.prompt_tokens,
            completion_tokens: self.completion_tokens,
            num_preemptions: self.num_preemptions,
            stream: self.stream,
            completed: self.completed,
            writes: self
                .writes
                .iter()
                .map(|&(at, kind)| (unix(at), kind.as_str()))
                .collect(),
        }
    }
}

/// One request's line in the timeline file (`--request-timeline`, docs/server.md).
#[derive(Debug, Serialize)]
struct TimelineLine<'a> {
    request_id: &'a str,
    received_unix_s: f64,
    queued_unix_s: Option<f64>,
    scheduled_unix_s: Option<f64>,
    first_token_unix_s: Option<f64>,
    finished_unix_s: Option<f64>,
    prompt_tokens: usize,
    completion_tokens: usize,
    num_preemptions: u32,
    stream: bool,
    completed: bool,
    /// Each write handed to the connection: when (Unix seconds) and what it carried.
    writes: Vec<(f64, &'static str)>,
}

impl Drop for RequestTrace {
    fn drop(&mut self) {
        let line = serde_json::to_string(&self.line()).expect("a timeline line serializes");
        self.writer.send(line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_trace_becomes_one_line_with_its_times_in_order() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("t.jsonl");
        let writer = TimelineWriter::create(&path).expect("created");
        let received = Instant::now();
        let mut trace = RequestTrace::new(writer, "req-1".into(), received, true);
        let timings = RequestTimings {
            queued: received + Duration::from_millis(1),
            first_scheduled: Some(received + Duration::from_millis(2)),
            first_token: Some(received + Duration::from_millis(5)),
            finished: received + Duration::from_millis(9),
            num_preemptions: 1,
        };
        let usage = Usage {
            prompt_tokens: 7,
            completion_tokens: 3,
            num_cached_tokens: 0,
            spec_decode: None,
        };
        trace.on_write(WriteKind::Opening);
        trace.on_write(WriteKind::Delta);
        trace.on_finished(&timings, &usage);
        trace.on_write(WriteKind::Done);
        let line = serde_json::to_value(trace.line()).expect("serializes");
        drop(trace);
        assert_eq!(line["request_id"], "req-1");
        assert_eq!(line["completed"], true);
        assert_eq!(line["prompt_tokens"], 7);
        assert_eq!(line["num_preemptions"], 1);
        let at = |key: &str| line[key].as_f64().expect(key);
        assert!((at("scheduled_unix_s") - at("received_unix_s") - 0.002).abs() < 1e-6);
        assert!((at("finished_unix_s") - at("first_token_unix_s") - 0.004).abs() < 1e-6);
        let kinds: Vec<&str> = line["writes"]
            .as_array()
            .expect("writes")
            .iter()
            .map(|w| w[1].as_str().unwrap_or(""))
            .collect();
        assert_eq!(kinds, ["opening", "delta", "done"]);
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::fs::read_to_string(&path)
            .unwrap_or_default()
            .lines()
            .count()
            < 1
        {
            assert!(Instant::now() < deadline, "the dropped trace wrote no line");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}
