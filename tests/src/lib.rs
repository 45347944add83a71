//! Helpers for the end-to-end tests: locating the workspace's binaries and running
//! `pagoda-server` on a free port. Used by the tests in `tests/tests/` and by `server/tests/`.

pub mod bench;
pub mod binaries;
pub mod browser;
pub mod html;
pub mod metric_names;
pub mod prometheus;
pub mod server;
pub mod tls;
pub mod tools;
