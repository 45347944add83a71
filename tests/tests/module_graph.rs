//! No two source files of a crate import each other, directly or through a loop (house style:
//! a type lives in the lowest module that uses it). Reads every crate's `src/` as text: a file
//! depends on another when it names its module through `crate::`, `super::`, `self::` or a child
//! module's name (`use`s, `pub use`s and paths in code alike). Test-only modules are left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use pagoda_e2e::tools::repo_file;

/// The crates whose files are checked.
const CRATE_SOURCES: &[&str] = &[
    "engine/src",
    "engine/cuda-kernels/src",
    "server/src",
    "server/text/src",
    "bench-client/src",
];

type ModulePath = Vec<String>;

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

fn strip_comments(text: &str) -> String {
    text.lines()
        .map(|line| match line.find("//") {
            Some(at) if !line[..at].contains('"') => &line[..at],
            _ => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Drops `#[cfg(test)] mod name { … }` blocks.
fn without_test_blocks(code: &str) -> String {
    let mut kept = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        kept.push_str(&rest[..at]);
        let after = &rest[at..];
        let header_end = after.find(['{', ';']).unwrap_or(after.len());
        if after[..header_end].contains("mod ") && after[header_end..].starts_with('{') {
            let end =
                header_end + block_end(&after[header_end..]).unwrap_or(after.len() - header_end);
            rest = &after[end..];
        } else {
            kept.push_str("#[cfg(test)]");
            rest = &after["#[cfg(test)]".len()..];
        }
    }
    kept.push_str(rest);
    kept
}

/// Inside an inline `mod name { … }` (not a test module), `super::` is the file's own module:
/// written `self::` so that the file is not taken to name its parent.
fn inline_modules_as_self(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = find_inline_mod(rest) {
        let (before, block) = rest.split_at(at);
        out.push_str(before);
        let end = block_end(block).unwrap_or(block.len());
        out.push_str(&block[..end].replace("super::", "self::"));
        rest = &block[end..];
    }
    out.push_str(rest);
    out
}

/// Where the next `mod name {` starts.
fn find_inline_mod(code: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(found) = code[from..].find("mod ") {
        let at = from + found;
        let word_start =
            at == 0 || !code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_');
        let after: String = code[at + 4..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let tail = code[at + 4 + after.len()..].trim_start();
        if word_start && !after.is_empty() && tail.starts_with('{') {
            return Some(at);
        }
        from = at + 4;
    }
    None
}

/// The end (exclusive) of the first `{ … }` block in `code`.
fn block_end(code: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (offset, c) in code.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(offset + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// Identifiers and the punctuation of paths (`::`, `{`, `}`, `,`); everything else is a break.
fn tokens(code: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    let chars: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            tokens.push(chars[start..i].iter().collect());
            continue;
        }
        if c == ':' && chars.get(i + 1) == Some(&':') {
            tokens.push("::".into());
            i += 2;
            continue;
        }
        if matches!(c, '{' | '}' | ',') {
            tokens.push(c.to_string());
        } else if !c.is_whitespace() {
            tokens.push(" ".into());
        }
        i += 1;
    }
    tokens
}

/// The modules of `modules` that the file of `module` names.
fn named_modules(
    module: &ModulePath,
    tokens: &[String],
    modules: &BTreeSet<ModulePath>,
) -> BTreeSet<ModulePath> {
    let mut named = BTreeSet::new();
    for (i, token) in tokens.iter().enumerate() {
        let starts_path = i == 0 || tokens[i - 1] != "::";
        if !starts_path || tokens.get(i + 1).map(String::as_str) != Some("::") {
            continue;
        }
        let base = match token.as_str() {
            "crate" => Vec::new(),
            "self" | "super" => module.clone(),
            child if modules.contains(&[module.clone(), vec![child.to_string()]].concat()) => {
                module.clone()
            }
            _ => continue,
        };
        for path in use_tree(tokens, i, &base) {
            named.extend(longest_module(&path, modules));
        }
    }
    named.remove(module);
    named
}

/// The paths of a use tree starting at `tokens[at]` (`a::b`, `{a, b::c}`, `super::x`), under `base`.
fn use_tree(tokens: &[String], at: usize, base: &ModulePath) -> Vec<ModulePath> {
    let mut paths = Vec::new();
    let mut path = base.clone();
    let mut i = at;
    while let Some(token) = tokens.get(i) {
        match token.as_str() {
            "{" => {
                let mut depth = 0;
                let mut item_start = i + 1;
                for j in i..tokens.len() {
                    match tokens[j].as_str() {
                        "{" => depth += 1,
                        "}" | "," if depth == 1 => {
                            paths.extend(use_tree(&tokens[..j], item_start, &path));
                            item_start = j + 1;
                            if tokens[j] == "}" {
                                return paths;
                            }
                        }
                        "}" => depth -= 1,
                        _ => {}
                    }
                }
                return paths;
            }
            "super" => {
                path.pop();
            }
            "self" | "crate" if i == at => {}
            name if name.chars().all(|c| c.is_alphanumeric() || c == '_') => {
                path.push(name.to_string())
            }
            _ => break,
        }
        if tokens.get(i + 1).map(String::as_str) != Some("::") {
            break;
        }
        i += 2;
    }
    paths.push(path);
    paths
}

fn longest_module(path: &ModulePath, modules: &BTreeSet<ModulePath>) -> Option<ModulePath> {
    (0..=path.len())
        .rev()
        .map(|n| path[..n].to_vec())
        .find(|prefix| modules.contains(prefix))
}

#[derive(Default)]
struct Tarjan {
    index: BTreeMap<ModulePath, usize>,
    low: BTreeMap<ModulePath, usize>,
    stack: Vec<ModulePath>,
    on_stack: BTreeSet<ModulePath>,
    components: Vec<Vec<ModulePath>>,
}

impl Tarjan {
    fn visit(&mut self, v: &ModulePath, edges: &BTreeMap<ModulePath, BTreeSet<ModulePath>>) {
        let number = self.index.len();
        self.index.insert(v.clone(), number);
        self.low.insert(v.clone(), number);
        self.stack.push(v.clone());
        self.on_stack.insert(v.clone());
        for w in edges.get(v).into_iter().flatten() {
            if !self.index.contains_key(w) {
                self.visit(w, edges);
                let low = self.low[v].min(self.low[w]);
                self.low.insert(v.clone(), low);
            } else if self.on_stack.contains(w) {
                let low = self.low[v].min(self.index[w]);
                self.low.insert(v.clone(), low);
            }
        }
        if self.low[v] == self.index[v] {
            let mut component = Vec::new();
            while let Some(w) = self.stack.pop() {
                self.on_stack.remove(&w);
                let done = &w == v;
                component.push(w);
                if done {
                    break;
                }
            }
            self.components.push(component);
        }
    }
}
