//! Unit tests of the checking passes of `#[tool]` (`attr`, `ast`, `check`),
//! independent of the tokens `expand` writes: each reads a function (or an
//! impl's methods) and the errors the passes record.

use proc_macro2::TokenStream;
use quote::quote;

use super::ast::{Answer, Param, ToolFn};
use super::{attr, check};
use crate::ctxt::Ctxt;

/// Runs the passes over one function with these keys: the model and every
/// error message, in order.
fn run(args: TokenStream, item: TokenStream) -> (ToolFn, Vec<String>) {
    let cx = Ctxt::new();
    let keys = attr::parse_keys(&cx, args);
    let tool = ToolFn::from_syn(&cx, attr::TOOL, keys, syn::parse2(item).expect("a fn"));
    check::check_name(&cx, &tool);
    (tool, messages(cx))
}

fn messages(cx: Ctxt) -> Vec<String> {
    match cx.check() {
        Ok(()) => Vec::new(),
        Err(error) => error.into_iter().map(|e| e.to_string()).collect(),
    }
}

#[track_caller]
fn assert_one_error(args: TokenStream, item: TokenStream, fragment: &str) {
    let (_, errors) = run(args, item);
    assert_eq!(errors.len(), 1, "expected one error, got {errors:#?}");
    assert!(
        errors[0].contains(fragment),
        "{:?} does not mention {fragment:?}",
        errors[0]
    );
}

#[test]
fn a_valid_tool_is_read_whole() {
    let (tool, errors) = run(
        quote!(
            name = "sum",
            title = "Sum",
            read_only,
            destructive = false,
            icons = ["a", "b"],
            scopes = "s"
        ),
        quote! {
            /// Adds.
            ///
            /// Two lines.
            async fn add(&self, a: i64, cx: &wymcp::Context, #[doc = "x"] b: i64) -> Result<ToolResult, E> { todo!() }
        },
    );
    assert_eq!(errors, Vec::<String>::new());
    assert_eq!(tool.name, "sum");
    assert_eq!(tool.docs.as_deref(), Some("Adds.\n\nTwo lines."));
    assert!(tool.method);
    assert!(matches!(tool.answer, Answer::Fallible(_)));
    let shapes: Vec<&str> = tool
        .params
        .iter()
        .map(|p| match p {
            Param::Arg { .. } => "arg",
            Param::Whole { .. } => "whole",
            Param::Context { by_ref: true } => "&context",
            Param::Context { by_ref: false } => "context",
        })
        .collect();
    assert_eq!(shapes, ["arg", "&context", "arg"]);
    let hints: Vec<_> = tool.keys.hints.iter().map(|(m, v)| (*m, v.value)).collect();
    assert_eq!(hints, [("readOnlyHint", true), ("destructiveHint", false)]);
    assert_eq!(tool.keys.icons.len(), 2);
    assert_eq!(tool.keys.scopes.len(), 1);
}

#[test]
fn args_is_stripped_and_takes_the_whole_object() {
    let (tool, errors) = run(
        quote!(),
        quote!(
            async fn f(#[args] s: Search) -> ToolResult {
                todo!()
            }
        ),
    );
    assert_eq!(errors, Vec::<String>::new());
    assert!(matches!(tool.params[..], [Param::Whole { .. }]));
    let written = quote::ToTokens::to_token_stream(&tool.item).to_string();
    assert!(!written.contains("args"), "{written}");
    assert!(matches!(tool.answer, Answer::Infallible(_)));
}

#[test]
fn a_fn_that_is_not_async_is_refused() {
    assert_one_error(
        quote!(),
        quote!(
            fn f() -> ToolResult {
                todo!()
            }
        ),
        "goes on an `async fn`",
    );
}

#[test]
fn a_fn_answering_nothing_is_refused() {
    assert_one_error(
        quote!(),
        quote!(
            async fn f() {}
        ),
        "answers nothing",
    );
}

#[test]
fn a_generic_fn_is_refused() {
    assert_one_error(
        quote!(),
        quote!(
            async fn f<T>(t: T) -> ToolResult {
                todo!()
            }
        ),
        "not generic",
    );
}

#[test]
fn unsupported_parameters_are_refused() {
    let item = quote!(
        async fn f((a, b): (i64, i64)) -> ToolResult {
            todo!()
        }
    );
    assert_one_error(quote!(), item, "unsupported parameter:");
    let item = quote!(
        async fn f(text: &str) -> ToolResult {
            todo!()
        }
    );
    assert_one_error(quote!(), item, "unsupported parameter type");
    let item = quote!(
        async fn f(&mut self) -> ToolResult {
            todo!()
        }
    );
    assert_one_error(quote!(), item, "takes `&self`");
    let item = quote!(
        async fn f(a: Context, b: Context) -> ToolResult {
            todo!()
        }
    );
    assert_one_error(quote!(), item, "the context is already a parameter");
    let item = quote!(
        async fn f(a: i64, #[args] s: Search) -> ToolResult {
            todo!()
        }
    );
    assert_one_error(quote!(), item, "`#[args]` takes the whole arguments object");
    let item = quote!(
        async fn f(#[args] s: Search, a: i64) -> ToolResult {
            todo!()
        }
    );
    assert_one_error(quote!(), item, "`#[args]` took the whole arguments object");
}

#[test]
fn unknown_and_repeated_keys_are_refused() {
    let item = quote!(
        async fn f() -> ToolResult {
            todo!()
        }
    );
    assert_one_error(quote!(colour = "red"), item.clone(), "unknown key `colour`");
    assert_one_error(
        quote!(read_only, read_only),
        item.clone(),
        "`read_only` is repeated",
    );
    assert_one_error(
        quote!(icon = "a", icons = ["b"]),
        item.clone(),
        "`icon` and `icons`",
    );
    assert_one_error(quote!(title = 3), item.clone(), "is a string literal");
    assert_one_error(quote!(read_only = "yes"), item.clone(), "is a flag");
    assert_one_error(quote!(name = ""), item.clone(), "is empty");
    assert_one_error(
        quote!(task = "sometimes"),
        item,
        "is \"optional\", \"required\" or \"forbidden\"",
    );
}

#[test]
fn task_names_the_task_support() {
    let item = quote!(
        async fn f() -> ToolResult {
            todo!()
        }
    );
    for (value, variant) in [
        ("optional", "Optional"),
        ("required", "Required"),
        ("forbidden", "Forbidden"),
    ] {
        let (tool, errors) = run(quote!(task = #value), item.clone());
        assert_eq!(errors, Vec::<String>::new());
        assert_eq!(
            tool.keys.task.map(|t| t.to_string()).as_deref(),
            Some(variant)
        );
    }
    let (tool, _) = run(quote!(), item);
    assert!(tool.keys.task.is_none());
}

#[test]
fn a_name_the_spec_refuses_is_refused() {
    let item = quote!(
        async fn f() -> ToolResult {
            todo!()
        }
    );
    assert_one_error(
        quote!(name = "has space"),
        item,
        "not allowed in a tool name",
    );
}

/// Every mistake of one function is reported, in the order written.
#[test]
fn every_mistake_is_reported_at_once() {
    let (_, errors) = run(
        quote!(colour = "red", read_only, read_only),
        quote!(
            fn f(text: &str, (a, b): (i64, i64)) -> ToolResult {
                todo!()
            }
        ),
    );
    assert_eq!(errors.len(), 5, "{errors:#?}");
}

#[test]
fn two_tools_of_one_name_are_refused() {
    let cx = Ctxt::new();
    let read = |keys: TokenStream, item: TokenStream| {
        ToolFn::from_syn(
            &cx,
            attr::TOOL,
            attr::parse_keys(&cx, keys),
            syn::parse2(item).expect("a fn"),
        )
    };
    let tools = vec![
        (
            0,
            read(
                quote!(),
                quote!(
                    async fn add(&self) -> ToolResult {
                        todo!()
                    }
                ),
            ),
        ),
        (
            1,
            read(
                quote!(name = "add"),
                quote!(
                    async fn plus(&self) -> ToolResult {
                        todo!()
                    }
                ),
            ),
        ),
        (
            2,
            read(
                quote!(),
                quote!(
                    async fn other(&self) -> ToolResult {
                        todo!()
                    }
                ),
            ),
        ),
    ];
    check::check_unique(&cx, &tools);
    let errors = messages(cx);
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert!(
        errors[0].contains("two tools named `add`: `add` and `plus`"),
        "{}",
        errors[0]
    );
}

/// The variables of a URI template, as `#[resource_template]` checks its
/// parameters against them: simple and reserved expansion, lists, modifiers.
#[test]
fn a_templates_variables_are_read() {
    use super::others::variables;
    assert_eq!(variables("notes://{id}"), ["id"]);
    assert_eq!(variables("files://{+path}/x/{a,b*}"), ["path", "a", "b"]);
    assert_eq!(variables("q{?page:3}"), ["page"]);
    assert_eq!(variables("notes://all"), Vec::<String>::new());
    assert_eq!(variables("broken{id"), Vec::<String>::new());
}

/// The reader's messages name the attribute the method is written under.
#[test]
fn the_messages_name_the_attribute() {
    let cx = Ctxt::new();
    let item = syn::parse2(quote!(
        fn summarize<T>(&mut self) {}
    ))
    .expect("a fn");
    let _ = ToolFn::from_syn(&cx, "prompt", attr::Keys::default(), item);
    let errors = messages(cx);
    assert_eq!(errors.len(), 4, "{errors:#?}");
    assert!(
        errors
            .iter()
            .all(|e| !e.contains("#[tool]") && !e.contains("tool `")),
        "{errors:#?}"
    );
    assert!(
        errors[0].starts_with("`#[prompt]` goes on an `async fn`"),
        "{errors:#?}"
    );
    assert!(
        errors[2].starts_with("prompt `summarize` answers nothing"),
        "{errors:#?}"
    );
}
