//! The load generator of the I/O workload: virtual users each looping the
//! public benchmark's iteration (its k6 script's flow; this code is the
//! crate's own), over one keep-alive HTTP/1.1 connection each:
//!
//! for each of the three tools a session: `initialize` (protocolVersion
//! 2024-11-05, `Accept: application/json, text/event-stream`),
//! `notifications/initialized` (with the `Mcp-Session-Id` if `initialize`
//! gave one), `tools/call` (the same; no `MCP-Protocol-Version` header),
//! then `DELETE` with the `Mcp-Session-Id` if there is one; then one
//! `tools/list` session the same way; then 50 ms of sleep. Virtual user `v`
//! (from 1) is `user-{v % 1000:05}`.
//!
//! Counted in the measured window only (after the warm-up, before the end):
//! requests (`initialize`, `tools/call`, `tools/list`: the benchmark's
//! `mcp_requests`), sessions, and each tool call's latency (request sent to
//! body read). Checked always: every answer as the benchmark's checks read
//! it; a failed check is an error, counted, the first few kept in words.
//! The status of each `notifications/initialized` and `DELETE` is counted by
//! status, not judged.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderValue, Method, StatusCode};
use http_body_util::{BodyExt as _, Full, Limited};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

use crate::payload::ENDPOINT;

/// The most of an answer read.
const MAX_ANSWER: usize = 4 << 20;
/// How long one request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Failed checks kept in words.
const KEPT_ERRORS: usize = 5;

/// One tool of the iteration: its name, and the check of its answer's text.
#[derive(Debug, Clone, Copy)]
pub struct ToolCheck {
    /// The tool.
    pub name: &'static str,
    check: fn(&Value) -> bool,
}

/// The three tools in the iteration's order, with the benchmark's checks.
pub const TOOLS: [ToolCheck; 3] = [
    ToolCheck {
        name: "search_products",
        check: |d| {
            d["total_found"] == 2251
                && d["products"].as_array().is_some_and(|p| p.len() == 10)
                && d["top10_popular_ids"]
                    .as_array()
                    .is_some_and(|p| p.len() == 10)
        },
    },
    ToolCheck {
        name: "get_user_cart",
        check: |d| {
            d["user_id"].as_str().is_some_and(|u| !u.is_empty())
                && d["cart"]["items"].as_array().is_some_and(|i| !i.is_empty())
                && d["recent_history"].as_array().is_some_and(|h| h.len() == 5)
        },
    },
    ToolCheck {
        name: "checkout",
        check: |d| {
            d["status"] == "confirmed"
                && d["total"].as_f64().is_some_and(|t| t > 0.0)
                && d["items_count"] == 2
        },
    },
];

/// The arguments the iteration calls tool `name` with for `user`.
#[must_use]
pub fn arguments(name: &str, user: &str) -> Value {
    match name {
        "search_products" => {
            json!({"category": "Electronics", "min_price": 50.0, "max_price": 500.0, "limit": 10})
        }
        "get_user_cart" => json!({"user_id": user}),
        _ => json!({"user_id": user, "items": [
            {"product_id": 42, "quantity": 2}, {"product_id": 1337, "quantity": 1}]}),
    }
}

/// The JSON-RPC message in an answer's body: the body itself when it is
/// JSON, else the first `data:` line of an SSE body holding an object.
#[must_use]
pub fn parse_answer(body: &[u8]) -> Option<Value> {
    let text = std::str::from_utf8(body).ok()?.trim();
    if (text.starts_with('{') || text.starts_with('['))
        && let Ok(value) = serde_json::from_str(text)
    {
        return Some(value);
    }
    text.lines()
        .filter_map(|line| line.trim().strip_prefix("data:"))
        .map(str::trim)
        .filter(|data| data.starts_with('{'))
        .find_map(|data| serde_json::from_str(data).ok())
}

/// Whether a `tools/call` answer passes `tool`'s check: a result (no
/// error) whose first content's text is JSON the check accepts.
#[must_use]
pub fn call_passes(tool: &ToolCheck, answer: Option<&Value>) -> bool {
    let Some(answer) = answer else { return false };
    if answer.get("error").is_some() {
        return false;
    }
    answer["result"]["content"][0]["text"]
        .as_str()
        .and_then(|text| serde_json::from_str::<Value>(text).ok())
        .is_some_and(|data| (tool.check)(&data))
}

/// Whether a `tools/list` answer lists the three tools.
#[must_use]
pub fn list_passes(answer: Option<&Value>) -> bool {
    answer
        .and_then(|a| a["result"]["tools"].as_array())
        .is_some_and(|tools| {
            TOOLS
                .iter()
                .all(|t| tools.iter().any(|listed| listed["name"] == t.name))
        })
}

/// What the virtual users measured, merged.
#[derive(Debug, Default, Clone)]
pub struct Tally {
    /// `initialize`, `tools/call` and `tools/list` answered in the window.
    pub mcp_requests: u64,
    /// Sessions whose call (or list) was answered in the window.
    pub sessions: u64,
    /// Each tool's call latencies in the window, µs, in [`TOOLS`]' order.
    pub latencies_us: [Vec<u32>; 3],
    /// `tools/list` latencies in the window, µs.
    pub list_latencies_us: Vec<u32>,
    /// Failed checks and failed requests, over the whole run.
    pub errors: u64,
    /// The first few of them, in words.
    pub first_errors: Vec<String>,
    /// `notifications/initialized`'s statuses (0: no answer).
    pub notification_statuses: BTreeMap<u16, u64>,
    /// `DELETE`'s statuses (none sent when no session id was given).
    pub delete_statuses: BTreeMap<u16, u64>,
    /// Sessions given an `Mcp-Session-Id`.
    pub session_ids: u64,
    /// Iterations completed.
    pub iterations: u64,
    /// Every HTTP request sent (notifications and `DELETE` too).
    pub http_requests: u64,
    /// Of them, those answered outside 200–399 or not answered: what k6
    /// counts in `http_req_failed`, which the benchmark holds under 5%.
    pub http_failed: u64,
}

impl Tally {
    fn error(&mut self, what: String) {
        self.errors += 1;
        if self.first_errors.len() < KEPT_ERRORS {
            self.first_errors.push(what);
        }
    }

    fn merge(&mut self, other: Tally) {
        self.mcp_requests += other.mcp_requests;
        self.sessions += other.sessions;
        for (mine, theirs) in self.latencies_us.iter_mut().zip(other.latencies_us) {
            mine.extend(theirs);
        }
        self.list_latencies_us.extend(other.list_latencies_us);
        self.errors += other.errors;
        for e in other.first_errors {
            if self.first_errors.len() < KEPT_ERRORS {
                self.first_errors.push(e);
            }
        }
        for (s, n) in other.notification_statuses {
            *self.notification_statuses.entry(s).or_default() += n;
        }
        for (s, n) in other.delete_statuses {
            *self.delete_statuses.entry(s).or_default() += n;
        }
        self.session_ids += other.session_ids;
        self.iterations += other.iterations;
        self.http_requests += other.http_requests;
        self.http_failed += other.http_failed;
    }
}

/// When the run measures: from `start` (the warm-up's end) to `end`.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    /// The warm-up's end.
    pub start: Instant,
    /// The end of the run: no iteration starts after it.
    pub end: Instant,
}

impl Window {
    fn holds(&self, sent: Instant, answered: Instant) -> bool {
        sent >= self.start && answered <= self.end
    }
}

/// One virtual user's connection.
struct Connection {
    addr: SocketAddr,
    host: HeaderValue,
    sender: Option<SendRequest<Full<Bytes>>>,
    /// Requests sent, and those k6 would count failed.
    sent: u64,
    failed: u64,
}

/// An answer: status, session id, body.
struct Answer {
    status: StatusCode,
    session: Option<HeaderValue>,
    body: Bytes,
}

/// The keep-alive HTTP/1.1 connection in `slot`, opened to `addr` first
/// (no delay, its driver spawned) when there is none or it closed, once it
/// is ready for a request. Shared with the harness's load generator
/// ([`crate::loadgen`]).
pub(crate) async fn ready_sender(
    slot: &mut Option<SendRequest<Full<Bytes>>>,
    addr: SocketAddr,
) -> Result<&mut SendRequest<Full<Bytes>>, String> {
    if slot.as_ref().is_none_or(SendRequest::is_closed) {
        let stream = tokio::net::TcpStream::connect(addr)
            .await
            .map_err(|e| format!("connecting: {e}"))?;
        let _ = stream.set_nodelay(true);
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| format!("handshake: {e}"))?;
        tokio::spawn(connection);
        *slot = Some(sender);
    }
    let sender = slot.as_mut().ok_or("no connection")?;
    sender.ready().await.map_err(|e| e.to_string())?;
    Ok(sender)
}

impl Connection {
    async fn sender(&mut self) -> Result<&mut SendRequest<Full<Bytes>>, String> {
        ready_sender(&mut self.sender, self.addr).await
    }

    async fn send(
        &mut self,
        method: Method,
        body: Option<&Value>,
        session: Option<&HeaderValue>,
    ) -> Result<Answer, String> {
        let mut request = http::Request::builder()
            .method(method)
            .uri(ENDPOINT)
            .header(http::header::HOST, self.host.clone());
        if body.is_some() {
            request = request
                .header(http::header::CONTENT_TYPE, "application/json")
                .header(http::header::ACCEPT, "application/json, text/event-stream");
        }
        if let Some(session) = session {
            request = request.header("mcp-session-id", session.clone());
        }
        let request = request
            .body(Full::new(
                body.map_or_else(Bytes::new, |b| Bytes::from(b.to_string())),
            ))
            .map_err(|e| e.to_string())?;
        let exchange = async {
            let response = self
                .sender()
                .await?
                .send_request(request)
                .await
                .map_err(|e| e.to_string())?;
            let status = response.status();
            let session = response.headers().get("mcp-session-id").cloned();
            let body = Limited::new(response.into_body(), MAX_ANSWER)
                .collect()
                .await
                .map_err(|e| e.to_string())?
                .to_bytes();
            Ok::<_, String>(Answer {
                status,
                session,
                body,
            })
        };
        let answer = tokio::time::timeout(REQUEST_TIMEOUT, exchange).await;
        let answer = answer.unwrap_or_else(|_| Err("timed out".to_owned()));
        self.sent += 1;
        match &answer {
            Ok(a) if (200..400).contains(&a.status.as_u16()) => {}
            Ok(_) => self.failed += 1,
            Err(_) => {
                self.failed += 1;
                self.sender = None;
            }
        }
        answer
    }
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2024-11-05", "capabilities": {},
        "clientInfo": {"name": "k6-bench", "version": "1.0"}}})
}

/// What a session calls: a tool (its index in [`TOOLS`]) or `tools/list`.
#[derive(Debug, Clone, Copy)]
enum Call {
    Tool(usize),
    List,
}

fn micros(d: Duration) -> u32 {
    u32::try_from(d.as_micros()).unwrap_or(u32::MAX)
}

/// One session: initialize, the notification, the call, DELETE.
async fn session(conn: &mut Connection, tally: &mut Tally, window: Window, call: Call, user: &str) {
    let sent = Instant::now();
    let init = conn.send(Method::POST, Some(&initialize()), None).await;
    let answered = Instant::now();
    let session = match init {
        Ok(answer) => {
            if window.holds(sent, answered) {
                tally.mcp_requests += 1;
            }
            let parsed = parse_answer(&answer.body);
            if answer.status != StatusCode::OK
                || parsed.as_ref().is_none_or(|a| a.get("result").is_none())
            {
                tally.error(format!(
                    "initialize: {} {}",
                    answer.status,
                    String::from_utf8_lossy(&answer.body[..answer.body.len().min(200)])
                ));
            }
            answer.session
        }
        Err(e) => {
            tally.error(format!("initialize: {e}"));
            return;
        }
    };
    if session.is_some() {
        tally.session_ids += 1;
    }
    let notification = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let status = conn
        .send(Method::POST, Some(&notification), session.as_ref())
        .await
        .map_or(0, |a| a.status.as_u16());
    *tally.notification_statuses.entry(status).or_default() += 1;

    let body = match call {
        Call::Tool(i) => json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": TOOLS[i].name, "arguments": arguments(TOOLS[i].name, user)}}),
        Call::List => json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}),
    };
    let sent = Instant::now();
    let answer = conn.send(Method::POST, Some(&body), session.as_ref()).await;
    let answered = Instant::now();
    match answer {
        Ok(answer) => {
            let parsed = parse_answer(&answer.body);
            let (name, passes) = match call {
                Call::Tool(i) => (TOOLS[i].name, call_passes(&TOOLS[i], parsed.as_ref())),
                Call::List => ("tools/list", list_passes(parsed.as_ref())),
            };
            if answer.status != StatusCode::OK || !passes {
                tally.error(format!(
                    "{name}: {} {}",
                    answer.status,
                    String::from_utf8_lossy(&answer.body[..answer.body.len().min(300)])
                ));
            }
            if window.holds(sent, answered) {
                tally.mcp_requests += 1;
                tally.sessions += 1;
                let took = micros(answered - sent);
                match call {
                    Call::Tool(i) => tally.latencies_us[i].push(took),
                    Call::List => tally.list_latencies_us.push(took),
                }
            }
        }
        Err(e) => tally.error(format!("{call:?}: {e}")),
    }
    if let Some(session) = session {
        let status = conn
            .send(Method::DELETE, None, Some(&session))
            .await
            .map_or(0, |a| a.status.as_u16());
        *tally.delete_statuses.entry(status).or_default() += 1;
    }
}

/// Virtual user `vu` (from 1): iterations until the window's end, the
/// first after `delay`.
async fn virtual_user(addr: SocketAddr, vu: usize, window: Window, delay: Duration) -> Tally {
    tokio::time::sleep(delay).await;
    let mut conn = Connection {
        addr,
        host: HeaderValue::from_str(&addr.to_string())
            .unwrap_or(HeaderValue::from_static("localhost")),
        sender: None,
        sent: 0,
        failed: 0,
    };
    let user = format!("user-{:05}", vu % 1000);
    let mut tally = Tally::default();
    while Instant::now() < window.end {
        for i in 0..TOOLS.len() {
            session(&mut conn, &mut tally, window, Call::Tool(i), &user).await;
        }
        session(&mut conn, &mut tally, window, Call::List, &user).await;
        tally.iterations += 1;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tally.http_requests = conn.sent;
    tally.http_failed = conn.failed;
    tally
}

/// Runs `vus` virtual users against the server at `addr` over `window`,
/// their starts spread evenly over `ramp` from now (k6 ramps the
/// benchmark's up over 15 s, which keeps them out of step); the warm-up is
/// the time until `window.start`.
pub async fn run(addr: SocketAddr, vus: usize, window: Window, ramp: Duration) -> Tally {
    let step = ramp / u32::try_from(vus.max(1)).unwrap_or(u32::MAX);
    let users: Vec<_> = (1..=vus)
        .map(|vu| {
            let delay = step * u32::try_from(vu - 1).unwrap_or(u32::MAX);
            tokio::spawn(virtual_user(addr, vu, window, delay))
        })
        .collect();
    let mut tally = Tally::default();
    for user in users {
        match user.await {
            Ok(t) => tally.merge(t),
            Err(e) => tally.error(format!("a virtual user failed: {e}")),
        }
    }
    tally
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_from_json_and_from_sse() {
        let json = br#"{"jsonrpc":"2.0","id":2,"result":{}}"#;
        assert_eq!(parse_answer(json).expect("json")["id"], 2);
        let sse = b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\n\n";
        assert_eq!(parse_answer(sse).expect("sse")["id"], 3);
        assert!(parse_answer(b"").is_none());
        assert!(parse_answer(b"data: nope\n").is_none());
    }

    fn call(text: &Value) -> Value {
        json!({"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": text.to_string()}]}})
    }

    #[test]
    fn the_checks_are_the_benchmarks() {
        let search = json!({"total_found": 2251, "products": vec![json!({}); 10], "top10_popular_ids": vec![1; 10]});
        assert!(call_passes(&TOOLS[0], Some(&call(&search))));
        let wrong = json!({"total_found": 2250, "products": vec![json!({}); 10], "top10_popular_ids": vec![1; 10]});
        assert!(!call_passes(&TOOLS[0], Some(&call(&wrong))));
        let cart = json!({"user_id": "user-00001", "cart": {"items": [{}]}, "recent_history": vec![json!({}); 5]});
        assert!(call_passes(&TOOLS[1], Some(&call(&cart))));
        let short = json!({"user_id": "user-00001", "cart": {"items": [{}]}, "recent_history": vec![json!({}); 4]});
        assert!(!call_passes(&TOOLS[1], Some(&call(&short))));
        let checkout = json!({"status": "confirmed", "total": 24.63, "items_count": 2});
        assert!(call_passes(&TOOLS[2], Some(&call(&checkout))));
        let free = json!({"status": "confirmed", "total": 0.0, "items_count": 2});
        assert!(!call_passes(&TOOLS[2], Some(&call(&free))));
        // An error, or no answer, fails whatever it holds.
        let mut errored = call(&checkout);
        errored["error"] = json!({"code": -32603});
        assert!(!call_passes(&TOOLS[2], Some(&errored)));
        assert!(!call_passes(&TOOLS[2], None));
        let list = json!({"result": {"tools": [{"name": "search_products"}, {"name": "get_user_cart"}, {"name": "checkout"}]}});
        assert!(list_passes(Some(&list)));
        assert!(!list_passes(Some(&json!({"result": {"tools": []}}))));
    }
}
