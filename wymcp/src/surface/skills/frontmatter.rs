//! A strict reader of a `SKILL.md`'s YAML front matter, for the subset the
//! Agent Skills specification writes: a block between two `---` lines of
//! `key: value` lines, each value a string, and one level of nested
//! `key: value` lines under a key with no value of its own (`metadata`).
//!
//! What it accepts reads as the same JSON object under any YAML 1.2 reader
//! (the SEP requires the entry's `frontmatter` to be identical to the
//! file's), so what a YAML reader would read otherwise is refused, never
//! guessed: a plain value that YAML reads as a number, a boolean or null
//! (`version: 1.0` — write `version: "1.0"`; YAML 1.1's `yes`/`no`/`on`/
//! `off` and dates too), flow collections, block
//! scalars, anchors, tags, comments after a value, tabs, duplicate keys.

use serde_json::{Map, Value};

/// The most bytes of front matter read.
pub const MAX_FRONTMATTER_BYTES: usize = 16 * 1024;
/// The most keys, nested ones included.
pub const MAX_FRONTMATTER_KEYS: usize = 64;

/// The front matter of `text` as a JSON object, or the rule it breaks.
pub(crate) fn read(text: &str) -> Result<Map<String, Value>, String> {
    let mut lines = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l));
    if lines.next().map(str::trim_end) != Some("---") {
        return Err("SKILL.md must begin with a `---` line opening its YAML front matter".into());
    }
    let mut block = Vec::new();
    let mut bytes = 0usize;
    let mut closed = false;
    for line in lines {
        if line.trim_end() == "---" {
            closed = true;
            break;
        }
        bytes = bytes.saturating_add(line.len() + 1);
        if bytes > MAX_FRONTMATTER_BYTES {
            return Err(format!(
                "the front matter is longer than {MAX_FRONTMATTER_BYTES} bytes"
            ));
        }
        block.push(line);
    }
    if !closed {
        return Err("the front matter has no closing `---` line".into());
    }
    parse_block(&block)
}

fn parse_block(block: &[&str]) -> Result<Map<String, Value>, String> {
    let mut top = Map::new();
    let mut keys = 0usize;
    let mut at = 0;
    while at < block.len() {
        // Line numbers of the file: its first line is the opening `---`.
        let number = at + 2;
        let line = block[at];
        at += 1;
        if skippable(line, number)? {
            continue;
        }
        if line.starts_with(' ') {
            return Err(format!(
                "front matter line {number}: indented, but no key above it opens a map"
            ));
        }
        let (key, value) = key_value(line, number, top_key)?;
        keys += 1;
        if top.contains_key(key) {
            return Err(format!(
                "front matter line {number}: the key `{key}` is repeated"
            ));
        }
        let value = if value.is_empty() {
            // A map: the indented lines below.
            let mut nested = Map::new();
            let mut indent = None;
            while at < block.len() {
                let below = at + 2;
                let line = block[at];
                if skippable(line, below)? {
                    at += 1;
                    continue;
                }
                let width = line.len() - line.trim_start_matches(' ').len();
                if width == 0 {
                    break;
                }
                if *indent.get_or_insert(width) != width {
                    return Err(format!(
                        "front matter line {below}: indented unlike the lines of `{key}` above (only one level of nesting is read)"
                    ));
                }
                let (inner, value_below) = key_value(&line[width..], below, nested_key)?;
                if value_below.is_empty() {
                    return Err(format!(
                        "front matter line {below}: `{inner}` has no value (only one level of nesting is read)"
                    ));
                }
                keys += 1;
                if nested.contains_key(inner) {
                    return Err(format!(
                        "front matter line {below}: the key `{inner}` is repeated"
                    ));
                }
                nested.insert(inner.to_owned(), Value::String(scalar(value_below, below)?));
                at += 1;
            }
            if nested.is_empty() {
                return Err(format!(
                    "front matter line {number}: `{key}` has no value (YAML reads it as null)"
                ));
            }
            Value::Object(nested)
        } else {
            Value::String(scalar(value, number)?)
        };
        if keys > MAX_FRONTMATTER_KEYS {
            return Err(format!(
                "the front matter has more than {MAX_FRONTMATTER_KEYS} keys"
            ));
        }
        top.insert(key.to_owned(), value);
    }
    Ok(top)
}

/// Whether a line is blank or a comment (skipped); a tab anywhere is refused.
fn skippable(line: &str, n: usize) -> Result<bool, String> {
    if line.contains('\t') {
        return Err(format!(
            "front matter line {n}: a tab (YAML indents with spaces)"
        ));
    }
    if line.chars().any(char::is_control) {
        return Err(format!("front matter line {n}: a control character"));
    }
    let trimmed = line.trim_start();
    Ok(trimmed.is_empty() || trimmed.starts_with('#'))
}

fn top_key(key: &str) -> bool {
    key.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn nested_key(key: &str) -> bool {
    key.bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'/'))
}

/// `key: value` (or `key:` opening a map), the key checked by `allowed`.
fn key_value(line: &str, n: usize, allowed: fn(&str) -> bool) -> Result<(&str, &str), String> {
    let Some((key, rest)) = line.split_once(':') else {
        return Err(format!("front matter line {n}: not a `key: value` line"));
    };
    if key.is_empty() || !allowed(key) || key.starts_with('-') {
        return Err(format!(
            "front matter line {n}: the key `{key}` is not read (letters, digits, `_`, `-`{})",
            if allowed("a.b/c") { ", `.`, `/`" } else { "" }
        ));
    }
    if !rest.is_empty() && !rest.starts_with(' ') {
        return Err(format!(
            "front matter line {n}: a `:` after `{key}` must be followed by a space"
        ));
    }
    Ok((key, rest.trim()))
}

/// A value: double-quoted, single-quoted, or plain when YAML reads it as
/// the same string.
fn scalar(value: &str, n: usize) -> Result<String, String> {
    if let Some(inner) = value.strip_prefix('"') {
        return double_quoted(inner, n);
    }
    if let Some(inner) = value.strip_prefix('\'') {
        let Some(inner) = inner.strip_suffix('\'') else {
            return Err(format!(
                "front matter line {n}: a single-quoted value must end the line with `'`"
            ));
        };
        let mut out = String::new();
        let mut chars = inner.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '\'' && chars.next() != Some('\'') {
                return Err(format!(
                    "front matter line {n}: a `'` inside a single-quoted value is written `''`"
                ));
            }
            out.push(c);
        }
        return Ok(out);
    }
    plain(value, n)?;
    Ok(value.to_owned())
}

fn double_quoted(inner: &str, n: usize) -> Result<String, String> {
    let mut out = String::new();
    let mut chars = inner.chars();
    loop {
        match chars.next() {
            None => {
                return Err(format!(
                    "front matter line {n}: a double-quoted value must end the line with `\"`"
                ));
            }
            Some('"') => break,
            Some('\\') => out.push(match chars.next() {
                Some('"') => '"',
                Some('\\') => '\\',
                Some('/') => '/',
                Some('n') => '\n',
                Some('t') => '\t',
                other => {
                    return Err(format!(
                        "front matter line {n}: the escape `\\{}` is not read (only \\\" \\\\ \\/ \\n \\t)",
                        other.map(String::from).unwrap_or_default()
                    ));
                }
            }),
            Some(c) => out.push(c),
        }
    }
    if !chars.as_str().trim().is_empty() {
        return Err(format!(
            "front matter line {n}: something follows the closing `\"`"
        ));
    }
    Ok(out)
}

/// A plain value YAML reads as exactly this string, or why not.
fn plain(value: &str, n: usize) -> Result<(), String> {
    let quote = |why: &str| {
        Err(format!(
            "front matter line {n}: the value `{value}` {why}: quote it"
        ))
    };
    let Some(first) = value.chars().next() else {
        return quote("is empty");
    };
    if "-?:,[]{}#&*!|>'\"%@`".contains(first) {
        return quote("begins with a YAML indicator");
    }
    if value.contains(": ") || value.ends_with(':') || value.contains(" #") {
        return quote("holds `: `, ` #` or a final `:`, which YAML reads otherwise");
    }
    let lower = value.to_ascii_lowercase();
    // YAML 1.2's null and booleans, and YAML 1.1's booleans too.
    if matches!(
        lower.as_str(),
        "~" | "null" | "true" | "false" | "yes" | "no" | "on" | "off" | "y" | "n"
    ) || matches!(lower.trim_start_matches(['+', '-']), ".inf" | ".nan")
    {
        return quote("is read by YAML as null, a boolean or a number");
    }
    let unsigned = value.trim_start_matches(['+', '-']);
    if unsigned.starts_with(|c: char| c.is_ascii_digit() || c == '.')
        && unsigned.chars().all(|c| {
            c.is_ascii_hexdigit()
                || matches!(
                    c,
                    '.' | '+'
                        | '-'
                        | '_'
                        | ':'
                        | 'x'
                        | 'X'
                        | 'o'
                        | 'O'
                        | 't'
                        | 'T'
                        | 'z'
                        | 'Z'
                        | ' '
                )
        })
    {
        // Numbers of YAML 1.2 and 1.1 (`1_000`, sexagesimal `1:30`), and
        // YAML 1.1's timestamps (`2026-07-28`).
        return quote("may be read by YAML as a number or a date");
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_the_subset_as_yaml_does() {
        let text = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\nlicense: 'Apache-2.0'\n# a comment\n\nmetadata:\n  version: \"2.1.0\"\n  author: it's me\n---\n# Body\n";
        assert_eq!(
            Value::Object(read(text).unwrap()),
            json!({
                "name": "pdf-processing",
                "description": "Extract, fill, and assemble PDF documents",
                "license": "Apache-2.0",
                "metadata": {"version": "2.1.0", "author": "it's me"},
            })
        );
        let crlf = "---\r\nname: a\r\ndescription: \"say \\\"hi\\\"\"\r\n---\r\n";
        assert_eq!(
            Value::Object(read(crlf).unwrap()),
            json!({"name": "a", "description": "say \"hi\""})
        );
    }

    #[test]
    fn refuses_what_yaml_reads_otherwise() {
        for (text, needle) in [
            ("name: a\n---\n", "begin with"),
            ("---\nname: a\n", "closing"),
            ("---\nversion: 1.0\n---\n", "number"),
            ("---\nflag: true\n---\n", "boolean"),
            ("---\nx: ~\n---\n", "null"),
            ("---\nx:\n---\n", "no value"),
            ("---\nx: [a, b]\n---\n", "indicator"),
            ("---\nx: |\n  a\n---\n", "indicator"),
            ("---\nx: a # c\n---\n", "` #`"),
            ("---\nx: a: b\n---\n", "`: `"),
            ("---\nx: a\nx: b\n---\n", "repeated"),
            ("---\nx:y\n---\n", "followed by a space"),
            ("---\n\tx: a\n---\n", "tab"),
            ("---\n  x: a\n---\n", "indented"),
            ("---\nm:\n  a: b\n   c: d\n---\n", "indented unlike"),
            ("---\nm:\n  a:\n    b: c\n---\n", "no value"),
            ("---\nx: \"a\\u0041\"\n---\n", "escape"),
            ("---\nx: 'a'b'\n---\n", "''"),
            ("---\nx: \"a\" b\n---\n", "follows"),
            ("---\n\"x\": a\n---\n", "is not read"),
            ("---\nx: 0x1F\n---\n", "number"),
            ("---\nx: 1:30\n---\n", "number"),
            ("---\nx: 2026-07-28\n---\n", "date"),
            ("---\nx: 2026-07-28T10:00:00Z\n---\n", "date"),
            ("---\nx: Yes\n---\n", "boolean"),
            ("---\nx: off\n---\n", "boolean"),
        ] {
            let error = read(text).unwrap_err();
            assert!(error.contains(needle), "{text:?}: {error}");
        }
        let long = format!("---\nx: {}\n---\n", "a".repeat(MAX_FRONTMATTER_BYTES));
        assert!(read(&long).unwrap_err().contains("longer"));
        let many = (0..=MAX_FRONTMATTER_KEYS)
            .map(|i| format!("k{i}: v"))
            .collect::<Vec<_>>()
            .join("\n");
        let many = format!("{many}\n");
        assert!(
            read(&format!("---\n{many}---\n"))
                .unwrap_err()
                .contains("keys")
        );
    }
}
