//! The two tags a stage before `Validate` carries, and how they are read off
//! an item's attributes.
//!
//! `#[wire_check]` takes nothing; `#[body_bound(reason = "…")]` takes one
//! key, a non-empty `reason`. Both may also be written by path
//! (`#[wymcp::wire_check]`). Parsing strips them from the item, since a
//! module attribute cannot register inert helper attributes.

use quote::ToTokens;
use syn::{Attribute, LitStr, Meta};

use crate::ctxt::Ctxt;

/// `#[wire_check]`.
pub const WIRE_CHECK: &str = "wire_check";
/// `#[body_bound(reason = "…")]`.
pub const BODY_BOUND: &str = "body_bound";
/// The one key of `#[body_bound]`.
pub const REASON: &str = "reason";

/// The tag a stage carries, with the attribute it came from (for spans).
#[derive(Debug, Clone)]
pub enum Tag {
    WireCheck {
        attr: Attribute,
    },
    BodyBound {
        attr: Attribute,
        /// `None` when the reason was missing or malformed (already reported).
        reason: Option<LitStr>,
    },
}

impl Tag {
    pub fn attr(&self) -> &Attribute {
        match self {
            Tag::WireCheck { attr } | Tag::BodyBound { attr, .. } => attr,
        }
    }

    /// The tag as written in messages, in backticks.
    pub fn display(&self) -> &'static str {
        match self {
            Tag::WireCheck { .. } => "`#[wire_check]`",
            Tag::BodyBound { .. } => "`#[body_bound]`",
        }
    }
}

/// Which of our tags an attribute is, if any: `wire_check`, `body_bound`,
/// optionally behind a `wymcp::` path.
pub fn tag_name(attr: &Attribute) -> Option<&'static str> {
    let path = attr.path();
    let segments: Vec<_> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    let last = match segments.as_slice() {
        [one] if path.leading_colon.is_none() => one,
        [krate, last] if krate == "wymcp" => last,
        _ => return None,
    };
    match last.as_str() {
        WIRE_CHECK => Some(WIRE_CHECK),
        BODY_BOUND => Some(BODY_BOUND),
        _ => None,
    }
}

/// Whether an attribute is `cfg` or `cfg_attr`.
pub fn is_cfg(attr: &Attribute) -> bool {
    attr.path().is_ident("cfg") || attr.path().is_ident("cfg_attr")
}

/// Removes our tags from `attrs` and returns them, in the order written.
pub fn take_tags(attrs: &mut Vec<Attribute>) -> Vec<Attribute> {
    let mut tags = Vec::new();
    attrs.retain(|attr| {
        if tag_name(attr).is_some() {
            tags.push(attr.clone());
            false
        } else {
            true
        }
    });
    tags
}

/// Reads the tags of one stage: at most one, well formed. Every mistake is
/// recorded in `cx`; what could be understood is still returned, so later
/// passes can go on checking the chain.
pub fn parse_stage_tags(cx: &Ctxt, attrs: &[Attribute]) -> Option<Tag> {
    let mut found: Option<Tag> = None;
    for attr in attrs {
        let Some(name) = tag_name(attr) else { continue };
        let tag = if name == WIRE_CHECK {
            parse_wire_check(cx, attr)
        } else {
            parse_body_bound(cx, attr)
        };
        match &found {
            None => found = Some(tag),
            Some(first) if first.display() == tag.display() => cx.error_spanned_by(
                attr,
                format!(
                    "{} is repeated on this stage: a stage is tagged once; remove this one",
                    tag.display()
                ),
            ),
            Some(first) => cx.error_spanned_by(
                attr,
                format!(
                    "a stage is either a wire check or body-bound, not both: it already has {}; \
                     keep `#[wire_check]` if it checks the request without trusting the body, \
                     `#[body_bound(reason = \"…\")]` if it reads the body",
                    first.display()
                ),
            ),
        }
    }
    found
}

fn parse_wire_check(cx: &Ctxt, attr: &Attribute) -> Tag {
    if !matches!(attr.meta, Meta::Path(_)) {
        cx.error_spanned_by(
            &attr.meta,
            "`#[wire_check]` takes no arguments: write `#[wire_check]`",
        );
    }
    Tag::WireCheck { attr: attr.clone() }
}

fn parse_body_bound(cx: &Ctxt, attr: &Attribute) -> Tag {
    const MISSING: &str = "`#[body_bound]` needs the reason the stage reads the body before \
                           `Validate`: write `#[body_bound(reason = \"…\")]`";
    let list = match &attr.meta {
        Meta::List(list) => list,
        Meta::Path(_) | Meta::NameValue(_) => {
            cx.error_spanned_by(attr, MISSING);
            return Tag::BodyBound {
                attr: attr.clone(),
                reason: None,
            };
        }
    };
    let mut reason: Option<LitStr> = None;
    let mut seen_reason = false;
    let parsed = list.parse_nested_meta(|meta| {
        if meta.path.is_ident(REASON) {
            if seen_reason {
                cx.error_spanned_by(
                    &meta.path,
                    "`reason` is repeated in `#[body_bound]`: give one reason",
                );
            }
            seen_reason = true;
            let value: LitStr = meta.value()?.parse().map_err(|e| {
                syn::Error::new(
                    e.span(),
                    "`reason` in `#[body_bound]` is a string literal: `reason = \"…\"`",
                )
            })?;
            if value.value().trim().is_empty() {
                cx.error_spanned_by(
                    &value,
                    "`#[body_bound]` has an empty `reason`: say why the stage reads the body \
                     before `Validate`",
                );
            } else if reason.is_none() {
                reason = Some(value);
            }
            Ok(())
        } else {
            let key = meta.path.to_token_stream().to_string().replace(' ', "");
            cx.error_spanned_by(
                &meta.path,
                format!(
                    "unknown key `{key}` in `#[body_bound]`: its only key is `reason`, as in \
                     `#[body_bound(reason = \"…\")]`"
                ),
            );
            // Skip the unknown key's value, if any, so the keys after it are still read.
            if meta.input.peek(syn::Token![=]) {
                let _: syn::Expr = meta.value()?.parse()?;
            } else if meta.input.peek(syn::token::Paren) {
                let _content;
                syn::parenthesized!(_content in meta.input);
            }
            Ok(())
        }
    });
    if let Err(error) = parsed {
        cx.syn_error(error);
    } else if !seen_reason {
        cx.error_spanned_by(attr, MISSING);
    }
    Tag::BodyBound {
        attr: attr.clone(),
        reason,
    }
}
