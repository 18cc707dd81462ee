//! JSON-RPC error codes and the error object: what every refusal is made
//! of, whatever carries it (an HTTP answer, an SSE event, a line on stdio).

use std::borrow::Cow;
use std::fmt;

use serde::Serialize;
use serde_json::Value;

/// A JSON-RPC error code, with the codes MCP names as constants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ErrorCode(i64);

impl ErrorCode {
    /// Invalid JSON was received (-32700).
    pub const PARSE_ERROR: Self = Self(-32700);
    /// The JSON sent is not a valid request object (-32600).
    pub const INVALID_REQUEST: Self = Self(-32600);
    /// The method does not exist or is not available (-32601; HTTP 404 on
    /// 2026-07-28).
    pub const METHOD_NOT_FOUND: Self = Self(-32601);
    /// Invalid method parameters (-32602).
    pub const INVALID_PARAMS: Self = Self(-32602);
    /// Internal JSON-RPC error (-32603).
    pub const INTERNAL_ERROR: Self = Self(-32603);
    /// A 2025 server's "resource not found" (-32002); 2026-07-28 answers
    /// [`INVALID_PARAMS`](Self::INVALID_PARAMS) instead (SEP-2164).
    pub const RESOURCE_NOT_FOUND_2025: Self = Self(-32002);
    /// A standard header is missing, malformed or disagrees with the body
    /// (-32020).
    pub const HEADER_MISMATCH: Self = Self(-32020);
    /// The request needs a client capability the client did not declare
    /// (-32021).
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: Self = Self(-32021);
    /// The protocol version is not served (-32022).
    pub const UNSUPPORTED_PROTOCOL_VERSION: Self = Self(-32022);

    /// Any other code.
    #[must_use]
    pub const fn new(code: i64) -> Self {
        Self(code)
    }

    /// The code as a number.
    #[must_use]
    pub const fn get(self) -> i64 {
        self.0
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl From<ErrorCode> for i64 {
    fn from(code: ErrorCode) -> i64 {
        code.0
    }
}

impl Serialize for ErrorCode {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_i64(self.0)
    }
}

/// A JSON-RPC error object: code, message, optional data. What a part of
/// wymcp refuses with when it knows nothing of the transport the answer
/// travels on.
///
/// It is not an [`std::error::Error`], so that `?` in a handler keeps its
/// code (it converts into [`HandlerError::Rpc`](crate::HandlerError::Rpc))
/// rather than becoming an execution error as every `std::error::Error`
/// does.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    /// The code.
    pub code: ErrorCode,
    /// What is wrong.
    pub message: Cow<'static, str>,
    /// The error's `data`.
    pub data: Option<Value>,
}

impl RpcError {
    /// An error with this code and message.
    pub fn new(code: ErrorCode, message: impl Into<Cow<'static, str>>) -> Self {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// An invalid-params error (-32602).
    pub fn invalid_params(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorCode::INVALID_PARAMS, message)
    }

    /// Attaches `data`.
    #[must_use]
    pub fn data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}
