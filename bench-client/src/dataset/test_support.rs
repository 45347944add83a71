//! Shared by the dataset tests: the default model's tokenizer, loaded once.

use std::path::PathBuf;
use std::sync::OnceLock;

use pagoda_text::tokenizer::TextTokenizer;

/// The default model: `models/` of the repository, or `$PAGODA_MODEL_DIR` (as
/// `scripts/fetch-default-model.sh` uses). Fails the test when it is missing.
pub fn model_path() -> PathBuf {
    pagoda_e2e::tools::default_model()
}

/// The default model's tokenizer (read from the GGUF header once per test binary).
pub fn tokenizer() -> &'static TextTokenizer {
    static TOKENIZER: OnceLock<TextTokenizer> = OnceLock::new();
    TOKENIZER
        .get_or_init(|| TextTokenizer::from_gguf(model_path()).expect("default model's tokenizer"))
}

/// A file under `bench-client/tests/data/`.
pub fn data_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}
