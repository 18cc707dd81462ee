//! The handler's context, the handler error, and the MRTR hooks.
//!
//! A [`Context`] is what a handler knows of its request beyond its
//! arguments: the principal, the capabilities the client declared for this
//! request, the request's `_meta`, the MRTR view of the request
//! ([`Inputs`]: the `inputResponses` and unsealed `requestState` of a
//! retry), and the means to send progress and log notifications. Those
//! notifications go to a channel the request's transport drains: over HTTP,
//! with any notification sent, the answer becomes a `text/event-stream`.
//!
//! A handler that needs input from the client (MRTR) builds an
//! [`InputRequired`] with [`Context::input_required`] and returns it as an
//! error (`Err(ask.into())`); Dispatch seals its state and answers
//! `input_required`. See [`mrtr`](crate::mrtr).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::notify::{Emitter, LogLevel};
use crate::auth::Principal;
use crate::mrtr::{InputRequired, Inputs, UndeclaredInput};
use crate::protocol::error::{ErrorCode, RpcError};
use crate::protocol::meta;
use crate::protocol::revision::{Era, Revision};
use crate::protocol::text::truncated;

/// Why a handler did not produce its result.
///
/// **`?` works.** Any error type implementing [`std::error::Error`] +
/// `Send + Sync` converts into [`HandlerError::Execution`], its message
/// the error's and its sources' (`"reading notes.json: permission
/// denied"`). A tool answers an execution error as a result with
/// `isError: true`, which the model reads and can act on; a prompt,
/// resource or completion handler as a JSON-RPC internal error (-32603).
/// The protocol errors a handler may mean have their own constructors:
/// [`resource_not_found`](Self::resource_not_found) (in the code of the
/// client's era), [`invalid_params`](Self::invalid_params),
/// [`missing_capability`](Self::missing_capability).
///
/// ```
/// use wymcp::{HandlerError, NoArgs, Tool, ToolResult};
///
/// let tool = Tool::new("read_config").handler(|_: NoArgs, _cx| async move {
///     // An `std::io::Error`, answered `isError: true` with its message.
///     let text = std::fs::read_to_string("/nonexistent/config.toml")?;
///     Ok(ToolResult::text(text))
/// });
/// # let _ = tool;
/// let not_found = HandlerError::resource_not_found("notes://42");
/// assert_eq!(not_found.to_string(), "resource not found: notes://42");
/// ```
///
/// `HandlerError` itself does not implement [`std::error::Error`]: that is
/// what lets every error type convert into it (as `anyhow::Error` does).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum HandlerError {
    /// The operation failed. A tool answers it as a result with
    /// `isError: true` (so the model sees the message); a prompt, resource
    /// or completion handler as a JSON-RPC internal error (-32603).
    Execution(String),
    /// The request's params are wrong: -32602.
    InvalidParams {
        /// What is wrong.
        message: String,
        /// The error's `data`.
        data: Option<Value>,
    },
    /// The resource the request names does not exist: -32602 on 2026-07-28
    /// (SEP-2164), -32002 for a 2025 client, with `data.uri` in both.
    ResourceNotFound {
        /// The URI asked for.
        uri: String,
    },
    /// The handler needs input from the client first (MRTR).
    InputRequired(InputRequired),
    /// The request needs client capabilities the client did not declare:
    /// 400/-32021 with `data.requiredCapabilities`.
    MissingCapability(Map<String, Value>),
    /// Any other JSON-RPC error.
    Rpc {
        /// The JSON-RPC code.
        code: ErrorCode,
        /// The message.
        message: String,
        /// The error's `data`.
        data: Option<Value>,
    },
}

impl fmt::Display for HandlerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HandlerError::Execution(message)
            | HandlerError::InvalidParams { message, .. }
            | HandlerError::Rpc { message, .. } => f.write_str(message),
            HandlerError::ResourceNotFound { uri } => write!(f, "resource not found: {uri}"),
            HandlerError::InputRequired(_) => f.write_str("input required"),
            HandlerError::MissingCapability(missing) => write!(
                f,
                "missing required client capabilities: {}",
                missing.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
        }
    }
}

impl HandlerError {
    /// An execution failure with this message.
    pub fn execution(message: impl fmt::Display) -> Self {
        HandlerError::Execution(message.to_string())
    }

    /// An invalid-params error (-32602).
    pub fn invalid_params(message: impl Into<String>) -> Self {
        HandlerError::InvalidParams {
            message: message.into(),
            data: None,
        }
    }

    /// Resource not found, answered in the code of the client's era
    /// (-32602 on 2026-07-28, -32002 on 2025) with `data.uri`.
    pub fn resource_not_found(uri: impl Into<String>) -> Self {
        HandlerError::ResourceNotFound { uri: uri.into() }
    }

    /// A missing client capability (-32021), e.g. `"sampling"`.
    pub fn missing_capability(capability: &str) -> Self {
        let mut map = Map::new();
        map.insert(capability.to_owned(), json!({}));
        HandlerError::MissingCapability(map)
    }
}

/// Every error type: an execution error whose message is the error's,
/// followed by its sources'.
impl<E: std::error::Error + Send + Sync + 'static> From<E> for HandlerError {
    fn from(error: E) -> Self {
        let mut message = error.to_string();
        let mut source = error.source();
        while let Some(cause) = source {
            message.push_str(": ");
            message.push_str(&cause.to_string());
            source = cause.source();
        }
        HandlerError::Execution(message)
    }
}

impl From<InputRequired> for HandlerError {
    fn from(input: InputRequired) -> Self {
        HandlerError::InputRequired(input)
    }
}

impl From<UndeclaredInput> for HandlerError {
    fn from(undeclared: UndeclaredInput) -> Self {
        // The precise need (e.g. `{"elicitation": {"url": {}}}`), as -32021.
        undeclared.rpc_error().into()
    }
}

impl From<RpcError> for HandlerError {
    fn from(error: RpcError) -> Self {
        HandlerError::Rpc {
            code: error.code,
            message: error.message.into_owned(),
            data: error.data,
        }
    }
}

impl HandlerError {
    /// The JSON-RPC error a request of `era` answered with this error
    /// carries; `method` names the request in the messages that need it.
    pub(crate) fn into_rpc(self, era: Era, method: &str) -> RpcError {
        match self {
            HandlerError::InvalidParams { message, data } => RpcError {
                code: ErrorCode::INVALID_PARAMS,
                message: message.into(),
                data,
            },
            HandlerError::ResourceNotFound { uri } => {
                let code = match era {
                    Era::Modern => ErrorCode::INVALID_PARAMS,
                    Era::Legacy => ErrorCode::RESOURCE_NOT_FOUND_2025,
                };
                // The message bounded for a log line; `data.uri` is the URI
                // asked for, as the client matches it.
                RpcError::new(code, format!("resource not found: {}", truncated(&uri)))
                    .data(json!({"uri": uri}))
            }
            HandlerError::MissingCapability(missing) => RpcError::new(
                ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
                format!(
                    "`{method}` needs client capabilities the request did not declare: {}",
                    missing.keys().cloned().collect::<Vec<_>>().join(", ")
                ),
            )
            .data(json!({"requiredCapabilities": missing})),
            HandlerError::Rpc {
                code,
                message,
                data,
            } => RpcError {
                code,
                message: message.into(),
                data,
            },
            HandlerError::Execution(message) => RpcError::new(ErrorCode::INTERNAL_ERROR, message),
            HandlerError::InputRequired(_) => RpcError::new(
                ErrorCode::INTERNAL_ERROR,
                format!(
                    "the handler of `{method}` asked the client for input, which this request cannot carry"
                ),
            ),
        }
    }
}

/// A boxed, sendable future, as handlers return them once registered.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// What a handler knows of its request beyond its arguments.
#[derive(Debug, Clone)]
pub struct Context {
    pub(crate) principal: Option<Principal>,
    pub(crate) client_capabilities: Value,
    pub(crate) meta: Value,
    pub(crate) method: &'static str,
    pub(crate) era: Era,
    pub(crate) revision: Option<Revision>,
    pub(crate) inputs: Inputs,
    pub(crate) emitter: Emitter,
    /// What the server shares with every handler, by type: its
    /// [`Catalog`](super::Catalog) (see [`Context::catalog`]).
    pub(crate) shared: Arc<http::Extensions>,
}

impl Context {
    /// A context for a request with this `_meta`, in this era, whose
    /// notifications go to `emitter`.
    pub(crate) fn new(
        shared: Arc<http::Extensions>,
        method: &'static str,
        era: Era,
        meta: Value,
        principal: Option<Principal>,
        inputs: Inputs,
        emitter: Emitter,
    ) -> Self {
        let client_capabilities = match era {
            Era::Modern => meta
                .get(meta::CLIENT_CAPABILITIES)
                .filter(|c| c.is_object())
                .cloned()
                .unwrap_or_else(|| json!({})),
            Era::Legacy => json!({}),
        };
        Context {
            principal,
            client_capabilities,
            meta,
            method,
            era,
            revision: None,
            inputs,
            emitter,
            shared,
        }
    }

    /// The authenticated caller, when auth is configured.
    #[must_use]
    pub fn principal(&self) -> Option<&Principal> {
        self.principal.as_ref()
    }

    /// The capabilities the client declared on this request (`{}` for none).
    /// A 2025 client's are those its `Mcp-Session-Id` token carries (what it
    /// declared at `initialize` that a server may ask mid-call), on a
    /// `tools/call`, `prompts/get` or `resources/read`; `{}` otherwise.
    #[must_use]
    pub fn client_capabilities(&self) -> &Value {
        &self.client_capabilities
    }

    /// Whether the client declared the capability `name` (`"elicitation"`,
    /// `"sampling"`, `"roots"`, …).
    #[must_use]
    pub fn has_client_capability(&self, name: &str) -> bool {
        self.client_capabilities.get(name).is_some()
    }

    /// The request's `params._meta` (`Null` when absent).
    #[must_use]
    pub fn meta(&self) -> &Value {
        &self.meta
    }

    /// The request's method.
    #[must_use]
    pub fn method(&self) -> &str {
        self.method
    }

    /// The request's era.
    #[must_use]
    pub fn era(&self) -> Era {
        self.era
    }

    /// The revision the request speaks, when a stage established it.
    #[must_use]
    pub fn revision(&self) -> Option<Revision> {
        self.revision
    }

    /// A value the server shares with every handler, by its type.
    pub(crate) fn shared<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.shared.get::<T>()
    }

    /// The application's value of type `T`, given to the server with
    /// [`ServerBuilder::state`](crate::ServerBuilder::state): one value
    /// shared by every handler, never cloned into each.
    ///
    /// # Panics
    ///
    /// When the server was given no value of type `T`: a mistake in the
    /// server's code, which the panic names. (A handler that panics is
    /// answered -32603 and logged; the server goes on.) Use
    /// [`try_state`](Self::try_state) where the value is optional.
    ///
    /// ```
    /// use std::sync::Mutex;
    /// use wymcp::{Context, NoArgs, Server, Tool, ToolResult};
    ///
    /// #[derive(Default)]
    /// struct Notes(Mutex<Vec<String>>);
    ///
    /// let server = Server::builder()
    ///     .state(Notes::default())
    ///     .tool(Tool::new("count").handler(|_: NoArgs, cx: Context| async move {
    ///         let count = cx.state::<Notes>().0.lock().unwrap().len();
    ///         Ok(ToolResult::text(count.to_string()))
    ///     }))
    ///     .build()
    ///     .unwrap();
    /// # let _ = server;
    /// ```
    #[must_use]
    #[track_caller]
    pub fn state<T: Send + Sync + 'static>(&self) -> &T {
        match self.try_state::<T>() {
            Some(state) => state,
            None => panic!(
                "the server has no state of type `{}`: give it with `ServerBuilder::state`",
                std::any::type_name::<T>()
            ),
        }
    }

    /// The application's value of type `T`, if the server was given one.
    ///
    /// ```
    /// use wymcp::{Context, NoArgs, Tool, ToolResult};
    ///
    /// struct Greeting(String);
    ///
    /// let tool = Tool::new("greet").handler(|_: NoArgs, cx: Context| async move {
    ///     let text = cx.try_state::<Greeting>().map_or("hello", |g| g.0.as_str());
    ///     Ok(ToolResult::text(text))
    /// });
    /// # let _ = tool;
    /// ```
    #[must_use]
    pub fn try_state<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.shared.get::<Arc<T>>().map(AsRef::as_ref)
    }

    /// The application's value of type `T` as an `Arc`, for a task that
    /// outlives the handler's borrow of its context.
    ///
    /// ```
    /// use wymcp::Context;
    ///
    /// struct Store;
    ///
    /// let cx = Context::for_test(serde_json::json!({})).with_state(Store);
    /// let store = cx.state_arc::<Store>().unwrap();
    /// std::thread::spawn(move || drop(store)).join().unwrap();
    /// ```
    #[must_use]
    pub fn state_arc<T: Send + Sync + 'static>(&self) -> Option<Arc<T>> {
        self.shared.get::<Arc<T>>().cloned()
    }

    /// The context with `value` as its state of type `T` (for unit tests of
    /// handlers, with [`Context::for_test`]).
    ///
    /// ```
    /// use wymcp::Context;
    ///
    /// struct Limit(u32);
    ///
    /// let cx = Context::for_test(serde_json::json!({})).with_state(Limit(3));
    /// assert_eq!(cx.state::<Limit>().0, 3);
    /// assert!(cx.try_state::<String>().is_none());
    /// ```
    #[must_use]
    pub fn with_state<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        let mut shared = (*self.shared).clone();
        shared.insert(Arc::new(value));
        self.shared = Arc::new(shared);
        self
    }

    /// The `progressToken` of the request, if it asked for progress.
    #[must_use]
    pub fn progress_token(&self) -> Option<&Value> {
        self.meta.get(meta::PROGRESS_TOKEN)
    }

    /// Reports progress; sent only when the request carries a
    /// `progressToken`. Returns whether a notification was sent.
    pub fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) -> bool {
        self.emitter.progress(progress, total, message)
    }

    /// Sends a log message; sent only when the request asked for log
    /// messages at `level` or below (a 2025 request: every level). Returns
    /// whether a notification was sent.
    pub fn log(&self, level: LogLevel, data: impl Into<Value>) -> bool {
        self.emitter.log(level, None, data.into())
    }

    /// The emitter of the request's notifications, for a handler that hands
    /// it to a task of its own.
    #[must_use]
    pub fn emitter(&self) -> &Emitter {
        &self.emitter
    }

    /// The MRTR view of the request: the retry's `inputResponses`, the
    /// unsealed `requestState`, the declared capabilities.
    #[must_use]
    pub fn inputs(&self) -> &Inputs {
        &self.inputs
    }

    /// A new `input_required` answer for this request's client; return it
    /// with `Err(ask.into())`.
    #[must_use]
    pub fn input_required(&self) -> InputRequired {
        self.inputs.input_required()
    }
}
