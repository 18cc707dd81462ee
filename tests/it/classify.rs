//! Classification (DESIGN §5, the seed's table): every row, table-driven,
//! through the probe router; and the rejection-id rule it feeds, for each
//! kind, on every stage from classification to header binding that can
//! reject.

use std::sync::Arc;

use serde_json::{Value, json};
use wymcp::Server;
use wymcp::auth::{AuthConfig, StaticTokens};

use crate::support::{C, MODERN, Req, chain, meta, probe, send, validated};

/// A server with the defaults (serves 2025-11-25 and 2026-07-28).
fn server() -> Arc<Server> {
    Arc::new(Server::builder().build().unwrap())
}

/// `(row, body as sent, kind)`: the seed's table in clause order.
const TABLE: &[(&str, &str, &str)] = &[
    (
        "string id",
        r#"{"jsonrpc":"2.0","id":"abc","method":"tools/list"}"#,
        "request",
    ),
    (
        "integer id 0",
        r#"{"jsonrpc":"2.0","id":0,"method":"tools/list"}"#,
        "request",
    ),
    (
        "negative integer id",
        r#"{"jsonrpc":"2.0","id":-42,"method":"tools/list"}"#,
        "request",
    ),
    (
        "integer id beyond i64 (u64)",
        r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"tools/list"}"#,
        "request",
    ),
    (
        "jsonrpc 1.0 with a string id",
        r#"{"jsonrpc":"1.0","id":"old","method":"tools/list"}"#,
        "request",
    ),
    (
        "integer id beyond u64",
        r#"{"jsonrpc":"2.0","id":18446744073709551616,"method":"tools/list"}"#,
        "unidentified_request",
    ),
    (
        "float id",
        r#"{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}"#,
        "unidentified_request",
    ),
    (
        "integral float id",
        r#"{"jsonrpc":"2.0","id":1.0,"method":"tools/list"}"#,
        "unidentified_request",
    ),
    (
        "null id",
        r#"{"jsonrpc":"2.0","id":null,"method":"tools/list"}"#,
        "unidentified_request",
    ),
    (
        "boolean id",
        r#"{"jsonrpc":"2.0","id":true,"method":"tools/list"}"#,
        "unidentified_request",
    ),
    (
        "object id",
        r#"{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}"#,
        "unidentified_request",
    ),
    (
        "array id",
        r#"{"jsonrpc":"2.0","id":[1],"method":"tools/list"}"#,
        "unidentified_request",
    ),
    (
        "method, no id",
        r#"{"jsonrpc":"2.0","method":"notifications/x"}"#,
        "notification",
    ),
    ("no method", r#"{"jsonrpc":"2.0","id":1}"#, "unknown"),
    (
        "non-string method",
        r#"{"jsonrpc":"2.0","id":1,"method":42}"#,
        "unknown",
    ),
    (
        "a response: id and result",
        r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
        "unknown",
    ),
    (
        "a response: id and error",
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"x"}}"#,
        "unknown",
    ),
    (
        "an array (batch)",
        r#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]"#,
        "unknown",
    ),
    ("a scalar", r#""tools/list""#, "unknown"),
];

/// The id a rejection of `body` must carry: the body's own for a request.
fn rejection_id(body: &str, kind: &str) -> Value {
    if kind == "request" {
        serde_json::from_str::<Value>(body).unwrap()["id"].clone()
    } else {
        Value::Null
    }
}

#[tokio::test]
async fn every_row_of_the_table_is_tagged_with_its_kind() {
    let server = server();
    for (row, body, kind) in TABLE {
        let reply = probe(&server, Req::raw(*body)).await;
        assert_eq!(reply.passed()["kind"], *kind, "row: {row}");
    }
}

#[tokio::test]
async fn a_request_id_is_echoed_exactly_and_no_other_id_is() {
    // SingletonHeaders answers every kind and era alike, so it shows the
    // rejection id of every row.
    let server = server();
    for (row, body, kind) in TABLE {
        let req = Req::raw(*body)
            .header("Mcp-Method", "a")
            .header("Mcp-Method", "a");
        let reply = probe(&server, req).await;
        let id = rejection_id(body, kind);
        reply.rejected("SingletonHeaders", 400, -32600, &id);
        if *kind == "request" {
            // The echo is the id as sent, byte for byte, not a float.
            let sent: Value = serde_json::from_str(body).unwrap();
            assert_eq!(
                reply.body["id"].to_string(),
                sent["id"].to_string(),
                "row: {row}"
            );
        }
    }
}

#[tokio::test]
async fn auth_401_follows_the_rejection_id_rule_for_every_kind() {
    let server = Arc::new(
        Server::builder()
            .auth(StaticTokens::new(), AuthConfig::new())
            .build()
            .unwrap(),
    );
    for (_, body, kind) in TABLE {
        let reply = probe(&server, Req::raw(*body)).await;
        reply.rejected("Auth", 401, -32600, &rejection_id(body, kind));
    }
}

/// Per kind, the one body each stage of the 2026 checks reads.
fn modern_bodies() -> Vec<(&'static str, Value)> {
    let request = |id: Value| json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": {"_meta": meta()}});
    vec![
        ("request", request(json!(7))),
        (
            "notification",
            json!({"jsonrpc":"2.0","method":"notifications/x","params":{"_meta":{}}}),
        ),
        ("unidentified_request", request(json!(1.5))),
        (
            "unknown",
            json!({"jsonrpc":"2.0","id":7,"params":{"_meta":meta()}}),
        ),
    ]
}

#[tokio::test]
async fn protocol_fields_follows_the_rejection_id_rule_and_reads_only_requests_and_notifications() {
    let server = server();
    for (kind, mut body) in modern_bodies() {
        // A malformed `_meta` capabilities value: -32602 where it is read.
        body["params"]["_meta"][C] = json!("none");
        let reply = probe(
            &server,
            Req::body(body).header("MCP-Protocol-Version", MODERN),
        )
        .await;
        match kind {
            "request" => {
                reply.rejected("ProtocolFields", 400, -32602, &json!(7));
            }
            "notification" => {
                reply.rejected("ProtocolFields", 400, -32602, &Value::Null);
            }
            // Nothing to read: Validate's to answer.
            _ => assert_eq!(reply.passed()["kind"], kind),
        }
    }
}

#[tokio::test]
async fn header_binding_follows_the_rejection_id_rule_and_reads_only_requests_and_notifications() {
    let server = server();
    for (kind, body) in modern_bodies() {
        let req = Req::body(body)
            .header("MCP-Protocol-Version", MODERN)
            .header("Mcp-Method", "wrong/method");
        let reply = probe(&server, req).await;
        match kind {
            "request" => {
                reply.rejected("HeaderBinding", 400, -32020, &json!(7));
            }
            "notification" => {
                reply.rejected("HeaderBinding", 400, -32020, &Value::Null);
            }
            _ => assert_eq!(reply.passed()["kind"], kind),
        }
    }
}

#[tokio::test]
async fn the_legacy_header_row_follows_the_rejection_id_rule() {
    let server = server();
    for (row, body, kind) in TABLE {
        let req = Req::raw(*body).header("MCP-Protocol-Version", "2025-06-18");
        let reply = probe(&server, req).await;
        reply.rejected("HeaderBinding", 400, -32600, &rejection_id(body, kind));
        assert_eq!(
            reply.body["error"]["data"]["requested"], "2025-06-18",
            "row: {row}"
        );
    }
}

#[tokio::test]
async fn the_era_is_tagged_from_the_header_then_the_body() {
    let server = server();
    let bare = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{}});
    let with_meta = Req::modern(1, "tools/list").message().clone();
    let cases = [
        (&bare, None, "legacy", Value::Null),
        (&bare, Some("2025-11-25"), "legacy", json!("2025-11-25")),
        (
            &with_meta,
            Some("2025-11-25"),
            "legacy",
            json!("2025-11-25"),
        ),
        (&with_meta, None, "modern", Value::Null),
        (&with_meta, Some(MODERN), "modern", json!(MODERN)),
    ];
    for (body, header, era, revision) in cases {
        let mut req = Req::body(body.clone());
        if let Some(h) = header {
            req = req
                .header("MCP-Protocol-Version", h)
                .header("Mcp-Method", body["method"].as_str().unwrap());
        }
        let reply = probe(&server, req).await;
        if header.is_none() && era == "modern" {
            // A modern request without the header: classified modern, so
            // header binding's missing-header row answers it.
            reply.rejected("HeaderBinding", 400, -32020, &json!(1));
            continue;
        }
        if era == "legacy" && body.pointer("/params/_meta").is_some() {
            // A 2025 header beside a 2026 `_meta` version: classified
            // legacy (the header decides), and a mismatch (issue 16, item 10).
            reply.rejected("HeaderBinding", 400, -32020, &json!(1));
            continue;
        }
        let probe = reply.passed();
        assert_eq!(probe["era"], era, "{body} {header:?}");
        assert_eq!(probe["revision"], revision, "{body} {header:?}");
    }
}

// These run on to the real Validate (on main since 5a757f7): the last part of
// the seed's table, "rejected by Validate once the wire checks pass".

#[tokio::test]
async fn jsonrpc_1_0_with_a_string_id_keeps_its_id_through_validates_rejection() {
    let server = server();
    let req = Req::modern("old-1", "tools/list").edit(|body| body["jsonrpc"] = json!("1.0"));
    let reply = validated(&server, req).await;
    reply.rejected("Validate", 400, -32600, &json!("old-1"));
}

#[tokio::test]
async fn unidentified_and_unknown_bodies_pass_the_wire_checks_and_meet_validates_null_id() {
    let server = server();
    for (_, body, kind) in TABLE {
        if *kind == "request" || *kind == "notification" {
            continue;
        }
        let req = Req::raw(*body).header("MCP-Protocol-Version", MODERN);
        let reply = validated(&server, req).await;
        reply.rejected("Validate", 400, -32600, &Value::Null);
    }
}

#[tokio::test]
async fn through_the_default_chain_jsonrpc_1_0_keeps_its_id() {
    let req = Req::modern("old-1", "tools/list").edit(|body| body["jsonrpc"] = json!("1.0"));
    let reply = send(&chain(server()), req).await;
    reply.rejected("Validate", 400, -32600, &json!("old-1"));
}
