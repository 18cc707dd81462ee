//! The rules across stages: where `Validate` is, and what may stand before
//! and after it.
//!
//! This pass works on spelling: it takes a stage to be `Validate` when it is
//! named `Validate` or aliases a path ending in `Validate`
//! ([`Stage::looks_like_validate`]), which lets it point at the exact stage
//! and tag at fault. Spelling can be fooled (an alias under another name, a
//! user type called `Validate`), so the expansion also emits const
//! assertions that hold the chain to the truth the type system knows. When
//! no stage looks like `Validate`, this pass says nothing about order and
//! leaves it all to those assertions, so a `Validate` imported under another
//! name still works.

use crate::ast::{Pipeline, Stage};
use crate::attr::Tag;
use crate::ctxt::Ctxt;

/// Checks the order of the chain; returns the index of the stage taken to be
/// `Validate`, if one looks like it.
pub fn check(cx: &Ctxt, pipeline: &Pipeline) -> Option<usize> {
    let stages = &pipeline.stages;
    let believed: Vec<usize> = stages
        .iter()
        .enumerate()
        .filter(|(_, stage)| stage.looks_like_validate())
        .map(|(index, _)| index)
        .collect();
    let (&validate, others) = believed.split_first()?;

    for &index in others {
        let stage = &stages[index];
        cx.at(stage.index);
        cx.error_spanned_by(
            &stage.decl,
            format!(
                "a second `Validate`: stage `{}` validates again after `{}` did; a chain \
                 validates once, so remove one of them",
                stage.ident, stages[validate].ident
            ),
        );
    }

    if let Some(tag) = &stages[validate].tag {
        cx.at(stages[validate].index);
        cx.error_spanned_by(
            tag.attr(),
            format!(
                "{} on `{}`: `Validate` takes no tag, since it is the point the tags are \
                 relative to; remove the tag",
                tag.display(),
                stages[validate].ident
            ),
        );
    }

    for (index, stage) in stages.iter().enumerate() {
        if believed.contains(&index) || stage.has_cfg {
            continue;
        }
        cx.at(stage.index);
        if index < validate {
            if stage.tag.is_none() {
                cx.error_spanned_by(&stage.decl, untagged_before(stage));
            }
        } else {
            match &stage.tag {
                Some(Tag::WireCheck { .. }) => {
                    cx.error_spanned_by(&stage.decl, wire_check_after(stage));
                }
                Some(tag @ Tag::BodyBound { .. }) => {
                    cx.error_spanned_by(tag.attr(), body_bound_after(stage));
                }
                None => {}
            }
        }
    }
    Some(validate)
}

/// Rule 2's message, shared with the generated assertion.
pub fn untagged_before(stage: &Stage) -> String {
    format!(
        "stage `{}` runs before `Validate` but is not declared: tag it `#[wire_check]` if it \
         checks the request without trusting the body, or `#[body_bound(reason = \"…\")]` \
         if it reads the body, or move it after `Validate`",
        stage.ident
    )
}

/// Rule 1's message, shared with the generated assertion.
pub fn wire_check_after(stage: &Stage) -> String {
    format!(
        "`#[wire_check]` stage `{}` runs after `Validate`: a wire check must answer before \
         the body is trusted; move it above `Validate`",
        stage.ident
    )
}

/// A body-bound tag past `Validate`, shared with the generated assertion.
pub fn body_bound_after(stage: &Stage) -> String {
    format!(
        "`#[body_bound]` on stage `{}`, which runs after `Validate`: every stage after \
         `Validate` may read the validated body, so the tag means nothing there; remove it, \
         or move the stage above `Validate`",
        stage.ident
    )
}
