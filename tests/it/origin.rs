//! The origin check (the first wire check) over a real TCP socket: `Origin`
//! allowed, refused, repeated and absent; `Host` validation against DNS
//! rebinding on a loopback-bound server (the conformance scenario
//! `dns-rebinding-protection`); configured origins and hosts; and what the
//! check does when it does not know where the server is bound.
//!
//! Every refusal pins status, JSON-RPC code -32600 and a null id.

use std::time::Duration;

use serde_json::Value;
use wymcp::Server;
use wymcp_tests::wire::{RawRequest, RawResponse, TestServer, front_router, full};

const PING: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;

async fn loopback_server(builder: wymcp::ServerBuilder) -> TestServer {
    TestServer::start(front_router(builder.build().expect("a valid server"))).await
}

fn assert_refused(response: &RawResponse, status: u16, case: &str) -> String {
    assert_eq!(
        response.status,
        status,
        "{case}: body {:?}",
        String::from_utf8_lossy(&response.body)
    );
    let error = response.rpc_error();
    assert_eq!(error.code, -32600, "{case}");
    assert_eq!(
        error.id,
        Value::Null,
        "{case}: the origin check's rejections carry a null id"
    );
    assert!(!response.closes(), "{case}: answered before the body read");
    error.message
}

fn assert_passed(response: &RawResponse, case: &str) {
    assert_eq!(
        response.status,
        200,
        "{case}: body {:?}",
        String::from_utf8_lossy(&response.body)
    );
}

#[tokio::test]
async fn an_absent_origin_passes() {
    let server = loopback_server(Server::builder()).await;
    let response = server
        .connect()
        .await
        .request(&RawRequest::post("/mcp").json(PING))
        .await;
    assert_passed(&response, "no Origin");
}

#[tokio::test]
async fn loopback_origins_pass_by_default() {
    let server = loopback_server(Server::builder()).await;
    let own = format!("http://{}", server.host());
    for origin in [
        "http://localhost:6274",
        "https://localhost",
        own.as_str(),
        "http://[::1]:3000",
        "HTTP://LOCALHOST",
    ] {
        let request = RawRequest::post("/mcp").header("Origin", origin).json(PING);
        assert_passed(&server.connect().await.request(&request).await, origin);
    }
}

#[tokio::test]
async fn a_disallowed_origin_is_403_before_anything_is_parsed() {
    let server = loopback_server(Server::builder()).await;
    let mut conn = server.connect().await;
    for origin in [
        "http://evil.example.com",
        "null",
        "http://localhost.evil.example.com",
        "file://localhost",
    ] {
        let request = RawRequest::post("/mcp").header("Origin", origin).json(PING);
        let message = assert_refused(&conn.request(&request).await, 403, origin);
        assert!(message.contains("Origin"), "{origin}: {message}");
    }
    // A request the parse step would refuse (no Content-Type, a body over the
    // ceiling) meets the origin check first.
    let request = RawRequest::post("/mcp")
        .header("Origin", "http://evil.example.com")
        .header("Content-Length", "8000001");
    conn.send(&request.framing(wymcp_tests::wire::Framing::Bare).head())
        .await
        .expect("write the head");
    assert_refused(&conn.response().await, 403, "origin before the parse step");
}

#[tokio::test]
async fn a_repeated_origin_is_400() {
    let server = loopback_server(Server::builder()).await;
    let request = RawRequest::post("/mcp")
        .header("Origin", "http://localhost")
        .header("Origin", "http://localhost")
        .json(PING);
    let message = assert_refused(
        &server.connect().await.request(&request).await,
        400,
        "two Origins",
    );
    assert!(message.contains("Origin"), "{message}");
}

#[tokio::test]
async fn a_repeated_host_is_400() {
    let server = loopback_server(Server::builder()).await;
    let request = RawRequest::post("/mcp")
        .header("Host", "localhost")
        .json(PING);
    let message = assert_refused(
        &server.connect().await.request(&request).await,
        400,
        "two Hosts",
    );
    assert!(message.contains("Host"), "{message}");
}

/// The conformance scenario `dns-rebinding-protection`: a non-loopback `Host`
/// (and `Origin`) to a loopback server is refused with a 4xx; loopback hosts,
/// with or without a port, are served.
#[tokio::test]
async fn dns_rebinding_is_refused_on_a_loopback_bind() {
    let server = loopback_server(Server::builder()).await;
    let port = server.addr().port();

    let rebinding = [
        ("evil.example.com", Some("http://evil.example.com")),
        ("evil.example.com", None),
        ("localhost.evil.example.com", None),
        ("127.0.0.2", None),
    ];
    for (host, origin) in rebinding {
        let mut request = RawRequest::post("/mcp").host(host).json(PING);
        if let Some(origin) = origin {
            request = request.header("Origin", origin);
        }
        let message = assert_refused(&server.connect().await.request(&request).await, 403, host);
        assert!(message.contains("Host"), "{host}: {message}");
    }

    let loopback_hosts = [
        "localhost".to_owned(),
        format!("localhost:{port}"),
        format!("127.0.0.1:{port}"),
        "127.0.0.1".to_owned(),
        format!("[::1]:{port}"),
        "[::1]".to_owned(),
        "LocalHost".to_owned(),
    ];
    for host in loopback_hosts {
        let request = RawRequest::post("/mcp").host(&host).json(PING);
        assert_passed(&server.connect().await.request(&request).await, &host);
    }
}

#[tokio::test]
async fn no_host_at_all_passes() {
    // A browser always sends Host; the attack the check defeats needs one.
    let server = loopback_server(Server::builder()).await;
    let request = RawRequest::new("POST", "/mcp").no_host().json(PING);
    assert_passed(&server.connect().await.request(&request).await, "no Host");
}

#[tokio::test]
async fn over_http2_the_authority_is_the_host() {
    let server = loopback_server(Server::builder()).await;
    let mut h2 = server.h2().await;
    let port = server.addr().port();
    let request_to = |uri: String| {
        http::Request::post(uri)
            .header("content-type", "application/json")
            .body(full(PING))
            .expect("a request")
    };
    let (parts, body) = h2
        .roundtrip(request_to(format!("http://evil.example.com:{port}/mcp")))
        .await;
    assert_eq!(parts.status, 403);
    let error =
        wymcp_tests::wire::RpcError::from_envelope(&serde_json::from_slice(&body).expect("JSON"));
    assert_eq!((error.code, error.id), (-32600, Value::Null));

    let (parts, _) = h2.roundtrip(request_to(server.url("/mcp"))).await;
    assert_eq!(
        parts.status, 200,
        "the connection goes on, and a loopback authority passes"
    );
}

#[tokio::test]
async fn configured_origins_replace_the_loopback_default() {
    let server = loopback_server(
        Server::builder().allowed_origins(["https://app.example.com", "http://tool.test:8080"]),
    )
    .await;
    for origin in [
        "https://app.example.com",
        "https://APP.example.com:443",
        "http://tool.test:8080",
    ] {
        let request = RawRequest::post("/mcp").header("Origin", origin).json(PING);
        assert_passed(&server.connect().await.request(&request).await, origin);
    }
    for origin in [
        "http://localhost",
        "http://app.example.com",
        "http://tool.test",
        "https://evil.example.com",
    ] {
        let request = RawRequest::post("/mcp").header("Origin", origin).json(PING);
        assert_refused(&server.connect().await.request(&request).await, 403, origin);
    }
}

#[tokio::test]
async fn configured_hosts_replace_the_loopback_default() {
    let server =
        loopback_server(Server::builder().allowed_hosts(["mcp.example.com", "pinned.test:8443"]))
            .await;
    for host in ["mcp.example.com", "MCP.example.com:443", "pinned.test:8443"] {
        let request = RawRequest::post("/mcp").host(host).json(PING);
        assert_passed(&server.connect().await.request(&request).await, host);
    }
    for host in [
        "localhost",
        "pinned.test:8444",
        "pinned.test",
        "evil.example.com",
    ] {
        let request = RawRequest::post("/mcp").host(host).json(PING);
        assert_refused(&server.connect().await.request(&request).await, 403, host);
    }
}

#[tokio::test]
async fn a_server_that_does_not_know_its_bind_fails_closed() {
    // Served with plain axum::serve: nothing tells the chain the address.
    let server =
        TestServer::start_unannounced(front_router(Server::builder().build().expect("server")))
            .await;
    let request = RawRequest::post("/mcp").host("evil.example.com").json(PING);
    assert_refused(
        &server.connect().await.request(&request).await,
        403,
        "unknown bind",
    );
    let request = RawRequest::post("/mcp").host(server.host()).json(PING);
    assert_passed(
        &server.connect().await.request(&request).await,
        "loopback host, unknown bind",
    );
}

#[tokio::test]
async fn a_server_bound_to_a_public_address_does_not_check_the_host() {
    // Told it is bound to every interface, the default allows any host; the
    // Origin default stays loopback-only.
    let public = "0.0.0.0:3000".parse().expect("an address");
    let server = TestServer::start_unannounced(front_router(
        Server::builder().bound_to(public).build().expect("server"),
    ))
    .await;
    let request = RawRequest::post("/mcp").host("mcp.example.com").json(PING);
    assert_passed(
        &server.connect().await.request(&request).await,
        "public bind",
    );
    let request = RawRequest::post("/mcp")
        .host("mcp.example.com")
        .header("Origin", "https://evil.example.com")
        .json(PING);
    assert_refused(
        &server.connect().await.request(&request).await,
        403,
        "public bind, foreign origin",
    );
}

#[tokio::test]
async fn after_a_403_the_connection_serves_the_next_request() {
    let server = loopback_server(Server::builder()).await;
    let mut conn = server.connect().await;
    let refused = RawRequest::post("/mcp")
        .header("Origin", "http://evil.example.com")
        .json(PING);
    assert_refused(&conn.request(&refused).await, 403, "evil origin");
    assert!(
        !conn.closed(Duration::from_millis(100)).await,
        "the connection stays open"
    );
    assert_passed(
        &conn.request(&RawRequest::post("/mcp").json(PING)).await,
        "next request",
    );
}

#[test]
fn malformed_configuration_does_not_build() {
    let error = Server::builder()
        .allowed_origins(["app.example.com"])
        .build();
    assert!(
        matches!(error, Err(wymcp::BuildError::Origin(wymcp::OriginError::Origin(o))) if o == "app.example.com")
    );
    let error = Server::builder().allowed_hosts(["a host"]).build();
    assert!(
        matches!(error, Err(wymcp::BuildError::Origin(wymcp::OriginError::Host(h))) if h == "a host")
    );
}

/// The conformance scenario against the default chain: the origin check is
/// its first stage, so a rebinding `Host` is refused there, and a loopback
/// one gets past it (whatever the later stages answer).
#[tokio::test]
async fn the_default_chain_refuses_rebinding_first() {
    let server = TestServer::start(wymcp::chain::post::router(
        Server::builder().build().expect("a valid server"),
    ))
    .await;
    let initialize = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let request = RawRequest::post("/mcp")
        .host("evil.example.com")
        .header("Origin", "http://evil.example.com")
        .json(&initialize[..]);
    assert_refused(
        &server.connect().await.request(&request).await,
        403,
        "rebinding",
    );

    let request = RawRequest::post("/mcp")
        .host(server.host())
        .json(&initialize[..]);
    let response = server.connect().await.request(&request).await;
    assert_ne!(
        response.status, 403,
        "a loopback Host passes the origin check"
    );
}

#[tokio::test]
async fn the_address_served_on_outranks_the_builders() {
    // wymcp::serve tells the chain it is on 127.0.0.1: the loopback policy
    // holds even though the builder was told of a public address.
    let public = "0.0.0.0:3000".parse().expect("an address");
    let server = loopback_server(Server::builder().bound_to(public)).await;
    let request = RawRequest::post("/mcp").host("evil.example.com").json(PING);
    assert_refused(
        &server.connect().await.request(&request).await,
        403,
        "served on loopback",
    );
}
