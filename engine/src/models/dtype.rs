//! `ModelDType`: the dtype a model computes in (`--dtype`), and how a device resolves it.

use candle_core::DType;

/// The dtype the model computes in (`--dtype`), named as vLLM names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ModelDType {
    /// Follow the checkpoint's `torch_dtype` where the device supports it.
    #[default]
    Auto,
    F32,
    F16,
    Bf16,
}

impl ModelDType {
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "auto" => Some(Self::Auto),
            "float32" | "f32" | "float" => Some(Self::F32),
            "float16" | "f16" | "half" => Some(Self::F16),
            "bfloat16" | "bf16" => Some(Self::Bf16),
            _ => None,
        }
    }

    /// vLLM's name of the choice.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::F32 => "float32",
            Self::F16 => "float16",
            Self::Bf16 => "bfloat16",
        }
    }

    /// The dtype actually used on a CPU, which computes in f32 whatever the checkpoint's dtype;
    /// logs when an explicit request cannot be honoured.
    pub fn resolve_for_cpu(self) -> candle_core::DType {
        if matches!(self, Self::F16 | Self::Bf16) {
            tracing::warn!(requested = ?self, "the CPU path computes in float32; weights are converted at load");
        }
        candle_core::DType::F32
    }

    /// The dtype a device computes in. The CPU: f32. A GPU: the explicit choice, else the
    /// checkpoint's f16 or bf16, else (f32 checkpoints and GGUF files) bf16, which keeps f32's
    /// range.
    pub fn resolve(self, device: &candle_core::Device, saved: Option<DType>) -> DType {
        if device.is_cpu() {
            return self.resolve_for_cpu();
        }
        match (self, saved) {
            (Self::F32, _) => DType::F32,
            (Self::F16, _) => DType::F16,
            (Self::Bf16, _) => DType::BF16,
            (Self::Auto, Some(DType::F16)) => DType::F16,
            (Self::Auto, _) => DType::BF16,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dtype_names_follow_vllm() {
        assert_eq!(ModelDType::parse("bfloat16"), Some(ModelDType::Bf16));
        assert_eq!(ModelDType::parse("half"), Some(ModelDType::F16));
        assert_eq!(ModelDType::parse("auto"), Some(ModelDType::Auto));
        assert_eq!(ModelDType::parse("int4"), None);
        assert_eq!(ModelDType::Bf16.resolve_for_cpu(), candle_core::DType::F32);
    }
}
