//! Which modules a file names: use trees and paths, resolved to the longest known module.

use std::collections::BTreeSet;

use super::ModulePath;

/// The modules of `modules` that the file of `module` names.
pub fn named_modules(
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
