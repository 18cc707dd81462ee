//! DPoP (RFC 9449, SEP-1932) on the resource server: a `JwtVerifier`
//! against a loopback authorization server whose tokens are bound to a
//! client's key (`cnf.jkt`), and proofs made here with that key (or
//! another). Every refusal pins the status, the JSON-RPC code and id, and
//! the `WWW-Authenticate` challenge (its error, description, `algs`,
//! `resource_metadata` and `scope`); each rule has its own test.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::Method;
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};
use wymcp::auth::{AuthConfig, Dpop};
use wymcp::redis::{RedisConfig, RedisDpopReplay};
use wymcp::{NoArgs, Server, Tool, ToolResult};

use crate::jwt::{Issuer, METADATA, RESOURCE, SCOPE, Signer, claims, now};
use crate::support::{RedisServer, Reply, Req, validated};

const ALGS: &str = "ES256 EdDSA RS256 PS256";

/// The client's key, as a proof's header carries it: public members only.
fn public_jwk(key: &Signer) -> Value {
    let mut jwk = key.jwk();
    let object = jwk.as_object_mut().unwrap();
    for name in ["kid", "use", "alg"] {
        object.remove(name);
    }
    jwk
}

/// RFC 7638, computed here on its own: the P-256 key's required members in
/// order, as JSON without whitespace.
pub(crate) fn thumbprint(key: &Signer) -> String {
    let jwk = public_jwk(key);
    let canonical = format!(
        r#"{{"crv":"{}","kty":"EC","x":"{}","y":"{}"}}"#,
        jwk["crv"].as_str().unwrap(),
        jwk["x"].as_str().unwrap(),
        jwk["y"].as_str().unwrap()
    );
    URL_SAFE_NO_PAD.encode(Sha256::digest(canonical.as_bytes()))
}

fn ath(token: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(token.as_bytes()))
}

static JTI: AtomicU64 = AtomicU64::new(0);

/// The claims of a good proof of `token` for a POST to the resource.
fn proof_claims(token: &str) -> Value {
    json!({
        "htm": "POST",
        "htu": RESOURCE,
        "iat": now(),
        "jti": format!("jti-{}-{}", now(), JTI.fetch_add(1, Ordering::SeqCst)),
        "ath": ath(token),
    })
}

fn proof_header(key: &Signer) -> Value {
    json!({"typ": "dpop+jwt", "alg": "ES256", "jwk": public_jwk(key)})
}

/// A proof signed by `key`, with `edit` applied to its claims.
fn proof_with(key: &Signer, token: &str, edit: impl FnOnce(&mut Value)) -> String {
    let mut claims = proof_claims(token);
    edit(&mut claims);
    key.mint_raw(&proof_header(key), &claims)
}

pub(crate) fn proof(key: &Signer, token: &str) -> String {
    proof_with(key, token, |_| {})
}

/// The world of a test: the authorization server, its key, the client's
/// key, and a token bound to it.
struct World {
    issuer: Issuer,
    as_key: Signer,
    client: Signer,
    token: String,
}

impl World {
    async fn new() -> World {
        let as_key = Signer::ec("as-1");
        let issuer = Issuer::start(&[&as_key]).await;
        let client = Signer::ec("client");
        let mut bound = claims(&issuer.url);
        bound["cnf"] = json!({"jkt": thumbprint(&client)});
        let token = as_key.mint(&bound);
        World {
            issuer,
            as_key,
            client,
            token,
        }
    }

    /// A token of this issuer bound to no key.
    fn unbound_token(&self) -> String {
        self.as_key.mint(&claims(&self.issuer.url))
    }

    fn server(&self, dpop: Dpop) -> Arc<Server> {
        self.server_with(dpop, |b| b)
    }

    fn server_with(
        &self,
        dpop: Dpop,
        edit: impl FnOnce(wymcp::ServerBuilder) -> wymcp::ServerBuilder,
    ) -> Arc<Server> {
        let whoami = Tool::new("whoami").description("Says who called").handler(
            |_: NoArgs, cx| async move {
                let subject = cx
                    .principal()
                    .map(|p| p.subject.clone())
                    .unwrap_or_default();
                Ok(ToolResult::text(subject))
            },
        );
        let builder = Server::builder()
            .auth(
                self.issuer.verifier().build().unwrap(),
                AuthConfig::new()
                    .resource(RESOURCE)
                    .authorization_server("https://auth.example.com")
                    .required_scopes([SCOPE])
                    .dpop(dpop),
            )
            .tool(whoami);
        Arc::new(edit(builder).build().unwrap())
    }
}

/// `whoami` with `Authorization: DPoP <token>` and these `DPoP` headers.
pub(crate) fn dpop_call(token: &str, proofs: &[&str]) -> Req {
    let mut req = Req::modern("r-1", "tools/call")
        .params(json!({"name": "whoami", "arguments": {}}))
        .set("Authorization", format!("DPoP {token}"));
    for proof in proofs {
        req = req.header("DPoP", proof);
    }
    req
}

pub(crate) async fn send(server: &Arc<Server>, token: &str, proofs: &[&str]) -> Reply {
    validated(server, dpop_call(token, proofs)).await
}

#[track_caller]
pub(crate) fn accepted(reply: &Reply) {
    let result = reply.ok(&json!("r-1"));
    assert!(reply.rejections.is_empty(), "{:?}", reply.rejections);
    assert_eq!(result["content"][0]["text"], "alice");
}

fn challenge(error: &str, description: &str) -> String {
    format!(
        r#"DPoP error="{error}", error_description="{description}", algs="{ALGS}", resource_metadata="{METADATA}", scope="{SCOPE}""#
    )
}

/// Refused by Auth: 401, -32600, the request's id, the DPoP challenge with
/// `error` and `description`, and both in the JSON-RPC message.
#[track_caller]
pub(crate) fn refused(reply: &Reply, error: &str, description: &str) {
    reply.rejected("Auth", 401, -32600, &json!("r-1"));
    assert_eq!(
        reply.header("www-authenticate"),
        challenge(error, description)
    );
    assert_eq!(
        reply.body["error"]["message"],
        format!("unauthorized: {error}: {description}")
    );
}

const NO_PROOF: &str = "the request carries no DPoP proof";
const TWO_PROOFS: &str = "the request carries more than one DPoP header";
const PROOF_TYP: &str = "the DPoP proof's typ is not dpop+jwt";
const PROOF_ALG: &str = "the DPoP proof's signing algorithm is not accepted";
const PROOF_HEADER: &str =
    "the DPoP proof's header has a parameter this server does not accept (crit, jku, x5u, x5c)";
const PROOF_JWK: &str = "the DPoP proof's jwk is not a public key of its algorithm's kind and size";
const PROOF_PRIVATE: &str = "the DPoP proof's jwk holds a private key";
const PROOF_SIGNATURE: &str = "the DPoP proof's signature does not verify";
const PROOF_HTM: &str = "the DPoP proof is for another HTTP method";
const PROOF_HTU: &str = "the DPoP proof is for another URL";
const PROOF_IAT: &str = "the DPoP proof's iat is outside the accepted window";
const PROOF_JTI: &str = "the DPoP proof's jti is missing or too long";
const PROOF_ATH: &str = "the DPoP proof's ath is not the hash of the access token";
const PROOF_REPLAYED: &str = "the DPoP proof was already used";
pub(crate) const PROOF_KEY: &str = "the DPoP proof's key is not the key the token is bound to";
const NONCE: &str = "the DPoP proof must carry the nonce this server provides";
pub(crate) const BOUND_AS_BEARER: &str = "a DPoP-bound token must be sent with the DPoP scheme";
const NOT_BOUND: &str = "the token is not bound to a DPoP key";
const DPOP_REQUIRED: &str = "this server accepts only DPoP-bound tokens";

// --- what is accepted -------------------------------------------------------

#[tokio::test]
async fn a_bound_token_with_its_proof_is_accepted_and_metadata_says_dpop() {
    let world = World::new().await;
    let server = world.server(Dpop::required());
    accepted(
        &send(
            &server,
            &world.token,
            &[&proof(&world.client, &world.token)],
        )
        .await,
    );
    // The htu compares after normalisation; the query is ignored.
    let loud = proof_with(&world.client, &world.token, |c| {
        c["htu"] = json!("HTTPS://MCP.example.com:443/mcp?x=1");
    });
    accepted(&send(&server, &world.token, &[&loud]).await);

    let doc = server.auth_config().unwrap().metadata_document().unwrap();
    assert_eq!(doc["dpop_bound_access_tokens_required"], json!(true));
    assert_eq!(
        doc["dpop_signing_alg_values_supported"],
        json!(["ES256", "EdDSA", "RS256", "PS256"])
    );
    let allowed = world.server(Dpop::allowed());
    let doc = allowed.auth_config().unwrap().metadata_document().unwrap();
    assert_eq!(doc["dpop_bound_access_tokens_required"], json!(false));
}

#[tokio::test]
async fn allowed_mode_takes_an_unbound_bearer_token_and_a_bound_dpop_one() {
    let world = World::new().await;
    let server = world.server(Dpop::allowed());
    let plain = world.unbound_token();
    accepted(&validated(&server, dpop_call(&plain, &[]).bearer(&plain)).await);
    accepted(
        &send(
            &server,
            &world.token,
            &[&proof(&world.client, &world.token)],
        )
        .await,
    );
}

#[tokio::test]
async fn no_credentials_are_challenged_with_the_dpop_scheme_and_its_algs() {
    let world = World::new().await;
    let no_auth =
        || Req::modern("r-1", "tools/call").params(json!({"name": "whoami", "arguments": {}}));
    let reply = validated(&world.server(Dpop::required()), no_auth()).await;
    reply.rejected("Auth", 401, -32600, &json!("r-1"));
    assert_eq!(
        reply.header("www-authenticate"),
        format!(r#"DPoP algs="{ALGS}", resource_metadata="{METADATA}", scope="{SCOPE}""#)
    );
    let reply = validated(&world.server(Dpop::allowed()), no_auth()).await;
    reply.rejected("Auth", 401, -32600, &json!("r-1"));
    assert_eq!(
        reply.header("www-authenticate"),
        format!(
            r#"Bearer resource_metadata="{METADATA}", scope="{SCOPE}", DPoP algs="{ALGS}", resource_metadata="{METADATA}", scope="{SCOPE}""#
        )
    );
}

// --- one test per refusal rule ----------------------------------------------

#[tokio::test]
async fn a_replayed_proof_is_refused_by_the_same_replica() {
    let world = World::new().await;
    let server = world.server(Dpop::required());
    let once = proof(&world.client, &world.token);
    accepted(&send(&server, &world.token, &[&once]).await);
    refused(
        &send(&server, &world.token, &[&once]).await,
        "invalid_dpop_proof",
        PROOF_REPLAYED,
    );
    // The place it holds is the ledger's, counted for its client.
    assert_eq!(server.ledger().held(wymcp::ledger::Kind::DpopProofs), 1);
}

#[tokio::test(flavor = "current_thread")]
async fn a_proof_replayed_to_another_replica_sharing_redis_is_refused() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let world = World::new().await;
    let replica = || {
        let store = RedisDpopReplay::new(&redis.url(), RedisConfig::default()).unwrap();
        world.server_with(Dpop::required(), |b| b.dpop_replay(store))
    };
    let (a, b) = (replica(), replica());
    let once = proof(&world.client, &world.token);
    accepted(&send(&a, &world.token, &[&once]).await);
    refused(
        &send(&b, &world.token, &[&once]).await,
        "invalid_dpop_proof",
        PROOF_REPLAYED,
    );
    // A fresh proof still goes through either.
    accepted(&send(&b, &world.token, &[&proof(&world.client, &world.token)]).await);
}

#[tokio::test(flavor = "current_thread")]
async fn a_replay_store_outage_refuses_503_with_retry_after() {
    let Some(mut redis) = RedisServer::start() else {
        return;
    };
    let world = World::new().await;
    let config = RedisConfig::default().timeouts(
        std::time::Duration::from_millis(300),
        std::time::Duration::from_millis(300),
    );
    let store = RedisDpopReplay::new(&redis.url(), config).unwrap();
    let server = world.server_with(Dpop::required(), |b| b.dpop_replay(store));
    redis.kill();
    let reply = send(
        &server,
        &world.token,
        &[&proof(&world.client, &world.token)],
    )
    .await;
    reply.rejected("Auth", 503, -32600, &json!("r-1"));
    assert_eq!(reply.header("retry-after"), "1");
    assert!(reply.headers.get("www-authenticate").is_none());
}

#[tokio::test]
async fn a_proof_for_another_url_is_refused() {
    let world = World::new().await;
    let server = world.server(Dpop::required());
    let other = proof_with(&world.client, &world.token, |c| {
        c["htu"] = json!("https://mcp.example.com/other");
    });
    refused(
        &send(&server, &world.token, &[&other]).await,
        "invalid_dpop_proof",
        PROOF_HTU,
    );
}

#[tokio::test]
async fn a_proof_for_another_method_is_refused() {
    let world = World::new().await;
    let server = world.server(Dpop::required());
    let get = proof_with(&world.client, &world.token, |c| c["htm"] = json!("GET"));
    refused(
        &send(&server, &world.token, &[&get]).await,
        "invalid_dpop_proof",
        PROOF_HTM,
    );
    assert_eq!(Method::POST.as_str(), "POST");
}

#[tokio::test]
async fn an_expired_iat_is_refused() {
    let world = World::new().await;
    let server = world.server(Dpop::required());
    let old = proof_with(&world.client, &world.token, |c| {
        c["iat"] = json!(now() - 301);
    });
    refused(
        &send(&server, &world.token, &[&old]).await,
        "invalid_dpop_proof",
        PROOF_IAT,
    );
}

#[tokio::test]
async fn a_future_iat_is_refused() {
    let world = World::new().await;
    let server = world.server(Dpop::required());
    let early = proof_with(&world.client, &world.token, |c| {
        c["iat"] = json!(now() + 301);
    });
    refused(
        &send(&server, &world.token, &[&early]).await,
        "invalid_dpop_proof",
        PROOF_IAT,
    );
}

#[tokio::test]
async fn a_proof_made_with_another_key_is_refused() {
    let world = World::new().await;
    let server = world.server(Dpop::required());
    let thief = Signer::ec("thief");
    refused(
        &send(&server, &world.token, &[&proof(&thief, &world.token)]).await,
        "invalid_dpop_proof",
        PROOF_KEY,
    );
}

#[tokio::test]
async fn a_bound_token_sent_as_bearer_is_refused() {
    let world = World::new().await;
    let server = world.server(Dpop::allowed());
    let bearer =
        dpop_call(&world.token, &[&proof(&world.client, &world.token)]).bearer(&world.token);
    refused(
        &validated(&server, bearer).await,
        "invalid_token",
        BOUND_AS_BEARER,
    );
}

#[tokio::test]
async fn a_bearer_token_where_dpop_is_required_is_refused() {
    let world = World::new().await;
    let server = world.server(Dpop::required());
    let plain = world.unbound_token();
    refused(
        &validated(&server, dpop_call(&plain, &[]).bearer(&plain)).await,
        "invalid_token",
        DPOP_REQUIRED,
    );
}

#[tokio::test]
async fn an_unbound_token_sent_as_dpop_is_refused() {
    let world = World::new().await;
    let server = world.server(Dpop::allowed());
    let plain = world.unbound_token();
    refused(
        &send(&server, &plain, &[&proof(&world.client, &plain)]).await,
        "invalid_token",
        NOT_BOUND,
    );
}

#[tokio::test]
async fn a_dpop_request_without_a_proof_or_with_two_is_refused() {
    let world = World::new().await;
    let server = world.server(Dpop::required());
    refused(
        &send(&server, &world.token, &[]).await,
        "invalid_dpop_proof",
        NO_PROOF,
    );
    let (one, two) = (
        proof(&world.client, &world.token),
        proof(&world.client, &world.token),
    );
    refused(
        &send(&server, &world.token, &[&one, &two]).await,
        "invalid_dpop_proof",
        TWO_PROOFS,
    );
}

#[tokio::test]
async fn an_unsigned_proof_is_refused() {
    let world = World::new().await;
    let server = world.server(Dpop::required());
    let header = json!({"typ": "dpop+jwt", "alg": "none", "jwk": public_jwk(&world.client)});
    let b64 = |v: &Value| URL_SAFE_NO_PAD.encode(serde_json::to_vec(v).unwrap());
    let unsigned = format!("{}.{}.", b64(&header), b64(&proof_claims(&world.token)));
    refused(
        &send(&server, &world.token, &[&unsigned]).await,
        "invalid_dpop_proof",
        PROOF_ALG,
    );
}

#[tokio::test]
async fn an_hmac_proof_is_refused() {
    let world = World::new().await;
    let server = world.server(Dpop::required());
    let header = json!({"typ": "dpop+jwt", "alg": "HS256", "jwk": public_jwk(&world.client)});
    let input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(serde_json::to_vec(&header).unwrap()),
        URL_SAFE_NO_PAD.encode(serde_json::to_vec(&proof_claims(&world.token)).unwrap())
    );
    let key = jsonwebtoken::EncodingKey::from_secret(b"shared").unwrap();
    let signature =
        jsonwebtoken::crypto::sign(input.as_bytes(), &key, jsonwebtoken::Algorithm::HS256).unwrap();
    let hmac = format!("{input}.{signature}");
    refused(
        &send(&server, &world.token, &[&hmac]).await,
        "invalid_dpop_proof",
        PROOF_ALG,
    );
}

#[tokio::test]
async fn a_proof_carrying_a_private_key_is_refused() {
    let world = World::new().await;
    let server = world.server(Dpop::required());
    let mut header = proof_header(&world.client);
    header["jwk"]["d"] = json!(URL_SAFE_NO_PAD.encode([7u8; 32]));
    let leaky = world.client.mint_raw(&header, &proof_claims(&world.token));
    refused(
        &send(&server, &world.token, &[&leaky]).await,
        "invalid_dpop_proof",
        PROOF_PRIVATE,
    );
}

#[tokio::test]
async fn a_proof_header_holding_anything_but_its_own_public_key_is_refused() {
    let world = World::new().await;
    let server = world.server(Dpop::required());
    let claims = proof_claims(&world.token);
    let with = |edit: &dyn Fn(&mut Value)| {
        let mut header = proof_header(&world.client);
        edit(&mut header);
        world.client.mint_raw(&header, &claims)
    };
    for (proof, description) in [
        (with(&|h| h["typ"] = json!("JWT")), PROOF_TYP),
        (
            with(&|h| h["jku"] = json!("https://evil.example/jwks")),
            PROOF_HEADER,
        ),
        (
            with(&|h| h["x5u"] = json!("https://evil.example/c")),
            PROOF_HEADER,
        ),
        (
            with(&|h| {
                h.as_object_mut().unwrap().remove("jwk");
                h["kid"] = json!("client");
            }),
            PROOF_JWK,
        ),
        (with(&|h| h["jwk"]["crv"] = json!("P-384")), PROOF_JWK),
        (
            with(&|h| h["jwk"]["x"] = json!(URL_SAFE_NO_PAD.encode([1u8; 32]))),
            PROOF_SIGNATURE,
        ),
    ] {
        let reply = send(&server, &world.token, &[&proof]).await;
        refused(&reply, "invalid_dpop_proof", description);
    }
}

#[tokio::test]
async fn a_wrong_ath_is_refused() {
    let world = World::new().await;
    let server = world.server(Dpop::required());
    let other = proof_with(&world.client, &world.token, |c| {
        c["ath"] = json!(ath("another token"));
    });
    refused(
        &send(&server, &world.token, &[&other]).await,
        "invalid_dpop_proof",
        PROOF_ATH,
    );
}

#[tokio::test]
async fn a_missing_or_overlong_jti_is_refused() {
    let world = World::new().await;
    let server = world.server(Dpop::required());
    for jti in [json!(null), json!(""), json!("j".repeat(257))] {
        let bad = proof_with(&world.client, &world.token, |c| c["jti"] = jti.clone());
        refused(
            &send(&server, &world.token, &[&bad]).await,
            "invalid_dpop_proof",
            PROOF_JTI,
        );
    }
}

#[tokio::test]
async fn the_nonce_flow_asks_for_the_servers_nonce_then_accepts_it() {
    let world = World::new().await;
    let server = world.server(Dpop::required().nonce_key([9u8; 32]));
    let reply = send(
        &server,
        &world.token,
        &[&proof(&world.client, &world.token)],
    )
    .await;
    refused(&reply, "use_dpop_nonce", NONCE);
    let nonce = reply.header("dpop-nonce").to_owned();
    assert!(!nonce.is_empty());
    let wrong = proof_with(&world.client, &world.token, |c| {
        c["nonce"] = json!("made-up");
    });
    let again = send(&server, &world.token, &[&wrong]).await;
    refused(&again, "use_dpop_nonce", NONCE);
    let with_nonce = proof_with(&world.client, &world.token, |c| c["nonce"] = json!(nonce));
    accepted(&send(&server, &world.token, &[&with_nonce]).await);
    // Another replica with the same key takes the same nonce: nothing is
    // stored.
    let other = world.server(Dpop::required().nonce_key([9u8; 32]));
    let with_nonce = proof_with(&world.client, &world.token, |c| c["nonce"] = json!(nonce));
    accepted(&send(&other, &world.token, &[&with_nonce]).await);
}

#[tokio::test]
async fn proofs_are_remembered_in_the_ledger_within_the_callers_share() {
    let world = World::new().await;
    let limits = wymcp::Limits {
        dpop_proofs_per_caller: 2,
        ..wymcp::Limits::default()
    };
    let server = world.server_with(Dpop::required(), |b| b.limits(limits));
    for _ in 0..2 {
        accepted(
            &send(
                &server,
                &world.token,
                &[&proof(&world.client, &world.token)],
            )
            .await,
        );
    }
    let reply = send(
        &server,
        &world.token,
        &[&proof(&world.client, &world.token)],
    )
    .await;
    reply.rejected("Auth", 429, -32600, &json!("r-1"));
    assert_eq!(reply.header("retry-after"), "1");
}

// --- 403 to a DPoP request ----------------------------------------------------

/// RFC 9449 §7.1: a request authenticated with the `DPoP` scheme and
/// lacking a scope is answered 403 with a `DPoP` challenge
/// (`insufficient_scope`, the scopes needed, `algs`, `resource_metadata`),
/// not a Bearer one; -32600 with the request's id. Both places a 403 is
/// made: the Auth stage (the server's required scope) and Dispatch (an
/// item's scopes). A Bearer request on an allowed-mode server keeps the
/// Bearer challenge.
#[tokio::test]
async fn a_dpop_request_lacking_a_scope_is_403_with_a_dpop_challenge() {
    let world = World::new().await;
    let writer = Tool::new("write_file")
        .scopes(["files:write"])
        .handler(|_: NoArgs, _| async { Ok(ToolResult::text("written")) });
    let server = world.server_with(Dpop::allowed(), |b| b.tool(writer));

    // A bound token without the server's required scope: the Auth stage.
    let mut narrow = claims(&world.issuer.url);
    narrow["cnf"] = json!({"jkt": thumbprint(&world.client)});
    narrow["scope"] = json!("files:read");
    let narrow = world.as_key.mint(&narrow);
    let reply = send(&server, &narrow, &[&proof(&world.client, &narrow)]).await;
    reply.rejected("Auth", 403, -32600, &json!("r-1"));
    assert_eq!(
        reply.header("www-authenticate"),
        format!(
            r#"DPoP error="insufficient_scope", scope="{SCOPE}", algs="{ALGS}", resource_metadata="{METADATA}""#
        )
    );

    // The server's scope but not the tool's: Dispatch names both.
    let call = |token: &str, scheme: &str| {
        Req::modern("r-1", "tools/call")
            .params(json!({"name": "write_file", "arguments": {}}))
            .set("Authorization", format!("{scheme} {token}"))
    };
    let reply = validated(
        &server,
        call(&world.token, "DPoP").header("DPoP", proof(&world.client, &world.token)),
    )
    .await;
    reply.rejected("Dispatch", 403, -32600, &json!("r-1"));
    assert_eq!(
        reply.header("www-authenticate"),
        format!(
            r#"DPoP error="insufficient_scope", scope="{SCOPE} files:write", algs="{ALGS}", resource_metadata="{METADATA}""#
        )
    );

    // A Bearer request (allowed mode, an unbound token): the Bearer one.
    let plain = world.unbound_token();
    let reply = validated(&server, call(&plain, "Bearer")).await;
    reply.rejected("Dispatch", 403, -32600, &json!("r-1"));
    assert_eq!(
        reply.header("www-authenticate"),
        format!(
            r#"Bearer error="insufficient_scope", scope="{SCOPE} files:write", resource_metadata="{METADATA}""#
        )
    );
}
