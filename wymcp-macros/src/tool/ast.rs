//! A typed model of one tool function: its name, its doc comment, what each
//! parameter is (an argument, the whole arguments object, the context), and
//! how it answers. The original syn nodes are kept for spans.
//!
//! Reading a function strips the `#[args]` markers from its parameters, so
//! the function written back is plain Rust.

use proc_macro2::Span;
use syn::{FnArg, Ident, ItemFn, Pat, ReturnType, Type};

use super::attr::{self, Keys};
use crate::ctxt::Ctxt;

/// One `#[tool]` function, free or a method.
#[derive(Debug, Clone)]
pub struct ToolFn {
    /// The function as it is written back: `#[args]` stripped.
    pub item: ItemFn,
    pub keys: Keys,
    /// The tool's name (`name = "…"` or the function's), and what to span
    /// an error about it on.
    pub name: String,
    pub name_span: Span,
    /// The doc comment, lines joined, when there is one.
    pub docs: Option<String>,
    /// Whether it takes `&self`: a method of the server's state type.
    pub method: bool,
    pub params: Vec<Param>,
    pub answer: Answer,
}

/// A parameter of a tool function, in the order written.
#[derive(Debug, Clone)]
pub enum Param {
    /// A named argument: a property of the generated arguments struct,
    /// with its doc comment (its description in the schema).
    Arg {
        ident: Ident,
        ty: Type,
        docs: Vec<syn::Attribute>,
    },
    /// `#[args] search: Search`: the whole arguments object.
    Whole { ty: Type },
    /// The request's `Context`, by value or by reference.
    Context { by_ref: bool },
}

/// How the function answers.
#[derive(Debug, Clone)]
pub enum Answer {
    /// `-> Result<O, E>`: `O` a tool output, `E` into a `HandlerError`.
    Fallible(Type),
    /// `-> O`: a tool output that cannot fail.
    Infallible(Type),
    /// No return type (already reported).
    Nothing,
}

impl ToolFn {
    /// Reads one function, written under `#[tag]` (`tool`, `resource`,
    /// `resource_template`, `prompt`: the messages name it). Every mistake
    /// is recorded in `cx`; what could be understood is returned, so the
    /// expansion can still write stubs.
    pub fn from_syn(cx: &Ctxt, tag: &str, keys: Keys, mut item: ItemFn) -> ToolFn {
        let sig = &item.sig;
        if sig.asyncness.is_none() {
            cx.error_spanned_by(
                sig.fn_token,
                format!(
                    "`#[{tag}]` goes on an `async fn`: its handler is awaited; write \
                     `async fn {}(…)`",
                    sig.ident
                ),
            );
        }
        if !sig.generics.params.is_empty() {
            cx.error_spanned_by(
                &sig.generics,
                format!(
                    "a `#[{tag}]` function is not generic: its arguments and answer have one \
                     schema; name concrete types"
                ),
            );
        }
        let (name, name_span) = match &keys.name {
            Some(name) => (name.value(), name.span()),
            None => (
                sig.ident.to_string().trim_start_matches("r#").to_owned(),
                sig.ident.span(),
            ),
        };
        let docs = docs(&item.attrs);
        let answer = match &sig.output {
            ReturnType::Default => {
                cx.error_spanned_by(
                    &sig.ident,
                    match tag {
                        "tool" => format!(
                            "tool `{name}` answers nothing: return a `ToolResult`, a \
                             `Structured<T>`, or a `Result` of one with a `HandlerError`"
                        ),
                        "prompt" => format!(
                            "prompt `{name}` answers nothing: return a `PromptResult`, or a \
                             `Result` of one with a `HandlerError`"
                        ),
                        "complete" => format!(
                            "`{name}` answers nothing: return `Completions`, or a `Result` of \
                             them with a `HandlerError`"
                        ),
                        _ => format!(
                            "`{name}` answers nothing: return the contents (a `String`, a \
                             `ResourceContents`, a `Vec` of them, an `Option` of one), or a \
                             `Result` of one with a `HandlerError`"
                        ),
                    },
                );
                Answer::Nothing
            }
            ReturnType::Type(_, ty) if is_result(ty) => Answer::Fallible((**ty).clone()),
            ReturnType::Type(_, ty) => Answer::Infallible((**ty).clone()),
        };

        let mut method = false;
        let mut params = Vec::new();
        let mut context_seen = false;
        let mut whole = false;
        let mut any_arg = false;
        for input in &mut item.sig.inputs {
            match input {
                FnArg::Receiver(receiver) => {
                    method = true;
                    if receiver.reference.is_none() || receiver.mutability.is_some() {
                        cx.error_spanned_by(
                            &*receiver,
                            format!(
                                "a `#[{tag}]` method takes `&self`: the server's state is shared \
                                 by every call, never owned or borrowed mutably by one; keep what \
                                 changes behind a lock"
                            ),
                        );
                    }
                }
                FnArg::Typed(typed) => {
                    let marks: Vec<_> = typed
                        .attrs
                        .iter()
                        .filter(|a| attr::is_args(a))
                        .cloned()
                        .collect();
                    // A parameter's doc comment is its property's description: it
                    // moves to the generated struct (Rust allows none on a parameter).
                    let docs: Vec<_> = typed
                        .attrs
                        .iter()
                        .filter(|a| a.path().is_ident("doc"))
                        .cloned()
                        .collect();
                    typed
                        .attrs
                        .retain(|a| !attr::is_args(a) && !a.path().is_ident("doc"));
                    if let Some(by_ref) = context_type(&typed.ty) {
                        if let Some(mark) = marks.first() {
                            cx.error_spanned_by(
                                mark,
                                "`#[args]` marks the arguments, not the context: remove it",
                            );
                        }
                        if context_seen {
                            cx.error_spanned_by(
                                &typed.ty,
                                "the context is already a parameter: it is taken once",
                            );
                        }
                        context_seen = true;
                        params.push(Param::Context { by_ref });
                        continue;
                    }
                    if let Type::Reference(_) | Type::ImplTrait(_) | Type::Infer(_) = &*typed.ty {
                        cx.error_spanned_by(
                            &typed.ty,
                            "unsupported parameter type: arguments are read from JSON into \
                             an owned type that names its schema (`String`, not `&str`; no \
                             `impl Trait`)",
                        );
                    }
                    if let Some(mark) = marks.first() {
                        if marks.len() > 1 {
                            cx.error_spanned_by(
                                &marks[1],
                                "`#[args]` is repeated: remove this one",
                            );
                        }
                        if whole || any_arg {
                            cx.error_spanned_by(
                                mark,
                                "`#[args]` takes the whole arguments object, so it is the tool's \
                                 only argument: move the other arguments into its struct",
                            );
                        }
                        whole = true;
                        params.push(Param::Whole {
                            ty: (*typed.ty).clone(),
                        });
                        continue;
                    }
                    if whole {
                        cx.error_spanned_by(
                            &typed.pat,
                            "`#[args]` took the whole arguments object already: move this argument \
                             into its struct",
                        );
                    }
                    match &*typed.pat {
                        Pat::Ident(pat) if pat.by_ref.is_none() && pat.subpat.is_none() => {
                            any_arg = true;
                            params.push(Param::Arg {
                                ident: pat.ident.clone(),
                                ty: (*typed.ty).clone(),
                                docs,
                            });
                        }
                        other => cx.error_spanned_by(
                            other,
                            "unsupported parameter: an argument is a name and a type \
                             (`query: String`), and the name is the property's; to take a struct \
                             whole, mark it `#[args] search: Search`",
                        ),
                    }
                }
            }
        }
        ToolFn {
            item,
            keys,
            name,
            name_span,
            docs,
            method,
            params,
            answer,
        }
    }

    /// The function's identifier.
    pub fn ident(&self) -> &Ident {
        &self.item.sig.ident
    }
}

/// `Some(by_ref)` when the type is `Context`, `wymcp::Context` or a
/// reference to one.
fn context_type(ty: &Type) -> Option<bool> {
    let (ty, by_ref) = match ty {
        Type::Reference(reference) if reference.mutability.is_none() => (&*reference.elem, true),
        other => (other, false),
    };
    let Type::Path(path) = ty else { return None };
    if path.qself.is_some() {
        return None;
    }
    let segments: Vec<_> = path.path.segments.iter().collect();
    let last = segments.last()?;
    let wymcp = match segments.as_slice() {
        [_] => true,
        [krate, _] => krate.ident == "wymcp",
        _ => false,
    };
    (wymcp && last.ident == "Context" && last.arguments.is_empty()).then_some(by_ref)
}

/// Whether a return type is spelled `Result<…>` (`std::result::Result`,
/// `Result<T>` of an alias named so). `ToolResult` is not.
fn is_result(ty: &Type) -> bool {
    let Type::Path(path) = ty else { return false };
    path.path
        .segments
        .last()
        .is_some_and(|last| last.ident == "Result")
}

/// The doc comment's lines, each without the one space `///` leaves.
fn docs(attrs: &[syn::Attribute]) -> Option<String> {
    let lines: Vec<String> = attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
        .map(|line| {
            line.strip_prefix(' ')
                .unwrap_or(&line)
                .trim_end()
                .to_owned()
        })
        .collect();
    let text = lines.join("\n").trim().to_owned();
    (!text.is_empty()).then_some(text)
}
