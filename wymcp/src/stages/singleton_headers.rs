//! `SingletonHeaders` (wire check): refuses a request that repeats a header
//! the protocol reads as one value: `MCP-Protocol-Version`, `Mcp-Method`,
//! `Mcp-Name`, any `Mcp-Param-{Name}`, `Authorization`.
//!
//! **Why here.** Two copies of a mirrored header let a gateway route on one
//! while the server reads the other. The check runs before the checks that
//! read these headers (protocol fields, header binding), which may then read
//! "the" value; after auth, which reads `Authorization` itself (see
//! [`Auth`](super::Auth) for a repeated `Authorization` when an authenticator
//! is configured). It applies to every kind and era: a repeated header is
//! wrong whatever the body says.
//!
//! **What it answers.** `400`, `-32600`, a message naming the first repeated
//! header (in the order above; an `Mcp-Param-*` header is named as received,
//! `http` having lower-cased its `{Name}`) and `data.header` with the same
//! name; the id by the rejection-id rule.

use http::{HeaderName, StatusCode, header};
use serde_json::json;

use crate::exchange::Exchange;
use crate::protocol::error::ErrorCode;
use crate::protocol::headers::{MCP_METHOD, MCP_NAME, MCP_PARAM_PREFIX, MCP_PROTOCOL_VERSION};
use crate::protocol::text::truncated;
use crate::reply::Flow;
use crate::reply::Rejection;
use crate::stage::Stage;

/// Refuses a repeated singleton header.
#[derive(Debug, Clone, Copy, Default)]
pub struct SingletonHeaders;

const FIXED: [(HeaderName, &str); 4] = [
    (MCP_PROTOCOL_VERSION, "MCP-Protocol-Version"),
    (MCP_METHOD, "Mcp-Method"),
    (MCP_NAME, "Mcp-Name"),
    (header::AUTHORIZATION, "Authorization"),
];

impl Stage for SingletonHeaders {
    async fn run(ex: &mut Exchange<'_>) -> Flow {
        match repeated_header(ex.headers()) {
            None => Flow::Continue,
            Some(name) => ex.reject(
                Rejection::new(
                    StatusCode::BAD_REQUEST,
                    ErrorCode::INVALID_REQUEST,
                    format!(
                        "the `{}` header must appear at most once",
                        truncated(name.as_str())
                    ),
                )
                .data(json!({ "header": name })),
            ),
        }
    }
}

/// The display name of the first singleton header sent more than once.
fn repeated_header(headers: &http::HeaderMap) -> Option<String> {
    // No name with a second value: nothing can be repeated (the usual case,
    // answered without a lookup).
    if headers.len() == headers.keys_len() {
        return None;
    }
    let repeated = |name: &HeaderName| headers.get_all(name).iter().nth(1).is_some();
    if let Some((_, display)) = FIXED.iter().find(|(name, _)| repeated(name)) {
        return Some((*display).to_owned());
    }
    headers
        .keys()
        .find(|name| name.as_str().starts_with(MCP_PARAM_PREFIX) && repeated(name))
        .map(|name| format!("Mcp-Param-{}", &name.as_str()[MCP_PARAM_PREFIX.len()..]))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use http::{HeaderMap, HeaderValue};

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(
                HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        map
    }

    #[test]
    fn each_singleton_is_named() {
        for (sent, named) in [
            ("mcp-protocol-version", "MCP-Protocol-Version"),
            ("Mcp-Method", "Mcp-Method"),
            ("MCP-NAME", "Mcp-Name"),
            ("authorization", "Authorization"),
            ("Mcp-Param-Region", "Mcp-Param-region"),
        ] {
            let map = headers(&[(sent, "a"), ("accept", "x"), (sent, "a")]);
            assert_eq!(repeated_header(&map).as_deref(), Some(named));
        }
    }

    #[test]
    fn single_and_unrelated_repeats_pass() {
        let map = headers(&[
            ("mcp-method", "a"),
            ("mcp-param-a", "1"),
            ("mcp-param-b", "1"),
            ("accept", "x"),
            ("accept", "y"),
            ("mcp-paramx", "1"),
            ("mcp-paramx", "2"),
        ]);
        assert_eq!(repeated_header(&map), None);
    }
}
