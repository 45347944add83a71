//! `--backend`, as `vllm bench serve` names its request formats, resolved against `--endpoint`
//! into the one endpoint a run uses, and the `backend` name its result records.
//!
//! vLLM's `vllm` and `openai` backends send `/v1/completions` requests, `openai-chat` sends
//! `/v1/chat/completions`; its other backends (audio, embeddings, rerank, pooling) are not
//! text generation and are refused.

use anyhow::bail;

use crate::cli::serve_args::EndpointArg;

/// The `--backend` values we honour and the endpoint each selects.
pub const SUPPORTED_BACKENDS: &[(&str, EndpointArg)] = &[
    ("openai", EndpointArg::Completions),
    ("vllm", EndpointArg::Completions),
    ("openai-chat", EndpointArg::Chat),
];

/// The endpoint of a run: `--backend`'s, `--endpoint`'s (which must agree when both are given),
/// else chat completions.
pub fn resolve_endpoint(
    backend: Option<&str>,
    endpoint: Option<EndpointArg>,
) -> anyhow::Result<EndpointArg> {
    let Some(backend) = backend else {
        return Ok(endpoint.unwrap_or(EndpointArg::Chat));
    };
    let Some(&(_, selected)) = SUPPORTED_BACKENDS.iter().find(|(name, _)| *name == backend) else {
        bail!(
            "--backend {backend:?} is not supported; supported: {}",
            supported_list()
        );
    };
    match endpoint {
        Some(given) if given != selected => bail!(
            "--backend {backend} sends to {} but --endpoint says {}; give one of them",
            path(selected),
            path(given)
        ),
        _ => Ok(selected),
    }
}

/// The result's `backend`: `--backend` as given, else vLLM's name for the endpoint
/// (`openai-chat` or `openai`).
pub fn backend_name(backend: Option<&str>, endpoint: EndpointArg) -> String {
    match (backend, endpoint) {
        (Some(name), _) => name.to_string(),
        (None, EndpointArg::Chat) => "openai-chat".to_string(),
        (None, EndpointArg::Completions) => "openai".to_string(),
    }
}

fn supported_list() -> String {
    SUPPORTED_BACKENDS
        .iter()
        .map(|(name, endpoint)| format!("{name} ({})", path(*endpoint)))
        .collect::<Vec<_>>()
        .join(", ")
}

fn path(endpoint: EndpointArg) -> &'static str {
    match endpoint {
        EndpointArg::Chat => "/v1/chat/completions",
        EndpointArg::Completions => "/v1/completions",
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::serve_args::ServeArgs;

    #[derive(Debug, Parser)]
    struct Command {
        #[command(flatten)]
        serve: ServeArgs,
    }

    /// The endpoint and result backend name of a command line's flags.
    fn resolve(flags: &[&str]) -> anyhow::Result<(EndpointArg, String)> {
        let args =
            Command::try_parse_from(std::iter::once("serve").chain(flags.iter().copied()))?.serve;
        let endpoint = resolve_endpoint(args.backend.as_deref(), args.endpoint)?;
        Ok((endpoint, backend_name(args.backend.as_deref(), endpoint)))
    }

    fn ok(flags: &[&str]) -> (EndpointArg, String) {
        resolve(flags).expect("resolves")
    }

    #[test]
    fn backends_select_vllms_endpoints() {
        let completions = EndpointArg::Completions;
        assert_eq!(ok(&["--backend", "openai"]), (completions, "openai".into()));
        assert_eq!(ok(&["--backend", "vllm"]), (completions, "vllm".into()));
        let chat = (EndpointArg::Chat, "openai-chat".to_string());
        assert_eq!(ok(&["--backend", "openai-chat"]), chat);
    }

    #[test]
    fn without_backend_the_endpoint_decides() {
        assert_eq!(ok(&[]), (EndpointArg::Chat, "openai-chat".into()));
        let completions = ["--endpoint", "/v1/completions"];
        assert_eq!(
            ok(&completions),
            (EndpointArg::Completions, "openai".into())
        );
    }

    #[test]
    fn agreeing_flags_are_accepted_and_disagreeing_ones_refused() {
        let agree = ["--backend", "vllm", "--endpoint", "/v1/completions"];
        assert_eq!(ok(&agree), (EndpointArg::Completions, "vllm".into()));
        let agree_chat = [
            "--backend",
            "openai-chat",
            "--endpoint",
            "/v1/chat/completions",
        ];
        assert_eq!(ok(&agree_chat).0, EndpointArg::Chat);
        let disagree = ["--backend", "openai", "--endpoint", "/v1/chat/completions"];
        let error = resolve(&disagree).expect_err("refused").to_string();
        assert!(
            error.contains("--backend openai") && error.contains("--endpoint"),
            "{error}"
        );
    }

    #[test]
    fn other_backends_are_refused_naming_the_supported_ones() {
        for backend in ["openai-audio", "tgi", "openai-embeddings", "OpenAI"] {
            let error = resolve(&["--backend", backend])
                .expect_err("refused")
                .to_string();
            for (name, _) in SUPPORTED_BACKENDS {
                assert!(error.contains(name), "{error}");
            }
            assert!(error.contains(backend), "{error}");
        }
    }
}
