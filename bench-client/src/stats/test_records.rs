//! Hand-built records for the statistics tests.

use crate::record::{ErrorKind, RequestRecord, TokenCountSource};

/// A successful streamed request: due at `target_s`, sent at `send_s`, content chunks at
/// `chunks_s`, ended at `end_s`, with `output_tokens` generated and 10 prompt tokens, naming model
/// `base`.
pub fn streamed(
    index: usize,
    target_s: f64,
    send_s: f64,
    chunks_s: &[f64],
    end_s: f64,
    output_tokens: usize,
) -> RequestRecord {
    RequestRecord {
        index,
        client_id: 0,
        model: Some("base".into()),
        conversation: None,
        target_send_s: target_s,
        actual_send_s: send_s,
        first_token_s: chunks_s.first().copied(),
        chunk_times_s: chunks_s.to_vec(),
        end_s,
        input_tokens: 10,
        output_tokens,
        token_count_source: TokenCountSource::ServerUsage,
        expected_output_tokens: output_tokens,
        error: None,
        error_message: None,
        num_retries: 0,
        generated_text: None,
    }
}

/// A request that failed with `kind` at `end_s`, having received nothing.
pub fn failed(index: usize, send_s: f64, end_s: f64, kind: ErrorKind) -> RequestRecord {
    let mut record = streamed(index, send_s, send_s, &[], end_s, 0);
    record.error = Some(kind);
    record.error_message = Some("failed on purpose".into());
    record
}

/// A varied run of `num_requests` on a 1/1024-second grid (every time is exact in binary, so
/// shifting clocks by whole seconds and back is exact): Poisson-like sends at about 8 req/s,
/// 1 to 3 tokens per chunk, some failures of every kind.
pub fn varied_run(num_requests: usize) -> Vec<RequestRecord> {
    let tick = 1.0 / 1024.0;
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = |modulo: u64| {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 33) % modulo
    };
    let mut target_s = 0.0;
    let mut records = Vec::with_capacity(num_requests);
    for index in 0..num_requests {
        target_s += (next(256) as f64) * tick;
        let send_s = target_s + (next(4) as f64) * tick;
        let mut t = send_s + (20 + next(200)) as f64 * tick;
        let num_chunks = 1 + next(12) as usize;
        let mut chunks_s = Vec::with_capacity(num_chunks);
        for _ in 0..num_chunks {
            chunks_s.push(t);
            t += (5 + next(40)) as f64 * tick;
        }
        let output_tokens = num_chunks + next(2 * num_chunks as u64) as usize;
        let mut record = streamed(index, target_s, send_s, &chunks_s, t, output_tokens);
        record.input_tokens = 50 + next(500) as usize;
        if index % 3 == 0 {
            record.token_count_source = TokenCountSource::Tokenizer;
        }
        records.push(match next(12) {
            0 => failed(index, send_s, t, ErrorKind::Http(503)),
            1 => failed(index, send_s, t, ErrorKind::Timeout),
            _ => record,
        });
    }
    records
}
