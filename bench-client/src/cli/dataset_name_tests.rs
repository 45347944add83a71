//! [`DATASETS`] against clap and docs/bench.md.

use std::collections::BTreeSet;
use std::path::Path;

use clap::ValueEnum;

use super::*;

/// Every variant is parsed from its flag and shows its row's help.
#[test]
fn the_parser_and_help_follow_the_table() {
    assert_eq!(DatasetName::value_variants().len(), DATASETS.len());
    for dataset in &DATASETS {
        assert_eq!(DatasetName::from_str(dataset.flag, false), Ok(dataset.name));
        let value = dataset.name.to_possible_value().expect("shown");
        assert_eq!(
            value.get_help().map(ToString::to_string).as_deref(),
            Some(dataset.about)
        );
        assert_eq!(dataset.name.dataset().flag, dataset.flag);
    }
    assert!(DatasetName::from_str("prefix_repetition", false).is_err());
}

/// The `--dataset-name` values of docs/bench.md's table of datasets (§ Workloads): its rows'
/// first cells, `` `random` (default) `` read as `random`.
fn documented_names() -> BTreeSet<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/bench.md");
    let text = std::fs::read_to_string(&path).expect("docs/bench.md");
    let rows = text
        .lines()
        .skip_while(|line| !line.starts_with("| `--dataset-name` | prompts |"))
        .skip(2)
        .take_while(|line| line.starts_with('|'));
    rows.map(|row| {
        let cell = row.split('|').nth(1).unwrap_or_default();
        cell.split('`').nth(1).unwrap_or_default().to_string()
    })
    .collect()
}

#[test]
fn the_docs_table_lists_exactly_the_datasets() {
    let documented = documented_names();
    let offered: BTreeSet<String> = DATASETS.iter().map(|d| d.flag.to_string()).collect();
    let undocumented: Vec<_> = offered.difference(&documented).collect();
    let unknown: Vec<_> = documented.difference(&offered).collect();
    assert!(
        undocumented.is_empty(),
        "not in docs/bench.md: {undocumented:?}"
    );
    assert!(
        unknown.is_empty(),
        "in docs/bench.md, not offered: {unknown:?}"
    );
}

/// `pagoda.run.dataset_name` keeps vLLM's spelling.
#[test]
fn the_result_saves_vllms_names() {
    let saved: Vec<&str> = DATASETS.iter().map(|d| d.saved_as).collect();
    assert_eq!(
        saved,
        [
            "random",
            "prefix_repetition",
            "sharegpt",
            "custom",
            "conversation",
            "trace"
        ]
    );
}
