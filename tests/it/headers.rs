//! The singleton-header check, protocol fields and header binding: every
//! row of the spec notes §2–§3, through the probe router. Each rejection
//! pins status, JSON-RPC code, id, content type and its one event.

#![allow(
    clippy::unwrap_used,
    clippy::needless_pass_by_value,
    clippy::similar_names
)]

use crate::checks_support;

use std::sync::Arc;

use checks_support::*;
use serde_json::{Value, json};
use wymcp::{Revision, Server};

const ID: i64 = 41;

fn id() -> Value {
    json!(ID)
}

fn tools_list() -> Value {
    modern(id(), "tools/list", json!({}))
}

fn tools_call(name: &str, arguments: Value) -> Value {
    modern(
        id(),
        "tools/call",
        json!({"name": name, "arguments": arguments}),
    )
}

/// `(header, value)` pairs from owned strings.
fn pairs<'a>(headers: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    headers.iter().map(|(n, v)| (*n, v.as_str())).collect()
}

/// The standard headers of `body`, with `name` replaced by `value` (or
/// removed when `None`).
fn with_header(
    body: &Value,
    name: &'static str,
    value: Option<&str>,
) -> Vec<(&'static str, String)> {
    let mut headers: Vec<_> = standard_headers(body)
        .into_iter()
        .filter(|(n, _)| !n.eq_ignore_ascii_case(name))
        .collect();
    if let Some(value) = value {
        headers.push((name, value.to_owned()));
    }
    headers
}

async fn send_with(
    server: &Arc<Server>,
    body: &Value,
    headers: &[(&'static str, String)],
) -> Reply {
    send(server, post(body, &pairs(headers))).await
}

// ---------------------------------------------------------------- singleton

#[tokio::test]
async fn each_singleton_header_repeated_is_400_naming_it() {
    let server = server();
    let body = tools_call("echo", json!({}));
    for (sent, named) in [
        ("MCP-Protocol-Version", "MCP-Protocol-Version"),
        ("mcp-method", "Mcp-Method"),
        ("Mcp-Name", "Mcp-Name"),
        ("Authorization", "Authorization"),
        ("Mcp-Param-Region", "Mcp-Param-region"),
    ] {
        let mut headers = standard_headers(&body);
        let value = headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(sent))
            .map_or("x".to_owned(), |(_, v)| v.clone());
        headers.push((sent, value.clone()));
        if headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(sent))
            .nth(1)
            .is_none()
        {
            headers.push((sent, value));
        }
        let reply = send_with(&server, &body, &headers).await;
        reply.rejected("SingletonHeaders", 400, -32600, &id());
        assert_eq!(reply.body["error"]["data"]["header"], named);
        assert!(
            reply.body["error"]["message"]
                .as_str()
                .unwrap()
                .contains(named)
        );
    }
}

#[tokio::test]
async fn other_repeated_headers_and_distinct_params_pass_the_singleton_check() {
    let server = server();
    let body = tools_list();
    let mut headers = standard_headers(&body);
    headers.push(("Accept", "application/json".into()));
    headers.push(("Mcp-Param-A", "1".into()));
    headers.push(("Mcp-Param-B", "1".into()));
    send_with(&server, &body, &headers).await.passed();
}

// ---------------------------------------------------------- protocol fields

#[tokio::test]
async fn a_request_missing_or_malforming_its_protocol_fields_is_400_invalid_params() {
    let server = server();
    let bodies = [
        json!({"jsonrpc":"2.0","id":ID,"method":"tools/list"}),
        json!({"jsonrpc":"2.0","id":ID,"method":"tools/list","params":{}}),
        json!({"jsonrpc":"2.0","id":ID,"method":"tools/list","params":[]}),
        json!({"jsonrpc":"2.0","id":ID,"method":"tools/list","params":{"_meta":"x"}}),
        json!({"jsonrpc":"2.0","id":ID,"method":"tools/list","params":{"_meta":{C:{}}}}),
        json!({"jsonrpc":"2.0","id":ID,"method":"tools/list","params":{"_meta":{V:MODERN}}}),
        json!({"jsonrpc":"2.0","id":ID,"method":"tools/list","params":{"_meta":{V:2026, C:{}}}}),
        json!({"jsonrpc":"2.0","id":ID,"method":"tools/list","params":{"_meta":{V:MODERN, C:[]}}}),
    ];
    for body in bodies {
        let reply = send_with(&server, &body, &standard_headers(&body)).await;
        reply.rejected("ProtocolFields", 400, -32602, &id());
    }
}

#[tokio::test]
async fn an_unsupported_version_the_header_agrees_with_is_32022_with_supported_and_requested() {
    let server = server();
    let mut body = tools_list();
    body["params"]["_meta"][V] = json!("v999.0.0");
    let headers = with_header(&body, "MCP-Protocol-Version", Some("v999.0.0"));
    let reply = send_with(&server, &body, &headers).await;
    reply.rejected("ProtocolFields", 400, -32022, &id());
    assert_eq!(
        reply.body["error"]["data"],
        json!({"supported": ["2026-07-28"], "requested": "v999.0.0"})
    );
}

#[tokio::test]
async fn a_known_revision_the_server_does_not_serve_is_32022() {
    let server = Arc::new(
        Server::builder()
            .revisions([Revision::V2025_11_25])
            .build()
            .unwrap(),
    );
    let reply = send_with(&server, &tools_list(), &standard_headers(&tools_list())).await;
    reply.rejected("ProtocolFields", 400, -32022, &id());
    assert_eq!(
        reply.body["error"]["data"],
        json!({"supported": [], "requested": MODERN})
    );
}

#[tokio::test]
async fn a_served_2025_revision_named_in_meta_is_32022() {
    // Only a notification without the header reaches this: a header naming
    // 2025 makes the message legacy.
    let body =
        json!({"jsonrpc":"2.0","method":"notifications/x","params":{"_meta":{V: "2025-11-25"}}});
    let reply = send(&server(), post(&body, &[])).await;
    reply.rejected("ProtocolFields", 400, -32022, &Value::Null);
    assert_eq!(
        reply.body["error"]["data"]["supported"],
        json!(["2026-07-28"])
    );
}

#[tokio::test]
async fn a_header_body_version_disagreement_is_32020_whatever_either_names() {
    // DESIGN §3's refinement; conformance: header 2026-07-28, body v999.0.0.
    let server = server();
    for (header, body_version) in [(MODERN, "v999.0.0"), ("v999.0.0", MODERN), ("v1", "v2")] {
        let mut body = tools_list();
        body["params"]["_meta"][V] = json!(body_version);
        let headers = with_header(&body, "MCP-Protocol-Version", Some(header));
        let reply = send_with(&server, &body, &headers).await;
        reply.rejected("HeaderBinding", 400, -32020, &id());
        assert_eq!(
            reply.body["error"]["data"]["header"],
            "MCP-Protocol-Version"
        );
    }
}

#[tokio::test]
async fn a_request_without_the_version_header_is_32020_even_for_an_unserved_body_version() {
    let server = server();
    let mut body = tools_list();
    body["params"]["_meta"][V] = json!("v999.0.0");
    let headers = with_header(&body, "MCP-Protocol-Version", None);
    let reply = send_with(&server, &body, &headers).await;
    reply.rejected("HeaderBinding", 400, -32020, &id());
}

#[tokio::test]
async fn a_served_version_sets_the_revision() {
    let reply = send_with(&server(), &tools_list(), &standard_headers(&tools_list())).await;
    assert_eq!(reply.passed()["revision"], MODERN);
}

#[tokio::test]
async fn a_notifications_meta_requires_nothing_but_is_read_when_present() {
    let server = server();
    let headers = [("MCP-Protocol-Version", MODERN)];
    for body in [
        json!({"jsonrpc":"2.0","method":"notifications/x","params":{"_meta":{}}}),
        json!({"jsonrpc":"2.0","method":"notifications/x","params":{}}),
        json!({"jsonrpc":"2.0","method":"notifications/x"}),
    ] {
        assert_eq!(
            send(&server, post(&body, &headers)).await.passed()["kind"],
            "notification"
        );
    }
    let malformed = json!({"jsonrpc":"2.0","method":"notifications/x","params":{"_meta":{V: 1}}});
    send(&server, post(&malformed, &headers)).await.rejected(
        "ProtocolFields",
        400,
        -32602,
        &Value::Null,
    );
    // No header row to bind: support is judged on the body alone.
    let unserved = json!({"jsonrpc":"2.0","method":"notifications/x","params":{"_meta":{V: "v9"}}});
    let reply = send(&server, post(&unserved, &[])).await;
    reply.rejected("ProtocolFields", 400, -32022, &Value::Null);
    assert_eq!(reply.body["error"]["data"]["requested"], "v9");
    let served = json!({"jsonrpc":"2.0","method":"notifications/x","params":{"_meta":{V: MODERN}}});
    assert_eq!(
        send(&server, post(&served, &[])).await.passed()["revision"],
        MODERN
    );
}

// ------------------------------------------------------- standard headers

#[tokio::test]
async fn a_missing_standard_header_on_a_request_is_32020() {
    let server = server();
    let call = tools_call("echo", json!({}));
    for (body, header) in [
        (tools_list(), "MCP-Protocol-Version"),
        (tools_list(), "Mcp-Method"),
        (call.clone(), "Mcp-Method"),
        (call, "Mcp-Name"),
        (
            modern(id(), "prompts/get", json!({"name": "greet"})),
            "Mcp-Name",
        ),
        (
            modern(id(), "resources/read", json!({"uri": "file:///a"})),
            "Mcp-Name",
        ),
    ] {
        let reply = send_with(&server, &body, &with_header(&body, header, None)).await;
        reply.rejected("HeaderBinding", 400, -32020, &id());
        assert_eq!(reply.body["error"]["data"]["header"], header);
    }
}

#[tokio::test]
async fn a_mismatched_standard_header_is_32020() {
    let server = server();
    let call = tools_call("echo", json!({}));
    let read = modern(id(), "resources/read", json!({"uri": "file:///a"}));
    let cases = [
        (tools_list(), "Mcp-Method", "prompts/list"),
        (tools_list(), "Mcp-Method", "TOOLS/LIST"),
        (tools_list(), "Mcp-Method", "tools/list, tools/list"),
        (call.clone(), "Mcp-Name", "wrong_tool_name"),
        (call.clone(), "Mcp-Name", "ECHO"),
        (call, "Mcp-Name", "=?BASE64?ZWNobw==?="),
        (
            modern(id(), "prompts/get", json!({"name": "greet"})),
            "Mcp-Name",
            "Greet",
        ),
        (read.clone(), "Mcp-Name", "file:///b"),
        (read, "Mcp-Name", "file:///A"),
    ];
    for (body, header, value) in cases {
        let reply = send_with(&server, &body, &with_header(&body, header, Some(value))).await;
        reply.rejected("HeaderBinding", 400, -32020, &id());
        assert_eq!(reply.body["error"]["data"]["header"], header, "{value}");
    }
}

#[tokio::test]
async fn header_names_are_case_insensitive_and_values_lose_their_ows() {
    let server = server();
    let call = tools_call("echo", json!({}));
    let mut headers = vec![
        ("mcp-protocol-version", format!(" {MODERN}\t")),
        ("MCP-METHOD", "  tools/call ".to_owned()),
        ("mCp-NaMe", "\t echo  ".to_owned()),
    ];
    send_with(&server, &call, &headers).await.passed();
    headers[1].1 = "tools /call".into();
    send_with(&server, &call, &headers)
        .await
        .rejected("HeaderBinding", 400, -32020, &id());
}

#[tokio::test]
async fn invalid_characters_in_a_standard_header_are_32020() {
    let server = server();
    let call = tools_call("café", json!({}));
    for header in ["MCP-Protocol-Version", "Mcp-Method", "Mcp-Name"] {
        let mut headers: Vec<(&str, Vec<u8>)> = standard_headers(&call)
            .into_iter()
            .filter(|(n, _)| *n != header)
            .map(|(n, v)| (n, v.into_bytes()))
            .collect();
        let value = match header {
            "Mcp-Name" => "café".as_bytes().to_vec(),
            "Mcp-Method" => b"tools/call\xff".to_vec(),
            _ => b"2026-07-28\x80".to_vec(),
        };
        headers.push((header, value));
        let raw = headers.iter().map(|(n, v)| (*n, v.as_slice()));
        let reply = send(&server, post_raw(&call, raw)).await;
        reply.rejected("HeaderBinding", 400, -32020, &id());
        assert_eq!(reply.body["error"]["data"]["header"], header);
    }
}

#[tokio::test]
async fn mcp_name_takes_the_base64_form() {
    let server = server();
    let call = tools_call("café", json!({}));
    // standard_headers encodes a non-ASCII name.
    assert_eq!(standard_headers(&call)[2].1, "=?base64?Y2Fmw6k=?=");
    send_with(&server, &call, &standard_headers(&call))
        .await
        .passed();
    for bad in [
        "=?base64?Y2Fmw6k?=",
        "=?base64?Y2Fm!6k=?=",
        "=?base64?/w==?=",
    ] {
        let reply = send_with(&server, &call, &with_header(&call, "Mcp-Name", Some(bad))).await;
        reply.rejected("HeaderBinding", 400, -32020, &id());
    }
    // Mcp-Method takes no sentinel: the encoded method is a literal mismatch.
    let list = tools_list();
    let encoded = "=?base64?dG9vbHMvbGlzdA==?=";
    let reply = send_with(
        &server,
        &list,
        &with_header(&list, "Mcp-Method", Some(encoded)),
    )
    .await;
    reply.rejected("HeaderBinding", 400, -32020, &id());
}

#[tokio::test]
async fn a_name_with_no_header_spelling_binds_nothing() {
    // A non-string params.name is Validate's to answer, not header binding's.
    let server = server();
    let body = modern(id(), "tools/call", json!({"name": 7}));
    let headers = with_header(&body, "Mcp-Name", None);
    send_with(&server, &body, &headers).await.passed();
}

#[tokio::test]
async fn a_notification_may_omit_mcp_method_but_not_mismatch_it() {
    let server = server();
    let body = notification("notifications/x");
    send(&server, post(&body, &[("MCP-Protocol-Version", MODERN)]))
        .await
        .passed();
    send(&server, post(&body, &[])).await.passed();
    send(
        &server,
        post(
            &body,
            &[
                ("MCP-Protocol-Version", MODERN),
                ("Mcp-Method", "notifications/x"),
            ],
        ),
    )
    .await
    .passed();
    let reply = send(
        &server,
        post(
            &body,
            &[
                ("MCP-Protocol-Version", MODERN),
                ("Mcp-Method", "notifications/y"),
            ],
        ),
    )
    .await;
    reply.rejected("HeaderBinding", 400, -32020, &Value::Null);
    assert_eq!(reply.body["error"]["data"]["header"], "Mcp-Method");
    let mut versioned = body.clone();
    versioned["params"]["_meta"][V] = json!(MODERN);
    let reply = send(&server, post(&versioned, &[("MCP-Protocol-Version", "v2")])).await;
    reply.rejected("HeaderBinding", 400, -32020, &Value::Null);
}

// ------------------------------------------------------------ Mcp-Param-*

fn param_server() -> Arc<Server> {
    let deploy = wymcp::Tool::new("deploy")
        .input_schema(json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "count": {"type": "integer", "x-mcp-header": "Count"},
            "dry_run": {"type": "boolean", "x-mcp-header": "DryRun"},
            "target": {"type": "object", "properties": {
                "tenant": {"type": "string", "x-mcp-header": "Tenant"}
            }}
        }}))
        .raw_handler(|_, _| async { Ok(wymcp::ToolResult::text("")) });
    Arc::new(Server::builder().tool(deploy).build().unwrap())
}

async fn deploy(arguments: Value, params: &[(&'static str, &str)]) -> Reply {
    let body = tools_call("deploy", arguments);
    let mut headers = standard_headers(&body);
    headers.extend(params.iter().map(|(n, v)| (*n, (*v).to_owned())));
    send_with(&param_server(), &body, &headers).await
}

#[tokio::test]
async fn param_headers_that_match_pass() {
    let args =
        json!({"region": "Hello", "count": 42, "dry_run": true, "target": {"tenant": "acme"}});
    let all = [
        ("Mcp-Param-Region", "Hello"),
        ("Mcp-Param-Count", "42"),
        ("Mcp-Param-DryRun", "true"),
        ("Mcp-Param-Tenant", "acme"),
    ];
    deploy(args.clone(), &all).await.passed();
    // Name case-insensitive, OWS, base64, numeric comparison.
    deploy(
        args,
        &[
            ("mcp-param-region", " =?base64?SGVsbG8=?= "),
            ("MCP-PARAM-COUNT", "42.0"),
            ("Mcp-Param-DryRun", "\ttrue"),
            ("Mcp-Param-Tenant", "=?base64?YWNtZQ==?="),
        ],
    )
    .await
    .passed();
    deploy(json!({"count": 42.0}), &[("Mcp-Param-Count", "42")])
        .await
        .passed();
    deploy(json!({"count": -7}), &[("Mcp-Param-Count", "-7")])
        .await
        .passed();
    deploy(json!({"dry_run": false}), &[("Mcp-Param-DryRun", "false")])
        .await
        .passed();
}

#[tokio::test]
async fn base64_literal_forms_are_compared_as_written() {
    for literal in ["=?BASE64?SGVsbG8=?=", "=?base64?SGVsbG8=", "SGVsbG8="] {
        deploy(json!({"region": literal}), &[("Mcp-Param-Region", literal)])
            .await
            .passed();
        // Not decoded: against the decoded text it is a mismatch.
        deploy(json!({"region": "Hello"}), &[("Mcp-Param-Region", literal)])
            .await
            .rejected("HeaderBinding", 400, -32020, &id());
    }
}

#[tokio::test]
async fn param_header_defects_are_32020() {
    let cases: [(Value, &str, &str); 13] = [
        (
            json!({"region": "Hello"}),
            "Mcp-Param-Region",
            "=?base64?SGVsbG8?=",
        ),
        (
            json!({"region": "Hello"}),
            "Mcp-Param-Region",
            "=?base64?SGVs!!!bG8=?=",
        ),
        (
            json!({"region": "Hello"}),
            "Mcp-Param-Region",
            "=?base64?SGVsbG9=?=",
        ),
        (json!({"region": "Hello"}), "Mcp-Param-Region", "hello"),
        (json!({"region": "Hello"}), "Mcp-Param-Region", "Hello2"),
        (json!({"count": 42}), "Mcp-Param-Count", "43"),
        (json!({"count": 42}), "Mcp-Param-Count", "42.5"),
        (json!({"count": 42}), "Mcp-Param-Count", "forty-two"),
        (json!({"dry_run": true}), "Mcp-Param-DryRun", "True"),
        (json!({"dry_run": true}), "Mcp-Param-DryRun", "1"),
        (
            json!({"target": {"tenant": "acme"}}),
            "Mcp-Param-Tenant",
            "other",
        ),
        // A header for an argument with no value, absent or null.
        (json!({}), "Mcp-Param-Region", "Hello"),
        (json!({"region": null}), "Mcp-Param-Region", "Hello"),
    ];
    for (args, header, value) in cases {
        let reply = deploy(args, &[(header, value)]).await;
        reply.rejected("HeaderBinding", 400, -32020, &id());
        assert_eq!(reply.body["error"]["data"]["header"], header, "{value}");
    }
}

#[tokio::test]
async fn a_param_header_with_invalid_characters_is_32020() {
    let body = tools_call("deploy", json!({"region": "café"}));
    let standard = standard_headers(&body);
    let mut raw: Vec<(&str, &[u8])> = standard.iter().map(|(n, v)| (*n, v.as_bytes())).collect();
    raw.push(("Mcp-Param-Region", "café".as_bytes()));
    let reply = send(&param_server(), post_raw(&body, raw)).await;
    reply.rejected("HeaderBinding", 400, -32020, &id());
}

#[tokio::test]
async fn a_missing_param_header_for_a_value_in_the_body_is_32020() {
    for args in [
        json!({"region": "Hello"}),
        json!({"count": 0}),
        json!({"dry_run": false}),
        json!({"target": {"tenant": "acme"}}),
    ] {
        let reply = deploy(args.clone(), &[]).await;
        reply.rejected("HeaderBinding", 400, -32020, &id());
        assert!(
            reply.body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("missing"),
            "{args}"
        );
    }
}

#[tokio::test]
async fn absent_null_and_headerless_values_expect_no_header() {
    for args in [
        json!({}),
        json!({"region": null, "count": null}),
        json!({"target": {}}),
        json!({"target": "not an object"}),
    ] {
        deploy(args, &[]).await.passed();
    }
    // No arguments at all.
    let body = modern(id(), "tools/call", json!({"name": "deploy"}));
    send_with(&param_server(), &body, &standard_headers(&body))
        .await
        .passed();
}

#[tokio::test]
async fn a_body_value_of_the_wrong_type_is_left_to_validate() {
    for (args, header) in [
        (json!({"region": 42}), Some(("Mcp-Param-Region", "42"))),
        (json!({"region": 42}), None),
        (json!({"count": "42"}), Some(("Mcp-Param-Count", "41"))),
        (json!({"count": 4.5}), None),
        (json!({"dry_run": "true"}), None),
        (json!({"region": {"a": 1}}), Some(("Mcp-Param-Region", "x"))),
    ] {
        let headers: Vec<_> = header.into_iter().collect();
        deploy(args, &headers).await.passed();
    }
}

#[tokio::test]
async fn undeclared_param_headers_and_other_tools_are_ignored() {
    deploy(json!({}), &[("Mcp-Param-Unknown", "x")])
        .await
        .passed();
    let body = tools_call("other", json!({"region": "Hello"}));
    send_with(&param_server(), &body, &standard_headers(&body))
        .await
        .passed();
    // Only tools/call binds parameters.
    let body = modern(
        id(),
        "prompts/get",
        json!({"name": "deploy", "arguments": {"region": "x"}}),
    );
    send_with(&param_server(), &body, &standard_headers(&body))
        .await
        .passed();
}

// ------------------------------------------------------------------ legacy

#[tokio::test]
async fn legacy_requests_meet_only_the_2025_rules() {
    let server = server();
    let initialize = json!({"jsonrpc":"2.0","id":ID,"method":"initialize","params":{"protocolVersion":"2025-11-25"}});
    // No header: the 2025 handshake.
    assert_eq!(
        send(&server, post(&initialize, &[])).await.passed()["era"],
        "legacy"
    );
    // A served 2025 revision; 2026 rows are not checked.
    let ping = json!({"jsonrpc":"2.0","id":ID,"method":"ping"});
    let reply = send(
        &server,
        post(
            &ping,
            &[
                ("MCP-Protocol-Version", "2025-11-25"),
                ("Mcp-Method", "other"),
            ],
        ),
    )
    .await;
    assert_eq!(reply.passed()["revision"], "2025-11-25");
    // An unserved or unknown 2025 revision: a plain 400.
    for version in ["2025-06-18", "2025-03-26", " 2025-03-26 "] {
        let reply = send(&server, post(&ping, &[("MCP-Protocol-Version", version)])).await;
        reply.rejected("HeaderBinding", 400, -32600, &id());
        assert_eq!(
            reply.body["error"]["data"],
            json!({"header": "MCP-Protocol-Version", "supported": ["2025-11-25", "2026-07-28"], "requested": version.trim()})
        );
    }
}

// ------------------------------------------------------- the default chain

/// A server, a body, its headers, and the rejection expected: stage,
/// status, code.
type Case = (
    Arc<Server>,
    Value,
    Vec<(&'static str, String)>,
    &'static str,
    u16,
    i64,
);

#[tokio::test]
async fn through_the_default_chain_each_check_answers_as_declared() {
    let auth_server = Arc::new(
        Server::builder()
            .auth(
                wymcp::auth::StaticTokens::new(),
                wymcp::auth::AuthConfig::new().required_scopes(["mcp"]),
            )
            .build()
            .unwrap(),
    );
    let body = tools_list();
    let mut unsupported = tools_list();
    unsupported["params"]["_meta"][V] = json!("v9");
    let mut no_caps = tools_list();
    no_caps["params"]["_meta"]
        .as_object_mut()
        .unwrap()
        .remove(C);
    let cases: Vec<Case> = vec![
        (
            auth_server,
            body.clone(),
            standard_headers(&body),
            "Auth",
            401,
            -32600,
        ),
        (
            server(),
            body.clone(),
            [
                standard_headers(&body),
                vec![("Mcp-Method", "tools/list".into())],
            ]
            .concat(),
            "SingletonHeaders",
            400,
            -32600,
        ),
        (
            server(),
            no_caps.clone(),
            standard_headers(&no_caps),
            "ProtocolFields",
            400,
            -32602,
        ),
        (
            server(),
            unsupported.clone(),
            with_header(&unsupported, "MCP-Protocol-Version", Some("v9")),
            "ProtocolFields",
            400,
            -32022,
        ),
        (
            server(),
            body.clone(),
            with_header(&body, "Mcp-Method", Some("tools/call")),
            "HeaderBinding",
            400,
            -32020,
        ),
    ];
    for (server, body, headers, stage, status, code) in cases {
        let router = wymcp::chain::post::router(server);
        let reply = send_to(router, post(&body, &pairs(&headers))).await;
        reply.rejected(stage, status, code, &id());
    }
}
