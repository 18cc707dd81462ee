//! The invariants wymcp's fuzz targets check, in one place.
//!
//! The libFuzzer targets under `fuzz/` call these functions on every input,
//! and `tests/it/fuzz_corpus.rs` replays the committed corpus
//! (`fuzz/corpus/<target>/*`) through the very same functions in a plain
//! `cargo test`, with no fuzzing engine and no nightly toolchain. Each check
//! takes the raw input bytes and returns `Err` describing the broken
//! invariant; a fuzz target panics with it, so libFuzzer records the input.
//!
//! | target | reads | asserts |
//! |---|---|---|
//! | [`chain`] | a whole POST, spelled as text: request target, headers, body | every answer is in the chain's table, well formed, with the id the rejection-id rule allows |
//! | [`dispatch`](chain::check_dispatch) | a body; the standard headers derived from it | the same, for bodies that pass the wire checks and reach Validate and Dispatch |
//! | [`classify`] | a JSON value (and a protocol-version header) | classification and the era agree with slower reference implementations |
//! | [`header_value`] | bytes as a header value, a base64 payload, a string to encode | strict base64 accepts exactly the canonical encodings; encode/decode round trips |
//! | [`request_state`] | bytes as a `requestState`, a state to seal, a mutation, params | nothing unseals unless sealed under the key for that binding; sealed states round-trip |
//! | [`stdio_lines`] | a ceiling, read sizes, a byte stream | the stdio line reader splits as a reference does, whatever the reads, and holds no more than the ceiling and one read |
//! | [`jwk_set`] | a JSON document as a JWK Set | only a `keys` array is a set; only usable verifying keys are kept; selection by `kid` and algorithm agrees with a reference |
//! | [`jwt`] | a token, checked against a fixed key | nothing but a token signed by the key verifies; a changed byte never does; `none`, HMAC and embedded keys are refused or never used |
//! | [`bus_message`] | bytes as read from the change bus's Redis channel | accepted only behind the shared key's tag and within the bound; a signed message is heard, a changed or foreign one never; changes round-trip |
//! | [`task_record`] | a version, an id and bytes as a task record read back from Redis | opened only behind the shared key's tag for that id and version, within the bound; sealed records round-trip |
//! | [`introspection`] | a JSON value as an RFC 7662 answer | acceptance only for `active: true` and claims of the right type that hold; the principal is the answer's |
//! | [`session_token`] | bytes as a 2025 `Mcp-Session-Id`, as client capabilities, as sealed content | nothing opens unless minted under the key for that subject; a minted token opens to what was kept, names only, and stays small |
//! | [`sealed_id`] | bytes as a mid-call request's id, as a response, as two callers | nothing opens unless sealed under the key; a sealed id opens for its caller only (`403` for another), `late` past its deadline |

pub mod bus_message;
pub mod capture;
pub mod chain;
pub mod classify;
pub mod header_value;
pub mod introspection;
pub mod jwk_set;
pub mod jwt;
pub mod request_state;
pub mod sealed_id;
pub mod session_token;
pub mod stdio_lines;
pub mod task_record;

/// A check: `Err` names the invariant an input broke.
pub type Check = fn(&[u8]) -> Result<(), String>;

/// Every fuzz target, by the name of its binary and corpus directory.
pub const TARGETS: &[(&str, Check)] = &[
    ("chain", chain::check_chain),
    ("dispatch", chain::check_dispatch),
    ("classify", classify::check_classify),
    ("header_value", header_value::check_header_value),
    ("request_state", request_state::check_request_state),
    ("stdio_lines", stdio_lines::check_stdio_lines),
    ("jwk_set", jwk_set::check_jwk_set),
    ("jwt", jwt::check_jwt),
    ("introspection", introspection::check_introspection),
    ("session_token", session_token::check_session_token),
    ("sealed_id", sealed_id::check_sealed_id),
    ("bus_message", bus_message::check_bus_message),
    ("task_record", task_record::check_task_record),
];

/// `Err(format!(..))` unless the condition holds.
macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err(format!($($fmt)+));
        }
    };
}
pub(crate) use ensure;
