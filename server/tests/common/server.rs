//! The server-running helpers live in the end-to-end crate (`tests/src/server.rs`), shared with
//! the tests of the bench client.
pub use pagoda_e2e::server::*;
