//! The routes the routers register, read from their sources: shared by `authorization.rs` and
//! `openapi.rs`, which both fail when their own list of routes is out of step with the routers.
//!
//! axum's `Router` cannot list its routes, so the tests read them where they are written: every
//! `.route(path, method_router)` in `crates/server/src` and `crates/cairn/src` (all files, so a
//! router in a new file counts too), with each method of its method router. Comparing the set of
//! (method, path) pairs, rather than counting `.route(` calls, also catches a method added to an
//! existing route (`get(a).delete(b)`) and a path that changed. Any construct the reader does not
//! understand (`.nest`, `.route_service`, `any(...)`, `on(...)`, a path that is neither a literal
//! nor a `const` of the same file) fails the test, for the reader and the lists to be extended
//! together. Which host a route is on is not read from the sources: `authorization.rs`'s
//! `host_membership` checks it against the running server.

#![allow(dead_code)] // each test binary uses a different part

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// (METHOD, path) of every route registered in the sources; a GET without an explicit HEAD
/// also answers HEAD (axum's `get`).
pub fn registered_routes() -> BTreeSet<(String, String)> {
    let mut routes = written_routes();
    let gets: Vec<String> = (routes.iter())
        .filter(|(method, _)| method == "GET")
        .map(|(_, path)| path.clone())
        .collect();
    routes.extend(gets.into_iter().map(|path| ("HEAD".to_owned(), path)));
    routes
}

/// (METHOD, path) of every method router call written in the sources: an explicit HEAD (TUS's,
/// beside a GET of its own) is there, the HEAD axum's `get` answers by itself is not.
pub fn written_routes() -> BTreeSet<(String, String)> {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for dir in ["server/src", "cairn/src"] {
        rust_files(&crates.join(dir), &mut files);
    }
    let mut routes = BTreeSet::new();
    for file in files {
        let source = std::fs::read_to_string(&file).unwrap();
        let code = Code::lex(&source);
        for construct in [".nest(", ".nest_service(", ".route_service("] {
            assert!(
                code.find_all(construct).is_empty(),
                "{}: {construct} registers routes this test cannot read; extend \
                 `registered_routes` and the tests' lists",
                file.display()
            );
        }
        for at in code.find_all(".route(") {
            let open = at + ".route".len();
            let args = code.balanced(open);
            let (path, methods) = code.split_top_level_comma(args.clone());
            let path = code.path_literal(path, &file);
            for method in code.method_calls(methods, &file, &path) {
                routes.insert((method, path.clone()));
            }
        }
    }
    routes
}

/// Whether `chars[at]` begins a word (no identifier character before it).
fn starts_word(chars: &[char], at: usize) -> bool {
    at == 0 || !(chars[at - 1].is_alphanumeric() || chars[at - 1] == '_')
}

fn rust_files(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

/// A source file's characters with comments blanked out, and which of them are inside string
/// or character literals: enough of Rust's lexer to find calls and read string arguments.
struct Code {
    chars: Vec<char>,
    quoted: Vec<bool>,
}

impl Code {
    fn lex(source: &str) -> Self {
        let chars: Vec<char> = source.chars().collect();
        let mut out = chars.clone();
        let mut quoted = vec![false; chars.len()];
        let mut i = 0;
        while i < chars.len() {
            let rest = &chars[i..];
            if rest.starts_with(&['/', '/']) {
                while i < chars.len() && chars[i] != '\n' {
                    out[i] = ' ';
                    i += 1;
                }
            } else if rest.starts_with(&['/', '*']) {
                let mut depth = 0;
                while i < chars.len() {
                    if chars[i..].starts_with(&['/', '*']) {
                        depth += 1;
                        out[i] = ' ';
                        out[i + 1] = ' ';
                        i += 2;
                    } else if chars[i..].starts_with(&['*', '/']) {
                        depth -= 1;
                        out[i] = ' ';
                        out[i + 1] = ' ';
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        out[i] = if chars[i] == '\n' { '\n' } else { ' ' };
                        i += 1;
                    }
                }
            } else if chars[i] == 'r'
                && matches!(rest.get(1), Some('"' | '#'))
                && starts_word(
                    &chars,
                    i.saturating_sub(usize::from(i > 0 && chars[i - 1] == 'b')),
                )
            {
                // A raw string: r"..." or r#"..."#, perhaps a byte string (br"...").
                let hashes = rest[1..].iter().take_while(|c| **c == '#').count();
                if rest.get(1 + hashes) != Some(&'"') {
                    i += 1;
                    continue;
                }
                let start = i;
                i += 2 + hashes;
                while i < chars.len() {
                    if chars[i] == '"' && chars[i + 1..].iter().take(hashes).all(|c| *c == '#') {
                        i += 1 + hashes;
                        break;
                    }
                    i += 1;
                }
                quoted[start..i.min(chars.len())].fill(true);
            } else if chars[i] == '"' {
                let start = i;
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    i += if chars[i] == '\\' { 2 } else { 1 };
                }
                i += 1;
                quoted[start..i.min(chars.len())].fill(true);
            } else if chars[i] == '\'' {
                // A character literal ('x', '\n', '\'', '"'); otherwise a lifetime.
                let end = if rest.get(1) == Some(&'\\') {
                    rest.iter().skip(3).position(|c| *c == '\'').map(|p| p + 4)
                } else if rest.get(2) == Some(&'\'') {
                    Some(3)
                } else {
                    None
                };
                let end = end.unwrap_or(1);
                quoted[i..i + end].fill(true);
                i += end;
            } else {
                i += 1;
            }
        }
        Self { chars: out, quoted }
    }

    /// Where `needle` starts in the code (not in literals or comments).
    fn find_all(&self, needle: &str) -> Vec<usize> {
        let needle: Vec<char> = needle.chars().collect();
        (0..self.chars.len())
            .filter(|&i| self.chars[i..].starts_with(&needle) && !self.quoted[i])
            .collect()
    }

    /// The range inside the brackets that open at `open`.
    fn balanced(&self, open: usize) -> std::ops::Range<usize> {
        assert_eq!(self.chars[open], '(');
        let mut depth = 0;
        for i in open..self.chars.len() {
            if self.quoted[i] {
                continue;
            }
            match self.chars[i] {
                '(' | '[' | '{' => depth += 1,
                ')' | ']' | '}' => {
                    depth -= 1;
                    if depth == 0 {
                        return open + 1..i;
                    }
                }
                _ => {}
            }
        }
        panic!("unbalanced brackets");
    }

    /// The first argument and the rest.
    fn split_top_level_comma(
        &self,
        args: std::ops::Range<usize>,
    ) -> (std::ops::Range<usize>, std::ops::Range<usize>) {
        let mut depth = 0;
        for i in args.clone() {
            if self.quoted[i] {
                continue;
            }
            match self.chars[i] {
                '(' | '[' | '{' => depth += 1,
                ')' | ']' | '}' => depth -= 1,
                ',' if depth == 0 => return (args.start..i, i + 1..args.end),
                _ => {}
            }
        }
        panic!("a .route( call without two arguments");
    }

    fn text(&self, range: std::ops::Range<usize>) -> String {
        self.chars[range]
            .iter()
            .collect::<String>()
            .trim()
            .to_owned()
    }

    /// A route's path: a string literal, or a `const NAME: &str = "...";` of the same file.
    fn path_literal(&self, range: std::ops::Range<usize>, file: &Path) -> String {
        let text = self.text(range);
        if let Some(literal) = text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
            return literal.to_owned();
        }
        let code: String = self.chars.iter().collect();
        let definition = format!("const {text}: &str = \"");
        let Some(at) = code.find(&definition) else {
            panic!(
                "{}: the route path {text:?} is neither a literal nor a const of this file",
                file.display()
            );
        };
        let value = &code[at + definition.len()..];
        value[..value.find('"').unwrap()].to_owned()
    }

    /// The HTTP methods of a method router expression such as `get(a).post(b).layer(c)`:
    /// the calls at its top level.
    fn method_calls(
        &self,
        range: std::ops::Range<usize>,
        file: &Path,
        path: &str,
    ) -> BTreeSet<String> {
        let mut methods = BTreeSet::new();
        let mut depth = 0;
        let mut i = range.start;
        while i < range.end {
            let c = self.chars[i];
            if self.quoted[i] {
                i += 1;
                continue;
            }
            match c {
                '(' | '[' | '{' => depth += 1,
                ')' | ']' | '}' => depth -= 1,
                _ => {}
            }
            let starts_name = (c.is_alphabetic() || c == '_')
                && !(i > range.start
                    && (self.chars[i - 1].is_alphanumeric()
                        || self.chars[i - 1] == '_'
                        || self.chars[i - 1] == ':'));
            if depth != 0 || !starts_name {
                i += 1;
                continue;
            }
            // A name, perhaps a path (`axum::routing::get`): its last segment is the call.
            let start = i;
            while i < range.end
                && (self.chars[i].is_alphanumeric() || self.chars[i] == '_' || self.chars[i] == ':')
            {
                i += 1;
            }
            let name: String = self.chars[start..i].iter().collect();
            let name = name.rsplit("::").next().unwrap_or_default().to_owned();
            let called = self.chars[i..range.end].iter().find(|c| !c.is_whitespace()) == Some(&'(');
            if !called {
                continue;
            }
            let method = name.strip_suffix("_service").unwrap_or(&name);
            match method {
                "get" | "post" | "put" | "patch" | "delete" | "head" | "options" | "trace"
                | "connect" => {
                    methods.insert(method.to_uppercase());
                }
                "layer" | "route_layer" | "with_state" | "handle_error" => {}
                other => panic!(
                    "{}: route {path:?}: `{other}(` in its method router is not something this \
                     test can read; extend `registered_routes` and the tests' lists",
                    file.display()
                ),
            }
        }
        assert!(
            !methods.is_empty(),
            "{}: route {path:?} without a method",
            file.display()
        );
        methods
    }
}
