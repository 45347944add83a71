//! No two source files of a crate import each other, directly or through a loop (house style:
//! a type lives in the lowest module that uses it). Reads every crate's `src/` as text: a file
//! depends on another when it names its module through `crate::`, `super::`, `self::` or a child
//! module's name (`use`s, `pub use`s and paths in code alike). Test-only modules are left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

mod paths;
mod source_text;
mod tarjan;

use pagoda_e2e::tools::repo_file;
use paths::named_modules;
use source_text::{inline_modules_as_self, strip_comments, tokens, without_test_blocks};
use tarjan::Tarjan;

/// The crates whose files are checked.
const CRATE_SOURCES: &[&str] = &[
    "engine/src",
    "engine/cuda-kernels/src",
    "server/src",
    "server/text/src",
    "server/structured/src",
    "bench-client/src",
];

/// A module's path from the crate root (`["a", "b"]` for `a/b.rs`).
pub type ModulePath = Vec<String>;

#[test]
fn no_file_imports_another_that_imports_it_back() {
    let mut loops = Vec::new();
    for source in CRATE_SOURCES {
        let graph = ModuleGraph::read(&repo_file(source));
        for cycle in graph.cycles() {
            loops.push(format!(
                "{source}: {}",
                graph.edges_within(&cycle).join(", ")
            ));
        }
    }
    assert!(
        loops.is_empty(),
        "file-level import loops:\n{}",
        loops.join("\n")
    );
}

/// pagoda-bench's core (every top-level module but `analysis/` and `cli/`, which puts the two
/// together) never reads `analysis/`: the analysis tools build on the core, never the reverse.
#[test]
fn the_bench_core_never_reads_its_analysis_tools() {
    let graph = ModuleGraph::read(&repo_file("bench-client/src"));
    let under = |module: &ModulePath, top: &str| module.first().is_some_and(|first| first == top);
    let composes = |module: &ModulePath| {
        module.is_empty() || under(module, "cli") || under(module, "analysis")
    };
    let mut core_reads = Vec::new();
    let mut cli_reads_analysis = false;
    for (from, targets) in &graph.edges {
        for to in targets.iter().filter(|to| under(to, "analysis")) {
            cli_reads_analysis |= under(from, "cli");
            if !composes(from) {
                core_reads.push(format!("{} → {}", display(from), display(to)));
            }
        }
    }
    assert!(
        cli_reads_analysis,
        "the checker sees no use of analysis/ at all: is the layout read?"
    );
    assert!(
        core_reads.is_empty(),
        "the bench core reads analysis/:\n{}",
        core_reads.join("\n")
    );
}

#[test]
fn the_checker_sees_loops_through_parents_children_and_groups() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let write = |path: &str, text: &str| {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    };
    write(
        "lib.rs",
        "pub mod a;\npub mod b;\npub mod c;\n#[cfg(test)]\nmod tests;\n",
    );
    write(
        "a.rs",
        "mod child;\npub use child::Thing;\npub struct Shared;\n",
    );
    write(
        "a/child.rs",
        "use super::Shared;\npub struct Thing;\nmod inner {\n    use super::Thing;\n}\n",
    );
    write("b.rs", "use crate::{a::Thing, c::{self, Other}};\n");
    write(
        "c.rs",
        "// crate::b::X in a comment does not count\npub struct Other;\n",
    );
    write("tests.rs", "use crate::a::Shared;\nuse crate::b;\n");
    let cycles = ModuleGraph::read(dir.path()).cycles();
    assert_eq!(cycles, [vec!["a".to_string(), "a/child".to_string()]]);
    write("c.rs", "use crate::b::Anything;\npub struct Other;\n");
    let cycles = ModuleGraph::read(dir.path()).cycles();
    assert_eq!(cycles.len(), 2, "{cycles:?}");
    assert!(cycles.contains(&vec!["b".to_string(), "c".to_string()]));
}

/// Each file's module and the modules it names.
struct ModuleGraph {
    edges: BTreeMap<ModulePath, BTreeSet<ModulePath>>,
}

impl ModuleGraph {
    fn read(src: &Path) -> Self {
        let files = source_files(src);
        let test_only = test_only_modules(&files);
        let modules: BTreeSet<ModulePath> = files
            .keys()
            .filter(|module| !test_only.contains(*module))
            .cloned()
            .collect();
        let mut edges = BTreeMap::new();
        for module in &modules {
            let text = std::fs::read_to_string(&files[module]).expect("a readable source file");
            let code = inline_modules_as_self(&without_test_blocks(&strip_comments(&text)));
            let named = named_modules(module, &tokens(&code), &modules);
            edges.insert(module.clone(), named);
        }
        Self { edges }
    }

    /// The imports among `files` (names as `cycles` gives them), as `a → b`.
    fn edges_within(&self, files: &[String]) -> Vec<String> {
        let mut found = Vec::new();
        for (from, targets) in &self.edges {
            for to in targets {
                if files.contains(&display(from)) && files.contains(&display(to)) {
                    found.push(format!("{} → {}", display(from), display(to)));
                }
            }
        }
        found
    }

    /// Every loop (strongly connected set of two or more files), each as sorted file names.
    fn cycles(&self) -> Vec<Vec<String>> {
        let mut tarjan = Tarjan::default();
        for module in self.edges.keys() {
            if !tarjan.index.contains_key(module) {
                tarjan.visit(module, &self.edges);
            }
        }
        let mut cycles: Vec<Vec<String>> = tarjan
            .components
            .into_iter()
            .filter(|component| component.len() > 1)
            .map(|component| {
                let mut names: Vec<String> = component.iter().map(display).collect();
                names.sort();
                names
            })
            .collect();
        cycles.sort();
        cycles
    }
}

fn display(module: &ModulePath) -> String {
    if module.is_empty() {
        "lib".into()
    } else {
        module.join("/")
    }
}

/// `a/b.rs` and `a/b/mod.rs` → `["a", "b"]`; `lib.rs`/`main.rs` → `[]`; `bin/` is left out.
fn source_files(src: &Path) -> BTreeMap<ModulePath, PathBuf> {
    let mut files = BTreeMap::new();
    let mut pending = vec![src.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("a readable directory") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                if path != src.join("bin") {
                    pending.push(path);
                }
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let relative = path
                .strip_prefix(src)
                .expect("under src")
                .with_extension("");
            let mut module: ModulePath = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if module.last().is_some_and(|last| last == "mod")
                || module == ["lib"]
                || module == ["main"]
            {
                module.pop();
            }
            files.insert(module, path);
        }
    }
    files
}

/// Modules declared `#[cfg(test)] mod name;` (with or without `#[path]`), and their children.
fn test_only_modules(files: &BTreeMap<ModulePath, PathBuf>) -> BTreeSet<ModulePath> {
    let mut test_only = BTreeSet::new();
    for (module, path) in files {
        let text = std::fs::read_to_string(path).expect("a readable source file");
        let mut rest = text.as_str();
        while let Some(at) = rest.find("#[cfg(test)]") {
            rest = &rest[at + "#[cfg(test)]".len()..];
            let declaration = rest.trim_start();
            let declaration = match declaration.strip_prefix("#[path") {
                Some(after) => after.split_once(']').map_or("", |(_, d)| d).trim_start(),
                None => declaration,
            };
            let declaration = declaration
                .strip_prefix("pub(crate) ")
                .unwrap_or(declaration);
            if let Some(name) = declaration.strip_prefix("mod ") {
                let name: String = name
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                let after = &declaration["mod ".len() + name.len()..];
                if after.trim_start().starts_with(';') {
                    let mut child = module.clone();
                    child.push(name);
                    test_only.insert(child);
                }
            }
        }
    }
    files
        .keys()
        .filter(|module| (1..=module.len()).any(|n| test_only.contains(&module[..n])))
        .cloned()
        .collect()
}
