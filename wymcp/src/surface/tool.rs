//! Tools: the builder, typed handlers, results, and the `x-mcp-header`
//! rules checked at registration.
//!
//! ```
//! use wymcp::{Tool, ToolResult};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Echo { text: String }
//!
//! let tool = Tool::new("echo")
//!     .description("Echoes its text")
//!     .handler(|args: Echo, _cx| async move { Ok(ToolResult::text(args.text)) });
//! # let _ = wymcp::Server::builder().tool(tool).build().unwrap();
//! ```

use std::borrow::Cow;
use std::fmt;
use std::fmt::Write as _;
use std::future::Future;
use std::sync::{Arc, OnceLock};

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::call::{Answer, Call, Env, Handling, Outcome, take};
use super::content::Content;
use super::context::{BoxFuture, Context, HandlerError};
use super::error::SurfaceError;
use super::finish::ServerMeta;
use super::item::Item;
use super::scopes::Scopes;
use crate::protocol::error::{ErrorCode, RpcError};
use crate::protocol::headers::{self, HeaderParam};
use crate::protocol::revision::Era;
use crate::protocol::subset::Subset;
use crate::protocol::text::{Bounded, truncated};
use crate::trace::{self, SpanSlot};

pub(crate) type ToolFn =
    dyn Fn(Value, Context) -> BoxFuture<Result<ToolResult, HandlerError>> + Send + Sync;

/// Decides, from a call's context, whether a task-capable tool runs this
/// call as a task (see [`Tool::task_when`]).
pub(crate) type TaskWhen = dyn Fn(&Context) -> bool + Send + Sync;

/// Whether a tool runs as a task of the tasks extension
/// (`io.modelcontextprotocol/tasks`, SEP-2663), listed as the tool's
/// `execution.taskSupport`.
///
/// A call by a client that declares the extension (in the request's
/// `_meta` client capabilities) runs as a task when the tool allows it: the
/// client gets a `CreateTaskResult` at once and polls `tasks/get`. A client
/// that does not declare it gets the result on its request (`Optional`),
/// or -32021 naming the extension (`Required`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskSupport {
    /// Never a task (the default).
    #[default]
    Forbidden,
    /// A task when the client declares the extension, else a plain call.
    Optional,
    /// Only ever a task: a client that does not declare the extension is
    /// refused -32021 before the handler runs.
    Required,
}

impl TaskSupport {
    /// The `execution.taskSupport` value.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            TaskSupport::Forbidden => "forbidden",
            TaskSupport::Optional => "optional",
            TaskSupport::Required => "required",
        }
    }
}

/// Arguments of a tool that takes none: its `inputSchema` is
/// `{"type": "object"}`, and any arguments sent are ignored.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
pub struct NoArgs {}

impl JsonSchema for NoArgs {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("NoArgs")
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "object"})
    }
}

/// The result of a tool call: content blocks, optional structured content,
/// and whether it reports a failure (`isError`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ToolResult {
    /// The content blocks.
    pub content: Vec<Content>,
    /// Structured content, checked against the tool's `outputSchema`.
    #[serde(rename = "structuredContent", skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// Whether the call failed (a failure the model should see, not a
    /// protocol error).
    #[serde(rename = "isError", skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
}

/// A typed structured result: what a handler returns to answer with
/// `structuredContent`. The tool's `outputSchema` is derived from `T` when
/// the handler is registered, and the result carries the value as
/// `structuredContent` and its JSON as a text block for clients that read
/// only content, so the listing and the result cannot disagree.
///
/// `T` must serialise to a JSON object (a struct, or a map): a 2025
/// client's `outputSchema` is `"type": "object"`. Wrap anything else in a
/// struct; registering a tool whose `T` is not an object is a
/// [`SurfaceError::Schema`].
///
/// ```
/// use wymcp::{Structured, Tool};
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Add { a: i64, b: i64 }
///
/// #[derive(serde::Serialize, schemars::JsonSchema)]
/// struct Sum { sum: i64 }
///
/// let tool = Tool::new("add").handler(|args: Add, _cx| async move {
///     Ok(Structured(Sum { sum: args.a + args.b }))
/// });
/// # let _ = wymcp::Server::builder().tool(tool).build().unwrap();
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Structured<T>(pub T);

/// What a tool handler may answer with: a [`ToolResult`], a typed
/// [`Structured`] value whose type gives the tool its `outputSchema`, or a
/// `Vec<T>` (`T: Serialize + JsonSchema`), which answers the object
/// `{"items": [...]}` with that object's `outputSchema` (an `outputSchema`
/// is always an object, so a list needs no wrapper of your own).
///
/// A handler that only ever fails names its output type:
///
/// ```
/// use wymcp::{HandlerError, NoArgs, Tool, ToolResult};
///
/// let tool = Tool::new("not_yet").handler(|_: NoArgs, _cx| async {
///     Err::<ToolResult, _>(HandlerError::execution("not implemented yet"))
/// });
/// # let _ = tool;
/// ```
pub trait ToolOutput: Send + 'static {
    /// The `outputSchema` this output gives the tool, if any.
    #[doc(hidden)]
    fn output_schema() -> Option<Value>;

    /// The result on the wire.
    #[doc(hidden)]
    fn into_result(self) -> Result<ToolResult, HandlerError>;
}

impl ToolOutput for ToolResult {
    fn output_schema() -> Option<Value> {
        None
    }

    fn into_result(self) -> Result<ToolResult, HandlerError> {
        Ok(self)
    }
}

impl<T: Serialize + JsonSchema + Send + 'static> ToolOutput for Structured<T> {
    fn output_schema() -> Option<Value> {
        Some(schemars::schema_for!(T).to_value())
    }

    fn into_result(self) -> Result<ToolResult, HandlerError> {
        let value = serde_json::to_value(&self.0).map_err(|e| HandlerError::Rpc {
            code: ErrorCode::INTERNAL_ERROR,
            message: format!("the tool's result does not serialise: {e}"),
            data: None,
        })?;
        Ok(ToolResult::structured(value))
    }
}

/// The object a list answer is wrapped in: `{"items": [...]}`.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "Items")]
struct Items<T> {
    items: Vec<T>,
}

/// A list answers the object `{"items": [...]}`, and its `outputSchema` is
/// that object's: an `outputSchema` is always an object, so a tool
/// answering `Vec<T>` needs no wrapper struct of its own.
impl<T: Serialize + JsonSchema + Send + 'static> ToolOutput for Vec<T> {
    fn output_schema() -> Option<Value> {
        Some(schemars::schema_for!(Items<T>).to_value())
    }

    fn into_result(self) -> Result<ToolResult, HandlerError> {
        Structured(Items { items: self }).into_result()
    }
}

/// A [`ToolResult`] as it goes on the wire, completed (on 2026-07-28) with
/// `resultType` and the server's identity in `_meta`: serialised straight
/// into the response, with no `Value` tree in between. Built by
/// [`ToolResult::wire`]; the members are [`ToolResult`]'s plus the two the
/// finish adds.
#[derive(Serialize)]
pub(crate) struct WireToolResult<'a> {
    pub(crate) content: &'a [Content],
    #[serde(rename = "structuredContent", skip_serializing_if = "Option::is_none")]
    pub(crate) structured_content: Option<&'a Value>,
    #[serde(rename = "isError", skip_serializing_if = "std::ops::Not::not")]
    pub(crate) is_error: bool,
    #[serde(rename = "resultType", skip_serializing_if = "Option::is_none")]
    pub(crate) result_type: Option<&'static str>,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub(crate) meta: Option<ServerMeta<'a>>,
}

impl ToolResult {
    /// A result of these content blocks.
    pub fn new(content: impl IntoIterator<Item = Content>) -> Self {
        ToolResult {
            content: content.into_iter().collect(),
            ..ToolResult::default()
        }
    }

    /// A result of one text block.
    pub fn text(text: impl Into<String>) -> Self {
        ToolResult::new([Content::text(text)])
    }

    /// A failure the model should see: `isError: true` with this message.
    pub fn error(message: impl Into<String>) -> Self {
        ToolResult {
            is_error: true,
            ..ToolResult::text(message)
        }
    }

    /// A structured result: `structuredContent` is `value`, and one text
    /// block carries its JSON for clients that read only content.
    pub fn structured(value: Value) -> Self {
        ToolResult {
            content: vec![Content::text(value.to_string())],
            structured_content: Some(value),
            is_error: false,
        }
    }

    /// Adds a content block.
    #[must_use]
    pub fn with(mut self, content: impl Into<Content>) -> Self {
        self.content.push(content.into());
        self
    }

    /// The result completed for the wire as
    /// [`Finishing::finish`](super::finish::Finishing::finish) completes one
    /// (a tool result sets neither `resultType` nor `_meta`, and is never
    /// cacheable), ready to serialise; `meta` is the server's identity as
    /// its `_meta` ([`Finishing::meta`](super::finish::Finishing::meta)).
    pub(crate) fn wire<'a>(&'a self, era: Era, meta: ServerMeta<'a>) -> WireToolResult<'a> {
        let modern = era == Era::Modern;
        WireToolResult {
            content: &self.content,
            structured_content: self.structured_content.as_ref(),
            is_error: self.is_error,
            result_type: modern.then_some("complete"),
            meta: modern.then_some(meta),
        }
    }
}

/// A tool, as registered with [`ServerBuilder::tool`](crate::ServerBuilder::tool)
/// or [`Catalog::add_tool`](crate::Catalog::add_tool): an [`Item`] (its
/// title, description, icons, scopes and `_meta`, set by `Item`'s setters)
/// of the tool kind.
pub type Tool = Item<ToolKind>;

/// What a tool adds to an [`Item`]: its name, schemas, annotations,
/// handler and task support. Never named as such: write [`Tool`].
pub struct ToolKind {
    name: String,
    input_schema: Option<Value>,
    output_schema: Option<Value>,
    annotations: Option<Value>,
    /// Whether the `outputSchema` was derived from a [`Structured`] type.
    derived_output: bool,
    handler: Option<Arc<ToolFn>>,
    task_support: TaskSupport,
    task_when: Option<Arc<TaskWhen>>,
}

impl fmt::Debug for ToolKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tool")
            .field("name", &self.name)
            .field("input_schema", &self.input_schema)
            .field("output_schema", &self.output_schema)
            .finish_non_exhaustive()
    }
}

impl Tool {
    /// A tool named `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Item::of(ToolKind {
            name: name.into(),
            input_schema: None,
            output_schema: None,
            annotations: None,
            derived_output: false,
            handler: None,
            task_support: TaskSupport::Forbidden,
            task_when: None,
        })
    }

    /// Whether the tool runs as a task of the tasks extension (default
    /// [`TaskSupport::Forbidden`]). The handler is the same as for a plain
    /// call; run as a task, what it returns becomes the task's result, an
    /// `input_required` puts the task in `input_required` until the client
    /// answers through `tasks/update`, and its progress and log messages
    /// go nowhere.
    ///
    /// ```
    /// use std::time::Duration;
    /// use wymcp::{NoArgs, TaskSupport, Tool, ToolResult};
    ///
    /// let tool = Tool::new("report")
    ///     .task_support(TaskSupport::Optional)
    ///     .handler(|_: NoArgs, _cx| async move {
    ///         tokio::time::sleep(Duration::from_secs(30)).await;
    ///         Ok(ToolResult::text("the report"))
    ///     });
    /// # let _ = wymcp::Server::builder().tool(tool).build().unwrap();
    /// ```
    #[must_use]
    pub fn task_support(mut self, support: TaskSupport) -> Self {
        self.kind.task_support = support;
        self
    }

    /// Runs a call as a task only when `when` says so of its context (by
    /// default every call of a task-capable tool by a declaring client is
    /// one): a tool that first gathers input over MRTR rounds answered on
    /// the request itself, then works long, escalates on the last round.
    #[must_use]
    pub fn task_when<F>(mut self, when: F) -> Self
    where
        F: Fn(&Context) -> bool + Send + Sync + 'static,
    {
        self.kind.task_when = Some(Arc::new(when));
        self
    }

    /// The `inputSchema`, verbatim: every keyword is listed as given, and
    /// arguments are validated against it. Takes precedence over the schema
    /// a typed handler derives.
    #[must_use]
    pub fn input_schema(mut self, schema: Value) -> Self {
        self.kind.input_schema = Some(schema);
        self
    }

    /// The `outputSchema`, verbatim; `structuredContent` is checked against it.
    #[must_use]
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.kind.output_schema = Some(schema);
        self
    }

    /// The `outputSchema` derived from `O` (JSON Schema 2020-12).
    #[must_use]
    pub fn output<O: JsonSchema>(self) -> Self {
        self.output_schema(schemars::schema_for!(O).to_value())
    }

    /// Behaviour hints (`annotations`: `readOnlyHint`, …), verbatim.
    #[must_use]
    pub fn annotations(mut self, annotations: Value) -> Self {
        self.kind.annotations = Some(annotations);
        self
    }

    /// The handler, taking arguments of type `A` and answering a
    /// [`ToolResult`] or a typed [`Structured`] value. Unless an
    /// `inputSchema` was given, it is derived from `A`; unless an
    /// `outputSchema` was given, a [`Structured<O>`] answer derives it from
    /// `O`. A missing `arguments` is `{}`.
    /// Arguments that break the `inputSchema`, or do not deserialise into
    /// `A`, are answered as a tool result with `isError: true` naming the
    /// JSON pointer and what was expected (SEP-1303): the model reads it and
    /// can correct its call. A protocol error would be hidden from it.
    #[must_use]
    pub fn handler<A, O, F, Fut>(mut self, handler: F) -> Self
    where
        A: DeserializeOwned + JsonSchema + 'static,
        O: ToolOutput,
        F: Fn(A, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, HandlerError>> + Send + 'static,
    {
        if self.kind.input_schema.is_none() {
            self.kind.input_schema = Some(schemars::schema_for!(A).to_value());
        }
        if self.kind.output_schema.is_none()
            && let Some(schema) = O::output_schema()
        {
            self.kind.derived_output = true;
            self.kind.output_schema = Some(schema);
        }
        let name = self.kind.name.clone();
        self.kind.handler = Some(Arc::new(move |arguments: Value, cx: Context| {
            match serde_path_to_error::deserialize::<_, A>(arguments) {
                Ok(args) => {
                    let run = handler(args, cx);
                    Box::pin(async move { run.await?.into_result() }) as BoxFuture<_>
                }
                Err(error) => {
                    let problem = Problem {
                        pointer: pointer_of(error.path()),
                        message: error.inner().to_string(),
                    };
                    let error = HandlerError::Execution(invalid_arguments(&name, &[problem]));
                    Box::pin(async move { Err(error) })
                }
            }
        }));
        self
    }

    /// The handler, taking the arguments as JSON (an object). Without an
    /// `inputSchema`, the tool declares `{"type": "object"}`.
    #[must_use]
    pub fn raw_handler<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(Value, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ToolResult, HandlerError>> + Send + 'static,
    {
        if self.kind.input_schema.is_none() {
            self.kind.input_schema = Some(json!({"type": "object"}));
        }
        self.kind.handler = Some(Arc::new(move |arguments: Value, cx: Context| {
            Box::pin(handler(arguments, cx)) as BoxFuture<_>
        }));
        self
    }

    /// Whether the tool may run as a task.
    pub(crate) fn supports_tasks(&self) -> bool {
        self.kind.task_support != TaskSupport::Forbidden
    }

    /// The tool's name.
    pub(crate) fn name(&self) -> &str {
        &self.kind.name
    }

    /// Whether the tool requires scopes.
    pub(crate) fn has_scopes(&self) -> bool {
        !self.about.scopes.is_empty()
    }

    pub(crate) fn register(self) -> Result<Registered, SurfaceError> {
        let Item { about, kind: tool } = self;
        check_name(&tool.name)?;
        about.scopes.check(&format!("tool `{}`", tool.name))?;
        let handler = tool
            .handler
            .ok_or_else(|| SurfaceError::NoHandler(tool.name.clone()))?;
        let input_schema = tool
            .input_schema
            .unwrap_or_else(|| json!({"type": "object"}));
        let header_params = header_params(&tool.name, &input_schema)?;
        if tool.derived_output
            && let Some(schema) = &tool.output_schema
            && schema.get("type").and_then(Value::as_str) != Some("object")
        {
            return Err(SurfaceError::Schema {
                tool: tool.name.clone(),
                which: "outputSchema",
                reason: "a `Structured<T>` output must be a JSON object (`\"type\": \"object\"`, as a 2025 client requires): wrap the value in a struct".into(),
            });
        }
        let check = |schema: &Value, which| {
            check_schema(schema).map_err(|reason| SurfaceError::Schema {
                tool: tool.name.clone(),
                which,
                reason,
            })
        };
        check(&input_schema, "inputSchema")?;
        let output_validator = match &tool.output_schema {
            Some(schema) => {
                check(schema, "outputSchema")?;
                Some(Lazy::default())
            }
            None => None,
        };
        let mut definition = Map::new();
        definition.insert("name".into(), Value::String(tool.name.clone()));
        definition.insert("inputSchema".into(), input_schema);
        if let Some(schema) = tool.output_schema {
            definition.insert("outputSchema".into(), schema);
        }
        if let Some(annotations) = tool.annotations {
            definition.insert("annotations".into(), annotations);
        }
        about.list_into(&mut definition);
        if tool.task_support != TaskSupport::Forbidden {
            definition.insert(
                "execution".into(),
                json!({"taskSupport": tool.task_support.as_str()}),
            );
        }
        // Serialised once, here: a `tools/list` page copies these bytes
        // (which tools a caller sees is still decided per request, by
        // scope), instead of walking and escaping every definition again.
        let definition =
            serde_json::value::to_raw_value(&Value::Object(definition)).map_err(|e| {
                SurfaceError::Schema {
                    tool: tool.name.clone(),
                    which: "definition",
                    reason: e.to_string(),
                }
            })?;
        Ok(Registered {
            scopes: about.scopes,
            name: tool.name.into(),
            definition,
            handler,
            task_support: tool.task_support,
            task_when: tool.task_when,
            header_params: header_params.into(),
            input_validator: Lazy::default(),
            output_validator,
        })
    }
}

/// A tool once checked: its listing, handler, header parameters and
/// schemas (compiled on its first call).
pub(crate) struct Registered {
    name: Arc<str>,
    /// What a caller must hold to see and call it.
    pub(crate) scopes: Scopes,
    /// Its `tools/list` entry, serialised at registration.
    pub(crate) definition: Box<serde_json::value::RawValue>,
    pub(crate) handler: Arc<ToolFn>,
    pub(crate) task_support: TaskSupport,
    pub(crate) task_when: Option<Arc<TaskWhen>>,
    pub(crate) header_params: Arc<[HeaderParam]>,
    /// The `inputSchema`'s validator, compiled on the first call.
    input_validator: Lazy,
    /// The `outputSchema`'s, if the tool has one, compiled on the first
    /// result it checks.
    output_validator: Option<Lazy>,
}

/// A tool schema's validator, compiled once, by the first call that needs
/// it (concurrent ones wait for that compile), from the schema in the
/// tool's serialised listing; a compile error is kept (its text), so
/// every call of the tool is answered the same.
///
/// Why on first use (issue 26 §1: wymcp's RSS against rmcp's): a tool
/// never called holds no validator (≈ 7 kB of heap for a small schemars
/// schema; BENCHMARKS.md, "RSS, where it goes"). The build still checks
/// each schema ([`check_schema`]), so a schema that does not compile fails
/// there, not on a call.
///
/// A value is first held to wymcp's own check ([`Subset`]): what it
/// accepts is valid, and jsonschema's validator is compiled and asked only
/// for the rest (every invalid value, and the few valid ones outside the
/// subset), so a tool whose schema is in the subset and whose calls are
/// valid never runs jsonschema.
#[derive(Default)]
struct Lazy {
    subset: OnceLock<Option<Subset>>,
    strict: OnceLock<Result<jsonschema::Validator, String>>,
}

/// `which` (`inputSchema` or `outputSchema`) of a tool's serialised listing.
fn listed_schema(definition: &serde_json::value::RawValue, which: &str) -> Result<Value, String> {
    let mut listing: Map<String, Value> =
        serde_json::from_str(definition.get()).map_err(|e| e.to_string())?;
    listing
        .remove(which)
        .ok_or_else(|| format!("the listing has no {which}"))
}

impl Lazy {
    /// Whether wymcp's own check of `definition`'s `which` vouches for
    /// `value` (compiled on the first call).
    fn vouches(
        &self,
        definition: &serde_json::value::RawValue,
        which: &str,
        value: &Value,
    ) -> bool {
        self.subset
            .get_or_init(|| {
                listed_schema(definition, which)
                    .ok()
                    .map(|schema| Subset::of_schema(&schema))
            })
            .as_ref()
            .is_some_and(|subset| subset.holds(value))
    }

    /// jsonschema's validator of `definition`'s `which`, compiled on the
    /// first value the subset does not vouch for.
    fn get(
        &self,
        definition: &serde_json::value::RawValue,
        which: &str,
    ) -> Result<&jsonschema::Validator, &str> {
        self.strict
            .get_or_init(|| {
                let schema = listed_schema(definition, which)?;
                jsonschema::validator_for(&schema).map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(String::as_str)
    }
}

/// Whether `schema` compiles: what a tool's registration holds each of
/// its schemas to, so a schema that cannot be compiled fails the build
/// ([`SurfaceError::Schema`]) rather than its first call. A schema wholly
/// in wymcp's subset, each keyword's value of the shape the meta-schema
/// asks for ([`Subset::is_complete`]), compiles, and jsonschema is not
/// asked (nor its compiler and meta-schema validator loaded); any other is
/// compiled by jsonschema and the validator dropped. [`Lazy`] compiles the
/// one a call uses, if any.
fn check_schema(schema: &Value) -> Result<(), String> {
    #[cfg(test)]
    if UNCHECKED.with(std::cell::Cell::get) {
        return Ok(());
    }
    if Subset::of_schema(schema).is_complete() {
        return Ok(());
    }
    jsonschema::validator_for(schema)
        .map(drop)
        .map_err(|e| e.to_string())
}

#[cfg(test)]
thread_local! {
    /// Set by a test to register tools on this thread with their schemas
    /// unchecked, so one that does not compile reaches a call.
    pub(crate) static UNCHECKED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Why a tool's schema could not be compiled on its first call: logged,
/// and the call answered -32603 (500), never run unchecked.
fn broken_schema(tool: &str, which: &str, reason: &str) -> RpcError {
    tracing::error!(tool = %Bounded(tool), which, reason = %Bounded(reason), "a tool schema does not compile");
    RpcError::new(
        ErrorCode::INTERNAL_ERROR,
        format!("tool `{}`: its {which} does not compile", truncated(tool)),
    )
}

impl fmt::Debug for Registered {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tool")
            .field("definition", &self.definition)
            .field("header_params", &self.header_params)
            .finish_non_exhaustive()
    }
}

impl Registered {
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// How `arguments` break the `inputSchema` (at most
    /// [`MAX_PROBLEMS`]), if they do; an error when the schema does not
    /// compile.
    pub(crate) fn check_arguments(
        &self,
        arguments: &Value,
    ) -> Result<Option<Vec<Problem>>, RpcError> {
        if self
            .input_validator
            .vouches(&self.definition, "inputSchema", arguments)
        {
            return Ok(None);
        }
        let validator = self
            .input_validator
            .get(&self.definition, "inputSchema")
            .map_err(|reason| broken_schema(&self.name, "inputSchema", reason))?;
        // The served path asks only whether; the errors are built when there are some.
        if validator.is_valid(arguments) {
            return Ok(None);
        }
        let problems: Vec<Problem> = validator
            .iter_errors(arguments)
            .take(MAX_PROBLEMS)
            .map(|e| Problem {
                pointer: e.instance_path().as_str().to_owned(),
                message: e.to_string(),
            })
            .collect();
        Ok((!problems.is_empty()).then_some(problems))
    }

    /// How a successful result breaks the `outputSchema`, if it does (or
    /// the schema does not compile).
    pub(crate) fn check_output(&self, result: &ToolResult) -> Option<String> {
        let lazy = self.output_validator.as_ref()?;
        if result.is_error {
            return None;
        }
        let value = result.structured_content.as_ref();
        if value.is_some_and(|value| lazy.vouches(&self.definition, "outputSchema", value)) {
            return None;
        }
        let validator = match lazy.get(&self.definition, "outputSchema") {
            Ok(validator) => validator,
            Err(reason) => return Some(format!("the outputSchema does not compile: {reason}")),
        };
        match value {
            None => {
                Some("the tool declares an outputSchema but returned no structuredContent".into())
            }
            Some(value) => validator
                .iter_errors(value)
                .next()
                .map(|e| format!("structuredContent breaks the outputSchema: {e}")),
        }
    }
}

/// The longest tool name the spec allows.
pub(crate) const MAX_TOOL_NAME: usize = 128;

/// The spec's rule for tool names (2025-11-25 on, SEP-986): 1 to 128
/// characters, each of `A-Z a-z 0-9 _ - .`.
fn check_name(name: &str) -> Result<(), SurfaceError> {
    let error = |reason: String| SurfaceError::ToolName {
        name: name.escape_debug().to_string(),
        reason,
    };
    if name.is_empty() {
        return Err(error("a tool name must not be empty".into()));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
    {
        return Err(error(format!(
            "{bad:?} is not allowed in a tool name (only A-Z, a-z, 0-9, `_`, `-` and `.`)"
        )));
    }
    if name.len() > MAX_TOOL_NAME {
        return Err(error(format!(
            "a tool name is at most {MAX_TOOL_NAME} characters; this one has {}",
            name.len()
        )));
    }
    Ok(())
}

/// The most schema violations one tool input error names.
pub(crate) const MAX_PROBLEMS: usize = 5;

/// One way a tool's arguments are wrong: where (a JSON pointer into the
/// arguments, `""` for the whole) and what was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Problem {
    pub(crate) pointer: String,
    pub(crate) message: String,
}

/// The JSON pointer of a `serde_path_to_error` path (`a.b[2]` → `/a/b/2`).
fn pointer_of(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut pointer = String::new();
    for segment in path {
        pointer.push('/');
        match segment {
            Segment::Seq { index } => pointer.push_str(&index.to_string()),
            Segment::Map { key } | Segment::Enum { variant: key } => {
                pointer.push_str(&key.replace('~', "~0").replace('/', "~1"));
            }
            Segment::Unknown => pointer.push('?'),
        }
    }
    pointer
}

/// The text of a tool input error: each problem with its pointer, bounded
/// (the arguments are the client's; a message may quote them).
fn invalid_arguments(tool: &str, problems: &[Problem]) -> String {
    let mut text = format!("invalid arguments for tool `{}`:", truncated(tool));
    for problem in problems {
        let at = if problem.pointer.is_empty() {
            "(root)".to_owned()
        } else {
            format!("`{}`", truncated(&problem.pointer))
        };
        let _ = write!(text, "\n- at {at}: {}", truncated(&problem.message));
    }
    text
}

/// `tools/call` of `tool`: its arguments checked against its `inputSchema`,
/// its handler run, its result checked against its `outputSchema` (a
/// handler that breaks its own schema is -32603). Arguments that break the
/// schema, or that the handler's type refuses, and an execution error are
/// all the result `isError: true`, which the model sees (SEP-1303).
pub(crate) fn call(tool: Arc<Registered>, mut call: Call<'_>, env: Env<'_>) -> Answer {
    match prepare(&tool, &mut call, env) {
        Ok((handling, arguments)) => {
            let span = call.span.clone();
            let slot = call.slot.clone();
            drop(call);
            run(tool, handling, arguments, span, slot)
        }
        Err(answer) => answer,
    }
}

/// A call of `tool` readied: its arguments checked and taken out of the
/// params, its handler's context made (the MRTR state unsealed).
pub(crate) fn prepare(
    tool: &Registered,
    call: &mut Call<'_>,
    env: Env<'_>,
) -> Result<(Handling, Value), Answer> {
    if let Some(slot) = &call.slot {
        slot.0.called(&tool.name);
    }
    let name = tool.name();
    let empty = Value::Object(Map::new());
    let arguments = match call.params.as_ref().and_then(|p| p.get("arguments")) {
        None | Some(Value::Null) => &empty,
        Some(arguments @ Value::Object(_)) => arguments,
        Some(_) => return Err(RpcError::invalid_params("`arguments` must be an object").into()),
    };
    if let Some(problems) = tool.check_arguments(arguments).map_err(Answer::from)? {
        let reply = call.reply(env.finishing);
        let result = ToolResult::error(invalid_arguments(name, &problems));
        trace::tool_failed(&call.span, call.slot.as_ref().map(|slot| &*slot.0));
        return Err(Answer::done(Outcome::Result(
            reply.result(&result.wire(reply.era(), reply.finishing().meta())),
        )));
    }
    let handling = call.handling("tools/call", env).map_err(Answer::from)?;
    // The handler owns its arguments: moved out of the params, not copied.
    let arguments = match take(call.params.as_mut(), "arguments") {
        Some(arguments @ Value::Object(_)) => arguments,
        _ => empty,
    };
    Ok((handling, arguments))
}

/// Runs a readied call of `tool` on its request.
pub(crate) fn run(
    tool: Arc<Registered>,
    handling: Handling,
    arguments: Value,
    span: tracing::Span,
    slot: Option<SpanSlot>,
) -> Answer {
    // A 2025 call that may ask mid-call runs its handler again with the
    // answers: it keeps the arguments; every other call moves them.
    let reruns = handling.reruns();
    let mut arguments = Some(arguments);
    handling.run(move |cx, reply| {
        let arguments = if reruns {
            arguments.clone().unwrap_or_default()
        } else {
            arguments.take().unwrap_or_default()
        };
        let tool = Arc::clone(&tool);
        let span = span.clone();
        let slot = slot.clone();
        Box::pin(async move {
            let result = execute(&tool, arguments, cx).await?;
            if result.is_error {
                trace::tool_failed(&span, slot.as_ref().map(|slot| &*slot.0));
            }
            Ok(reply.result(&result.wire(reply.era(), reply.finishing().meta())))
        })
    })
}

/// The handler of `tool` run on `arguments`: an execution error made the
/// `isError` result, a result that breaks the `outputSchema` -32603.
pub(crate) async fn execute(
    tool: &Registered,
    arguments: Value,
    cx: Context,
) -> Result<ToolResult, HandlerError> {
    let result = match (tool.handler)(arguments, cx).await {
        Ok(result) => result,
        Err(HandlerError::Execution(message)) => ToolResult::error(message),
        Err(other) => return Err(other),
    };
    if let Some(problem) = tool.check_output(&result) {
        tracing::error!(tool = %Bounded(tool.name()), problem = %Bounded(&problem), "tool result breaks its outputSchema");
        return Err(HandlerError::Rpc {
            code: ErrorCode::INTERNAL_ERROR,
            message: format!("tool `{}` returned an invalid result", tool.name()),
            data: None,
        });
    }
    Ok(result)
}

/// Finds and checks every `x-mcp-header` annotation of `tool`'s input
/// schema ([`headers::header_params`]); a broken rule is the tool's
/// registration error.
fn header_params(tool: &str, schema: &Value) -> Result<Vec<HeaderParam>, SurfaceError> {
    headers::header_params(schema).map_err(|refused| SurfaceError::HeaderAnnotation {
        tool: tool.to_owned(),
        property: refused.property,
        reason: refused.reason,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::surface::finish::{CachePolicy, CacheScope, Finishing, ServerInfo};

    fn tool(input: Value, output: Option<Value>) -> Tool {
        let tool = Tool::new("t")
            .input_schema(input)
            .raw_handler(|_, _| async { Ok(ToolResult::text("ok")) });
        match output {
            Some(schema) => tool.output_schema(schema),
            None => tool,
        }
    }

    /// Issue 26 §1: a tool's checks are compiled by its first call, not at
    /// registration, and then kept; jsonschema's validator only by the
    /// first value wymcp's own check does not vouch for.
    #[test]
    fn a_tools_validators_are_compiled_on_its_first_call() {
        let registered = tool(
            json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
            Some(json!({"type": "object", "required": ["n"]})),
        )
        .register()
        .unwrap();
        let input = &registered.input_validator;
        let output = registered.output_validator.as_ref().unwrap();
        for lazy in [input, output] {
            assert!(lazy.subset.get().is_none() && lazy.strict.get().is_none());
        }
        assert_eq!(registered.check_arguments(&json!({"n": 1})).unwrap(), None);
        assert!(input.subset.get().is_some_and(Option::is_some));
        assert!(
            input.strict.get().is_none(),
            "a valid call needs no jsonschema"
        );
        let problems = registered
            .check_arguments(&json!({"n": "x"}))
            .unwrap()
            .unwrap();
        assert_eq!(problems[0].pointer, "/n");
        assert!(input.strict.get().is_some_and(Result::is_ok));
        assert!(output.subset.get().is_none() && output.strict.get().is_none());
        let mut result = ToolResult::text("r");
        result.structured_content = Some(json!({"n": 1}));
        assert_eq!(registered.check_output(&result), None);
        assert!(output.strict.get().is_none());
        result.structured_content = Some(json!({"m": 1}));
        let problem = registered.check_output(&result).unwrap();
        assert!(problem.contains("breaks the outputSchema"), "{problem}");
        assert!(output.strict.get().is_some_and(Result::is_ok));
    }

    /// A schema that does not compile still fails the build, though its
    /// validator is compiled later.
    #[test]
    fn a_schema_that_does_not_compile_fails_the_registration() {
        let missing = json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/Missing"}}});
        for (input, output, which) in [
            (missing.clone(), None, "inputSchema"),
            (json!({"type": 5}), None, "inputSchema"),
            (json!({"type": "object"}), Some(missing), "outputSchema"),
            (
                json!({"type": "object"}),
                Some(json!({"type": "object", "pattern": "("})),
                "outputSchema",
            ),
        ] {
            let error = tool(input.clone(), output.clone()).register().unwrap_err();
            assert!(
                matches!(&error, SurfaceError::Schema { tool, which: w, .. } if tool == "t" && *w == which),
                "{input} {output:?}: {error}"
            );
        }
    }

    /// With the build's check skipped (as a schema the check missed would
    /// be), a schema that does not compile refuses every call of the tool,
    /// and never lets one through unchecked.
    #[test]
    fn a_schema_that_does_not_compile_at_the_first_call_refuses_every_call() {
        UNCHECKED.with(|u| u.set(true));
        let registered =
            tool(json!({"$ref": "#/$defs/Missing"}), Some(json!({"type": 5}))).register();
        UNCHECKED.with(|u| u.set(false));
        let registered = registered.unwrap();
        for _ in 0..2 {
            let error = registered.check_arguments(&json!({})).unwrap_err();
            assert_eq!(error.code, ErrorCode::INTERNAL_ERROR, "{error:?}");
            let problem = registered.check_output(&ToolResult::text("r")).unwrap();
            assert!(problem.contains("does not compile"), "{problem}");
        }
    }

    /// The tool result serialised straight onto the wire is the result the
    /// general finish makes of it, in both eras.
    #[test]
    fn a_wire_tool_result_is_the_finished_one() {
        let info = ServerInfo {
            title: Some("T".into()),
            ..ServerInfo::default()
        };
        let finishing = Finishing::new(
            &info,
            CachePolicy {
                ttl_ms: 5,
                scope: CacheScope::Public,
            },
        );
        let mut structured = ToolResult::text("s");
        structured.structured_content = Some(json!({"n": 1, "s": "\u{1F600}\"\\"}));
        let results = [
            ToolResult::text("hello"),
            ToolResult::error("boom"),
            ToolResult::new([]),
            structured,
        ];
        for era in [Era::Modern, Era::Legacy] {
            for result in &results {
                let wire = serde_json::to_value(result.wire(era, finishing.meta())).unwrap();
                let finished = finishing.finish(era, serde_json::to_value(result).unwrap(), false);
                assert_eq!(wire, finished, "{era:?} {result:?}");
            }
        }
    }
}
