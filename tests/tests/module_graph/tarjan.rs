//! Tarjan's strongly connected components: the loops of the module graph.

use std::collections::{BTreeMap, BTreeSet};

use super::ModulePath;

#[derive(Default)]
pub struct Tarjan {
    pub index: BTreeMap<ModulePath, usize>,
    low: BTreeMap<ModulePath, usize>,
    stack: Vec<ModulePath>,
    on_stack: BTreeSet<ModulePath>,
    pub components: Vec<Vec<ModulePath>>,
}

impl Tarjan {
    pub fn visit(&mut self, v: &ModulePath, edges: &BTreeMap<ModulePath, BTreeSet<ModulePath>>) {
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
