//! Snapshots of what `#[tool]` and `#[tools]` expand to, pretty-printed, so
//! a reviewer can read the generated `NAME_tool()`: the arguments struct,
//! the builder calls, the handler. As `#[pipeline]`'s (`src/expansion.rs`):
//! the expansion functions called on `proc_macro2` tokens, unparsed with
//! `prettyplease`; the snapshots are `snapshots/*.snap` beside this file.

use proc_macro2::TokenStream;
use quote::quote;

use super::expand;

fn unparse(tokens: TokenStream) -> String {
    let file = syn::parse2(tokens).expect("a valid file");
    prettyplease::unparse(&file)
}

/// The function as written, then what `#[tool(args)]` makes of it.
fn expand_tool(args: TokenStream, item: TokenStream) -> String {
    let input = unparse(item.clone());
    let written = args.to_string();
    let output = unparse(expand::tool(args, item));
    format!("// #[wymcp::tool({written})]\n{input}\n// expands to:\n\n{output}")
}

/// The impl as written, then what `#[tools]` makes of it.
fn expand_tools(item: TokenStream) -> String {
    let input = unparse(item.clone());
    let output = unparse(expand::tools(TokenStream::new(), item));
    format!("// #[wymcp::tools]\n{input}\n// expands to:\n\n{output}")
}

macro_rules! assert_expansion {
    ($expansion:expr) => {
        insta::with_settings!({ omit_expression => true }, {
            insta::assert_snapshot!($expansion);
        })
    };
}

#[test]
fn a_tool_with_named_arguments_and_keys() {
    assert_expansion!(expand_tool(
        quote!(
            read_only,
            title = "Add",
            scopes = ["math"],
            task = "optional"
        ),
        quote! {
            /// Adds two integers.
            pub async fn add(
                /// The first term.
                a: i64,
                b: Option<i64>,
            ) -> Structured<Sum> {
                Structured(Sum { sum: a + b.unwrap_or(0) })
            }
        }
    ));
}

#[test]
fn a_tool_taking_its_arguments_whole_and_the_context() {
    assert_expansion!(expand_tool(
        quote!(name = "search", icon = "https://example.com/s.png"),
        quote! {
            async fn search_notes(#[args] search: Search, cx: &Context) -> Result<ToolResult, HandlerError> {
                todo!()
            }
        }
    ));
}

#[test]
fn a_tool_taking_nothing() {
    assert_expansion!(expand_tool(
        TokenStream::new(),
        quote! {
            async fn ping() -> ToolResult {
                ToolResult::text("pong")
            }
        }
    ));
}

#[test]
fn methods_of_the_state_type() {
    assert_expansion!(expand_tools(quote! {
        impl Notes {
            /// Adds a note.
            #[tool(scopes = ["notes:write"])]
            pub async fn add_note(&self, text: String, cx: Context) -> Structured<Added> {
                todo!()
            }

            #[wymcp::tool(read_only)]
            async fn count(&self) -> ToolResult {
                todo!()
            }

            fn helper(&self) {}
        }
    }));
}

/// On error: the function, a stub `NAME_tool()`, and the errors.
#[test]
fn a_tool_with_errors_expands_to_a_stub_and_errors() {
    assert_expansion!(expand_tool(
        quote!(read_only, colour = "red"),
        quote! {
            fn add((a, b): (i64, i64)) -> ToolResult {
                todo!()
            }
        }
    ));
}

/// `#[resource("uri")]` and `#[prompt]` beside a tool: `NAME_resource()`,
/// `NAME_prompt()` (its arguments gathered as a tool's), and the lists.
#[test]
fn resources_and_prompts_of_the_state_type() {
    assert_expansion!(expand_tools(quote! {
        impl Notes {
            /// Every note, one per line.
            #[resource("notes://all", name = "all notes", mime_type = "text/plain", scopes = ["notes:read"])]
            async fn all(&self) -> String {
                todo!()
            }

            #[wymcp::resource("notes://count", title = "Count")]
            async fn count(&self, cx: &Context) -> Result<Vec<ResourceContents>, HandlerError> {
                todo!()
            }

            /// Asks for a summary of a note.
            #[prompt(scopes = ["notes:read"])]
            async fn summarize(
                &self,
                /// The note's id.
                id: u64,
                words: Option<u32>,
            ) -> Result<PromptResult, HandlerError> {
                todo!()
            }

            #[prompt(name = "hello")]
            async fn greet() -> PromptResult {
                todo!()
            }
        }
    }));
}

/// `#[resource_template("uri{var}")]`: its variables, typed parameters,
/// gathered into a struct for `ResourceTemplate::handler`.
#[test]
fn a_resource_template_of_the_state_type() {
    assert_expansion!(expand_tools(quote! {
        impl Notes {
            /// A note, by id.
            #[resource_template("notes://{id}/{+path}", name = "note", scopes = ["notes:read"])]
            async fn note(&self, id: u64, path: String, cx: Context) -> Result<String, HandlerError> {
                todo!()
            }
        }
    }));
}

/// `#[complete(…)]`: `NAME_completion()`, a `Completer` of one key whose
/// handler passes `value` and `context` to the method; `completer()` and
/// `handlers()` gather them.
#[test]
fn completion_methods_of_the_state_type() {
    assert_expansion!(expand_tools(quote! {
        impl Notes {
            #[prompt]
            async fn summarize(&self, id: u64) -> PromptResult {
                todo!()
            }

            #[complete(prompt = "summarize", argument = "id")]
            async fn ids(&self, value: String, context: BTreeMap<String, String>) -> Completions {
                todo!()
            }
        }
    }));
}
