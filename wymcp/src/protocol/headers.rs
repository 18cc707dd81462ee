//! Header values as the wire checks read them.
//!
//! The MCP standard headers (`MCP-Protocol-Version`, `Mcp-Method`,
//! `Mcp-Name`, `Mcp-Param-{Name}`) mirror body fields. Before a header value
//! is compared with its body value it is
//!
//! 1. stripped of HTTP optional whitespace (spaces and tabs at either end,
//!    RFC 9110 §5.5),
//! 2. checked for characters a plain header value may carry: visible ASCII,
//!    space and tab; anything else (obs-text, that is bytes `0x80`–`0xFF`)
//!    is an invalid character, and
//! 3. for `Mcp-Name` and `Mcp-Param-{Name}` only, decoded from the sentinel
//!    form `=?base64?{standard base64 of the UTF-8 bytes}?=` when it has
//!    exactly that lowercase prefix and suffix. The decoder is strict: the
//!    standard alphabet, a length that is a multiple of four, `=` padding only
//!    at the end and only as needed, zero bits after the last character. A
//!    value with an upper-case `=?BASE64?` or without the suffix is taken
//!    literally.
//!
//! [`HeaderParam`] describes one `x-mcp-header` annotation of a tool, the
//! row `HeaderBinding` checks for `Mcp-Param-{Name}`: [`header_params`]
//! finds them in a tool's `inputSchema` and checks each annotation's rules,
//! and [`Spelling`] is how an argument's value reads in its header, and
//! whether a header's value spells it.

// Public for the fuzz targets (`wymcp::fuzzing`), crate-private otherwise.
#![cfg_attr(not(feature = "fuzzing"), allow(unreachable_pub, dead_code))]

use std::borrow::Cow;

use http::{HeaderName, HeaderValue};
use serde_json::Value;

/// `MCP-Protocol-Version`: the revision the request speaks.
pub const MCP_PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
/// `Mcp-Method`: mirrors the body's `method`.
pub const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
/// `Mcp-Name`: mirrors `params.name` (`tools/call`, `prompts/get`) or
/// `params.uri` (`resources/read`).
pub const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");
/// `Mcp-Session-Id`: on 2025-11-25, the token a server may give at
/// `initialize` and the client echoes on every later request. wymcp's is a
/// sealed token, not a session (nothing is kept): see the legacy path's
/// mid-call requests.
pub(crate) const MCP_SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
/// The lower-case prefix of every `Mcp-Param-{Name}` header name.
pub const MCP_PARAM_PREFIX: &str = "mcp-param-";

const SENTINEL_PREFIX: &str = "=?base64?";
const SENTINEL_SUFFIX: &str = "?=";

/// Why a header value cannot be compared with its body value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HeaderValueError {
    /// The value carries a byte a plain header value may not (obs-text or a
    /// control character other than tab).
    #[error("the value has characters a plain header value may not carry")]
    InvalidCharacters,
    /// The value has the `=?base64?…?=` form but its payload is not strict
    /// base64.
    #[error("the `=?base64?…?=` value is not valid base64: {0}")]
    Base64(#[from] Base64Error),
    /// The decoded `=?base64?…?=` payload is not UTF-8.
    #[error("the decoded `=?base64?…?=` value is not UTF-8")]
    NotUtf8,
}

/// Why a base64 payload was refused by the strict decoder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Base64Error {
    /// The length is not a multiple of four (missing or extra padding).
    #[error("its length is not a multiple of four")]
    Length,
    /// A character outside the standard alphabet, or `=` before the end.
    #[error("it has a character outside the base64 alphabet at byte {0}")]
    Character(usize),
    /// More than two `=`, or bits set after the last encoded byte.
    #[error("its padding is not canonical")]
    Padding,
}

/// Strips HTTP optional whitespace (space and horizontal tab) from both ends.
#[must_use]
pub fn trim_ows(bytes: &[u8]) -> &[u8] {
    let is_ows = |b: &u8| *b == b' ' || *b == b'\t';
    let start = bytes.iter().position(|b| !is_ows(b)).unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|b| !is_ows(b))
        .map_or(start, |i| i + 1);
    &bytes[start..end]
}

/// The value with optional whitespace stripped, when every byte is one a
/// plain header value may carry (visible ASCII, space, tab). No sentinel
/// decoding: this is how `MCP-Protocol-Version` and `Mcp-Method` are read.
pub fn plain_text(value: &HeaderValue) -> Result<&str, HeaderValueError> {
    // `to_str` checks exactly these bytes (visible ASCII, space, tab) and,
    // all of them being ASCII, skips a UTF-8 check of its own: every
    // request reads three or four values this way.
    let text = value
        .to_str()
        .map_err(|_| HeaderValueError::InvalidCharacters)?;
    Ok(text.trim_matches(|c| c == ' ' || c == '\t'))
}

/// The value as `Mcp-Name` and `Mcp-Param-{Name}` carry it: [`plain_text`],
/// then decoded when it has the exact `=?base64?…?=` form.
pub fn decoded_text(value: &HeaderValue) -> Result<Cow<'_, str>, HeaderValueError> {
    let text = plain_text(value)?;
    match sentinel_payload(text) {
        Some(payload) => {
            let bytes = base64_decode(payload.as_bytes())?;
            String::from_utf8(bytes)
                .map(Cow::Owned)
                .map_err(|_| HeaderValueError::NotUtf8)
        }
        None => Ok(Cow::Borrowed(text)),
    }
}

fn sentinel_payload(text: &str) -> Option<&str> {
    if text.len() < SENTINEL_PREFIX.len() + SENTINEL_SUFFIX.len() {
        return None;
    }
    text.strip_prefix(SENTINEL_PREFIX)?
        .strip_suffix(SENTINEL_SUFFIX)
}

/// Encodes a string value as a client puts it in `Mcp-Name` or
/// `Mcp-Param-{Name}`: as-is when it is safe plain ASCII (visible characters
/// and inner spaces) and does not look like the sentinel, else
/// `=?base64?…?=`.
#[must_use]
pub fn encode_value(value: &str) -> Cow<'_, str> {
    let bytes = value.as_bytes();
    let safe = bytes.iter().all(|&b| (b' '..=b'~').contains(&b))
        && bytes.first() != Some(&b' ')
        && bytes.last() != Some(&b' ')
        && sentinel_payload(value).is_none();
    if safe {
        Cow::Borrowed(value)
    } else {
        Cow::Owned(format!(
            "{SENTINEL_PREFIX}{}{SENTINEL_SUFFIX}",
            base64_encode(bytes)
        ))
    }
}

/// Standard, padded base64 (RFC 4648 §4), decoded strictly: `=` only as
/// the last one or two characters, and only as needed, zero bits after the
/// last encoded byte.
const STRICT: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// Decodes standard, padded base64 (RFC 4648 §4) strictly: the length is a
/// multiple of four, `=` appears only as the last one or two characters of
/// the last quantum, and the bits after the last encoded byte are zero.
pub fn base64_decode(input: &[u8]) -> Result<Vec<u8>, Base64Error> {
    use base64::{DecodeError, Engine as _};
    if !input.len().is_multiple_of(4) {
        return Err(Base64Error::Length);
    }
    if input.iter().rev().take_while(|&&b| b == b'=').count() > 2 {
        return Err(Base64Error::Padding);
    }
    STRICT.decode(input).map_err(|error| match error {
        DecodeError::InvalidByte(at, _) => Base64Error::Character(at),
        DecodeError::InvalidLength(_) => Base64Error::Length,
        DecodeError::InvalidLastSymbol { .. } | DecodeError::InvalidPadding => Base64Error::Padding,
    })
}

/// Encodes bytes as standard, padded base64 (RFC 4648 §4).
#[must_use]
pub fn base64_encode(bytes: &[u8]) -> String {
    use base64::Engine as _;
    STRICT.encode(bytes)
}

/// The JSON type an `x-mcp-header` annotation sits on; only these three may
/// be mirrored into a header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HeaderParamType {
    /// `"type": "string"`: compared exactly, after sentinel decoding.
    String,
    /// `"type": "integer"`: compared numerically (`42.0` equals `42`).
    Integer,
    /// `"type": "boolean"`: spelled `true` or `false`.
    Boolean,
}

/// One `x-mcp-header` annotation of a tool's `inputSchema`: the tool argument
/// at `path` is mirrored into the header `Mcp-Param-{name}`.
///
/// The tool registry fills these at registration (after checking the
/// annotation's constraints); `HeaderBinding` reads them through
/// `Server::header_params`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderParam {
    /// The `{Name}` of `Mcp-Param-{Name}`, as annotated (compared
    /// case-insensitively, as header names are).
    pub name: String,
    /// The chain of `properties` keys from the arguments object to the
    /// annotated property; one key for a top-level argument.
    pub path: Vec<String>,
    /// The annotated property's type.
    pub ty: HeaderParamType,
}

impl HeaderParam {
    /// An annotation of the top-level argument `property`.
    pub fn new(name: impl Into<String>, property: impl Into<String>, ty: HeaderParamType) -> Self {
        HeaderParam {
            name: name.into(),
            path: vec![property.into()],
            ty,
        }
    }

    /// An annotation of a nested property, reached through `path`.
    pub fn nested(
        name: impl Into<String>,
        path: impl IntoIterator<Item = impl Into<String>>,
        ty: HeaderParamType,
    ) -> Self {
        HeaderParam {
            name: name.into(),
            path: path.into_iter().map(Into::into).collect(),
            ty,
        }
    }

    /// The header's name in lower case, as `http` stores it.
    #[must_use]
    pub fn header_name(&self) -> String {
        format!("{MCP_PARAM_PREFIX}{}", self.name.to_ascii_lowercase())
    }
}

/// Why an `x-mcp-header` annotation was refused: where it sits and the
/// rule it breaks (the surface names the tool).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AnnotationError {
    /// The annotated property, as a path from the schema root (`a.b`), or
    /// `(root)`.
    pub(crate) property: String,
    /// The rule broken.
    pub(crate) reason: String,
}

/// Keywords whose values are data, not schemas: an `x-mcp-header` inside
/// them is not an annotation.
const DATA_KEYWORDS: [&str; 4] = ["const", "enum", "default", "examples"];

/// Finds and checks every `x-mcp-header` annotation of `schema` (spec notes
/// §3): a non-empty RFC 9110 token, unique case-insensitively, on a
/// `string`, `integer` or `boolean` property reached from the root through
/// `properties` only.
pub(crate) fn header_params(schema: &Value) -> Result<Vec<HeaderParam>, AnnotationError> {
    let mut found = Vec::new();
    walk(schema, &mut Vec::new(), true, &mut found)?;
    Ok(found)
}

fn walk(
    node: &Value,
    path: &mut Vec<String>,
    reachable: bool,
    found: &mut Vec<HeaderParam>,
) -> Result<(), AnnotationError> {
    match node {
        Value::Object(object) => {
            if let Some(annotation) = object.get("x-mcp-header") {
                let error = |reason: &str| AnnotationError {
                    property: if path.is_empty() {
                        "(root)".to_owned()
                    } else {
                        path.join(".")
                    },
                    reason: reason.to_owned(),
                };
                if !reachable || path.is_empty() {
                    return Err(error(
                        "it must sit on a property reached from the schema root through `properties` only \
                         (not inside `items`, `oneOf`/`anyOf`/`allOf`/`not`, `if`/`then`/`else`, `$defs` or `$ref`)",
                    ));
                }
                let name = annotation
                    .as_str()
                    .ok_or_else(|| error("the annotation must be a string"))?;
                if name.is_empty() {
                    return Err(error("the header name must not be empty"));
                }
                if let Some(bad) = name.chars().find(|c| !is_tchar(*c)) {
                    return Err(error(&format!(
                        "the header name `{}` has {bad:?}, which is not an RFC 9110 token character",
                        name.escape_debug()
                    )));
                }
                if let Some(other) = found.iter().find(|p| p.name.eq_ignore_ascii_case(name)) {
                    return Err(error(&format!(
                        "the header name `{name}` repeats `{}` of property `{}` (names are compared case-insensitively)",
                        other.name,
                        other.path.join(".")
                    )));
                }
                let kind = header_kind(object.get("type")).ok_or_else(|| {
                    error("the property's `type` must be `string`, `integer` or `boolean`")
                })?;
                found.push(HeaderParam::nested(name, path.iter().cloned(), kind));
            }
            for (key, value) in object {
                if key == "x-mcp-header" || DATA_KEYWORDS.contains(&key.as_str()) {
                    continue;
                }
                if key == "properties" {
                    if let Value::Object(properties) = value {
                        for (property, schema) in properties {
                            path.push(property.clone());
                            walk(schema, path, reachable, found)?;
                            path.pop();
                        }
                    }
                    continue;
                }
                path.push(key.clone());
                walk(value, path, false, found)?;
                path.pop();
            }
            Ok(())
        }
        Value::Array(items) => {
            for item in items {
                walk(item, path, false, found)?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn header_kind(ty: Option<&Value>) -> Option<HeaderParamType> {
    let kind = |s: &str| match s {
        "string" => Some(HeaderParamType::String),
        "integer" => Some(HeaderParamType::Integer),
        "boolean" => Some(HeaderParamType::Boolean),
        _ => None,
    };
    match ty? {
        Value::String(s) => kind(s),
        // `["string", "null"]`: a nullable value, whose header is omitted when null.
        Value::Array(types) => {
            let mut non_null = types.iter().filter(|t| t.as_str() != Some("null"));
            let only = non_null.next()?.as_str()?;
            if non_null.next().is_some() {
                return None;
            }
            kind(only)
        }
        _ => None,
    }
}

/// RFC 9110 `tchar`.
fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

/// A body value as an `Mcp-Param-{Name}` header spells it.
pub(crate) enum Spelling<'a> {
    Text(&'a str),
    Integer(i128),
    Boolean(bool),
}

impl Spelling<'_> {
    /// Whether a header's text (decoded, see [`decoded_text`]) spells this
    /// body value: a string exactly and case-sensitively, an integer
    /// numerically (`42.0` equals `42`), a boolean as `true` or `false`.
    pub(crate) fn matches(&self, text: &str) -> bool {
        match *self {
            Spelling::Text(body) => text == body,
            Spelling::Integer(body) => parse_integer(text) == Some(body),
            Spelling::Boolean(body) => text == if body { "true" } else { "false" },
        }
    }
}

/// The spelling of `value` for an annotation of type `ty`; `None` when the
/// value is not of that type (left to Validate).
pub(crate) fn header_spelling(value: &Value, ty: HeaderParamType) -> Option<Spelling<'_>> {
    match (ty, value) {
        (HeaderParamType::String, Value::String(s)) => Some(Spelling::Text(s)),
        (HeaderParamType::Boolean, Value::Bool(b)) => Some(Spelling::Boolean(*b)),
        (HeaderParamType::Integer, Value::Number(n)) => number_as_integer(n).map(Spelling::Integer),
        _ => None,
    }
}

fn number_as_integer(n: &serde_json::Number) -> Option<i128> {
    if let Some(i) = n.as_i64() {
        return Some(i128::from(i));
    }
    if let Some(u) = n.as_u64() {
        return Some(i128::from(u));
    }
    n.as_f64().and_then(float_as_integer)
}

/// Whether a JSON number has no fractional part (a schema's `integer`).
pub(crate) fn is_integral(value: &Value) -> bool {
    value
        .as_f64()
        .is_some_and(|f| f.is_finite() && f.fract() == 0.0)
        || value.is_i64()
        || value.is_u64()
}

/// An integral float within `±2^64` as an integer.
fn float_as_integer(f: f64) -> Option<i128> {
    const LIMIT: f64 = 18_446_744_073_709_551_616.0; // 2^64
    if f.is_finite() && f.fract() == 0.0 && f.abs() < LIMIT {
        // Integral and within range, so the conversion is exact.
        #[allow(clippy::cast_possible_truncation)]
        Some(f as i128)
    } else {
        None
    }
}

/// A header's integer, compared numerically: `42`, `-7`, `42.0`, `4.2e1`.
fn parse_integer(text: &str) -> Option<i128> {
    if let Ok(i) = text.parse::<i128>() {
        return Some(i);
    }
    let plausible = text
        .bytes()
        .all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b));
    if !plausible {
        return None;
    }
    text.parse::<f64>().ok().and_then(float_as_integer)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn hv(bytes: &[u8]) -> HeaderValue {
        HeaderValue::from_bytes(bytes).unwrap()
    }

    #[test]
    fn ows_is_stripped_from_both_ends_only() {
        assert_eq!(trim_ows(b" \t a b \t"), b"a b");
        assert_eq!(trim_ows(b"   "), b"");
        assert_eq!(trim_ows(b""), b"");
        assert_eq!(plain_text(&hv(b"  tools/call ")).unwrap(), "tools/call");
    }

    /// Every value a header can hold made of one byte between spaces, tabs
    /// and letters reads as the byte check `plain_text` was before it took
    /// `HeaderValue::to_str` (visible ASCII, space, tab; trimmed).
    #[test]
    fn plain_text_reads_as_the_byte_check_did() {
        fn by_bytes(value: &HeaderValue) -> Result<&str, HeaderValueError> {
            let bytes = trim_ows(value.as_bytes());
            if bytes
                .iter()
                .all(|&b| b == b'\t' || (b' '..=b'~').contains(&b))
            {
                std::str::from_utf8(bytes).map_err(|_| HeaderValueError::InvalidCharacters)
            } else {
                Err(HeaderValueError::InvalidCharacters)
            }
        }
        let mut checked = 0;
        for b in 0..=u8::MAX {
            for shape in [&[b][..], b" \t", b"\t ", b"a", b"a b"] {
                for raw in [
                    [shape, &[b]].concat(),
                    [&[b][..], shape].concat(),
                    [b" ", shape, &[b], b"\t"].concat(),
                ] {
                    let Ok(value) = HeaderValue::from_bytes(&raw) else {
                        continue;
                    };
                    assert_eq!(plain_text(&value), by_bytes(&value), "{raw:?}");
                    checked += 1;
                }
            }
        }
        // Bytes 0x00-0x08, 0x0a-0x1f and 0x7f make no value.
        assert_eq!(checked, (256 - 32) * 15);
    }

    #[test]
    fn obs_text_is_an_invalid_character() {
        assert_eq!(
            plain_text(&hv("café".as_bytes())),
            Err(HeaderValueError::InvalidCharacters)
        );
        assert_eq!(
            decoded_text(&hv(b"caf\xe9")),
            Err(HeaderValueError::InvalidCharacters)
        );
    }

    #[test]
    fn base64_round_trips_every_length() {
        let data: Vec<u8> = (0..=255).collect();
        for n in 0..40 {
            let encoded = base64_encode(&data[..n]);
            assert_eq!(base64_decode(encoded.as_bytes()).unwrap(), &data[..n]);
        }
        assert_eq!(base64_encode(b"Hello"), "SGVsbG8=");
        assert_eq!(
            base64_encode("Hello, 世界".as_bytes()),
            "SGVsbG8sIOS4lueVjA=="
        );
    }

    #[test]
    fn strict_decoder_refuses_what_a_lenient_one_accepts() {
        assert_eq!(base64_decode(b"SGVsbG8"), Err(Base64Error::Length));
        assert_eq!(base64_decode(b"SGVs!!!bG8="), Err(Base64Error::Length));
        assert_eq!(base64_decode(b"SGVs!!G8"), Err(Base64Error::Character(4)));
        assert_eq!(base64_decode(b"SG=sbG8="), Err(Base64Error::Character(2)));
        assert_eq!(base64_decode(b"S==="), Err(Base64Error::Padding));
        // "SGVsbG9=": the last character carries bits a canonical encoder leaves zero.
        assert_eq!(base64_decode(b"SGVsbG9="), Err(Base64Error::Padding));
        assert_eq!(base64_decode(b"SGVsbA=="), Ok(b"Hell".to_vec()));
        assert_eq!(base64_decode(b"SGVsbB=="), Err(Base64Error::Padding));
        assert_eq!(base64_decode(b"SGVs bG8"), Err(Base64Error::Character(4)));
        assert_eq!(base64_decode(b"SGVs-G8_"), Err(Base64Error::Character(4)));
    }

    #[test]
    fn the_sentinel_is_decoded_only_in_its_exact_lowercase_form() {
        assert_eq!(decoded_text(&hv(b"=?base64?SGVsbG8=?=")).unwrap(), "Hello");
        assert_eq!(
            decoded_text(&hv(b"  =?base64?SGVsbG8sIOS4lueVjA==?= ")).unwrap(),
            "Hello, 世界"
        );
        assert_eq!(decoded_text(&hv(b"=?base64??=")).unwrap(), "");
        for literal in [
            "=?BASE64?SGVsbG8=?=",
            "=?base64?SGVsbG8=",
            "SGVsbG8=",
            "=?base64?=",
        ] {
            assert_eq!(decoded_text(&hv(literal.as_bytes())).unwrap(), literal);
        }
        assert_eq!(
            decoded_text(&hv(b"=?base64?SGVsbG8?=")),
            Err(HeaderValueError::Base64(Base64Error::Length))
        );
        assert!(matches!(
            decoded_text(&hv(b"=?base64?SGVs!!!bG8=?=")),
            Err(HeaderValueError::Base64(_))
        ));
        assert_eq!(
            decoded_text(&hv(b"=?base64?/w==?=")),
            Err(HeaderValueError::NotUtf8)
        );
    }

    #[test]
    fn encode_value_follows_the_spec_examples() {
        assert_eq!(encode_value("us-west1"), "us-west1");
        assert_eq!(
            encode_value("Hello, 世界"),
            "=?base64?SGVsbG8sIOS4lueVjA==?="
        );
        assert_eq!(encode_value(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(encode_value("line1\nline2"), "=?base64?bGluZTEKbGluZTI=?=");
        assert_eq!(
            encode_value("=?base64?literal?="),
            "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="
        );
    }

    fn check(schema: &Value) -> Result<Vec<HeaderParam>, AnnotationError> {
        header_params(schema)
    }

    #[test]
    fn nested_properties_are_reachable() {
        let params = check(&json!({"type": "object", "properties": {
            "a": {"type": "object", "properties": {"b": {"type": "integer", "x-mcp-header": "B"}}}
        }}))
        .unwrap();
        assert_eq!(params[0].path, ["a", "b"]);
        assert_eq!(params[0].ty, HeaderParamType::Integer);
    }

    #[test]
    fn integers_compare_numerically() {
        assert_eq!(parse_integer("42"), Some(42));
        assert_eq!(parse_integer("-7"), Some(-7));
        assert_eq!(parse_integer("42.0"), Some(42));
        assert_eq!(parse_integer("4.2e1"), Some(42));
        assert_eq!(parse_integer("42.5"), None);
        assert_eq!(parse_integer("inf"), None);
        assert_eq!(parse_integer("NaN"), None);
        assert_eq!(parse_integer(""), None);
        assert_eq!(parse_integer("0x2a"), None);
        assert_eq!(
            parse_integer("18446744073709551615"),
            Some(i128::from(u64::MAX))
        );
        let n: serde_json::Number = serde_json::from_str("42.0").unwrap();
        assert_eq!(number_as_integer(&n), Some(42));
        let n: serde_json::Number = serde_json::from_str("1e300").unwrap();
        assert_eq!(number_as_integer(&n), None);
    }
}
