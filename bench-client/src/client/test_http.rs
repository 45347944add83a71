//! Tests only: the raw HTTP/1.1 pieces of the scripted servers the client's tests run on
//! 127.0.0.1.

use tokio::io::{AsyncRead, AsyncReadExt};

/// Reads one request (head and `content-length` body); its body, or `None` at end of stream.
pub async fn read_request<S: AsyncRead + Unpin>(stream: &mut S) -> Option<Vec<u8>> {
    let mut buffer = Vec::new();
    let mut piece = [0u8; 4096];
    loop {
        if let Some(end) = find(&buffer, b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buffer[..end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|line| line.strip_prefix("content-length:"))
                .and_then(|value| value.trim().parse().ok())
                .unwrap_or(0);
            let body_start = end + 4;
            if buffer.len() >= body_start + length {
                return Some(buffer[body_start..body_start + length].to_vec());
            }
        }
        match stream.read(&mut piece).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buffer.extend_from_slice(&piece[..n]),
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}
