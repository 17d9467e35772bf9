//! The map holds: no source file imports a file that imports it back, directly or through
//! others, in any crate; and the crates depend on each other only in the order
//! `ARCHITECTURE.md` gives.
//!
//! Imports are read from the sources (`use` trees, and `crate::`/`super::` paths written
//! inline) and resolved to the file that defines the item: a module's root file that only
//! re-exports an item (`pub use child::Item`) names the child's file, not itself.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every `.rs` file under `dir`.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// A file's module path inside its crate: `src/a/b.rs` and `src/a/b/mod.rs` are `[a, b]`.
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let relative = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

fn is_root_file(file: &Path) -> bool {
    matches!(
        file.file_name().and_then(|n| n.to_str()),
        Some("lib.rs" | "main.rs" | "mod.rs")
    )
}

/// The file of the longest prefix of `path` that is a module of the crate at `src`.
fn module_file(src: &Path, path: &[String]) -> (PathBuf, usize) {
    for len in (1..=path.len()).rev() {
        let base = path[..len].iter().fold(src.to_owned(), |p, s| p.join(s));
        for candidate in [base.with_extension("rs"), base.join("mod.rs")] {
            if candidate.exists() {
                return (candidate, len);
            }
        }
    }
    let root = ["lib.rs", "main.rs"]
        .iter()
        .map(|name| src.join(name))
        .find(|p| p.exists())
        .unwrap();
    (root, 0)
}

/// Source text without line comments (doc comments name paths that are not imports).
fn code(text: &str) -> String {
    text.lines()
        .map(|line| match line.find("//") {
            // A `//` inside a string (a URL) leaves the rest of the line: harmless here.
            Some(at) if !line[..at].contains('"') => &line[..at],
            _ => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `a::{b, c::{d, e}}` as `[a::b, a::c::d, a::c::e]`, renames dropped.
fn expand_use_tree(tree: &str) -> Vec<String> {
    let tree: String = tree.split_whitespace().collect::<Vec<_>>().join(" ");
    fn go(prefix: &str, tree: &str, out: &mut Vec<String>) {
        let tree = tree.trim();
        let Some(open) = tree.find('{') else {
            let name = tree.split(" as ").next().unwrap_or(tree).trim();
            out.push(format!("{prefix}{name}"));
            return;
        };
        let head = &tree[..open];
        let body = &tree[open + 1..tree.rfind('}').unwrap()];
        let (mut depth, mut start) = (0, 0);
        for (i, c) in body.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    go(&format!("{prefix}{head}"), &body[start..i], out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        if !body[start..].trim().is_empty() {
            go(&format!("{prefix}{head}"), &body[start..], out);
        }
    }
    let mut out = Vec::new();
    go("", &tree, &mut out);
    out.retain(|path| !path.ends_with("::self") && !path.ends_with('*'));
    out
}

/// A `use` statement: its indentation, whether it is `pub`, and its paths.
struct Use {
    indent: usize,
    public: bool,
    paths: Vec<String>,
}

fn use_statements(code: &str) -> (Vec<Use>, Vec<(usize, usize)>) {
    let mut uses = Vec::new();
    let mut spans = Vec::new();
    let mut at = 0;
    for line in code.split_inclusive('\n') {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        let rest = trimmed
            .strip_prefix("pub(crate) ")
            .or_else(|| trimmed.strip_prefix("pub(super) "))
            .or_else(|| trimmed.strip_prefix("pub "));
        let public = rest.is_some();
        if let Some(tree) = rest.unwrap_or(trimmed).strip_prefix("use ") {
            let start = at + line.len() - tree.len();
            if let Some(end) = code[start..].find(';') {
                uses.push(Use {
                    indent,
                    public,
                    paths: expand_use_tree(&code[start..start + end]),
                });
                spans.push((at, start + end));
            }
        }
        at += line.len();
    }
    (uses, spans)
}

/// `crate::` and `super::` paths written inline (outside `use` statements), with their
/// line's indentation.
fn inline_paths(code: &str, skip: &[(usize, usize)]) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for keyword in ["crate::", "super::"] {
        let mut from = 0;
        while let Some(offset) = code[from..].find(keyword) {
            let start = from + offset;
            from = start + keyword.len();
            let before = code[..start].chars().last();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':')
                || skip.iter().any(|&(a, b)| (a..b).contains(&start))
            {
                continue;
            }
            let path: String = code[start..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            let line_start = code[..start].rfind('\n').map_or(0, |i| i + 1);
            let line = &code[line_start..start];
            let indent = line.len() - line.trim_start().len();
            found.push((indent, path.trim_end_matches(':').to_owned()));
        }
    }
    found
}

/// The file-to-file imports of every crate under `crates`.
fn file_graph(crates: &Path) -> BTreeMap<PathBuf, BTreeSet<PathBuf>> {
    let mut graph: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
    for entry in std::fs::read_dir(crates).unwrap() {
        let src = entry.unwrap().path().join("src");
        if !src.is_dir() {
            continue;
        }
        let files = sources(&src);
        let codes: HashMap<PathBuf, String> = files
            .iter()
            .map(|f| (f.clone(), code(&std::fs::read_to_string(f).unwrap())))
            .collect();
        // Items a module's root file re-exports, by (that file, the item's name).
        let mut reexports: HashMap<(PathBuf, String), PathBuf> = HashMap::new();
        for file in files.iter().filter(|f| is_root_file(f)) {
            let here = module_path(&src, file);
            for used in use_statements(&codes[file]).0 {
                if !used.public || used.indent > 0 {
                    continue;
                }
                for path in used.paths {
                    let parts: Vec<String> = path.split("::").map(str::to_owned).collect();
                    let target = match parts[0].as_str() {
                        "crate" => parts[1..].to_vec(),
                        "self" => [&here[..], &parts[1..]].concat(),
                        _ => [&here[..], &parts[..]].concat(),
                    };
                    let (defined_in, _) = module_file(&src, &target);
                    if defined_in != *file {
                        reexports.insert((file.clone(), parts.last().unwrap().clone()), defined_in);
                    }
                }
            }
        }
        let resolve = |target: &[String]| -> PathBuf {
            let (file, len) = module_file(&src, target);
            match target.get(len) {
                Some(name) => reexports
                    .get(&(file.clone(), name.clone()))
                    .cloned()
                    .unwrap_or(file),
                None => file,
            }
        };
        for file in &files {
            let here = module_path(&src, file);
            let code = &codes[file];
            // `super::` inside an inline module (`mod tests { use super::*; }`) is this file.
            let has_inline_module = code.contains("mod ") && code.contains("{\n");
            let (uses, spans) = use_statements(code);
            let mut paths: Vec<(usize, bool, String)> = Vec::new();
            for used in uses {
                for path in used.paths {
                    paths.push((used.indent, used.public, path));
                }
            }
            paths.extend(
                inline_paths(code, &spans)
                    .into_iter()
                    .map(|(indent, path)| (indent, false, path)),
            );
            for (indent, public, path) in paths {
                // A root file's re-export names the item where it is defined: not an import.
                if public && indent == 0 && is_root_file(file) {
                    continue;
                }
                let parts: Vec<String> = path.split("::").map(str::to_owned).collect();
                let target = match parts[0].as_str() {
                    "crate" => parts[1..].to_vec(),
                    "super" if indent >= 4 && has_inline_module => continue,
                    "super" => {
                        let parent = &here[..here.len().saturating_sub(1)];
                        [parent, &parts[1..]].concat()
                    }
                    "self" => [&here[..], &parts[1..]].concat(),
                    // `use child::Item` in a module's root file names a child module.
                    first if is_root_file(file) && indent == 0 => {
                        let child = [&here[..], &[first.to_owned()][..]].concat();
                        if module_file(&src, &child).1 != child.len() {
                            continue;
                        }
                        [&here[..], &parts[..]].concat()
                    }
                    _ => continue,
                };
                let imported = resolve(&target);
                if imported != *file {
                    graph.entry(file.clone()).or_default().insert(imported);
                }
            }
        }
    }
    graph
}

/// The strongly connected groups of more than one file (Tarjan's algorithm, iteratively).
fn cycles(graph: &BTreeMap<PathBuf, BTreeSet<PathBuf>>) -> Vec<Vec<PathBuf>> {
    let nodes: Vec<&PathBuf> = graph
        .keys()
        .chain(graph.values().flatten())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let id: HashMap<&PathBuf, usize> = nodes.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let edges: Vec<Vec<usize>> = nodes
        .iter()
        .map(|n| {
            graph
                .get(*n)
                .map_or(Vec::new(), |to| to.iter().map(|t| id[t]).collect())
        })
        .collect();
    let (mut index, mut low) = (vec![usize::MAX; nodes.len()], vec![0; nodes.len()]);
    let (mut on_stack, mut stack, mut next, mut groups) =
        (vec![false; nodes.len()], Vec::new(), 0, Vec::new());
    for root in 0..nodes.len() {
        if index[root] != usize::MAX {
            continue;
        }
        let mut work = vec![(root, 0)];
        while let Some((v, edge)) = work.pop() {
            if edge == 0 {
                index[v] = next;
                low[v] = next;
                next += 1;
                stack.push(v);
                on_stack[v] = true;
            }
            if let Some(&w) = edges[v].get(edge) {
                work.push((v, edge + 1));
                if index[w] == usize::MAX {
                    work.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                let mut group = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    group.push(nodes[w].clone());
                    if w == v {
                        break;
                    }
                }
                if group.len() > 1 {
                    group.sort();
                    groups.push(group);
                }
            }
        }
    }
    groups
}

#[test]
fn no_file_imports_a_file_that_imports_it_back() {
    let graph = file_graph(&workspace().join("crates"));
    assert!(
        graph.len() > 50,
        "the reader of imports found too few: {}",
        graph.len()
    );
    let root = workspace().canonicalize().unwrap();
    let name = |p: &Path| {
        p.canonicalize()
            .unwrap()
            .strip_prefix(&root)
            .unwrap()
            .display()
            .to_string()
    };
    let mut report = String::new();
    for group in cycles(&graph) {
        report.push_str("a circle of imports:\n");
        for from in &group {
            for to in graph[from].iter().filter(|to| group.contains(to)) {
                report.push_str(&format!("  {} -> {}\n", name(from), name(to)));
            }
        }
    }
    assert!(report.is_empty(), "{report}");
}

#[test]
fn the_reader_of_imports_sees_a_circle_through_a_re_export_and_a_use_tree() {
    let crates = std::env::temp_dir().join(format!("cairn-architecture-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&crates);
    let src = crates.join("x/src");
    std::fs::create_dir_all(src.join("b")).unwrap();
    for (file, text) in [
        // The root only re-exports: it is in no circle.
        ("lib.rs", "pub mod a;\npub mod b;\npub use a::Thing;\n"),
        (
            "a.rs",
            "use crate::b::{inner::Other, More};\npub struct Thing;\n",
        ),
        ("b/mod.rs", "pub mod inner;\npub struct More;\n"),
        // Through the root's re-export, to `a.rs`, which imports this file.
        ("b/inner.rs", "pub struct Other(crate::Thing);\n"),
    ] {
        std::fs::write(src.join(file), text).unwrap();
    }
    let graph = file_graph(&crates);
    let found = cycles(&graph);
    std::fs::remove_dir_all(&crates).unwrap();
    assert_eq!(
        found,
        [vec![src.join("a.rs"), src.join("b/inner.rs")]],
        "{graph:?}"
    );
}

/// Each crate's dependencies on the workspace's crates, from its manifest: those of its
/// library and binaries (`[dependencies]`), and those of its tests and benches
/// (`[dev-dependencies]`, `[build-dependencies]`), which are arrows of the graph too.
fn crate_dependencies() -> BTreeMap<String, (BTreeSet<String>, BTreeSet<String>)> {
    let mut deps = BTreeMap::new();
    for entry in std::fs::read_dir(workspace().join("crates")).unwrap() {
        let manifest = entry.unwrap().path().join("Cargo.toml");
        let Ok(text) = std::fs::read_to_string(&manifest) else {
            continue;
        };
        let name = text
            .lines()
            .find_map(|l| l.strip_prefix("name = \""))
            .and_then(|l| l.strip_suffix('"'))
            .unwrap()
            .to_owned();
        let section = |header: &str| -> BTreeSet<String> {
            text.split(&format!("\n[{header}]\n"))
                .nth(1)
                .map_or("", |rest| rest.split("\n[").next().unwrap_or(""))
                .lines()
                .filter_map(|l| l.split([' ', '.', '=']).next())
                .filter(|dep| dep.starts_with("cairn-") && *dep != name)
                .map(str::to_owned)
                .collect()
        };
        let normal = section("dependencies");
        let mut tests = section("dev-dependencies");
        tests.extend(section("build-dependencies"));
        deps.insert(name, (normal, tests));
    }
    deps
}

#[test]
fn crates_depend_on_each_other_in_the_order_the_map_gives() {
    // ARCHITECTURE.md, "Dependencies point one way": p2p and store side by side, neither
    // knowing the other (the service joins them).
    let rank = |name: &str| -> Option<u8> {
        Some(match name {
            "cairn" => 0,
            "cairn-server" => 1,
            "cairn-service" => 2,
            "cairn-p2p" | "cairn-store" => 3,
            "cairn-car" => 4,
            "cairn-unixfs" => 5,
            _ => return None,
        })
    };
    let allowed = |name: &str, dep: &str| match name {
        "cairn-archive" => dep == "cairn-unixfs",
        // It sees the service as its users do, over HTTP; the test support depends on none,
        // so that every crate may test with it.
        "cairn-load" | "cairn-test-support" => false,
        // The binary's harness drives the binary from outside and may use any library below
        // it; only the binary's own tests and benches use the harness.
        "cairn-harness" => dep == "cairn-test-support" || rank(dep).is_some_and(|to| to > 0),
        _ if dep == "cairn-archive" => true,
        _ => matches!((rank(name), rank(dep)), (Some(from), Some(to)) if from < to),
    };
    let deps = crate_dependencies();
    assert!(deps.len() >= 10, "{deps:?}");
    for (name, (normal, tests)) in &deps {
        for dep in normal {
            assert!(
                allowed(name, dep),
                "{name} depends on {dep}, against the map's order"
            );
        }
        // Tests and benches may use the test support, and the load generator's client; the
        // binary's, its harness.
        for dep in tests {
            let helper = dep == "cairn-test-support"
                || dep == "cairn-load"
                || (dep == "cairn-harness" && name == "cairn");
            assert!(
                helper || allowed(name, dep),
                "{name}'s tests or benches depend on {dep}, against the map's order"
            );
        }
    }
}
