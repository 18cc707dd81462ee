//! What the generated code of `#[pipeline]` and `#[tool]` reaches, and
//! nothing else should.
//! Not a public API: it may change in any release.

use std::future::Future;
use std::sync::Arc;

pub use axum::Router;
pub use schemars;
pub use serde;
pub use tracing::Instrument;

pub use crate::exchange::Exchange;
pub use crate::reply::{Flow, Response};
/// The request type `handle` takes.
pub type Request = http::Request<axum::body::Body>;
pub use crate::server::Server;
pub use crate::stage::{Role, Stage, StageInfo, StageKind};

use crate::protocol::error::ErrorCode;
use crate::reply::Rejection;
use crate::surface::{
    Completions, Context, HandlerError, PromptResult, ResourceContents, ToolOutput,
};

/// Marks `name` as the running stage and returns its span.
pub fn enter(ex: &mut Exchange<'_>, name: &'static str) -> tracing::Span {
    ex.set_stage(name);
    // Once classification opened the request span, every stage runs in it.
    if ex.span().is_none() {
        tracing::debug_span!("wymcp.stage", stage = name)
    } else {
        tracing::debug_span!(parent: ex.span(), "wymcp.stage", stage = name)
    }
}

/// The answer when every stage continued: a chain must end in a stage that
/// answers (the default chain's `Dispatch` always does).
#[must_use]
pub fn unanswered(ex: &Exchange<'_>) -> Response {
    ex.rejection_response(Rejection::new(
        http::StatusCode::INTERNAL_SERVER_ERROR,
        ErrorCode::INTERNAL_ERROR,
        "the chain ended without an answer",
    ))
}

/// Whether a stage type is wymcp's own `Validate`; read by generated const
/// assertions.
#[must_use]
pub const fn is_validate<S: Stage>() -> bool {
    S::KIND.is_validate()
}

/// The axum router of a chain: POST on the server's endpoint runs `handle`;
/// GET runs `handle_get` when the server serves a 2025 client's stream;
/// every other verb there is answered 405 and runs no stage.
pub fn router<F, Fut, G, GFut>(server: Arc<Server>, handle: F, handle_get: G) -> Router
where
    F: Fn(Arc<Server>, Request) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Response> + Send + 'static,
    G: Fn(Arc<Server>, Request) -> GFut + Clone + Send + Sync + 'static,
    GFut: Future<Output = Response> + Send + 'static,
{
    crate::router::build(server, handle, handle_get)
}

/// Starts a GET's exchange: its era from the `MCP-Protocol-Version` header
/// alone, no message, the request span open.
pub fn begin_get(ex: &mut Exchange<'_>) {
    ex.classify_bodiless();
}

/// What a GET answers once the chain's wire checks passed it: the 2025
/// standalone stream, or why not.
pub async fn open_stream(ex: &mut Exchange<'_>) -> Response {
    // Its refusals are its own, not the last wire check's.
    ex.set_stage("open_stream");
    crate::router::open_stream(ex).await
}

/// The `annotations` of a `#[tool]`: its hints, as given.
#[must_use]
pub fn tool_annotations(hints: &[(&str, bool)]) -> serde_json::Value {
    serde_json::Value::Object(
        hints
            .iter()
            .map(|(member, value)| ((*member).to_owned(), serde_json::Value::Bool(*value)))
            .collect(),
    )
}

/// The server's state of type `T`, for a `#[tool]` method on it.
///
/// # Panics
///
/// When the server was given no `T` (as [`Context::state`](crate::Context::state)).
/// `ServerBuilder::build` refuses such a server (`BuildError::MissingState`,
/// from [`method_of`]), and so does the `Catalog` an item added at run
/// time (`SurfaceError::MissingState`): unreachable through the library's
/// own paths.
#[must_use]
#[track_caller]
pub fn state_of<T: Send + Sync + 'static>(cx: &Context) -> Arc<T> {
    match cx.state_arc::<T>() {
        Some(state) => state,
        None => panic!(
            "the server has no state of type `{}`, which its `#[tool]` methods take as `&self`: \
             give it with `ServerBuilder::state`",
            std::any::type_name::<T>()
        ),
    }
}

/// Records that `item`'s handler is a `&self` method of the state type `T`
/// (`what` names the item), so `ServerBuilder::build` refuses a server
/// without a `T` instead of the first call panicking.
#[must_use]
pub fn method_of<T: Send + Sync + 'static, K>(
    mut item: crate::surface::Item<K>,
    what: &'static str,
) -> crate::surface::Item<K> {
    item.about.method_of = Some(crate::surface::MethodOf {
        state: std::any::type_name::<T>(),
        item: what,
        given: |state| state.get::<Arc<T>>().is_some(),
    });
    item
}

/// Records that every handler of `completer` is a `&self` method of the
/// state type `T` (`what` names them), as [`method_of`] for an item.
#[must_use]
pub fn completer_method_of<T: Send + Sync + 'static>(
    mut completer: crate::surface::Completer,
    what: &'static str,
) -> crate::surface::Completer {
    completer.set_method_of(crate::surface::MethodOf {
        state: std::any::type_name::<T>(),
        item: what,
        given: |state| state.get::<Arc<T>>().is_some(),
    });
    completer
}

/// What a `#[complete]` method answering `Result<Completions, E>` answers.
pub fn completion_fallible<E>(result: Result<Completions, E>) -> Result<Completions, HandlerError>
where
    E: Into<HandlerError>,
{
    result.map_err(Into::into)
}

/// What a `#[complete]` method answering `Completions` answers.
#[allow(clippy::unnecessary_wraps)] // the handler's shape
pub fn completion_infallible(completions: Completions) -> Result<Completions, HandlerError> {
    Ok(completions)
}

/// What a `#[tool]` answering `Result<O, E>` answers.
pub fn tool_fallible<O, E>(result: Result<O, E>) -> Result<O, HandlerError>
where
    O: ToolOutput,
    E: Into<HandlerError>,
{
    result.map_err(Into::into)
}

/// What a `#[tool]` answering `O` answers.
#[allow(clippy::unnecessary_wraps)] // the handler's shape
pub fn tool_infallible<O: ToolOutput>(output: O) -> Result<O, HandlerError> {
    Ok(output)
}

/// What a `#[resource]` or `#[resource_template]` method may answer: the
/// contents, one of them, text at the resource's URI, or an `Option` of
/// one (`None`: no resource at that URI, resource not found).
pub trait ResourceOutput {
    /// The contents read at `uri`.
    fn into_contents(self, uri: String) -> Result<Vec<ResourceContents>, HandlerError>;
}

impl ResourceOutput for Vec<ResourceContents> {
    fn into_contents(self, _: String) -> Result<Vec<ResourceContents>, HandlerError> {
        Ok(self)
    }
}

impl ResourceOutput for ResourceContents {
    fn into_contents(self, _: String) -> Result<Vec<ResourceContents>, HandlerError> {
        Ok(vec![self])
    }
}

impl ResourceOutput for String {
    fn into_contents(self, uri: String) -> Result<Vec<ResourceContents>, HandlerError> {
        Ok(vec![ResourceContents::text(uri, self)])
    }
}

impl<O: ResourceOutput> ResourceOutput for Option<O> {
    fn into_contents(self, uri: String) -> Result<Vec<ResourceContents>, HandlerError> {
        match self {
            Some(output) => output.into_contents(uri),
            None => Err(HandlerError::resource_not_found(uri)),
        }
    }
}

/// The contents of a resource method's answer, each given the resource's
/// `mime_type` unless it has its own (as a static resource's are).
fn contents_of<O: ResourceOutput>(
    uri: String,
    mime_type: Option<&str>,
    output: O,
) -> Result<Vec<ResourceContents>, HandlerError> {
    let mut contents = output.into_contents(uri)?;
    if let Some(mime_type) = mime_type {
        for c in contents.iter_mut().filter(|c| c.mime_type.is_none()) {
            c.mime_type = Some(mime_type.to_owned());
        }
    }
    Ok(contents)
}

/// What a resource method answering `Result<O, E>` reads.
pub fn resource_fallible<O, E>(
    uri: String,
    mime_type: Option<&str>,
    result: Result<O, E>,
) -> Result<Vec<ResourceContents>, HandlerError>
where
    O: ResourceOutput,
    E: Into<HandlerError>,
{
    contents_of(uri, mime_type, result.map_err(Into::into)?)
}

/// What a resource method answering `O` reads.
pub fn resource_infallible<O: ResourceOutput>(
    uri: String,
    mime_type: Option<&str>,
    output: O,
) -> Result<Vec<ResourceContents>, HandlerError> {
    contents_of(uri, mime_type, output)
}

/// What a `#[prompt]` answering `Result<PromptResult, E>` renders.
pub fn prompt_fallible<E: Into<HandlerError>>(
    result: Result<PromptResult, E>,
) -> Result<PromptResult, HandlerError> {
    result.map_err(Into::into)
}

/// What a `#[prompt]` answering `PromptResult` renders.
#[allow(clippy::unnecessary_wraps)] // the handler's shape
pub fn prompt_infallible(result: PromptResult) -> Result<PromptResult, HandlerError> {
    Ok(result)
}

/// The schema of a generated arguments struct's field, through
/// [`SchemaOf`]: its type's own `JsonSchema`, every method passed through
/// (so the schema, its `$ref`s and whether the property is required are
/// the type's), when the type has one. When it has none, the macro's
/// check at the parameter reports it, once; this still compiles, so no
/// derive or handler bound reports it again.
#[allow(missing_debug_implementations)]
pub struct SchemaOf<L: ?Sized>(std::marker::PhantomData<L>);

/// A parameter's place in the arguments struct: [`SchemaFns`] of its type,
/// picked by [`ProbeSchema`] / [`ProbeNoSchema`].
pub trait SchemaVia {
    /// The type's schema functions.
    fn fns() -> SchemaFns;
}

/// What `JsonSchema` answers for one type.
#[derive(Clone, Copy)]
#[allow(missing_debug_implementations)]
pub struct SchemaFns {
    inline: fn() -> bool,
    name: fn() -> std::borrow::Cow<'static, str>,
    id: fn() -> std::borrow::Cow<'static, str>,
    schema: fn(&mut schemars::SchemaGenerator) -> schemars::Schema,
    non_optional: fn(&mut schemars::SchemaGenerator) -> schemars::Schema,
    is_option: fn() -> bool,
}

/// `(&Probe::<T>::new()).schema_fns()`: `T`'s schema when `T` has one
/// ([`ProbeSchema`]), else a placeholder ([`ProbeNoSchema`]; the build
/// fails at the macro's check then, so it is never used).
#[allow(missing_debug_implementations)]
pub struct Probe<T: ?Sized>(std::marker::PhantomData<T>);

// Only generated code makes one, by name: `Default` would add nothing.
#[allow(clippy::new_without_default)]
impl<T: ?Sized> Probe<T> {
    /// The probe of `T`.
    #[must_use]
    pub const fn new() -> Self {
        Self(std::marker::PhantomData)
    }
}

/// The probe of a type with a schema.
pub trait ProbeSchema {
    /// The type's schema functions.
    fn schema_fns(&self) -> SchemaFns;
}

impl<T: schemars::JsonSchema + ?Sized> ProbeSchema for Probe<T> {
    fn schema_fns(&self) -> SchemaFns {
        SchemaFns {
            inline: T::inline_schema,
            name: T::schema_name,
            id: T::schema_id,
            schema: T::json_schema,
            non_optional: T::_schemars_private_non_optional_json_schema,
            is_option: T::_schemars_private_is_option,
        }
    }
}

/// The probe of a type without one.
pub trait ProbeNoSchema {
    /// A placeholder's schema functions.
    fn schema_fns(&self) -> SchemaFns;
}

impl<T: ?Sized> ProbeNoSchema for &Probe<T> {
    fn schema_fns(&self) -> SchemaFns {
        Probe::<()>::new().schema_fns()
    }
}

/// The arguments of a `#[tool]`, `#[prompt]` or `#[resource_template]`
/// taking them whole (`#[args] search: Search`), as its handler reads
/// them: `L::Args` itself, read from JSON and described by its own schema
/// through `L` (every `JsonSchema` method passed through, so the schema is
/// the type's). Both compile whether or not the type has them: the
/// macro's checks at the parameter report a missing one, once, naming the
/// derive to add, and no handler bound reports it again.
#[allow(missing_debug_implementations)]
pub struct Whole<L: WholeVia>(pub L::Args);

/// A whole arguments type's place: the type, how it is read, and (as a
/// [`SchemaVia`]) its schema.
pub trait WholeVia: SchemaVia {
    /// The arguments type.
    type Args;
    /// Reads the arguments (through [`ProbeDeserialize`] /
    /// [`ProbeNoDeserialize`]).
    ///
    /// # Errors
    ///
    /// When the JSON is no `Args`.
    fn deserialize<'de, D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Self::Args, D::Error>;
}

impl<'de, L: WholeVia> serde::Deserialize<'de> for Whole<L> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        L::deserialize(deserializer).map(Whole)
    }
}

impl<L: WholeVia> schemars::JsonSchema for Whole<L> {
    fn inline_schema() -> bool {
        <SchemaOf<L> as schemars::JsonSchema>::inline_schema()
    }
    fn schema_name() -> std::borrow::Cow<'static, str> {
        <SchemaOf<L> as schemars::JsonSchema>::schema_name()
    }
    fn schema_id() -> std::borrow::Cow<'static, str> {
        <SchemaOf<L> as schemars::JsonSchema>::schema_id()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        <SchemaOf<L> as schemars::JsonSchema>::json_schema(generator)
    }
    fn _schemars_private_non_optional_json_schema(
        generator: &mut schemars::SchemaGenerator,
    ) -> schemars::Schema {
        <SchemaOf<L> as schemars::JsonSchema>::_schemars_private_non_optional_json_schema(generator)
    }
    fn _schemars_private_is_option() -> bool {
        <SchemaOf<L> as schemars::JsonSchema>::_schemars_private_is_option()
    }
}

/// The probe of a type read from JSON.
pub trait ProbeDeserialize<T> {
    /// Reads a `T`.
    ///
    /// # Errors
    ///
    /// When the input is no `T`.
    fn deserialize_from<'de, D: serde::Deserializer<'de>>(
        &self,
        deserializer: D,
    ) -> Result<T, D::Error>;
}

impl<T: serde::de::DeserializeOwned> ProbeDeserialize<T> for Probe<T> {
    fn deserialize_from<'de, D: serde::Deserializer<'de>>(
        &self,
        deserializer: D,
    ) -> Result<T, D::Error> {
        T::deserialize(deserializer)
    }
}

/// The probe of a type that is not (the build fails at the macro's check
/// then, so this is never called).
pub trait ProbeNoDeserialize<T> {
    /// Refuses every input.
    ///
    /// # Errors
    ///
    /// Always.
    fn deserialize_from<'de, D: serde::Deserializer<'de>>(
        &self,
        deserializer: D,
    ) -> Result<T, D::Error>;
}

impl<T> ProbeNoDeserialize<T> for &Probe<T> {
    fn deserialize_from<'de, D: serde::Deserializer<'de>>(&self, _: D) -> Result<T, D::Error> {
        Err(serde::de::Error::custom(format_args!(
            "`{}` is not read from JSON",
            std::any::type_name::<T>()
        )))
    }
}

impl<L: SchemaVia + ?Sized> schemars::JsonSchema for SchemaOf<L> {
    fn inline_schema() -> bool {
        (L::fns().inline)()
    }
    fn schema_name() -> std::borrow::Cow<'static, str> {
        (L::fns().name)()
    }
    fn schema_id() -> std::borrow::Cow<'static, str> {
        (L::fns().id)()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        (L::fns().schema)(generator)
    }
    fn _schemars_private_non_optional_json_schema(
        generator: &mut schemars::SchemaGenerator,
    ) -> schemars::Schema {
        (L::fns().non_optional)(generator)
    }
    fn _schemars_private_is_option() -> bool {
        (L::fns().is_option)()
    }
}
