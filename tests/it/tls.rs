//! TLS and mTLS terminated by `wymcp::serve` itself (`serve::Tls`), tried
//! with real clients: curl (HTTP/1.1 and h2 by ALPN, client certificates)
//! and `openssl s_client` (protocol versions, the certificate served). The
//! certificates are made at test time by scripts/test-certs.sh (openssl).
//! Handshakes that never complete are ledger places (`Kind::Handshakes`),
//! released on the handshake timeout.

#![allow(clippy::unwrap_used)]

use std::future::IntoFuture as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use base64::Engine as _;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use wymcp::auth::{
    AuthConfig, AuthFuture, Authenticator, CertificateAuth, ClientCertificate, Credentials,
};
use wymcp::ledger::Kind;
use wymcp::serve::{ClientAuth, Tls};
use wymcp::{Limits, NoArgs, ServeConfig, Server, Tool, ToolResult};

use crate::jwt::{Issuer, METADATA, RESOURCE, SCOPE, Signer, claims};
use crate::support::Req;

/// The test certificates, made once per test binary.
fn certs() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("wymcp-tls-{}", std::process::id()));
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/test-certs.sh");
        let status = Command::new("bash").arg(script).arg(&dir).status().unwrap();
        assert!(
            status.success(),
            "scripts/test-certs.sh (needs openssl) failed"
        );
        dir
    })
}

fn cert(name: &str) -> PathBuf {
    certs().join(name)
}

/// A copy of the server's certificate and key in a directory of its own
/// (the reload test rewrites them).
fn own_copy(tag: &str) -> (PathBuf, PathBuf) {
    let dir = certs().join(tag);
    std::fs::create_dir_all(&dir).unwrap();
    let (c, k) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::copy(cert("server.pem"), &c).unwrap();
    std::fs::copy(cert("server.key"), &k).unwrap();
    (c, k)
}

/// Serves `server`'s router over `tls` on a loopback port.
async fn start(server: &Arc<Server>, tls: Tls, config: ServeConfig) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let router = wymcp::chain::post::router(server.clone());
    let serve = wymcp::serve_with(listener, router, config)
        .counting_in(server)
        .tls(tls);
    tokio::spawn(serve.into_future());
    addr
}

/// What curl made of one request.
#[derive(Debug)]
struct Curled {
    /// 0 when no HTTP answer came (a refused handshake).
    status: u16,
    version: String,
    headers: String,
    body: Value,
    exit: i32,
}

/// curl `req` to `addr` over https, trusting the test CA, with `extra`
/// arguments (a client certificate, `--http1.1`).
async fn curl(addr: SocketAddr, req: Req, extra: &[&str]) -> Curled {
    let mut command = Command::new("curl");
    command
        .args(["-sS", "--max-time", "10", "--cacert"])
        .arg(cert("ca.pem"))
        .args(["-D", "-", "-o", "-", "-w", "\n%{http_code} %{http_version}"])
        .args(extra);
    for (name, value) in req.headers() {
        if name.eq_ignore_ascii_case("host") || name.eq_ignore_ascii_case("content-length") {
            continue;
        }
        command
            .arg("-H")
            .arg(format!("{name}: {}", String::from_utf8_lossy(&value)));
    }
    command
        .arg("--data-binary")
        .arg(req.message().to_string())
        .arg(format!("https://127.0.0.1:{}/mcp", addr.port()));
    let out = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (rest, last) = text.rsplit_once('\n').unwrap_or(("", &text));
    let (status, version) = last.split_once(' ').unwrap_or(("0", "0"));
    let (headers, body) = rest.split_once("\r\n\r\n").unwrap_or((rest, ""));
    Curled {
        status: status.parse().unwrap_or(0),
        version: version.to_owned(),
        headers: headers.to_ascii_lowercase(),
        body: serde_json::from_str(body.trim()).unwrap_or(Value::Null),
        exit: out.status.code().unwrap_or(-1),
    }
}

/// A 2026 `tools/list`, id `p-1`.
fn ping() -> Req {
    Req::modern("p-1", "tools/list")
}

fn whoami() -> Req {
    Req::modern("r-1", "tools/call").params(json!({"name": "whoami", "arguments": {}}))
}

/// The client certificate arguments of curl for `name` (`client`, …).
fn client(name: &str) -> Vec<String> {
    vec![
        "--cert".into(),
        cert(&format!("{name}.pem")).display().to_string(),
        "--key".into(),
        cert(&format!("{name}.key")).display().to_string(),
    ]
}

fn args(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// `openssl s_client` to `addr` with `extra`: its stdout (the handshake's
/// summary and the server's certificate) and whether it connected.
async fn s_client(addr: SocketAddr, extra: &[&str]) -> (String, bool) {
    let mut command = Command::new("openssl");
    command
        .args([
            "s_client",
            "-connect",
            &addr.to_string(),
            "-servername",
            "localhost",
        ])
        .args(extra)
        .stdin(std::process::Stdio::null());
    let out = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let connected = out.status.success() && text.contains("-----BEGIN CERTIFICATE-----");
    (text, connected)
}

/// The serial number of the certificate `addr` serves, as openssl prints it.
async fn served_serial(addr: SocketAddr) -> String {
    let (text, connected) = s_client(addr, &[]).await;
    assert!(connected, "{text}");
    let pem = text
        .split("-----BEGIN CERTIFICATE-----")
        .nth(1)
        .and_then(|rest| rest.split("-----END CERTIFICATE-----").next())
        .unwrap();
    let pem = format!("-----BEGIN CERTIFICATE-----{pem}-----END CERTIFICATE-----\n");
    let mut child = Command::new("openssl")
        .args(["x509", "-noout", "-serial"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), pem.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A server without auth, with one tool.
fn plain_server_with(limits: Limits) -> Arc<Server> {
    let echo = Tool::new("echo")
        .description("Says hi")
        .handler(|_: NoArgs, _cx| async move { Ok(ToolResult::text("hi")) });
    Arc::new(Server::builder().limits(limits).tool(echo).build().unwrap())
}

fn plain_server() -> Arc<Server> {
    plain_server_with(Limits::default())
}

fn tls() -> Tls {
    Tls::builder(cert("server.pem"), cert("server.key"))
        .build()
        .unwrap()
}

/// A tool answering who called, behind `authenticator` requiring `mcp`.
fn server_with(authenticator: impl Authenticator, limits: Limits) -> Arc<Server> {
    let whoami =
        Tool::new("whoami")
            .description("Says who called")
            .handler(|_: NoArgs, cx| async move {
                let principal = cx.principal().cloned().unwrap_or_default();
                Ok(ToolResult::text(
                    json!({"subject": principal.subject, "scopes": principal.scopes}).to_string(),
                ))
            });
    Arc::new(
        Server::builder()
            .limits(limits)
            .auth(
                authenticator,
                AuthConfig::new()
                    .resource(RESOURCE)
                    .authorization_server("https://auth.example.com")
                    .required_scopes([SCOPE]),
            )
            .tool(whoami)
            .build()
            .unwrap(),
    )
}

fn who(curled: &Curled) -> Value {
    assert_eq!(curled.status, 200, "{curled:?}");
    let text = curled.body["result"]["content"][0]["text"]
        .as_str()
        .unwrap();
    serde_json::from_str(text).unwrap()
}

// --- TLS ----------------------------------------------------------------

#[tokio::test]
async fn mcp_is_served_over_https_with_http1_and_with_h2_chosen_by_alpn() {
    let addr = start(&plain_server(), tls(), ServeConfig::default()).await;
    let h2 = curl(addr, ping(), &["--http2"]).await;
    assert_eq!((h2.status, h2.version.as_str()), (200, "2"), "{h2:?}");
    assert_eq!(h2.body["id"], "p-1");
    let h1 = curl(addr, ping(), &["--http1.1"]).await;
    assert_eq!((h1.status, h1.version.as_str()), (200, "1.1"), "{h1:?}");
    assert_eq!(h1.body["result"]["tools"][0]["name"], "echo");
}

#[tokio::test]
async fn tls_1_2_and_1_3_are_served_and_1_0_and_1_1_refused() {
    let addr = start(&plain_server(), tls(), ServeConfig::default()).await;
    for (flag, name) in [("-tls1_3", "TLSv1.3"), ("-tls1_2", "TLSv1.2")] {
        let (text, connected) = s_client(addr, &[flag]).await;
        assert!(connected, "{flag}: {text}");
        assert!(
            text.contains(&format!("Protocol  : {name}")) || text.contains(&format!(", {name},")),
            "{text}"
        );
    }
    for flag in ["-tls1", "-tls1_1"] {
        let (text, connected) = s_client(addr, &[flag, "-cipher", "DEFAULT@SECLEVEL=0"]).await;
        assert!(!connected, "{flag} was served: {text}");
    }
}

#[tokio::test]
async fn a_changed_certificate_is_served_without_a_restart_and_a_broken_one_keeps_the_old() {
    let (c, k) = own_copy("reload");
    let tls = Tls::builder(&c, &k)
        .reload_every(Duration::from_millis(100))
        .build()
        .unwrap();
    let addr = start(&plain_server(), tls.clone(), ServeConfig::default()).await;
    assert_eq!(served_serial(addr).await, "serial=1001");

    // New files: the next connection sees the new certificate.
    std::fs::copy(cert("server2.pem"), &c).unwrap();
    std::fs::copy(cert("server2.key"), &k).unwrap();
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(served_serial(addr).await, "serial=2001");

    // A key that does not match, then one that is no PEM: refused, the
    // certificate served kept.
    std::fs::copy(cert("server.key"), &k).unwrap();
    assert!(tls.reload().is_err());
    std::fs::write(&k, "not a key").unwrap();
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert!(tls.reload().is_err());
    assert_eq!(served_serial(addr).await, "serial=2001");
    assert_eq!(curl(addr, ping(), &[]).await.status, 200);
}

// --- mTLS ---------------------------------------------------------------

/// CertificateAuth, remembering the subjects it made principals of.
#[derive(Clone, Default)]
struct Recording {
    inner: CertificateAuth,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Authenticator for Recording {
    fn authenticate<'a>(&'a self, credentials: Credentials<'a>) -> AuthFuture<'a> {
        Box::pin(async move {
            let principal = self.inner.authenticate(credentials).await?;
            self.seen.lock().unwrap().push(principal.subject.clone());
            Ok(principal)
        })
    }
}

fn mtls(auth: ClientAuth) -> Tls {
    Tls::builder(cert("server.pem"), cert("server.key"))
        .client_ca(cert("ca.pem"), auth)
        .build()
        .unwrap()
}

#[tokio::test]
async fn required_client_certificates_refuse_the_handshake_without_one_or_with_a_foreign_one() {
    let server = server_with(CertificateAuth::new().scopes([SCOPE]), Limits::default());
    let addr = start(&server, mtls(ClientAuth::Required), ServeConfig::default()).await;
    let none = curl(addr, whoami(), &[]).await;
    assert_eq!(none.status, 0, "{none:?}");
    assert_ne!(none.exit, 0);
    let foreign = curl(addr, whoami(), &args(&client("other-client"))).await;
    assert_eq!(foreign.status, 0, "{foreign:?}");
    let good = curl(addr, whoami(), &args(&client("client"))).await;
    assert_eq!(who(&good)["subject"], "spiffe://wymcp.test/alice");
}

#[tokio::test]
async fn the_certificates_identity_is_the_principal_and_scopes_apply_to_it() {
    let recording = Recording {
        inner: CertificateAuth::new().subject_scopes("spiffe://wymcp.test/alice", [SCOPE]),
        ..Recording::default()
    };
    let seen = recording.seen.clone();
    let server = server_with(recording, Limits::default());
    let addr = start(&server, mtls(ClientAuth::Optional), ServeConfig::default()).await;

    // The URI SAN is alice's identity; she holds the scope.
    let alice = curl(addr, whoami(), &args(&client("client"))).await;
    assert_eq!(
        who(&alice),
        json!({"subject": "spiffe://wymcp.test/alice", "scopes": [SCOPE]})
    );
    // bob's certificate has no SAN: his CN; he holds no scope: 403.
    let bob = curl(addr, whoami(), &args(&client("client-cn"))).await;
    assert_eq!(bob.status, 403, "{bob:?}");
    assert_eq!(bob.body["error"]["code"], -32600);
    assert_eq!(bob.body["id"], "r-1");
    assert!(
        bob.headers
            .contains(r#"www-authenticate: bearer error="insufficient_scope""#),
        "{}",
        bob.headers
    );
    // No certificate (optional): 401, the bare challenge.
    let nobody = curl(addr, whoami(), &[]).await;
    assert_eq!(nobody.status, 401, "{nobody:?}");
    assert_eq!(nobody.body["id"], "r-1");
    assert_eq!(nobody.body["error"]["code"], -32600);
    assert!(
        nobody.headers.contains(&format!(
            "www-authenticate: bearer resource_metadata=\"{METADATA}\""
        )),
        "{}",
        nobody.headers
    );
    assert_eq!(*seen.lock().unwrap(), ["spiffe://wymcp.test/alice", "bob"]);
}

/// The RFC 8705 thumbprint of a PEM certificate file.
fn thumbprint(name: &str) -> String {
    let pem = std::fs::read_to_string(cert(name)).unwrap();
    let b64: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    let der = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .unwrap();
    ClientCertificate::from_der(der).thumbprint().to_owned()
}

#[tokio::test]
async fn a_certificate_bound_token_is_served_with_its_certificate_and_refused_without_it() {
    let signer = Signer::ec("ec-1");
    let issuer = Issuer::start(&[&signer]).await;
    let server = server_with(issuer.verifier().build().unwrap(), Limits::default());
    let addr = start(&server, mtls(ClientAuth::Optional), ServeConfig::default()).await;
    let mut bound = claims(&issuer.url);
    bound["cnf"] = json!({"x5t#S256": thumbprint("client.pem")});
    let token = signer.mint(&bound);
    let call = || whoami().bearer(&token);

    let matching = curl(addr, call(), &args(&client("client"))).await;
    assert_eq!(who(&matching)["subject"], "alice");

    let challenge = format!(
        r#"www-authenticate: bearer error="invalid_token", error_description="the token is bound to a client certificate this request was not made with", resource_metadata="{METADATA}", scope="{SCOPE}""#
    )
    .to_ascii_lowercase();
    for (what, extra) in [
        ("another certificate", client("client-cn")),
        ("no certificate", Vec::new()),
    ] {
        let refused = curl(addr, call(), &args(&extra)).await;
        assert_eq!(refused.status, 401, "{what}: {refused:?}");
        assert_eq!(refused.body["id"], "r-1", "{what}");
        assert_eq!(refused.body["error"]["code"], -32600, "{what}");
        assert!(
            refused.headers.contains(&challenge),
            "{what}: {}",
            refused.headers
        );
    }

    // An unbound token is served with or without a certificate.
    let plain = signer.mint(&claims(&issuer.url));
    let with = curl(addr, whoami().bearer(&plain), &args(&client("client-cn"))).await;
    assert_eq!(who(&with)["subject"], "alice");
}

// --- handshakes that never complete ---------------------------------------

#[tokio::test]
async fn stalled_handshakes_are_ledger_places_released_on_the_timeout_and_capped_per_peer() {
    let limits = Limits {
        handshakes_per_caller: 4,
        ..Limits::default()
    };
    let server = plain_server_with(limits);
    let config = ServeConfig::default().tls_handshake_timeout(Duration::from_millis(1500));
    let addr = start(&server, tls(), config).await;
    let held = || server.ledger().held(Kind::Handshakes);

    // Four connections: one sends nothing, three half a ClientHello.
    let mut stalled = Vec::new();
    for i in 0..4 {
        let mut conn = tokio::net::TcpStream::connect(addr).await.unwrap();
        if i > 0 {
            conn.write_all(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00])
                .await
                .unwrap();
        }
        stalled.push(conn);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(held(), 4);

    // A fifth is over the peer's share: closed at once.
    let mut fifth = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut byte = [0u8; 1];
    let read = tokio::time::timeout(Duration::from_millis(500), fifth.read(&mut byte)).await;
    assert!(matches!(read, Ok(Ok(0) | Err(_))), "{read:?}");
    assert_eq!(held(), 4);

    // The timeout closes them and gives their places back.
    tokio::time::sleep(Duration::from_millis(1800)).await;
    assert_eq!(held(), 0);
    for conn in &mut stalled {
        let read = tokio::time::timeout(Duration::from_millis(500), conn.read(&mut byte)).await;
        assert!(matches!(read, Ok(Ok(0) | Err(_))), "{read:?}");
    }
    // A well-behaved client is served (its handshake held a place, then
    // gave it back).
    assert_eq!(curl(addr, ping(), &[]).await.status, 200);
    assert_eq!(held(), 0);
}
