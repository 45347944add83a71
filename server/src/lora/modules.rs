//! `--lora-modules` values as vLLM accepts them: `name=path`, or a JSON object
//! `{"name": …, "path": …, "base_model_name": …}`.

use std::path::PathBuf;

use serde::Deserialize;

/// One adapter the server is told about at start or at runtime.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoraModuleSpec {
    pub name: String,
    pub path: PathBuf,
    /// The model it adapts, as `/v1/models` shows it in `parent` (default: the served model).
    #[serde(default)]
    pub base_model_name: Option<String>,
}

impl LoraModuleSpec {
    /// Parses one `--lora-modules` value.
    pub fn parse(value: &str) -> Result<Self, String> {
        let value = value.trim();
        let spec = if value.starts_with('{') {
            serde_json::from_str::<LoraModuleSpec>(value).map_err(|e| {
                format!("--lora-modules {value}: not a {{\"name\", \"path\"}} object: {e}")
            })?
        } else {
            let (name, path) = value.split_once('=').ok_or_else(|| {
                format!("--lora-modules {value}: expected name=path or a JSON object")
            })?;
            LoraModuleSpec {
                name: name.trim().to_string(),
                path: PathBuf::from(path.trim()),
                base_model_name: None,
            }
        };
        check_name(&spec.name).map_err(|e| format!("--lora-modules {value}: {e}"))?;
        if spec.path.as_os_str().is_empty() {
            return Err(format!("--lora-modules {value}: the path is empty"));
        }
        Ok(spec)
    }
}

/// An adapter name must be usable as a `model` value and a label: not empty, no whitespace or
/// control characters, at most 256 bytes.
pub fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("the adapter name is empty".into());
    }
    if name.len() > 256 {
        return Err("the adapter name is longer than 256 bytes".into());
    }
    if name.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("the adapter name {name:?} contains whitespace"));
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn both_forms_parse_and_bad_values_are_named() {
        let plain = LoraModuleSpec::parse("sql=/adapters/sql").unwrap();
        assert_eq!(plain.name, "sql");
        assert_eq!(plain.path, PathBuf::from("/adapters/sql"));
        assert_eq!(plain.base_model_name, None);
        let json = LoraModuleSpec::parse(
            r#"{"name": "chat", "path": "/a/chat", "base_model_name": "smol"}"#,
        )
        .unwrap();
        assert_eq!(json.base_model_name.as_deref(), Some("smol"));
        let unknown_field = r#"{"name": "x", "path": "/p", "bogus": 1}"#;
        for bad in [
            "sql",
            "=/p",
            "a b=/p",
            "sql=",
            r#"{"name": "x"}"#,
            unknown_field,
        ] {
            let error = LoraModuleSpec::parse(bad).unwrap_err();
            assert!(error.starts_with("--lora-modules"), "{error}");
        }
    }
}
