//! Which model each request names: with `--lora-modules a,b,c` every request's `model` is one of
//! the listed LoRA adapters instead of the run's model, picked per request index, so that a
//! server serving several adapters is measured as its users load it (`vllm bench serve
//! --lora-modules`).
//!
//! The pick depends only on the request's index, the names and the seed, never on timing: the
//! same seed gives the same request the same adapter in every run, at every load of a sweep and
//! for every dataset. A name is only a name: listing the base model's served name among the
//! adapters sends that share of the requests to the base model, and a name listed twice is
//! picked twice as often.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::workload::RequestSpec;

/// Mixed into `--seed` so that the adapter picks are not the same random stream as the dataset's
/// (which is seeded with `--seed` itself).
const SEED_SALT: u64 = 0x4C6F_5241_2D6D_6F64;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoraError {
    #[error(
        "an adapter name is empty: give names separated by commas or spaces, e.g. \
         --lora-modules sql-lora,chat-lora"
    )]
    EmptyName,
    #[error("no adapter names: --lora-modules needs at least one")]
    NoNames,
}

/// How each request's adapter is picked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoraAssignment {
    /// Uniformly at random, seeded by `--seed` (vLLM's behaviour).
    Random,
    /// Request `i` gets adapter `i mod n`, in the order listed.
    RoundRobin,
}

impl LoraAssignment {
    /// The name on the command line and in the result: `random` or `round-robin`.
    pub fn name(self) -> &'static str {
        match self {
            LoraAssignment::Random => "random",
            LoraAssignment::RoundRobin => "round-robin",
        }
    }
}

/// One adapter name as given on the command line: trimmed, never empty.
pub fn parse_adapter_name(text: &str) -> Result<String, LoraError> {
    let name = text.trim();
    if name.is_empty() {
        return Err(LoraError::EmptyName);
    }
    Ok(name.to_string())
}

/// The adapters requests pick from and how they pick.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoraPlan {
    names: Vec<String>,
    assignment: LoraAssignment,
}

impl LoraPlan {
    /// A plan over `names` (at least one, none empty; repeats allowed).
    pub fn new(names: Vec<String>, assignment: LoraAssignment) -> Result<Self, LoraError> {
        if names.is_empty() {
            return Err(LoraError::NoNames);
        }
        if names.iter().any(|name| name.trim().is_empty()) {
            return Err(LoraError::EmptyName);
        }
        Ok(Self { names, assignment })
    }

    pub fn names(&self) -> &[String] {
        &self.names
    }

    pub fn assignment(&self) -> LoraAssignment {
        self.assignment
    }

    /// The adapter of each of `num_requests` requests, by index. A prefix of a longer run's
    /// picks: request `i`'s adapter does not depend on how many requests follow it.
    pub fn models(&self, num_requests: usize, seed: u64) -> Vec<&str> {
        let num_names = self.names.len();
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ SEED_SALT);
        (0..num_requests)
            .map(|index| {
                let pick = match self.assignment {
                    LoraAssignment::RoundRobin => index % num_names,
                    LoraAssignment::Random => rng.random_range(0..num_names),
                };
                self.names[pick].as_str()
            })
            .collect()
    }

    /// Names each request's adapter in its spec ([`RequestSpec::model`]).
    pub fn apply(&self, specs: &mut [RequestSpec], seed: u64) {
        let models = self.models(specs.len(), seed);
        for (spec, model) in specs.iter_mut().zip(models) {
            spec.model = Some(model.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn plan(names: &[&str], assignment: LoraAssignment) -> LoraPlan {
        let names = names.iter().map(|n| n.to_string()).collect();
        LoraPlan::new(names, assignment).expect("a valid plan")
    }

    #[test]
    fn round_robin_cycles_in_the_order_listed() {
        let plan = plan(&["a", "b", "c"], LoraAssignment::RoundRobin);
        assert_eq!(plan.models(7, 0), ["a", "b", "c", "a", "b", "c", "a"]);
        // The seed does not matter.
        assert_eq!(plan.models(7, 0), plan.models(7, 42));
    }

    #[test]
    fn random_is_reproducible_per_seed_and_covers_every_name() {
        let plan = plan(&["a", "b", "c"], LoraAssignment::Random);
        let picks = plan.models(300, 7);
        assert_eq!(picks, plan.models(300, 7), "same seed, same picks");
        assert_ne!(picks, plan.models(300, 8), "another seed, other picks");
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for pick in &picks {
            *counts.entry(pick).or_default() += 1;
        }
        assert_eq!(counts.keys().copied().collect::<Vec<_>>(), ["a", "b", "c"]);
        // Uniform: 100 expected each; this seed's counts are fixed, the bound is loose.
        assert!(
            counts.values().all(|&n| (60..140).contains(&n)),
            "{counts:?}"
        );
    }

    #[test]
    fn a_request_keeps_its_adapter_whatever_the_run_length() {
        let plan = plan(&["a", "b", "c", "d"], LoraAssignment::Random);
        let long = plan.models(50, 3);
        assert_eq!(plan.models(20, 3), long[..20]);
    }

    #[test]
    fn a_repeated_name_is_picked_as_often_as_it_is_listed() {
        let plan = plan(&["a", "a", "b"], LoraAssignment::RoundRobin);
        assert_eq!(plan.models(6, 0), ["a", "a", "b", "a", "a", "b"]);
    }

    #[test]
    fn empty_names_and_empty_lists_are_refused() {
        assert_eq!(parse_adapter_name("  sql-lora "), Ok("sql-lora".into()));
        assert_eq!(parse_adapter_name(""), Err(LoraError::EmptyName));
        assert_eq!(parse_adapter_name("  "), Err(LoraError::EmptyName));
        let empty = LoraPlan::new(vec!["a".into(), " ".into()], LoraAssignment::Random);
        assert_eq!(empty, Err(LoraError::EmptyName));
        let none = LoraPlan::new(Vec::new(), LoraAssignment::Random);
        assert_eq!(none, Err(LoraError::NoNames));
        assert!(LoraError::EmptyName.to_string().contains("--lora-modules"));
    }

    #[test]
    fn apply_names_every_spec_by_its_index() {
        let spec = RequestSpec::text("hi", 1, 1);
        let mut specs = vec![spec; 5];
        plan(&["x", "y"], LoraAssignment::RoundRobin).apply(&mut specs, 0);
        let models: Vec<Option<&str>> = specs.iter().map(|s| s.model.as_deref()).collect();
        assert_eq!(
            models,
            [Some("x"), Some("y"), Some("x"), Some("y"), Some("x")]
        );
    }
}
