//! The attributes of wymcp: `#[pipeline]` (a POST chain) and `#[tool]` /
//! `#[tools]` (an `async fn` served as an MCP tool). Use them through
//! `wymcp`, which re-exports them; generated code names only `::wymcp` and
//! `::wymcp::__private`.
//!
//! `#[tool]` lives in its own module, `tool`, with passes of its own.
//! `#[pipeline]`'s passes, in order: `ast` reads the module into stages and helper
//! items, `attr` reads each stage's tag, `check` applies the rules across
//! stages, and `expand` writes the tokens. Every pass records its errors in
//! one `ctxt::Ctxt`, so a build reports every mistake at once.

use proc_macro::TokenStream;

mod ast;
mod attr;
mod check;
mod ctxt;
mod expand;
mod tool;

#[cfg(test)]
mod expansion;
#[cfg(test)]
mod tests;

/// Declares a POST chain: the stages of a module, in the order written.
///
/// ```ignore
/// #[wymcp::pipeline]
/// pub mod post {
///     use wymcp::stages;
///
///     #[wire_check]
///     pub type OriginCheck = stages::OriginCheck;
///     #[body_bound(reason = "the parse step is what reads the body")]
///     pub async fn parse_body(ex: &mut stages::Exchange<'_>) -> stages::Flow {
///         stages::parse_body(ex).await
///     }
///     pub type Validate = stages::Validate;
///     pub type Dispatch = stages::Dispatch;
/// }
/// ```
///
/// (The README's example of a chain is compiled as a doctest of `wymcp`.)
///
/// # Stages
///
/// Every `type` item of the module is a stage: it names a unit type that
/// implements `wymcp::Stage`. Every `async fn` is an inline stage, with the
/// signature `async fn(&mut Exchange<'_>) -> Flow`. Everything else (`use`,
/// `const`, `struct`, `impl`, a plain `fn`, …) is a helper item, passed
/// through untouched.
///
/// # The rules
///
/// The chain holds the wire-check invariant: every stage before `Validate`
/// is tagged `#[wire_check]` (a transport-level check that answers before
/// the body is trusted) or `#[body_bound(reason = "…")]` (it reads the body,
/// for that reason). A build fails, with every mistake of the module reported
/// at once and each pointing at its tag or stage, when:
///
/// 1. a `#[wire_check]` stage comes after `Validate`;
/// 2. a stage before `Validate` has no tag;
/// 3. the chain has no `Validate`, or two. `Validate` is wymcp's own
///    `wymcp::stages::Validate`, recognised by the type system whatever the
///    stage is called (`pub type Schema = wymcp::stages::Validate;` is it) and
///    nothing else can pose as it (a type of your own named `Validate` is not);
/// 4. `#[body_bound]` has no `reason`, an empty one, or a key other than
///    `reason`; a stage carries both tags, or one twice; a tag sits on a helper
///    item. Tags mean something only before `Validate`: `Validate` itself takes
///    none, and `#[body_bound]` after it is refused;
/// 5. the module has no inline body (`mod post;`), or a stage carries `cfg` or
///    `cfg_attr` (the macro sees the chain before `cfg` is applied);
/// 6. `#[wire_check]` or `#[body_bound]` is used outside a `#[pipeline]`
///    module;
///
/// and when an item of the module is named `handle`, `CHAIN` or `router`.
///
/// # What it generates, inside the module
///
/// * `pub async fn handle(server: &Server, request: Request) -> Response`:
///   the stages called in declared order, as straight-line code, each in its
///   own `tracing` span, stopping at the first that answers;
/// * `pub const CHAIN: &[StageInfo]`: each stage's name, role (wire check,
///   body-bound with its reason, validate, after) and source line;
/// * `pub fn router(server: impl Into<Arc<Server>>) -> axum::Router`: POST on
///   the server's endpoint runs `handle`; every other verb is answered 405
///   with `Allow: POST` and runs no stage.
///
/// Generated code names its dependencies only through `::wymcp::__private`.
#[proc_macro_attribute]
pub fn pipeline(args: TokenStream, input: TokenStream) -> TokenStream {
    expand::pipeline(args.into(), input.into()).into()
}

/// Tags a stage before `Validate` as a wire check: a transport-level check
/// that answers before the body is trusted.
///
/// Read by `#[pipeline]`, which removes it; only valid on a stage inside a
/// `#[pipeline]` module, before `Validate`. Anywhere else it is a compile
/// error.
#[proc_macro_attribute]
pub fn wire_check(_args: TokenStream, input: TokenStream) -> TokenStream {
    outside_pipeline(attr::WIRE_CHECK, input)
}

/// Tags a stage before `Validate` as body-bound, with the reason it reads the
/// body: `#[body_bound(reason = "…")]`.
///
/// Read by `#[pipeline]`, which removes it; only valid on a stage inside a
/// `#[pipeline]` module, before `Validate`. Anywhere else it is a compile
/// error.
#[proc_macro_attribute]
pub fn body_bound(_args: TokenStream, input: TokenStream) -> TokenStream {
    outside_pipeline(attr::BODY_BOUND, input)
}

/// A tag met on its own: the item stays (so nothing else fails to resolve)
/// and the tag is refused.
fn outside_pipeline(tag: &str, input: TokenStream) -> TokenStream {
    let message = format!(
        "`#[{tag}]` is only valid on a stage inside a `#[wymcp::pipeline]` module, where it \
         is read relative to `Validate`; move the stage into such a module or remove the tag"
    );
    let error = syn::Error::new(proc_macro2::Span::call_site(), message).to_compile_error();
    let input = proc_macro2::TokenStream::from(input);
    quote::quote!(#error #input).into()
}

/// Serves an `async fn` as an MCP tool, beside it: for `fn add`, the
/// macro adds `fn add_tool() -> wymcp::Tool`, for `ServerBuilder::tool`.
///
/// ```ignore
/// /// Adds two numbers.
/// #[wymcp::tool(read_only, title = "Add")]
/// async fn add(a: i64, b: i64) -> Structured<Sum> {
///     Structured(Sum { sum: a + b })
/// }
///
/// let server = Server::builder().tool(add_tool()).build()?;
/// ```
///
/// (The guide's examples, `docs/guide.md`, are compiled as doctests of `wymcp`.)
///
/// # What it reads
///
/// * **The name**: the function's, unless `name = "…"` gives another. It is
///   held to the spec's rule (1 to 128 of `A-Z a-z 0-9 _ - .`) at compile time.
/// * **The description**: the doc comment, unless `description = "…"`.
/// * **The arguments**: each parameter `name: Type` is a property of the
///   `inputSchema`, gathered into a generated struct deriving `Deserialize`
///   and `JsonSchema` (an `Option` is optional; a parameter's doc comment is
///   its description); or one parameter marked
///   `#[args]` (`#[args] search: Search`) is the whole arguments object, its
///   type's schema the tool's. No parameter: `wymcp::NoArgs`.
/// * **The context**: a parameter of type `Context` (or `&Context`), anywhere.
/// * **The answer**: a `ToolResult`, a `Structured<T>` (whose `T` gives the
///   `outputSchema`), or a `Result` of either whose error converts into a
///   `HandlerError` (`HandlerError::execution` is the failure the model reads).
/// * **A method**: with `&self`, the function is a method of the server's
///   state type (given with `ServerBuilder::state`), read from the context
///   for each call. Put `#[wymcp::tools]` on the impl to get `tools()`.
///
/// # Keys
///
/// `name = "…"`, `title = "…"`, `description = "…"`; the hints `read_only`,
/// `destructive`, `idempotent`, `open_world` (each a flag, or `= false`),
/// which become the tool's `annotations`; `icon = "…"` or
/// `icons = ["…", …]`; `scopes = ["…", …]`, what a caller's token must hold;
/// `task = "optional"` (or `"required"`, `"forbidden"`, the default), whether
/// a call may run as a task of the tasks extension (`TaskSupport`).
///
/// # Mistakes
///
/// Reported all at once, each at its span: a function that is not `async`,
/// generic, or answers nothing; a parameter that is not `name: Type`, a
/// borrowed or `impl Trait` argument type, `#[args]` beside other
/// arguments, the context twice, a receiver other than `&self`; an unknown
/// or repeated key; a name the spec refuses; two tools of one `#[tools]`
/// impl with one name.
#[proc_macro_attribute]
pub fn tool(args: TokenStream, input: TokenStream) -> TokenStream {
    tool::tool(args.into(), input.into()).into()
}

/// Serves the methods of an `impl` block of the server's state type: its
/// `#[tool]`s, `#[resource]`s, `#[resource_template]`s, `#[prompt]`s and
/// `#[complete]`s; adds `handlers()`, every one of them, for
/// `ServerBuilder::handlers`, and one list per kind (`tools()`, …) to pick
/// a subset.
///
/// ```ignore
/// #[wymcp::handlers]
/// impl Notes {
///     /// Adds a note.
///     #[tool(scopes = ["notes:write"])]
///     async fn add_note(&self, text: String) -> Structured<Added> {
///         todo!()
///     }
/// }
///
/// let server = Server::builder().state(Notes::default()).handlers(Notes::handlers());
/// ```
///
/// Inside the impl, `#[tool]` needs no import. Besides `#[tool]`'s own
/// rules, two methods may not serve one tool name.
///
/// # Resources, templates and prompts as methods
///
/// In the same impl, also without an import:
///
/// * `#[resource("notes://all", …)]` on an `async fn` taking at most the
///   context: a resource at that URI, listed under `name = "…"` (or the
///   method's name) and described by the doc comment; the keys `title`,
///   `description`, `mime_type`, `scopes`. It answers a `String` (text at
///   the URI), a `ResourceContents`, a `Vec` of them, an `Option` of one
///   (`None`: resource not found), or a `Result` of one. Adds
///   `NAME_resource()` and `resources()`, for `ServerBuilder::resources`.
/// * `#[resource_template("notes://{id}", …)]`: the same keys and answers;
///   each parameter (besides the context) is a variable of the template,
///   by name, read into its type (a URI whose variable does not read is
///   resource not found), and each variable is a parameter. Adds
///   `NAME_resource_template()` and `resource_templates()`.
/// * `#[prompt(…)]`: a prompt whose arguments are the parameters (an
///   `Option` optional, a parameter's doc comment its description), its
///   doc comment the description; the keys `name`, `title`, `description`,
///   `scopes`. It answers a `PromptResult` or a `Result` of one. Adds
///   `NAME_prompt()` and `prompts()`.
/// * `#[complete(prompt = "summarize", argument = "id")]` or
///   `#[complete(template = "notes://{id}", argument = "id")]`: completes
///   that prompt argument or template variable. The prompt (by its listed
///   name) or template (by its URI template) must be one of the impl's, and
///   the argument one of its arguments or variables, checked at compile
///   time. It takes `value: String` (what the user typed), optionally
///   `context: BTreeMap<String, String>` (the other arguments' values) and
///   the context; it answers `Completions` or a `Result` of them. Adds
///   `NAME_completion()` and `completer()`, a `wymcp::Completer` for
///   `ServerBuilder::completer`; the `ServerBuilder::completion` handler,
///   if any, answers what the table does not complete.
///
/// A method serves one thing: two of these attributes on one method is an
/// error.
#[proc_macro_attribute]
pub fn handlers(args: TokenStream, input: TokenStream) -> TokenStream {
    tool::tools(args.into(), input.into()).into()
}

/// The former name of [`macro@handlers`], which it expands exactly as.
///
/// Deprecated: it serves more than tools now. Kept working until 0.2;
/// write `#[wymcp::handlers]`. (A proc-macro attribute cannot warn at its
/// use sites on stable Rust, so no compiler warning says so.)
#[proc_macro_attribute]
pub fn tools(args: TokenStream, input: TokenStream) -> TokenStream {
    tool::tools(args.into(), input.into()).into()
}
