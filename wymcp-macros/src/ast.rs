//! The typed model of a pipeline module: its stages in declared order, each
//! keeping the syn nodes it came from for spans, and every other item passed
//! through untouched as a helper.
//!
//! A stage is every `type` item and every `async fn` of the module; anything
//! else (`use`, `const`, `struct`, `impl`, a plain `fn`, …) is a helper item.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{Attribute, Ident, Item, ItemMod, Type};

use crate::attr::{self, Tag};
use crate::ctxt::Ctxt;

/// Names the macro generates inside the module.
pub const GENERATED: [&str; 4] = ["handle", "handle_get", "CHAIN", "router"];

/// A pipeline module, parsed.
#[derive(Debug)]
pub struct Pipeline {
    /// The module itself (attributes, visibility, name, braces) with its
    /// items taken out; the expansion puts them back.
    pub shell: ItemMod,
    /// Every item of the module in order, with our tags stripped.
    pub items: Vec<Item>,
    /// The stages, in declared order.
    pub stages: Vec<Stage>,
}

/// One stage of the chain.
#[derive(Debug)]
pub struct Stage {
    /// The stage's name as declared: the type's or the function's ident.
    pub ident: Ident,
    pub form: Form,
    /// The tag it carries, if any (well formed or not, already reported).
    pub tag: Option<Tag>,
    /// `vis type Name` or `vis async fn name`: where messages about the stage
    /// itself point.
    pub decl: TokenStream,
    /// Whether it carries `cfg`/`cfg_attr` (already refused): its tag may be
    /// hidden in a `cfg_attr`, so the order is not checked for it.
    pub has_cfg: bool,
    /// Its position among the module's items, to report errors in order.
    pub index: usize,
}

/// What kind of item a stage is.
#[derive(Debug)]
pub enum Form {
    /// `type Name = Path;`: a unit type implementing `Stage`.
    Type(Box<Type>),
    /// `async fn name(ex: &mut Exchange<'_>) -> Flow`: an inline stage.
    Fn,
}

impl Stage {
    /// Whether the macro takes this stage, by its spelling, to be `Validate`:
    /// a type stage named `Validate`, or aliasing a path ending in
    /// `Validate`. The generated const assertions hold this belief to the
    /// truth, which only the type system knows.
    pub fn looks_like_validate(&self) -> bool {
        let Form::Type(ty) = &self.form else {
            return false;
        };
        if self.ident == "Validate" {
            return true;
        }
        match &**ty {
            Type::Path(path) => path
                .path
                .segments
                .last()
                .is_some_and(|segment| segment.ident == "Validate"),
            _ => false,
        }
    }

    pub fn is_type(&self) -> bool {
        matches!(self.form, Form::Type(_))
    }
}

impl Pipeline {
    /// Parses a module. `None` when it has no inline body (already reported).
    pub fn from_syn(cx: &Ctxt, mut module: ItemMod) -> Option<Pipeline> {
        let Some((_, items)) = module.content.as_mut() else {
            let ItemMod {
                vis, ident, semi, ..
            } = &module;
            cx.error_spanned_by(
                quote!(#vis mod #ident #semi),
                format!(
                    "`#[pipeline]` needs the chain written inline, as `mod {ident} {{ … }}`: \
                     the macro cannot see into a module in another file"
                ),
            );
            return None;
        };
        let items = std::mem::take(items);
        let mut stages = Vec::new();
        let mut kept = Vec::with_capacity(items.len());
        for (index, mut item) in items.into_iter().enumerate() {
            cx.at(index);
            if let Some(stage) = stage_of(cx, &mut item, index) {
                stages.push(stage);
            } else {
                helper(cx, &mut item);
            }
            kept.push(item);
        }
        Some(Pipeline {
            shell: module,
            items: kept,
            stages,
        })
    }
}

/// Reads `item` as a stage, stripping its tags, or returns `None` for a helper.
fn stage_of(cx: &Ctxt, item: &mut Item, index: usize) -> Option<Stage> {
    let (ident, form, decl, attrs) = match item {
        Item::Type(t) => {
            let (vis, token, ident) = (&t.vis, &t.type_token, &t.ident);
            (
                t.ident.clone(),
                Form::Type(t.ty.clone()),
                quote!(#vis #token #ident),
                &mut t.attrs,
            )
        }
        Item::Fn(f) if f.sig.asyncness.is_some() => {
            let (vis, asyncness, token, ident) =
                (&f.vis, &f.sig.asyncness, &f.sig.fn_token, &f.sig.ident);
            (
                f.sig.ident.clone(),
                Form::Fn,
                quote!(#vis #asyncness #token #ident),
                &mut f.attrs,
            )
        }
        _ => return None,
    };
    check_generated_name(cx, &ident);
    let mut has_cfg = false;
    for a in attrs.iter().filter(|a| attr::is_cfg(a)) {
        has_cfg = true;
        cx.error_spanned_by(
            a,
            format!(
                "`#[{}]` on a stage is not supported: `#[pipeline]` sees the chain before `cfg` \
                 is applied, so it cannot know whether stage `{ident}` exists; choose at run \
                 time inside the stage, or declare a separate pipeline module per configuration",
                a.path()
                    .get_ident()
                    .map_or_else(String::new, ToString::to_string)
            ),
        );
    }
    let tags = attr::take_tags(attrs);
    let tag = attr::parse_stage_tags(cx, &tags);
    Some(Stage {
        ident,
        form,
        tag,
        decl,
        has_cfg,
        index,
    })
}

/// Passes a helper item through, refusing any tag on it.
fn helper(cx: &Ctxt, item: &mut Item) {
    if let Some(ident) = item_ident(item) {
        check_generated_name(cx, ident);
    }
    let what = describe(item);
    let Some(attrs) = item_attrs(item) else {
        return;
    };
    for tag in attr::take_tags(attrs) {
        let name = attr::tag_name(&tag).unwrap_or_default();
        cx.error_spanned_by(
            &tag,
            format!(
                "`#[{name}]` tags a stage, and {what} is not one: a stage is a `type` item \
                 naming a stage type or an `async fn` taking `&mut Exchange<'_>`; remove the \
                 tag or make the item a stage"
            ),
        );
    }
}

fn check_generated_name(cx: &Ctxt, ident: &Ident) {
    if GENERATED.iter().any(|name| ident == name) {
        cx.error_spanned_by(
            ident,
            format!(
                "`#[pipeline]` generates `handle`, `CHAIN` and `router` in this module, so an \
                 item cannot be named `{ident}`; rename it"
            ),
        );
    }
}

fn describe(item: &Item) -> &'static str {
    match item {
        Item::Const(_) => "a `const`",
        Item::Enum(_) => "an `enum`",
        Item::ExternCrate(_) => "an `extern crate`",
        Item::Fn(_) => "a plain (not `async`) `fn`",
        Item::ForeignMod(_) => "an `extern` block",
        Item::Impl(_) => "an `impl` block",
        Item::Macro(_) => "a macro invocation",
        Item::Mod(_) => "a module",
        Item::Static(_) => "a `static`",
        Item::Struct(_) => "a `struct`",
        Item::Trait(_) | Item::TraitAlias(_) => "a `trait`",
        Item::Union(_) => "a `union`",
        Item::Use(_) => "a `use` declaration",
        _ => "this item",
    }
}

/// The name an item defines in the module's value or type namespace, if any.
pub fn item_ident(item: &Item) -> Option<&Ident> {
    match item {
        Item::Const(i) => Some(&i.ident),
        Item::Type(i) => Some(&i.ident),
        Item::Enum(i) => Some(&i.ident),
        Item::Fn(i) => Some(&i.sig.ident),
        Item::Mod(i) => Some(&i.ident),
        Item::Static(i) => Some(&i.ident),
        Item::Struct(i) => Some(&i.ident),
        Item::Trait(i) => Some(&i.ident),
        Item::Union(i) => Some(&i.ident),
        _ => None,
    }
}

fn item_attrs(item: &mut Item) -> Option<&mut Vec<Attribute>> {
    Some(match item {
        Item::Const(i) => &mut i.attrs,
        Item::Enum(i) => &mut i.attrs,
        Item::ExternCrate(i) => &mut i.attrs,
        Item::Fn(i) => &mut i.attrs,
        Item::ForeignMod(i) => &mut i.attrs,
        Item::Impl(i) => &mut i.attrs,
        Item::Macro(i) => &mut i.attrs,
        Item::Mod(i) => &mut i.attrs,
        Item::Static(i) => &mut i.attrs,
        Item::Struct(i) => &mut i.attrs,
        Item::Trait(i) => &mut i.attrs,
        Item::TraitAlias(i) => &mut i.attrs,
        Item::Type(i) => &mut i.attrs,
        Item::Union(i) => &mut i.attrs,
        Item::Use(i) => &mut i.attrs,
        _ => return None,
    })
}
