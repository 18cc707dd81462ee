//! Shared helpers of wymcp's test suite.

pub mod child;
#[doc(hidden)]
pub mod fuzz;
pub mod wire;

/// The JSON-RPC codes wymcp answers with, as the numbers a test compares a
/// body's `error.code` with.
pub mod code {
    use wymcp::ErrorCode;

    /// -32700
    pub const PARSE_ERROR: i64 = ErrorCode::PARSE_ERROR.get();
    /// -32600
    pub const INVALID_REQUEST: i64 = ErrorCode::INVALID_REQUEST.get();
    /// -32601
    pub const METHOD_NOT_FOUND: i64 = ErrorCode::METHOD_NOT_FOUND.get();
    /// -32602
    pub const INVALID_PARAMS: i64 = ErrorCode::INVALID_PARAMS.get();
    /// -32603
    pub const INTERNAL_ERROR: i64 = ErrorCode::INTERNAL_ERROR.get();
    /// -32020
    pub const HEADER_MISMATCH: i64 = ErrorCode::HEADER_MISMATCH.get();
    /// -32021
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 =
        ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY.get();
    /// -32022
    pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = ErrorCode::UNSUPPORTED_PROTOCOL_VERSION.get();
}

/// A JSON response with this status and body, as a test's own stage
/// answers.
#[must_use]
pub fn json_response(status: http::StatusCode, body: Vec<u8>) -> wymcp::Response {
    let mut response = wymcp::Response::new(body.into());
    *response.status_mut() = status;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}
