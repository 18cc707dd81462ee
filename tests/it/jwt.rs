//! `auth::JwtVerifier` against a real authorization server on loopback: a
//! JWK Set served over HTTP, keys minted here (RSA 2048, P-256, Ed25519),
//! tokens signed with them. Every refusal pins the status, the
//! `WWW-Authenticate` challenge and the JSON-RPC code and id (the
//! rejection-id rule), and that exactly one rejection event was logged.

#![allow(clippy::unwrap_used, clippy::needless_pass_by_value)]

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::StatusCode;
use http_body_util::BodyExt as _;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{EncodingKey, Header};
use serde_json::{Value, json};
use tower::ServiceExt as _;
use wymcp::auth::{Algorithm, AuthConfig, Authenticator, JwtVerifier, JwtVerifierBuilder};
use wymcp::{NoArgs, Server, Tool, ToolResult};
use wymcp_tests::wire::TestServer;

use crate::support::{Reply, Req, validated, validated_router};

pub(crate) const RESOURCE: &str = "https://mcp.example.com/mcp";
pub(crate) const METADATA: &str =
    "https://mcp.example.com/.well-known/oauth-protected-resource/mcp";
pub(crate) const SCOPE: &str = "mcp:tools";

// --- keys and tokens --------------------------------------------------------

/// A signing key of the test's authorization server (or of an attacker).
pub(crate) struct Signer {
    pub(crate) kid: String,
    alg: jsonwebtoken::Algorithm,
    key: EncodingKey,
    /// The private key's DER (for an RSA key: to derive its public key).
    der: Vec<u8>,
    /// An Ed25519 key's public half (jsonwebtoken derives the others').
    ed_public: Option<[u8; 32]>,
}

fn random<const N: usize>() -> [u8; N] {
    let mut bytes = [0; N];
    getrandom::fill(&mut bytes).unwrap();
    bytes
}

/// One RSA private key per label, generated once per test binary (2048-bit
/// generation is the slow part).
fn rsa_der(label: usize) -> Vec<u8> {
    use rsa::pkcs1::EncodeRsaPrivateKey as _;
    static KEYS: OnceLock<Vec<Mutex<Option<Vec<u8>>>>> = OnceLock::new();
    let slots = KEYS.get_or_init(|| (0..4).map(|_| Mutex::new(None)).collect());
    let mut slot = slots[label].lock().unwrap();
    slot.get_or_insert_with(|| {
        let key = rsa::PrivateKey::new(&mut getrandom::SysRng, 2048).unwrap();
        key.to_pkcs1_der().unwrap().as_bytes().to_vec()
    })
    .clone()
}

impl Signer {
    pub(crate) fn rsa(kid: &str, label: usize) -> Self {
        Self::rsa_with(kid, label, jsonwebtoken::Algorithm::RS256)
    }

    pub(crate) fn rsa_with(kid: &str, label: usize, alg: jsonwebtoken::Algorithm) -> Self {
        let der = rsa_der(label);
        Signer {
            kid: kid.to_owned(),
            alg,
            key: EncodingKey::from_rsa_der(&der),
            der,
            ed_public: None,
        }
    }

    pub(crate) fn ec(kid: &str) -> Self {
        use p256::pkcs8::EncodePrivateKey as _;
        let key = p256::ecdsa::SigningKey::from_slice(&random::<32>()).unwrap();
        let der = key.to_pkcs8_der().unwrap().as_bytes().to_vec();
        Signer {
            kid: kid.to_owned(),
            alg: jsonwebtoken::Algorithm::ES256,
            key: EncodingKey::from_ec_der(&der),
            der,
            ed_public: None,
        }
    }

    pub(crate) fn ed(kid: &str) -> Self {
        use ed25519_dalek::pkcs8::EncodePrivateKey as _;
        let key = ed25519_dalek::SigningKey::from_bytes(&random::<32>());
        let der = key.to_pkcs8_der().unwrap().as_bytes().to_vec();
        Signer {
            kid: kid.to_owned(),
            alg: jsonwebtoken::Algorithm::EdDSA,
            key: EncodingKey::from_ed_der(&der),
            der,
            ed_public: Some(key.verifying_key().to_bytes()),
        }
    }

    /// The same key under another kid.
    pub(crate) fn renamed(&self, kid: &str) -> Self {
        Signer {
            kid: kid.to_owned(),
            alg: self.alg,
            key: self.key.clone(),
            der: self.der.clone(),
            ed_public: self.ed_public,
        }
    }

    /// The public JWK the authorization server publishes for this key.
    pub(crate) fn jwk(&self) -> Value {
        let mut jwk = match self.ed_public {
            Some(x) => {
                json!({"kty": "OKP", "crv": "Ed25519", "alg": "EdDSA", "x": URL_SAFE_NO_PAD.encode(x)})
            }
            None => {
                serde_json::to_value(Jwk::from_encoding_key(&self.key, self.alg).unwrap()).unwrap()
            }
        };
        jwk["kid"] = json!(self.kid);
        jwk["use"] = json!("sig");
        assert!(jwk.get("d").is_none(), "a public JWK: {jwk}");
        jwk
    }

    /// The RSA public key, PKCS#1 DER: what an attacker would use as an
    /// HMAC secret.
    fn rsa_public_der(&self) -> Vec<u8> {
        use rsa::pkcs1::{DecodeRsaPrivateKey as _, EncodeRsaPublicKey as _};
        let key = rsa::PrivateKey::from_pkcs1_der(&self.der).unwrap();
        key.to_public_key()
            .to_pkcs1_der()
            .unwrap()
            .as_bytes()
            .to_vec()
    }

    fn header(&self) -> Header {
        let mut header = Header::new(self.alg);
        header.kid = Some(self.kid.clone());
        header.typ = Some("at+jwt".to_owned());
        header
    }

    /// A token with these claims, typed `at+jwt`, naming this key.
    pub(crate) fn mint(&self, claims: &Value) -> String {
        jsonwebtoken::encode(&self.header(), claims, &self.key).unwrap()
    }

    /// A token with a header of the test's own making, signed by this key.
    pub(crate) fn mint_raw(&self, header: &Value, claims: &Value) -> String {
        let input = format!("{}.{}", b64(header), b64(claims));
        let signature = jsonwebtoken::crypto::sign(input.as_bytes(), &self.key, self.alg).unwrap();
        format!("{input}.{signature}")
    }
}

fn b64(value: &Value) -> String {
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(value).unwrap())
}

pub(crate) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// The claims of a good token from `issuer`.
pub(crate) fn claims(issuer: &str) -> Value {
    let now = now();
    json!({
        "iss": issuer,
        "aud": RESOURCE,
        "sub": "alice",
        "client_id": "app-1",
        "scope": format!("{SCOPE} files:read"),
        "iat": now,
        "nbf": now - 1,
        "exp": now + 300,
        "jti": "t-1",
    })
}

// --- the authorization server -----------------------------------------------

#[derive(Default)]
pub(crate) struct AsState {
    keys: Mutex<Vec<Value>>,
    url: Mutex<String>,
    /// The issuer its metadata names (the real one unless set).
    metadata_issuer: Mutex<Option<String>>,
    /// The `jwks_uri` its metadata names (its own `/jwks` unless set).
    metadata_jwks: Mutex<Option<String>>,
    /// What `/jwks` answers with `200` instead of the key set, when set.
    jwks_body: Mutex<Option<String>>,
    /// How long `/jwks` takes to answer (it reads the keys after it).
    jwks_delay: Mutex<Duration>,
    pub(crate) jwks_hits: AtomicUsize,
    pub(crate) down: AtomicBool,
}

/// A loopback authorization server: `/jwks`, and RFC 8414 metadata.
pub(crate) struct Issuer {
    pub(crate) url: String,
    pub(crate) state: Arc<AsState>,
    _server: TestServer,
}

impl Issuer {
    pub(crate) async fn start(keys: &[&Signer]) -> Issuer {
        let state = Arc::new(AsState::default());
        *state.keys.lock().unwrap() = keys.iter().map(|k| k.jwk()).collect();
        let jwks = state.clone();
        let metadata = state.clone();
        let router = axum::Router::new()
            .route(
                "/jwks",
                axum::routing::get(move || {
                    let state = jwks.clone();
                    async move {
                        state.jwks_hits.fetch_add(1, Ordering::SeqCst);
                        let delay = *state.jwks_delay.lock().unwrap();
                        tokio::time::sleep(delay).await;
                        if state.down.load(Ordering::SeqCst) {
                            return (StatusCode::SERVICE_UNAVAILABLE, String::new());
                        }
                        if let Some(body) = state.jwks_body.lock().unwrap().clone() {
                            return (StatusCode::OK, body);
                        }
                        let keys = state.keys.lock().unwrap().clone();
                        (StatusCode::OK, json!({ "keys": keys }).to_string())
                    }
                }),
            )
            .route(
                "/.well-known/oauth-authorization-server",
                axum::routing::get(move || {
                    let state = metadata.clone();
                    async move {
                        let url = state.url.lock().unwrap().clone();
                        let issuer = state
                            .metadata_issuer
                            .lock()
                            .unwrap()
                            .clone()
                            .unwrap_or(url.clone());
                        let jwks = state
                            .metadata_jwks
                            .lock()
                            .unwrap()
                            .clone()
                            .unwrap_or(format!("{url}/jwks"));
                        json!({ "issuer": issuer, "jwks_uri": jwks }).to_string()
                    }
                }),
            );
        let server = TestServer::start(router).await;
        let url = format!("http://{}", server.addr());
        state.url.lock().unwrap().clone_from(&url);
        Issuer {
            url,
            state,
            _server: server,
        }
    }

    /// Publishes exactly these keys from now on.
    pub(crate) fn publish(&self, keys: &[&Signer]) {
        *self.state.keys.lock().unwrap() = keys.iter().map(|k| k.jwk()).collect();
    }

    pub(crate) fn hits(&self) -> usize {
        self.state.jwks_hits.load(Ordering::SeqCst)
    }

    /// A verifier of this issuer's tokens, reading `/jwks`.
    pub(crate) fn verifier(&self) -> JwtVerifierBuilder {
        JwtVerifier::builder(&self.url, RESOURCE).jwks_url(format!("{}/jwks", self.url))
    }
}

// --- the MCP server ---------------------------------------------------------

/// A server that needs `mcp:tools`, with one tool answering who called.
pub(crate) fn server_with(authenticator: impl Authenticator) -> Arc<Server> {
    server_with_limits(authenticator, wymcp::Limits::default())
}

/// [`server_with`], within `limits`.
pub(crate) fn server_with_limits(
    authenticator: impl Authenticator,
    limits: wymcp::Limits,
) -> Arc<Server> {
    let whoami =
        Tool::new("whoami")
            .description("Says who called")
            .handler(|_: NoArgs, cx| async move {
                let principal = cx.principal().cloned().unwrap_or_default();
                Ok(ToolResult::text(
                    json!({
                        "subject": principal.subject,
                        "scopes": principal.scopes,
                        "client_id": principal.client_id,
                    })
                    .to_string(),
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

/// A conforming 2026 call of `whoami`, id `r-1`, with no `Authorization`.
fn whoami() -> Req {
    Req::modern("r-1", "tools/call").params(json!({"name": "whoami", "arguments": {}}))
}

/// Calls `whoami` with `Authorization: Bearer <token>` (or none).
pub(crate) async fn call(server: &Arc<Server>, token: Option<&str>) -> Reply {
    let req = match token {
        Some(token) => whoami().bearer(token),
        None => whoami(),
    };
    validated(server, req).await
}

/// [`call`] on a thread and a runtime of its own, for requests that must
/// be in flight at once: each records its own rejection events, which a
/// task sharing the test's thread could not.
pub(crate) fn call_apart(server: &Arc<Server>, token: &str) -> tokio::task::JoinHandle<Reply> {
    let (server, token) = (server.clone(), token.to_owned());
    tokio::task::spawn_blocking(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(call(&server, Some(&token)))
    })
}

/// The call went through: the principal the tool saw.
#[track_caller]
pub(crate) fn accepted(reply: &Reply) -> Value {
    let result = reply.ok(&json!("r-1"));
    assert!(reply.rejections.is_empty(), "{:?}", reply.rejections);
    let text = result["content"][0]["text"].as_str().unwrap();
    serde_json::from_str(text).unwrap()
}

/// The challenge of a refused token.
pub(crate) fn invalid_token_challenge(description: &str) -> String {
    format!(
        r#"Bearer error="invalid_token", error_description="{description}", resource_metadata="{METADATA}", scope="{SCOPE}""#
    )
}

/// Refused by Auth: 401, -32600, the request's id, one rejection event,
/// the invalid_token challenge with `description`, and the same description
/// in the JSON-RPC message.
#[track_caller]
pub(crate) fn refused(reply: &Reply, description: &str) {
    reply.rejected("Auth", 401, -32600, &json!("r-1"));
    assert_eq!(
        reply.header("www-authenticate"),
        invalid_token_challenge(description)
    );
    assert_eq!(
        reply.body["error"]["message"],
        format!("unauthorized: invalid token: {description}")
    );
}

// The descriptions, as a client reads them.
pub(crate) const MALFORMED: &str = "the token is not a well-formed JWT";
const MALFORMED_HEADER: &str = "the Authorization header does not hold a well-formed bearer token";
const TOO_LARGE: &str = "the token is larger than this server accepts";
const UNSIGNED: &str = "the token is not signed (alg none)";
const ALGORITHM: &str = "the token's signing algorithm is not accepted";
const CRITICAL: &str = "the token has critical header parameters this server does not understand";
const TYP: &str = "the token's typ is not at+jwt (RFC 9068)";
const UNKNOWN_KEY: &str = "the token names a signing key the authorization server does not publish";
const AMBIGUOUS_KEY: &str =
    "the token names no signing key (kid), and the authorization server publishes several";
const SIGNATURE: &str = "the token's signature does not verify";
const ISSUER: &str = "the token was issued by another issuer";
pub(crate) const AUDIENCE: &str = "the token was issued for another audience";
pub(crate) const NO_AUDIENCE: &str = "the token names no audience";
pub(crate) const EXPIRED: &str = "the token has expired";
const NO_EXPIRY: &str = "the token has no expiry";
pub(crate) const NOT_YET_VALID: &str = "the token is not valid yet";
const ISSUED_IN_FUTURE: &str = "the token was issued in the future";
const NO_SUBJECT: &str = "the token names no subject";
pub(crate) const UNREACHABLE: &str =
    "the token cannot be verified now: the authorization server is unreachable";

// --- the tests --------------------------------------------------------------

#[tokio::test]
async fn tokens_signed_with_rsa_ec_and_ed25519_keys_give_their_principal() {
    let (rsa, ec, ed) = (
        Signer::rsa("rsa-1", 0),
        Signer::ec("ec-1"),
        Signer::ed("ed-1"),
    );
    let issuer = Issuer::start(&[&rsa, &ec, &ed]).await;
    let server = server_with(issuer.verifier().build().unwrap());
    for signer in [&rsa, &ec, &ed] {
        let token = signer.mint(&claims(&issuer.url));
        let principal = accepted(&call(&server, Some(&token)).await);
        assert_eq!(
            principal,
            json!({"subject": "alice", "scopes": [SCOPE, "files:read"], "client_id": "app-1"}),
            "{}",
            signer.kid
        );
    }
    // `scp` (string or array) and `azp` as some servers write them.
    let mut entra = claims(&issuer.url);
    entra.as_object_mut().unwrap().remove("scope");
    entra.as_object_mut().unwrap().remove("client_id");
    entra["scp"] = json!([SCOPE]);
    entra["azp"] = json!("app-2");
    let principal = accepted(&call(&server, Some(&rsa.mint(&entra))).await);
    assert_eq!(
        principal,
        json!({"subject": "alice", "scopes": [SCOPE], "client_id": "app-2"})
    );
    // The key set was read once for all of them.
    assert_eq!(issuer.hits(), 1);
}

#[tokio::test]
async fn a_missing_token_is_401_with_the_bare_challenge_and_no_error() {
    let rsa = Signer::rsa("rsa-1", 0);
    let issuer = Issuer::start(&[&rsa]).await;
    let server = server_with(issuer.verifier().build().unwrap());
    for authorization in [None, Some("Basic YWxpY2U6cHc=")] {
        let req = match authorization {
            Some(authorization) => whoami().header("Authorization", authorization),
            None => whoami(),
        };
        let reply = validated(&server, req).await;
        reply.rejected("Auth", 401, -32600, &json!("r-1"));
        assert_eq!(
            reply.header("www-authenticate"),
            format!(r#"Bearer resource_metadata="{METADATA}", scope="{SCOPE}""#),
            "{authorization:?}"
        );
    }
    assert_eq!(issuer.hits(), 0, "nothing to verify, nothing fetched");
}

#[tokio::test]
async fn a_token_without_a_required_scope_is_403_naming_every_scope_the_call_needs() {
    let rsa = Signer::rsa("rsa-1", 0);
    let issuer = Issuer::start(&[&rsa]).await;
    let server = server_with(issuer.verifier().build().unwrap());
    let mut narrow = claims(&issuer.url);
    narrow["scope"] = json!("files:read");
    let reply = call(&server, Some(&rsa.mint(&narrow))).await;
    reply.rejected("Auth", 403, -32600, &json!("r-1"));
    assert_eq!(
        reply.header("www-authenticate"),
        format!(
            r#"Bearer error="insufficient_scope", scope="{SCOPE}", resource_metadata="{METADATA}""#
        )
    );
}

#[tokio::test]
async fn a_wrong_signature_is_refused() {
    let (ec, rsa) = (Signer::ec("ec-1"), Signer::rsa("rsa-1", 0));
    let issuer = Issuer::start(&[&ec, &rsa]).await;
    let server = server_with(issuer.verifier().build().unwrap());
    // Signed by another key under the published key's kid.
    let forger = Signer::ec("ec-1");
    refused(
        &call(&server, Some(&forger.mint(&claims(&issuer.url)))).await,
        SIGNATURE,
    );
    // A genuine token whose claims were changed after signing.
    let token = rsa.mint(&claims(&issuer.url));
    let parts: Vec<&str> = token.split('.').collect();
    let mut changed = claims(&issuer.url);
    changed["sub"] = json!("mallory");
    let tampered = format!("{}.{}.{}", parts[0], b64(&changed), parts[2]);
    refused(&call(&server, Some(&tampered)).await, SIGNATURE);
    // The genuine one still passes.
    accepted(&call(&server, Some(&token)).await);
}

#[tokio::test]
async fn a_key_embedded_in_the_token_is_never_used() {
    let rsa = Signer::rsa("rsa-1", 0);
    let issuer = Issuer::start(&[&rsa]).await;
    let server = server_with(issuer.verifier().build().unwrap());
    let attacker = Signer::ec("attacker");
    let header = json!({"alg": "ES256", "typ": "at+jwt", "kid": "attacker", "jwk": attacker.jwk()});
    refused(
        &call(
            &server,
            Some(&attacker.mint_raw(&header, &claims(&issuer.url))),
        )
        .await,
        UNKNOWN_KEY,
    );
    // Under the published kid, the embedded key does not verify it either.
    let header = json!({"alg": "ES256", "typ": "at+jwt", "kid": "rsa-1", "jwk": attacker.jwk()});
    refused(
        &call(
            &server,
            Some(&attacker.mint_raw(&header, &claims(&issuer.url))),
        )
        .await,
        UNKNOWN_KEY,
    );
}

#[tokio::test]
async fn alg_none_hs256_with_the_public_key_and_algorithms_off_the_list_are_refused() {
    let rsa = Signer::rsa("rsa-1", 0);
    let issuer = Issuer::start(&[&rsa]).await;
    let server = server_with(issuer.verifier().build().unwrap());
    let claims = claims(&issuer.url);
    // alg none, with and without a signature part.
    let unsigned = format!(
        "{}.{}.",
        b64(&json!({"alg": "none", "typ": "at+jwt"})),
        b64(&claims)
    );
    refused(&call(&server, Some(&unsigned)).await, UNSIGNED);
    refused(
        &call(&server, Some(&format!("{unsigned}c2ln"))).await,
        UNSIGNED,
    );
    // HS256 keyed with the RSA public key the server publishes.
    let mut header = Header::new(jsonwebtoken::Algorithm::HS256);
    header.kid = Some("rsa-1".into());
    header.typ = Some("at+jwt".into());
    let secret = EncodingKey::from_secret(&rsa.rsa_public_der()).unwrap();
    let confused = jsonwebtoken::encode(&header, &claims, &secret).unwrap();
    refused(&call(&server, Some(&confused)).await, ALGORITHM);
    // PS256, signed by a published key, is not on the default list.
    let pss = Signer::rsa_with("rsa-pss", 1, jsonwebtoken::Algorithm::PS256);
    issuer.publish(&[&rsa, &pss]);
    refused(&call(&server, Some(&pss.mint(&claims))).await, ALGORITHM);
    // Allowed, it passes, and RS256 no longer does.
    let server = server_with(
        issuer
            .verifier()
            .algorithms([Algorithm::PS256])
            .build()
            .unwrap(),
    );
    accepted(&call(&server, Some(&pss.mint(&claims))).await);
    refused(&call(&server, Some(&rsa.mint(&claims))).await, ALGORITHM);
    // A JWK that names its alg verifies only that alg: PS256 under the kid
    // of the RS256 key finds no key.
    let pss_as_rs = Signer::rsa_with("rsa-1", 0, jsonwebtoken::Algorithm::PS256);
    refused(
        &call(&server, Some(&pss_as_rs.mint(&claims))).await,
        UNKNOWN_KEY,
    );
}

#[tokio::test]
async fn wrong_audience_and_wrong_issuer_are_refused() {
    let rsa = Signer::rsa("rsa-1", 0);
    let issuer = Issuer::start(&[&rsa]).await;
    let server = server_with(issuer.verifier().build().unwrap());
    let with = |name: &str, value: Value| {
        let mut c = claims(&issuer.url);
        if value.is_null() {
            c.as_object_mut().unwrap().remove(name);
        } else {
            c[name] = value;
        }
        rsa.mint(&c)
    };
    // A token minted for another resource (RFC 8707), even one nearby.
    for aud in [
        json!("https://other.example.com/mcp"),
        json!("https://mcp.example.com/mcp/"),
        json!(["a", "b"]),
    ] {
        refused(&call(&server, Some(&with("aud", aud))).await, AUDIENCE);
    }
    refused(
        &call(&server, Some(&with("aud", Value::Null))).await,
        NO_AUDIENCE,
    );
    accepted(
        &call(
            &server,
            Some(&with("aud", json!(["https://api.example.com", RESOURCE]))),
        )
        .await,
    );
    // iss exactly: another issuer, a trailing slash, none.
    for iss in [
        json!("https://evil.example.com"),
        json!(format!("{}/", issuer.url)),
        Value::Null,
    ] {
        refused(&call(&server, Some(&with("iss", iss))).await, ISSUER);
    }
    // An audience the configuration adds is accepted beside the resource.
    let server = server_with(
        issuer
            .verifier()
            .additional_audience("api://mcp")
            .build()
            .unwrap(),
    );
    accepted(&call(&server, Some(&with("aud", json!("api://mcp")))).await);
}

#[tokio::test]
async fn expired_not_yet_valid_and_future_tokens_are_refused_past_the_leeway() {
    let rsa = Signer::rsa("rsa-1", 0);
    let issuer = Issuer::start(&[&rsa]).await;
    let server = server_with(
        issuer
            .verifier()
            .leeway(Duration::from_secs(30))
            .build()
            .unwrap(),
    );
    let now = now();
    let with = |name: &str, value: Value| {
        let mut c = claims(&issuer.url);
        if value.is_null() {
            c.as_object_mut().unwrap().remove(name);
        } else {
            c[name] = value;
        }
        rsa.mint(&c)
    };
    refused(
        &call(&server, Some(&with("exp", json!(now - 60)))).await,
        EXPIRED,
    );
    accepted(&call(&server, Some(&with("exp", json!(now - 10)))).await);
    refused(
        &call(&server, Some(&with("exp", Value::Null))).await,
        NO_EXPIRY,
    );
    refused(
        &call(&server, Some(&with("nbf", json!(now + 120)))).await,
        NOT_YET_VALID,
    );
    accepted(&call(&server, Some(&with("nbf", json!(now + 10)))).await);
    refused(
        &call(&server, Some(&with("iat", json!(now + 120)))).await,
        ISSUED_IN_FUTURE,
    );
    refused(
        &call(&server, Some(&with("sub", Value::Null))).await,
        NO_SUBJECT,
    );
}

#[tokio::test]
async fn malformed_tokens_are_refused_before_any_key_is_fetched() {
    let rsa = Signer::rsa("rsa-1", 0);
    let issuer = Issuer::start(&[&rsa]).await;
    let server = server_with(issuer.verifier().max_token_bytes(4096).build().unwrap());
    let good = rsa.mint(&claims(&issuer.url));
    let parts: Vec<&str> = good.split('.').collect();
    for token in [
        "abc".to_owned(),
        format!("{}.{}", parts[0], parts[1]),
        format!("{good}.x"),
        format!("{good}="),
        format!("{}.{}.{}", b64(&json!([1])), parts[1], parts[2]),
        format!("{}.{}.{}", URL_SAFE_NO_PAD.encode("{"), parts[1], parts[2]),
        format!(
            "{}.{}.{}",
            b64(&json!({"typ": "at+jwt"})),
            parts[1],
            parts[2]
        ),
    ] {
        refused(&call(&server, Some(&token)).await, MALFORMED);
    }
    // Not a token68 at all.
    let reply = validated(&server, whoami().header("Authorization", "Bearer a b")).await;
    refused(&reply, MALFORMED_HEADER);
    let reply = validated(&server, whoami().header("Authorization", "Bearer")).await;
    refused(&reply, MALFORMED_HEADER);
    refused(&call(&server, Some(&"a".repeat(5000))).await, TOO_LARGE);
    // A header the server does not understand, a typ that is not at+jwt.
    let crit = json!({"alg": "RS256", "typ": "at+jwt", "kid": "rsa-1", "crit": ["exp"], "exp": 1});
    refused(
        &call(&server, Some(&rsa.mint_raw(&crit, &claims(&issuer.url)))).await,
        CRITICAL,
    );
    let typ = json!({"alg": "RS256", "typ": "JWT", "kid": "rsa-1"});
    refused(
        &call(&server, Some(&rsa.mint_raw(&typ, &claims(&issuer.url)))).await,
        TYP,
    );
    assert_eq!(issuer.hits(), 0, "a refused header fetches nothing");
    // `accept_generic_typ` lets `JWT` and no `typ` through.
    let generic = server_with(issuer.verifier().accept_generic_typ().build().unwrap());
    accepted(&call(&generic, Some(&rsa.mint_raw(&typ, &claims(&issuer.url)))).await);
    let untyped = json!({"alg": "RS256", "kid": "rsa-1"});
    accepted(
        &call(
            &generic,
            Some(&rsa.mint_raw(&untyped, &claims(&issuer.url))),
        )
        .await,
    );
}

#[tokio::test]
async fn a_token_without_kid_needs_exactly_one_key_of_its_kind() {
    let (rsa, other) = (Signer::rsa("rsa-1", 0), Signer::rsa("rsa-2", 1));
    let issuer = Issuer::start(&[&rsa]).await;
    let server = server_with(issuer.verifier().build().unwrap());
    let header = json!({"alg": "RS256", "typ": "at+jwt"});
    let token = rsa.mint_raw(&header, &claims(&issuer.url));
    accepted(&call(&server, Some(&token)).await);
    // Two RSA keys published: no key is guessed.
    let issuer = Issuer::start(&[&rsa, &other]).await;
    let server = server_with(issuer.verifier().build().unwrap());
    let token = rsa.mint_raw(&header, &claims(&issuer.url));
    refused(&call(&server, Some(&token)).await, AMBIGUOUS_KEY);
}

#[tokio::test]
async fn an_unknown_kid_is_refused_then_accepted_once_the_key_is_rotated_in() {
    let (old, new) = (Signer::rsa("2026-01", 0), Signer::ed("2026-02"));
    let issuer = Issuer::start(&[&old]).await;
    let interval = Duration::from_millis(300);
    let server = server_with(
        issuer
            .verifier()
            .refresh_interval(interval)
            .build()
            .unwrap(),
    );
    accepted(&call(&server, Some(&old.mint(&claims(&issuer.url)))).await);
    assert_eq!(issuer.hits(), 1);
    // Signed with a key the server does not publish yet: refused, and the
    // set was just read, so it is not read again.
    let early = new.mint(&claims(&issuer.url));
    refused(&call(&server, Some(&early)).await, UNKNOWN_KEY);
    assert_eq!(issuer.hits(), 1);
    // The server rotates the new key in (and the old one out).
    issuer.publish(&[&new]);
    tokio::time::sleep(interval + Duration::from_millis(50)).await;
    accepted(&call(&server, Some(&early)).await);
    assert_eq!(issuer.hits(), 2, "one fetch for the rotated-in key");
    // The withdrawn key no longer verifies once the set has been re-read.
    tokio::time::sleep(interval + Duration::from_millis(50)).await;
    refused(
        &call(&server, Some(&old.mint(&claims(&issuer.url)))).await,
        UNKNOWN_KEY,
    );
    assert_eq!(issuer.hits(), 3);
}

#[tokio::test]
async fn forged_kids_cause_at_most_one_refresh_per_interval_while_rotation_still_works() {
    let (old, new) = (Signer::rsa("a", 0), Signer::ec("b"));
    let issuer = Issuer::start(&[&old]).await;
    let interval = Duration::from_millis(500);
    let server = server_with(
        issuer
            .verifier()
            .refresh_interval(interval)
            .build()
            .unwrap(),
    );
    accepted(&call(&server, Some(&old.mint(&claims(&issuer.url)))).await);
    let started = std::time::Instant::now();
    // A stream of tokens naming forged kids, for about three intervals.
    let attacker = Signer::ec("x");
    let mut sent = 0;
    while started.elapsed() < 3 * interval && sent < 2000 {
        let forged = attacker.renamed(&format!("forged-{sent}"));
        refused(
            &call(&server, Some(&forged.mint(&claims(&issuer.url)))).await,
            UNKNOWN_KEY,
        );
        sent += 1;
    }
    let intervals = started.elapsed().as_millis().div_ceil(interval.as_millis());
    let refreshes = issuer.hits() - 1;
    assert!(sent > 20, "the stream was a stream: {sent}");
    assert!(
        refreshes as u128 <= intervals,
        "{refreshes} refreshes in {intervals} intervals for {sent} forged kids"
    );
    // Meanwhile the server rotates: the new key's tokens are accepted.
    issuer.publish(&[&old, &new]);
    tokio::time::sleep(interval).await;
    accepted(&call(&server, Some(&new.mint(&claims(&issuer.url)))).await);
    accepted(&call(&server, Some(&old.mint(&claims(&issuer.url)))).await);
}

#[tokio::test]
async fn the_key_set_is_found_through_the_issuers_metadata_and_must_name_it() {
    let rsa = Signer::rsa("rsa-1", 0);
    let issuer = Issuer::start(&[&rsa]).await;
    let discovering = JwtVerifier::builder(&issuer.url, RESOURCE).build().unwrap();
    let server = server_with(discovering);
    accepted(&call(&server, Some(&rsa.mint(&claims(&issuer.url)))).await);
    assert_eq!(issuer.hits(), 1);
    // Metadata that names another issuer is not followed.
    let impostor = Issuer::start(&[&rsa]).await;
    *impostor.state.metadata_issuer.lock().unwrap() = Some("https://evil.example.com".into());
    let server = server_with(
        JwtVerifier::builder(&impostor.url, RESOURCE)
            .build()
            .unwrap(),
    );
    refused(
        &call(&server, Some(&rsa.mint(&claims(&impostor.url)))).await,
        UNREACHABLE,
    );
    assert_eq!(impostor.hits(), 0);
}

#[tokio::test]
async fn a_discovered_jwks_uri_must_be_https_or_on_the_issuers_own_origin() {
    let rsa = Signer::rsa("rsa-1", 0);
    // The metadata points at plain http on another loopback port: a
    // service the operator never named.
    let elsewhere = Issuer::start(&[&rsa]).await;
    let issuer = Issuer::start(&[&rsa]).await;
    *issuer.state.metadata_jwks.lock().unwrap() = Some(format!("{}/jwks", elsewhere.url));
    let server = server_with(JwtVerifier::builder(&issuer.url, RESOURCE).build().unwrap());
    refused(
        &call(&server, Some(&rsa.mint(&claims(&issuer.url)))).await,
        UNREACHABLE,
    );
    assert_eq!(
        elsewhere.hits(),
        0,
        "the discovered http URL is never fetched"
    );
    // Configured explicitly, the same URL is the operator's choice.
    let server = server_with(
        JwtVerifier::builder(&issuer.url, RESOURCE)
            .jwks_url(format!("{}/jwks", elsewhere.url))
            .build()
            .unwrap(),
    );
    accepted(&call(&server, Some(&rsa.mint(&claims(&issuer.url)))).await);
    assert_eq!(elsewhere.hits(), 1);
}

#[tokio::test]
async fn a_slow_key_server_delays_one_refresh_while_held_keys_keep_verifying() {
    let (held, rotated) = (Signer::rsa("held", 0), Signer::ec("rotated"));
    let issuer = Issuer::start(&[&held]).await;
    let server = server_with(
        issuer
            .verifier()
            .keys_max_age(Duration::from_millis(100))
            .refresh_interval(Duration::from_millis(100))
            .build()
            .unwrap(),
    );
    accepted(&call(&server, Some(&held.mint(&claims(&issuer.url)))).await);
    assert_eq!(issuer.hits(), 1);
    // The set grows stale; the key server becomes slow.
    let delay = Duration::from_millis(1500);
    *issuer.state.jwks_delay.lock().unwrap() = delay;
    tokio::time::sleep(Duration::from_millis(150)).await;
    let token = held.mint(&claims(&issuer.url));
    let refresher = call_apart(&server, &token);
    // Let it start its fetch.
    while issuer.hits() < 2 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // The refresh runs: every request whose key is held is answered from
    // the held set at once, and none starts a second refresh.
    let started = std::time::Instant::now();
    let meanwhile: Vec<_> = (0..20).map(|_| call_apart(&server, &token)).collect();
    for reply in meanwhile {
        accepted(&reply.await.unwrap());
    }
    assert!(
        started.elapsed() < delay / 3,
        "requests waited behind the refresh: {:?}",
        started.elapsed()
    );
    assert_eq!(issuer.hits(), 2, "one refresh in flight");
    // A token whose key the held set lacks waits for that one refresh (the
    // key is rotated in before it answers) and starts no other.
    issuer.publish(&[&held, &rotated]);
    let unknown = call(&server, Some(&rotated.mint(&claims(&issuer.url)))).await;
    accepted(&unknown);
    accepted(&refresher.await.unwrap());
    assert_eq!(issuer.hits(), 2, "the waiting request started no refresh");
}

#[tokio::test]
async fn an_answer_that_is_not_a_jwk_set_is_a_failed_fetch_and_held_keys_survive_it() {
    let rsa = Signer::rsa("rsa-1", 0);
    let issuer = Issuer::start(&[&rsa]).await;
    let interval = Duration::from_millis(150);
    let server = server_with(
        issuer
            .verifier()
            .refresh_interval(interval)
            .timeout(Duration::from_secs(2))
            .build()
            .unwrap(),
    );
    let token = rsa.mint(&claims(&issuer.url));
    accepted(&call(&server, Some(&token)).await);
    let stranger = Signer::ec("forged");
    let mut warnings = Vec::new();
    // `200` with an object lacking `keys`, then with `keys` not an array:
    // each time a forged kid makes the set be read again.
    for body in [json!({"not_keys": []}), json!({"keys": {"a": 1}})] {
        *issuer.state.jwks_body.lock().unwrap() = Some(body.to_string());
        tokio::time::sleep(interval + Duration::from_millis(20)).await;
        let hits = issuer.hits();
        let forged = stranger.mint(&claims(&issuer.url));
        let (status, challenge, _, log) = send_logging(&server, whoami().bearer(&forged)).await;
        assert_eq!(issuer.hits(), hits + 1, "the set was read again");
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_eq!(challenge, invalid_token_challenge(UNREACHABLE));
        warnings.extend(log);
        // The held key still verifies what it signed.
        let (status, _, _, log) = send_logging(&server, whoami().bearer(&token)).await;
        assert_eq!(status, StatusCode::OK);
        warnings.extend(log);
    }
    assert_eq!(warnings, ["WARN wymcp::auth"], "one warning for the outage");
    // A JWK Set again: the end of the outage is said once.
    *issuer.state.jwks_body.lock().unwrap() = None;
    tokio::time::sleep(interval + Duration::from_millis(20)).await;
    let forged = stranger.mint(&claims(&issuer.url));
    let (status, challenge, _, log) = send_logging(&server, whoami().bearer(&forged)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(challenge, invalid_token_challenge(UNKNOWN_KEY));
    assert_eq!(log, ["INFO wymcp::auth"]);
    accepted(&call(&server, Some(&token)).await);
}

/// Sends `req` through the validated chain, recording the `wymcp::auth`
/// warnings.
async fn send_logging(server: &Arc<Server>, req: Req) -> (StatusCode, String, Value, Vec<String>) {
    use tracing_subscriber::layer::SubscriberExt as _;
    let log = Logged::default();
    let subscriber = tracing_subscriber::registry().with(log.clone());
    let _guard = tracing::subscriber::set_default(subscriber);
    let response = validated_router(server.clone())
        .oneshot(req.build())
        .await
        .unwrap();
    let status = response.status();
    let challenge = response
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let lines = log.0.lock().unwrap().clone();
    (
        status,
        challenge,
        serde_json::from_slice(&body).unwrap(),
        lines,
    )
}

#[derive(Clone, Default)]
struct Logged(Arc<Mutex<Vec<String>>>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Logged {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        let meta = event.metadata();
        if meta.target() == "wymcp::auth" && *meta.level() <= tracing::Level::INFO {
            self.0
                .lock()
                .unwrap()
                .push(format!("{} {}", meta.level(), meta.target()));
        }
    }
}

#[tokio::test]
async fn an_unreachable_authorization_server_is_401_never_500_and_logged_once() {
    let rsa = Signer::rsa("rsa-1", 0);
    let issuer = Issuer::start(&[&rsa]).await;
    issuer.state.down.store(true, Ordering::SeqCst);
    let interval = Duration::from_millis(200);
    let server = server_with(
        issuer
            .verifier()
            .refresh_interval(interval)
            .timeout(Duration::from_secs(2))
            .build()
            .unwrap(),
    );
    let token = rsa.mint(&claims(&issuer.url));
    let mut warnings = Vec::new();
    for _ in 0..3 {
        let (status, challenge, reply, log) = send_logging(&server, whoami().bearer(&token)).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_eq!(challenge, invalid_token_challenge(UNREACHABLE));
        assert_eq!(reply["error"]["code"], -32600);
        assert_eq!(reply["id"], "r-1");
        warnings.extend(log);
        tokio::time::sleep(interval).await;
    }
    assert!(issuer.hits() >= 2, "it kept trying: {}", issuer.hits());
    assert_eq!(warnings, ["WARN wymcp::auth"], "one warning for the outage");
    // It answers again: accepted, and the end of the outage is said once.
    issuer.state.down.store(false, Ordering::SeqCst);
    let (status, _, _, log) = send_logging(&server, whoami().bearer(&token)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(log, ["INFO wymcp::auth"]);

    // A closed port, not just a 503: the same answer.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let server = server_with(
        JwtVerifier::builder(&issuer.url, RESOURCE)
            .jwks_url(format!("http://{closed}/jwks"))
            .build()
            .unwrap(),
    );
    refused(&call(&server, Some(&token)).await, UNREACHABLE);
}

#[tokio::test]
async fn keys_already_held_keep_verifying_while_the_authorization_server_is_down() {
    let rsa = Signer::rsa("rsa-1", 0);
    let issuer = Issuer::start(&[&rsa]).await;
    let server = server_with(
        issuer
            .verifier()
            .keys_max_age(Duration::from_millis(100))
            .refresh_interval(Duration::from_millis(100))
            .build()
            .unwrap(),
    );
    accepted(&call(&server, Some(&rsa.mint(&claims(&issuer.url)))).await);
    issuer.state.down.store(true, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(150)).await;
    // The set is past its age and cannot be re-read: the held key still
    // verifies what it signed, and a key it does not hold is unreachable.
    accepted(&call(&server, Some(&rsa.mint(&claims(&issuer.url)))).await);
    assert!(issuer.hits() >= 2);
    let stranger = Signer::ec("new");
    tokio::time::sleep(Duration::from_millis(150)).await;
    refused(
        &call(&server, Some(&stranger.mint(&claims(&issuer.url)))).await,
        UNREACHABLE,
    );
}

#[tokio::test]
async fn a_refused_token_follows_the_rejection_id_rule() {
    let rsa = Signer::rsa("rsa-1", 0);
    let issuer = Issuer::start(&[&rsa]).await;
    let server = server_with(issuer.verifier().build().unwrap());
    let mut expired = claims(&issuer.url);
    expired["exp"] = json!(now() - 3600);
    let token = rsa.mint(&expired);
    // A notification has no id to echo.
    let req = Req::notification("notifications/initialized").bearer(&token);
    let reply = validated(&server, req).await;
    reply.rejected("Auth", 401, -32600, &Value::Null);
    assert_eq!(
        reply.header("www-authenticate"),
        invalid_token_challenge(EXPIRED)
    );
    // An integer id is echoed as the integer it is.
    let reply = validated(&server, Req::modern(7, "tools/list").bearer(&token)).await;
    reply.rejected("Auth", 401, -32600, &json!(7));
}

/// A 2026 `tools/list` to `examples/everything`, with this bearer token.
fn everything_tools_list(host: &str, token: &str) -> wymcp_tests::wire::RawRequest {
    let body = json!({
        "jsonrpc": "2.0",
        "id": "list-1",
        "method": "tools/list",
        "params": {"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "jwt", "version": "1"},
        }},
    });
    wymcp_tests::wire::RawRequest::post("/mcp")
        .host(host)
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/list")
        .header("Authorization", format!("Bearer {token}"))
        .json(serde_json::to_vec(&body).unwrap())
}

#[tokio::test]
async fn examples_everything_accepts_typ_jwt_tokens_when_asked_to_as_docs_auth_md_says() {
    use wymcp_tests::child::Everything;
    use wymcp_tests::wire::RawConn;
    let rsa = Signer::rsa("rsa-1", 0);
    let issuer = Issuer::start(&[&rsa]).await;
    let jwks = format!("{}/jwks", issuer.url);
    let header = json!({"alg": "RS256", "typ": "JWT", "kid": "rsa-1"});
    let generic = rsa.mint_raw(&header, &claims(&issuer.url));
    let typed = rsa.mint(&claims(&issuer.url));
    let flags = [
        "--jwks-url",
        &jwks,
        "--issuer",
        &issuer.url,
        "--audience",
        RESOURCE,
    ];
    // Without the flag: RFC 9068's `at+jwt` only.
    let strict = Everything::start(&flags, &[]);
    let host = strict.addr().to_string();
    let mut conn = RawConn::connect(strict.addr()).await;
    let refused = conn.request(&everything_tools_list(&host, &generic)).await;
    assert_eq!(refused.status, 401);
    assert!(
        refused
            .header("www-authenticate")
            .is_some_and(|c| c.contains(TYP)),
        "{:?}",
        refused.header("www-authenticate")
    );
    assert_eq!(refused.json()["id"], "list-1");
    let mut conn = RawConn::connect(strict.addr()).await;
    assert_eq!(
        conn.request(&everything_tools_list(&host, &typed))
            .await
            .status,
        200
    );
    drop(strict);
    // With it, as docs/auth.md's snippet does: `typ: JWT` is let in.
    let generic_flags = [&flags[..], &["--accept-generic-typ"]].concat();
    let lenient = Everything::start(&generic_flags, &[]);
    let host = lenient.addr().to_string();
    let mut conn = RawConn::connect(lenient.addr()).await;
    let listed = conn.request(&everything_tools_list(&host, &generic)).await;
    assert_eq!(
        listed.status,
        200,
        "{:?}",
        String::from_utf8_lossy(&listed.body)
    );
    assert_eq!(listed.json()["id"], "list-1");
    assert!(listed.json()["result"]["tools"].is_array());
    assert_eq!(lenient.panics(), 0);
}

/// Rule (issue 23, item 6): a listen stream opened with a JWT ends when
/// the token does (its `exp`, plus the leeway: the moment it would be
/// refused), with the stream's clean close; a new one with that token is
/// refused `401`.
#[tokio::test]
async fn a_listen_stream_ends_at_its_tokens_exp() {
    let rsa = Signer::rsa("rsa-1", 0);
    let issuer = Issuer::start(&[&rsa]).await;
    let server = server_with(issuer.verifier().leeway(Duration::ZERO).build().unwrap());
    let mut short = claims(&issuer.url);
    short["exp"] = json!(now() + 2);
    let token = rsa.mint(&short);
    let client = wymcp::testing::Client::new(server.clone()).bearer(token);
    let mut stream = client
        .listen(json!({"toolsListChanged": true}))
        .await
        .unwrap();
    assert_eq!(stream.status, StatusCode::OK);
    let ack = stream.next().await.unwrap();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert!(
        stream
            .next_within(Duration::from_millis(300))
            .await
            .is_none(),
        "nothing before exp"
    );
    let last = stream
        .next_within(Duration::from_secs(4))
        .await
        .expect("the stream ends at the token's exp, not an hour later");
    assert_eq!(last["id"], stream.request["id"]);
    assert_eq!(last["result"]["resultType"], "complete");
    assert!(stream.ended().await);
    let again = client.listen(json!({"toolsListChanged": true})).await;
    assert_eq!(again.unwrap_err().status, StatusCode::UNAUTHORIZED);
}
