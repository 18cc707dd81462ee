//! Property tests (proptest) of the pure functions that read client bytes:
//! classification, `=?base64?…?=` header values, revisions and the era, and
//! the rejection-id rule through the default chain. The fuzz targets
//! (FUZZING.md) search the same ground by coverage; these build each case
//! by construction, so each property states the rule it pins.

use http::{HeaderMap, HeaderValue};
use proptest::prelude::*;
use serde_json::{Map, Value, json};
use wymcp::fuzzing::{
    Base64Error, HeaderValueError, MCP_PROTOCOL_VERSION, base64_decode, base64_encode,
    decoded_text, encode_value,
};
use wymcp::fuzzing::{classify, era_of, is_request_id};
use wymcp::{Era, MessageKind, Revision};
use wymcp_tests::fuzz::chain::{self, Input};
use wymcp_tests::fuzz::classify::{reference_era, reference_kind};

/// Any JSON value, a few levels deep.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        ".{0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{0,6}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Members besides `method` and `id`, which never change the kind.
fn other_members() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::btree_map("(jsonrpc|params|result|error|x)", json_value(), 0..3)
        .prop_map(|m| m.into_iter().collect())
}

/// A request id: a string or an integer serde_json holds as i64 or u64.
fn request_id() -> impl Strategy<Value = Value> {
    prop_oneof![
        ".{0,12}".prop_map(Value::String),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
    ]
}

/// Any other id: null, a boolean, a float (also integral ones), an integer
/// beyond u64 (held as a float), `-0` (held as a float), an array, an object.
fn other_id() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        (0u8..200).prop_map(|e| serde_json::from_str(&format!(
            "1{}",
            "0".repeat(20 + usize::from(e) % 60)
        ))
        .unwrap()),
        Just(serde_json::from_str("-0").unwrap()),
        prop::collection::vec(json_value(), 0..3).prop_map(Value::Array),
        Just(json!({})),
    ]
}

fn message(method: Option<Value>, id: Option<Value>, mut members: Map<String, Value>) -> Value {
    if let Some(method) = method {
        members.insert("method".into(), method);
    }
    if let Some(id) = id {
        members.insert("id".into(), id);
    }
    Value::Object(members)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// A string method and a string or i64/u64 id make a request, whatever
    /// else the object holds (`jsonrpc: "1.0"` included).
    #[test]
    fn a_string_method_and_a_request_id_classify_as_a_request(
        method in ".{0,16}", id in request_id(), members in other_members()
    ) {
        let m = message(Some(Value::String(method)), Some(id.clone()), members);
        prop_assert_eq!(classify(&m), MessageKind::Request);
        prop_assert!(is_request_id(&id));
    }

    /// A string method with any other id is an unidentified request.
    #[test]
    fn any_other_id_classifies_as_an_unidentified_request(
        method in ".{0,16}", id in other_id(), members in other_members()
    ) {
        let m = message(Some(Value::String(method)), Some(id.clone()), members);
        prop_assert_eq!(classify(&m), MessageKind::UnidentifiedRequest, "{}", m);
        prop_assert!(!is_request_id(&id));
    }

    /// A string method and no id is a notification.
    #[test]
    fn a_string_method_without_id_classifies_as_a_notification(
        method in ".{0,16}", members in other_members()
    ) {
        let m = message(Some(Value::String(method)), None, members);
        prop_assert_eq!(classify(&m), MessageKind::Notification);
    }

    /// No string method, or no object at all, is unknown, whatever the id.
    #[test]
    fn no_string_method_classifies_as_unknown(
        method in json_value().prop_filter("not a string", |v| !v.is_string()),
        has_method in any::<bool>(),
        id in prop::option::of(json_value()),
        members in other_members(),
        scalar in json_value().prop_filter("not an object", |v| !v.is_object()),
    ) {
        let m = message(has_method.then_some(method), id, members);
        prop_assert_eq!(classify(&m), MessageKind::Unknown);
        prop_assert_eq!(classify(&scalar), MessageKind::Unknown);
    }

    /// Classification agrees with the fuzz targets' reference on any value.
    #[test]
    fn classification_agrees_with_the_reference(value in json_value()) {
        prop_assert_eq!(classify(&value), reference_kind(&value));
    }

    /// The strict decoder inverts the encoder on every byte string.
    #[test]
    fn base64_round_trips(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        let encoded = base64_encode(&bytes);
        prop_assert_eq!(encoded.len(), bytes.len().div_ceil(3) * 4);
        prop_assert_eq!(base64_decode(encoded.as_bytes()), Ok(bytes));
    }

    /// Non-canonical spellings of a canonical encoding are refused: missing
    /// padding, extra padding, and bits set after the last byte.
    #[test]
    fn non_canonical_base64_is_refused(
        bytes in prop::collection::vec(any::<u8>(), 1..48), bit in 0u8..4
    ) {
        let encoded = base64_encode(&bytes);
        let unpadded = encoded.trim_end_matches('=');
        if unpadded.len() != encoded.len() {
            prop_assert_eq!(base64_decode(unpadded.as_bytes()), Err(Base64Error::Length));
            // The last data character carries 2 or 4 unused bits; set one.
            let unused = if bytes.len() % 3 == 1 { 4 } else { 2 };
            let last = unpadded.as_bytes()[unpadded.len() - 1];
            let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
            let value = alphabet.iter().position(|c| *c == last).unwrap();
            let flipped = alphabet[value ^ (1 << (bit % unused))];
            let mut bad = encoded.clone().into_bytes();
            bad[unpadded.len() - 1] = flipped;
            prop_assert_eq!(base64_decode(&bad), Err(Base64Error::Padding));
        }
        let extra = format!("{encoded}====");
        prop_assert!(base64_decode(extra.as_bytes()).is_err());
    }

    /// What a client encodes for `Mcp-Name`/`Mcp-Param-*` is a valid header
    /// value that the wire checks read back as the same string.
    #[test]
    fn encoded_header_values_decode_to_themselves(text in any::<String>()) {
        let encoded = encode_value(&text);
        let value = HeaderValue::from_str(&encoded).unwrap();
        prop_assert_eq!(decoded_text(&value).unwrap(), text.as_str());
    }

    /// The sentinel with a payload that is not base64 is refused, never read
    /// as a literal.
    #[test]
    fn a_sentinel_with_a_bad_payload_is_refused(payload in "[A-Za-z0-9+/]{1,3}|[-_!.]{4}") {
        let value = HeaderValue::from_str(&format!("=?base64?{payload}?=")).unwrap();
        prop_assert!(matches!(decoded_text(&value), Err(HeaderValueError::Base64(_))));
    }

    /// `Revision::parse` knows exactly the wire strings `as_str` gives.
    #[test]
    fn revision_parse_accepts_exactly_the_known_strings(s in "[0-9-]{0,12}|20[0-9]{2}-[01][0-9]-[0-3][0-9]") {
        match Revision::parse(&s) {
            Some(revision) => prop_assert_eq!(revision.as_str(), s.as_str()),
            None => prop_assert!(Revision::ALL.iter().all(|r| r.as_str() != s)),
        }
    }

    /// The era follows the header when there is one (a 2025 date is
    /// legacy, and any date on a 2025 `initialize`), else `_meta`'s protocol
    /// version, as the reference says.
    #[test]
    fn the_era_agrees_with_the_reference(
        header in prop::option::of("[ \t]{0,2}(20[0-9]{2}-[0-9]{2}-[0-9]{2}|2025-11-25|2026-07-28|.{0,10})[ \t]{0,2}"),
        meta in prop::option::of(json_value()),
        method in prop::option::of("initialize|tools/call|.{0,10}"),
    ) {
        let mut body = match meta {
            Some(version) => json!({"params": {"_meta": {"io.modelcontextprotocol/protocolVersion": version}}}),
            None => json!({"params": {}}),
        };
        if let Some(method) = method {
            body["method"] = json!(method);
        }
        let mut headers = HeaderMap::new();
        if let Some(h) = &header {
            let Ok(value) = HeaderValue::from_str(h) else { return Ok(()); };
            headers.insert(MCP_PROTOCOL_VERSION, value);
        }
        prop_assert_eq!(era_of(&headers, &body), reference_era(header.as_deref().map(str::as_bytes), &body));
    }

    /// The rejection-id rule through the default chain: auth's 401 (after
    /// classification) echoes the id of a request and only of a request;
    /// the origin check's 403 (before it) never echoes one. Every other
    /// invariant of the chain target holds on the way.
    #[test]
    fn rejections_echo_the_id_of_requests_only(
        id in prop::option::of(prop_oneof![request_id(), other_id()]),
        method in prop::option::of(prop_oneof![".{0,12}".prop_map(Value::String), json_value()]),
        refused_origin in any::<bool>(),
    ) {
        let body = message(method, id, Map::from_iter([("jsonrpc".to_owned(), json!("2.0"))]));
        let mut headers = vec![(b"content-type".to_vec(), b"application/json".to_vec())];
        if refused_origin {
            headers.push((b"origin".to_vec(), b"https://evil.example".to_vec()));
        }
        let input = Input {
            http2: false,
            target: b"/mcp".to_vec(),
            headers,
            body: serde_json::to_vec(&body).unwrap(),
        };
        let data = input.to_bytes();
        prop_assert_eq!(chain::check_chain(&data), Ok(()));
        let outcome = chain::chain_outcome(&data);
        let expected_status = if refused_origin { 403 } else { 401 };
        prop_assert_eq!(outcome.status, expected_status);
        let answered = answer_id(&input);
        let expected = if !refused_origin && classify(&body) == MessageKind::Request {
            body["id"].clone()
        } else {
            Value::Null
        };
        prop_assert_eq!(answered, expected);
    }
}

/// Every revision wymcp knows round-trips through its wire string and
/// `Display`, and belongs to the era of its year.
#[test]
fn revisions_round_trip_and_have_their_year_s_era() {
    for revision in Revision::ALL {
        assert_eq!(Revision::parse(revision.as_str()), Some(revision));
        assert_eq!(revision.to_string(), revision.as_str());
        let legacy = revision.as_str().starts_with("2025-");
        assert_eq!(revision.era() == Era::Legacy, legacy, "{revision}");
    }
    assert_eq!(Revision::LATEST, *Revision::ALL.iter().max().unwrap());
}

/// The id the default chain answers `input` with.
fn answer_id(input: &Input) -> Value {
    let server = chain::server();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let response = wymcp::chain::post::handle(&server, input.request()).await;
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        let answer: Value = serde_json::from_slice(&bytes).unwrap();
        answer["id"].clone()
    })
}
