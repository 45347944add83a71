//! Was a failed send a stale keep-alive connection? A server closes idle keep-alive
//! connections (llama.cpp's and uvicorn's after 5 s, pagoda's after `--http-keep-alive-timeout`);
//! when the close crosses a request that the pool handed that connection, the request fails
//! before any response arrived, and sending it again on a fresh connection is safe.
//!
//! What counts (reqwest's error chain, read down to hyper's and the OS's errors): the failure
//! came while sending or awaiting the response head (reqwest's `is_request`), it is not a
//! timeout nor a failure to connect, and it is one of
//! - hyper's `is_incomplete_message`: the connection closed (EOF) before a response head was
//!   complete ("connection closed before message completed");
//! - an I/O error `ConnectionReset`, `BrokenPipe` or `ConnectionAborted`: the peer's socket was
//!   gone when the request was written or the answer awaited.
//!
//! A failure once the response head has arrived (a status, then a broken body) is never one of
//! these: `Response::chunk` errors are reqwest's `is_body`/`is_decode`. hyper reports a close in
//! the middle of the status line the same way as a close before it (no server sends half a
//! status line and stops; that case would be retried).

use std::error::Error as StdError;
use std::io::ErrorKind as IoKind;

/// `error`, from `RequestBuilder::send`, is a stale connection's: nothing of the response
/// arrived and the request may be sent again on a fresh connection.
pub(super) fn closed_before_response(error: &reqwest::Error) -> bool {
    if !error.is_request() || error.is_timeout() || error.is_connect() {
        return false;
    }
    let mut source = error.source();
    while let Some(cause) = source {
        if is_closed_connection(cause) {
            return true;
        }
        source = cause.source();
    }
    false
}

fn is_closed_connection(cause: &(dyn StdError + 'static)) -> bool {
    if let Some(hyper_error) = cause.downcast_ref::<hyper::Error>() {
        return hyper_error.is_incomplete_message();
    }
    if let Some(io_error) = cause.downcast_ref::<std::io::Error>() {
        return matches!(
            io_error.kind(),
            IoKind::ConnectionReset | IoKind::BrokenPipe | IoKind::ConnectionAborted
        );
    }
    false
}
