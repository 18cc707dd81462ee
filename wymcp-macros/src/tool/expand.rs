//! Writes the tokens of `#[tool]` and `#[tools]`: the function as written
//! (its `#[args]` markers stripped), then, beside it, `NAME_tool()`, which
//! builds the `wymcp::Tool`: its name, description, annotations, icons and
//! scopes, the arguments struct its input schema is derived from, and the
//! handler that reads the arguments and calls the function. `#[tools]` adds
//! `tools()`, every tool of the impl. On error: the function, a stub
//! `NAME_tool()` (and `tools()`), and the errors, so nothing else fails to
//! compile because of them.
//!
//! Generated code names its dependencies only through `::wymcp` and
//! `::wymcp::__private`. Locals use mixed-site hygiene; the answer is
//! spanned at the function's return type, so a type that is no tool output
//! is reported there.

use proc_macro2::{Ident, Span, TokenStream};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{ImplItem, ItemFn, ItemImpl};

use super::ast::{Answer, Param, ToolFn};
use super::{attr, check, complete, others};

/// Where a served method of a `#[tools]` impl was read into.
enum Served {
    Tool(usize),
    Other(usize),
    Complete(usize),
}
use crate::ctxt::Ctxt;

/// The expansion of `#[tool]` on one function.
pub fn tool(args: TokenStream, input: TokenStream) -> TokenStream {
    let cx = Ctxt::new();
    let keys = attr::parse_keys(&cx, args);
    let original = input.clone();
    let Ok(item) = syn::parse2::<ItemFn>(input) else {
        cx.syn_error(syn::Error::new(
            Span::call_site(),
            "`#[tool]` goes on an `async fn`: `#[wymcp::tool] async fn add(a: i64, b: i64) -> …`",
        ));
        return with_errors(&original, cx);
    };
    let tool = ToolFn::from_syn(&cx, attr::TOOL, keys, item);
    check::check_name(&cx, &tool);
    let builder = if cx.has_errors() {
        stub(&tool)
    } else {
        builder(&tool, false)
    };
    let item = written_back(&tool);
    with_errors(&quote!(#item #builder), cx)
}

/// The expansion of `#[tools]` on an `impl` block.
pub fn tools(args: TokenStream, input: TokenStream) -> TokenStream {
    let cx = Ctxt::new();
    if !args.is_empty() {
        cx.error_spanned_by(
            args,
            "`#[tools]` takes no arguments: give each method's keys in its own `#[tool(…)]`",
        );
    }
    let original = input.clone();
    let Ok(mut imp) = syn::parse2::<ItemImpl>(input) else {
        cx.syn_error(syn::Error::new(
            Span::call_site(),
            "`#[tools]` goes on an `impl` block of the server's state type: \
             `#[wymcp::tools] impl Notes { #[tool] async fn add_note(&self, …) … }`",
        ));
        return with_errors(&original, cx);
    };
    if let Some((_, path, _)) = &imp.trait_ {
        cx.error_spanned_by(
            path,
            "`#[tools]` goes on an inherent `impl` block (`impl Notes { … }`), where it can add \
             `tools()`; not on a trait's impl",
        );
    }
    let mut tools: Vec<(usize, ToolFn)> = Vec::new();
    let mut served_others: Vec<others::Other> = Vec::new();
    let mut completes: Vec<complete::Complete> = Vec::new();
    let mut items: Vec<Result<ImplItem, Served>> = Vec::new();
    for (index, item) in std::mem::take(&mut imp.items).into_iter().enumerate() {
        cx.at(index);
        let ImplItem::Fn(mut method) = item else {
            items.push(Ok(item));
            continue;
        };
        let other_tags: Vec<_> = method
            .attrs
            .iter()
            .filter_map(|a| others::which(a).map(|which| (which, a.clone())))
            .collect();
        let tags: Vec<_> = method
            .attrs
            .iter()
            .filter(|a| attr::is_tool(a))
            .cloned()
            .collect();
        let complete_tags: Vec<_> = method
            .attrs
            .iter()
            .filter(|a| complete::is_complete(a))
            .cloned()
            .collect();
        if tags.is_empty() && other_tags.is_empty() && complete_tags.is_empty() {
            items.push(Ok(ImplItem::Fn(method)));
            continue;
        }
        if let Some(first) = complete_tags.first() {
            method.attrs.retain(|a| {
                !complete::is_complete(a) && others::which(a).is_none() && !attr::is_tool(a)
            });
            for repeated in tags
                .iter()
                .chain(other_tags.iter().map(|(_, a)| a))
                .chain(&complete_tags[1..])
            {
                cx.error_spanned_by(
                    repeated,
                    format!(
                        "`{}` is already a `#[complete]`: a method serves one thing; remove this \
                         attribute",
                        method.sig.ident
                    ),
                );
            }
            let (target, argument) = complete::parse_attr(&cx, first);
            let item = ItemFn {
                attrs: method.attrs,
                vis: method.vis,
                sig: method.sig,
                block: Box::new(method.block),
            };
            let function = ToolFn::from_syn(&cx, complete::COMPLETE, attr::Keys::default(), item);
            let one = complete::Complete {
                target,
                argument,
                function,
            };
            one.check(&cx);
            items.push(Err(Served::Complete(completes.len())));
            completes.push(one);
            continue;
        }
        if let Some((which, first)) = other_tags.first().cloned() {
            method.attrs.retain(|a| others::which(a).is_none());
            for (_, repeated) in tags
                .iter()
                .map(|t| (which, t))
                .chain(other_tags[1..].iter().map(|(w, a)| (*w, a)))
            {
                cx.error_spanned_by(
                    repeated,
                    format!(
                        "`{}` is already a `#[{}]`: a method serves one thing; remove this \
                         attribute",
                        method.sig.ident,
                        which.tag()
                    ),
                );
            }
            method.attrs.retain(|a| !attr::is_tool(a));
            let keys = others::parse_attr(&cx, which, &first);
            let item = ItemFn {
                attrs: method.attrs,
                vis: method.vis,
                sig: method.sig,
                block: Box::new(method.block),
            };
            let function = ToolFn::from_syn(&cx, which.tag(), attr::Keys::default(), item);
            let other = others::Other {
                which,
                keys,
                function,
            };
            other.check(&cx);
            items.push(Err(Served::Other(served_others.len())));
            served_others.push(other);
            continue;
        }
        method.attrs.retain(|a| !attr::is_tool(a));
        for repeated in &tags[1..] {
            cx.error_spanned_by(
                repeated,
                format!(
                    "`#[tool]` is repeated on `{}`: a method is one tool; give every key in one \
                     `#[tool(…)]` and remove this one",
                    method.sig.ident
                ),
            );
        }
        let keys = attr::parse_attr(&cx, &tags[0]);
        let item = ItemFn {
            attrs: method.attrs,
            vis: method.vis,
            sig: method.sig,
            block: Box::new(method.block),
        };
        let tool = ToolFn::from_syn(&cx, attr::TOOL, keys, item);
        check::check_name(&cx, &tool);
        items.push(Err(Served::Tool(tools.len())));
        tools.push((index, tool));
    }
    for one in &completes {
        one.check_target(&cx, &served_others);
    }
    if tools.is_empty() && served_others.is_empty() && completes.is_empty() {
        cx.at(usize::MAX);
        cx.error_spanned_by(
            &imp.self_ty,
            "`#[tools]` found no `#[tool]`, `#[resource]`, `#[resource_template]` or `#[prompt]` \
             method in this impl: mark each method to serve with one",
        );
    }
    check::check_unique(&cx, &tools);
    let failed = cx.has_errors();
    let mut body = TokenStream::new();
    for item in items {
        match item {
            Ok(item) => item.to_tokens(&mut body),
            Err(Served::Other(at)) => {
                let other = &served_others[at];
                written_back(&other.function).to_tokens(&mut body);
                body.extend(if failed {
                    other.stub()
                } else {
                    other.builder()
                });
            }
            Err(Served::Complete(at)) => {
                let one = &completes[at];
                written_back(&one.function).to_tokens(&mut body);
                body.extend(if failed { one.stub() } else { one.builder() });
            }
            Err(Served::Tool(at)) => {
                let tool = &tools[at].1;
                written_back(tool).to_tokens(&mut body);
                let builder = if failed {
                    stub(tool)
                } else {
                    builder(tool, true)
                };
                body.extend(builder);
            }
        }
    }
    let each = tools.iter().map(|(_, tool)| builder_ident(tool));
    let list = if failed {
        quote!(::std::vec::Vec::new())
    } else {
        quote!(::std::vec![#(Self::#each()),*])
    };
    for (which, list_ident, item_type) in [
        (
            others::Which::Resource,
            "resources",
            quote!(::wymcp::Resource),
        ),
        (
            others::Which::Template,
            "resource_templates",
            quote!(::wymcp::ResourceTemplate),
        ),
        (others::Which::Prompt, "prompts", quote!(::wymcp::Prompt)),
    ] {
        let each: Vec<_> = served_others
            .iter()
            .filter(|o| o.which == which)
            .map(others::Other::builder_ident)
            .collect();
        if each.is_empty() {
            continue;
        }
        let list_ident = Ident::new(list_ident, Span::call_site());
        let list = if failed {
            quote!(::std::vec::Vec::new())
        } else {
            quote!(::std::vec![#(Self::#each()),*])
        };
        let doc = format!(
            " Every `#[{}]` of this impl, for `ServerBuilder::{list_ident}`.",
            which.tag()
        );
        body.extend(quote! {
            #[doc = #doc]
            #[must_use]
            pub fn #list_ident() -> ::std::vec::Vec<#item_type> {
                #list
            }
        });
    }
    if !completes.is_empty() {
        let each = completes.iter().map(complete::Complete::builder_ident);
        let table = if failed {
            quote!(::wymcp::Completer::new())
        } else {
            quote!(::wymcp::Completer::new()#(.merge(Self::#each()))*)
        };
        body.extend(quote! {
            /// Every `#[complete]` of this impl, for `ServerBuilder::completer`.
            #[must_use]
            pub fn completer() -> ::wymcp::Completer {
                #table
            }
        });
    }
    // `handlers()`: everything above, for `ServerBuilder::handlers`.
    let bundle = if failed {
        quote!(::wymcp::Handlers::new())
    } else {
        let tools = tools.iter().map(|(_, tool)| builder_ident(tool));
        let of = |which| {
            served_others
                .iter()
                .filter(move |o| o.which == which)
                .map(others::Other::builder_ident)
        };
        let resources = of(others::Which::Resource);
        let templates = of(others::Which::Template);
        let prompts = of(others::Which::Prompt);
        let completions = completes.iter().map(complete::Complete::builder_ident);
        quote! {
            ::wymcp::Handlers::new()
                .tools(::std::vec::Vec::<::wymcp::Tool>::from([#(Self::#tools()),*]))
                .resources(::std::vec::Vec::<::wymcp::Resource>::from([#(Self::#resources()),*]))
                .resource_templates(::std::vec::Vec::<::wymcp::ResourceTemplate>::from([#(Self::#templates()),*]))
                .prompts(::std::vec::Vec::<::wymcp::Prompt>::from([#(Self::#prompts()),*]))
                .completer(::wymcp::Completer::new()#(.merge(Self::#completions()))*)
        }
    };
    body.extend(quote! {
        /// Every tool, resource, resource template, prompt and completion of
        /// this impl, for `ServerBuilder::handlers`.
        #[must_use]
        pub fn handlers() -> ::wymcp::Handlers {
            #bundle
        }
    });
    body.extend(quote! {
        /// Every `#[tool]` of this impl, for `ServerBuilder::tools`.
        #[must_use]
        pub fn tools() -> ::std::vec::Vec<::wymcp::Tool> {
            #list
        }
    });
    let ItemImpl {
        attrs,
        defaultness,
        unsafety,
        impl_token,
        generics,
        trait_,
        self_ty,
        ..
    } = &imp;
    let (_, _, where_clause) = generics.split_for_impl();
    let trait_ = trait_
        .as_ref()
        .map(|(bang, path, for_token)| quote!(#bang #path #for_token));
    let tokens = quote! {
        #(#attrs)*
        #defaultness #unsafety #impl_token #generics #trait_ #self_ty #where_clause {
            #body
        }
    };
    with_errors(&tokens, cx)
}

fn with_errors(tokens: &TokenStream, cx: Ctxt) -> TokenStream {
    let errors = cx.check().err().map(|error| error.to_compile_error());
    quote!(#tokens #errors)
}

/// The function as written, `#[args]` stripped; `async` because the
/// handler awaits it, whether or not its own body awaits anything.
fn written_back(tool: &ToolFn) -> TokenStream {
    let mut item = tool.item.clone();
    if item.sig.asyncness.is_some() {
        item.attrs
            .push(syn::parse_quote!(#[allow(clippy::unused_async)]));
    }
    item.into_token_stream()
}

/// `NAME_tool`, for the function `NAME`.
fn builder_ident(tool: &ToolFn) -> Ident {
    format_ident!("{}_tool", tool.ident().unraw())
}

/// On error: `NAME_tool()` that builds a tool of the name, so callers
/// still compile and only the real errors are reported.
fn stub(tool: &ToolFn) -> TokenStream {
    let vis = &tool.item.vis;
    let ident = builder_ident(tool);
    let name = &tool.name;
    quote! {
        #vis fn #ident() -> ::wymcp::Tool {
            ::wymcp::Tool::new(#name)
        }
    }
}

/// `NAME_tool()`: the tool built with wymcp's builder. `in_impl`: the
/// function sits in a `#[tools]` impl, so one without `&self` is called as
/// `Self::NAME`.
fn builder(tool: &ToolFn, in_impl: bool) -> TokenStream {
    let vis = &tool.item.vis;
    let ident = tool.ident();
    let builder_ident = builder_ident(tool);
    let name = &tool.name;
    let arguments = Ident::new("arguments", Span::mixed_site());
    let context = Ident::new("context", Span::mixed_site());
    let state = Ident::new("state", Span::mixed_site());

    let Invocation {
        definition,
        argument_type,
        arguments_pattern,
        take_state,
        call,
    } = invocation(
        &tool.params,
        ident,
        tool.method,
        in_impl,
        &format!("the tool `{name}`"),
        (&arguments, &context, &state),
    );
    // The handler's bounds on the answer are reported at the return type too.
    let output_span = match &tool.answer {
        Answer::Fallible(ty) | Answer::Infallible(ty) => ty.span(),
        Answer::Nothing => Span::call_site(),
    };
    let handler = Ident::new("handler", output_span);
    let answer = match &tool.answer {
        Answer::Fallible(ty) => {
            quote_spanned!(ty.span()=> ::wymcp::__private::tool_fallible(#call.await))
        }
        Answer::Infallible(ty) => {
            quote_spanned!(ty.span()=> ::wymcp::__private::tool_infallible(#call.await))
        }
        Answer::Nothing => unreachable!("reported, and stubbed"),
    };

    let keys = &tool.keys;
    let mut chain = quote!(::wymcp::Tool::new(#name));
    if let Some(title) = &keys.title {
        chain.extend(quote!(.title(#title)));
    }
    let description = keys
        .description
        .as_ref()
        .map(syn::LitStr::value)
        .or_else(|| tool.docs.clone());
    if let Some(description) = description {
        chain.extend(quote!(.description(#description)));
    }
    if !keys.hints.is_empty() {
        let hints = keys
            .hints
            .iter()
            .map(|(member, value)| quote!((#member, #value)));
        chain.extend(quote!(.annotations(::wymcp::__private::tool_annotations(&[#(#hints),*]))));
    }
    for icon in &keys.icons {
        chain.extend(quote!(.icon(::wymcp::Icon::new(#icon))));
    }
    if !keys.scopes.is_empty() {
        let scopes = &keys.scopes;
        chain.extend(quote!(.scopes([#(#scopes),*])));
    }
    if let Some(task) = &keys.task {
        chain.extend(quote!(.task_support(::wymcp::TaskSupport::#task)));
    }

    let answered_by = if tool.method || in_impl {
        format!("[`{ident}`](Self::{ident})")
    } else {
        format!("[`{ident}`]")
    };
    let doc = format!(
        " The tool `{name}`, answered by {answered_by} (generated by `#[wymcp::tool]`): \
         register it with `ServerBuilder::tool`."
    );
    let uses_context = tool.method
        || tool
            .params
            .iter()
            .any(|p| matches!(p, Param::Context { .. }));
    let context_pattern = if uses_context {
        context.to_token_stream()
    } else {
        quote!(_)
    };
    let mut built = quote! {
        #chain.#handler(|#arguments_pattern: #argument_type, #context_pattern: ::wymcp::Context| async move {
            #take_state
            #answer
        })
    };
    if tool.method {
        let what = format!("tool `{name}`");
        built = quote!(::wymcp::__private::method_of::<Self, _>(#built, #what));
    }
    quote! {
        #[doc = #doc]
        #[must_use]
        #vis fn #builder_ident() -> ::wymcp::Tool {
            #definition
            #built
        }
    }
}

/// What a generated handler makes of its function's parameters: the
/// arguments struct (`definition`, none when the function takes one
/// `#[args]` type whole or nothing), the type the handler reads its
/// arguments into, the state it takes for a `&self` method, and the call.
pub(super) struct Invocation {
    pub(super) definition: TokenStream,
    pub(super) argument_type: TokenStream,
    /// The closure's pattern for its arguments: `_` when it takes none.
    pub(super) arguments_pattern: TokenStream,
    pub(super) take_state: TokenStream,
    pub(super) call: TokenStream,
}

/// The [`Invocation`] of the function `ident` with `params`, for `what`
/// (`the tool `search``, named by the schema checks' errors): `method`
/// when it takes `&self`, `in_impl` when it sits in the impl (a function
/// without `&self` is then called as `Self::NAME`); `names` are the
/// handler closure's `arguments`, `context` and `state` idents.
pub(super) fn invocation(
    params: &[Param],
    ident: &Ident,
    method: bool,
    in_impl: bool,
    what: &str,
    (arguments, context, state): (&Ident, &Ident, &Ident),
) -> Invocation {
    let (fields, schema_checks) = argument_fields(params, what);
    let whole = params.iter().find_map(|param| match param {
        Param::Whole { ty } => Some(ty),
        _ => None,
    });
    let (definition, argument_type) = if let Some(ty) = whole {
        whole_argument(ty, what)
    } else if fields.is_empty() {
        (TokenStream::new(), quote!(::wymcp::NoArgs))
    } else {
        let struct_ident = format_ident!("{}Arguments", camel(&ident.unraw().to_string()));
        let definition = quote! {
            #[derive(::wymcp::__private::serde::Deserialize, ::wymcp::__private::schemars::JsonSchema)]
            #[serde(crate = "::wymcp::__private::serde")]
            #[schemars(crate = "::wymcp::__private::schemars")]
            struct #struct_ident {
                #(#fields,)*
            }
            #schema_checks
        };
        (definition, struct_ident.into_token_stream())
    };
    let passed = params.iter().map(|param| match param {
        Param::Arg { ident, .. } => quote!(#arguments.#ident),
        Param::Whole { .. } => quote!(#arguments.0),
        Param::Context { by_ref: true } => quote!(&#context),
        Param::Context { by_ref: false } => quote!(#context),
    });
    let (take_state, call) = if method {
        (
            quote!(let #state = ::wymcp::__private::state_of::<Self>(&#context);),
            quote!(#state.#ident(#(#passed),*)),
        )
    } else if in_impl {
        (TokenStream::new(), quote!(Self::#ident(#(#passed),*)))
    } else {
        (TokenStream::new(), quote!(#ident(#(#passed),*)))
    };
    let arguments_pattern = if whole.is_some() || !fields.is_empty() {
        arguments.to_token_stream()
    } else {
        quote!(_)
    };
    Invocation {
        definition,
        argument_type,
        arguments_pattern,
        take_state,
        call,
    }
}

/// What a function taking its arguments whole (`#[args] search: Search`)
/// reads them into: `::wymcp::__private::Whole<V>`, `V` a struct made here
/// whose `WholeVia` names `ty`, reads it from JSON and gives its schema
/// through the same `Probe` the fields' `SchemaOf` uses; and beside it, the
/// checks that `ty` has a JSON schema and is read from JSON, at the type:
/// one error each that fails, naming the arguments, `what` (`the tool
/// `search``) and the derive to add. `Whole` compiles either way, so
/// neither the handler's bound nor anything else reports it again.
fn whole_argument(ty: &syn::Type, what: &str) -> (TokenStream, TokenStream) {
    let via = Ident::new("__WymcpWhole", Span::call_site());
    let has_schema = Ident::new("__WymcpWholeHasSchema", Span::call_site());
    let deserializes = Ident::new("__WymcpWholeDeserializes", Span::call_site());
    let what = diagnostic_literal(what);
    let schema_message = format!("the arguments `{{Self}}` of {what} have no JSON schema");
    let schema_label = "`{Self}` does not implement `JsonSchema`";
    let schema_note = "add `#[derive(schemars::JsonSchema)]` to `{Self}`";
    let read_message = format!("the arguments `{{Self}}` of {what} cannot be read from JSON");
    let read_label = "`{Self}` does not implement `Deserialize`";
    let read_note = "add `#[derive(serde::Deserialize)]` to `{Self}`";
    let leaf = schema_leaf(ty);
    let asserts = quote_spanned! {leaf.span()=>
        let () = <#leaf as #has_schema>::HAS;
        let () = <#leaf as #deserializes>::HAS;
    };
    let schema_via = schema_via(&via, ty);
    let definition = quote! {
        #schema_via
        impl ::wymcp::__private::WholeVia for #via {
            type Args = #ty;
            fn deserialize<'__wymcp_de, __WymcpDeserializer>(
                deserializer: __WymcpDeserializer,
            ) -> ::std::result::Result<#ty, __WymcpDeserializer::Error>
            where
                __WymcpDeserializer: ::wymcp::__private::serde::Deserializer<'__wymcp_de>,
            {
                #[allow(unused_imports)]
                use ::wymcp::__private::{ProbeDeserialize as _, ProbeNoDeserialize as _};
                (&::wymcp::__private::Probe::<#ty>::new()).deserialize_from(deserializer)
            }
        }
        #[allow(non_camel_case_types)]
        #[diagnostic::on_unimplemented(message = #schema_message, label = #schema_label, note = #schema_note)]
        trait #has_schema {
            const HAS: ();
        }
        impl<T: ?::std::marker::Sized + ::wymcp::__private::schemars::JsonSchema> #has_schema for T {
            const HAS: () = ();
        }
        #[allow(non_camel_case_types)]
        #[diagnostic::on_unimplemented(message = #read_message, label = #read_label, note = #read_note)]
        trait #deserializes {
            const HAS: ();
        }
        impl<T: ::wymcp::__private::serde::de::DeserializeOwned> #deserializes for T {
            const HAS: () = ();
        }
        #asserts
    };
    (definition, quote!(::wymcp::__private::Whole<#via>))
}

/// `text` as it reads in a `#[diagnostic::on_unimplemented]` message: its
/// braces doubled, so a name with one is not read as a parameter.
fn diagnostic_literal(text: &str) -> String {
    text.replace('{', "{{").replace('}', "}}")
}

/// The fields of a generated arguments struct, and beside them, for each,
/// the check that its type has a JSON schema, at the type: one error per
/// parameter without one, naming it, `what` (`the tool `search``) and the
/// derive to add. The field's schema goes through
/// `::wymcp::__private::SchemaOf`, which passes its type's `JsonSchema`
/// through when it has one and compiles when it has none, so neither the
/// struct's derive nor the handler's bound reports it again.
pub(super) fn argument_fields(params: &[Param], what: &str) -> (Vec<TokenStream>, TokenStream) {
    let mut fields = Vec::new();
    let mut checks = TokenStream::new();
    for param in params {
        let Param::Arg { ident, ty, docs } = param else {
            continue;
        };
        let bare = ident.unraw();
        let via = format_ident!("__WymcpSchemaOf_{}", bare, span = Span::call_site());
        let check = format_ident!("__WymcpHasSchema_{}", bare, span = Span::call_site());
        let with = format!("::wymcp::__private::SchemaOf<{via}>");
        fields.push(quote! {
            #(#docs)*
            #[schemars(with = #with)]
            #ident: #ty
        });
        let message = format!(
            "the parameter `{bare}` of {} has no JSON schema",
            diagnostic_literal(what)
        );
        let label = "`{Self}` does not implement `JsonSchema`";
        let note = "add `#[derive(schemars::JsonSchema)]` to the type's definition (for an \
                    `Option<T>` or a `Vec<T>`, to `T`'s)";
        let leaf = schema_leaf(ty);
        let assert = quote_spanned!(leaf.span()=> let () = <#leaf as #check>::HAS;);
        let schema_via = schema_via(&via, ty);
        checks.extend(quote! {
            #schema_via
            #[allow(non_camel_case_types)]
            #[diagnostic::on_unimplemented(message = #message, label = #label, note = #note)]
            trait #check {
                const HAS: ();
            }
            impl<T: ?::std::marker::Sized + ::wymcp::__private::schemars::JsonSchema> #check for T {
                const HAS: () = ();
            }
            #assert
        });
    }
    (fields, checks)
}

/// The type whose schema decides a parameter's: `T` of an `Option<T>` or a
/// `Vec<T>` (nested too), else the type itself. The check is asserted on
/// it so that the error names the parameter: asserted on `Option<T>`,
/// rustc would report `T`'s missing bound in its own words instead. Sound
/// because schemars implements `JsonSchema` for `Option<T>` and `Vec<T>`
/// exactly when `T` has it; only the prelude's spellings (`Option`,
/// `Vec`, and their `std::`/`core::`/`alloc::` paths) are peeled.
/// `struct VIA;` passing `ty`'s `JsonSchema` through when it has one (the
/// `Probe`'s autoref choice), for `::wymcp::__private::SchemaOf<VIA>`.
fn schema_via(via: &Ident, ty: &syn::Type) -> TokenStream {
    quote! {
        #[allow(non_camel_case_types)]
        struct #via;
        impl ::wymcp::__private::SchemaVia for #via {
            fn fns() -> ::wymcp::__private::SchemaFns {
                #[allow(unused_imports)]
                use ::wymcp::__private::{ProbeNoSchema as _, ProbeSchema as _};
                (&::wymcp::__private::Probe::<#ty>::new()).schema_fns()
            }
        }
    }
}

fn schema_leaf(ty: &syn::Type) -> &syn::Type {
    let syn::Type::Path(path) = ty else {
        return ty;
    };
    if path.qself.is_some() {
        return ty;
    }
    let names: Vec<String> = path
        .path
        .segments
        .iter()
        .map(|segment| segment.ident.to_string())
        .collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let peeled = matches!(
        names.as_slice(),
        ["Option" | "Vec"] | ["std" | "core", "option", "Option"] | ["std" | "alloc", "vec", "Vec"]
    );
    if !peeled || path.path.leading_colon.is_some() && names.len() == 1 {
        return ty;
    }
    let Some(last) = path.path.segments.last() else {
        return ty;
    };
    let syn::PathArguments::AngleBracketed(arguments) = &last.arguments else {
        return ty;
    };
    let mut types = arguments.args.iter().filter_map(|argument| match argument {
        syn::GenericArgument::Type(inner) => Some(inner),
        _ => None,
    });
    match (types.next(), types.next(), arguments.args.len()) {
        (Some(inner), None, 1) => schema_leaf(inner),
        _ => ty,
    }
}

/// `add_note` → `AddNote`.
fn camel(snake: &str) -> String {
    snake
        .split('_')
        .filter(|part| !part.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_uppercase().chain(chars).collect()
            })
        })
        .collect()
}
