//! MRTR (multi round-trip requests, SEP-2322): `input_required` results, the
//! retry's `inputResponses`, and the sealing of `requestState`.
//!
//! # The API in one screen
//!
//! A `tools/call`, `prompts/get` or `resources/read` handler that needs
//! something from the client answers an [`InputRequired`] instead of its
//! result; the client answers the listed requests and retries the same call
//! with `inputResponses` and the `requestState` echoed. The handler reads them
//! through [`Inputs`]:
//!
//! ```
//! use serde_json::json;
//! use wymcp::mrtr::{InputKind, InputRequest, InputRequired, Inputs};
//!
//! fn greet(inputs: &Inputs) -> Result<String, InputRequired> {
//!     if let Some(name) = inputs.accepted("user_name").and_then(|c| c.get("name")) {
//!         return Ok(format!("Hello, {name}!"));
//!     }
//!     let mut ask = inputs.input_required();
//!     if inputs.declares(InputKind::Elicitation) {
//!         ask = ask
//!             .request(
//!                 "user_name",
//!                 InputRequest::elicit(
//!                     "What is your name?",
//!                     json!({"type": "object", "properties": {"name": {"type": "string"}}}),
//!                 ),
//!             )
//!             .expect("declared, so allowed");
//!     }
//!     Err(ask.state(b"round-1".to_vec()))
//! }
//! # let _ = greet;
//! ```
//!
//! * [`Inputs::from_request`] builds the view of one request (Dispatch calls
//!   it): it unseals `requestState` (a failure is -32602, 400 on
//!   2026-07-28), checks that
//!   `inputResponses` is an object, and reads the declared client
//!   capabilities from `_meta["io.modelcontextprotocol/clientCapabilities"]`.
//! * [`InputRequired::request`] refuses (with [`UndeclaredInput`]) input the
//!   client did not declare it can give, so a handler can never send it: the
//!   kind (`elicitation`, `sampling`, `roots`), and the mode or option used
//!   (a URL elicitation needs `elicitation.url`, a form one `elicitation.form`
//!   or an empty `elicitation`; sampling with `tools`/`toolChoice` needs
//!   `sampling.tools`, with `includeContext` other than `"none"`
//!   `sampling.context`). [`Inputs::allows`] asks first;
//!   [`Inputs::require`] turns a capability a handler cannot do without into
//!   the -32021 error (400 on 2026-07-28) with `data.requiredCapabilities`.
//! * [`InputRequired::into_result`] renders the result object
//!   (`resultType: "input_required"`, `inputRequests`, the sealed
//!   `requestState`) for the request the [`Inputs`] came from.
//!
//! # Sealing
//!
//! The handler's own state bytes travel through the client, so they are
//! attacker-controlled. The sealer protects them with HMAC-SHA256 under a
//! server key. The token is base64url (no padding) of
//!
//! ```text
//! version (1) | key id length (1) | key id | expiry, unix seconds (8, big-endian) | state | tag (32)
//! ```
//!
//! and the tag covers all of that **and** what the state is bound to, which is
//! never sent: the principal's subject, the method, and a SHA-256 digest of the
//! params that identify the request (the params minus `_meta`,
//! `inputResponses` and `requestState`, in a canonical form: keys sorted, no
//! whitespace). A state presented with another principal, another method,
//! other arguments, after its expiry, under a key the server no longer holds,
//! or altered in any byte fails to unseal. Tags are compared in constant time.
//! Sealing gives integrity, not secrecy: the client can read the state bytes,
//! so put no secret in them.
//!
//! Keys: [`ServerBuilder::sealing_key`](crate::ServerBuilder::sealing_key) sets
//! the key that seals (earlier ones stay accepted),
//! [`accept_sealing_key`](crate::ServerBuilder::accept_sealing_key) adds a key
//! that only unseals (a retired key during rotation). Without either, each
//! process draws a random key at start-up: states do not survive a restart or
//! cross replicas, which is the safe default. The lifetime is
//! [`request_state_ttl`](crate::ServerBuilder::request_state_ttl), 10 minutes
//! by default. A state is not single-use: replay within its lifetime, by the
//! same principal for the same request, yields the same answer.

mod input;
mod inputs;
mod round;
pub(crate) mod seal;

pub use input::{
    InputKind, InputRequest, InputRequired, MRTR_METHODS, UndeclaredInput, missing_capabilities,
};
pub use inputs::Inputs;
#[cfg(not(feature = "fuzzing"))]
pub(crate) use seal::{Binding, Sealer};
#[cfg(feature = "fuzzing")]
pub use seal::{Binding, Sealer, UnsealError, params_digest};
pub use seal::{DEFAULT_TTL, KeyError, MIN_SECRET_LEN, SealingKey};
