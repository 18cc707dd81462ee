//! SECURITY.md names the tests that pin each defence; this checker holds
//! it to that. Every name in backticks that reads as a test's (lowercase,
//! four words or more joined by `_`) must be a `fn` of the file the text
//! last named (`tests/it/jwt.rs`, or a module path such as
//! `auth::jwks::tests::NAME`), or of the workspace's code when no Rust file
//! was named since the section began; and every section past the first
//! names at least one test, or says what is not covered by one.
//!
//! Its control, `the_checker_names_what_was_planted`, feeds it a page with
//! a test that does not exist, a test named in the wrong file and a section
//! without any, and must name all three.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Where a name is looked for.
#[derive(Debug, Clone, PartialEq)]
enum Place {
    /// In the workspace's Rust code, anywhere.
    Anywhere,
    /// In this file (relative to the workspace's root).
    File(String),
}

/// One test the page names, with the section and the place it is sought.
#[derive(Debug)]
struct Named {
    section: String,
    name: String,
    place: Place,
}

/// A page read: the names it gives, and its sections that name none.
#[derive(Debug, Default)]
struct Page {
    named: Vec<Named>,
    bare_sections: Vec<String>,
}

/// Whether `token` reads as a test's name: lowercase words, four or more.
fn is_test_name(token: &str) -> bool {
    token
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && token.split('_').filter(|w| !w.is_empty()).count() >= 4
}

/// The file a module path of `wymcp` names (`auth::jwks::tests` →
/// `wymcp/src/auth/jwks.rs`), with the test's name.
fn module_path(token: &str) -> Option<(String, String)> {
    let segments: Vec<&str> = token.split("::").collect();
    let (name, modules) = segments.split_last()?;
    if modules.is_empty() || !is_test_name(name) {
        return None;
    }
    let modules: Vec<&str> = modules
        .iter()
        .copied()
        .filter(|m| *m != "tests" && *m != "crate" && *m != "wymcp")
        .collect();
    if modules.is_empty() {
        return None;
    }
    Some((
        format!("wymcp/src/{}.rs", modules.join("/")),
        (*name).to_owned(),
    ))
}

/// Every backticked token of `text`, in order.
fn backticked(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

/// Reads the page: each `## ` section, the places it names and the tests.
fn read(page: &str) -> Page {
    let mut out = Page::default();
    let mut section: Option<(String, usize, bool)> = None; // name, tests, "not covered"
    let mut place = Place::Anywhere;
    let close = |section: &mut Option<(String, usize, bool)>, out: &mut Page| {
        if let Some((name, tests, uncovered)) = section.take()
            && tests == 0
            && !uncovered
        {
            out.bare_sections.push(name);
        }
    };
    for line in page.lines() {
        if let Some(heading) = line.strip_prefix("## ") {
            close(&mut section, &mut out);
            section = Some((heading.trim().to_owned(), 0, false));
            place = Place::Anywhere;
            continue;
        }
        let Some((name, tests, uncovered)) = section.as_mut() else {
            continue;
        };
        if line.contains("Not covered by a test") || line.contains("FUZZING.md") {
            *uncovered = true;
        }
        for token in backticked(line) {
            let token = token.trim();
            if token.contains('/') && !token.contains(' ') {
                // A file: a Rust one is where the names after it are;
                // anything else (a script) is sought nowhere in particular.
                place = if Path::new(token).extension().is_some_and(|e| e == "rs") {
                    Place::File(token.to_owned())
                } else {
                    Place::Anywhere
                };
            } else if let Some((file, test)) = module_path(token) {
                out.named.push(Named {
                    section: name.clone(),
                    name: test,
                    place: Place::File(file),
                });
                *tests += 1;
            } else if is_test_name(token) {
                out.named.push(Named {
                    section: name.clone(),
                    name: token.to_owned(),
                    place: place.clone(),
                });
                *tests += 1;
            }
        }
    }
    close(&mut section, &mut out);
    out
}

/// Whether `source` defines a function `name`.
fn defines(source: &str, name: &str) -> bool {
    source.match_indices(name).any(|(at, _)| {
        let before = source[..at].trim_end();
        let after = &source[at + name.len()..];
        before.ends_with("fn") && after.starts_with(['(', '<'])
    })
}

/// What is wrong with the page, against the `sources` (path → text).
fn verdict(page: &Page, sources: &BTreeMap<String, String>) -> Vec<String> {
    let mut said = Vec::new();
    for named in &page.named {
        let found = match &named.place {
            Place::Anywhere => sources.values().any(|s| defines(s, &named.name)),
            Place::File(file) => {
                let module = file.replace(".rs", "/mod.rs");
                [file, &module]
                    .iter()
                    .filter_map(|f| sources.get(f.as_str()))
                    .any(|s| defines(s, &named.name))
            }
        };
        if !found {
            let place = match &named.place {
                Place::Anywhere => "the workspace".to_owned(),
                Place::File(file) => file.clone(),
            };
            let elsewhere: Vec<&String> = sources
                .iter()
                .filter(|(_, s)| defines(s, &named.name))
                .map(|(f, _)| f)
                .collect();
            said.push(format!(
                "section \"{}\": `{}` is not a fn of {place}{}",
                named.section,
                named.name,
                if elsewhere.is_empty() {
                    String::new()
                } else {
                    format!(" (it is in {elsewhere:?})")
                }
            ));
        }
    }
    for section in &page.bare_sections {
        said.push(format!("section \"{section}\" names no test"));
    }
    said
}

/// The workspace's Rust files, by their path from its root.
fn workspace_sources() -> BTreeMap<String, String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path: PathBuf = entry.unwrap().path();
            let file_name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                if !matches!(file_name.as_str(), "target" | "corpus" | "node_modules")
                    && !file_name.starts_with('.')
                {
                    walk(root, &path, out);
                }
            } else if path.extension().is_some_and(|e| e == "rs") {
                let relative = path.strip_prefix(root).unwrap();
                let source = std::fs::read_to_string(&path).unwrap();
                out.insert(relative.to_string_lossy().replace('\\', "/"), source);
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut out = BTreeMap::new();
    for dir in [
        "tests",
        "wymcp",
        "wymcp-macros",
        "bench",
        "examples",
        "fuzz",
    ] {
        walk(&root, &root.join(dir), &mut out);
    }
    out
}

/// Rule: every test SECURITY.md names exists where it says, and every
/// threat it lists names at least one.
#[test]
fn every_test_security_md_names_exists_where_it_says() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let page = std::fs::read_to_string(root.join("SECURITY.md")).unwrap();
    let page = read(&page);
    assert!(
        page.named.len() > 100,
        "the reader found only {} names: it no longer reads the page",
        page.named.len()
    );
    let said = verdict(&page, &workspace_sources());
    assert!(said.is_empty(), "SECURITY.md:\n{}", said.join("\n"));
}

/// The control: a page planting a missing test, a test named in the wrong
/// file and a section naming none; the checker names each.
#[test]
fn the_checker_names_what_was_planted() {
    let sources = BTreeMap::from([
        (
            "tests/it/a.rs".to_owned(),
            "#[test]\nfn a_rule_that_holds_here() {}\n".to_owned(),
        ),
        (
            "tests/it/b.rs".to_owned(),
            "#[tokio::test]\nasync fn a_rule_that_holds_there() {}\n".to_owned(),
        ),
        (
            "wymcp/src/auth/jwks.rs".to_owned(),
            "mod tests {\n    fn a_unit_test_of_keys() {}\n}\n".to_owned(),
        ),
    ]);
    let page = "# Security\n\nintro `not_a_section_test_name`\n\n\
        ## One\n\n* `tests/it/a.rs`: `a_rule_that_holds_here`,\n  \
        `a_rule_that_holds_there`, `a_rule_that_never_was`.\n* \
        `auth::jwks::tests::a_unit_test_of_keys`.\n\n\
        ## Two\n\nProse, and `scripts/soak` only.\n\n\
        ## Three\n\nNot covered by a test: the https path.\n";
    let said = verdict(&read(page), &sources);
    assert_eq!(said.len(), 3, "{said:#?}");
    assert!(
        said[0].contains("`a_rule_that_holds_there` is not a fn of tests/it/a.rs")
            && said[0].contains("tests/it/b.rs"),
        "{}",
        said[0]
    );
    assert!(said[1].contains("`a_rule_that_never_was`"), "{}", said[1]);
    assert_eq!(said[2], "section \"Two\" names no test");
}
