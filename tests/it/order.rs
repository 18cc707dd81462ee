//! The order of the default chain, end to end: requests each wrong at two
//! adjacent stages, through `wymcp::chain::post::router`, proving the earlier
//! stage answers — for every adjacent pair of the chain.
//!
//! Each row of [`PAIRS`] names the pair, a defect the earlier stage refuses
//! and a defect the later stage refuses, and what each stage answers. The
//! test sends three requests per row, built from one valid `tools/call`:
//! with both defects (the earlier stage's answer), with the later defect
//! only (the later stage's answer, so the row is not vacuous: the later
//! stage really would have refused it), and with the earlier defect only.
//! Every answer pins status, JSON-RPC code, id, the error data that names
//! the stage, and the full set of response headers.
//!
//! Three rows repeat pairs in the legacy (2025-11-25) era, from a `ping` as a
//! 2025 client sends it after `initialize`.
//!
//! Classification answers nothing, so its two pairs are shown differently:
//! the parse step answers with a null id whatever id the body holds (nothing
//! is classified yet), and auth, the first stage after classification, reads
//! classification's tag: its 401 echoes a request's id and no other kind's,
//! and it answers an unknown body before Validate would.

use std::sync::Arc;

use http::StatusCode;
use serde_json::{Value, json};
use wymcp::auth::Principal;
use wymcp::auth::{AuthConfig, StaticTokens};
use wymcp::{Role, Server, StageInfo, Tool, ToolResult};

use crate::expand;
use crate::support::{C, Reply, Req, V, chain, send};

const TOKEN: &str = "good-token";

/// A server with one tool, `echo`, and bearer auth with one token.
fn server() -> Arc<Server> {
    let tokens = StaticTokens::new().token(
        TOKEN,
        Principal {
            subject: "tester".to_owned(),
            ..Principal::default()
        },
    );
    let server = Server::builder()
        .auth(tokens, AuthConfig::new())
        .tool(
            Tool::new("echo").raw_handler(|arguments: Value, _| async move {
                Ok(ToolResult::text(arguments.to_string()))
            }),
        )
        .build()
        .unwrap();
    Arc::new(server)
}

/// A valid 2026-07-28 `tools/call` of `echo`, id 7, with every header the
/// wire checks want and a good token.
fn valid() -> Req {
    Req::modern(7, "tools/call")
        .params(json!({"name": "echo", "arguments": {"x": 1}}))
        .bearer(TOKEN)
}

/// A valid 2025-11-25 `ping`, id 7, as a 2025 client sends it after
/// `initialize`: the protocol header, no `_meta`, a good token.
fn legacy() -> Req {
    Req::legacy(7, "ping").bearer(TOKEN)
}

/// Sends `req` through the default chain around `server`.
async fn answer(server: &Arc<Server>, req: Req) -> Reply {
    send(&chain(server.clone()), req).await
}

/// The response headers, `content-length` left out, sorted.
fn headers(reply: &Reply) -> Vec<(String, String)> {
    let mut headers: Vec<(String, String)> = reply
        .headers
        .iter()
        .filter(|(name, _)| *name != http::header::CONTENT_LENGTH)
        .map(|(name, value)| (name.to_string(), value.to_str().unwrap().to_owned()))
        .collect();
    headers.sort();
    headers
}

/// What a stage answers: status, code, id, one value of the error that
/// names the stage (a JSON pointer into the error object and its value),
/// and the response headers beyond `Content-Type: application/json`.
#[derive(Debug, Clone, Copy)]
struct Expect {
    status: u16,
    code: i64,
    id: Id,
    names_stage: (&'static str, Says),
    headers: &'static [(&'static str, &'static str)],
}

/// What a string in the error says.
#[derive(Debug, Clone, Copy)]
enum Says {
    Exactly(&'static str),
    StartsWith(&'static str),
}

#[derive(Debug, Clone, Copy)]
enum Id {
    Null,
    Seven,
}

impl Expect {
    /// Whether `reply` is this stage's answer; what differs, if not.
    fn check(&self, reply: &Reply) -> Result<(), String> {
        let (status, headers, body) = (reply.status, headers(reply), &reply.body);
        let id = match self.id {
            Id::Null => Value::Null,
            Id::Seven => json!(7),
        };
        let (pointer, says) = self.names_stage;
        let text = body["error"].pointer(pointer).and_then(Value::as_str);
        let says_it = match (says, text) {
            (Says::Exactly(expected), Some(text)) => text == expected,
            (Says::StartsWith(expected), Some(text)) => text.starts_with(expected),
            (_, None) => false,
        };
        let mut expected_headers: Vec<(String, String)> = self
            .headers
            .iter()
            .chain(&[("content-type", "application/json")])
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect();
        expected_headers.sort();
        let mut wrong = Vec::new();
        if status.as_u16() != self.status {
            wrong.push(format!("status {status}, not {}", self.status));
        }
        if body["jsonrpc"] != "2.0" || body["id"] != id {
            wrong.push(format!("id {}, not {id}", body["id"]));
        }
        if body["error"]["code"] != self.code {
            wrong.push(format!("code {}, not {}", body["error"]["code"], self.code));
        }
        if !says_it {
            wrong.push(format!("error{pointer} is not {says:?}"));
        }
        if headers != expected_headers {
            wrong.push(format!("headers {headers:?}, not {expected_headers:?}"));
        }
        if wrong.is_empty() {
            Ok(())
        } else {
            Err(format!("{}; body {body}", wrong.join(", ")))
        }
    }

    #[track_caller]
    fn assert(&self, reply: &Reply, what: &str) {
        if let Err(wrong) = self.check(reply) {
            panic!("{what}: {wrong}");
        }
    }
}

/// One adjacent pair of the chain.
struct Pair {
    /// The valid request the defects are applied to.
    base: fn() -> Req,
    earlier: &'static str,
    later: &'static str,
    /// The defect the earlier stage refuses.
    earlier_defect: fn(Req) -> Req,
    /// The defect the later stage refuses.
    later_defect: fn(Req) -> Req,
    earlier_answer: Expect,
    later_answer: Expect,
}

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const INVALID_PARAMS: i64 = -32602;
const METHOD_NOT_FOUND: i64 = -32601;
const HEADER_MISMATCH: i64 = -32020;

fn disallowed_origin(req: Req) -> Req {
    req.set("origin", "https://evil.example")
}
fn text_plain(req: Req) -> Req {
    req.set("content-type", "text/plain")
}
fn malformed_json(req: Req) -> Req {
    req.bytes(r#"{"jsonrpc": "2.0", "id": 7, "method": "tools/call""#)
}
fn bad_token(req: Req) -> Req {
    req.bearer("wrong-token")
}
fn repeated_protocol_version(req: Req) -> Req {
    req.repeat("mcp-protocol-version")
}
fn repeated_mcp_method(req: Req) -> Req {
    req.repeat("mcp-method")
}
fn no_client_capabilities(req: Req) -> Req {
    req.edit(|body| {
        body["params"]["_meta"].as_object_mut().unwrap().remove(C);
    })
}
fn mcp_name_mismatch(req: Req) -> Req {
    req.set("mcp-name", "other")
}
fn jsonrpc_1_0(req: Req) -> Req {
    req.edit(|body| body["jsonrpc"] = json!("1.0"))
}
fn arguments_not_an_object(req: Req) -> Req {
    req.edit(|body| body["params"]["arguments"] = json!([1]))
}
fn unknown_method(req: Req) -> Req {
    req.edit(|body| body["method"] = json!("foo/bar"))
        .set("mcp-method", "foo/bar")
}
fn unknown_tool(req: Req) -> Req {
    req.edit(|body| body["params"]["name"] = json!("nope"))
        .set("mcp-name", "nope")
}

fn unserved_legacy_version(req: Req) -> Req {
    req.set("mcp-protocol-version", "2025-03-26")
}
fn params_not_an_object(req: Req) -> Req {
    req.edit(|body| body["params"] = json!(5))
}

const ORIGIN_403: Expect = Expect {
    status: 403,
    code: INVALID_REQUEST,
    id: Id::Null,
    names_stage: (
        "/message",
        Says::Exactly("the Origin header names an origin this server does not allow"),
    ),
    headers: &[],
};
const AUTH_401: Expect = Expect {
    status: 401,
    code: INVALID_REQUEST,
    id: Id::Seven,
    names_stage: (
        "/message",
        Says::Exactly(
            "unauthorized: this server needs a valid bearer token in one `Authorization` header",
        ),
    ),
    headers: &[("www-authenticate", "Bearer")],
};
const SINGLETON_PROTOCOL_VERSION: Expect = Expect {
    status: 400,
    code: INVALID_REQUEST,
    id: Id::Seven,
    names_stage: ("/data/header", Says::Exactly("MCP-Protocol-Version")),
    headers: &[],
};
const SINGLETON_MCP_METHOD: Expect = Expect {
    status: 400,
    code: INVALID_REQUEST,
    id: Id::Seven,
    names_stage: ("/data/header", Says::Exactly("Mcp-Method")),
    headers: &[],
};
const PROTOCOL_FIELDS_32602: Expect = Expect {
    status: 400,
    code: INVALID_PARAMS,
    id: Id::Seven,
    names_stage: ("/data/field", Says::Exactly("params._meta")),
    headers: &[],
};
const BINDING_MCP_NAME: Expect = Expect {
    status: 400,
    code: HEADER_MISMATCH,
    id: Id::Seven,
    names_stage: ("/data/header", Says::Exactly("Mcp-Name")),
    headers: &[],
};
const VALIDATE_JSONRPC: Expect = Expect {
    status: 400,
    code: INVALID_REQUEST,
    id: Id::Seven,
    names_stage: ("/data/pointer", Says::Exactly("/jsonrpc")),
    headers: &[],
};
const VALIDATE_ARGUMENTS: Expect = Expect {
    status: 400,
    code: INVALID_PARAMS,
    id: Id::Seven,
    names_stage: ("/data/pointer", Says::Exactly("/params/arguments")),
    headers: &[],
};
const DISPATCH_404: Expect = Expect {
    status: 404,
    code: METHOD_NOT_FOUND,
    id: Id::Seven,
    names_stage: ("/data/method", Says::Exactly("foo/bar")),
    headers: &[],
};
const DISPATCH_UNKNOWN_TOOL: Expect = Expect {
    status: 400,
    code: INVALID_PARAMS,
    id: Id::Seven,
    names_stage: ("/message", Says::Exactly("unknown tool `nope`")),
    headers: &[],
};

const PAIRS: &[Pair] = &[
    Pair {
        base: valid,
        earlier: "OriginCheck",
        later: "parse_body",
        earlier_defect: disallowed_origin,
        later_defect: text_plain,
        earlier_answer: ORIGIN_403,
        later_answer: Expect {
            status: 415,
            code: INVALID_REQUEST,
            id: Id::Null,
            names_stage: (
                "/message",
                Says::Exactly(
                    "nothing declares the body JSON: the Content-Type must be application/json",
                ),
            ),
            headers: &[],
        },
    },
    Pair {
        base: valid,
        earlier: "OriginCheck",
        later: "parse_body",
        earlier_defect: disallowed_origin,
        later_defect: malformed_json,
        // Refused before the body is read: no `Connection: close`.
        earlier_answer: ORIGIN_403,
        later_answer: Expect {
            status: 400,
            code: PARSE_ERROR,
            id: Id::Null,
            names_stage: ("/message", Says::StartsWith("the body is not valid JSON: ")),
            headers: &[("connection", "close")],
        },
    },
    Pair {
        base: valid,
        earlier: "Auth",
        later: "SingletonHeaders",
        earlier_defect: bad_token,
        later_defect: repeated_protocol_version,
        earlier_answer: AUTH_401,
        later_answer: SINGLETON_PROTOCOL_VERSION,
    },
    Pair {
        base: valid,
        earlier: "SingletonHeaders",
        later: "ProtocolFields",
        earlier_defect: repeated_mcp_method,
        later_defect: no_client_capabilities,
        earlier_answer: SINGLETON_MCP_METHOD,
        later_answer: PROTOCOL_FIELDS_32602,
    },
    Pair {
        base: valid,
        earlier: "ProtocolFields",
        later: "HeaderBinding",
        earlier_defect: no_client_capabilities,
        later_defect: mcp_name_mismatch,
        earlier_answer: PROTOCOL_FIELDS_32602,
        later_answer: BINDING_MCP_NAME,
    },
    Pair {
        base: valid,
        earlier: "HeaderBinding",
        later: "Validate",
        earlier_defect: mcp_name_mismatch,
        later_defect: jsonrpc_1_0,
        earlier_answer: BINDING_MCP_NAME,
        later_answer: VALIDATE_JSONRPC,
    },
    Pair {
        base: valid,
        earlier: "Validate",
        later: "Dispatch",
        earlier_defect: jsonrpc_1_0,
        later_defect: unknown_method,
        earlier_answer: VALIDATE_JSONRPC,
        later_answer: DISPATCH_404,
    },
    Pair {
        base: valid,
        earlier: "Validate",
        later: "Dispatch",
        earlier_defect: arguments_not_an_object,
        later_defect: unknown_tool,
        earlier_answer: VALIDATE_ARGUMENTS,
        later_answer: DISPATCH_UNKNOWN_TOOL,
    },
    // The legacy era (2025-11-25): the 2026 rows of the wire checks do not
    // apply, but the order does.
    Pair {
        base: legacy,
        earlier: "Auth",
        later: "SingletonHeaders",
        earlier_defect: bad_token,
        later_defect: repeated_protocol_version,
        earlier_answer: AUTH_401,
        later_answer: SINGLETON_PROTOCOL_VERSION,
    },
    Pair {
        base: legacy,
        earlier: "HeaderBinding",
        later: "Validate",
        earlier_defect: unserved_legacy_version,
        later_defect: params_not_an_object,
        earlier_answer: Expect {
            status: 400,
            code: INVALID_REQUEST,
            id: Id::Seven,
            names_stage: ("/data/requested", Says::Exactly("2025-03-26")),
            headers: &[],
        },
        later_answer: Expect {
            status: 400,
            code: INVALID_PARAMS,
            id: Id::Seven,
            names_stage: ("/data/pointer", Says::Exactly("/params")),
            headers: &[],
        },
    },
    Pair {
        base: legacy,
        earlier: "Validate",
        later: "Dispatch",
        earlier_defect: jsonrpc_1_0,
        later_defect: unknown_method,
        earlier_answer: VALIDATE_JSONRPC,
        // A 2025 client reads a JSON-RPC error from a 200.
        later_answer: Expect {
            status: 200,
            ..DISPATCH_404
        },
    },
];

#[tokio::test]
async fn the_valid_request_the_rows_start_from_is_answered_200() {
    for base in [valid(), legacy()] {
        let reply = answer(&server(), base).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        assert_eq!(reply.body["id"], 7);
        assert!(reply.body["result"].is_object(), "{}", reply.body);
    }
}

#[tokio::test]
async fn of_two_adjacent_stages_that_would_refuse_a_request_the_earlier_answers() {
    let server = server();
    let mut failures = Vec::new();
    for pair in PAIRS {
        let Pair {
            base,
            earlier,
            later,
            earlier_defect,
            later_defect,
            earlier_answer,
            later_answer,
        } = pair;

        let cases = [
            ("both defects", true, true, earlier_answer),
            ("the later defect only", false, true, later_answer),
            ("the earlier defect only", true, false, earlier_answer),
        ];
        for (case, with_earlier, with_later, expected) in cases {
            let mut req = base();
            if with_later {
                req = later_defect(req);
            }
            if with_earlier {
                req = earlier_defect(req);
            }
            if let Err(wrong) = expected.check(&answer(&server, req).await) {
                let method = base().message()["method"].clone();
                failures.push(format!("{earlier}/{later} ({method}), {case}: {wrong}"));
            }
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

/// Every adjacent pair of the chain has a row here or a test of its own
/// below (the two pairs around classification, which answers nothing).
#[test]
fn every_adjacent_pair_of_the_chain_is_covered() {
    let chain = wymcp::chain::post::CHAIN;
    let covered_apart = [("parse_body", "Classify"), ("Classify", "Auth")];
    for window in chain.windows(2) {
        let (earlier, later) = (window[0].name, window[1].name);
        let in_table = PAIRS
            .iter()
            .any(|pair| pair.earlier == earlier && pair.later == later);
        assert!(
            in_table || covered_apart.contains(&(earlier, later)),
            "no row for {earlier}/{later}"
        );
    }
    for pair in PAIRS {
        assert!(
            chain
                .windows(2)
                .any(|w| w[0].name == pair.earlier && w[1].name == pair.later),
            "{}/{} is not an adjacent pair of the chain",
            pair.earlier,
            pair.later
        );
    }
}

// ---------------------------------------------------------------------------
// Classification answers nothing: the stages around it show its tag.

#[tokio::test]
async fn the_parse_step_answers_before_classification_so_its_id_is_null() {
    let server = server();
    // A request with id 7 the parse step refuses: its envelope carries null.
    let reply = answer(&server, text_plain(valid())).await;
    assert_eq!(reply.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert_eq!(reply.body["id"], Value::Null);
    assert_eq!(reply.body["error"]["code"], INVALID_REQUEST);

    let reply = answer(&server, malformed_json(valid())).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    assert_eq!(reply.body["id"], Value::Null);
    assert_eq!(reply.body["error"]["code"], PARSE_ERROR);
    assert!(headers(&reply).contains(&("connection".to_owned(), "close".to_owned())));

    // The same request, refused by the first stage after classification:
    // the id is echoed, because classification tagged it a request.
    AUTH_401.assert(
        &answer(&server, bad_token(valid())).await,
        "after classification",
    );
}

#[tokio::test]
async fn auth_reads_the_kind_classification_tagged() {
    let server = server();
    let rows: &[(Value, Value)] = &[
        // A request: its id is echoed.
        (
            json!({"jsonrpc": "2.0", "id": "s", "method": "tools/list", "params": {"_meta": {V: "2026-07-28", C: {}}}}),
            json!("s"),
        ),
        // An unidentified request, a notification, a response, a batch: null.
        (
            json!({"jsonrpc": "2.0", "id": 1.5, "method": "tools/list"}),
            Value::Null,
        ),
        (
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}),
            Value::Null,
        ),
        (
            json!({"jsonrpc": "2.0", "id": 7, "result": {}}),
            Value::Null,
        ),
        (
            json!([{"jsonrpc": "2.0", "id": 7, "method": "tools/list"}]),
            Value::Null,
        ),
    ];
    for (body, id) in rows {
        // A JSON body, no MCP header, no `Accept`.
        let req = Req::body(body.clone())
            .without("accept")
            .bearer("wrong-token");
        let reply = answer(&server, req).await;
        // Auth answers, even for the kinds Validate would refuse.
        assert_eq!(
            reply.status,
            StatusCode::UNAUTHORIZED,
            "{body}: {}",
            reply.body
        );
        assert_eq!(reply.body["id"], *id, "{body}");
        assert_eq!(reply.body["error"]["code"], INVALID_REQUEST, "{body}");
        assert!(
            headers(&reply).contains(&("www-authenticate".to_owned(), "Bearer".to_owned())),
            "{body}: {:?}",
            reply.headers
        );
    }
}

#[tokio::test]
async fn with_a_good_token_the_unknown_kinds_meet_validate() {
    let server = server();
    for body in [
        json!({"jsonrpc": "2.0", "id": 7, "result": {}}),
        json!([{"jsonrpc": "2.0", "id": 7, "method": "tools/list"}]),
        json!({"jsonrpc": "2.0", "id": 1.5, "method": "tools/list"}),
    ] {
        let req = Req::body(body.clone()).without("accept").bearer(TOKEN);
        let reply = answer(&server, req).await;
        assert_eq!(
            reply.status,
            StatusCode::BAD_REQUEST,
            "{body}: {}",
            reply.body
        );
        assert_eq!(reply.body["id"], Value::Null, "{body}");
        assert_eq!(reply.body["error"]["code"], INVALID_REQUEST, "{body}");
        assert_eq!(
            headers(&reply),
            [("content-type".to_owned(), "application/json".to_owned())],
            "{body}"
        );
    }
}

// ---------------------------------------------------------------------------
// The chain's table.

#[test]
fn the_default_chain_is_design_md_section_3s_table() {
    let rows: Vec<(&str, &str)> = wymcp::chain::post::CHAIN
        .iter()
        .map(|StageInfo { name, role, .. }| {
            let role = match role {
                Role::WireCheck => "wire check",
                Role::BodyBound { .. } => "body-bound",
                Role::Validate => "validate",
                Role::After => "after",
            };
            (*name, role)
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("OriginCheck", "wire check"),
            ("parse_body", "body-bound"),
            ("Classify", "body-bound"),
            ("Auth", "wire check"),
            ("SingletonHeaders", "wire check"),
            ("ProtocolFields", "wire check"),
            ("HeaderBinding", "wire check"),
            ("Validate", "validate"),
            ("Dispatch", "after"),
        ]
    );
}

/// The default chain's expansion, read from `wymcp/src/chain.rs` as it is
/// now: `mod post` without its `#[crate::pipeline]` attribute and doc
/// comments, through the macro's own passes, pretty-printed. A change to the chain or to what the
/// macro generates for it shows here as a snapshot diff to review.
#[test]
fn the_default_chain_expands_to_straight_line_stages_in_its_order() {
    let file = syn::parse_file(include_str!("../../wymcp/src/chain.rs")).unwrap();
    let mut post = file
        .items
        .into_iter()
        .find_map(|item| match item {
            syn::Item::Mod(module) if module.ident == "post" => Some(module),
            _ => None,
        })
        .unwrap();
    let before = post.attrs.len();
    post.attrs
        .retain(|attr| !attr.path().segments.iter().any(|s| s.ident == "pipeline"));
    assert_eq!(post.attrs.len() + 1, before, "one #[pipeline] attribute");
    // Doc comments are prose, not expansion: leave them out, so editing
    // them changes no snapshot.
    let not_doc = |attr: &syn::Attribute| !attr.path().is_ident("doc");
    post.attrs.retain(not_doc);
    for item in &mut post.content.as_mut().unwrap().1 {
        match item {
            syn::Item::Type(item) => item.attrs.retain(not_doc),
            syn::Item::Fn(item) => item.attrs.retain(not_doc),
            _ => {}
        }
    }
    let expanded = expand::pipeline(
        proc_macro2::TokenStream::new(),
        quote::ToTokens::into_token_stream(post),
    );
    let expanded = prettyplease::unparse(&syn::parse2(expanded).unwrap());
    // The stages run in the documented order, each under its own name.
    let order: Vec<usize> = [
        "\"OriginCheck\"",
        "\"parse_body\"",
        "\"Classify\"",
        "\"Auth\"",
        "\"SingletonHeaders\"",
        "\"ProtocolFields\"",
        "\"HeaderBinding\"",
        "\"Validate\"",
        "\"Dispatch\"",
    ]
    .iter()
    .map(|name| expanded.find(name).unwrap())
    .collect();
    assert!(order.is_sorted(), "{order:?}");
    insta::with_settings!({ omit_expression => true }, {
        insta::assert_snapshot!(expanded);
    });
}
