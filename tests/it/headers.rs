//! The singleton-header check, protocol fields and header binding: every
//! row of the spec notes §2–§3, through the probe router. Each rejection
//! pins status, JSON-RPC code, id, content type and its one event.

#![allow(clippy::needless_pass_by_value, clippy::similar_names)]

use std::sync::Arc;

use serde_json::{Value, json};
use wymcp::{Era, Revision, Server};

use crate::support::{C, MODERN, Reply, Req, V, chain, probe, send};

const ID: i64 = 41;

fn id() -> Value {
    json!(ID)
}

/// A server with the defaults (serves 2025-11-25 and 2026-07-28).
fn server() -> Arc<Server> {
    Arc::new(Server::builder().build().unwrap())
}

fn tools_list() -> Req {
    Req::modern(ID, "tools/list")
}

fn tools_call(name: &str, arguments: Value) -> Req {
    Req::modern(ID, "tools/call").params(json!({"name": name, "arguments": arguments}))
}

/// Sets the body's protocol version in `_meta`.
fn body_version(req: Req, version: &str) -> Req {
    req.edit(|body| body["params"]["_meta"][V] = json!(version))
}

// ---------------------------------------------------------------- singleton

#[tokio::test]
async fn each_singleton_header_repeated_is_400_naming_it() {
    let server = server();
    for (sent, named) in [
        ("MCP-Protocol-Version", "MCP-Protocol-Version"),
        ("mcp-method", "Mcp-Method"),
        ("Mcp-Name", "Mcp-Name"),
        ("Authorization", "Authorization"),
        ("Mcp-Param-Region", "Mcp-Param-region"),
    ] {
        let call = tools_call("echo", json!({}));
        // A standard header is sent once more; any other twice.
        let standard = call
            .headers()
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(sent));
        let req = if standard {
            call.repeat(sent)
        } else {
            call.header(sent, "x").header(sent, "x")
        };
        let reply = probe(&server, req).await;
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
    let req = tools_list()
        .header("Accept", "application/json")
        .header("Mcp-Param-A", "1")
        .header("Mcp-Param-B", "1");
    probe(&server, req).await.passed();
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
        let reply = probe(&server, Req::body(body).bind(Era::Modern)).await;
        reply.rejected("ProtocolFields", 400, -32602, &id());
    }
}

#[tokio::test]
async fn an_unsupported_version_the_header_agrees_with_is_32022_with_supported_and_requested() {
    let server = server();
    let req = body_version(tools_list(), "v999.0.0").set("MCP-Protocol-Version", "v999.0.0");
    let reply = probe(&server, req).await;
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
    let reply = probe(&server, tools_list()).await;
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
    let reply = probe(&server(), Req::body(body)).await;
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
    for (header, version) in [(MODERN, "v999.0.0"), ("v999.0.0", MODERN), ("v1", "v2")] {
        let req = body_version(tools_list(), version).set("MCP-Protocol-Version", header);
        let reply = probe(&server, req).await;
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
    let req = body_version(tools_list(), "v999.0.0").without("MCP-Protocol-Version");
    let reply = probe(&server, req).await;
    reply.rejected("HeaderBinding", 400, -32020, &id());
}

#[tokio::test]
async fn a_served_version_sets_the_revision() {
    let reply = probe(&server(), tools_list()).await;
    assert_eq!(reply.passed()["revision"], MODERN);
}

#[tokio::test]
async fn a_notifications_meta_requires_nothing_but_is_read_when_present() {
    let server = server();
    let with_header = |body| Req::body(body).header("MCP-Protocol-Version", MODERN);
    for body in [
        json!({"jsonrpc":"2.0","method":"notifications/x","params":{"_meta":{}}}),
        json!({"jsonrpc":"2.0","method":"notifications/x","params":{}}),
        json!({"jsonrpc":"2.0","method":"notifications/x"}),
    ] {
        assert_eq!(
            probe(&server, with_header(body)).await.passed()["kind"],
            "notification"
        );
    }
    let malformed = json!({"jsonrpc":"2.0","method":"notifications/x","params":{"_meta":{V: 1}}});
    probe(&server, with_header(malformed)).await.rejected(
        "ProtocolFields",
        400,
        -32602,
        &Value::Null,
    );
    // No header row to bind: support is judged on the body alone.
    let unserved = json!({"jsonrpc":"2.0","method":"notifications/x","params":{"_meta":{V: "v9"}}});
    let reply = probe(&server, Req::body(unserved)).await;
    reply.rejected("ProtocolFields", 400, -32022, &Value::Null);
    assert_eq!(reply.body["error"]["data"]["requested"], "v9");
    let served = json!({"jsonrpc":"2.0","method":"notifications/x","params":{"_meta":{V: MODERN}}});
    assert_eq!(
        probe(&server, Req::body(served)).await.passed()["revision"],
        MODERN
    );
}

// ------------------------------------------------------- standard headers

#[tokio::test]
async fn a_missing_standard_header_on_a_request_is_32020() {
    let server = server();
    let call = tools_call("echo", json!({}));
    for (req, header) in [
        (tools_list(), "MCP-Protocol-Version"),
        (tools_list(), "Mcp-Method"),
        (call.clone(), "Mcp-Method"),
        (call, "Mcp-Name"),
        (
            Req::modern(ID, "prompts/get").params(json!({"name": "greet"})),
            "Mcp-Name",
        ),
        (
            Req::modern(ID, "resources/read").params(json!({"uri": "file:///a"})),
            "Mcp-Name",
        ),
    ] {
        let reply = probe(&server, req.without(header)).await;
        reply.rejected("HeaderBinding", 400, -32020, &id());
        assert_eq!(reply.body["error"]["data"]["header"], header);
    }
}

#[tokio::test]
async fn a_mismatched_standard_header_is_32020() {
    let server = server();
    let call = tools_call("echo", json!({}));
    let read = Req::modern(ID, "resources/read").params(json!({"uri": "file:///a"}));
    let cases = [
        (tools_list(), "Mcp-Method", "prompts/list"),
        (tools_list(), "Mcp-Method", "TOOLS/LIST"),
        (tools_list(), "Mcp-Method", "tools/list, tools/list"),
        (call.clone(), "Mcp-Name", "wrong_tool_name"),
        (call.clone(), "Mcp-Name", "ECHO"),
        (call, "Mcp-Name", "=?BASE64?ZWNobw==?="),
        (
            Req::modern(ID, "prompts/get").params(json!({"name": "greet"})),
            "Mcp-Name",
            "Greet",
        ),
        (read.clone(), "Mcp-Name", "file:///b"),
        (read, "Mcp-Name", "file:///A"),
    ];
    for (req, header, value) in cases {
        let reply = probe(&server, req.set(header, value)).await;
        reply.rejected("HeaderBinding", 400, -32020, &id());
        assert_eq!(reply.body["error"]["data"]["header"], header, "{value}");
    }
}

#[tokio::test]
async fn header_names_are_case_insensitive_and_values_lose_their_ows() {
    let server = server();
    let call = |method: &str| {
        tools_call("echo", json!({}))
            .unbound()
            .header("mcp-protocol-version", format!(" {MODERN}\t"))
            .header("MCP-METHOD", method)
            .header("mCp-NaMe", "\t echo  ")
    };
    probe(&server, call("  tools/call ")).await.passed();
    probe(&server, call("tools /call"))
        .await
        .rejected("HeaderBinding", 400, -32020, &id());
}

#[tokio::test]
async fn invalid_characters_in_a_standard_header_are_32020() {
    let server = server();
    for header in ["MCP-Protocol-Version", "Mcp-Method", "Mcp-Name"] {
        let value = match header {
            "Mcp-Name" => "café".as_bytes().to_vec(),
            "Mcp-Method" => b"tools/call\xff".to_vec(),
            _ => b"2026-07-28\x80".to_vec(),
        };
        let req = tools_call("café", json!({})).set(header, value);
        let reply = probe(&server, req).await;
        reply.rejected("HeaderBinding", 400, -32020, &id());
        assert_eq!(reply.body["error"]["data"]["header"], header);
    }
}

#[tokio::test]
async fn mcp_name_takes_the_base64_form() {
    let server = server();
    let call = tools_call("café", json!({}));
    // The builder encodes a non-ASCII name.
    let name: Vec<_> = call
        .headers()
        .into_iter()
        .filter(|(n, _)| n == "Mcp-Name")
        .map(|(_, v)| v)
        .collect();
    assert_eq!(name, [b"=?base64?Y2Fmw6k=?=".to_vec()]);
    probe(&server, call.clone()).await.passed();
    for bad in [
        "=?base64?Y2Fmw6k?=",
        "=?base64?Y2Fm!6k=?=",
        "=?base64?/w==?=",
    ] {
        let reply = probe(&server, call.clone().set("Mcp-Name", bad)).await;
        reply.rejected("HeaderBinding", 400, -32020, &id());
    }
    // Mcp-Method takes no sentinel: the encoded method is a literal mismatch.
    let encoded = "=?base64?dG9vbHMvbGlzdA==?=";
    let reply = probe(&server, tools_list().set("Mcp-Method", encoded)).await;
    reply.rejected("HeaderBinding", 400, -32020, &id());
}

#[tokio::test]
async fn a_name_with_no_header_spelling_binds_nothing() {
    // A non-string params.name is Validate's to answer, not header binding's.
    let server = server();
    let req = Req::modern(ID, "tools/call")
        .params(json!({"name": 7}))
        .without("Mcp-Name");
    probe(&server, req).await.passed();
}

#[tokio::test]
async fn a_notification_may_omit_mcp_method_but_not_mismatch_it() {
    let server = server();
    // Bound: MCP-Protocol-Version and Mcp-Method.
    let notification = || Req::notification("notifications/x");
    probe(&server, notification().without("Mcp-Method"))
        .await
        .passed();
    probe(&server, notification().unbound()).await.passed();
    probe(&server, notification()).await.passed();
    let reply = probe(&server, notification().set("Mcp-Method", "notifications/y")).await;
    reply.rejected("HeaderBinding", 400, -32020, &Value::Null);
    assert_eq!(reply.body["error"]["data"]["header"], "Mcp-Method");
    let versioned = body_version(notification(), MODERN)
        .without("Mcp-Method")
        .set("MCP-Protocol-Version", "v2");
    let reply = probe(&server, versioned).await;
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
    let req = params
        .iter()
        .fold(tools_call("deploy", arguments), |req, (name, value)| {
            req.header(name, value)
        });
    probe(&param_server(), req).await
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
    let req = tools_call("deploy", json!({"region": "café"})).header("Mcp-Param-Region", "café");
    let reply = probe(&param_server(), req).await;
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
    let req = Req::modern(ID, "tools/call").params(json!({"name": "deploy"}));
    probe(&param_server(), req).await.passed();
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
    let req = tools_call("other", json!({"region": "Hello"}));
    probe(&param_server(), req).await.passed();
    // Only tools/call binds parameters.
    let req = Req::modern(ID, "prompts/get")
        .params(json!({"name": "deploy", "arguments": {"region": "x"}}));
    probe(&param_server(), req).await.passed();
}

// ------------------------------------------------------------------ legacy

#[tokio::test]
async fn legacy_requests_meet_only_the_2025_rules() {
    let server = server();
    // No header: the 2025 handshake.
    let initialize = Req::legacy(ID, "initialize").params(json!({"protocolVersion": "2025-11-25"}));
    assert_eq!(probe(&server, initialize).await.passed()["era"], "legacy");
    // A served 2025 revision (bound: MCP-Protocol-Version: 2025-11-25);
    // the 2026 rows are not required of a 2025 client.
    let ping = || Req::legacy(ID, "ping");
    let reply = probe(&server, ping()).await;
    assert_eq!(reply.passed()["revision"], "2025-11-25");
    // But one that is present is bound (issue 16, item 10): a gateway
    // routing on it must see what the server runs.
    let reply = probe(&server, ping().header("Mcp-Method", "other")).await;
    reply.rejected("HeaderBinding", 400, -32020, &id());
    let reply = probe(&server, ping().header("Mcp-Method", "ping")).await;
    assert_eq!(reply.passed()["revision"], "2025-11-25");
    // An unserved or unknown 2025 revision: a plain 400.
    for version in ["2025-06-18", "2025-03-26", " 2025-03-26 "] {
        let reply = probe(&server, ping().set("MCP-Protocol-Version", version)).await;
        reply.rejected("HeaderBinding", 400, -32600, &id());
        assert_eq!(
            reply.body["error"]["data"],
            json!({"header": "MCP-Protocol-Version", "supported": ["2025-11-25", "2026-07-28"], "requested": version.trim()})
        );
    }
}

// ------------------------------------------------------- the default chain

/// A server, a request, and the rejection expected: stage, status, code.
type Case = (Arc<Server>, Req, &'static str, u16, i64);

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
    let unsupported = body_version(tools_list(), "v9").set("MCP-Protocol-Version", "v9");
    let no_caps = tools_list().edit(|body| {
        body["params"]["_meta"].as_object_mut().unwrap().remove(C);
    });
    let cases: Vec<Case> = vec![
        (auth_server, tools_list(), "Auth", 401, -32600),
        (
            server(),
            tools_list().header("Mcp-Method", "tools/list"),
            "SingletonHeaders",
            400,
            -32600,
        ),
        (server(), no_caps, "ProtocolFields", 400, -32602),
        (server(), unsupported, "ProtocolFields", 400, -32022),
        (
            server(),
            tools_list().set("Mcp-Method", "tools/call"),
            "HeaderBinding",
            400,
            -32020,
        ),
    ];
    for (server, req, stage, status, code) in cases {
        let reply = send(&chain(server), req).await;
        reply.rejected(stage, status, code, &id());
    }
}
