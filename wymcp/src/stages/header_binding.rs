//! `HeaderBinding` (wire check): binds the standard headers to the body
//! fields they mirror, so that a gateway routing on a header and the server
//! acting on the body cannot disagree.
//!
//! **Why here.** After protocol fields, which has just proven the body's
//! protocol version a string (and served, when the header agrees), so the
//! protocol-version row has a known-good body value; before Validate, as a
//! wire check must be. Its other rows read body fields nothing has validated
//! yet and answer none of their defects: **a body value with no header
//! spelling binds nothing** (a `params.name` that is not a string, an
//! argument that is an object), and **a header whose body value has the
//! wrong type is left to Validate** (an `x-mcp-header` string argument sent
//! as a number), so the stage that owns the defect answers it.
//!
//! **Modern-era rows**, in order, each answered `400`/`-32020` naming the
//! header (`data.header`), the id by the rejection-id rule:
//!
//! | header | body | missing header |
//! |---|---|---|
//! | `MCP-Protocol-Version` | `params._meta["io.modelcontextprotocol/protocolVersion"]` | refused on a request; a notification may omit it |
//! | `Mcp-Method` | `method` | refused on a request; a notification may omit it |
//! | `Mcp-Name` | `params.name` (`tools/call`, `prompts/get`), `params.uri` (`resources/read`), `params.taskId` (`tasks/get`, `tasks/update`, `tasks/cancel`: SEP-2663 routing headers) | refused when the body has the value |
//! | `Mcp-Param-{Name}` | the `tools/call` argument annotated `x-mcp-header: {Name}` ([`Server::header_params`](crate::Server::header_params)) | refused when the argument has a value; a header sent for an absent or `null` argument is refused too |
//!
//! Values are compared after stripping HTTP optional whitespace, exactly
//! and case-sensitively; a byte a plain header value may not carry is
//! `-32020`. `Mcp-Name` and `Mcp-Param-*` are decoded from the strict
//! `=?base64?…?=` form first (see [`crate::headers`]); a bad payload is
//! `-32020`, an upper-case `=?BASE64?` is a literal. Integer arguments are
//! compared numerically (`42.0` equals `42`), booleans as `true`/`false`.
//! Only requests and notifications are read: an unidentified request or an
//! unknown body gives this stage nothing to bind (Validate answers them).
//! `Mcp-Param-*` headers no annotation declares are ignored, as the spec
//! asks of a server that does not recognise them.
//!
//! **Legacy era** (2025 clients): an absent `MCP-Protocol-Version` passes (a
//! 2025 `initialize` carries none); a present one must name a revision the
//! server serves, else `400`, `-32600`, with `data.supported`/`data.requested`
//! (2025 defines a plain 400 and no code; `-32022` is 2026's). A served one
//! sets [`Exchange::revision`]. Not refused on an `initialize`: what its
//! header names is no negotiated revision (a client's default, sent before
//! there is one, or what a `server/discover` probe left in the client's
//! transport), so a date it names that is no served 2025 revision passes,
//! and the handshake negotiates from the body's `protocolVersion` (see
//! `protocol::revision::is_handshake`). A 2025 header beside a 2026 `_meta`
//! protocol version is `-32020`. The 2026 rows (`Mcp-Method`, `Mcp-Name`,
//! `Mcp-Param-*`) are not required of a 2025 client, which sends none; but
//! one that is present is bound to the body as in the modern era, so a
//! gateway routing on it can never route one call while the server runs
//! another.
//!
//! **Integers beyond 64 bits.** An `x-mcp-header` integer argument that no
//! header value can spell exactly (a JSON number past `±2^64`, which the
//! schema's `integer` still accepts) is `-32020`: it is refused, never left
//! unbound.

use std::borrow::Cow;
use std::fmt::{self, Write as _};

use http::{HeaderMap, HeaderName, StatusCode};
use serde_json::{Map, Value, json};

use crate::exchange::Exchange;
use crate::protocol::error::ErrorCode;
use crate::protocol::headers::{
    HeaderParam, HeaderParamType, HeaderValueError, MCP_METHOD, MCP_NAME, MCP_PROTOCOL_VERSION,
    decoded_text, header_spelling, is_integral, plain_text,
};
use crate::protocol::jsonrpc::MessageKind;
use crate::protocol::revision::{Era, is_handshake};
use crate::reply::Flow;
use crate::reply::Rejection;
use crate::server::Server;
use crate::stage::Stage;

use crate::protocol::meta::PROTOCOL_VERSION as PROTOCOL_VERSION_KEY;

/// Binds the standard headers to the body.
#[derive(Debug, Clone, Copy, Default)]
pub struct HeaderBinding;

impl Stage for HeaderBinding {
    async fn run(ex: &mut Exchange<'_>) -> Flow {
        if ex.era() == Era::Legacy
            && let Flow::Answer(refused) = legacy(ex)
        {
            return Flow::Answer(refused);
        }
        let Some(kind @ (MessageKind::Request | MessageKind::Notification)) = ex.kind() else {
            return Flow::Continue;
        };
        let Some(message) = ex.message() else {
            return Flow::Continue;
        };
        let bound = match ex.era() {
            Era::Modern => bind(ex.server(), ex.headers(), message, kind),
            Era::Legacy => bind_present(ex.server(), ex.headers(), message),
        };
        match bound {
            Ok(()) => Flow::Continue,
            Err(Mismatch { header, message }) => {
                let mut data = Map::new();
                data.insert("header".to_owned(), Value::String(header));
                ex.reject(
                    Rejection::new(StatusCode::BAD_REQUEST, ErrorCode::HEADER_MISMATCH, message)
                        .data(Value::Object(data)),
                )
            }
        }
    }
}

/// One failed row: the header's display name, and the rejection's message
/// (`header mismatch: ` and why).
#[derive(Debug, PartialEq, Eq)]
struct Mismatch {
    header: String,
    message: String,
}

/// What every mismatch's message starts with.
const MISMATCH: &str = "header mismatch: ";

impl Mismatch {
    fn new(header: &str, reason: impl fmt::Display) -> Self {
        let mut message = String::from(MISMATCH);
        // Writing to a String cannot fail.
        let _ = write!(message, "{reason}");
        Mismatch {
            header: header.to_owned(),
            message,
        }
    }

    /// A mismatch whose reason is `parts` in order: the common rows'
    /// messages, built in one buffer of the right size rather than
    /// formatted twice (the mismatch is a rejection's own cost, which must
    /// stay below a served request's).
    fn says(header: &str, parts: &[&str]) -> Self {
        let len = MISMATCH.len() + parts.iter().map(|part| part.len()).sum::<usize>();
        let mut message = String::with_capacity(len);
        message.push_str(MISMATCH);
        for part in parts {
            message.push_str(part);
        }
        Mismatch {
            header: header.to_owned(),
            message,
        }
    }
}

/// How a header value is read before comparing.
#[derive(Clone, Copy)]
enum Reading {
    /// `MCP-Protocol-Version`, `Mcp-Method`: plain text, no sentinel.
    Plain,
    /// `Mcp-Name`, `Mcp-Param-*`: the `=?base64?…?=` form decoded.
    Sentinel,
}

/// Checks the rows of a 2025 request: a 2026 `_meta` protocol version
/// beside a 2025 header is a mismatch, and every 2026 header that is
/// present (a 2025 client sends none, a gateway may route on one) is bound
/// to the body as in the modern era; an absent one passes.
fn bind_present(server: &Server, headers: &HeaderMap, message: &Value) -> Result<(), Mismatch> {
    let params = message.get("params");
    let version = params
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(PROTOCOL_VERSION_KEY));
    if version.is_some() && headers.contains_key(MCP_PROTOCOL_VERSION) {
        return Err(Mismatch::new(
            "MCP-Protocol-Version",
            "the `MCP-Protocol-Version` header names a 2025 revision but the body's `_meta` names a protocol version",
        ));
    }
    let method = message.get("method").and_then(Value::as_str);
    present_row(headers, &MCP_METHOD, "Mcp-Method", method, Reading::Plain)?;
    let name = name_of(method, params);
    present_row(headers, &MCP_NAME, "Mcp-Name", name, Reading::Sentinel)?;
    if let (Some("tools/call"), Some(tool)) = (method, name) {
        let arguments = params.and_then(|p| p.get("arguments"));
        for param in server.header_params(tool) {
            param_row(headers, param, arguments, false)?;
        }
    }
    Ok(())
}

/// A header that may be absent, bound to its body value when present: a
/// present header whose body value is absent is a mismatch too.
fn present_row(
    headers: &HeaderMap,
    name: &HeaderName,
    display: &str,
    body: Option<&str>,
    reading: Reading,
) -> Result<(), Mismatch> {
    if !headers.contains_key(name) {
        return Ok(());
    }
    match body {
        Some(_) => standard_row(headers, name, display, body, true, reading),
        None => Err(Mismatch::says(
            display,
            &[
                "the `",
                display,
                "` header is sent but the body has no value for it",
            ],
        )),
    }
}

/// The body value `Mcp-Name` mirrors: `params.name` of `tools/call` and
/// `prompts/get`, `params.uri` of `resources/read`, `params.taskId` of the
/// tasks extension's methods.
fn name_of<'v>(method: Option<&str>, params: Option<&'v Value>) -> Option<&'v str> {
    let field = match method {
        Some("tools/call" | "prompts/get") => "name",
        Some("resources/read") => "uri",
        Some("tasks/get" | "tasks/update" | "tasks/cancel") => "taskId",
        _ => return None,
    };
    params?.get(field)?.as_str()
}

/// Checks every modern-era row, in order.
fn bind(
    server: &Server,
    headers: &HeaderMap,
    message: &Value,
    kind: MessageKind,
) -> Result<(), Mismatch> {
    let request = kind == MessageKind::Request;
    let params = message.get("params");

    // MCP-Protocol-Version ↔ _meta protocol version.
    let version = params
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(PROTOCOL_VERSION_KEY))
        .and_then(Value::as_str);
    standard_row(
        headers,
        &MCP_PROTOCOL_VERSION,
        "MCP-Protocol-Version",
        version,
        request,
        Reading::Plain,
    )?;

    // Mcp-Method ↔ method.
    let method = message.get("method").and_then(Value::as_str);
    standard_row(
        headers,
        &MCP_METHOD,
        "Mcp-Method",
        method,
        request,
        Reading::Plain,
    )?;

    if !request {
        return Ok(());
    }

    // Mcp-Name ↔ params.name / params.uri.
    let name = name_of(method, params);
    if let Some(value) = name {
        standard_row(
            headers,
            &MCP_NAME,
            "Mcp-Name",
            Some(value),
            true,
            Reading::Sentinel,
        )?;
    }

    // Mcp-Param-{Name} ↔ annotated tools/call arguments (a tool call's
    // name is the one `Mcp-Name` was bound to: not looked up again).
    if let (Some("tools/call"), Some(tool)) = (method, name) {
        let arguments = params.and_then(|p| p.get("arguments"));
        for param in server.header_params(tool) {
            param_row(headers, param, arguments, true)?;
        }
    }
    Ok(())
}

/// A standard header against its body value. `required`: a missing header
/// is a mismatch (a request's `MCP-Protocol-Version` and `Mcp-Method`, an
/// `Mcp-Name` whose body value is present); otherwise it passes (a
/// notification's). A present header must match a present body value.
fn standard_row(
    headers: &HeaderMap,
    name: &HeaderName,
    display: &str,
    body: Option<&str>,
    required: bool,
    reading: Reading,
) -> Result<(), Mismatch> {
    let Some(value) = headers.get(name) else {
        return if required {
            Err(Mismatch::says(
                display,
                &["the `", display, "` header is missing"],
            ))
        } else {
            Ok(())
        };
    };
    let text = read(value, reading)
        .map_err(|e| Mismatch::new(display, format_args!("`{display}`: {e}")))?;
    match body {
        Some(body) if text != body => Err(Mismatch::says(
            display,
            &["the `", display, "` header does not match the body"],
        )),
        _ => Ok(()),
    }
}

fn read(value: &http::HeaderValue, reading: Reading) -> Result<Cow<'_, str>, HeaderValueError> {
    match reading {
        Reading::Plain => plain_text(value).map(Cow::Borrowed),
        Reading::Sentinel => decoded_text(value),
    }
}

/// One `x-mcp-header` annotation against the argument it mirrors.
/// `required`: a missing header is a mismatch when the argument has a value
/// (the modern era); otherwise an absent header passes.
fn param_row(
    headers: &HeaderMap,
    param: &HeaderParam,
    arguments: Option<&Value>,
    required: bool,
) -> Result<(), Mismatch> {
    let display = format!("Mcp-Param-{}", param.name);
    let header = HeaderName::from_bytes(param.header_name().as_bytes())
        .ok()
        .and_then(|name| headers.get(name));
    let body = arguments.and_then(|arguments| {
        param
            .path
            .iter()
            .try_fold(arguments, |value, key| value.as_object()?.get(key))
    });
    let body = match body {
        None | Some(Value::Null) => {
            return match header {
                Some(_) => Err(Mismatch::says(
                    &display,
                    &[
                        "the `",
                        &display,
                        "` header is sent but its argument has no value",
                    ],
                )),
                None => Ok(()),
            };
        }
        Some(value) => value,
    };
    if !required && header.is_none() {
        return Ok(());
    }
    let Some(expected) = header_spelling(body, param.ty) else {
        if param.ty == HeaderParamType::Integer && body.is_number() && is_integral(body) {
            // An integer the schema accepts but no header can spell exactly
            // (beyond 64 bits): refused rather than left unbound.
            return Err(Mismatch::new(
                &display,
                format_args!(
                    "the argument `{display}` mirrors is an integer beyond 64 bits, which no header value can carry exactly"
                ),
            ));
        }
        // Wrong type for the annotation, or no header spelling: Validate's.
        return Ok(());
    };
    let Some(value) = header else {
        return Err(Mismatch::says(
            &display,
            &["the `", &display, "` header is missing"],
        ));
    };
    let text = decoded_text(value)
        .map_err(|e| Mismatch::new(&display, format_args!("`{display}`: {e}")))?;
    if expected.matches(&text) {
        Ok(())
    } else {
        Err(Mismatch::says(
            &display,
            &["the `", &display, "` header does not match the body"],
        ))
    }
}

/// The legacy era's version row: a present `MCP-Protocol-Version` names a
/// served revision.
fn legacy(ex: &mut Exchange<'_>) -> Flow {
    if !ex.headers().contains_key(MCP_PROTOCOL_VERSION) {
        return Flow::Continue;
    }
    // A header naming a served revision establishes it, by the exchange's
    // rule: the same reading this row refuses, not a second copy of it.
    if ex.establish_revision().is_some() {
        return Flow::Continue;
    }
    // Any other on an `initialize` is a client's default or a discover
    // probe's leftover, not a negotiated revision: the handshake negotiates.
    if ex.message().is_some_and(is_handshake) {
        return Flow::Continue;
    }
    let server = ex.server();
    let requested = ex
        .headers()
        .get(MCP_PROTOCOL_VERSION)
        .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned())
        .unwrap_or_default();
    let supported: Vec<&str> = server.revisions().iter().map(|r| r.as_str()).collect();
    ex.reject(
        Rejection::new(
            StatusCode::BAD_REQUEST,
            ErrorCode::INVALID_REQUEST,
            format!(
                "unsupported `MCP-Protocol-Version`: this server serves {}",
                supported.join(", ")
            ),
        )
        .data(json!({
            "header": "MCP-Protocol-Version",
            "supported": supported,
            "requested": requested.trim_matches([' ', '\t']),
        })),
    )
}
