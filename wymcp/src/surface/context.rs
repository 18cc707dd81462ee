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

/// Why a handler did not produce its result.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum HandlerError {
    /// The operation failed. A tool answers it as a result with
    /// `isError: true` (so the model sees the message); a prompt or resource
    /// handler as a JSON-RPC internal error.
    #[error("{0}")]
    Execution(String),
    /// The request's params are wrong: -32602.
    #[error("{message}")]
    InvalidParams {
        /// What is wrong.
        message: String,
        /// The error's `data`.
        data: Option<Value>,
    },
    /// The handler needs input from the client first (MRTR).
    #[error("input required")]
    InputRequired(InputRequired),
    /// The request needs client capabilities the client did not declare:
    /// 400/-32021 with `data.requiredCapabilities`.
    #[error("missing required client capability")]
    MissingCapability(Map<String, Value>),
    /// Any other JSON-RPC error.
    #[error("{message}")]
    Rpc {
        /// The JSON-RPC code.
        code: ErrorCode,
        /// The message.
        message: String,
        /// The error's `data`.
        data: Option<Value>,
    },
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

    /// A missing client capability (-32021), e.g. `"sampling"`.
    pub fn missing_capability(capability: &str) -> Self {
        let mut map = Map::new();
        map.insert(capability.to_owned(), json!({}));
        HandlerError::MissingCapability(map)
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
    /// The JSON-RPC error a request answered with this error carries;
    /// `method` names the request in the messages that need it.
    pub(crate) fn into_rpc(self, method: &str) -> RpcError {
        match self {
            HandlerError::InvalidParams { message, data } => RpcError {
                code: ErrorCode::INVALID_PARAMS,
                message: message.into(),
                data,
            },
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
    pub(crate) method: String,
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
        method: &str,
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
            method: method.to_owned(),
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

    /// The capabilities the client declared on this request (`{}` for none;
    /// always `{}` for a 2025 client, whose `initialize` is not remembered).
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
        &self.method
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
