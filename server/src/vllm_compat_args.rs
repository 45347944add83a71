//! vLLM `serve` flags a deployment's command line carries that mean nothing different here, so
//! that the line runs unchanged instead of stopping at an unknown flag. Each is accepted only
//! where its value holds for this server: one that asks for what it cannot do is refused.

use anyhow::bail;
use clap::Args;

#[derive(Debug, Clone, Args)]
pub struct VllmCompatArgs {
    /// vLLM's; accepted: no model code is ever run from the model's files.
    #[arg(long)]
    pub trust_remote_code: bool,
    /// vLLM's: run without CUDA graphs. Accepted; this engine has none yet, so every step
    /// already runs eagerly.
    #[arg(long)]
    pub enforce_eager: bool,
    /// vLLM's; accepted when 1 (one device per server: run one server per device).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub tensor_parallel_size: usize,
    /// vLLM's; accepted: this server logs no periodic stats line (its stats are on /metrics).
    #[arg(long)]
    pub disable_log_stats: bool,
    /// vLLM's; accepted: usage always carries `prompt_tokens_details.cached_tokens` here.
    #[arg(long)]
    pub enable_prompt_tokens_details: bool,
    /// vLLM's: every stream ends with a usage chunk, whether the request asked for it
    /// (`stream_options.include_usage`) or not — for gateways that bill by usage.
    #[arg(long)]
    pub enable_force_include_usage: bool,
    /// vLLM's: log-probabilities name tokens `token_id:{id}` instead of by their text, unless a
    /// request's own `return_tokens_as_token_ids` says otherwise.
    #[arg(long, env = "PAGODA_RETURN_TOKENS_AS_TOKEN_IDS")]
    pub return_tokens_as_token_ids: bool,
    /// vLLM's: the role of the chat replies' messages when the prompt ends with the generation
    /// prompt (otherwise the last message's role).
    #[arg(
        long,
        env = "PAGODA_RESPONSE_ROLE",
        value_name = "ROLE",
        default_value = "assistant"
    )]
    pub response_role: String,
    /// vLLM's: a path prefix a proxy may leave on requests (`/prefix/v1/models`); requests are
    /// served with or without it.
    #[arg(long, env = "PAGODA_ROOT_PATH", value_name = "PATH")]
    pub root_path: Option<String>,
    /// vLLM's CPU swap space in GiB; accepted: a preempted sequence is recomputed, never swapped.
    #[arg(long, value_name = "GIB")]
    pub swap_space: Option<f64>,
    /// vLLM's longest sequence a CUDA graph covers; accepted: no CUDA graphs yet.
    #[arg(long, value_name = "N")]
    pub max_seq_len_to_capture: Option<usize>,
    /// vLLM's weight quantization method: only `gguf` is accepted (a GGUF file's quantization
    /// is read from the file; --weight-format chooses the CPU kernels).
    #[arg(long, short = 'q', value_name = "METHOD")]
    pub quantization: Option<String>,
}

impl VllmCompatArgs {
    pub fn check(&self) -> anyhow::Result<()> {
        if self.tensor_parallel_size != 1 {
            bail!(
                "--tensor-parallel-size {}: pagoda-server runs a model on one device; run one \
                 server per device behind a load balancer",
                self.tensor_parallel_size
            );
        }
        if let Some(method) = self.quantization.as_deref() {
            if !method.eq_ignore_ascii_case("gguf") {
                bail!(
                    "--quantization {method}: weights run in the format their file holds (GGUF \
                     quantizations, or f32/f16/bf16 safetensors); only `gguf` is accepted, and \
                     --weight-format chooses the CPU kernels"
                );
            }
        }
        if self.response_role.trim().is_empty() {
            bail!("--response-role must name a role");
        }
        self.root_path()?;
        Ok(())
    }

    /// `--root-path` as a prefix to strip: `/` added in front, no trailing `/`; `None` for none
    /// or `/`.
    pub fn root_path(&self) -> anyhow::Result<Option<String>> {
        let Some(path) = self.root_path.as_deref().map(str::trim) else {
            return Ok(None);
        };
        if path.contains(['?', '#', ' ']) {
            bail!("--root-path {path:?} must be a plain path such as /llm");
        }
        let trimmed = path.trim_matches('/');
        Ok((!trimmed.is_empty()).then(|| format!("/{trimmed}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_one_device_is_accepted() {
        let args = |n| VllmCompatArgs {
            trust_remote_code: true,
            enforce_eager: true,
            tensor_parallel_size: n,
            disable_log_stats: true,
            enable_prompt_tokens_details: true,
            enable_force_include_usage: false,
            return_tokens_as_token_ids: false,
            response_role: "assistant".into(),
            root_path: None,
            swap_space: Some(4.0),
            max_seq_len_to_capture: Some(8192),
            quantization: None,
        };
        assert!(args(1).check().is_ok());
        let error = args(2).check().expect_err("refused");
        assert!(error.to_string().contains("one device"), "{error}");
    }

    #[test]
    fn root_paths_are_normalised_and_a_role_is_required() {
        let with = |root: Option<&str>, role: &str| VllmCompatArgs {
            trust_remote_code: false,
            enforce_eager: false,
            tensor_parallel_size: 1,
            disable_log_stats: false,
            enable_prompt_tokens_details: false,
            enable_force_include_usage: false,
            return_tokens_as_token_ids: false,
            response_role: role.into(),
            root_path: root.map(str::to_string),
            swap_space: None,
            max_seq_len_to_capture: None,
            quantization: None,
        };
        for (given, expected) in [
            (None, None),
            (Some("/"), None),
            (Some("llm"), Some("/llm")),
            (Some("/llm/v2/"), Some("/llm/v2")),
        ] {
            let args = with(given, "assistant");
            assert!(args.check().is_ok());
            assert_eq!(args.root_path().expect("valid").as_deref(), expected);
        }
        assert!(with(Some("/a?b"), "assistant").check().is_err());
        assert!(with(None, " ").check().is_err());
        let quantized = |method: &str| VllmCompatArgs {
            quantization: Some(method.into()),
            ..with(None, "assistant")
        };
        assert!(quantized("gguf").check().is_ok());
        let error = quantized("awq").check().expect_err("refused");
        assert!(error.to_string().contains("--weight-format"), "{error}");
    }
}
