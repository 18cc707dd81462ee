//! Writes the tokens of a pipeline module: the module with tags stripped,
//! then `handle`, `handle_get`, `CHAIN`, `router` and the const assertions that hold the
//! chain's `Validate` to the type system's truth. On error: the module, stubs
//! and the errors, so nothing else fails to compile because of them.
//!
//! Generated code names its dependencies only through `::wymcp::__private`.
//! Locals use mixed-site hygiene so no item of the user's module can capture
//! them; everything about one stage is spanned at that stage's name, so a
//! type error (a type that is not a `Stage`, an inline fn with the wrong
//! signature) points at the user's item.

use proc_macro2::{Ident, Span, TokenStream};
use quote::{ToTokens, quote, quote_spanned};
use syn::{Item, ItemMod};

use crate::ast::{Form, GENERATED, Pipeline, Stage, item_ident};
use crate::attr::Tag;
use crate::check;
use crate::ctxt::Ctxt;

/// The whole expansion of `#[pipeline]`, from the attribute's arguments and
/// the item it is on.
pub fn pipeline(args: TokenStream, input: TokenStream) -> TokenStream {
    let cx = Ctxt::new();
    if !args.is_empty() {
        cx.error_spanned_by(
            args,
            "`#[pipeline]` takes no arguments: write `#[wymcp::pipeline]` on the module",
        );
    }
    let original = input.clone();
    let Ok(module) = syn::parse2::<ItemMod>(input) else {
        cx.syn_error(syn::Error::new(
            Span::call_site(),
            "`#[pipeline]` goes on a module: `#[wymcp::pipeline] pub mod post { … }`",
        ));
        return with_errors(&original, cx);
    };
    let Some(pipeline) = crate::ast::Pipeline::from_syn(&cx, module.clone()) else {
        return with_errors(&bodiless(&module), cx);
    };
    let validate = check::check(&cx, &pipeline);
    if cx.has_errors() {
        return with_errors(&stubbed(&pipeline, validate), cx);
    }
    let _ = cx.check();
    generate(&pipeline, validate)
}

fn with_errors(tokens: &TokenStream, cx: Ctxt) -> TokenStream {
    let errors = cx.check().err().map(|error| error.to_compile_error());
    quote!(#tokens #errors)
}

/// The identifiers the generated code binds, with mixed-site hygiene.
struct Locals {
    server: Ident,
    request: Ident,
    ex: Ident,
    span: Ident,
    flow: Ident,
    response: Ident,
}

impl Locals {
    fn new() -> Self {
        let name = |n: &str| Ident::new(n, Span::mixed_site());
        Locals {
            server: name("server"),
            request: name("request"),
            ex: name("ex"),
            span: name("span"),
            flow: name("flow"),
            response: name("response"),
        }
    }
}

fn generate(pipeline: &Pipeline, validate: Option<usize>) -> TokenStream {
    let locals = Locals::new();
    let handle_post = handle(pipeline, &locals);
    let handle_get = handle_get(pipeline, &locals);
    let chain = chain(pipeline, validate);
    let router = router(&locals);
    let assertions = assertions(pipeline, validate, true);
    let generated = quote! {
        #handle_post
        #handle_get
        #chain
        #router
        #assertions
    };
    rebuild(pipeline, generated)
}

/// The module with its items and `extra` put back in.
fn rebuild(pipeline: &Pipeline, extra: TokenStream) -> TokenStream {
    let mut module = pipeline.shell.clone();
    let mut items = pipeline.items.clone();
    for item in &mut items {
        if let Item::Fn(f) = item
            && f.sig.asyncness.is_some()
        {
            // An inline stage is `async` because the chain awaits it, whether
            // or not its own body awaits anything.
            f.attrs
                .push(syn::parse_quote!(#[allow(clippy::unused_async)]));
        }
    }
    items.push(Item::Verbatim(extra));
    if let Some((_, content)) = module.content.as_mut() {
        *content = items;
    }
    module.into_token_stream()
}

/// The calls of `stages` in order, each returning its answer when it gives
/// one.
fn steps<'a>(
    stages: impl Iterator<Item = &'a Stage> + 'a,
    locals: &'a Locals,
) -> impl Iterator<Item = TokenStream> + 'a {
    let Locals {
        ex,
        span,
        flow,
        response,
        ..
    } = locals;
    stages.map(move |stage| {
        let name = &stage.ident;
        let label = name.to_string();
        let at = name.span();
        // Still mixed-site hygiene, but located at the stage, so a type
        // error in the call points at the user's item.
        let here = |local: &Ident| {
            let mut local = local.clone();
            local.set_span(Span::mixed_site().located_at(at));
            local
        };
        let (ex, span, flow, response) = (here(ex), here(span), here(flow), here(response));
        let run = match stage.form {
            Form::Type(_) => {
                quote_spanned!(at=> <#name as ::wymcp::__private::Stage>::run(&mut #ex))
            }
            Form::Fn => quote_spanned!(at=> #name(&mut #ex)),
        };
        quote_spanned! {at=>
            let #span = ::wymcp::__private::enter(&mut #ex, #label);
            let #flow = ::wymcp::__private::Instrument::instrument(#run, #span).await;
            if let ::wymcp::__private::Flow::Answer(#response) = #flow {
                return #response;
            }
        }
    })
}

fn handle(pipeline: &Pipeline, locals: &Locals) -> TokenStream {
    let Locals {
        server,
        request,
        ex,
        ..
    } = locals;
    let steps = steps(pipeline.stages.iter(), locals);
    quote! {
        /// Runs one POST through this chain: each stage in declared order,
        /// until one answers. Generated by `#[pipeline]`.
        pub async fn handle(
            #server: &::wymcp::__private::Server,
            #request: ::wymcp::__private::Request,
        ) -> ::wymcp::__private::Response {
            let mut #ex = ::wymcp::__private::Exchange::new(#server, #request);
            #(#steps)*
            ::wymcp::__private::unanswered(&#ex)
        }
    }
}

/// `handle_get`: a GET has no body, so its exchange has no message; its
/// era comes from the `MCP-Protocol-Version` header alone. The chain's wire
/// checks run in declared order (header-level, by the chain's invariant);
/// the body-bound stages, `Validate` and what follows do not.
fn handle_get(pipeline: &Pipeline, locals: &Locals) -> TokenStream {
    let Locals {
        server,
        request,
        ex,
        ..
    } = locals;
    let wire_checks = pipeline
        .stages
        .iter()
        .filter(|stage| matches!(stage.tag, Some(Tag::WireCheck { .. })));
    let steps = steps(wire_checks, locals);
    quote! {
        /// Runs one GET through this chain: its wire checks in declared
        /// order, until one answers, then the 2025 standalone stream (or
        /// why not). Generated by `#[pipeline]`.
        pub async fn handle_get(
            #server: &::wymcp::__private::Server,
            #request: ::wymcp::__private::Request,
        ) -> ::wymcp::__private::Response {
            let mut #ex = ::wymcp::__private::Exchange::new(#server, #request);
            ::wymcp::__private::begin_get(&mut #ex);
            #(#steps)*
            ::wymcp::__private::open_stream(&mut #ex).await
        }
    }
}

fn tag_role(stage: &Stage) -> TokenStream {
    match &stage.tag {
        Some(Tag::WireCheck { .. }) => quote!(::wymcp::__private::Role::WireCheck),
        Some(Tag::BodyBound {
            reason: Some(reason),
            ..
        }) => quote!(::wymcp::__private::Role::BodyBound { reason: #reason }),
        // Untagged, or a reason already refused: never reaches a built chain.
        Some(Tag::BodyBound { reason: None, .. }) | None => {
            quote!(::wymcp::__private::Role::After)
        }
    }
}

/// `is_validate::<S>()` for each type stage among `stages`, or'ed; `false`
/// when there is none.
fn any_validate<'a>(stages: impl IntoIterator<Item = &'a Stage>) -> TokenStream {
    let terms: Vec<TokenStream> = stages
        .into_iter()
        .filter(|stage| stage.is_type() && !stage.has_cfg)
        .map(|stage| {
            let name = &stage.ident;
            quote!(::wymcp::__private::is_validate::<#name>())
        })
        .collect();
    if terms.is_empty() {
        quote!(false)
    } else {
        quote!(#(#terms)||*)
    }
}

fn chain(pipeline: &Pipeline, validate: Option<usize>) -> TokenStream {
    let stages = &pipeline.stages;
    let rows = stages.iter().enumerate().map(|(index, stage)| {
        let name = &stage.ident;
        let label = name.to_string();
        let role = match validate {
            // The spelling is confirmed by the assertions: roles are literal.
            Some(v) if index < v => tag_role(stage),
            Some(v) if index == v => quote!(::wymcp::__private::Role::Validate),
            Some(_) => quote!(::wymcp::__private::Role::After),
            // `Validate` is under another name: each role is read off the
            // type system, in a const expression.
            None => {
                let before = any_validate(&stages[..index]);
                let tagged = tag_role(stage);
                let otherwise = quote! {
                    if #before { ::wymcp::__private::Role::After } else { #tagged }
                };
                if stage.is_type() {
                    quote! {
                        if ::wymcp::__private::is_validate::<#name>() {
                            ::wymcp::__private::Role::Validate
                        } else #otherwise
                    }
                } else {
                    otherwise
                }
            }
        };
        let line = quote_spanned!(name.span()=> ::core::line!());
        quote! {
            ::wymcp::__private::StageInfo {
                name: #label,
                role: #role,
                line: #line,
            }
        }
    });
    quote! {
        /// The stages of this chain in order, with their roles. Generated by
        /// `#[pipeline]`.
        pub const CHAIN: &[::wymcp::__private::StageInfo] = &[#(#rows),*];
    }
}

fn router(locals: &Locals) -> TokenStream {
    let Locals {
        server, request, ..
    } = locals;
    quote! {
        /// The axum router of this chain: POST on the server's endpoint runs
        /// [`handle`]; GET runs [`handle_get`] when the server serves a
        /// 2025 client's standalone stream; every other verb is answered
        /// 405 and runs no stage. Generated by `#[pipeline]`.
        pub fn router(
            #server: impl ::core::convert::Into<::std::sync::Arc<::wymcp::__private::Server>>,
        ) -> ::wymcp::__private::Router {
            ::wymcp::__private::router(
                ::core::convert::Into::into(#server),
                |#server, #request| async move { handle(&#server, #request).await },
                |#server, #request| async move { handle_get(&#server, #request).await },
            )
        }
    }
}

/// Const assertions: where the spelling found `Validate`, that it is the real
/// one and the only one; where it did not, that there is exactly one, and
/// (with `ordering`) the whole order, decided by the type system.
///
/// After other errors, `ordering` is off and stages under `cfg` are left out:
/// what is asserted then cannot follow from a mistake already reported.
fn assertions(pipeline: &Pipeline, validate: Option<usize>, ordering: bool) -> TokenStream {
    let stages = &pipeline.stages;
    let mut out = TokenStream::new();
    let assert_at = |at: Span, condition: TokenStream, message: String| {
        quote_spanned! {at=>
            const _: () = ::core::assert!(#condition, #message);
        }
    };
    if let Some(v) = validate {
        for (index, stage) in stages.iter().enumerate() {
            // A second stage spelled `Validate` is already reported.
            if !stage.is_type() || stage.has_cfg || (index != v && stage.looks_like_validate()) {
                continue;
            }
            let name = &stage.ident;
            let is = quote!(::wymcp::__private::is_validate::<#name>());
            out.extend(if index == v {
                assert_at(
                    name.span(),
                    is,
                    format!(
                        "`{name}` is not wymcp's `Validate`: name `wymcp::stages::Validate` \
                         here; a stage of your own cannot take its place, but it may run \
                         before it as a tagged stage or after it"
                    ),
                )
            } else {
                assert_at(
                    name.span(),
                    quote!(!#is),
                    format!(
                        "stage `{name}` is wymcp's `Validate` under another name, and the \
                         chain already has `{}`: a chain validates once, so remove one of them",
                        stages[v].ident
                    ),
                )
            });
        }
        return out;
    }

    let all = any_validate(stages);
    for (index, stage) in stages.iter().enumerate().filter(|_| ordering) {
        let name = &stage.ident;
        let upto = any_validate(&stages[..=index]);
        out.extend(match &stage.tag {
            Some(tag) => {
                let message = match tag {
                    Tag::WireCheck { .. } => check::wire_check_after(stage),
                    Tag::BodyBound { .. } => check::body_bound_after(stage),
                };
                assert_at(
                    name.span(),
                    quote!(!(#upto)),
                    format!("{message} (this chain has `Validate` under another name)"),
                )
            }
            None => assert_at(
                name.span(),
                quote!(!(#all) || #upto),
                check::untagged_before(stage),
            ),
        });
    }
    let count: Vec<TokenStream> = stages
        .iter()
        .filter(|stage| stage.is_type() && !stage.has_cfg)
        .map(|stage| {
            let name = &stage.ident;
            quote!(::wymcp::__private::is_validate::<#name>() as usize)
        })
        .collect();
    let count = if count.is_empty() {
        quote!(0usize)
    } else {
        quote!(#(#count)+*)
    };
    let at = pipeline.shell.ident.span();
    out.extend(assert_at(
        at,
        quote!(#count != 0),
        "the chain has no `Validate`: add `pub type Validate = wymcp::stages::Validate;` \
         after the wire checks and body-bound stages"
            .to_owned(),
    ));
    out.extend(assert_at(
        at,
        quote!(#count <= 1),
        "the chain has more than one `Validate` (some under another name): a chain validates \
         once, so keep one"
            .to_owned(),
    ));
    out
}

/// The module after an error: items with tags stripped, stubs for whatever
/// the module does not already define, and the assertions on `Validate`'s
/// identity, so a missing or false `Validate` is reported in the same build.
fn stubbed(pipeline: &Pipeline, validate: Option<usize>) -> TokenStream {
    let taken: Vec<&Ident> = pipeline.items.iter().filter_map(item_ident).collect();
    let mut extra = stubs(|name| taken.iter().any(|t| *t == name));
    extra.extend(assertions(pipeline, validate, false));
    rebuild(pipeline, extra)
}

/// `mod post;` refused: an inline module of stubs, so uses of it still resolve.
fn bodiless(module: &ItemMod) -> TokenStream {
    let ItemMod { vis, ident, .. } = module;
    let stubs = stubs(|_| false);
    quote!(#vis mod #ident { #stubs })
}

fn stubs(taken: impl Fn(&str) -> bool) -> TokenStream {
    let [handle, handle_get, chain, router] = GENERATED.map(|name| !taken(name));
    let mut out = TokenStream::new();
    if handle {
        out.extend(quote! {
            /// Stub: the pipeline has errors.
            pub async fn handle(
                _: &::wymcp::__private::Server,
                _: ::wymcp::__private::Request,
            ) -> ::wymcp::__private::Response {
                ::core::unreachable!("the pipeline has errors")
            }
        });
    }
    if handle_get {
        out.extend(quote! {
            /// Stub: the pipeline has errors.
            pub async fn handle_get(
                _: &::wymcp::__private::Server,
                _: ::wymcp::__private::Request,
            ) -> ::wymcp::__private::Response {
                ::core::unreachable!("the pipeline has errors")
            }
        });
    }
    if chain {
        out.extend(quote! {
            /// Stub: the pipeline has errors.
            pub const CHAIN: &[::wymcp::__private::StageInfo] = &[];
        });
    }
    if router {
        out.extend(quote! {
            /// Stub: the pipeline has errors.
            pub fn router(
                _: impl ::core::convert::Into<::std::sync::Arc<::wymcp::__private::Server>>,
            ) -> ::wymcp::__private::Router {
                ::core::unreachable!("the pipeline has errors")
            }
        });
    }
    out
}
