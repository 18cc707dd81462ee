//! The requests of the benchmark's scenarios: bodies and the headers the
//! 2026-07-28 wire requires with them.
//!
//! The bodies are built once, by the harness and the micro-benchmarks alike,
//! so every server and every stage sees exactly the same bytes.

/// The protocol revision every request speaks.
pub const REVISION: &str = "2026-07-28";

/// The endpoint every server serves.
pub const ENDPOINT: &str = "/mcp";

/// The size of the small `tools/call` body, in bytes (the issue's reference
/// point).
pub const SMALL_CALL_BYTES: usize = 210;

/// The size of the large `tools/call` body: 1 MB.
pub const LARGE_CALL_BYTES: usize = 1_000_000;

/// The size of a body at wymcp's default ceiling: 8 MB, the largest accepted.
pub const CEILING_CALL_BYTES: usize = 8_000_000;

/// How many ceiling-sized calls the burst scenario sends at once.
pub const BURST_CONNECTIONS: usize = 64;

/// The `Origin` the rejection scenario sends: allowed by no server.
pub const BAD_ORIGIN: &str = "http://evil.example.com";

/// One request of a scenario: its body and the headers sent with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The POST body.
    pub body: Vec<u8>,
    /// Header name and value pairs, in the order sent.
    pub headers: Vec<(&'static str, String)>,
}

impl Request {
    fn new(body: Vec<u8>, method: &str, name: Option<&str>) -> Self {
        let mut headers = vec![
            ("Content-Type", "application/json".to_owned()),
            ("Accept", "application/json, text/event-stream".to_owned()),
            ("MCP-Protocol-Version", REVISION.to_owned()),
            ("Mcp-Method", method.to_owned()),
        ];
        if let Some(name) = name {
            headers.push(("Mcp-Name", name.to_owned()));
        }
        Request { body, headers }
    }

    /// The same request with one more header.
    #[must_use]
    pub fn with_header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    /// The headers as an `http::HeaderMap`.
    #[must_use]
    pub fn header_map(&self) -> http::HeaderMap {
        let mut map = http::HeaderMap::new();
        for (name, value) in &self.headers {
            if let (Ok(name), Ok(value)) = (
                http::HeaderName::from_bytes(name.as_bytes()),
                http::HeaderValue::from_str(value),
            ) {
                map.append(name, value);
            }
        }
        map
    }
}

/// The per-request `_meta` of a 2026-07-28 request.
fn request_meta() -> String {
    format!(
        r#""_meta":{{"io.modelcontextprotocol/protocolVersion":"{REVISION}","io.modelcontextprotocol/clientCapabilities":{{}}}}"#
    )
}

/// A `tools/call` of the echo tool of exactly `total` bytes (at least the
/// small call's size): `text` is "hello", and the rest of the size rides in
/// the `attachment` argument, which the tool accepts and does not echo, so a
/// large body costs the servers its reading and parsing, not a large answer.
#[must_use]
pub fn echo_call_sized(total: usize) -> Request {
    let head = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":""#;
    let tail = format!(r#""}},{}}}}}"#, request_meta());
    let text_len = total.saturating_sub(head.len() + tail.len());
    let body = if text_len <= 64 {
        // Small calls: the text itself fills the size.
        let text: String = "hello world ".chars().cycle().take(text_len).collect();
        format!("{head}{text}{tail}")
    } else {
        let mid = r#"hello","attachment":""#;
        let fill = total.saturating_sub(head.len() + mid.len() + tail.len());
        let attachment = "x".repeat(fill);
        format!("{head}{mid}{attachment}{tail}")
    };
    Request::new(body.into_bytes(), "tools/call", Some("echo"))
}

/// The small `tools/call` of the echo tool: 210 bytes.
#[must_use]
pub fn small_call() -> Request {
    echo_call_sized(SMALL_CALL_BYTES)
}

/// A `tools/list`.
#[must_use]
pub fn tools_list() -> Request {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{{{}}}}}"#,
        request_meta()
    );
    Request::new(body.into_bytes(), "tools/list", None)
}

/// A `notifications/cancelled`: the one client notification of 2026-07-28;
/// a server accepts it with 202 and no body.
#[must_use]
pub fn notification() -> Request {
    let body = format!(
        r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":1,"reason":"bench","_meta":{{"io.modelcontextprotocol/protocolVersion":"{REVISION}"}}}}}}"#
    );
    Request::new(body.into_bytes(), "notifications/cancelled", None)
}

/// The small call from a disallowed `Origin`: the rejection scenario.
#[must_use]
pub fn bad_origin() -> Request {
    small_call().with_header("Origin", BAD_ORIGIN)
}

/// The small call cut short: JSON that does not parse.
#[must_use]
pub fn malformed() -> Request {
    let mut request = small_call();
    request.body.truncate(request.body.len() / 2);
    request
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sized_calls_have_the_size_they_name_and_parse() {
        for size in [SMALL_CALL_BYTES, 4096, LARGE_CALL_BYTES] {
            let request = echo_call_sized(size);
            assert_eq!(request.body.len(), size, "size {size}");
            let value: serde_json::Value =
                serde_json::from_slice(&request.body).expect("the body parses");
            assert_eq!(value["params"]["name"], "echo");
            assert_eq!(
                value["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
                REVISION
            );
        }
    }

    #[test]
    fn the_other_bodies_parse_and_the_malformed_one_does_not() {
        for request in [tools_list(), notification(), bad_origin()] {
            serde_json::from_slice::<serde_json::Value>(&request.body).expect("the body parses");
        }
        assert!(serde_json::from_slice::<serde_json::Value>(&malformed().body).is_err());
    }
}
