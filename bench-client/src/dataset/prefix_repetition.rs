//! The `prefix-repetition` dataset (as vLLM's): a few random prefixes, each request one of them
//! followed by its own random suffix — the workload a prefix cache is measured with.

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::error::DatasetError;
use super::exact_len::ExactTextGenerator;
use super::parallel;
use crate::workload::RequestSpec;

/// `--prefix-repetition-num-prefixes`, `-prefix-len`, `-suffix-len`, `-output-len`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrefixRepetitionConfig {
    pub num_prefixes: usize,
    pub prefix_tokens: usize,
    pub suffix_tokens: usize,
    pub output_tokens: usize,
}

impl Default for PrefixRepetitionConfig {
    /// vLLM's defaults.
    fn default() -> Self {
        Self {
            num_prefixes: 10,
            prefix_tokens: 256,
            suffix_tokens: 256,
            output_tokens: 128,
        }
    }
}

impl PrefixRepetitionConfig {
    fn validate(&self) -> Result<(), DatasetError> {
        let invalid = |msg: &str| Err(DatasetError::InvalidConfig(msg.to_string()));
        if self.num_prefixes == 0 {
            return invalid("--prefix-repetition-num-prefixes must be at least 1");
        }
        if self.prefix_tokens + self.suffix_tokens == 0 {
            return invalid(
                "prefix-repetition prompts need a prefix or a suffix of at least 1 token",
            );
        }
        if self.output_tokens == 0 {
            return invalid("--prefix-repetition-output-len must be at least 1");
        }
        Ok(())
    }
}

/// Request `i` gets prefix `i mod num_prefixes` (every prefix is used equally often, give or take
/// one request), then the requests are shuffled.
pub(super) fn build(
    config: &PrefixRepetitionConfig,
    num_prompts: usize,
    generator: &ExactTextGenerator,
    rng: &mut impl Rng,
) -> Result<Vec<RequestSpec>, DatasetError> {
    config.validate()?;
    let prefixes = (0..config.num_prefixes)
        .map(|_| generator.text(config.prefix_tokens, rng))
        .collect::<Result<Vec<_>, _>>()?;
    let seeds: Vec<u64> = (0..num_prompts).map(|_| rng.random()).collect();
    let indexed: Vec<(usize, u64)> = seeds.into_iter().enumerate().collect();
    let mut requests = parallel::try_map(&indexed, |&(index, seed)| -> Result<_, DatasetError> {
        let prefix = &prefixes[index % prefixes.len()];
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let suffix = generator.continuation(prefix, config.suffix_tokens, &mut rng)?;
        Ok(RequestSpec::text(
            format!("{}{suffix}", prefix.text),
            config.prefix_tokens + config.suffix_tokens,
            config.output_tokens,
        ))
    })?;
    requests.shuffle(rng);
    Ok(requests)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::dataset::test_support::tokenizer;

    #[test]
    fn requests_share_prefixes_evenly_with_exact_lengths() {
        let config = PrefixRepetitionConfig {
            num_prefixes: 4,
            prefix_tokens: 64,
            suffix_tokens: 17,
            output_tokens: 9,
        };
        let generator = ExactTextGenerator::new(tokenizer()).unwrap();
        let requests = build(&config, 30, &generator, &mut ChaCha8Rng::seed_from_u64(2)).unwrap();
        assert_eq!(requests.len(), 30);
        let mut uses: HashMap<Vec<u32>, usize> = HashMap::new();
        let mut prefix_order = Vec::new();
        for request in &requests {
            let ids = tokenizer()
                .encode(&request.prompt.as_text(), false)
                .unwrap();
            assert_eq!(ids.len(), 64 + 17);
            assert_eq!(request.input_tokens, 64 + 17);
            assert_eq!(request.output_tokens, 9);
            let prefix = ids[..64].to_vec();
            prefix_order.push(prefix.clone());
            *uses.entry(prefix).or_default() += 1;
        }
        let mut counts: Vec<usize> = uses.values().copied().collect();
        counts.sort_unstable();
        assert_eq!(
            counts,
            vec![7, 7, 8, 8],
            "each prefix's share of 30 requests"
        );
        let round_robin = (0..30).all(|i| prefix_order[i] == prefix_order[i % 4]);
        assert!(!round_robin, "requests should be shuffled");
        let suffixes: std::collections::HashSet<String> =
            requests.iter().map(|r| r.prompt.as_text()).collect();
        assert_eq!(suffixes.len(), 30, "every suffix is unique");
    }

    #[test]
    fn rejects_invalid_options() {
        let generator = ExactTextGenerator::new(tokenizer()).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        for config in [
            PrefixRepetitionConfig {
                num_prefixes: 0,
                ..Default::default()
            },
            PrefixRepetitionConfig {
                prefix_tokens: 0,
                suffix_tokens: 0,
                ..Default::default()
            },
            PrefixRepetitionConfig {
                output_tokens: 0,
                ..Default::default()
            },
        ] {
            assert!(build(&config, 1, &generator, &mut rng).is_err());
        }
    }
}
