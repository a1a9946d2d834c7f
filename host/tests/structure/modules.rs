//! A crate's module tree and what each module names: its `use`s, its paths, and the paths in
//! its macros' tokens. Test code (`#[cfg(test)]` items and modules) is left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::{self, Visit};

/// A module's absolute path inside its crate; the root is empty.
pub type ModPath = Vec<String>;

/// One crate's modules, from its root file down.
#[derive(Debug, Default)]
pub struct Crate {
    /// Every module, by path.
    pub modules: BTreeMap<ModPath, Module>,
    /// `mod` declarations whose file is missing, as `declaring file: mod name`.
    pub missing: Vec<String>,
}

/// One module: the file it is in, and the paths it names.
#[derive(Debug, Default)]
pub struct Module {
    /// The file holding the module (for an inline module, the file it is written in).
    pub file: PathBuf,
    /// Paths the module names, as written.
    pub refs: Vec<Vec<String>>,
    /// Paths the module glob-imports (`use path::*`), whose children are in its scope.
    pub globs: Vec<Vec<String>>,
}

impl Crate {
    /// Reads the crate rooted at `root` through `read` (a file's text, `None` when missing).
    pub fn load(root: &Path, read: &dyn Fn(&Path) -> Option<String>) -> Result<Crate, String> {
        let mut krate = Crate::default();
        let text = read(root).ok_or_else(|| format!("{}: cannot read", root.display()))?;
        let file = syn::parse_file(&text).map_err(|e| format!("{}: {e}", root.display()))?;
        let dir = root.parent().unwrap_or(Path::new("")).to_path_buf();
        krate.add_module(Vec::new(), root, &file.items, &dir, read)?;
        Ok(krate)
    }

    /// Adds the module at `path`, written in `file` with `items`; its `mod name;` children are
    /// files under `dir`.
    fn add_module(
        &mut self,
        path: ModPath,
        file: &Path,
        items: &[syn::Item],
        dir: &Path,
        read: &dyn Fn(&Path) -> Option<String>,
    ) -> Result<(), String> {
        let mut collector = Collector::default();
        let mut children = Vec::new();
        for item in items {
            match item {
                syn::Item::Mod(m) if !is_test(&m.attrs) => children.push(m),
                syn::Item::Mod(_) => {}
                _ => collector.visit_item(item),
            }
        }
        self.modules.insert(
            path.clone(),
            Module {
                file: file.to_path_buf(),
                refs: collector.refs,
                globs: collector.globs,
            },
        );
        for m in children {
            let name = m.ident.to_string();
            let mut child = path.clone();
            child.push(name.clone());
            let child_dir = dir.join(&name);
            if let Some((_, items)) = &m.content {
                self.add_module(child, file, items, &child_dir, read)?;
                continue;
            }
            let candidates = [dir.join(format!("{name}.rs")), child_dir.join("mod.rs")];
            let Some((child_file, text)) = candidates
                .iter()
                .find_map(|f| read(f).map(|text| (f.clone(), text)))
            else {
                self.missing.push(format!("{}: mod {name}", file.display()));
                continue;
            };
            let parsed =
                syn::parse_file(&text).map_err(|e| format!("{}: {e}", child_file.display()))?;
            self.add_module(child, &child_file, &parsed.items, &child_dir, read)?;
        }
        Ok(())
    }

    /// The module a path written in module `from` leads to: the deepest module along it.
    /// `None` for paths outside the crate (other crates, `std`) or that start at an item.
    pub fn resolve(&self, from: &[String], path: &[String]) -> Option<ModPath> {
        let (mut target, rest): (ModPath, &[String]) = match path.first()?.as_str() {
            "crate" => (Vec::new(), &path[1..]),
            "self" | "super" => {
                let mut base = from.to_vec();
                let mut rest = path;
                while let Some(first) = rest.first() {
                    match first.as_str() {
                        "self" => {}
                        "super" => {
                            base.pop()?;
                        }
                        _ => break,
                    }
                    rest = &rest[1..];
                }
                (base, rest)
            }
            first => (self.scope_of(from, first)?, path),
        };
        for segment in rest {
            let mut next = target.clone();
            next.push(segment.clone());
            if !self.modules.contains_key(&next) {
                break;
            }
            target = next;
        }
        Some(target)
    }

    /// The module whose child `name` is, as seen from module `from`: `from` itself, or a module
    /// it glob-imports.
    fn scope_of(&self, from: &[String], name: &str) -> Option<ModPath> {
        let has_child = |parent: &[String]| {
            let mut child = parent.to_vec();
            child.push(name.to_string());
            self.modules.contains_key(&child)
        };
        if has_child(from) {
            return Some(from.to_vec());
        }
        let module = self.modules.get(from)?;
        module
            .globs
            .iter()
            .filter_map(|glob| self.resolve(from, glob))
            .find(|glob| glob.as_slice() != from && has_child(glob))
    }

    /// Every dependency between siblings: for each parent module, (child, child it depends
    /// on) with a path that shows it, as `file: a::b::c`.
    pub fn sibling_edges(&self) -> BTreeMap<ModPath, BTreeMap<(String, String), String>> {
        let mut edges: BTreeMap<ModPath, BTreeMap<(String, String), String>> = BTreeMap::new();
        for (from, module) in &self.modules {
            for path in module.refs.iter().chain(&module.globs) {
                let Some(to) = self.resolve(from, path) else {
                    continue;
                };
                let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
                if common < from.len() && common < to.len() {
                    let key = (from[common].clone(), to[common].clone());
                    let shown = format!("{}: {}", module.file.display(), path.join("::"));
                    edges
                        .entry(from[..common].to_vec())
                        .or_default()
                        .entry(key)
                        .or_insert(shown);
                }
            }
        }
        edges
    }
}

/// Whether attributes make an item test-only: `#[cfg(test)]` or `#[cfg(all(test, ...))]`.
fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        let syn::Meta::List(list) = &attr.meta else {
            return false;
        };
        if !list.path.is_ident("cfg") {
            return false;
        }
        let tokens = list.tokens.to_string().replace(' ', "");
        tokens == "test" || tokens.starts_with("all(test,")
    })
}

/// Gathers the paths one module names, leaving out test-only items.
#[derive(Default)]
struct Collector {
    refs: Vec<Vec<String>>,
    globs: Vec<Vec<String>>,
}

impl Collector {
    /// Records every path a `use` tree names, under `prefix`.
    fn use_tree(&mut self, tree: &syn::UseTree, prefix: &mut Vec<String>) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(&p.tree, prefix);
                prefix.pop();
            }
            syn::UseTree::Name(n) => self.use_name(&n.ident, prefix),
            syn::UseTree::Rename(r) => self.use_name(&r.ident, prefix),
            syn::UseTree::Glob(_) => self.globs.push(prefix.clone()),
            syn::UseTree::Group(g) => g.items.iter().for_each(|t| self.use_tree(t, prefix)),
        }
    }

    /// Records `prefix::name`; `self` names the prefix itself.
    fn use_name(&mut self, name: &syn::Ident, prefix: &[String]) {
        let mut path = prefix.to_vec();
        if name != "self" {
            path.push(name.to_string());
        }
        self.refs.push(path);
    }

    /// Records the `a::b::c` runs in a macro's tokens, which syn does not parse.
    fn tokens(&mut self, tokens: TokenStream) {
        let mut run: Vec<String> = Vec::new();
        let mut colons = 0;
        fn end(run: &mut Vec<String>, refs: &mut Vec<Vec<String>>) {
            if run.len() > 1 {
                refs.push(std::mem::take(run));
            }
            run.clear();
        }
        for tree in tokens {
            match tree {
                TokenTree::Ident(ident) if run.is_empty() || colons == 2 => {
                    run.push(ident.to_string());
                    colons = 0;
                }
                TokenTree::Punct(p) if p.as_char() == ':' && !run.is_empty() && colons < 2 => {
                    colons += 1;
                }
                TokenTree::Group(group) => {
                    end(&mut run, &mut self.refs);
                    colons = 0;
                    self.tokens(group.stream());
                }
                other => {
                    end(&mut run, &mut self.refs);
                    colons = 0;
                    if let TokenTree::Ident(ident) = other {
                        run.push(ident.to_string());
                    }
                }
            }
        }
        end(&mut run, &mut self.refs);
    }
}

impl<'ast> Visit<'ast> for Collector {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let attrs = match item {
            syn::Item::Const(i) => &i.attrs,
            syn::Item::Enum(i) => &i.attrs,
            syn::Item::Fn(i) => &i.attrs,
            syn::Item::Impl(i) => &i.attrs,
            syn::Item::Macro(i) => &i.attrs,
            syn::Item::Static(i) => &i.attrs,
            syn::Item::Struct(i) => &i.attrs,
            syn::Item::Trait(i) => &i.attrs,
            syn::Item::Type(i) => &i.attrs,
            syn::Item::Union(i) => &i.attrs,
            syn::Item::Use(i) => &i.attrs,
            _ => return visit::visit_item(self, item),
        };
        if !is_test(attrs) {
            visit::visit_item(self, item);
        }
    }

    fn visit_impl_item(&mut self, item: &'ast syn::ImplItem) {
        let attrs = match item {
            syn::ImplItem::Const(i) => &i.attrs,
            syn::ImplItem::Fn(i) => &i.attrs,
            syn::ImplItem::Type(i) => &i.attrs,
            syn::ImplItem::Macro(i) => &i.attrs,
            _ => return visit::visit_impl_item(self, item),
        };
        if !is_test(attrs) {
            visit::visit_impl_item(self, item);
        }
    }

    fn visit_item_mod(&mut self, _: &'ast syn::ItemMod) {
        // Modules are walked as modules of their own (Crate::add_module).
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        if item.leading_colon.is_none() {
            self.use_tree(&item.tree, &mut Vec::new());
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        if path.leading_colon.is_none() {
            self.refs
                .push(path.segments.iter().map(|s| s.ident.to_string()).collect());
        }
        visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        visit::visit_macro(self, mac);
        self.tokens(mac.tokens.clone());
    }

    fn visit_attribute(&mut self, _: &'ast syn::Attribute) {
        // Attributes (derives, cfgs, docs) name no module of the crate.
    }

    fn visit_visibility(&mut self, _: &'ast syn::Visibility) {
        // `pub(in path)` restricts who may see an item; it depends on nothing.
    }
}

/// A crate written inline: (file path, text) pairs, the first one the root.
#[cfg(test)]
pub fn inline(files: &[(&str, &str)]) -> Crate {
    let map: BTreeMap<PathBuf, String> = files
        .iter()
        .map(|(p, t)| (PathBuf::from(p), t.to_string()))
        .collect();
    Crate::load(Path::new(files[0].0), &|p| map.get(p).cloned()).expect("the example parses")
}

#[test]
fn a_nested_use_group_is_resolved() {
    let krate = inline(&[
        ("src/lib.rs", "mod a; mod b; mod c { pub mod d {} }"),
        ("src/a.rs", "use crate::{b::{self, X}, c::{d::Y}};"),
        ("src/b.rs", ""),
    ]);
    let edges = krate.sibling_edges();
    let root: BTreeSet<_> = edges[&Vec::new()].keys().cloned().collect();
    let expected = [("a", "b"), ("a", "c")].map(|(a, b)| (a.to_string(), b.to_string()));
    assert_eq!(root, BTreeSet::from(expected));
}

#[test]
fn super_self_and_glob_scopes_are_resolved() {
    let krate = inline(&[
        ("src/lib.rs", "mod p;"),
        ("src/p/mod.rs", "mod x; mod y; mod z; mod w;"),
        ("src/p/x.rs", "fn f() { super::y::g(); }"),
        ("src/p/y.rs", "use super::*; fn g() { z::h(); }"),
        (
            "src/p/z.rs",
            "mod inner { fn i() { self::super::super::w::j(); } }",
        ),
        (
            "src/p/w.rs",
            "#[cfg(test)] mod tests { use super::super::x; }",
        ),
    ]);
    let edges = krate.sibling_edges();
    let p: Vec<_> = edges[&vec!["p".to_string()]].keys().cloned().collect();
    let expected = [("x", "y"), ("y", "z"), ("z", "w")].map(|(a, b)| (a.into(), b.into()));
    assert_eq!(p, expected.to_vec());
}

#[test]
fn paths_in_macros_count_and_test_items_do_not() {
    let krate = inline(&[
        (
            "src/lib.rs",
            "mod a; mod b; mod c;\n\
             mod d { #[cfg(test)] fn t() { crate::a::f(); } }",
        ),
        ("src/a.rs", "fn f() { println!(\"{}\", crate::b::NAME); }"),
        ("src/b.rs", "#[cfg(test)] use crate::c::X;"),
        ("src/c.rs", ""),
    ]);
    let edges = krate.sibling_edges();
    let root: Vec<_> = edges[&Vec::new()].keys().cloned().collect();
    assert_eq!(root, vec![("a".to_string(), "b".to_string())]);
}
