//! `--dataset-name`: which dataset builds a `serve` workload. [`DATASETS`] is the one list of
//! them: the flag's parser and `--help` (through [`ValueEnum`]), the name the result saves, and
//! whether the lengths are fixed all come from it, a test holds docs/bench.md's datasets table to
//! it, and `serve_workload::dataset_config` builds each (a `match`, so a new name without a
//! builder does not compile).

use clap::builder::PossibleValue;
use clap::ValueEnum;

/// Which dataset builds the workload (one per row of [`DATASETS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DatasetName {
    Random,
    PrefixRepetition,
    Sharegpt,
    Custom,
    Conversation,
    Trace,
}

/// One `--dataset-name`.
#[derive(Debug)]
pub struct Dataset {
    pub name: DatasetName,
    /// The flag's value.
    pub flag: &'static str,
    /// `dataset_name` in the result (`pagoda.run`): vLLM's spelling.
    pub saved_as: &'static str,
    /// Its line in `--help`.
    pub about: &'static str,
    /// Prompts and outputs of fixed lengths: the server is asked to ignore EOS by default.
    pub fixed_lengths: bool,
}

/// Every `--dataset-name`, one row per [`DatasetName`] in its order (which is `--help`'s).
pub const DATASETS: [Dataset; 6] = [
    Dataset {
        name: DatasetName::Random,
        flag: "random",
        saved_as: "random",
        about: "Random text of exact token lengths (--random-input-len, --random-output-len, ...)",
        fixed_lengths: true,
    },
    Dataset {
        name: DatasetName::PrefixRepetition,
        flag: "prefix-repetition",
        saved_as: "prefix_repetition",
        about: "A few shared random prefixes, each request one of them plus its own suffix \
                (--prefix-repetition-*)",
        fixed_lengths: true,
    },
    Dataset {
        name: DatasetName::Sharegpt,
        flag: "sharegpt",
        saved_as: "sharegpt",
        about: "Every answered human turn of a ShareGPT JSON file (--dataset-path)",
        fixed_lengths: false,
    },
    Dataset {
        name: DatasetName::Custom,
        flag: "custom",
        saved_as: "custom",
        about: "One prompt or message list per line of a JSONL file (--dataset-path)",
        fixed_lengths: false,
    },
    Dataset {
        name: DatasetName::Conversation,
        flag: "conversation",
        saved_as: "conversation",
        about: "Synthetic closed-loop conversations (--num-turns, --turn-input-len, ...)",
        fixed_lengths: true,
    },
    Dataset {
        name: DatasetName::Trace,
        flag: "trace",
        saved_as: "trace",
        about: "A production trace replayed at its own times (--trace-format, --dataset-path)",
        fixed_lengths: true,
    },
];

/// The names of [`DATASETS`], for [`ValueEnum::value_variants`]. Building it checks, as the
/// crate compiles, that row `i` is the `i`-th [`DatasetName`].
const NAMES: [DatasetName; DATASETS.len()] = {
    let mut names = [DatasetName::Random; DATASETS.len()];
    let mut i = 0;
    while i < DATASETS.len() {
        assert!(DATASETS[i].name as usize == i, "DATASETS is out of order");
        names[i] = DATASETS[i].name;
        i += 1;
    }
    names
};

impl DatasetName {
    /// Its row of [`DATASETS`].
    pub fn dataset(self) -> &'static Dataset {
        &DATASETS[self as usize]
    }
}

impl ValueEnum for DatasetName {
    fn value_variants<'a>() -> &'a [Self] {
        &NAMES
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        let dataset = self.dataset();
        Some(PossibleValue::new(dataset.flag).help(dataset.about))
    }
}

#[cfg(test)]
#[path = "dataset_name_tests.rs"]
mod tests;
