//! An in-process client for a server's own tests: it sends each request
//! through an axum `Router` with `tower::ServiceExt::oneshot` (no socket),
//! as a client of either era sends it, and reads what comes back.
//!
//! A 2026-07-28 client puts `MCP-Protocol-Version`, `Mcp-Method`,
//! `Mcp-Name` and the tool's `Mcp-Param-*` headers on every request, and the
//! protocol version and its capabilities in `params._meta`; a 2025-11-25
//! client sends `MCP-Protocol-Version: 2025-11-25` and no `_meta`. Every
//! answer keeps its raw exchange (status, headers, body, the messages of an
//! SSE answer) beside the typed result, for assertions on either.
//!
//! ```
//! use wymcp::testing::Client;
//! use wymcp::{Server, ToolResult};
//!
//! /// Says hello.
//! #[wymcp::tool(read_only)]
//! async fn hello(name: String) -> ToolResult {
//!     ToolResult::text(format!("Hello, {name}!"))
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let client = Client::new(Server::builder().tool(hello_tool()).build().unwrap());
//! let tools = client.list_tools().await.unwrap();
//! assert_eq!(tools[0]["name"], "hello");
//! let called = client.call_tool("hello", serde_json::json!({"name": "Ada"})).await.unwrap();
//! assert_eq!(called.text(), "Hello, Ada!");
//! assert_eq!(called.exchange.status, 200);
//!
//! // The same server, as a 2025-11-25 client reaches it.
//! let legacy = client.legacy();
//! let called = legacy.call_tool("hello", serde_json::json!({})).await.unwrap();
//! assert!(called.is_error(), "`name` is missing: a tool input error");
//! # }
//! ```

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Request, StatusCode};
use http_body_util::BodyExt;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use tower::ServiceExt;

use crate::protocol::headers::{HeaderParamType, encode_value};
use crate::protocol::meta;
use crate::protocol::revision::{Era, Revision};
use crate::server::Server;

/// How long a read of an answer waits before it is taken to have stalled.
const PATIENCE: Duration = Duration::from_secs(10);

/// An in-process client of one router (see the [module](self)).
#[derive(Debug, Clone)]
pub struct Client {
    router: Router,
    server: Option<Arc<Server>>,
    era: Era,
    endpoint: String,
    bearer: Option<String>,
    capabilities: Value,
    next_id: Arc<AtomicU64>,
}

impl Client {
    /// A 2026-07-28 client of `server` served by the default chain
    /// (`wymcp::chain::post::router`). It knows the server's tools, so it
    /// sends each `Mcp-Param-*` header a tool's arguments call for.
    pub fn new(server: impl Into<Arc<Server>>) -> Self {
        let server = server.into();
        let mut client = Client::over(crate::chain::post::router(server.clone()));
        server.endpoint().clone_into(&mut client.endpoint);
        client.server = Some(server);
        client
    }

    /// A 2026-07-28 client of any router (a chain of your own, an app that
    /// nests one) whose MCP endpoint is `/mcp`. It sends no `Mcp-Param-*`
    /// header; add them with [`send_with`](Self::send_with).
    pub fn over(router: Router) -> Self {
        Client {
            router,
            server: None,
            era: Era::Modern,
            endpoint: "/mcp".to_owned(),
            bearer: None,
            capabilities: json!({}),
            next_id: Arc::new(AtomicU64::new(1)),
        }
    }

    /// The same client as a 2025-11-25 client: no `_meta`, that version in
    /// the header, no other MCP header.
    #[must_use]
    pub fn legacy(&self) -> Self {
        self.era(Era::Legacy)
    }

    /// The same client, speaking `era`.
    #[must_use]
    pub fn era(&self, era: Era) -> Self {
        Client {
            era,
            ..self.clone()
        }
    }

    /// The same client, sending `Authorization: Bearer {token}`.
    #[must_use]
    pub fn bearer(&self, token: impl Into<String>) -> Self {
        Client {
            bearer: Some(token.into()),
            ..self.clone()
        }
    }

    /// The same client, declaring these capabilities on every 2026 request
    /// (`{"elicitation": {}}`, …).
    #[must_use]
    pub fn capabilities(&self, capabilities: Value) -> Self {
        Client {
            capabilities,
            ..self.clone()
        }
    }

    /// The path requests are sent to.
    #[must_use]
    pub fn endpoint(mut self, path: impl Into<String>) -> Self {
        self.endpoint = path.into();
        self
    }

    /// The era the client speaks.
    pub fn speaks(&self) -> Era {
        self.era
    }

    /// Sends a request of `method` with `params` (an object; `_meta` is
    /// added on 2026) and reads the whole answer.
    pub async fn send(&self, method: &str, params: Value) -> Transcript {
        self.send_with(method, params, &[]).await
    }

    /// [`send`](Self::send) with extra headers, after the standard ones.
    pub async fn send_with(
        &self,
        method: &str,
        params: Value,
        headers: &[(&str, &str)],
    ) -> Transcript {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let message = self.message(Some(id), method, params);
        let request = self.request(&message, headers);
        read(self.oneshot(request).await, message).await
    }

    /// Sends a notification of `method` (answered `202` with no body).
    pub async fn notify(&self, method: &str, params: Value) -> Transcript {
        let message = self.message(None, method, params);
        let request = self.request(&message, &[]);
        read(self.oneshot(request).await, message).await
    }

    /// `tools/list`: the tools this caller may see.
    pub async fn list_tools(&self) -> Result<Vec<Value>, Failure> {
        self.list("tools/list", "tools").await
    }

    /// `tools/call` of `name` with `arguments`.
    pub async fn call_tool(&self, name: &str, arguments: Value) -> Result<Called, Failure> {
        self.call_tool_with_meta(name, arguments, json!({})).await
    }

    /// `tools/call` with `_meta` members of the request's own
    /// (`{"progressToken": 1}` asks for progress notifications, answered as
    /// an SSE stream).
    pub async fn call_tool_with_meta(
        &self,
        name: &str,
        arguments: Value,
        meta: Value,
    ) -> Result<Called, Failure> {
        let params = json!({"name": name, "arguments": arguments, "_meta": meta});
        let headers = self.param_headers(name, &params["arguments"]);
        let headers: Vec<(&str, &str)> = headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        let exchange = self.send_with("tools/call", params, &headers).await;
        let result = exchange.result()?.clone();
        Ok(Called { result, exchange })
    }

    /// Finishes an MRTR round: `tools/call` again, with the answers to the
    /// round's `inputRequests` (`{"key": {"action": "accept", "content":
    /// {…}}}`) and its `requestState`.
    pub async fn finish_round(&self, round: &Called, responses: Value) -> Result<Called, Failure> {
        let mut params = round.exchange.request["params"].clone();
        if let Some(params) = params.as_object_mut() {
            params.remove("_meta");
            params.insert("inputResponses".into(), responses);
            if let Some(state) = round.result.get("requestState") {
                params.insert("requestState".into(), state.clone());
            }
        }
        let name = params["name"].as_str().unwrap_or_default().to_owned();
        let headers = self.param_headers(&name, &params["arguments"]);
        let headers: Vec<(&str, &str)> = headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        let exchange = self.send_with("tools/call", params, &headers).await;
        let result = exchange.result()?.clone();
        Ok(Called { result, exchange })
    }

    /// `resources/list`.
    pub async fn list_resources(&self) -> Result<Vec<Value>, Failure> {
        self.list("resources/list", "resources").await
    }

    /// `resources/templates/list`.
    pub async fn list_resource_templates(&self) -> Result<Vec<Value>, Failure> {
        self.list("resources/templates/list", "resourceTemplates")
            .await
    }

    /// `resources/read` of `uri`: its contents.
    pub async fn read_resource(&self, uri: &str) -> Result<Vec<Value>, Failure> {
        let exchange = self.send("resources/read", json!({"uri": uri})).await;
        Ok(array(exchange.result()?, "contents"))
    }

    /// `prompts/list`.
    pub async fn list_prompts(&self) -> Result<Vec<Value>, Failure> {
        self.list("prompts/list", "prompts").await
    }

    /// `prompts/get` of `name` with `arguments` (strings): the result
    /// (`description`, `messages`).
    pub async fn get_prompt(&self, name: &str, arguments: Value) -> Result<Value, Failure> {
        let exchange = self
            .send("prompts/get", json!({"name": name, "arguments": arguments}))
            .await;
        exchange.result().cloned()
    }

    /// `completion/complete` of `argument` (so far `value`) of `reference`
    /// (`{"type": "ref/prompt", "name": …}` or `{"type": "ref/resource",
    /// "uri": …}`): the values offered.
    pub async fn complete(
        &self,
        reference: Value,
        argument: &str,
        value: &str,
    ) -> Result<Vec<String>, Failure> {
        let params = json!({"ref": reference, "argument": {"name": argument, "value": value}});
        let exchange = self.send("completion/complete", params).await;
        let values = exchange.result()?["completion"]["values"]
            .as_array()
            .map(|values| {
                values
                    .iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        Ok(values)
    }

    /// Opens `subscriptions/listen` for `notifications` (`{"toolsListChanged":
    /// true, …}`) and keeps the stream open; its first event is the
    /// acknowledgement.
    pub async fn listen(&self, notifications: Value) -> Result<Listen, Failure> {
        self.listen_with_meta(notifications, json!({})).await
    }

    /// [`listen`](Self::listen) with `_meta` members of the request's own
    /// (`{"io.modelcontextprotocol/logLevel": "debug"}`, …).
    pub async fn listen_with_meta(
        &self,
        notifications: Value,
        meta: Value,
    ) -> Result<Listen, Failure> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let message = self.message(
            Some(id),
            "subscriptions/listen",
            json!({"notifications": notifications, "_meta": meta}),
        );
        let response = self.oneshot(self.request(&message, &[])).await;
        let (parts, body) = response.into_parts();
        let is_sse = content_type(&parts.headers).starts_with("text/event-stream");
        if parts.status != StatusCode::OK || !is_sse {
            let response = http::Response::from_parts(parts, body);
            let exchange = read(response, message).await;
            return Err(exchange.failure());
        }
        Ok(Listen {
            request: message,
            status: parts.status,
            headers: parts.headers,
            body,
            buffer: Vec::new(),
        })
    }

    /// Opens a 2025 client's standalone stream: a GET on the endpoint with
    /// `session` (the `Mcp-Session-Id` its `initialize` was answered with),
    /// `Accept: text/event-stream`, the 2025-11-25 header and `extra`
    /// headers after them. Its events are the server's notifications; a
    /// refusal is the [`Failure`].
    pub async fn open_stream(
        &self,
        session: &str,
        extra: &[(&str, &str)],
    ) -> Result<Listen, Failure> {
        let mut request = Request::get(&self.endpoint)
            .header("host", "localhost")
            .header("accept", "text/event-stream")
            .header("mcp-protocol-version", Revision::V2025_11_25.as_str())
            .body(Body::empty())
            .unwrap_or_default();
        let headers = request.headers_mut();
        let mut put = |name: &str, value: &str| append(headers, name, value);
        put("mcp-session-id", session);
        if let Some(token) = &self.bearer {
            put("authorization", &format!("Bearer {token}"));
        }
        for (name, value) in extra {
            put(name, value);
        }
        let response = self.oneshot(request).await;
        let (parts, body) = response.into_parts();
        let is_sse = content_type(&parts.headers).starts_with("text/event-stream");
        if parts.status != StatusCode::OK || !is_sse {
            let response = http::Response::from_parts(parts, body);
            return Err(read(response, Value::Null).await.failure());
        }
        Ok(Listen {
            request: Value::Null,
            status: parts.status,
            headers: parts.headers,
            body,
            buffer: Vec::new(),
        })
    }

    async fn list(&self, method: &str, member: &str) -> Result<Vec<Value>, Failure> {
        let exchange = self.send(method, json!({})).await;
        Ok(array(exchange.result()?, member))
    }

    async fn oneshot(&self, request: Request<Body>) -> http::Response<Body> {
        let Ok(response) = self.router.clone().oneshot(request).await;
        response
    }

    /// The JSON-RPC message of a request (with `id`) or a notification.
    fn message(&self, id: Option<u64>, method: &str, params: Value) -> Value {
        let mut params = match params {
            Value::Object(params) => params,
            Value::Null => Map::new(),
            other => panic!("params are an object, not {other}"),
        };
        let given = match params.remove("_meta") {
            Some(Value::Object(given)) => given,
            _ => Map::new(),
        };
        if self.era == Era::Modern {
            let mut own = Map::new();
            if id.is_some() {
                own.insert(
                    meta::PROTOCOL_VERSION.into(),
                    Revision::LATEST.as_str().into(),
                );
                own.insert(meta::CLIENT_CAPABILITIES.into(), self.capabilities.clone());
                own.insert(
                    "io.modelcontextprotocol/clientInfo".into(),
                    json!({"name": "wymcp-testing", "version": env!("CARGO_PKG_VERSION")}),
                );
            }
            own.extend(given);
            params.insert("_meta".into(), Value::Object(own));
        } else if !given.is_empty() {
            params.insert("_meta".into(), Value::Object(given));
        }
        let mut message = json!({"jsonrpc": "2.0", "method": method});
        if let Some(id) = id {
            message["id"] = id.into();
        }
        if !params.is_empty() {
            message["params"] = Value::Object(params);
        }
        message
    }

    fn request(&self, message: &Value, extra: &[(&str, &str)]) -> Request<Body> {
        let body = serde_json::to_vec(message).unwrap_or_default();
        let mut request = Request::post(&self.endpoint)
            .header("host", "localhost")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(Body::from(body))
            .unwrap_or_default();
        let headers = request.headers_mut();
        let mut put = |name: &str, value: &str| append(headers, name, value);
        let method = message["method"].as_str().unwrap_or_default();
        match self.era {
            Era::Modern => {
                put("mcp-protocol-version", Revision::LATEST.as_str());
                put("mcp-method", method);
                let name = match method {
                    "tools/call" | "prompts/get" => message["params"]["name"].as_str(),
                    "resources/read" => message["params"]["uri"].as_str(),
                    _ => None,
                };
                if let Some(name) = name {
                    put("mcp-name", &encode_value(name));
                }
            }
            Era::Legacy => {
                if method != "initialize" {
                    put("mcp-protocol-version", Revision::V2025_11_25.as_str());
                }
            }
        }
        if let Some(token) = &self.bearer {
            put("authorization", &format!("Bearer {token}"));
        }
        for (name, value) in extra {
            put(name, value);
        }
        request
    }

    /// The `Mcp-Param-*` headers a 2026 call of `tool` with `arguments`
    /// carries, as the server's `x-mcp-header` annotations ask.
    fn param_headers(&self, tool: &str, arguments: &Value) -> Vec<(String, String)> {
        let (Some(server), Era::Modern) = (&self.server, self.era) else {
            return Vec::new();
        };
        server
            .header_params(tool)
            .iter()
            .filter_map(|param| {
                let value = param.path.iter().try_fold(arguments, |v, key| v.get(key))?;
                let text = match (param.ty, value) {
                    (HeaderParamType::String, Value::String(s)) => encode_value(s).into_owned(),
                    (
                        HeaderParamType::Integer | HeaderParamType::Boolean,
                        Value::Number(_) | Value::Bool(_),
                    ) => value.to_string(),
                    _ => return None,
                };
                Some((format!("Mcp-Param-{}", param.name), text))
            })
            .collect()
    }
}

/// The members of `result[member]`, or none.
fn array(result: &Value, member: &str) -> Vec<Value> {
    result[member].as_array().cloned().unwrap_or_default()
}

/// Appends the header `name: value`; one that is no header (a test's own
/// bad input) is left out, as a client could not send it either.
fn append(headers: &mut http::HeaderMap, name: &str, value: &str) {
    if let (Ok(name), Ok(value)) = (
        http::HeaderName::from_bytes(name.as_bytes()),
        HeaderValue::from_str(value),
    ) {
        headers.append(name, value);
    }
}

fn content_type(headers: &HeaderMap) -> &str {
    headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
}

/// Reads an answer whole.
async fn read(response: http::Response<Body>, request: Value) -> Transcript {
    let (parts, body) = response.into_parts();
    let body = match tokio::time::timeout(PATIENCE, body.collect()).await {
        Ok(Ok(collected)) => collected.to_bytes(),
        Ok(Err(_)) | Err(_) => Bytes::new(),
    };
    let messages = if content_type(&parts.headers).starts_with("text/event-stream") {
        events(&body)
    } else {
        serde_json::from_slice(&body)
            .map(|m| vec![m])
            .unwrap_or_default()
    };
    Transcript {
        request,
        status: parts.status,
        headers: parts.headers,
        body,
        messages,
    }
}

/// The JSON messages of an SSE body (comments and non-JSON data skipped).
fn events(raw: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(raw)
        .split("\n\n")
        .filter_map(|event| {
            let data: Vec<&str> = event
                .lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .map(|data| data.strip_prefix(' ').unwrap_or(data))
                .collect();
            (!data.is_empty())
                .then(|| serde_json::from_str(&data.join("\n")).ok())
                .flatten()
        })
        .collect()
}

/// One request and its whole answer, raw: the transcript of an exchange.
#[derive(Debug, Clone)]
pub struct Transcript {
    /// The JSON-RPC message sent.
    pub request: Value,
    /// The answer's status.
    pub status: StatusCode,
    /// The answer's headers.
    pub headers: HeaderMap,
    /// The answer's body, as sent.
    pub body: Bytes,
    /// The JSON-RPC messages of the body: one for a JSON answer, each event
    /// of an SSE answer (notifications, then the response), none for an
    /// empty or non-JSON body.
    pub messages: Vec<Value>,
}

impl Transcript {
    /// The response: the last message.
    pub fn response(&self) -> Option<&Value> {
        self.messages.last()
    }

    /// The notifications that came before the response (progress, logs).
    pub fn notifications(&self) -> impl Iterator<Item = &Value> {
        self.messages
            .iter()
            .filter(|m| m.get("id").is_none() && m.get("method").is_some())
    }

    /// A header of the answer, as text (`""` when absent).
    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
    }

    /// The response's `result`, or the failure it is.
    pub fn result(&self) -> Result<&Value, Failure> {
        match self.response().and_then(|r| r.get("result")) {
            Some(result) => Ok(result),
            None => Err(self.failure()),
        }
    }

    fn failure(&self) -> Failure {
        let error = self.response().and_then(|r| r.get("error"));
        Failure {
            status: self.status,
            code: error.and_then(|e| e["code"].as_i64()),
            message: error.and_then(|e| e["message"].as_str()).map_or_else(
                || String::from_utf8_lossy(&self.body).into_owned(),
                str::to_owned,
            ),
            data: error.and_then(|e| e.get("data")).cloned(),
            exchange: Box::new(self.clone()),
        }
    }
}

/// An answer that is not a result: a JSON-RPC error (with its status), or
/// a body that is no JSON-RPC response at all (`code` is `None`).
#[derive(Debug, Clone)]
pub struct Failure {
    /// The answer's status.
    pub status: StatusCode,
    /// The JSON-RPC error code, when the body is an error.
    pub code: Option<i64>,
    /// The error's message (or the body, when it is not an error).
    pub message: String,
    /// The error's `data`.
    pub data: Option<Value>,
    /// The whole exchange.
    pub exchange: Box<Transcript>,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.code {
            Some(code) => write!(f, "{} {code}: {}", self.status, self.message),
            None => write!(f, "{}: {}", self.status, self.message),
        }
    }
}

impl std::error::Error for Failure {}

/// A `tools/call` answered with a result: the result, typed reads of it,
/// and the exchange.
#[derive(Debug, Clone)]
pub struct Called {
    /// The result, as sent.
    pub result: Value,
    /// The exchange it came in.
    pub exchange: Transcript,
}

impl Called {
    /// Whether the tool reported a failure (`isError: true`).
    pub fn is_error(&self) -> bool {
        self.result["isError"] == true
    }

    /// The text blocks of the content, one line each.
    pub fn text(&self) -> String {
        self.content()
            .iter()
            .filter_map(|block| block["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The content blocks.
    pub fn content(&self) -> &[Value] {
        self.result["content"].as_array().map_or(&[], Vec::as_slice)
    }

    /// `structuredContent` read into `T`.
    pub fn structured<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        T::deserialize(self.result.get("structuredContent").unwrap_or(&Value::Null))
    }

    /// The round's `inputRequests`, when the tool asked the client for input
    /// (`resultType: "input_required"`): answer with
    /// [`Client::finish_round`].
    pub fn input_requests(&self) -> Option<&Value> {
        (self.result["resultType"] == "input_required")
            .then(|| self.result.get("inputRequests"))
            .flatten()
    }

    /// The notifications that came before the result (progress, logs).
    pub fn notifications(&self) -> impl Iterator<Item = &Value> {
        self.exchange.notifications()
    }
}

/// An open `subscriptions/listen` stream (or a 2025 client's GET stream),
/// read event by event.
#[derive(Debug)]
pub struct Listen {
    /// The `subscriptions/listen` request sent (its `id` tags every
    /// message); `null` for a GET stream.
    pub request: Value,
    /// The answer's status.
    pub status: StatusCode,
    /// The answer's headers.
    pub headers: HeaderMap,
    body: Body,
    buffer: Vec<u8>,
}

impl Listen {
    /// The next message, or `None` when nothing comes within `wait` or the
    /// stream ended.
    pub async fn next_within(&mut self, wait: Duration) -> Option<Value> {
        loop {
            if let Some(end) = self.buffer.windows(2).position(|w| w == b"\n\n") {
                let event: Vec<u8> = self.buffer.drain(..end + 2).collect();
                match events(&event).into_iter().next() {
                    Some(message) => return Some(message),
                    None => continue,
                }
            }
            let frame = tokio::time::timeout(wait, self.body.frame()).await.ok()??;
            if let Ok(data) = frame.ok()?.into_data() {
                self.buffer.extend_from_slice(&data);
            }
        }
    }

    /// The next message within 5 s.
    pub async fn next(&mut self) -> Option<Value> {
        self.next_within(Duration::from_secs(5)).await
    }

    /// Whether the stream ends within 5 s with nothing more.
    pub async fn ended(&mut self) -> bool {
        self.buffer.iter().all(u8::is_ascii_whitespace)
            && loop {
                match tokio::time::timeout(Duration::from_secs(5), self.body.frame()).await {
                    Ok(None) => break true,
                    // A keep-alive comment is not a message.
                    Ok(Some(Ok(frame)))
                        if frame.data_ref().is_some_and(|d| d.starts_with(b":")) => {}
                    _ => break false,
                }
            }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod schema_failure {
    //! Validate's answer when a method's schema does not compile
    //! (stages/validate.rs): here, since it drives a whole server.
    use std::sync::Arc;

    use serde_json::{Value, json};

    use http::StatusCode;

    use super::Client;
    use crate::protocol::revision::Revision;
    use crate::protocol::schema::{Schemas, source};
    use crate::server::Server;

    /// A server whose 2026-07-28 `CallToolRequest` references a definition
    /// the file lacks: `tools/call` cannot compile, the rest can.
    fn broken() -> Server {
        let mut document: Value = serde_json::from_str(source(Revision::V2026_07_28)).unwrap();
        document["$defs"]["CallToolRequest"]["properties"]["params"] =
            json!({"$ref": "#/$defs/NoSuchDefinition"});
        let mut server = Server::builder().build().unwrap();
        server.schemas = Arc::new(Schemas::replacing(Revision::V2026_07_28, &document));
        server
    }

    #[tokio::test]
    async fn a_schema_that_does_not_compile_answers_500_internal_error_with_the_id() {
        let client = Client::new(broken());
        super::answers_internal_error_twice(&client, json!({"name": "t", "arguments": {}})).await;
        // The methods whose definitions compile are served as ever.
        let listed = client.send("server/discover", json!({})).await;
        assert_eq!(listed.status, StatusCode::OK, "{listed:?}");
        assert!(listed.response().unwrap().get("result").is_some());
    }
}

/// A `tools/call` of `params` answered 500 with -32603, the request's id and
/// no result, twice (the failure is kept: the second call is answered the
/// same), with Content-Type and the in-process body's Content-Length and
/// nothing else (no `Connection: close`: the connection is sound).
#[cfg(test)]
#[allow(clippy::unwrap_used)]
async fn answers_internal_error_twice(client: &Client, params: serde_json::Value) {
    for _ in 0..2 {
        let reply = client.send("tools/call", params.clone()).await;
        assert_eq!(
            reply.status,
            http::StatusCode::INTERNAL_SERVER_ERROR,
            "{reply:?}"
        );
        let response = reply.response().unwrap();
        assert_eq!(response["id"], reply.request["id"], "{response}");
        assert_eq!(response["error"]["code"], -32603, "{response}");
        assert!(response.get("result").is_none(), "{response}");
        assert_eq!(reply.headers.len(), 2, "{:?}", reply.headers);
        assert_eq!(reply.header("content-type"), "application/json");
        assert_eq!(reply.header("content-length"), reply.body.len().to_string());
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tool_schema_failure {
    //! A tool's answer when its `inputSchema` does not compile on its first
    //! call (surface/tool.rs compiles it there): here, since it drives a
    //! whole server.
    use serde_json::json;

    use http::StatusCode;

    use super::Client;
    use crate::server::Server;
    use crate::surface::{Tool, ToolResult, UNCHECKED};

    /// A server whose tool `broken` was registered with a schema the
    /// build's check would refuse (a `$ref` to nothing), beside `fine`.
    fn broken() -> Server {
        let tool = |name: &str, schema| {
            Tool::new(name)
                .input_schema(schema)
                .raw_handler(|_, _| async { Ok(ToolResult::text("ran")) })
        };
        UNCHECKED.with(|u| u.set(true));
        let server = Server::builder()
            .tool(tool("broken", json!({"$ref": "#/$defs/Missing"})))
            .tool(tool("fine", json!({"type": "object"})))
            .build();
        UNCHECKED.with(|u| u.set(false));
        server.unwrap()
    }

    #[tokio::test]
    async fn a_tool_schema_that_does_not_compile_answers_500_internal_error_with_the_id() {
        let client = Client::new(broken());
        super::answers_internal_error_twice(&client, json!({"name": "broken", "arguments": {}}))
            .await;
        let fine = client
            .send("tools/call", json!({"name": "fine", "arguments": {}}))
            .await;
        assert_eq!(fine.status, StatusCode::OK, "{fine:?}");
        let result = &fine.response().unwrap()["result"];
        assert_eq!(result["content"][0]["text"], "ran", "{result}");
    }
}
