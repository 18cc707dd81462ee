//! The layering of `wymcp/src` (ARCHITECTURE.md), held: every source file
//! imports only from the layers below its own (or from its own part), no two
//! parts of one layer import each other, no stage imports another, no import
//! cycle joins any two files, every `mod.rs` only declares and re-exports,
//! and the page's layer table names every directory and top-level file of
//! `wymcp/src` and nothing that is not there.
//!
//! The table is the page's own: the test parses ARCHITECTURE.md's layer
//! table, so the page and the check cannot drift apart. The verdict is a
//! pure function of a tree (path → source) and that table; the real test
//! feeds it `wymcp/src` as it is on disk, and a control per kind of
//! violation feeds it a planted tree and asserts the violation is named.
//!
//! The reader takes every path a file's code names that starts with
//! `crate::`, `super::`, `self::` or `wymcp::` (the crate is also `wymcp`
//! inside itself: `extern crate self as wymcp`), in `use` trees and in
//! code, and in the string literals of attributes whose text is such a path
//! (`#[serde(with = "crate::…")]`); comments and every other string are not
//! code. Each path resolves to the file that defines what it names,
//! following the re-exports of the files on its way (`super::Foo` through a
//! `mod.rs`'s `pub use foo::Foo` is an import of `foo.rs`), except the
//! face's: an import of `crate::Tool` is an import of `lib.rs`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

/// One row of ARCHITECTURE.md's layer table.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Part {
    /// 0 at the bottom.
    layer: u8,
    name: String,
    /// Its files: a directory (`surface/`) or one file (`chain.rs`).
    places: Vec<String>,
    /// Its files may not import each other (the row says `(apart)`): each
    /// answers to the layers below alone, and its `mod.rs` declares and
    /// re-exports them.
    apart: bool,
}

/// The kinds of violation the verdict names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    /// An import of a part of a higher layer.
    Upward,
    /// An import of another part of the same layer.
    SameLayer,
    /// A file of a part whose files are apart importing a sibling.
    Siblings,
    /// An import cycle; `file` imports `target` on it.
    Cycle,
    /// A `mod.rs` holding an item that is neither `mod` nor `use`.
    ModRsDefines,
    /// A file importing a sibling (or a file of its own directory) through
    /// that directory's `mod.rs`, not from the file that defines it.
    ThroughModRs,
    /// A directory or top-level file of `src` the page's table does not name.
    Unnamed,
    /// A path the page's table names that does not exist.
    Missing,
}

/// One violation: its kind, where it is, what it names, and the sentence
/// a reader is shown.
#[derive(Debug, Clone)]
struct Violation {
    kind: Kind,
    file: String,
    target: String,
    said: String,
}

/// The layer table of `page`: the first Markdown table whose header is
/// `| layer | part | files | owns |`.
fn parse_parts(page: &str) -> Result<Vec<Part>, String> {
    let cells = |line: &str| -> Vec<String> {
        let line = line.trim();
        let inner = line
            .strip_prefix('|')
            .and_then(|l| l.strip_suffix('|'))
            .unwrap_or(line);
        inner.split('|').map(|c| c.trim().to_owned()).collect()
    };
    let mut lines = page.lines();
    lines
        .by_ref()
        .find(|l| l.trim().starts_with('|') && cells(l) == ["layer", "part", "files", "owns"])
        .ok_or("no `| layer | part | files | owns |` table")?;
    let separator = lines.next().unwrap_or_default();
    if !cells(separator)
        .iter()
        .all(|c| c.chars().all(|ch| ch == '-' || ch == ':'))
    {
        return Err(format!("the table's header is followed by `{separator}`"));
    }
    let mut parts = Vec::new();
    for line in lines.take_while(|l| l.trim().starts_with('|')) {
        let row = cells(line);
        let [layer, name, files, _owns] = row.as_slice() else {
            return Err(format!("a row of {} cells, not 4: `{line}`", row.len()));
        };
        let layer = layer
            .parse()
            .map_err(|_| format!("a layer that is not a number: `{line}`"))?;
        let places: Vec<String> = files
            .split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_owned)
            .collect();
        if places.is_empty() {
            return Err(format!("a row naming no file in backticks: `{line}`"));
        }
        parts.push(Part {
            layer,
            name: name.clone(),
            places,
            apart: files.contains("(apart)"),
        });
    }
    if parts.is_empty() {
        return Err("a layer table with no rows".to_owned());
    }
    Ok(parts)
}

fn part_of<'p>(file: &str, parts: &'p [Part]) -> Option<&'p Part> {
    parts.iter().find(|part| {
        part.places.iter().any(|place| {
            if place.ends_with('/') {
                file.starts_with(place.as_str())
            } else {
                file == place
            }
        })
    })
}

/// The module path of a file: `surface/tool.rs` is `["surface", "tool"]`,
/// `surface/mod.rs` is `["surface"]`, `lib.rs` is `[]`.
fn module_of(file: &str) -> Vec<String> {
    if file == "lib.rs" {
        return Vec::new();
    }
    let stem = file.strip_suffix(".rs").unwrap_or(file);
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

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Whether `text` is a path of this crate, as an attribute's string holds
/// one (`"crate::surface::x"`, `"super::y"`).
fn is_crate_path(text: &str) -> bool {
    let text = text.strip_prefix("::").unwrap_or(text);
    ["crate::", "super::", "self::", "wymcp::"]
        .iter()
        .any(|k| text.starts_with(k))
        && text.chars().all(|c| is_ident(c) || c == ':')
}

/// The source with comments, character literals and string literals
/// blanked out, so that only code remains, except a string inside an
/// attribute whose text is a path of the crate (`#[serde(with = "…")]`):
/// that is code, and is kept, unquoted. Line breaks are kept, so lines
/// count as in the source.
fn code_only(source: &str) -> String {
    let bytes = source.as_bytes();
    let mut out = String::with_capacity(source.len());
    let breaks = |text: &str| "\n".repeat(text.matches('\n').count());
    // The bracket depth, and the depth outside the attribute being read.
    let mut depth = 0usize;
    let mut attribute: Option<usize> = None;
    let mut i = 0;
    while i < bytes.len() {
        let rest = &source[i..];
        let string = if rest.starts_with("r#\"") || rest.starts_with("r\"") {
            let hashes = rest[1..].chars().take_while(|&c| c == '#').count();
            let close = format!("\"{}", "#".repeat(hashes));
            let body = i + 2 + hashes;
            let end = source[body..]
                .find(&close)
                .map_or(source.len(), |n| body + n);
            Some((body, end, end + close.len()))
        } else if bytes[i] == b'"' {
            let mut j = i + 1;
            while j < bytes.len() && bytes[j] != b'"' {
                j += if bytes[j] == b'\\' { 2 } else { 1 };
            }
            let end = j.min(bytes.len());
            Some((i + 1, end, (j + 1).min(bytes.len())))
        } else {
            None
        };
        if rest.starts_with("//") {
            i = rest.find('\n').map_or(source.len(), |n| i + n);
        } else if rest.starts_with("/*") {
            let end = rest.find("*/").map_or(source.len(), |n| i + n + 2);
            out.push_str(&breaks(&source[i..end]));
            i = end;
        } else if let Some((body, end, after)) = string {
            let text = &source[body..end];
            if attribute.is_some() && is_crate_path(text) {
                out.push(' ');
                out.push_str(text);
                out.push(' ');
            } else {
                out.push('"');
                out.push_str(&breaks(text));
                out.push('"');
            }
            i = after;
        } else if bytes[i] == b'\''
            && (rest.starts_with("'\\") || rest.chars().nth(2) == Some('\''))
        {
            // A character literal (a lifetime has no closing quote).
            let end = rest[1..].find('\'').map_or(source.len(), |n| i + n + 2);
            out.push_str("' '");
            i = end;
        } else {
            let c = rest.chars().next().unwrap_or(' ');
            if attribute.is_none() && (rest.starts_with("#[") || rest.starts_with("#![")) {
                attribute = Some(depth);
            }
            match c {
                '[' => depth += 1,
                ']' => {
                    depth = depth.saturating_sub(1);
                    if attribute == Some(depth) {
                        attribute = None;
                    }
                }
                _ => {}
            }
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// Expands a `use` tree (`a::{b, c::{d, e as f}}`) into its paths, each
/// with the name it binds (`e as f` binds `f`; a glob binds `*`).
fn expand_bindings(tree: &str) -> Vec<(String, String)> {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        let mut halves = tree.split(" as ");
        let path = halves.next().unwrap_or(tree).trim().to_owned();
        let name = halves.next().map_or_else(
            || path.rsplit("::").next().unwrap_or_default().to_owned(),
            |alias| alias.trim().to_owned(),
        );
        return vec![(path, name)];
    };
    let prefix = tree[..open].trim().trim_end_matches("::");
    let close = tree.rfind('}').unwrap_or(tree.len());
    let inner = &tree[open + 1..close.max(open + 1)];
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
        .flat_map(expand_bindings)
        .map(|(path, name)| match path.as_str() {
            "self" => {
                let own = prefix.rsplit("::").next().unwrap_or_default();
                let name = if name == "self" { own.to_owned() } else { name };
                (prefix.to_owned(), name)
            }
            _ if prefix.is_empty() => (path, name),
            _ => (format!("{prefix}::{path}"), name),
        })
        .collect()
}

/// Expands a `use` tree into its paths.
fn expand_tree(tree: &str) -> Vec<String> {
    expand_bindings(tree)
        .into_iter()
        .map(|(path, _)| path)
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
        if before.is_some_and(is_ident) {
            continue;
        }
        let rest = &code[at + 4..];
        let name_len = rest.find(|c: char| !is_ident(c)).unwrap_or(rest.len());
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

/// The words a path of this crate starts with.
const ROOTS: [&str; 4] = ["crate::", "super::", "self::", "wymcp::"];

/// One `use` statement: where it is and what it binds.
struct Use {
    /// Its whole text, from `use` to its `;`.
    span: std::ops::Range<usize>,
    /// Each path and the name it binds.
    bindings: Vec<(String, String)>,
}

/// The `use` statements of `code`.
fn uses(code: &str) -> Vec<Use> {
    let mut found = Vec::new();
    let mut search = 0;
    while let Some(n) = code[search..].find("use ") {
        let at = search + n;
        search = at + 4;
        let before = code[..at].chars().next_back();
        if before.is_some_and(is_ident) {
            continue;
        }
        let Some(end) = code[at..].find(';') else {
            break;
        };
        let tree = &code[at + 4..at + end];
        let bindings = expand_bindings(tree)
            .into_iter()
            .map(|(path, name)| (path.trim_start_matches("::").to_owned(), name))
            .collect();
        found.push(Use {
            span: at..at + end,
            bindings,
        });
    }
    found
}

/// Every path of this crate `code` names, with its offset and the line it
/// is on.
fn paths(code: &str) -> Vec<(usize, usize, String)> {
    let mut found = Vec::new();
    let line_of = |at: usize| code[..at].matches('\n').count() + 1;
    // `use` statements, whole (their trees may span lines).
    let statements = uses(code);
    for statement in &statements {
        let at = statement.span.start;
        for (path, _) in &statement.bindings {
            if ROOTS.iter().any(|r| path.starts_with(r)) {
                found.push((at, line_of(at), path.clone()));
            }
        }
    }
    // Other paths in code.
    for keyword in ROOTS {
        let mut search = 0;
        while let Some(n) = code[search..].find(keyword) {
            let at = search + n;
            search = at + keyword.len();
            if statements.iter().any(|u| u.span.contains(&at)) {
                continue;
            }
            let before = &code[..at];
            // A leading `::` (`::wymcp::x`) starts a path; `a::crate` does not.
            let leading = before
                .strip_suffix("::")
                .is_some_and(|b| !b.ends_with(|c: char| is_ident(c) || c == ':'));
            if before.ends_with(|c: char| is_ident(c) || c == ':') && !leading {
                continue;
            }
            let path: String = code[at..]
                .chars()
                .take_while(|&c| is_ident(c) || c == ':')
                .collect();
            found.push((at, line_of(at), path.trim_end_matches(':').to_owned()));
        }
    }
    found
}

/// `path` (starting `crate::`, `wymcp::`, `super::` or `self::`) as an
/// absolute module path, seen from the module `module`.
fn absolute(path: &str, module: &[String]) -> Vec<String> {
    let mut base: Vec<String> = module.to_vec();
    let mut segments = path.split("::").peekable();
    if matches!(segments.peek(), Some(&("crate" | "wymcp"))) {
        base.clear();
        segments.next();
    }
    while let Some(&word) = segments.peek() {
        match word {
            "self" => {}
            "super" => {
                base.pop();
            }
            _ => break,
        }
        segments.next();
    }
    base.extend(segments.map(str::to_owned));
    base
}

/// One import of one file by another.
#[derive(Debug, Clone)]
struct Edge {
    from: String,
    to: String,
    line: usize,
    path: String,
    /// The first `mod.rs` whose re-export the path was resolved through.
    through: Option<String>,
}

/// What a tree's files define and bind.
struct Crate<'t> {
    /// Module path → the file that defines it.
    modules: BTreeMap<Vec<String>, &'t str>,
    /// File → the names its top-level `use` statements bind, each to an
    /// absolute path in the crate (`None`: another crate's).
    bindings: BTreeMap<&'t str, BTreeMap<String, Option<Vec<String>>>>,
}

impl<'t> Crate<'t> {
    fn new(tree: &'t BTreeMap<String, String>, code: &BTreeMap<&'t str, String>) -> Self {
        let modules: BTreeMap<Vec<String>, &str> =
            tree.keys().map(|f| (module_of(f), f.as_str())).collect();
        let mut bindings = BTreeMap::new();
        for (&file, code) in code {
            let module = module_of(file);
            let inline = inline_modules(code);
            let mut names = BTreeMap::new();
            for statement in uses(code) {
                if inline
                    .iter()
                    .any(|span| span.contains(&statement.span.start))
                {
                    continue;
                }
                for (path, name) in statement.bindings {
                    let first = path.split("::").next().unwrap_or_default();
                    let target = if ROOTS.iter().any(|r| path.starts_with(r)) {
                        Some(absolute(&path, &module))
                    } else {
                        // A child module (`use config::X`), or another crate.
                        let mut child = module.clone();
                        child.push(first.to_owned());
                        modules.contains_key(&child).then(|| {
                            let mut own = module.clone();
                            own.extend(path.split("::").map(str::to_owned));
                            own
                        })
                    };
                    names.insert(name, target);
                }
            }
            bindings.insert(file, names);
        }
        Crate { modules, bindings }
    }

    /// The file that defines what `path` names: the longest prefix that is
    /// a module, then, while the next segment is a name that module's file
    /// binds with `use`, that name's own path. The face's `use`s are not
    /// followed. `None`: another crate's item. With the file, the first
    /// `mod.rs` whose `use` was followed on the way.
    fn resolve(&self, path: &[String]) -> Option<(&'t str, Option<&'t str>)> {
        let mut path = path.to_vec();
        let mut through = None;
        for _hop in 0..16 {
            let n = (0..=path.len())
                .rev()
                .find(|&n| self.modules.contains_key(&path[..n]))?;
            let file = self.modules[&path[..n]];
            let bound = (n < path.len() && file != "lib.rs")
                .then(|| self.bindings.get(file)?.get(&path[n]))
                .flatten();
            match bound {
                None => return Some((file, through)),
                Some(None) => return None,
                Some(Some(target)) => {
                    if through.is_none() && (file == "mod.rs" || file.ends_with("/mod.rs")) {
                        through = Some(file);
                    }
                    let mut next = target.clone();
                    next.extend(path[n + 1..].iter().cloned());
                    path = next;
                }
            }
        }
        None
    }
}

/// Every import between two files of `tree`.
fn edges(tree: &BTreeMap<String, String>) -> Vec<Edge> {
    let code: BTreeMap<&str, String> = tree
        .iter()
        .map(|(f, source)| (f.as_str(), code_only(source)))
        .collect();
    let krate = Crate::new(tree, &code);
    let mut edges = Vec::new();
    for (&file, code) in &code {
        let module = module_of(file);
        let inline = inline_modules(code);
        for (at, line, path) in paths(code) {
            // Inside `mod tests { … }` a path is seen from that module.
            let mut seen_from = module.clone();
            for span in &inline {
                if span.contains(&at) {
                    seen_from.push("(inline)".to_owned());
                }
            }
            let Some((target, through)) = krate.resolve(&absolute(&path, &seen_from)) else {
                continue;
            };
            if target != file {
                edges.push(Edge {
                    from: file.to_owned(),
                    to: target.to_owned(),
                    line,
                    path,
                    through: through.map(str::to_owned),
                });
            }
        }
    }
    edges
}

/// The items of a `mod.rs`'s code that are neither `mod name;` nor `use`,
/// each with its line and its head (`struct Principal`, `fn serve`).
fn definitions(code: &str) -> Vec<(usize, String)> {
    let bytes = code.as_bytes();
    let line_of = |at: usize| code[..at].matches('\n').count() + 1;
    // The end of the item starting at `from`: its `;` or its closing brace.
    let item_end = |from: usize| {
        let mut depth = 0i32;
        for (i, c) in code[from..].char_indices() {
            match c {
                '{' | '[' | '(' => depth += 1,
                '}' | ']' | ')' => {
                    depth -= 1;
                    if depth == 0 && c == '}' {
                        return from + i + 1;
                    }
                }
                ';' if depth == 0 => return from + i + 1,
                _ => {}
            }
        }
        code.len()
    };
    let mut found = Vec::new();
    let mut i = 0;
    while i < code.len() {
        if bytes[i].is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let rest = &code[i..];
        if rest.starts_with('#') {
            // An attribute: `#[…]` or `#![…]`, to its closing bracket.
            let mut depth = 0i32;
            for (n, c) in rest.char_indices() {
                match c {
                    '[' => depth += 1,
                    ']' => {
                        depth -= 1;
                        if depth == 0 {
                            i += n + 1;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            if depth != 0 {
                i = code.len();
            }
            continue;
        }
        let mut head = rest;
        if let Some(after) = head.strip_prefix("pub") {
            head = after.trim_start();
            if head.starts_with('(') {
                head = head[head.find(')').map_or(0, |n| n + 1)..].trim_start();
            }
        }
        let word: String = head.chars().take_while(|&c| is_ident(c)).collect();
        // A `use` tree's braces are not an item's body.
        let end = if word == "use" {
            code[i..].find(';').map_or(code.len(), |n| i + n + 1)
        } else {
            item_end(i)
        };
        let declares = match word.as_str() {
            "use" => true,
            // `mod name;`, not `mod name { … }`.
            "mod" => code[i..end].ends_with(';'),
            _ => false,
        };
        if !declares {
            let text: String = head
                .chars()
                .take_while(|&c| !matches!(c, '{' | ';' | '=' | '(' | '<' | ':' | '\n'))
                .collect();
            found.push((
                line_of(i),
                text.split_whitespace().collect::<Vec<_>>().join(" "),
            ));
        }
        i = end;
    }
    found
}

/// A node's state in the depth-first search for cycles.
#[derive(Clone, Copy, PartialEq)]
enum Mark {
    White,
    Grey,
    Black,
}

/// Depth-first search from `node`; every grey node met again closes a
/// cycle, which is added to `cycles`.
fn visit<'a>(
    node: &'a str,
    graph: &BTreeMap<&'a str, BTreeSet<&'a str>>,
    marks: &mut BTreeMap<&'a str, Mark>,
    stack: &mut Vec<&'a str>,
    cycles: &mut Vec<Vec<&'a str>>,
) {
    marks.insert(node, Mark::Grey);
    stack.push(node);
    for &next in &graph[node] {
        match marks[next] {
            Mark::Grey => {
                let from = stack.iter().position(|&n| n == next).unwrap_or(0);
                let mut cycle = stack[from..].to_vec();
                cycle.push(next);
                cycles.push(cycle);
            }
            Mark::White => visit(next, graph, marks, stack, cycles),
            Mark::Black => {}
        }
    }
    stack.pop();
    marks.insert(node, Mark::Black);
}

/// The verdict on `tree` (each path relative to `src`, its source) under
/// `parts`, the page's table: every violation, named.
fn verdict(tree: &BTreeMap<String, String>, parts: &[Part]) -> Vec<Violation> {
    let mut found = Vec::new();
    // The page names what exists, and everything that exists.
    for part in parts {
        for place in &part.places {
            let exists = if place.ends_with('/') {
                tree.keys().any(|f| f.starts_with(place.as_str()))
            } else {
                tree.contains_key(place)
            };
            if !exists {
                found.push(Violation {
                    kind: Kind::Missing,
                    file: place.clone(),
                    target: part.name.clone(),
                    said: format!(
                        "ARCHITECTURE.md's row `{}` names wymcp/src/{place}, which does not exist",
                        part.name
                    ),
                });
            }
        }
    }
    let unnamed: BTreeSet<String> = tree
        .keys()
        .filter(|f| part_of(f, parts).is_none())
        .map(|f| match f.split_once('/') {
            Some((dir, _)) => format!("{dir}/"),
            None => f.clone(),
        })
        .collect();
    for entry in unnamed {
        found.push(Violation {
            kind: Kind::Unnamed,
            said: format!(
                "wymcp/src/{entry} is in no row of ARCHITECTURE.md's layer table (add it there)"
            ),
            file: entry,
            target: "ARCHITECTURE.md".to_owned(),
        });
    }
    // Imports run downward only.
    let edges = edges(tree);
    for edge in &edges {
        let (Some(from), Some(to)) = (part_of(&edge.from, parts), part_of(&edge.to, parts)) else {
            continue;
        };
        let why = if from.name == to.name {
            // A part's `mod.rs` declares and re-exports its files.
            (from.apart && !edge.from.ends_with("mod.rs")).then(|| {
                (
                    Kind::Siblings,
                    format!("the files of `{}` do not import each other", from.name),
                )
            })
        } else if to.layer > from.layer {
            Some((
                Kind::Upward,
                format!(
                    "`{}` (layer {}) is above `{}` (layer {})",
                    to.name, to.layer, from.name, from.layer
                ),
            ))
        } else if to.layer == from.layer {
            Some((
                Kind::SameLayer,
                format!(
                    "`{}` and `{}` are parts of one layer ({})",
                    to.name, from.name, from.layer
                ),
            ))
        } else {
            None
        };
        if let Some((kind, why)) = why {
            found.push(Violation {
                kind,
                file: edge.from.clone(),
                target: edge.to.clone(),
                said: format!(
                    "wymcp/src/{}:{} imports `{}` from wymcp/src/{}: {why}",
                    edge.from, edge.line, edge.path, edge.to
                ),
            });
        }
    }
    // A file names its directory's items where they are defined.
    for edge in &edges {
        let Some(through) = &edge.through else {
            continue;
        };
        let directory = through.strip_suffix("mod.rs").unwrap_or_default();
        if edge.from != *through && edge.from.starts_with(directory) {
            found.push(Violation {
                kind: Kind::ThroughModRs,
                file: edge.from.clone(),
                target: edge.to.clone(),
                said: format!(
                    "wymcp/src/{}:{} imports `{}` through wymcp/src/{through}: name it from \
                     wymcp/src/{}, the file that defines it",
                    edge.from, edge.line, edge.path, edge.to
                ),
            });
        }
    }
    // No cycle, within a part too.
    let mut graph: BTreeMap<&str, BTreeSet<&str>> =
        tree.keys().map(|f| (f.as_str(), BTreeSet::new())).collect();
    for edge in &edges {
        graph
            .entry(edge.from.as_str())
            .or_default()
            .insert(edge.to.as_str());
    }
    let mut marks: BTreeMap<&str, Mark> = graph.keys().map(|&k| (k, Mark::White)).collect();
    let mut cycles = Vec::new();
    for &node in graph.keys() {
        if marks[node] == Mark::White {
            visit(node, &graph, &mut marks, &mut Vec::new(), &mut cycles);
        }
    }
    for cycle in cycles {
        let hops: Vec<String> = cycle
            .windows(2)
            .filter_map(|pair| edges.iter().find(|e| e.from == pair[0] && e.to == pair[1]))
            .map(|e| format!("wymcp/src/{}:{} (`{}`)", e.from, e.line, e.path))
            .collect();
        found.push(Violation {
            kind: Kind::Cycle,
            file: cycle[0].to_owned(),
            target: cycle[1].to_owned(),
            said: format!("an import cycle: {}", hops.join(" → ")),
        });
    }
    // A `mod.rs` only declares and re-exports.
    for (file, source) in tree {
        if file != "mod.rs" && !file.ends_with("/mod.rs") {
            continue;
        }
        for (line, head) in definitions(&code_only(source)) {
            found.push(Violation {
                kind: Kind::ModRsDefines,
                file: file.clone(),
                said: format!(
                    "wymcp/src/{file}:{line} holds `{head}`: a mod.rs only declares and \
                     re-exports (move it to a file of its own)"
                ),
                target: head,
            });
        }
    }
    found
}

/// `wymcp/src` as it is on disk: every `.rs` file, by its path relative to
/// `src`.
fn tree_on_disk() -> BTreeMap<String, String> {
    fn walk(src: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        let entries =
            std::fs::read_dir(dir).unwrap_or_else(|e| panic!("read {}: {e}", dir.display()));
        for entry in entries {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                walk(src, &path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let relative = path.strip_prefix(src).expect("under src");
                let source = std::fs::read_to_string(&path)
                    .unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
                out.insert(relative.to_string_lossy().replace('\\', "/"), source);
            }
        }
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../wymcp/src");
    let mut tree = BTreeMap::new();
    walk(&src, &src, &mut tree);
    tree
}

/// ARCHITECTURE.md's layer table.
fn parts_of_page() -> Vec<Part> {
    let page = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ARCHITECTURE.md");
    let page = std::fs::read_to_string(&page).expect("ARCHITECTURE.md is readable");
    parse_parts(&page).unwrap_or_else(|e| panic!("ARCHITECTURE.md's layer table: {e}"))
}

/// The violations of the real tree of the given kinds, as one message.
fn real_violations(kinds: &[Kind]) -> String {
    let mut said = String::new();
    for violation in verdict(&tree_on_disk(), &parts_of_page()) {
        if kinds.contains(&violation.kind) {
            let _ = writeln!(said, "{}", violation.said);
        }
    }
    said
}

/// Rule: the page's table names every directory and top-level file of
/// `wymcp/src`, and only what exists.
#[test]
fn the_page_names_every_part_of_src() {
    let said = real_violations(&[Kind::Unnamed, Kind::Missing]);
    assert!(
        said.is_empty(),
        "ARCHITECTURE.md and wymcp/src differ:\n{said}"
    );
}

/// Rule: imports run downward only: from a part to the layers below, or
/// within a part whose files may import each other.
#[test]
fn every_import_runs_down_a_layer() {
    let said = real_violations(&[Kind::Upward, Kind::SameLayer, Kind::Siblings]);
    assert!(said.is_empty(), "imports against the layering:\n{said}");
}

/// Rule: no import cycle joins any two files (within a part too).
#[test]
fn no_file_import_cycle() {
    let said = real_violations(&[Kind::Cycle]);
    assert!(said.is_empty(), "import cycles:\n{said}");
}

/// Rule: a file imports its siblings directly, never through its
/// directory's `mod.rs`.
#[test]
fn siblings_are_imported_from_their_own_files() {
    let said = real_violations(&[Kind::ThroughModRs]);
    assert!(said.is_empty(), "imports through a mod.rs:\n{said}");
}

/// Rule: every `mod.rs` only declares its files and re-exports.
#[test]
fn every_mod_rs_only_declares_and_re_exports() {
    let said = real_violations(&[Kind::ModRsDefines]);
    assert!(said.is_empty(), "definitions in a mod.rs:\n{said}");
}

/// The reader itself: use trees expand, relative paths resolve, comments
/// and strings are not code (an attribute's path string is).
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
    assert_eq!(
        expand_bindings("a::{b::{self, c as d}, *}"),
        [
            ("a::b".to_owned(), "b".to_owned()),
            ("a::b::c".to_owned(), "d".to_owned()),
            ("a::*".to_owned(), "*".to_owned()),
        ]
    );
    let code = code_only(
        "let x = \"crate::no\"; // crate::nor\nuse super::yes;\n/* crate::neither */ crate::also::this();",
    );
    let found: Vec<String> = paths(&code).into_iter().map(|(_, _, p)| p).collect();
    assert_eq!(found, ["super::yes", "crate::also::this"]);
    let code = code_only(
        "#[serde(with = \"crate::a\", rename = \"b\")]\nlet s = \"self::c\";\n::wymcp::d::e();\nself::super::f();",
    );
    let found: Vec<(usize, String)> = paths(&code).into_iter().map(|(_, l, p)| (l, p)).collect();
    assert_eq!(
        found,
        [
            (1, "crate::a".to_owned()),
            (4, "self::super::f".to_owned()),
            (3, "wymcp::d::e".to_owned()),
        ]
    );
    let module = |path: &[&str]| path.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let tool = module(&["surface", "tool"]);
    assert_eq!(
        absolute("super::call::Call", &tool),
        ["surface", "call", "Call"]
    );
    assert_eq!(absolute("self::super::x", &tool), ["surface", "x"]);
    assert_eq!(absolute("super::super::x", &tool), ["x"]);
    assert_eq!(
        absolute("wymcp::protocol::meta", &tool),
        ["protocol", "meta"]
    );
    // `surface/mod.rs` is the module `surface`: its `super` is the crate.
    assert_eq!(module_of("surface/mod.rs"), ["surface"]);
    assert_eq!(absolute("super::x", &module(&["surface"])), ["x"]);
    assert_eq!(
        absolute("super::x", &module(&["surface", "(inline)"])),
        ["surface", "x"]
    );
    assert_eq!(
        absolute("crate::protocol::meta", &tool),
        ["protocol", "meta"]
    );
    let code = code_only("mod tests {\n    use super::*;\n}\nfn f() {}");
    let spans = inline_modules(&code);
    assert_eq!(spans.len(), 1);
    assert!(spans[0].contains(&code.find("super").expect("a super path")));
    assert_eq!(
        definitions(&code_only(
            "//! Docs.\n#[cfg(x)]\npub(crate) mod a;\npub use a::{B, C};\nmod t { }\n#[derive(Debug)]\npub struct D { e: u8 }\nfn f() -> u8 { 1 }\n"
        )),
        [
            (5, "mod t".to_owned()),
            (7, "struct D".to_owned()),
            (8, "fn f".to_owned())
        ]
    );
}

/// The controls: a small planted tree the verdict finds clean, and one
/// planted violation of each kind, each of which must be named.
mod controls {
    use super::{BTreeMap, Kind, Violation, parse_parts, verdict};

    /// The planted tree's page: the same table format as ARCHITECTURE.md.
    const PAGE: &str = "\
Some prose.

| layer | part | files | owns |
|---|---|---|---|
| 4 | the face | `lib.rs` | the public paths |
| 3 | stages | `stages/` (apart) | one file per stage |
| 2 | surface | `surface/` | what a client reaches |
| 1 | auth | `auth.rs` | who the caller is |
| 1 | origin | `origin.rs` | which origins are allowed |
| 0 | protocol | `protocol/` | the vocabulary |

More prose.
";

    /// A tree with no violation: re-exports, nested directories, imports
    /// down the layers and between a part's own files.
    fn clean() -> BTreeMap<String, String> {
        [
            (
                "lib.rs",
                "//! The face.\nextern crate self as wymcp;\nmod auth;\nmod protocol;\nmod stages;\nmod surface;\npub use surface::Tool;\n",
            ),
            ("protocol/mod.rs", "mod ids;\npub use ids::Id;\n"),
            ("protocol/ids.rs", "/// An id.\npub struct Id;\n"),
            ("auth.rs", "use crate::protocol::Id;\npub struct Principal(Id);\n"),
            ("origin.rs", "pub struct BoundTo;\n"),
            (
                "surface/mod.rs",
                "mod task;\nmod tool;\npub use task::Task;\npub use tool::Tool;\n",
            ),
            (
                "surface/tool.rs",
                "use wymcp::protocol::Id;\nuse super::task::Task;\n#[derive(serde::Serialize)]\npub struct Tool {\n    #[serde(with = \"crate::protocol::ids\", rename = \"id\")]\n    id: Id,\n    task: Task,\n}\nconst WORDS: &str = \"crate::stages::one\";\n",
            ),
            ("surface/task/mod.rs", "mod record;\npub use record::Task;\n"),
            (
                "surface/task/record.rs",
                "use crate::auth::Principal;\nuse std::sync::Arc;\npub struct Task(Arc<Principal>);\n",
            ),
            ("stages/mod.rs", "mod one;\nmod two;\npub use one::One;\npub use two::Two;\n"),
            ("stages/one.rs", "use crate::surface::Tool;\npub struct One(Tool);\n"),
            (
                "stages/two.rs",
                "use crate::surface::task::Task;\npub struct Two(Task);\n",
            ),
        ]
        .into_iter()
        .map(|(path, source)| (path.to_owned(), source.to_owned()))
        .collect()
    }

    fn judge(tree: &BTreeMap<String, String>, page: &str) -> Vec<Violation> {
        let parts = parse_parts(page).expect("the planted page parses");
        verdict(tree, &parts)
    }

    /// `tree` with `file` written as `source`.
    fn planted(file: &str, source: &str) -> BTreeMap<String, String> {
        let mut tree = clean();
        tree.insert(file.to_owned(), source.to_owned());
        tree
    }

    /// Asserts `found` names a violation of `kind` in `file` naming
    /// `target`.
    fn assert_named(found: &[Violation], kind: Kind, file: &str, target: &str) {
        assert!(
            found
                .iter()
                .any(|v| v.kind == kind && v.file == file && v.target == target),
            "expected {kind:?} in {file} naming {target}; the verdict named:\n{found:#?}"
        );
    }

    #[test]
    fn a_clean_tree_has_no_violation() {
        let found = judge(&clean(), PAGE);
        assert!(found.is_empty(), "{found:#?}");
    }

    #[test]
    fn an_upward_use_is_named() {
        let found = judge(
            &planted(
                "auth.rs",
                "use crate::surface::tool::Tool;\npub struct Principal;\n",
            ),
            PAGE,
        );
        assert_named(&found, Kind::Upward, "auth.rs", "surface/tool.rs");
    }

    #[test]
    fn two_parts_of_one_layer_are_named() {
        let found = judge(
            &planted("auth.rs", "pub struct Principal(crate::origin::BoundTo);\n"),
            PAGE,
        );
        assert_named(&found, Kind::SameLayer, "auth.rs", "origin.rs");
    }

    #[test]
    fn a_stage_importing_a_stage_is_named() {
        // Through the stages' `mod.rs` re-export, to the file that defines it.
        let found = judge(
            &planted("stages/two.rs", "use super::One;\npub struct Two(One);\n"),
            PAGE,
        );
        assert_named(&found, Kind::Siblings, "stages/two.rs", "stages/one.rs");
    }

    #[test]
    fn a_wymcp_path_going_upward_is_named() {
        let found = judge(
            &planted(
                "protocol/ids.rs",
                "pub struct Id;\nfn f() { let _ = ::wymcp::auth::Principal::default(); }\n",
            ),
            PAGE,
        );
        assert_named(&found, Kind::Upward, "protocol/ids.rs", "auth.rs");
    }

    #[test]
    fn an_upward_path_in_a_serde_with_string_is_named() {
        let found = judge(
            &planted(
                "protocol/ids.rs",
                "#[derive(serde::Serialize)]\npub struct Id {\n    #[serde(with = \"crate::surface::tool\")]\n    at: u8,\n}\n",
            ),
            PAGE,
        );
        assert_named(&found, Kind::Upward, "protocol/ids.rs", "surface/tool.rs");
    }

    #[test]
    fn an_upward_self_super_path_is_named() {
        let found = judge(
            &planted(
                "surface/task/record.rs",
                "use self::super::super::super::stages::one;\npub struct Task;\n",
            ),
            PAGE,
        );
        assert_named(
            &found,
            Kind::Upward,
            "surface/task/record.rs",
            "stages/one.rs",
        );
    }

    #[test]
    fn a_cycle_through_a_mod_rs_re_export_is_named() {
        // `tool.rs` imports `task::Task`; `record.rs` names `Tool` through
        // `surface/mod.rs`'s re-export.
        let found = judge(
            &planted(
                "surface/task/record.rs",
                "use super::super::Tool;\npub struct Task(Tool);\n",
            ),
            PAGE,
        );
        let hop = "wymcp/src/surface/task/record.rs:1 (`super::super::Tool`)";
        assert!(
            found
                .iter()
                .any(|v| v.kind == Kind::Cycle && v.said.contains(hop)),
            "expected a cycle through {hop}; the verdict named:\n{found:#?}"
        );
    }

    #[test]
    fn a_sibling_imported_through_mod_rs_is_named() {
        let found = judge(
            &planted("protocol/wire.rs", "use super::Id;\npub struct Wire(Id);\n"),
            PAGE,
        );
        assert_named(
            &found,
            Kind::ThroughModRs,
            "protocol/wire.rs",
            "protocol/ids.rs",
        );
    }

    #[test]
    fn a_definition_in_a_mod_rs_is_named() {
        let found = judge(
            &planted(
                "surface/task/mod.rs",
                "mod record;\npub use record::Task;\n/// Planted.\npub fn planted() {}\n",
            ),
            PAGE,
        );
        assert_named(
            &found,
            Kind::ModRsDefines,
            "surface/task/mod.rs",
            "fn planted",
        );
    }

    #[test]
    fn a_directory_the_page_does_not_name_is_named() {
        let found = judge(&planted("redis/mod.rs", "mod bus;\n"), PAGE);
        assert_named(&found, Kind::Unnamed, "redis/", "ARCHITECTURE.md");
        let found = judge(&planted("memory.rs", "pub struct Memory;\n"), PAGE);
        assert_named(&found, Kind::Unnamed, "memory.rs", "ARCHITECTURE.md");
    }

    #[test]
    fn a_row_naming_no_file_is_named() {
        let page = PAGE.replace("`auth.rs` |", "`auth.rs`, `trace.rs` |");
        let found = judge(&clean(), &page);
        assert_named(&found, Kind::Missing, "trace.rs", "auth");
        let page = PAGE.replace("`protocol/` |", "`protocol/`, `tasks/` |");
        let found = judge(&clean(), &page);
        assert_named(&found, Kind::Missing, "tasks/", "protocol");
    }

    #[test]
    fn a_malformed_table_is_refused() {
        assert!(parse_parts("no table").is_err());
        assert!(parse_parts(&PAGE.replace("| 1 | auth |", "| one | auth |")).is_err());
        assert!(parse_parts(&PAGE.replace("| `auth.rs` |", "| auth.rs |")).is_err());
    }
}
