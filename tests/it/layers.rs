//! The layering of `wymcp/src` (ARCHITECTURE.md), held: every source file
//! imports only from the layers below its own (or from its own part), no two
//! parts of one layer import each other, no stage imports another, and no
//! import cycle joins any two files.
//!
//! It reads each file's `use crate::…` / `use super::…` statements and every
//! other `crate::…` / `super::…` path in its code (comments and string
//! literals left out), resolves each to the file that defines the module it
//! names, and names every import that runs the wrong way. The Rust
//! counterpart of the seeds' wire-check invariant, for the code's own
//! structure.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Every part of the crate: its files (a directory, or one file), its layer
/// (0 at the bottom), and whether its own files may import each other.
const PARTS: &[(&str, &str, u8, Siblings)] = &[
    ("protocol", "protocol/", 0, Siblings::Import),
    ("auth", "auth/", 1, Siblings::Import),
    ("origin", "origin.rs", 1, Siblings::Import),
    ("mrtr", "mrtr/", 1, Siblings::Import),
    ("sse", "sse.rs", 1, Siblings::Import),
    ("tasks", "tasks/", 1, Siblings::Import),
    // The request span's fields and events.
    ("trace", "trace.rs", 1, Siblings::Import),
    // The surface composes the parts below it.
    ("surface", "surface/", 2, Siblings::Import),
    ("server", "server.rs", 3, Siblings::Import),
    // The Redis backends (feature `redis`): a relay and a store, beside the
    // server, which knows neither.
    ("redis", "redis/", 3, Siblings::Import),
    // The contract the macro's generated code calls.
    ("contract", "reply.rs", 4, Siblings::Import),
    ("contract", "exchange.rs", 4, Siblings::Import),
    ("contract", "body.rs", 4, Siblings::Import),
    ("contract", "stage.rs", 4, Siblings::Import),
    // One file per stage; none knows another.
    ("stages", "stages/", 5, Siblings::Apart),
    ("router", "router.rs", 6, Siblings::Import),
    ("router", "private.rs", 6, Siblings::Import),
    ("chain", "chain.rs", 7, Siblings::Import),
    ("serve", "serve/", 7, Siblings::Import),
    // The second transport: lines in, the surface's answers out.
    ("stdio", "stdio/", 7, Siblings::Import),
    ("memory", "memory.rs", 7, Siblings::Import),
    // The in-process client of a server's own tests, over the default chain.
    ("testing", "testing.rs", 8, Siblings::Import),
    // The face: re-exports only.
    ("face", "fuzzing.rs", 9, Siblings::Import),
    ("face", "lib.rs", 9, Siblings::Import),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Siblings {
    /// The part's files may import each other (never in a cycle).
    Import,
    /// They may not: each answers to the layers below alone (its `mod.rs`
    /// may declare and re-export them).
    Apart,
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../wymcp/src")
}

/// Every `.rs` file under `dir`, as a path relative to `src()`.
fn files(dir: &Path, out: &mut Vec<String>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let relative = path.strip_prefix(src()).expect("under src");
            out.push(relative.to_string_lossy().replace('\\', "/"));
        }
    }
}

fn part_of(file: &str) -> Option<(&'static str, u8, Siblings)> {
    PARTS
        .iter()
        .find(|(_, place, _, _)| {
            if place.ends_with('/') {
                file.starts_with(place)
            } else {
                file == *place
            }
        })
        .map(|&(name, _, layer, siblings)| (name, layer, siblings))
}

/// The module path of a file: `surface/tool.rs` is `["surface", "tool"]`,
/// `surface/mod.rs` is `["surface"]`, `lib.rs` is `[]`.
fn module_of(file: &str) -> Vec<String> {
    if file == "lib.rs" {
        return Vec::new();
    }
    let stem = file.strip_suffix(".rs").expect("a .rs file");
    let mut path: Vec<String> = stem.split('/').map(str::to_owned).collect();
    if path.last().is_some_and(|l| l == "mod") {
        path.pop();
    }
    if path == ["private"] {
        // `#[path = "private.rs"] pub mod __private;`
        return vec!["__private".to_owned()];
    }
    path
}

/// The file that defines the longest prefix of `path` that is a module.
fn file_of(path: &[String], modules: &BTreeMap<Vec<String>, String>) -> String {
    (0..=path.len())
        .rev()
        .find_map(|n| modules.get(&path[..n]))
        .cloned()
        .unwrap_or_else(|| "lib.rs".to_owned())
}

/// The source with comments, string and character literals blanked out,
/// so that only code remains.
fn code_only(source: &str) -> String {
    let bytes = source.as_bytes();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    while i < bytes.len() {
        let rest = &source[i..];
        if rest.starts_with("//") {
            let end = rest.find('\n').map_or(source.len(), |n| i + n);
            i = end;
        } else if rest.starts_with("/*") {
            let end = rest.find("*/").map_or(source.len(), |n| i + n + 2);
            i = end;
        } else if rest.starts_with("r#\"") || rest.starts_with("r\"") {
            let hashes = rest[1..].chars().take_while(|&c| c == '#').count();
            let close = format!("\"{}", "#".repeat(hashes));
            let body = i + 2 + hashes;
            let end = source[body..]
                .find(&close)
                .map_or(source.len(), |n| body + n + close.len());
            out.push_str("\"\"");
            i = end;
        } else if bytes[i] == b'"' {
            let mut j = i + 1;
            while j < bytes.len() && bytes[j] != b'"' {
                j += if bytes[j] == b'\\' { 2 } else { 1 };
            }
            out.push_str("\"\"");
            i = j + 1;
        } else if bytes[i] == b'\''
            && (rest.starts_with("'\\") || rest.chars().nth(2) == Some('\''))
        {
            // A character literal (a lifetime has no closing quote).
            let end = rest[1..].find('\'').map_or(source.len(), |n| i + n + 2);
            out.push_str("' '");
            i = end;
        } else {
            let c = rest.chars().next().expect("not at the end");
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// Expands a `use` tree (`a::{b, c::{d, e}}`) into its paths.
fn expand_tree(tree: &str) -> Vec<String> {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        let path = tree.split(" as ").next().unwrap_or(tree).trim();
        return vec![path.to_owned()];
    };
    let prefix = tree[..open].trim().trim_end_matches("::");
    let inner = &tree[open + 1..tree.rfind('}').expect("a closing brace")];
    let mut items = Vec::new();
    let mut depth = 0;
    let mut start = 0;
    for (at, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&inner[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    items.push(&inner[start..]);
    items
        .into_iter()
        .filter(|item| !item.trim().is_empty())
        .flat_map(expand_tree)
        .map(|path| match path.as_str() {
            "self" => prefix.to_owned(),
            _ if prefix.is_empty() => path,
            _ => format!("{prefix}::{path}"),
        })
        .collect()
}

/// The spans of the inline modules (`mod tests { … }`) of `code`.
fn inline_modules(code: &str) -> Vec<std::ops::Range<usize>> {
    let mut spans = Vec::new();
    let mut search = 0;
    while let Some(n) = code[search..].find("mod ") {
        let at = search + n;
        search = at + 4;
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let rest = &code[at + 4..];
        let name_len = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        let after = rest[name_len..].trim_start();
        if !after.starts_with('{') {
            continue;
        }
        let open = at + 4 + name_len + (rest[name_len..].len() - after.len());
        let mut depth = 0;
        for (i, c) in code[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        spans.push(open..open + i);
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    spans
}

/// Every `crate::…`/`super::…` path `code` names, with its offset and the
/// line it is on.
fn paths(code: &str) -> Vec<(usize, usize, String)> {
    let mut found = Vec::new();
    let line_of = |at: usize| code[..at].matches('\n').count() + 1;
    // `use` statements, whole (their trees may span lines).
    let mut uses = Vec::new();
    let mut search = 0;
    while let Some(n) = code[search..].find("use ") {
        let at = search + n;
        search = at + 4;
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let Some(end) = code[at..].find(';') else {
            break;
        };
        let tree = &code[at + 4..at + end];
        for path in expand_tree(tree) {
            if path.starts_with("crate::") || path.starts_with("super::") {
                found.push((at, line_of(at), path));
            }
        }
        uses.push(at..at + end);
    }
    // Other paths in code.
    for keyword in ["crate::", "super::"] {
        let mut search = 0;
        while let Some(n) = code[search..].find(keyword) {
            let at = search + n;
            search = at + keyword.len();
            if uses.iter().any(|u| u.contains(&at)) {
                continue;
            }
            let before = code[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let path: String = code[at..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            found.push((at, line_of(at), path.trim_end_matches(':').to_owned()));
        }
    }
    found
}

/// `path` (`crate::…` or `super::…`) as an absolute module path, seen from
/// the file whose module path is `module` (a `mod.rs` or `lib.rs` is its
/// directory's module; any other file is a module of its own).
fn absolute(path: &str, module: &[String]) -> Vec<String> {
    let mut segments = path.split("::").map(str::to_owned);
    let mut base: Vec<String> = module.to_vec();
    match segments.next().as_deref() {
        Some("crate") => base.clear(),
        Some("super") => {
            base.pop();
            for segment in segments.by_ref() {
                if segment == "super" {
                    base.pop();
                } else {
                    base.push(segment);
                    break;
                }
            }
        }
        _ => {}
    }
    base.extend(segments);
    base
}

/// One import of one file by another.
#[derive(Debug, Clone)]
struct Edge {
    from: String,
    to: String,
    line: usize,
    path: String,
}

fn edges() -> (Vec<String>, Vec<Edge>) {
    let mut all = Vec::new();
    files(&src(), &mut all);
    let modules: BTreeMap<Vec<String>, String> =
        all.iter().map(|f| (module_of(f), f.clone())).collect();
    let mut edges = Vec::new();
    for file in &all {
        let source = std::fs::read_to_string(src().join(file)).expect("readable source");
        let code = code_only(&source);
        let module = module_of(file);
        // A `mod.rs`/`lib.rs` is its directory's module; `super` of a child
        // file is the directory's module.
        let here = if file.ends_with("mod.rs") || file == "lib.rs" {
            let mut m = module.clone();
            m.push(String::new());
            m
        } else {
            module.clone()
        };
        let inline = inline_modules(&code);
        for (at, line, path) in paths(&code) {
            // Inside `mod tests { … }` a path is seen from that module.
            let mut seen_from = here.clone();
            for span in &inline {
                if span.contains(&at) {
                    seen_from.push("(inline)".to_owned());
                }
            }
            let target = file_of(&absolute(&path, &seen_from), &modules);
            if &target != file {
                edges.push(Edge {
                    from: file.clone(),
                    to: target,
                    line,
                    path,
                });
            }
        }
    }
    (all, edges)
}

/// Rule: every file belongs to a part of the table, and imports run
/// downward only: from a part to the layers below, or within a part whose
/// files may import each other.
#[test]
fn every_import_runs_down_a_layer() {
    let (all, edges) = edges();
    let unplaced: Vec<&String> = all.iter().filter(|f| part_of(f).is_none()).collect();
    assert!(
        unplaced.is_empty(),
        "files in no part of the layering (add them to PARTS and ARCHITECTURE.md): {unplaced:?}"
    );
    let mut wrong = String::new();
    for edge in &edges {
        let (from_part, from_layer, siblings) = part_of(&edge.from).expect("placed");
        let (to_part, to_layer, _) = part_of(&edge.to).expect("placed");
        let why = if from_part == to_part {
            // A part's `mod.rs` declares and re-exports its files.
            let declares = edge.from.ends_with("mod.rs");
            (siblings == Siblings::Apart && !declares)
                .then(|| format!("the files of `{from_part}` do not import each other"))
        } else if to_layer > from_layer {
            Some(format!(
                "`{to_part}` (layer {to_layer}) is above `{from_part}` (layer {from_layer})"
            ))
        } else if to_layer == from_layer {
            Some(format!(
                "`{to_part}` and `{from_part}` are parts of one layer ({from_layer})"
            ))
        } else {
            None
        };
        if let Some(why) = why {
            let _ = writeln!(
                wrong,
                "wymcp/src/{}:{} imports `{}` from wymcp/src/{}: {why}",
                edge.from, edge.line, edge.path, edge.to
            );
        }
    }
    assert!(wrong.is_empty(), "imports against the layering:\n{wrong}");
}

/// A node's state in the depth-first search of [`no_file_import_cycle`].
#[derive(Clone, Copy, PartialEq)]
enum Mark {
    White,
    Grey,
    Black,
}
/// Depth-first search from `node`; a grey node met again closes a cycle,
/// which is returned.
fn visit<'a>(
    node: &'a str,
    graph: &BTreeMap<&'a str, BTreeSet<&'a str>>,
    marks: &mut BTreeMap<&'a str, Mark>,
    stack: &mut Vec<&'a str>,
) -> Option<Vec<&'a str>> {
    marks.insert(node, Mark::Grey);
    stack.push(node);
    for &next in &graph[node] {
        match marks[next] {
            Mark::Grey => {
                let from = stack.iter().position(|&n| n == next).expect("on the stack");
                let mut cycle = stack[from..].to_vec();
                cycle.push(next);
                return Some(cycle);
            }
            Mark::White => {
                if let Some(cycle) = visit(next, graph, marks, stack) {
                    return Some(cycle);
                }
            }
            Mark::Black => {}
        }
    }
    stack.pop();
    marks.insert(node, Mark::Black);
    None
}

/// Rule: no import cycle joins any two files (within a part too).
#[test]
fn no_file_import_cycle() {
    let (all, edges) = edges();
    let mut graph: BTreeMap<&str, BTreeSet<&str>> =
        all.iter().map(|f| (f.as_str(), BTreeSet::new())).collect();
    for edge in &edges {
        graph
            .entry(edge.from.as_str())
            .or_default()
            .insert(edge.to.as_str());
    }
    let mut marks: BTreeMap<&str, Mark> = graph.keys().map(|&k| (k, Mark::White)).collect();
    for &node in graph.keys() {
        if marks[node] == Mark::White
            && let Some(cycle) = visit(node, &graph, &mut marks, &mut Vec::new())
        {
            let hops: Vec<String> = cycle
                .windows(2)
                .map(|pair| {
                    let edge = edges
                        .iter()
                        .find(|e| e.from == pair[0] && e.to == pair[1])
                        .expect("an edge");
                    format!("wymcp/src/{}:{} (`{}`)", edge.from, edge.line, edge.path)
                })
                .collect();
            panic!("an import cycle: {}", hops.join(" → "));
        }
    }
}

/// The reader itself: use trees expand, relative paths resolve, comments
/// and strings are not code.
#[test]
fn the_reader_reads_what_rust_means() {
    assert_eq!(
        expand_tree("crate::a::{b, c::{d, e as f}, self}"),
        [
            "crate::a::b",
            "crate::a::c::d",
            "crate::a::c::e",
            "crate::a"
        ]
    );
    let code = code_only(
        "let x = \"crate::no\"; // crate::nor\nuse super::yes;\n/* crate::neither */ crate::also::this();",
    );
    let found: Vec<String> = paths(&code).into_iter().map(|(_, _, p)| p).collect();
    assert_eq!(found, ["super::yes", "crate::also::this"]);
    let tool = vec!["surface".to_owned(), "tool".to_owned()];
    assert_eq!(
        absolute("super::call::Call", &tool),
        ["surface", "call", "Call"]
    );
    let facade = vec!["surface".to_owned(), String::new()];
    assert_eq!(absolute("super::x", &facade), ["surface", "x"]);
    assert_eq!(
        absolute("crate::protocol::meta", &tool),
        ["protocol", "meta"]
    );
    let code = code_only("mod tests {\n    use super::*;\n}\nfn f() {}");
    let spans = inline_modules(&code);
    assert_eq!(spans.len(), 1);
    assert!(spans[0].contains(&code.find("super").expect("a super path")));
}
