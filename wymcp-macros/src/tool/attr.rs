//! The keys of `#[tool(…)]`, and how they are read.
//!
//! `name`, `title` and `description` take a string; `read_only`,
//! `destructive`, `idempotent` and `open_world` are flags (`read_only`, or
//! `read_only = false`); `icon` takes a string, `icons` and `scopes` a list
//! of strings (or one); `task` is `"optional"`, `"required"` or
//! `"forbidden"` (the tasks extension's `execution.taskSupport`). A key is
//! given once; every mistake is recorded and the keys after it are still
//! read.

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::meta::ParseNestedMeta;
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::{Attribute, LitBool, LitStr, Meta, Token};

use crate::ctxt::Ctxt;

/// `#[tool]` on an `async fn`.
pub const TOOL: &str = "tool";
/// `#[args]` on the one parameter that is the whole arguments object.
pub const ARGS: &str = "args";

pub const NAME: &str = "name";
pub const TITLE: &str = "title";
pub const DESCRIPTION: &str = "description";
pub const ICON: &str = "icon";
pub const ICONS: &str = "icons";
pub const SCOPES: &str = "scopes";
pub const TASK: &str = "task";

/// The values of `task`, and the `TaskSupport` variant each names.
pub const TASK_SUPPORT: [(&str, &str); 3] = [
    ("optional", "Optional"),
    ("required", "Required"),
    ("forbidden", "Forbidden"),
];

/// The four behaviour hints: the key, and the member of `annotations` it sets.
pub const HINTS: [(&str, &str); 4] = [
    ("read_only", "readOnlyHint"),
    ("destructive", "destructiveHint"),
    ("idempotent", "idempotentHint"),
    ("open_world", "openWorldHint"),
];

/// Every key, in the order the messages list them.
const KEYS: &str = "`name`, `title`, `description`, `read_only`, `destructive`, `idempotent`, \
                    `open_world`, `icon`, `icons`, `scopes`, `task`";

/// What the keys of one `#[tool]` said.
#[derive(Debug, Default, Clone)]
pub struct Keys {
    pub name: Option<LitStr>,
    pub title: Option<LitStr>,
    pub description: Option<LitStr>,
    /// The hints given, as (member of `annotations`, value), in `HINTS` order.
    pub hints: Vec<(&'static str, LitBool)>,
    pub icons: Vec<LitStr>,
    pub scopes: Vec<LitStr>,
    /// The `TaskSupport` variant `task` names, at the value's span.
    pub task: Option<syn::Ident>,
}

/// Whether an attribute is `#[tool]` (or `#[wymcp::tool]`).
pub fn is_tool(attr: &Attribute) -> bool {
    let path = attr.path();
    let segments: Vec<_> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    match segments.as_slice() {
        [one] => path.leading_colon.is_none() && one == TOOL,
        [krate, last] => krate == "wymcp" && last == TOOL,
        _ => false,
    }
}

/// Whether an attribute is `#[args]`.
pub fn is_args(attr: &Attribute) -> bool {
    attr.path().is_ident(ARGS)
}

/// Reads the keys of a `#[tool]` written inside a `#[tools]` impl.
pub fn parse_attr(cx: &Ctxt, attr: &Attribute) -> Keys {
    match &attr.meta {
        Meta::Path(_) => Keys::default(),
        Meta::List(list) => parse_keys(cx, list.tokens.clone()),
        Meta::NameValue(_) => {
            cx.error_spanned_by(
                attr,
                "`#[tool]` takes its keys in parentheses: `#[tool(name = \"…\", read_only)]`",
            );
            Keys::default()
        }
    }
}

/// Reads the keys of `#[tool(…)]` from the tokens inside the parentheses.
pub fn parse_keys(cx: &Ctxt, tokens: TokenStream) -> Keys {
    let mut keys = Keys::default();
    let mut seen: Vec<String> = Vec::new();
    let parser = syn::meta::parser(|meta| {
        let key = meta.path.to_token_stream().to_string().replace(' ', "");
        if seen.contains(&key) {
            cx.error_spanned_by(
                &meta.path,
                format!("`{key}` is repeated in `#[tool]`: give each key once; remove this one"),
            );
            // Read it anyway, so the keys after it are still checked.
            let mut ignored = Keys::default();
            return read_key(cx, &key, &meta, &mut ignored);
        }
        seen.push(key.clone());
        if (key == ICON && seen.iter().any(|k| k == ICONS))
            || (key == ICONS && seen.iter().any(|k| k == ICON))
        {
            cx.error_spanned_by(
                &meta.path,
                "`icon` and `icons` both given: list every icon once, in `icons = [\"…\", \"…\"]`",
            );
        }
        read_key(cx, &key, &meta, &mut keys)
    });
    if let Err(error) = parser.parse2(tokens) {
        cx.syn_error(error);
    }
    keys
}

fn read_key(cx: &Ctxt, key: &str, meta: &ParseNestedMeta<'_>, keys: &mut Keys) -> syn::Result<()> {
    if let Some((_, member)) = HINTS.iter().find(|(k, _)| *k == key) {
        let value = if meta.input.peek(Token![=]) {
            meta.value()?.parse::<LitBool>().map_err(|e| {
                syn::Error::new(
                    e.span(),
                    format!("`{key}` in `#[tool]` is a flag: write `{key}` or `{key} = false`"),
                )
            })?
        } else {
            LitBool::new(true, meta.path.segments[0].ident.span())
        };
        keys.hints.push((member, value));
        return Ok(());
    }
    match key {
        NAME | TITLE | DESCRIPTION => {
            let value = string(meta, key)?;
            if value.value().trim().is_empty() {
                cx.error_spanned_by(
                    &value,
                    format!("`{key}` in `#[tool]` is empty: give it a value or remove the key"),
                );
            }
            let slot = match key {
                NAME => &mut keys.name,
                TITLE => &mut keys.title,
                _ => &mut keys.description,
            };
            *slot = Some(value);
        }
        ICON => keys.icons.push(string(meta, key)?),
        ICONS => keys.icons.extend(strings(meta, key)?),
        SCOPES => keys.scopes.extend(strings(meta, key)?),
        TASK => {
            let value = string(meta, key)?;
            match TASK_SUPPORT.iter().find(|(v, _)| *v == value.value()) {
                Some((_, variant)) => keys.task = Some(syn::Ident::new(variant, value.span())),
                None => cx.error_spanned_by(
                    &value,
                    format!(
                        "`task` in `#[tool]` is \"optional\", \"required\" or \"forbidden\", not {:?}",
                        value.value()
                    ),
                ),
            }
        }
        _ => {
            cx.error_spanned_by(
                &meta.path,
                format!("unknown key `{key}` in `#[tool]`: its keys are {KEYS}"),
            );
            // Skip the unknown key's value, if any, so the keys after it are still read.
            if meta.input.peek(Token![=]) {
                let _: syn::Expr = meta.value()?.parse()?;
            } else if meta.input.peek(syn::token::Paren) {
                let _content;
                syn::parenthesized!(_content in meta.input);
            }
        }
    }
    Ok(())
}

fn string(meta: &ParseNestedMeta<'_>, key: &str) -> syn::Result<LitStr> {
    let message = || format!("`{key}` in `#[tool]` is a string literal: `{key} = \"…\"`");
    let value = meta
        .value()
        .map_err(|e| syn::Error::new(e.span(), message()))?;
    value
        .parse::<LitStr>()
        .map_err(|e| syn::Error::new(e.span(), message()))
}

/// `key = "one"` or `key = ["one", "two"]`.
fn strings(meta: &ParseNestedMeta<'_>, key: &str) -> syn::Result<Vec<LitStr>> {
    let message =
        || format!("`{key}` in `#[tool]` is a list of string literals: `{key} = [\"…\", \"…\"]`");
    let value = meta
        .value()
        .map_err(|e| syn::Error::new(e.span(), message()))?;
    if value.peek(LitStr) {
        return Ok(vec![value.parse()?]);
    }
    let content;
    syn::bracketed!(content in value);
    let list = Punctuated::<LitStr, Token![,]>::parse_terminated(&content)
        .map_err(|e| syn::Error::new(e.span(), message()))?;
    Ok(list.into_iter().collect())
}
