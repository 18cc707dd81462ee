//! The rules over tools: a name the spec allows, and, across the tools of
//! one `#[tools]` impl, no name twice.

use std::collections::HashMap;

use super::ast::ToolFn;
use crate::ctxt::Ctxt;

/// The longest tool name the spec allows (as wymcp checks at registration).
const MAX_NAME: usize = 128;

/// Checks one tool's name: 1 to 128 characters of `A-Z a-z 0-9 _ - .`
/// (SEP-986), caught here rather than when the server is built.
pub fn check_name(cx: &Ctxt, tool: &ToolFn) {
    let name = &tool.name;
    let fix = if tool.keys.name.is_some() {
        "change `name = \"…\"`"
    } else {
        "give it one with `#[tool(name = \"…\")]`"
    };
    let bad = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')));
    let problem = if let Some(bad) = bad {
        Some(format!(
            "{bad:?} is not allowed in a tool name (only A-Z, a-z, 0-9, `_`, `-` and `.`)"
        ))
    } else if name.len() > MAX_NAME {
        Some(format!(
            "a tool name is at most {MAX_NAME} characters; this one has {}",
            name.len()
        ))
    } else {
        None
    };
    if let Some(problem) = problem {
        cx.syn_error(syn::Error::new(
            tool.name_span,
            format!("tool name `{}`: {problem}; {fix}", name.escape_debug()),
        ));
    }
}

/// Checks that no two tools of one impl share a name: the second (and
/// every later one) is reported, naming the first.
pub fn check_unique(cx: &Ctxt, tools: &[(usize, ToolFn)]) {
    let mut first: HashMap<&str, &ToolFn> = HashMap::new();
    for (index, tool) in tools {
        cx.at(*index);
        if let Some(earlier) = first.get(tool.name.as_str()) {
            cx.syn_error(syn::Error::new(
                tool.name_span,
                format!(
                    "two tools named `{}`: `{}` and `{}`; a server lists each name once, so \
                     rename one with `#[tool(name = \"…\")]`",
                    tool.name,
                    earlier.ident(),
                    tool.ident()
                ),
            ));
        } else {
            first.insert(&tool.name, tool);
        }
    }
}
