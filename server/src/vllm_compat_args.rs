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
        Ok(())
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
        };
        assert!(args(1).check().is_ok());
        let error = args(2).check().expect_err("refused");
        assert!(error.to_string().contains("one device"), "{error}");
    }
}
