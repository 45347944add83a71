//! `KvCacheDType`: the element type the paged KV cache stores (`--kv-cache-dtype`), and how a
//! device resolves `auto`.

use candle_core::DType;

use crate::models::dtype::ModelDType;

/// What the KV cache stores keys and values in (`--kv-cache-dtype`, vLLM's flag name).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KvCacheDType {
    /// The device's choice: f16 on the CPU, the model's compute dtype on a GPU.
    #[default]
    Auto,
    F32,
    F16,
    Bf16,
}

/// The accepted `--kv-cache-dtype` values, as `KvCacheDType::parse` spells them first.
pub const KV_CACHE_DTYPES: &[&str] = &["auto", "f32", "f16", "bf16"];

impl KvCacheDType {
    /// What `auto` means on the CPU: f16 halves the cache's memory and bandwidth (llama.cpp's
    /// default too); the default model's greedy outputs are unchanged by it (docs/engine.md).
    pub const CPU_AUTO: Self = Self::F16;

    /// `auto`, `f32`, `f16`, `bf16`; vLLM's and candle's long names are accepted too.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "auto" => Some(Self::Auto),
            "f32" | "float32" | "float" => Some(Self::F32),
            "f16" | "float16" | "half" => Some(Self::F16),
            "bf16" | "bfloat16" => Some(Self::Bf16),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::F32 => "f32",
            Self::F16 => "f16",
            Self::Bf16 => "bf16",
        }
    }

    /// The element type of an explicit choice (`None` for `auto`).
    pub fn explicit_dtype(self) -> Option<DType> {
        match self {
            Self::Auto => None,
            Self::F32 => Some(DType::F32),
            Self::F16 => Some(DType::F16),
            Self::Bf16 => Some(DType::BF16),
        }
    }

    /// What the CPU cache stores: the explicit choice, else `CPU_AUTO`.
    pub fn resolve_for_cpu(self) -> DType {
        match self.explicit_dtype() {
            Some(dtype) => dtype,
            None => Self::CPU_AUTO.resolve_for_cpu(),
        }
    }

    /// On a GPU the cache stores the model's compute dtype, which its kernels read and write in
    /// the same type as the activations: an explicit choice must be that dtype, and since the
    /// checkpoint decides `--dtype auto` only once it is loaded, it must name `--dtype` too.
    pub fn check_for_gpu(self, compute: ModelDType) -> Result<(), String> {
        let Some(wanted) = self.explicit_dtype() else {
            return Ok(());
        };
        let compute_dtype = match compute {
            ModelDType::Auto => None,
            ModelDType::F32 => Some(DType::F32),
            ModelDType::F16 => Some(DType::F16),
            ModelDType::Bf16 => Some(DType::BF16),
        };
        if compute_dtype == Some(wanted) {
            return Ok(());
        }
        Err(format!(
            "--kv-cache-dtype {} is not supported on CUDA with --dtype {}: the GPU cache stores the \
             model's compute dtype; use --kv-cache-dtype auto, or set --dtype to the same type",
            self.as_str(),
            compute.as_str()
        ))
    }

    /// The resolved name of a cache element type (for logs and `EngineInfo`).
    pub fn of_dtype(dtype: DType) -> Self {
        match dtype {
            DType::F16 => Self::F16,
            DType::BF16 => Self::Bf16,
            _ => Self::F32,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_print_back() {
        for name in KV_CACHE_DTYPES {
            assert_eq!(
                KvCacheDType::parse(name).map(KvCacheDType::as_str),
                Some(*name)
            );
        }
        assert_eq!(KvCacheDType::parse("bfloat16"), Some(KvCacheDType::Bf16));
        assert_eq!(KvCacheDType::parse("half"), Some(KvCacheDType::F16));
        assert_eq!(KvCacheDType::parse("fp8"), None);
    }

    #[test]
    fn the_cpu_stores_the_explicit_choice_else_f16() {
        assert_eq!(KvCacheDType::Auto.resolve_for_cpu(), DType::F16);
        assert_eq!(KvCacheDType::F32.resolve_for_cpu(), DType::F32);
        assert_eq!(KvCacheDType::Bf16.resolve_for_cpu(), DType::BF16);
    }

    #[test]
    fn the_gpu_takes_auto_or_the_explicit_compute_dtype_only() {
        assert!(KvCacheDType::Auto.check_for_gpu(ModelDType::Auto).is_ok());
        assert!(KvCacheDType::Bf16.check_for_gpu(ModelDType::Bf16).is_ok());
        let error = KvCacheDType::F16
            .check_for_gpu(ModelDType::Bf16)
            .expect_err("f16 cache, bf16 compute");
        assert!(error.contains("--kv-cache-dtype f16"), "{error}");
        assert!(KvCacheDType::F32.check_for_gpu(ModelDType::Auto).is_err());
    }
}
