//! [`Req`]: the one request builder of the in-process tests.

use http::{HeaderName, HeaderValue, Method, Request, Version};
use serde_json::{Value, json};
use wymcp::Era;
use wymcp::axum::body::Body;

/// `_meta`'s protocol-version key.
pub const V: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta`'s client-capabilities key.
pub const C: &str = "io.modelcontextprotocol/clientCapabilities";
/// The 2026 revision.
pub const MODERN: &str = "2026-07-28";
/// The 2025 revision a 2025 client of the default server speaks.
pub const LEGACY: &str = "2025-11-25";

/// The `_meta` a 2026 client sends: the protocol version, no optional
/// capability declared, and who it is.
pub fn meta() -> Value {
    json!({
        V: MODERN,
        C: {},
        "io.modelcontextprotocol/clientInfo": {"name": "wymcp-tests", "version": "1"},
    })
}

/// One change to the headers, applied in order after the standard headers
/// are bound to the final body.
#[derive(Debug, Clone)]
enum Edit {
    Append(String, Vec<u8>),
    Set(String, Vec<u8>),
    Remove(String),
    Repeat(String),
}

/// One request under construction: `POST /mcp` with `Host: localhost`, a
/// JSON `Content-Type` and the `Accept` a client sends, then (for a 2026 or
/// a 2025 request) the standard headers bound to the JSON body as it is
/// when built, then the header edits in the order made (so a name may
/// repeat).
///
/// The 2026 standard headers are `MCP-Protocol-Version: 2026-07-28`,
/// `Mcp-Method` from the body's `method`, and `Mcp-Name` from
/// `params.name` (`tools/call`, `prompts/get`), `params.uri`
/// (`resources/read`) or `params.taskId` (`tasks/*`), encoded with `wymcp::fuzzing::encode_value`. A 2025
/// client sends `MCP-Protocol-Version: 2025-11-25` on everything but
/// `initialize`.
#[derive(Debug, Clone)]
pub struct Req {
    verb: Method,
    path: String,
    version: Version,
    /// The JSON body, which the standard headers are bound to.
    json: Option<Value>,
    /// Bytes sent in place of the JSON body (malformed JSON, numbers a
    /// `Value` cannot hold).
    bytes: Option<Vec<u8>>,
    bound: Option<Era>,
    edits: Vec<Edit>,
    /// The client address the transport would tell (`ClientAddr`).
    client: Option<std::net::IpAddr>,
}

impl Req {
    /// A 2026-07-28 request: `params` holds the [`meta`] `_meta`, the
    /// standard headers are bound to the body.
    pub fn modern(id: impl Into<Value>, method: &str) -> Self {
        Self::body(json!({
            "jsonrpc": "2.0",
            "id": id.into(),
            "method": method,
            "params": {"_meta": meta()},
        }))
        .bind(Era::Modern)
    }

    /// A 2026 notification, `params._meta` empty (a notification requires
    /// no protocol field), the standard headers bound to the body.
    pub fn notification(method: &str) -> Self {
        Self::body(json!({"jsonrpc": "2.0", "method": method, "params": {"_meta": {}}}))
            .bind(Era::Modern)
    }

    /// A 2025 request as a 2025 client sends it: no `params`, no `_meta`,
    /// `MCP-Protocol-Version: 2025-11-25` unless it is `initialize`.
    pub fn legacy(id: impl Into<Value>, method: &str) -> Self {
        Self::body(json!({"jsonrpc": "2.0", "id": id.into(), "method": method})).bind(Era::Legacy)
    }

    /// A POST of this JSON body as given, with no MCP header (see
    /// [`bind`](Self::bind)).
    pub fn body(body: Value) -> Self {
        let mut req = Self::post();
        req.json = Some(body);
        req
    }

    /// A POST of these bytes, with no MCP header.
    pub fn raw(bytes: impl Into<Vec<u8>>) -> Self {
        Self::post().bytes(bytes)
    }

    /// A request with this verb and path, no body and no header but `Host`.
    pub fn new(verb: Method, path: &str) -> Self {
        Req {
            verb,
            path: path.to_owned(),
            version: Version::HTTP_11,
            json: None,
            bytes: None,
            bound: None,
            edits: Vec::new(),
            client: None,
        }
    }

    /// A `GET` of `path`.
    pub fn get(path: &str) -> Self {
        Self::new(Method::GET, path)
    }

    fn post() -> Self {
        let mut req = Self::new(Method::POST, "/mcp");
        req.edits = vec![
            Edit::Append("Content-Type".into(), b"application/json".to_vec()),
            Edit::Append(
                "Accept".into(),
                b"application/json, text/event-stream".to_vec(),
            ),
        ];
        req
    }

    /// Binds the standard headers of a client of `era` to the body.
    pub fn bind(mut self, era: Era) -> Self {
        self.bound = Some(era);
        self
    }

    /// No standard header: only what the edits add.
    pub fn unbound(mut self) -> Self {
        self.bound = None;
        self
    }

    /// The JSON body (`Null` when there is none).
    pub fn message(&self) -> &Value {
        self.json.as_ref().unwrap_or(&Value::Null)
    }

    /// Edits the JSON body, whatever it makes of it.
    pub fn edit(mut self, edit: impl FnOnce(&mut Value)) -> Self {
        edit(self.json.as_mut().expect("a JSON body to edit"));
        self
    }

    /// Sends these bytes as the body instead; the standard headers stay
    /// bound to the JSON body.
    pub fn bytes(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.bytes = Some(bytes.into());
        self
    }

    /// Adds the keys of `params` (an object) to the body's `params`, the
    /// `_meta` kept unless `params` names one; anything but an object
    /// replaces `params` whole.
    pub fn params(self, params: Value) -> Self {
        self.edit(|body| {
            let params = match (body["params"].as_object_mut(), params) {
                (Some(into), Value::Object(params)) => return into.extend(params),
                (_, params) => params,
            };
            body["params"] = params;
        })
    }

    /// Sets the client capabilities in `_meta`.
    pub fn capabilities(self, capabilities: Value) -> Self {
        self.edit(|body| body["params"]["_meta"][C] = capabilities)
    }

    /// Adds the keys of `extra` (an object) to `_meta`.
    pub fn meta(self, extra: Value) -> Self {
        self.edit(|body| {
            let Value::Object(extra) = extra else {
                panic!("extra `_meta` is an object, not {extra}")
            };
            match &mut body["params"]["_meta"] {
                Value::Object(meta) => meta.extend(extra),
                meta => *meta = Value::Object(extra),
            }
        })
    }

    /// Appends a header (after any of the same name: a repeat).
    pub fn header(mut self, name: &str, value: impl AsRef<[u8]>) -> Self {
        self.edits
            .push(Edit::Append(name.to_owned(), value.as_ref().to_vec()));
        self
    }

    /// Replaces every header of this name (any case) with one.
    pub fn set(mut self, name: &str, value: impl AsRef<[u8]>) -> Self {
        self.edits
            .push(Edit::Set(name.to_owned(), value.as_ref().to_vec()));
        self
    }

    /// Removes every header of this name (any case).
    pub fn without(mut self, name: &str) -> Self {
        self.edits.push(Edit::Remove(name.to_owned()));
        self
    }

    /// Sends the first header of this name twice.
    pub fn repeat(mut self, name: &str) -> Self {
        self.edits.push(Edit::Repeat(name.to_owned()));
        self
    }

    /// Sent from `address`, as the transport (or a trusted proxy) tells
    /// the server with [`wymcp::ClientAddr`].
    pub fn sent_from(mut self, address: &str) -> Self {
        self.client = Some(address.parse().unwrap());
        self
    }

    /// `Authorization: Bearer {token}`.
    pub fn bearer(self, token: &str) -> Self {
        self.set("Authorization", format!("Bearer {token}"))
    }

    /// The HTTP version of the request.
    pub fn version(mut self, version: Version) -> Self {
        self.version = version;
        self
    }

    /// The headers as they will be sent, in order.
    pub fn headers(&self) -> Vec<(String, Vec<u8>)> {
        let mut headers = vec![("Host".to_owned(), b"localhost".to_vec())];
        if let (Some(era), Some(body)) = (self.bound, &self.json) {
            headers.extend(
                standard_headers(era, body)
                    .into_iter()
                    .map(|(name, value)| (name.to_owned(), value.into_bytes())),
            );
        }
        for edit in &self.edits {
            match edit {
                Edit::Append(name, value) => headers.push((name.clone(), value.clone())),
                Edit::Set(name, value) => {
                    headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
                    headers.push((name.clone(), value.clone()));
                }
                Edit::Remove(name) => headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name)),
                Edit::Repeat(name) => {
                    let value = headers
                        .iter()
                        .find(|(n, _)| n.eq_ignore_ascii_case(name))
                        .map_or_else(
                            || panic!("no `{name}` header to repeat"),
                            |(_, v)| v.clone(),
                        );
                    headers.push((name.clone(), value));
                }
            }
        }
        headers
    }

    /// The request.
    pub fn build(self) -> Request<Body> {
        let headers = self.headers();
        let body = match (self.bytes, self.json) {
            (Some(bytes), _) => Body::from(bytes),
            (None, Some(json)) => Body::from(serde_json::to_vec(&json).unwrap()),
            (None, None) => Body::empty(),
        };
        let mut request = Request::builder()
            .method(self.verb)
            .uri(self.path)
            .version(self.version)
            .body(body)
            .unwrap();
        for (name, value) in headers {
            request.headers_mut().append(
                HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_bytes(&value).unwrap(),
            );
        }
        if let Some(address) = self.client {
            request.extensions_mut().insert(wymcp::ClientAddr(address));
        }
        request
    }
}

/// The standard headers a client of `era` sends for `body`.
fn standard_headers(era: Era, body: &Value) -> Vec<(&'static str, String)> {
    let method = body["method"].as_str();
    match era {
        Era::Modern => {
            let mut out = vec![("MCP-Protocol-Version", MODERN.to_owned())];
            if let Some(method) = method {
                out.push(("Mcp-Method", method.to_owned()));
                let name = match method {
                    "tools/call" | "prompts/get" => body["params"]["name"].as_str(),
                    "resources/read" => body["params"]["uri"].as_str(),
                    "tasks/get" | "tasks/update" | "tasks/cancel" => {
                        body["params"]["taskId"].as_str()
                    }
                    _ => None,
                };
                if let Some(name) = name {
                    out.push(("Mcp-Name", wymcp::fuzzing::encode_value(name).into_owned()));
                }
            }
            out
        }
        Era::Legacy if method == Some("initialize") => Vec::new(),
        Era::Legacy => vec![("MCP-Protocol-Version", LEGACY.to_owned())],
    }
}
