//! The other methods of a `#[tools]` impl: `#[resource("uri")]` (a static
//! resource read by the method) and `#[prompt]` (a prompt rendered by it).
//!
//! A method is read with the tool's reader (`ast::ToolFn`: its parameters,
//! its answer, whether it takes `&self`); this module reads the keys of the
//! two attributes, applies their own rules (a resource takes no argument; a
//! URI with `{` is a template) and writes `NAME_resource()` /
//! `NAME_prompt()`, as `expand` writes `NAME_tool()`.

use proc_macro2::{Ident, Span, TokenStream};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::parse::{ParseStream, Parser};
use syn::spanned::Spanned;
use syn::{Attribute, LitStr, Meta, Token};

use super::ast::{Answer, Param, ToolFn};
use crate::ctxt::Ctxt;

/// `#[resource("uri", …)]` on a method.
pub const RESOURCE: &str = "resource";
/// `#[prompt(…)]` on a method.
pub const PROMPT: &str = "prompt";
/// `#[resource_template("uri{var}", …)]` on a method.
pub const TEMPLATE: &str = "resource_template";

/// Which of the two a method is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    Resource,
    Template,
    Prompt,
}

impl Which {
    /// The attribute's name.
    /// What it serves, for messages: `prompt`, `resource template`, `resource`.
    pub fn noun(self) -> &'static str {
        match self {
            Which::Resource => "resource",
            Which::Template => "resource template",
            Which::Prompt => "prompt",
        }
    }

    pub fn tag(self) -> &'static str {
        match self {
            Which::Resource => RESOURCE,
            Which::Template => TEMPLATE,
            Which::Prompt => PROMPT,
        }
    }

    /// Whether its first argument is a URI (or URI template).
    fn has_uri(self) -> bool {
        matches!(self, Which::Resource | Which::Template)
    }
}

/// The keys of `#[resource]` or `#[prompt]`.
#[derive(Debug, Default, Clone)]
pub struct Keys {
    /// The resource's URI (`#[resource]` only, positional).
    pub uri: Option<LitStr>,
    pub name: Option<LitStr>,
    pub title: Option<LitStr>,
    pub description: Option<LitStr>,
    /// `#[resource]` only.
    pub mime_type: Option<LitStr>,
    pub scopes: Vec<LitStr>,
}

/// Which of the two an attribute is, if either (`#[resource]`,
/// `#[wymcp::prompt]`, …).
pub fn which(attr: &Attribute) -> Option<Which> {
    let path = attr.path();
    let segments: Vec<_> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    let last = match segments.as_slice() {
        [one] if path.leading_colon.is_none() => one,
        [krate, last] if krate == "wymcp" => last,
        _ => return None,
    };
    match last.as_str() {
        RESOURCE => Some(Which::Resource),
        TEMPLATE => Some(Which::Template),
        PROMPT => Some(Which::Prompt),
        _ => None,
    }
}

/// Reads the keys of one `#[resource]` or `#[prompt]`.
pub fn parse_attr(cx: &Ctxt, which: Which, attr: &Attribute) -> Keys {
    let tokens = match &attr.meta {
        Meta::List(list) => list.tokens.clone(),
        Meta::Path(_) => TokenStream::new(),
        Meta::NameValue(_) => {
            cx.error_spanned_by(
                attr,
                format!(
                    "`#[{}]` takes its keys in parentheses: `#[{}(name = \"…\")]`",
                    which.tag(),
                    which.tag()
                ),
            );
            return Keys::default();
        }
    };
    let mut keys = Keys::default();
    let parser = |input: ParseStream<'_>| -> syn::Result<()> {
        if which.has_uri() {
            if !input.peek(LitStr) {
                return Err(input.error(uri_first(which)));
            }
            keys.uri = Some(input.parse()?);
            if input.is_empty() {
                return Ok(());
            }
            input.parse::<Token![,]>()?;
        }
        let mut seen: Vec<String> = Vec::new();
        let keys_parser = syn::meta::parser(|meta| {
            let key = meta.path.to_token_stream().to_string().replace(' ', "");
            if seen.contains(&key) {
                cx.error_spanned_by(
                    &meta.path,
                    format!(
                        "`{key}` is repeated in `#[{}]`: give each key once; remove this one",
                        which.tag()
                    ),
                );
            }
            seen.push(key.clone());
            let slot = match key.as_str() {
                "name" => &mut keys.name,
                "title" => &mut keys.title,
                "description" => &mut keys.description,
                "mime_type" if which.has_uri() => &mut keys.mime_type,
                "scopes" => {
                    keys.scopes.extend(strings(&meta, which, &key)?);
                    return Ok(());
                }
                _ => {
                    let known = match which {
                        Which::Resource | Which::Template => {
                            "the URI first, then `name`, `title`, `description`, `mime_type`, \
                             `scopes`"
                        }
                        Which::Prompt => "`name`, `title`, `description`, `scopes`",
                    };
                    return Err(syn::Error::new_spanned(
                        &meta.path,
                        format!(
                            "unknown key `{key}` in `#[{}]`: its keys are {known}",
                            which.tag()
                        ),
                    ));
                }
            };
            let value = string(&meta, which, &key)?;
            if value.value().trim().is_empty() {
                cx.error_spanned_by(
                    &value,
                    format!(
                        "`{key}` in `#[{}]` is empty: give it a value or remove the key",
                        which.tag()
                    ),
                );
            }
            *slot = Some(value);
            Ok(())
        });
        keys_parser.parse2(input.parse::<TokenStream>()?)
    };
    if let Err(error) = parser.parse2(tokens) {
        cx.syn_error(error);
    }
    match (which, &keys.uri) {
        (Which::Resource, Some(uri)) if uri.value().contains('{') => cx.error_spanned_by(
            uri,
            "this URI has a `{variable}`: it names a family of resources, a template; write \
             `#[resource_template(\"…\")]` and take each variable as a parameter",
        ),
        (Which::Template, Some(uri)) if !uri.value().contains('{') => cx.error_spanned_by(
            uri,
            "this template has no `{variable}`: it names one resource; write \
             `#[resource(\"…\")]`",
        ),
        (_, Some(uri)) if uri.value().trim().is_empty() => cx.error_spanned_by(
            uri,
            format!(
                "the URI of a `#[{}]` is empty: name the resource",
                which.tag()
            ),
        ),
        (Which::Resource | Which::Template, None) if !cx.has_errors() => {
            cx.error_spanned_by(attr, uri_first(which));
        }
        _ => {}
    }
    keys
}

fn uri_first(which: Which) -> String {
    let example = if which == Which::Template {
        "notes://{id}"
    } else {
        "notes://all"
    };
    format!(
        "`#[{}]` names its URI first: `#[{}(\"{example}\")]`",
        which.tag(),
        which.tag()
    )
}

/// The variable names of a URI template: `{id}`, `{+path}`, `{a,b}`.
pub fn variables(template: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else {
            break;
        };
        let inside = &rest[open + 1..open + close];
        let inside = inside.trim_start_matches(|c: char| "+#./;?&".contains(c));
        for name in inside.split(',') {
            let name = name.split(':').next().unwrap_or(name).trim_end_matches('*');
            if !name.is_empty() {
                names.push(name.to_owned());
            }
        }
        rest = &rest[open + close + 1..];
    }
    names
}

fn string(meta: &syn::meta::ParseNestedMeta<'_>, which: Which, key: &str) -> syn::Result<LitStr> {
    let message = || {
        format!(
            "`{key}` in `#[{}]` is a string literal: `{key} = \"…\"`",
            which.tag()
        )
    };
    let value = meta
        .value()
        .map_err(|e| syn::Error::new(e.span(), message()))?;
    value
        .parse::<LitStr>()
        .map_err(|e| syn::Error::new(e.span(), message()))
}

fn strings(
    meta: &syn::meta::ParseNestedMeta<'_>,
    which: Which,
    key: &str,
) -> syn::Result<Vec<LitStr>> {
    let message = || {
        format!(
            "`{key}` in `#[{}]` is a list of string literals: `{key} = [\"…\", \"…\"]`",
            which.tag()
        )
    };
    let value = meta
        .value()
        .map_err(|e| syn::Error::new(e.span(), message()))?;
    if value.peek(LitStr) {
        return Ok(vec![value.parse()?]);
    }
    let content;
    syn::bracketed!(content in value);
    let list = syn::punctuated::Punctuated::<LitStr, Token![,]>::parse_terminated(&content)
        .map_err(|e| syn::Error::new(e.span(), message()))?;
    Ok(list.into_iter().collect())
}

/// One `#[resource]` or `#[prompt]` method: its keys and the function read.
#[derive(Debug, Clone)]
pub struct Other {
    pub which: Which,
    pub keys: Keys,
    pub function: ToolFn,
}

impl Other {
    /// The rules of the two, beyond the function's own: a resource takes
    /// no argument (its URI is fixed); neither takes `#[args]`-less
    /// arguments of a resource.
    pub fn check(&self, cx: &Ctxt) {
        if self.which == Which::Resource {
            for param in &self.function.params {
                if let Param::Arg { ident, .. } = param {
                    cx.error_spanned_by(
                        ident,
                        format!(
                            "a `#[resource]` takes no argument: its URI is fixed; `{ident}` \
                             belongs to a `#[resource_template(\"…/{{{ident}}}\")]`"
                        ),
                    );
                }
            }
            for param in &self.function.params {
                if let Param::Whole { ty } = param {
                    cx.error_spanned_by(ty, "a `#[resource]` takes no argument: its URI is fixed");
                }
            }
        }
        if self.which == Which::Template
            && let Some(uri) = &self.keys.uri
        {
            let names = variables(&uri.value());
            let whole = self
                .function
                .params
                .iter()
                .any(|p| matches!(p, Param::Whole { .. }));
            let mut taken = Vec::new();
            for param in &self.function.params {
                if let Param::Arg { ident, .. } = param {
                    let name = ident.unraw().to_string();
                    if !names.contains(&name) {
                        cx.error_spanned_by(
                            ident,
                            format!(
                                "`{name}` is no variable of `{}`: a template's parameters are its \
                                 variables ({}), by name",
                                uri.value(),
                                names.join(", ")
                            ),
                        );
                    }
                    taken.push(name);
                }
            }
            for name in names.iter().filter(|n| !whole && !taken.contains(n)) {
                cx.error_spanned_by(
                    uri,
                    format!(
                        "the variable `{name}` of this template is no parameter of `{}`: take it \
                         as `{name}: String` (or any type its text reads into)",
                        self.function.ident()
                    ),
                );
            }
        }
    }

    /// `NAME_resource` or `NAME_prompt`.
    pub fn builder_ident(&self) -> Ident {
        format_ident!("{}_{}", self.function.ident().unraw(), self.which.tag())
    }

    /// The name it is listed under: `name = "…"` or the method's.
    pub fn name(&self) -> String {
        self.keys
            .name
            .as_ref()
            .map_or_else(|| self.function.ident().unraw().to_string(), LitStr::value)
    }

    /// On error: a builder of an empty item, so callers still compile.
    pub fn stub(&self) -> TokenStream {
        let vis = &self.function.item.vis;
        let ident = self.builder_ident();
        let name = self.name();
        match self.which {
            Which::Resource => {
                let uri = self
                    .keys
                    .uri
                    .as_ref()
                    .map_or_else(String::new, LitStr::value);
                quote!(#vis fn #ident() -> ::wymcp::Resource { ::wymcp::Resource::new(#uri, #name) })
            }
            Which::Template => {
                let uri = self
                    .keys
                    .uri
                    .as_ref()
                    .map_or_else(String::new, LitStr::value);
                quote!(#vis fn #ident() -> ::wymcp::ResourceTemplate {
                    ::wymcp::ResourceTemplate::new(#uri, #name)
                })
            }
            Which::Prompt => {
                quote!(#vis fn #ident() -> ::wymcp::Prompt { ::wymcp::Prompt::new(#name) })
            }
        }
    }

    /// The builder: the item with its keys, and the handler that calls the
    /// method.
    pub fn builder(&self) -> TokenStream {
        let function = &self.function;
        let vis = &function.item.vis;
        let ident = function.ident();
        let builder_ident = self.builder_ident();
        let name = self.name();
        let context = Ident::new("context", Span::mixed_site());
        let arguments = Ident::new("arguments", Span::mixed_site());
        let state = Ident::new("state", Span::mixed_site());
        let uri = Ident::new("uri", Span::mixed_site());

        let super::expand::Invocation {
            definition,
            argument_type,
            arguments_pattern,
            take_state,
            call,
        } = super::expand::invocation(
            &function.params,
            ident,
            function.method,
            true,
            &format!("the {} `{name}`", self.which.noun()),
            (&arguments, &context, &state),
        );
        let (ty, fallible) = match &function.answer {
            Answer::Fallible(ty) => (ty, true),
            Answer::Infallible(ty) => (ty, false),
            Answer::Nothing => unreachable!("reported, and stubbed"),
        };
        let handler = Ident::new("handler", ty.span());

        let description = self
            .keys
            .description
            .as_ref()
            .map(LitStr::value)
            .or_else(|| function.docs.clone());
        let mut chain = match self.which {
            Which::Resource => {
                let uri_value = self
                    .keys
                    .uri
                    .as_ref()
                    .map_or_else(String::new, LitStr::value);
                quote!(::wymcp::Resource::new(#uri_value, #name))
            }
            Which::Template => {
                let uri_value = self
                    .keys
                    .uri
                    .as_ref()
                    .map_or_else(String::new, LitStr::value);
                quote!(::wymcp::ResourceTemplate::new(#uri_value, #name))
            }
            Which::Prompt => quote!(::wymcp::Prompt::new(#name)),
        };
        if let Some(title) = &self.keys.title {
            chain.extend(quote!(.title(#title)));
        }
        if let Some(description) = description {
            chain.extend(quote!(.description(#description)));
        }
        if let Some(mime_type) = &self.keys.mime_type {
            chain.extend(quote!(.mime_type(#mime_type)));
        }
        if !self.keys.scopes.is_empty() {
            let scopes = &self.keys.scopes;
            chain.extend(quote!(.scopes([#(#scopes),*])));
        }
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
        let doc;
        let handler_tokens = match self.which {
            Which::Resource | Which::Template => {
                let mime_type = self.keys.mime_type.as_ref().map_or_else(
                    || quote!(::std::option::Option::None),
                    |mime_type| quote!(::std::option::Option::Some(#mime_type)),
                );
                let answer = if fallible {
                    quote_spanned!(ty.span()=> ::wymcp::__private::resource_fallible(#uri, #mime_type, #call.await))
                } else {
                    quote_spanned!(ty.span()=> ::wymcp::__private::resource_infallible(#uri, #mime_type, #call.await))
                };
                if self.which == Which::Resource {
                    doc = format!(
                        " The resource `{name}`, read by [`{ident}`](Self::{ident}) (generated \
                         by `#[resource]`): register it with `ServerBuilder::resource`."
                    );
                    quote! {
                        #chain.#handler(|#uri: ::std::string::String, #context_pattern: ::wymcp::Context| async move {
                            #take_state
                            #answer
                        })
                    }
                } else {
                    doc = format!(
                        " The resource template `{name}`, read by [`{ident}`](Self::{ident}) \
                         (generated by `#[resource_template]`): register it with \
                         `ServerBuilder::resource_template`."
                    );
                    quote! {
                        #definition
                        #chain.#handler(|#uri: ::std::string::String, #arguments_pattern: #argument_type, #context_pattern: ::wymcp::Context| async move {
                            #take_state
                            #answer
                        })
                    }
                }
            }
            Which::Prompt => {
                let answer = if fallible {
                    quote_spanned!(ty.span()=> ::wymcp::__private::prompt_fallible(#call.await))
                } else {
                    quote_spanned!(ty.span()=> ::wymcp::__private::prompt_infallible(#call.await))
                };
                doc = format!(
                    " The prompt `{name}`, rendered by [`{ident}`](Self::{ident}) (generated by \
                     `#[prompt]`): register it with `ServerBuilder::prompt`."
                );
                quote! {
                    #definition
                    #chain.#handler(|#arguments_pattern: #argument_type, #context_pattern: ::wymcp::Context| async move {
                        #take_state
                        #answer
                    })
                }
            }
        };
        let handler_tokens = if function.method {
            let what = match self.which {
                Which::Resource | Which::Template => format!(
                    "{} `{}`",
                    self.which.tag().replace('_', " "),
                    self.keys
                        .uri
                        .as_ref()
                        .map_or_else(String::new, LitStr::value)
                ),
                Which::Prompt => format!("prompt `{name}`"),
            };
            quote!(::wymcp::__private::method_of::<Self, _>({ #handler_tokens }, #what))
        } else {
            handler_tokens
        };
        let returns = match self.which {
            Which::Resource => quote!(::wymcp::Resource),
            Which::Template => quote!(::wymcp::ResourceTemplate),
            Which::Prompt => quote!(::wymcp::Prompt),
        };
        quote! {
            #[doc = #doc]
            #[must_use]
            #vis fn #builder_ident() -> #returns {
                #handler_tokens
            }
        }
    }
}
