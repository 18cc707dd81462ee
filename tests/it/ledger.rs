//! The ledger as the chain uses it (issue 23): a body's place lives as long
//! as its bytes, a streamed answer's included, and counts against its
//! client's share.

use std::sync::Arc;

use http::StatusCode;
use serde_json::{Value, json};
use tokio::sync::Notify;
use wymcp::ledger::Kind;
use wymcp::{Limits, Server};

use crate::mid_call::Stream;
use crate::support::{Req, chain, send};

/// A server whose tool `hold` sends a progress notification (so its answer
/// is a stream) and answers once `release` is notified.
fn server(limits: Limits, release: Arc<Notify>) -> Arc<Server> {
    let tool = wymcp::Tool::new("hold").raw_handler(move |_args: Value, cx: wymcp::Context| {
        let release = release.clone();
        async move {
            cx.progress(0.0, None, None);
            release.notified().await;
            Ok(wymcp::ToolResult::text("released"))
        }
    });
    Arc::new(Server::builder().limits(limits).tool(tool).build().unwrap())
}

/// A call of `hold` carrying `pad` bytes of argument, asking for progress.
fn hold(id: u64, pad: usize) -> Req {
    Req::modern(id, "tools/call")
        .params(json!({"name": "hold", "arguments": {"pad": "x".repeat(pad)}}))
        .meta(json!({"progressToken": id}))
}

/// Rule (issue 23, item 2): a call whose answer became a stream keeps its
/// body's place for as long as its handler runs, and gives it back once
/// the answer is given.
#[tokio::test]
async fn a_streamed_answer_holds_its_bodys_place_until_it_is_answered() {
    let release = Arc::new(Notify::new());
    let server = server(Limits::default(), release.clone());
    let router = chain(server.clone());
    let mut stream = Stream::open(&router, hold(1, 100_000)).await;
    let progress = stream.next().await.unwrap();
    assert_eq!(progress["method"], "notifications/progress", "{progress}");
    let held = server.ledger().held(Kind::Bodies);
    assert!(held > 100_000, "the stream holds its body's bytes: {held}");
    release.notify_one();
    let done = stream.next().await.unwrap();
    assert_eq!(done["result"]["content"][0]["text"], "released", "{done}");
    assert_eq!(
        server.ledger().held(Kind::Bodies),
        0,
        "given back at the answer"
    );
}

/// Rule (issue 23, the ledger): body bytes are counted per client address:
/// while one address's streamed call holds 200 KB of a 250 KB share (its
/// 100 KB body, and the 100 KB string parsed from it), its
/// next 100 KB body is `429`, -32600, `data.limit: "bodies_per_caller"`,
/// `Retry-After`, `Connection: close`; another address is served.
#[tokio::test]
async fn body_bytes_are_counted_against_the_clients_share() {
    let release = Arc::new(Notify::new());
    let limits = Limits {
        bodies_per_caller: 250_000,
        ..Limits::default()
    };
    let server = server(limits, release.clone());
    let router = chain(server.clone());
    let mut first = Stream::open(&router, hold(1, 100_000).sent_from("192.0.2.1")).await;
    assert_eq!(
        first.next().await.unwrap()["method"],
        "notifications/progress"
    );
    let over = send(&router, hold(2, 100_000).sent_from("192.0.2.1")).await;
    let error = over.error(StatusCode::TOO_MANY_REQUESTS, -32600, &Value::Null);
    assert_eq!(error["data"]["limit"], "bodies_per_caller", "{error}");
    assert_eq!(over.header("retry-after"), "1");
    assert_eq!(over.header("connection"), "close");
    let mut other = Stream::open(&router, hold(3, 100_000).sent_from("192.0.2.2")).await;
    assert_eq!(
        other.next().await.unwrap()["method"],
        "notifications/progress"
    );
    release.notify_waiters();
    assert!(first.next().await.is_some());
    assert!(other.next().await.is_some());
}

/// A call of `hold` whose arguments hold `objects` one-member objects:
/// a few bytes each, a `BTreeMap` node each once parsed.
fn hold_objects(id: u64, objects: usize) -> Req {
    Req::modern(id, "tools/call")
        .params(json!({"name": "hold", "arguments": {"objects": vec![json!({"": 0}); objects]}}))
        .meta(json!({"progressToken": id}))
}

/// Rule (issue 23, the ledger): a body's place counts the tree parsed from
/// it, not only its bytes. 3,000 one-member objects are ~21 KB of text and
/// ~2.2 MB of tree: one such streamed call holds more than 2 MB of its
/// address's 4 MB share, its second is `429`, and another address is
/// served. A body whose tree alone is over the share can never be held:
/// `413`, -32600, `data.limit: "bodies_per_caller"`, whoever sends it.
#[tokio::test]
async fn a_bodys_parsed_tree_is_counted_with_its_bytes() {
    let release = Arc::new(Notify::new());
    let limits = Limits {
        bodies_per_caller: 4_000_000,
        ..Limits::default()
    };
    let server = server(limits, release.clone());
    let router = chain(server.clone());
    let mut first = Stream::open(&router, hold_objects(1, 3_000).sent_from("192.0.2.1")).await;
    assert_eq!(
        first.next().await.unwrap()["method"],
        "notifications/progress"
    );
    let held = server.ledger().held(Kind::Bodies);
    assert!(held > 2_000_000, "the tree is counted: {held}");
    let over = send(&router, hold_objects(2, 3_000).sent_from("192.0.2.1")).await;
    let error = over.error(StatusCode::TOO_MANY_REQUESTS, -32600, &Value::Null);
    assert_eq!(error["data"]["limit"], "bodies_per_caller", "{error}");
    assert_eq!(over.header("retry-after"), "1");
    let mut other = Stream::open(&router, hold_objects(3, 3_000).sent_from("192.0.2.2")).await;
    assert_eq!(
        other.next().await.unwrap()["method"],
        "notifications/progress"
    );
    let never = send(&router, hold_objects(4, 6_000).sent_from("192.0.2.3")).await;
    let error = never.error(StatusCode::PAYLOAD_TOO_LARGE, -32600, &Value::Null);
    assert_eq!(error["data"]["limit"], "bodies_per_caller", "{error}");
    assert_eq!(error["data"]["ceiling"], 4_000_000, "{error}");
    assert!(
        never.headers.get("retry-after").is_none(),
        "not worth a retry"
    );
    release.notify_waiters();
    assert!(first.next().await.is_some());
    assert!(other.next().await.is_some());
    assert_eq!(server.ledger().held(Kind::Bodies), 0, "given back");
}

/// A server whose tool `flood` sends `count` log messages, and a progress
/// notification every 1,000, without waiting (its client reads nothing
/// meanwhile), then answers how many the emitter dropped.
fn flooding(limits: Limits, count: u64) -> Arc<Server> {
    let tool =
        wymcp::Tool::new("flood").raw_handler(move |_args: Value, cx: wymcp::Context| async move {
            for i in 1..=count {
                if i % 1000 == 0 {
                    #[allow(clippy::cast_precision_loss)]
                    cx.progress(i as f64, None, None);
                }
                cx.log(wymcp::LogLevel::Info, json!({"i": i}));
            }
            Ok(wymcp::ToolResult::text(cx.emitter().dropped().to_string()))
        });
    Arc::new(Server::builder().limits(limits).tool(tool).build().unwrap())
}

/// Rule (issue 23, item 11): a handler's notification queue is bounded.
/// A handler that sends 1,000,000 log messages and 1,000 progress
/// notifications to a client that reads nothing holds at most the
/// request's bound (a place of the ledger, within the caller's share);
/// the newest progress is kept, the log messages beyond the bound are
/// dropped and counted, the handler is never blocked, the answer is
/// given, and the place is given back.
#[tokio::test]
async fn a_flood_of_notifications_to_a_client_that_does_not_read_stays_bounded() {
    let limits = Limits {
        notification_bytes_per_request: 64 * 1024,
        notification_bytes_per_caller: 256 * 1024,
        ..Limits::default()
    };
    let server = flooding(limits, 1_000_000);
    let router = chain(server.clone());
    let mut stream = Stream::open(
        &router,
        Req::modern(1, "tools/call")
            .params(json!({"name": "flood", "arguments": {}}))
            .meta(json!({"progressToken": 1, "io.modelcontextprotocol/logLevel": "info"})),
    )
    .await;
    assert_eq!(stream.status, StatusCode::OK);
    assert_eq!(stream.content_type, "text/event-stream");
    // Nothing read yet: the handler has sent everything it will.
    let held = server.ledger().held(Kind::Notifications);
    assert!(held > 0, "the queue is a place of the ledger");
    assert!(held <= 64 * 1024, "bounded by the request's bound: {held}");
    let mut logs = 0usize;
    let mut last_progress = Value::Null;
    let answer = loop {
        let message = stream.next().await.expect("the answer comes");
        match message["method"].as_str() {
            Some("notifications/message") => logs += 1,
            Some("notifications/progress") => last_progress = message["params"]["progress"].clone(),
            _ => break message,
        }
    };
    assert!(logs < 10_000, "{logs} log messages were kept");
    assert_eq!(last_progress, 1_000_000, "the newest progress is kept");
    let dropped: u64 = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(dropped > 990_000, "dropped and counted: {dropped}");
    assert_eq!(server.ledger().held(Kind::Notifications), 0, "given back");
}

// ---------------------------------------------------------------------------
// `examples/everything`'s ledger flags, which the hostile soak
// (bench/src/hostile.rs) runs it with
// ---------------------------------------------------------------------------

/// A 2026 `subscriptions/listen` from `from`, with `token` as its Bearer
/// token if any: the status, headers and (when it has a length) the body of
/// the answer. A stream the server holds open is kept in `kept`.
async fn listen_from(
    server: std::net::SocketAddr,
    from: [u8; 4],
    token: Option<&str>,
    kept: &mut Vec<tokio::net::TcpStream>,
) -> (u16, String, Value) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(std::net::SocketAddr::from((from, 0))).unwrap();
    let mut stream = socket.connect(server).await.unwrap();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": {
        "notifications": {"toolsListChanged": true},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        },
    }})
    .to_string();
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: subscriptions/listen\r\n{auth}Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    let end = loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break end;
        }
        let mut chunk = [0u8; 4096];
        let n = tokio::time::timeout(std::time::Duration::from_secs(10), stream.read(&mut chunk))
            .await
            .expect("an answer in time")
            .unwrap();
        assert!(n > 0, "the connection closed before an answer");
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let length: Option<usize> = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map(|v| v.trim().parse().unwrap());
    let Some(length) = length else {
        kept.push(stream);
        return (status, head, Value::Null);
    };
    while buf.len() < end + 4 + length {
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).await.unwrap();
        assert!(n > 0, "the connection closed in the body");
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = serde_json::from_slice(&buf[end + 4..end + 4 + length]).unwrap();
    (status, head, body)
}

/// Asserts a listen refused over its caller's share: `429`, -32600, id 1,
/// `data.limit: "max_streams_per_caller"`, `Retry-After: 10`.
#[track_caller]
fn refused_over_share((status, head, body): &(u16, String, Value)) {
    assert_eq!(*status, 429, "{head}\n{body}");
    assert!(head.contains("\r\nretry-after: 10"), "{head}");
    assert_eq!(body["id"], 1, "{body}");
    assert_eq!(body["error"]["code"], -32600, "{body}");
    assert_eq!(
        body["error"]["data"]["limit"], "max_streams_per_caller",
        "{body}"
    );
}

/// Rule (issue 23, the hostile soak): `everything --group-ipv4 24` counts
/// every address of one /24 as one caller — eight listen streams from
/// eight addresses of `127.0.0.0/24` fill its share, the ninth, from a
/// ninth address, is refused — while an address of another /24 is a
/// caller of its own.
#[tokio::test]
async fn everything_groups_ipv4_addresses_by_the_prefix_it_is_given() {
    let server = wymcp_tests::child::Everything::start(&["--group-ipv4", "24"], &[]);
    let mut kept = Vec::new();
    for i in 0..8u8 {
        let (status, head, _) =
            listen_from(server.addr(), [127, 0, 0, 10 + i], None, &mut kept).await;
        assert_eq!(status, 200, "{head}");
    }
    refused_over_share(&listen_from(server.addr(), [127, 0, 0, 99], None, &mut kept).await);
    let (status, head, _) = listen_from(server.addr(), [127, 1, 0, 1], None, &mut kept).await;
    assert_eq!(status, 200, "another /24 is another caller: {head}");
    assert_eq!(server.panics(), 0);
}

/// Rule (issue 23, the hostile soak): `everything --static-token A
/// --static-token B` lets in both, each a principal of its own — A's eight
/// streams fill A's share, not B's.
#[tokio::test]
async fn everythings_static_tokens_are_principals_of_their_own() {
    let server = wymcp_tests::child::Everything::start(
        &["--static-token", "token-a", "--static-token", "token-b"],
        &[],
    );
    let mut kept = Vec::new();
    for i in 0..8u8 {
        let (status, head, _) = listen_from(
            server.addr(),
            [127, 0, 0, 10 + i],
            Some("token-a"),
            &mut kept,
        )
        .await;
        assert_eq!(status, 200, "{head}");
    }
    refused_over_share(
        &listen_from(server.addr(), [127, 0, 0, 99], Some("token-a"), &mut kept).await,
    );
    let (status, head, _) =
        listen_from(server.addr(), [127, 0, 0, 99], Some("token-b"), &mut kept).await;
    assert_eq!(status, 200, "another token is another principal: {head}");
    assert_eq!(server.panics(), 0);
}
