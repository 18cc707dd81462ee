//! `OriginCheck`, the first wire check: is this request allowed to come from
//! where it says it comes from?
//!
//! **What it checks.** The `Origin` header, when present, against the allowed
//! origins, and the `Host` header (or, over HTTP/2, the `:authority`) against
//! the allowed hosts. The `Host` check is what defeats DNS rebinding: a page on
//! `evil.example.com` whose name an attacker re-points at `127.0.0.1` reaches
//! a loopback server with `Host: evil.example.com`, and a loopback server that
//! only answers to loopback names refuses it.
//!
//! **Why it sits first.** Nothing has validated where the request comes from
//! when it arrives, so it runs before anything is parsed: a refused origin
//! costs no body read, and no later stage ever sees a request it refuses.
//!
//! **What it answers**, in this order, every envelope with `"id": null`
//! (nothing is classified yet) and code -32600 (Invalid Request; the spec lets
//! a refused origin's body be any id-less JSON-RPC error):
//!
//! 1. more than one `Origin` or more than one `Host` header → 400;
//! 2. a `Host` that is not allowed → 403;
//! 3. a present `Origin` that is not allowed → 403.
//!
//! An absent `Origin` passes: non-browser clients send none, and a browser
//! always does. An absent `Host` (and no `:authority`) passes too, for the
//! same reason: the attack this check defeats comes from a browser.
//!
//! **The policy** (set on [`ServerBuilder`](crate::ServerBuilder)):
//!
//! * **Hosts**: the hosts given to
//!   [`allowed_hosts`](crate::ServerBuilder::allowed_hosts), when given (an
//!   entry without a port allows any port); otherwise, when the server is
//!   bound to a loopback address, only `localhost`, `127.0.0.1` and `[::1]`,
//!   with any port; otherwise any host.
//! * **Origins**: the origins given to
//!   [`allowed_origins`](crate::ServerBuilder::allowed_origins), when given;
//!   otherwise only loopback origins: `http://` or `https://` with host
//!   `localhost`, `127.0.0.1` or `[::1]`, with any port. A server meant for
//!   browser pages elsewhere lists their origins.
//! * **Bound to loopback**: the address [`wymcp::serve`](crate::serve())
//!   serves on, which it tells the chain; else the one given to
//!   [`bound_to`](crate::ServerBuilder::bound_to); else, knowing neither, the
//!   server is taken to be loopback-bound: the check fails closed, and a
//!   server served some other way on a public address says so.
//!
//! Host names and schemes compare ASCII-case-insensitively; an origin's
//! default port (80 for `http`, 443 for `https`) equals its absence.

use http::{HeaderValue, StatusCode, header};

use crate::exchange::Exchange;
use crate::origin::BoundTo;
use crate::protocol::error::ErrorCode;
use crate::reply::Flow;
use crate::reply::Rejection;
use crate::stage::Stage;

/// Checks `Origin` and `Host` before anything is parsed; see the module
/// documentation for the policy.
#[derive(Debug, Clone, Copy, Default)]
pub struct OriginCheck;

impl Stage for OriginCheck {
    async fn run(ex: &mut Exchange<'_>) -> Flow {
        check(ex)
    }
}

fn check(ex: &Exchange<'_>) -> Flow {
    let headers = ex.headers();
    let Ok(origin) = single(headers.get_all(header::ORIGIN).iter()) else {
        return ex.reject(Rejection::new(
            StatusCode::BAD_REQUEST,
            ErrorCode::INVALID_REQUEST,
            "more than one Origin header",
        ));
    };
    let Ok(host) = single(headers.get_all(header::HOST).iter()) else {
        return ex.reject(Rejection::new(
            StatusCode::BAD_REQUEST,
            ErrorCode::INVALID_REQUEST,
            "more than one Host header",
        ));
    };
    let server = ex.server();
    let bound = ex
        .parts()
        .extensions
        .get::<BoundTo>()
        .map(|b| b.0)
        .or(server.bound_to());
    let host = host
        .map(HeaderValue::as_bytes)
        .or_else(|| ex.parts().uri.authority().map(|a| a.as_str().as_bytes()));
    if let Some(host) = host
        && !server.allows_host(host, bound)
    {
        return ex.reject(Rejection::new(
            StatusCode::FORBIDDEN,
            ErrorCode::INVALID_REQUEST,
            "the Host header names a host this server does not answer to",
        ));
    }
    if let Some(origin) = origin
        && !server.allows_origin(origin.as_bytes())
    {
        return ex.reject(Rejection::new(
            StatusCode::FORBIDDEN,
            ErrorCode::INVALID_REQUEST,
            "the Origin header names an origin this server does not allow",
        ));
    }
    Flow::Continue
}

/// A header that must appear at most once appeared more often.
struct Repeated;

/// The one value of a header, if any; `Err` when there are several.
fn single<'h>(
    mut values: impl Iterator<Item = &'h HeaderValue>,
) -> Result<Option<&'h HeaderValue>, Repeated> {
    let first = values.next();
    match values.next() {
        Some(_) => Err(Repeated),
        None => Ok(first),
    }
}
