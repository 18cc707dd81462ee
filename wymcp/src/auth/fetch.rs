//! The resource server's client of its authorization server: GET a JSON
//! document (metadata, a key set), POST a form (introspection). Every wait
//! is bounded by one timeout, every body by a byte ceiling, and a URL is
//! checked once, when the verifier is built: `https` (through the `tls`
//! feature), or plain `http` to a loopback host, or plain `http` anywhere
//! when the configuration says so. Redirects are not followed.
//!
//! An outage is logged once: the first failure after a success (or after
//! start) is a warning, the failures after it are debug events, and the
//! first success after it says the server is reachable again.

use std::net::IpAddr;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Method, Request, StatusCode, Uri, header};
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;

use super::verifier::VerifierConfigError;

/// How long one exchange with the authorization server may take, connect to
/// last body byte, by default.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);
/// The largest response body read from the authorization server, by default.
pub(crate) const DEFAULT_MAX_RESPONSE_BYTES: usize = 256 * 1024;

#[cfg(feature = "tls")]
type Connector = hyper_rustls::HttpsConnector<HttpConnector>;
#[cfg(not(feature = "tls"))]
type Connector = HttpConnector;

/// The settings every request to the authorization server is made with.
#[derive(Debug, Clone)]
pub(crate) struct FetchSettings {
    pub(crate) timeout: Duration,
    pub(crate) max_response_bytes: usize,
    pub(crate) plain_http: bool,
}

impl Default for FetchSettings {
    fn default() -> Self {
        FetchSettings {
            timeout: DEFAULT_TIMEOUT,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            plain_http: false,
        }
    }
}

/// Why an exchange with the authorization server failed. Its text is for
/// the server's log: bounded, and never a body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum FetchError {
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    #[error("cannot connect or send: {0}")]
    Connect(String),
    #[error("answered HTTP {0}")]
    Status(u16),
    #[error("the body is larger than {0} bytes, or broke off")]
    Body(usize),
    #[error("the body is not a JSON object")]
    NotJson,
    #[error("{0}")]
    Unusable(&'static str),
}

/// A client of one authorization server's endpoints.
#[derive(Debug, Clone)]
pub(crate) struct Fetcher {
    client: Client<Connector, Full<Bytes>>,
    settings: FetchSettings,
}

impl Fetcher {
    pub(crate) fn new(settings: FetchSettings) -> Result<Self, VerifierConfigError> {
        let mut http = HttpConnector::new();
        http.set_connect_timeout(Some(settings.timeout));
        #[cfg(feature = "tls")]
        let connector = {
            http.enforce_http(false);
            hyper_rustls::HttpsConnectorBuilder::new()
                .with_provider_and_webpki_roots(rustls::crypto::ring::default_provider())
                .map_err(|e| VerifierConfigError::Tls(e.to_string()))?
                .https_or_http()
                .enable_http1()
                .wrap_connector(http)
        };
        #[cfg(not(feature = "tls"))]
        let connector = http;
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .build(connector);
        Ok(Fetcher { client, settings })
    }

    /// Checks `url` against this client's settings: absolute `http(s)`, a
    /// host, `https` only with the `tls` feature, plain `http` only to a
    /// loopback host unless allowed.
    pub(crate) fn check_url(&self, url: &str) -> Result<Uri, VerifierConfigError> {
        check_url(url, self.settings.plain_http)
    }

    /// How long one exchange may take.
    pub(crate) fn timeout(&self) -> Duration {
        self.settings.timeout
    }

    /// GETs a JSON object.
    pub(crate) async fn get_json(&self, url: &Uri) -> Result<Value, FetchError> {
        let request = Request::builder()
            .method(Method::GET)
            .uri(url.clone())
            .header(header::ACCEPT, HeaderValue::from_static("application/json"))
            .body(Full::new(Bytes::new()));
        self.exchange(request).await
    }

    /// POSTs an `application/x-www-form-urlencoded` body, authenticated with
    /// `authorization`, and reads a JSON object.
    pub(crate) async fn post_form(
        &self,
        url: &Uri,
        authorization: &HeaderValue,
        form: String,
    ) -> Result<Value, FetchError> {
        let request = Request::builder()
            .method(Method::POST)
            .uri(url.clone())
            .header(header::ACCEPT, HeaderValue::from_static("application/json"))
            .header(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/x-www-form-urlencoded"),
            )
            .header(header::AUTHORIZATION, authorization.clone())
            .body(Full::new(Bytes::from(form)));
        self.exchange(request).await
    }

    async fn exchange(
        &self,
        request: Result<Request<Full<Bytes>>, http::Error>,
    ) -> Result<Value, FetchError> {
        let request = request.map_err(|e| FetchError::Connect(bounded(&e.to_string())))?;
        let limit = self.settings.max_response_bytes;
        let exchange = async {
            let response = self
                .client
                .request(request)
                .await
                .map_err(|e| FetchError::Connect(bounded(&error_chain(&e))))?;
            let status = response.status();
            if status != StatusCode::OK {
                return Err(FetchError::Status(status.as_u16()));
            }
            let body = Limited::new(response.into_body(), limit)
                .collect()
                .await
                .map_err(|_| FetchError::Body(limit))?
                .to_bytes();
            match serde_json::from_slice::<Value>(&body) {
                Ok(value @ Value::Object(_)) => Ok(value),
                _ => Err(FetchError::NotJson),
            }
        };
        tokio::time::timeout(self.settings.timeout, exchange)
            .await
            .unwrap_or(Err(FetchError::Timeout(self.settings.timeout)))
    }
}

/// An error and its sources, as one line.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// At most 200 characters of `text`, for a log line.
fn bounded(text: &str) -> String {
    text.chars().take(200).collect()
}

pub(crate) fn check_url(url: &str, plain_http: bool) -> Result<Uri, VerifierConfigError> {
    let bad = |reason: &'static str| VerifierConfigError::Url {
        url: bounded(url),
        reason,
    };
    let uri: Uri = url.parse().map_err(|_| bad("not a URL"))?;
    let host = uri.host().ok_or_else(|| bad("not an absolute URL"))?;
    match uri.scheme_str() {
        Some("https") => {
            if cfg!(feature = "tls") {
                Ok(uri)
            } else {
                Err(bad(
                    "https needs wymcp's `tls` feature, which this build leaves out",
                ))
            }
        }
        Some("http") if plain_http || is_loopback(host) => Ok(uri),
        Some("http") => Err(bad(
            "plain http to a host that is not loopback: use https, or allow plain http",
        )),
        _ => Err(bad("the scheme must be https (or http)")),
    }
}

/// Checks a URL the authorization server named (a metadata document's
/// `jwks_uri`), read from the document at `from`: `https`, or plain
/// `http` only on `from`'s own origin, which the operator configured.
/// Allowing plain http elsewhere was the operator's choice for the URLs
/// they wrote, never for the ones a server answers with.
pub(crate) fn check_discovered_url(url: &str, from: &Uri) -> Result<Uri, VerifierConfigError> {
    let uri = check_url(url, true)?;
    let same_origin = uri.scheme() == from.scheme()
        && uri.host().map(str::to_ascii_lowercase) == from.host().map(str::to_ascii_lowercase)
        && uri.port_u16() == from.port_u16();
    if uri.scheme_str() == Some("https") || same_origin {
        Ok(uri)
    } else {
        Err(VerifierConfigError::Url {
            url: bounded(url),
            reason: "a discovered URL must be https, or on the configured origin",
        })
    }
}

fn is_loopback(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<IpAddr>()
            .is_ok_and(|address| address.is_loopback())
}

/// Whether the authorization server is unreachable: each outage is logged
/// once, and its end once (when, the crate's [`outage`](crate::outage)
/// decides; what, under `wymcp::auth`, this says).
#[derive(Debug, Default)]
pub(crate) struct Outage {
    state: crate::outage::Outage,
}

impl Outage {
    /// Records a failed exchange with `what` (an endpoint's role).
    pub(crate) fn failed(&self, what: &str, url: &Uri, error: &FetchError) {
        if self.state.failed() {
            tracing::warn!(
                target: "wymcp::auth",
                %url,
                %error,
                "{what} unreachable: tokens that need it are refused (401) until it answers"
            );
        } else {
            tracing::debug!(target: "wymcp::auth", %url, %error, "{what} still unreachable");
        }
    }

    /// Records a successful exchange.
    pub(crate) fn succeeded(&self, what: &str, url: &Uri) {
        if self.state.succeeded() {
            tracing::info!(target: "wymcp::auth", %url, "{what} reachable again");
        }
    }

    /// Whether the last exchange failed.
    pub(crate) fn is_down(&self) -> bool {
        self.state.is_down()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_https_or_loopback_http_unless_plain_http_is_allowed() {
        assert!(check_url("http://127.0.0.1:8080/jwks", false).is_ok());
        assert!(check_url("http://localhost/jwks", false).is_ok());
        assert!(check_url("http://[::1]:9/jwks", false).is_ok());
        assert!(check_url("http://auth.example.com/jwks", false).is_err());
        assert!(check_url("http://auth.example.com/jwks", true).is_ok());
        assert!(check_url("ftp://auth.example.com/jwks", true).is_err());
        assert!(check_url("/jwks", true).is_err());
        assert!(check_url("not a url", true).is_err());
        assert_eq!(
            check_url("https://auth.example.com/jwks", false).is_ok(),
            cfg!(feature = "tls")
        );
    }

    #[test]
    fn a_discovered_url_is_https_or_on_the_configured_origin() {
        let from: Uri = "http://127.0.0.1:8080/.well-known/oauth-authorization-server"
            .parse()
            .unwrap();
        let check = |url: &str| check_discovered_url(url, &from).is_ok();
        assert!(check("http://127.0.0.1:8080/jwks"));
        // Another port, another loopback host, another host: not the
        // origin the operator configured.
        assert!(!check("http://127.0.0.1:6379/jwks"));
        assert!(!check("http://localhost:8080/jwks"));
        assert!(!check("http://[::1]:8080/jwks"));
        assert!(!check("http://auth.example.com/jwks"));
        assert!(!check("ftp://127.0.0.1:8080/jwks"));
        assert_eq!(
            check("https://keys.example.com/jwks"),
            cfg!(feature = "tls")
        );
    }

    #[test]
    fn an_outage_is_down_from_the_first_failure_to_the_next_success() {
        let outage = Outage::default();
        let url: Uri = "http://127.0.0.1/jwks".parse().unwrap();
        assert!(!outage.is_down());
        outage.failed("the key set", &url, &FetchError::Status(503));
        outage.failed("the key set", &url, &FetchError::Status(503));
        assert!(outage.is_down());
        outage.succeeded("the key set", &url);
        assert!(!outage.is_down());
    }
}
