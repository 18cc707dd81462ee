//! The whole default chain (`wymcp::chain::post::handle`) from arbitrary
//! bytes.
//!
//! **The input** of [`check_chain`] is a request spelled as text, so that a
//! libFuzzer dictionary of header names, methods and `_meta` keys works on it
//! and a corpus file can be read and written by hand:
//!
//! ```text
//! [h2 ]<request target>\n
//! <Name>: <value>\n          (any number, in order; a name may repeat)
//! \n
//! <body bytes>
//! ```
//!
//! A target that is not a URI becomes `/mcp`; a header line whose name or
//! value `http` refuses is skipped (hyper would have refused it before any
//! stage); `h2 ` makes it an HTTP/2 request. [`check_dispatch`] takes a body
//! only and derives the standard headers from it, as a well-behaved client
//! would, so the fuzzer spends its time past the wire checks, in Validate
//! and Dispatch's parameter decoding.
//!
//! **The invariants**, checked on every answer:
//!
//! 1. the status is in the chain's table (DESIGN.md §3–§4 and Dispatch's
//!    module docs): 200, 202, 400, 401, 403, 404, 413, 414, 415. The parse
//!    step's 408 and transport 400 need a stalled or broken body, which an
//!    in-memory body never is; 405 is the router's, not the chain's; 500 is
//!    for a misassembled chain or a failing handler, and the fuzz server's
//!    handlers do not fail;
//! 2. a JSON-RPC error answer is well formed (`jsonrpc: "2.0"`, an integer
//!    `code`, a string `message`), was recorded as exactly one rejection
//!    event, by a stage of [`CHAIN`], with the answer's status and code, and
//!    that (stage, status, code) is one the stage's docs say it answers;
//! 3. the rejection-id rule: a rejection by a stage before Classify carries
//!    `id: null`; after it, the body's id when the body classifies as a
//!    request (by the reference classification of
//!    [`super::classify::reference_kind`]) and `null` otherwise; a result
//!    answers a request, with its id;
//! 4. `202` answers a notification, with an empty body and no rejection;
//! 5. an HTTP/2 answer has no `Connection` header; over HTTP/1.1 the 413 and
//!    the -32700 close the connection; a 401 carries a Bearer challenge.

use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::Poll;

use crate::code;
use axum::body::{Body, HttpBody};
use bytes::Bytes;
use http::{HeaderName, HeaderValue, Method, Request, StatusCode, Version, header};
use serde_json::{Map, Value, json};
use wymcp::auth::{AuthConfig, Principal, StaticTokens};
use wymcp::chain::post::{CHAIN, handle};
use wymcp::fuzzing::{HeaderParamType, encode_value};
use wymcp::mrtr::{InputKind, InputRequest};
use wymcp::{Completions, PromptArgs, TemplateVars};
use wymcp::{
    HandlerError, MessageKind, Prompt, PromptResult, Resource, ResourceContents, ResourceTemplate,
    Server, Tool, ToolResult,
};

use super::capture::{self, RejectionEvent};
use super::classify::reference_kind;
use super::ensure;

/// The body ceiling of the fuzz server: small, so the fuzzer reaches the 413.
pub const BODY_CEILING: usize = 4096;
/// The query ceiling of the fuzz server: small, so the fuzzer reaches the 414.
pub const QUERY_CEILING: usize = 256;
/// A token the fuzz server accepts, with every scope it requires.
pub const GOOD_TOKEN: &str = "good";
/// A token the fuzz server accepts, lacking the required scope (403).
pub const WEAK_TOKEN: &str = "weak";
/// The one origin the fuzz server allows besides none.
pub const ORIGIN: &str = "https://app.example";

const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";

/// The statuses the default chain may answer a POST with, on the fuzz
/// server (see the module docs, invariant 1).
pub const STATUSES: [u16; 9] = [200, 202, 400, 401, 403, 404, 413, 414, 415];

/// The server every chain input runs against: auth with a required scope, an
/// allowed origin, small ceilings, and a surface of every kind (tools with
/// `x-mcp-header` string, integer, boolean and nested annotations, an MRTR
/// tool, static and templated resources, prompts, completion, listen).
#[must_use]
pub fn server() -> Arc<Server> {
    static SERVER: OnceLock<Arc<Server>> = OnceLock::new();
    SERVER
        .get_or_init(|| Arc::new(build_server().unwrap_or_else(|e| panic!("fuzz server: {e}"))))
        .clone()
}

fn build_server() -> Result<Server, wymcp::BuildError> {
    let principal = |subject: &str, scopes: &[&str]| Principal {
        subject: subject.to_owned(),
        scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
        ..Principal::default()
    };
    let tokens = StaticTokens::new()
        .token(GOOD_TOKEN, principal("alice", &["mcp"]))
        .token(WEAK_TOKEN, principal("bob", &[]));
    Server::builder()
        .info("wymcp-fuzz", "0")
        .body_ceiling(BODY_CEILING)
        .query_ceiling(QUERY_CEILING)
        .auth(tokens, AuthConfig::new().required_scopes(["mcp"]))
        .allowed_origins([ORIGIN])
        .logging()
        .completion(|request, _| async move {
            Ok(Completions::matching(&request.value, ["alpha", "beta", "gamma"]))
        })
        .tool(
            Tool::new("echo")
                .description("Echoes its arguments; four of them are mirrored in headers")
                .input_schema(json!({
                    "type": "object",
                    "properties": {
                        "region": {"type": "string", "x-mcp-header": "Region"},
                        "count": {"type": "integer", "x-mcp-header": "Count"},
                        "dry": {"type": "boolean", "x-mcp-header": "Dry"},
                        "where": {"type": "object", "properties": {
                            "zone": {"type": "string", "x-mcp-header": "Zone"}
                        }},
                        "note": {"type": "string"}
                    },
                    "required": ["region"]
                }))
                .raw_handler(|args, _| async move { Ok(ToolResult::text(args.to_string())) }),
        )
        .tool(
            Tool::new("plain")
                .description("No arguments")
                .raw_handler(|_, _| async { Ok(ToolResult::text("plain")) }),
        )
        .tool(
            Tool::new("ask")
                .description("MRTR: asks for a name, carrying a requestState")
                .raw_handler(|_, cx| async move {
                    let inputs = cx.inputs();
                    if inputs.state() == Some(b"asked".as_slice()) {
                        return Ok(ToolResult::text("answered"));
                    }
                    if !inputs.declares(InputKind::Elicitation) {
                        return Err(HandlerError::missing_capability("elicitation"));
                    }
                    let ask = cx
                        .input_required()
                        .request(
                            "name",
                            InputRequest::elicit(
                                "Name?",
                                json!({"type": "object", "properties": {"name": {"type": "string"}}}),
                            ),
                        )?
                        .state(b"asked".to_vec());
                    Err(ask.into())
                }),
        )
        .resource(
            Resource::new("test://static", "Static")
                .mime_type("text/plain")
                .text("static"),
        )
        .resource_template(
            ResourceTemplate::new("test://item/{id}", "Item").handler(|uri, vars: TemplateVars, _| async move {
                let id = vars.get("id").cloned().unwrap_or_default();
                Ok(vec![ResourceContents::text(uri, id)])
            }),
        )
        .prompt(
            Prompt::new("greet")
                .argument("name", "Who to greet")
                .optional_argument("tone", "How")
                .handler(|args: PromptArgs, _| async move {
                    Ok(PromptResult::new().user(format!("Hello {:?}", args.get("name"))))
                }),
        )
        .build()
}

fn runtime() -> &'static tokio::runtime::Runtime {
    thread_local! {
        static RUNTIME: &'static tokio::runtime::Runtime = Box::leak(Box::new(
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap_or_else(|e| panic!("runtime: {e}")),
        ));
    }
    RUNTIME.with(|rt| *rt)
}

/// A request as the chain target reads it from its input.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Input {
    /// Sent as HTTP/2 (`h2 ` before the target).
    pub http2: bool,
    /// The request target (path and query).
    pub target: Vec<u8>,
    /// Header lines, name and value, in order.
    pub headers: Vec<(Vec<u8>, Vec<u8>)>,
    /// The body.
    pub body: Vec<u8>,
}

/// The most header lines an input's request carries.
const MAX_HEADERS: usize = 64;

impl Input {
    /// Reads an input in the chain target's format (see the module docs).
    #[must_use]
    pub fn parse(data: &[u8]) -> Input {
        let (head, body) = match data.windows(2).position(|w| w == b"\n\n") {
            Some(at) => (&data[..at], &data[at + 2..]),
            None => (data, &[][..]),
        };
        let mut lines = head
            .split(|b| *b == b'\n')
            .map(|line| line.strip_suffix(b"\r").unwrap_or(line));
        let first = lines.next().unwrap_or_default();
        let (http2, target) = match first.strip_prefix(b"h2 ") {
            Some(rest) => (true, rest),
            None => (false, first),
        };
        let headers = lines
            .filter_map(|line| {
                let colon = line.iter().position(|b| *b == b':')?;
                let value = &line[colon + 1..];
                let value = value.strip_prefix(b" ").unwrap_or(value);
                Some((line[..colon].to_vec(), value.to_vec()))
            })
            .take(MAX_HEADERS)
            .collect();
        Input {
            http2,
            target: target.to_vec(),
            headers,
            body: body.to_vec(),
        }
    }

    /// Writes the input in the chain target's format.
    #[must_use]
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        if self.http2 {
            out.extend_from_slice(b"h2 ");
        }
        out.extend_from_slice(&self.target);
        for (name, value) in &self.headers {
            out.push(b'\n');
            out.extend_from_slice(name);
            out.extend_from_slice(b": ");
            out.extend_from_slice(value);
        }
        out.extend_from_slice(b"\n\n");
        out.extend_from_slice(&self.body);
        out
    }

    /// The HTTP request.
    #[must_use]
    pub fn request(&self) -> Request<Body> {
        let uri = http::Uri::try_from(self.target.as_slice())
            .unwrap_or_else(|_| http::Uri::from_static("/mcp"));
        let mut request = Request::new(Body::from(Bytes::copy_from_slice(&self.body)));
        *request.method_mut() = Method::POST;
        *request.uri_mut() = uri;
        *request.version_mut() = if self.http2 {
            Version::HTTP_2
        } else {
            Version::HTTP_11
        };
        for (name, value) in &self.headers {
            if let (Ok(name), Ok(value)) =
                (HeaderName::from_bytes(name), HeaderValue::from_bytes(value))
            {
                request.headers_mut().append(name, value);
            }
        }
        request
    }
}

/// The fuzz target `chain`: the input as a request, run through the default
/// chain; every invariant of the module docs checked on the answer.
pub fn check_chain(data: &[u8]) -> Result<(), String> {
    check_input(&Input::parse(data))
}

/// The fuzz target `dispatch`: the input as a body, with the headers a
/// well-behaved 2026 client derives from it (see [`derived_headers`]).
pub fn check_dispatch(data: &[u8]) -> Result<(), String> {
    let message = serde_json::from_slice::<Value>(data).unwrap_or(Value::Null);
    let input = Input {
        http2: false,
        target: b"/mcp".to_vec(),
        headers: derived_headers(&message),
        body: data.to_vec(),
    };
    check_input(&input)
}

/// The headers a client sends with `message`: JSON, the good token, and
/// each standard header the body has a value for, encoded as the spec says
/// (`Mcp-Name` and `Mcp-Param-*` with `=?base64?…?=` when needed).
#[must_use]
pub fn derived_headers(message: &Value) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut headers: Vec<(Vec<u8>, Vec<u8>)> = vec![
        (b"content-type".to_vec(), b"application/json".to_vec()),
        (
            b"authorization".to_vec(),
            format!("Bearer {GOOD_TOKEN}").into_bytes(),
        ),
    ];
    let mut add = |name: &str, value: &str| {
        headers.push((name.as_bytes().to_vec(), value.as_bytes().to_vec()));
    };
    let method = message.get("method").and_then(Value::as_str);
    if let Some(version) = message
        .pointer("/params/_meta")
        .and_then(|m| m.get(PROTOCOL_VERSION_KEY))
        .and_then(Value::as_str)
    {
        add("mcp-protocol-version", version);
    }
    if let Some(method) = method {
        add("mcp-method", &encode_value(method));
    }
    let name = match method {
        Some("tools/call" | "prompts/get") => message.pointer("/params/name"),
        Some("resources/read") => message.pointer("/params/uri"),
        _ => None,
    };
    if let Some(name) = name.and_then(Value::as_str) {
        add("mcp-name", &encode_value(name));
    }
    if method == Some("tools/call") {
        let tool = message
            .pointer("/params/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        for param in wymcp::fuzzing::header_params(&server(), tool) {
            let mut at = message.pointer("/params/arguments");
            for key in &param.path {
                at = at.and_then(|v| v.get(key));
            }
            let spelled = match (param.ty, at) {
                (HeaderParamType::String, Some(Value::String(s))) => {
                    Some(encode_value(s).into_owned())
                }
                (HeaderParamType::Integer | HeaderParamType::Boolean, Some(v))
                    if v.is_number() || v.is_boolean() =>
                {
                    Some(v.to_string())
                }
                _ => None,
            };
            if let Some(spelled) = spelled {
                add(&param.header_name(), &spelled);
            }
        }
    }
    headers
}

/// What the chain answered: status, the headers that matter, the body bytes
/// (all of a JSON body; what an SSE stream had ready), and the rejection
/// events recorded.
#[derive(Debug)]
struct Answer {
    status: StatusCode,
    content_type: Option<HeaderValue>,
    connection: Option<HeaderValue>,
    challenge: Option<HeaderValue>,
    body: Vec<u8>,
    events: Vec<RejectionEvent>,
}

fn run(input: &Input) -> Answer {
    let server = server();
    let request = input.request();
    let (answer, events) = capture::record(|| {
        runtime().block_on(async {
            let response = handle(&server, request).await;
            let (parts, mut body) = response.into_parts();
            let mut bytes = Vec::new();
            // Everything the body has ready: a JSON body is whole; an SSE
            // stream (listen) yields its first events and then waits.
            std::future::poll_fn(|cx| {
                loop {
                    match Pin::new(&mut body).poll_frame(cx) {
                        Poll::Ready(Some(Ok(frame))) => {
                            if let Ok(data) = frame.into_data() {
                                bytes.extend_from_slice(&data);
                            }
                            if bytes.len() > 1 << 20 {
                                return Poll::Ready(());
                            }
                        }
                        Poll::Ready(Some(Err(_)) | None) | Poll::Pending => {
                            return Poll::Ready(());
                        }
                    }
                }
            })
            .await;
            (parts, bytes)
        })
    });
    let (parts, body) = answer;
    Answer {
        status: parts.status,
        content_type: parts.headers.get(header::CONTENT_TYPE).cloned(),
        connection: parts.headers.get(header::CONNECTION).cloned(),
        challenge: parts.headers.get(header::WWW_AUTHENTICATE).cloned(),
        body,
        events,
    }
}

/// Whether `stage` may answer `status` with `code`, by its module docs.
#[must_use]
pub fn stage_answers(stage: &str, status: u16, code: i64) -> bool {
    use code::{
        HEADER_MISMATCH, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND,
        MISSING_REQUIRED_CLIENT_CAPABILITY, PARSE_ERROR, UNSUPPORTED_PROTOCOL_VERSION,
    };
    /// 2025's "resource not found", answered on the legacy path.
    const LEGACY_RESOURCE_NOT_FOUND: i64 = -32002;
    match stage {
        "OriginCheck" => matches!((status, code), (400 | 403, INVALID_REQUEST)),
        "parse_body" => matches!(
            (status, code),
            (400 | 413 | 414 | 415, INVALID_REQUEST) | (400, PARSE_ERROR)
        ),
        "Auth" => matches!((status, code), (401 | 403, INVALID_REQUEST)),
        "SingletonHeaders" => matches!((status, code), (400, INVALID_REQUEST)),
        "ProtocolFields" => matches!(
            (status, code),
            (400, INVALID_PARAMS | UNSUPPORTED_PROTOCOL_VERSION)
        ),
        "HeaderBinding" => matches!((status, code), (400, HEADER_MISMATCH | INVALID_REQUEST)),
        "Validate" => matches!((status, code), (400, INVALID_REQUEST | INVALID_PARAMS)),
        "Dispatch" => matches!(
            (status, code),
            (404, METHOD_NOT_FOUND)
                | (
                    400,
                    INVALID_REQUEST | INVALID_PARAMS | MISSING_REQUIRED_CLIENT_CAPABILITY
                )
                | (
                    200,
                    METHOD_NOT_FOUND
                        | INVALID_REQUEST
                        | INVALID_PARAMS
                        | MISSING_REQUIRED_CLIENT_CAPABILITY
                        | LEGACY_RESOURCE_NOT_FOUND
                )
        ),
        _ => false,
    }
}

/// Where a stage sits in [`CHAIN`], and whether it runs after
/// classification (so its rejections may echo a request's id).
fn after_classification(stage: &str) -> Option<bool> {
    let at = CHAIN.iter().position(|s| s.name == stage)?;
    let classify = CHAIN.iter().position(|s| s.name == "Classify")?;
    Some(at > classify)
}

fn check_input(input: &Input) -> Result<(), String> {
    let answer = run(input);
    let status = answer.status.as_u16();
    ensure!(
        STATUSES.contains(&status),
        "status {status} is not in the chain's table (body {})",
        String::from_utf8_lossy(&answer.body)
    );
    ensure!(
        answer.events.len() <= 1,
        "{} rejection events for one request: {:?}",
        answer.events.len(),
        answer.events
    );
    let event = answer.events.first();
    if input.http2 {
        ensure!(
            answer.connection.is_none(),
            "an HTTP/2 answer carries `Connection: {:?}`",
            answer.connection
        );
    }

    // The message as the parse step reads it, and its reference kind.
    let message = serde_json::from_slice::<Value>(&input.body).ok();
    let kind = message.as_ref().map(reference_kind);
    let body_id = message.as_ref().and_then(|m| m.get("id")).cloned();

    if status == 202 {
        ensure!(
            answer.body.is_empty(),
            "a 202 has a body: {:?}",
            String::from_utf8_lossy(&answer.body)
        );
        ensure!(
            event.is_none(),
            "a 202 was recorded as a rejection: {event:?}"
        );
        ensure!(
            kind == Some(MessageKind::Notification),
            "a 202 answered a {kind:?}"
        );
        return Ok(());
    }

    let content_type = answer
        .content_type
        .as_ref()
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let envelopes: Vec<Value> = match content_type {
        "application/json" => vec![
            serde_json::from_slice(&answer.body)
                .map_err(|e| format!("a {status} answer is not JSON ({e}): {:?}", answer.body))?,
        ],
        "text/event-stream" => {
            ensure!(status == 200, "an SSE answer with status {status}");
            sse_data(&answer.body)?
        }
        other => return Err(format!("a {status} answer has Content-Type {other:?}")),
    };
    ensure!(!envelopes.is_empty(), "an SSE answer with no event ready");

    for envelope in &envelopes {
        let Value::Object(object) = envelope else {
            return Err(format!("the answer {envelope} is not a JSON-RPC object"));
        };
        ensure!(
            object.get("jsonrpc") == Some(&json!("2.0")),
            "the answer {envelope} lacks jsonrpc 2.0"
        );
        if object.contains_key("method") {
            // A notification on an SSE stream: no id, and nothing to answer.
            ensure!(
                content_type == "text/event-stream" && !object.contains_key("id"),
                "a notification {envelope} outside an SSE stream, or with an id"
            );
            continue;
        }
        let id = object
            .get("id")
            .ok_or_else(|| format!("the answer {envelope} has no id"))?;
        match (object.get("result"), object.get("error")) {
            (Some(_), None) => {
                ensure!(status == 200, "a result with status {status}");
                ensure!(event.is_none(), "a result recorded a rejection: {event:?}");
                ensure!(
                    kind == Some(MessageKind::Request) && Some(id) == body_id.as_ref(),
                    "a result with id {id} answers a {kind:?} with id {body_id:?}"
                );
            }
            (None, Some(error)) => {
                check_error(&answer, input.http2, id, error, kind, body_id.as_ref())?;
            }
            _ => {
                return Err(format!(
                    "the answer {envelope} has not exactly one of result and error"
                ));
            }
        }
    }
    Ok(())
}

fn check_error(
    answer: &Answer,
    http2: bool,
    id: &Value,
    error: &Value,
    kind: Option<MessageKind>,
    body_id: Option<&Value>,
) -> Result<(), String> {
    let status = answer.status.as_u16();
    let error: &Map<String, Value> = error
        .as_object()
        .ok_or_else(|| format!("the error {error} is not an object"))?;
    let code = error
        .get("code")
        .and_then(Value::as_i64)
        .ok_or_else(|| format!("the error {error:?} has no integer code"))?;
    ensure!(
        error.get("message").is_some_and(Value::is_string),
        "the error {error:?} has no string message"
    );
    let event = answer
        .events
        .first()
        .ok_or_else(|| format!("the error {error:?} was not recorded as a rejection"))?;
    ensure!(
        event.status == u64::from(status) && event.code == code,
        "the rejection event {event:?} disagrees with the answer {status}/{code}"
    );
    let after = after_classification(&event.stage).ok_or_else(|| {
        format!(
            "the rejection came from `{}`, no stage of the chain",
            event.stage
        )
    })?;
    ensure!(
        stage_answers(&event.stage, status, code),
        "`{}` answered {status}/{code}, which its docs do not list ({:?})",
        event.stage,
        error.get("message")
    );
    let expected = match (after, kind, body_id) {
        (true, Some(MessageKind::Request), Some(body_id)) => body_id.clone(),
        _ => Value::Null,
    };
    ensure!(
        *id == expected,
        "`{}` rejected a {kind:?} (body id {body_id:?}) with id {id}, the rule says {expected}",
        event.stage
    );
    if (status == 413 || code == code::PARSE_ERROR) && !http2 {
        ensure!(
            answer.connection.as_ref().is_some_and(|c| c == "close"),
            "a {status}/{code} over HTTP/1.1 leaves the connection open"
        );
    }
    if status == 401 {
        let challenge = answer
            .challenge
            .as_ref()
            .and_then(|c| c.to_str().ok())
            .unwrap_or_default();
        ensure!(
            challenge.starts_with("Bearer"),
            "a 401 with the challenge {challenge:?}"
        );
    }
    Ok(())
}

/// The JSON of each `data:` event of an SSE body.
fn sse_data(body: &[u8]) -> Result<Vec<Value>, String> {
    let text = std::str::from_utf8(body).map_err(|e| format!("an SSE body is not UTF-8: {e}"))?;
    let mut events = Vec::new();
    for block in text.split("\n\n").filter(|b| !b.trim().is_empty()) {
        let data: Vec<&str> = block
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .map(|d| d.strip_prefix(' ').unwrap_or(d))
            .collect();
        if data.is_empty() {
            // A comment (keep-alive) or an event with no data.
            continue;
        }
        let joined = data.join("\n");
        events.push(
            serde_json::from_str(&joined)
                .map_err(|e| format!("an SSE event is not JSON ({e}): {joined:?}"))?,
        );
    }
    Ok(events)
}

/// What the chain answered an input: its status and, for a rejection, the
/// stage and code. For the corpus test that every stage's rejections are
/// reached, and for reading a corpus.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The HTTP status.
    pub status: u16,
    /// The stage that rejected the request, if one did.
    pub stage: Option<String>,
    /// The rejection's JSON-RPC code, if a stage rejected the request.
    pub code: Option<i64>,
    /// The rejection's message, if a stage rejected the request.
    pub message: Option<String>,
}

/// The outcome of a `chain` input.
#[must_use]
pub fn chain_outcome(data: &[u8]) -> Outcome {
    outcome(&Input::parse(data))
}

/// The outcome of a `dispatch` input.
#[must_use]
pub fn dispatch_outcome(data: &[u8]) -> Outcome {
    let message = serde_json::from_slice::<Value>(data).unwrap_or(Value::Null);
    outcome(&Input {
        http2: false,
        target: b"/mcp".to_vec(),
        headers: derived_headers(&message),
        body: data.to_vec(),
    })
}

fn outcome(input: &Input) -> Outcome {
    let answer = run(input);
    let message = serde_json::from_slice::<Value>(&answer.body)
        .ok()
        .and_then(|body| Some(body.pointer("/error/message")?.as_str()?.to_owned()));
    let event = answer.events.into_iter().next();
    Outcome {
        status: answer.status.as_u16(),
        message,
        code: event.as_ref().map(|e| e.code),
        stage: event.map(|e| e.stage),
    }
}
