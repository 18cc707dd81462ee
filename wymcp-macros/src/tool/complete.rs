//! `#[complete(prompt = "…", argument = "…")]` and
//! `#[complete(template = "…", argument = "…")]`: a method of a
//! `#[handlers]` impl that completes one prompt argument or one template
//! variable.
//!
//! The method is read with the tool's reader (`ast::ToolFn`); this module
//! reads the keys, checks that the prompt or template is one of the impl's
//! (and the argument one of its arguments or variables), and writes
//! `NAME_completion() -> wymcp::Completer`.

use proc_macro2::{Ident, Span, TokenStream};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{Attribute, LitStr, Meta};

use super::ast::{Answer, Param, ToolFn};
use super::others::{Other, Which, variables};
use crate::ctxt::Ctxt;

/// `#[complete(…)]` on a method.
pub const COMPLETE: &str = "complete";

/// Whether an attribute is `#[complete]` (or `#[wymcp::complete]`).
pub fn is_complete(attr: &Attribute) -> bool {
    let path = attr.path();
    let segments: Vec<_> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    match segments.as_slice() {
        [one] if path.leading_colon.is_none() => one == COMPLETE,
        [krate, last] => krate == "wymcp" && last == COMPLETE,
        _ => false,
    }
}

/// What a `#[complete]` completes.
#[derive(Debug, Clone)]
pub enum Target {
    /// `prompt = "name"`.
    Prompt(LitStr),
    /// `template = "uri{var}"`.
    Template(LitStr),
}

/// One `#[complete]` method.
#[derive(Debug, Clone)]
pub struct Complete {
    pub target: Option<Target>,
    pub argument: Option<LitStr>,
    pub function: ToolFn,
}

/// Reads the keys of a `#[complete(…)]`.
pub fn parse_attr(cx: &Ctxt, attr: &Attribute) -> (Option<Target>, Option<LitStr>) {
    let usage = "`#[complete]` names what it completes: `#[complete(prompt = \"summarize\", \
                 argument = \"id\")]` or `#[complete(template = \"notes://{id}\", argument = \
                 \"id\")]`";
    let Meta::List(list) = &attr.meta else {
        cx.error_spanned_by(attr, usage);
        return (None, None);
    };
    let mut target = None;
    let mut argument = None;
    let parsed = list.parse_nested_meta(|meta| {
        let key = meta.path.to_token_stream().to_string();
        let value = || -> syn::Result<LitStr> {
            meta.value()?.parse::<LitStr>().map_err(|e| {
                syn::Error::new(
                    e.span(),
                    format!("`{key}` in `#[complete]` is a string literal: `{key} = \"…\"`"),
                )
            })
        };
        match key.as_str() {
            "prompt" | "template" => {
                if target.is_some() {
                    return Err(meta.error(
                        "`#[complete]` completes one prompt or one template: give `prompt` or \
                         `template`, once",
                    ));
                }
                let v = value()?;
                target = Some(if key == "prompt" {
                    Target::Prompt(v)
                } else {
                    Target::Template(v)
                });
            }
            "argument" => {
                if argument.is_some() {
                    return Err(meta.error("`argument` is repeated in `#[complete]`"));
                }
                argument = Some(value()?);
            }
            _ => {
                return Err(meta.error(format!(
                    "unknown key `{key}` in `#[complete]`: its keys are `prompt` or `template`, \
                     and `argument`"
                )));
            }
        }
        Ok(())
    });
    if let Err(error) = parsed {
        cx.syn_error(error);
    } else if target.is_none() || argument.is_none() {
        cx.error_spanned_by(attr, usage);
    }
    (target, argument)
}

impl Complete {
    /// The method's own rules: its parameters are `value: String` (what
    /// the user typed), optionally `context: BTreeMap<String, String>` (the
    /// other arguments), and the context; no `#[args]`.
    pub fn check(&self, cx: &Ctxt) {
        for param in &self.function.params {
            match param {
                Param::Arg { ident, .. } => {
                    let name = ident.unraw().to_string();
                    if name != "value" && name != "context" {
                        cx.error_spanned_by(
                            ident,
                            format!(
                                "a `#[complete]` method takes `value: String` (what the user \
                                 typed) and optionally `context: BTreeMap<String, String>` (the \
                                 other arguments' values), not `{name}`"
                            ),
                        );
                    }
                }
                Param::Whole { ty } => cx.error_spanned_by(
                    ty,
                    "a `#[complete]` method takes `value: String`, not `#[args]`",
                ),
                Param::Context { .. } => {}
            }
        }
    }

    /// Checks that the prompt or template is one of `others` and the
    /// argument one of its arguments or variables.
    pub fn check_target(&self, cx: &Ctxt, others: &[Other]) {
        let (Some(target), Some(argument)) = (&self.target, &self.argument) else {
            return;
        };
        let wanted = argument.value();
        match target {
            Target::Prompt(name) => {
                let prompts: Vec<_> = others.iter().filter(|o| o.which == Which::Prompt).collect();
                let Some(prompt) = prompts.iter().find(|o| o.name() == name.value()) else {
                    let names: Vec<_> = prompts.iter().map(|o| format!("`{}`", o.name())).collect();
                    cx.error_spanned_by(
                        name,
                        format!(
                            "this impl has no `#[prompt]` named `{}`{}",
                            name.value(),
                            known(&names)
                        ),
                    );
                    return;
                };
                if prompt
                    .function
                    .params
                    .iter()
                    .any(|p| matches!(p, Param::Whole { .. }))
                {
                    return; // its arguments are a struct's fields: not known here
                }
                let arguments: Vec<_> = prompt
                    .function
                    .params
                    .iter()
                    .filter_map(|p| match p {
                        Param::Arg { ident, .. } => Some(ident.unraw().to_string()),
                        _ => None,
                    })
                    .collect();
                if !arguments.contains(&wanted) {
                    cx.error_spanned_by(
                        argument,
                        format!(
                            "prompt `{}` has no argument `{wanted}`; its arguments: {}",
                            name.value(),
                            list(&arguments)
                        ),
                    );
                }
            }
            Target::Template(uri) => {
                let templates: Vec<_> = others
                    .iter()
                    .filter(|o| o.which == Which::Template)
                    .collect();
                let Some(_) = templates
                    .iter()
                    .find(|o| o.keys.uri.as_ref().map(LitStr::value) == Some(uri.value()))
                else {
                    let uris: Vec<_> = templates
                        .iter()
                        .filter_map(|o| o.keys.uri.as_ref().map(|u| format!("`{}`", u.value())))
                        .collect();
                    cx.error_spanned_by(
                        uri,
                        format!(
                            "this impl has no `#[resource_template(\"{}\")]`{}",
                            uri.value(),
                            known(&uris)
                        ),
                    );
                    return;
                };
                let names = variables(&uri.value());
                if !names.contains(&wanted) {
                    cx.error_spanned_by(
                        argument,
                        format!(
                            "template `{}` has no variable `{wanted}`; its variables: {}",
                            uri.value(),
                            list(&names)
                        ),
                    );
                }
            }
        }
    }

    /// `NAME_completion`.
    pub fn builder_ident(&self) -> Ident {
        format_ident!("{}_completion", self.function.ident().unraw())
    }

    /// On error: an empty table, so callers still compile.
    pub fn stub(&self) -> TokenStream {
        let vis = &self.function.item.vis;
        let ident = self.builder_ident();
        quote!(#vis fn #ident() -> ::wymcp::Completer { ::wymcp::Completer::new() })
    }

    /// `NAME_completion()`: a table of one key, answered by the method.
    pub fn builder(&self) -> TokenStream {
        let (Some(target), Some(argument)) = (&self.target, &self.argument) else {
            return self.stub();
        };
        let function = &self.function;
        let vis = &function.item.vis;
        let ident = function.ident();
        let builder_ident = self.builder_ident();
        let request = Ident::new("request", Span::mixed_site());
        let context = Ident::new("context", Span::mixed_site());
        let state = Ident::new("state", Span::mixed_site());
        let passed = function.params.iter().map(|param| match param {
            Param::Arg { ident, .. } => {
                let field = Ident::new(&ident.unraw().to_string(), Span::call_site());
                quote!(#request.#field)
            }
            Param::Whole { .. } => quote!(#request),
            Param::Context { by_ref: true } => quote!(&#context),
            Param::Context { by_ref: false } => quote!(#context),
        });
        let (take_state, call) = if function.method {
            (
                quote!(let #state = ::wymcp::__private::state_of::<Self>(&#context);),
                quote!(#state.#ident(#(#passed),*)),
            )
        } else {
            (TokenStream::new(), quote!(Self::#ident(#(#passed),*)))
        };
        let answer = match &function.answer {
            Answer::Fallible(ty) => {
                quote_spanned!(ty.span()=> ::wymcp::__private::completion_fallible(#call.await))
            }
            Answer::Infallible(ty) => {
                quote_spanned!(ty.span()=> ::wymcp::__private::completion_infallible(#call.await))
            }
            Answer::Nothing => return self.stub(),
        };
        let uses_request = function
            .params
            .iter()
            .any(|p| matches!(p, Param::Arg { .. } | Param::Whole { .. }));
        let request_pattern = if uses_request {
            request.to_token_stream()
        } else {
            quote!(_)
        };
        let context_pattern = if function.method
            || function
                .params
                .iter()
                .any(|p| matches!(p, Param::Context { .. }))
        {
            context.to_token_stream()
        } else {
            quote!(_)
        };
        let (method, key, what) = match target {
            Target::Prompt(name) => (
                quote!(prompt),
                name,
                format!(
                    "completion of argument `{}` of prompt `{}`",
                    argument.value(),
                    name.value()
                ),
            ),
            Target::Template(uri) => (
                quote!(template),
                uri,
                format!(
                    "completion of variable `{}` of resource template `{}`",
                    argument.value(),
                    uri.value()
                ),
            ),
        };
        let table = quote! {
            ::wymcp::Completer::new().#method(#key, #argument, |#request_pattern: ::wymcp::CompletionRequest, #context_pattern: ::wymcp::Context| async move {
                #take_state
                #answer
            })
        };
        let table = if function.method {
            quote!(::wymcp::__private::completer_method_of::<Self>(#table, #what))
        } else {
            table
        };
        let doc = format!(
            " The {what}, answered by [`{ident}`](Self::{ident}) (generated by `#[complete]`): \
             register it with `ServerBuilder::completer`."
        );
        quote! {
            #[doc = #doc]
            #[must_use]
            #vis fn #builder_ident() -> ::wymcp::Completer {
                #table
            }
        }
    }
}

fn list(names: &[String]) -> String {
    if names.is_empty() {
        "none".to_owned()
    } else {
        names
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn known(names: &[String]) -> String {
    if names.is_empty() {
        String::new()
    } else {
        format!(" (it has {})", names.join(", "))
    }
}
