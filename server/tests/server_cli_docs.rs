//! `pagoda-server`'s `/version` and `/health`, and its `--help` against the flag tables of
//! `docs/server.md` and of `docs/engine.md` (the engine flags every binary shares), both ways:
//! every documented flag exists and every flag is documented.

mod common;

use std::collections::BTreeSet;
use std::process::Command;

use common::api::{client, get};
use common::server::ServerProcess;
use reqwest::StatusCode;
use serde_json::json;

#[tokio::test]
async fn version_and_health_answer() {
    let server = ServerProcess::start(&["--mock"]);
    let client = client();
    let version = get(&client, &server.url("/version")).await;
    assert_eq!(version.status, StatusCode::OK, "{}", version.text());
    assert_eq!(
        version.json(),
        json!({"version": env!("CARGO_PKG_VERSION")})
    );
    let health = get(&client, &server.url("/health")).await;
    assert_eq!(health.status, StatusCode::OK, "{}", health.text());
}

/// `pagoda-server --help`: its output, after checking it exits 0.
fn help_text() -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_pagoda-server"))
        .arg("--help")
        .output()
        .expect("pagoda-server runs");
    assert!(output.status.success(), "--help: {}", output.status);
    String::from_utf8(output.stdout).expect("UTF-8 help")
}

/// The flags `--help` defines: the first `--name` of each option line.
fn defined_flags(help: &str) -> BTreeSet<String> {
    help.lines()
        .filter_map(|line| {
            let line = line.trim_start();
            // A short form first (`-h, --help`, `-q, --quantization`).
            let line = match line.as_bytes() {
                [b'-', short, b',', b' ', ..] if short.is_ascii_alphabetic() => &line[4..],
                _ => line,
            };
            line.strip_prefix("--")
        })
        .map(|rest| {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            format!("--{name}")
        })
        .collect()
}

/// Every `--flag` in the first column of the flag tables of `docs/server.md` and
/// `docs/engine.md` (`--mock-*` kept as a pattern).
fn documented_flags() -> BTreeSet<String> {
    let read = |name: &str| {
        let path = format!("{}/../docs/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    };
    let docs = read("server.md") + &read("engine.md");
    let mut flags = BTreeSet::new();
    for row in docs.lines().filter(|l| l.starts_with("| `--")) {
        let first_column = row.split(" | ").next().unwrap_or("");
        for span in first_column.split('`').skip(1).step_by(2) {
            for word in span.split_whitespace().filter(|w| w.starts_with("--")) {
                let name: String = word
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '*')
                    .collect();
                flags.insert(name);
            }
        }
    }
    flags
}

fn is_listed(flag: &str, listed: &BTreeSet<String>) -> bool {
    listed.iter().any(|entry| match entry.strip_suffix('*') {
        Some(prefix) => flag.starts_with(prefix),
        None => entry == flag,
    })
}

#[test]
fn help_mentions_every_flag_of_the_docs() {
    let defined = defined_flags(&help_text());
    let documented = documented_flags();
    assert!(
        documented.len() >= 30,
        "the tables were read: {documented:?}"
    );
    let missing: Vec<&String> = documented
        .iter()
        .filter(|flag| match flag.strip_suffix('*') {
            Some(prefix) => !defined.iter().any(|d| d.starts_with(prefix)),
            None => !defined.contains(*flag),
        })
        .collect();
    assert!(
        missing.is_empty(),
        "documented but not in --help: {missing:?}"
    );
}

#[test]
fn every_flag_of_the_binary_is_documented() {
    let documented = documented_flags();
    let undocumented: Vec<String> = defined_flags(&help_text())
        .into_iter()
        .filter(|flag| flag != "--help" && flag != "--version")
        .filter(|flag| !is_listed(flag, &documented))
        .collect();
    assert!(
        undocumented.is_empty(),
        "in --help but in no table of docs/server.md or docs/engine.md: {undocumented:?}"
    );
}
