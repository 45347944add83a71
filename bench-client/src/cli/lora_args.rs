//! The LoRA workload flags (`--lora-modules`, `--lora-assignment`), shared by `serve` and
//! `sweep`: the [`LoraPlan`] that names each request's adapter, and the [`LoraMeta`] its result
//! records.

use clap::{Args, ValueEnum};

use crate::lora::{parse_adapter_name, LoraAssignment, LoraError, LoraPlan};
use crate::stats::LoraMeta;

/// `--lora-assignment`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum LoraAssignmentArg {
    /// Uniformly at random, seeded by --seed (as vLLM).
    #[default]
    Random,
    /// Request i gets adapter i mod n, in the order listed.
    RoundRobin,
}

impl From<LoraAssignmentArg> for LoraAssignment {
    fn from(arg: LoraAssignmentArg) -> Self {
        match arg {
            LoraAssignmentArg::Random => LoraAssignment::Random,
            LoraAssignmentArg::RoundRobin => LoraAssignment::RoundRobin,
        }
    }
}

/// LoRA adapters: which `model` each request names.
#[derive(Debug, Clone, Default, Args)]
pub struct LoraArgs {
    /// LoRA adapters to spread the requests over: each request's `model` is one of these names
    /// instead of --model, and the results are broken down by name. Comma-separated, several
    /// after the flag, or the flag repeated; the base model's served name may be one of them.
    #[arg(long, value_name = "NAME", num_args = 1.., value_delimiter = ',', value_parser = parse_adapter_name)]
    pub lora_modules: Vec<String>,
    /// How each request's adapter is picked: random (seeded by --seed, as vLLM) or round-robin
    /// (request i gets adapter i mod n).
    #[arg(long, value_enum, default_value_t, requires = "lora_modules")]
    pub lora_assignment: LoraAssignmentArg,
}

impl LoraArgs {
    /// The adapters' plan; `None` without `--lora-modules`.
    pub fn plan(&self) -> Result<Option<LoraPlan>, LoraError> {
        if self.lora_modules.is_empty() {
            return Ok(None);
        }
        LoraPlan::new(self.lora_modules.clone(), self.lora_assignment.into()).map(Some)
    }

    /// What the result records; `None` without `--lora-modules`.
    pub fn meta(&self) -> Option<LoraMeta> {
        (!self.lora_modules.is_empty()).then(|| LoraMeta {
            modules: self.lora_modules.clone(),
            assignment: LoraAssignment::from(self.lora_assignment)
                .name()
                .to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        lora: LoraArgs,
        #[arg(long, default_value_t = 0)]
        seed: u64,
    }

    fn parse(line: &str) -> Result<LoraArgs, clap::Error> {
        Cli::try_parse_from(line.split_whitespace()).map(|cli| cli.lora)
    }

    fn modules(line: &str) -> Vec<String> {
        parse(line).expect("parses").lora_modules
    }

    #[test]
    fn names_come_comma_separated_space_separated_or_repeated() {
        let expected = ["a", "b", "c"];
        assert_eq!(modules("bench --lora-modules a,b,c"), expected);
        assert_eq!(modules("bench --lora-modules a b c --seed 1"), expected);
        assert_eq!(
            modules("bench --lora-modules a --lora-modules b,c"),
            expected
        );
        let spaced = Cli::try_parse_from(["bench", "--lora-modules", "a, b ,c"]).expect("parses");
        assert_eq!(spaced.lora.lora_modules, expected, "names are trimmed");
        assert!(modules("bench --seed 3").is_empty());
    }

    #[test]
    fn an_empty_name_is_refused_with_its_reason() {
        for line in ["bench --lora-modules a,,b", "bench --lora-modules a,"] {
            let error = parse(line).expect_err(line).to_string();
            assert!(error.contains("adapter name is empty"), "{line}: {error}");
        }
        let error = Cli::try_parse_from(["bench", "--lora-modules", ""]).expect_err("empty");
        assert!(
            error.to_string().contains("adapter name is empty"),
            "{error}"
        );
    }

    #[test]
    fn the_assignment_defaults_to_random_and_needs_modules() {
        let args = parse("bench --lora-modules a").expect("parses");
        assert_eq!(args.lora_assignment, LoraAssignmentArg::Random);
        let args = parse("bench --lora-modules a,b --lora-assignment round-robin").expect("parses");
        let plan = args.plan().expect("valid").expect("a plan");
        assert_eq!(plan.assignment(), LoraAssignment::RoundRobin);
        assert_eq!(plan.names(), ["a", "b"]);
        assert!(parse("bench --lora-assignment round-robin").is_err());
        assert!(parse("bench --lora-modules a --lora-assignment sticky").is_err());
    }

    #[test]
    fn no_modules_no_plan_and_no_meta() {
        let args = parse("bench").expect("parses");
        assert_eq!(args.plan(), Ok(None));
        assert_eq!(args.meta(), None);
        let args = parse("bench --lora-modules x,y --lora-assignment round-robin").expect("ok");
        let meta = args.meta().expect("meta");
        assert_eq!(meta.modules, ["x", "y"]);
        assert_eq!(meta.assignment, "round-robin");
    }
}
