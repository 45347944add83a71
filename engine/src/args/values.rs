//! Parsers of the engine flags' values: devices, byte sizes, dtypes (of the model and of the KV
//! cache), load and weight formats, the speculative-decoding JSON.

use crate::config::{ItlTarget, KvCacheDType, ModelDType, KV_CACHE_DTYPES};
use crate::device::DeviceSpec;
use crate::models::{LoadFormat, WeightFormat};
use crate::spec_decode::SpeculativeConfig;

/// `--device`: a device, or `auto` (the first GPU when this build has CUDA and one opens).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceArg {
    Auto,
    Exact(DeviceSpec),
}

impl DeviceArg {
    pub fn resolve(self) -> DeviceSpec {
        match self {
            Self::Exact(spec) => spec,
            Self::Auto if crate::device::cuda_available(0) => DeviceSpec::Cuda(0),
            Self::Auto => DeviceSpec::Cpu,
        }
    }
}

pub fn parse_device(text: &str) -> Result<DeviceArg, String> {
    if text == "auto" {
        return Ok(DeviceArg::Auto);
    }
    DeviceSpec::parse(text)
        .map(DeviceArg::Exact)
        .ok_or_else(|| format!("unknown device {text:?}; expected auto, cpu, cuda or cuda:N"))
}

/// `--itl-target-ms`: `auto`, a number of milliseconds, or `0`/`off`.
pub fn parse_itl_target(text: &str) -> Result<ItlTarget, String> {
    ItlTarget::parse(text)
}

pub fn parse_load_format(text: &str) -> Result<LoadFormat, String> {
    LoadFormat::parse(text)
        .ok_or_else(|| format!("unknown load format {text:?}; expected auto or dummy"))
}

/// The `--weight-format` values, as `WeightFormat::parse` spells them.
pub const WEIGHT_FORMATS: &[&str] = &["auto", "int4", "int8", "f32", "native", "vnni", "vnni15"];

pub fn parse_dtype(text: &str) -> Result<ModelDType, String> {
    ModelDType::parse(text).ok_or_else(|| {
        format!("unknown dtype {text:?}; expected auto, float32, float16 or bfloat16")
    })
}

pub fn parse_kv_cache_dtype(text: &str) -> Result<KvCacheDType, String> {
    KvCacheDType::parse(text).ok_or_else(|| {
        format!(
            "unknown KV-cache dtype {text:?} (one of: {})",
            KV_CACHE_DTYPES.join(", ")
        )
    })
}

pub fn parse_weight_format(text: &str) -> Result<WeightFormat, String> {
    WeightFormat::parse(text).ok_or_else(|| {
        format!(
            "unknown weight format {text:?} (one of: {})",
            WEIGHT_FORMATS.join(", ")
        )
    })
}

/// `1073741824`, `1024KiB`, `512MiB`, `1GiB` (also `K`/`M`/`G` and `KB`/`MB`/`GB`, all powers of 2).
pub fn parse_bytes(text: &str) -> Result<usize, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let number: usize = digits.parse().map_err(|_| {
        format!("expected a number of bytes such as 1073741824 or 1GiB, got {text:?}")
    })?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        other => return Err(format!("unknown unit {other:?} (use KiB, MiB or GiB)")),
    };
    number
        .checked_mul(1 << shift)
        .filter(|&bytes| bytes > 0)
        .ok_or_else(|| format!("{text:?} must be more than 0 and fit in memory"))
}

#[cfg(test)]
mod tests {
    use crate::config::DEFAULT_KV_CACHE_MEMORY_BYTES;

    use super::*;

    #[test]
    fn byte_sizes_parse_with_binary_units() {
        assert_eq!(parse_bytes("1GiB"), Ok(DEFAULT_KV_CACHE_MEMORY_BYTES));
        assert_eq!(parse_bytes("512MiB"), Ok(512 << 20));
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert_eq!(parse_bytes("2 k"), Ok(2048));
        assert!(parse_bytes("0").is_err());
        assert!(parse_bytes("1TiB").is_err());
        assert!(parse_bytes("lots").is_err());
    }

    #[test]
    fn kv_cache_dtypes_parse_and_unknown_ones_are_listed() {
        assert_eq!(parse_kv_cache_dtype("auto"), Ok(KvCacheDType::Auto));
        assert_eq!(parse_kv_cache_dtype("float16"), Ok(KvCacheDType::F16));
        assert!(parse_kv_cache_dtype("fp8_e4m3").is_err_and(|e| e.contains("auto, f32, f16, bf16")));
        assert!(parse_kv_cache_dtype("").is_err());
    }

    #[test]
    fn every_documented_weight_format_parses() {
        for name in WEIGHT_FORMATS {
            assert!(parse_weight_format(name).is_ok(), "{name}");
        }
        assert!(WEIGHT_FORMATS.contains(&WeightFormat::default().as_str()));
        assert!(parse_weight_format("q4")
            .is_err_and(|e| e.contains("auto, int4, int8, f32, native, vnni")));
    }
}

/// `--max-logprobs`: a count, or `None` for the whole vocabulary (`-1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MaxLogprobs(pub Option<usize>);

pub fn parse_max_logprobs(text: &str) -> Result<MaxLogprobs, String> {
    match text.trim() {
        "-1" => Ok(MaxLogprobs(None)),
        other => other
            .parse::<usize>()
            .map(|n| MaxLogprobs(Some(n)))
            .map_err(|_| {
                format!(
                    "expected a count of alternatives or -1 (the whole vocabulary), got `{text}`"
                )
            }),
    }
}

/// `--speculative-config`: vLLM's JSON (see `SpeculativeConfig::from_json`).
pub fn parse_speculative_config(text: &str) -> Result<SpeculativeConfig, String> {
    SpeculativeConfig::from_json(text).map_err(|e| e.to_string())
}
