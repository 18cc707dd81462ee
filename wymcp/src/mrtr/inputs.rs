//! The retry, as a handler sees it: the declared client capabilities, the
//! `inputResponses`, and the unsealed `requestState`.

use serde_json::{Map, Value, json};

use super::input::{InputKind, InputRequest, InputRequired, missing_capabilities};
use super::round::Round;
use super::seal::{Binding, Sealer, UnsealError};
use crate::protocol::error::RpcError;
use crate::protocol::meta;

/// One request's MRTR view: the declared client capabilities, the
/// `inputResponses` of a retry, and the unsealed `requestState`.
#[derive(Debug, Clone, PartialEq)]
pub struct Inputs {
    capabilities: Value,
    responses: Map<String, Value>,
    round: u32,
    state: Option<Vec<u8>>,
}

impl Inputs {
    /// Reads the MRTR fields of a request by `subject` for `method` with
    /// `params`. A `requestState` that does not unseal, or an
    /// `inputResponses` that is not an object, is a -32602 error.
    ///
    /// Only answers to the keys the state's round asked are kept: an answer
    /// to anything else (a key never asked, one of another round of the
    /// same call, any answer sent without a state) is ignored, as the spec
    /// asks of unknown keys (SEP-2322, §Error Handling), so the handler
    /// never sees it and asks again for what is still missing.
    pub fn from_request(
        sealer: &Sealer,
        subject: &str,
        method: &str,
        params: Option<&Value>,
    ) -> Result<Self, RpcError> {
        let capabilities = params
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get(meta::CLIENT_CAPABILITIES))
            .filter(|c| c.is_object())
            .cloned()
            .unwrap_or_else(|| json!({}));
        let mut responses = match params.and_then(|p| p.get("inputResponses")) {
            None => Map::new(),
            Some(Value::Object(map)) => map.clone(),
            Some(_) => {
                return Err(RpcError::invalid_params("inputResponses must be an object"));
            }
        };
        let round = match params.and_then(|p| p.get("requestState")) {
            None => None,
            // The binding (a SHA-256 over the params) is worked out only for a
            // state to unseal: most requests carry none, and Dispatch binds a
            // state it seals itself.
            Some(Value::String(token)) => {
                match sealer.unseal(&Binding::new(subject, method, params), token) {
                    Ok(bytes) => match Round::decode(&bytes) {
                        Some(round) => Some(round),
                        None => return Err(UnsealError::Malformed.rpc_error()),
                    },
                    Err(error) => {
                        tracing::debug!(target: "wymcp::mrtr", %error, method, "requestState refused");
                        return Err(error.rpc_error());
                    }
                }
            }
            Some(_) => return Err(UnsealError::Malformed.rpc_error()),
        };
        // Answers to the keys the round asked, and to no other.
        let asked: &[String] = round.as_ref().map_or(&[], |r| r.asked.as_slice());
        let before = responses.len();
        responses.retain(|key, _| asked.contains(key));
        if responses.len() != before {
            tracing::debug!(
                target: "wymcp::mrtr",
                method,
                ignored = before - responses.len(),
                "inputResponses answers keys this round did not ask; ignored"
            );
        }
        Ok(Inputs {
            capabilities,
            responses,
            round: round.as_ref().map_or(0, |r| r.number),
            state: round.map(|r| r.state),
        })
    }

    /// The view of a request that carries no MRTR fields, by a client that
    /// declared `capabilities`.
    pub(crate) fn declared(capabilities: Value) -> Self {
        Inputs {
            capabilities,
            responses: Map::new(),
            round: 0,
            state: None,
        }
    }

    /// The view of a task's next round (the tasks extension): the answers
    /// the client gave through `tasks/update` to the round `round` asked,
    /// and the handler's state, both kept by the server rather than sealed.
    pub(crate) fn resumed(
        capabilities: Value,
        responses: Map<String, Value>,
        round: u32,
        state: Option<Vec<u8>>,
    ) -> Self {
        Inputs {
            capabilities,
            responses,
            round,
            state,
        }
    }

    /// The declared client capabilities (a `ClientCapabilities` object; `{}`
    /// when none were declared).
    #[must_use]
    pub fn capabilities(&self) -> &Value {
        &self.capabilities
    }

    /// Whether the client declared the capability `kind` needs.
    #[must_use]
    pub fn declares(&self, kind: InputKind) -> bool {
        kind.declared_in(&self.capabilities)
    }

    /// Whether the client can answer `request` (its kind, and the mode or
    /// options it uses, declared).
    #[must_use]
    pub fn allows(&self, request: &InputRequest) -> bool {
        request.allowed_by(&self.capabilities)
    }

    /// `Ok` when every kind in `kinds` is declared, otherwise the -32021
    /// error naming the missing ones: for a handler that cannot proceed
    /// without them.
    pub fn require(&self, kinds: &[InputKind]) -> Result<(), RpcError> {
        let missing: Vec<InputKind> = kinds
            .iter()
            .copied()
            .filter(|k| !self.declares(*k))
            .collect();
        if missing.is_empty() {
            Ok(())
        } else {
            Err(missing_capabilities(&missing))
        }
    }

    /// Every input response of the retry, by key: each answers a key the
    /// round asked (answers to any other are ignored before the handler
    /// runs).
    #[must_use]
    pub fn responses(&self) -> &Map<String, Value> {
        &self.responses
    }

    /// The input response under `key`, when it is an object.
    #[must_use]
    pub fn response(&self, key: &str) -> Option<&Map<String, Value>> {
        self.responses.get(key)?.as_object()
    }

    /// The `content` of an elicitation answered with `action: "accept"` under
    /// `key`.
    #[must_use]
    pub fn accepted(&self, key: &str) -> Option<&Map<String, Value>> {
        let response = self.response(key)?;
        if response.get("action")?.as_str()? != "accept" {
            return None;
        }
        response.get("content")?.as_object()
    }

    /// The state the handler set on the previous round, unsealed and verified.
    #[must_use]
    pub fn state(&self) -> Option<&[u8]> {
        self.state.as_deref()
    }

    /// The round this request answers: 0 for a first call, `n` for the
    /// retry of the `n`th `input_required` answer.
    #[must_use]
    pub fn round(&self) -> u32 {
        self.round
    }

    /// A new `input_required` answer for this request's client, opening
    /// the round after this one.
    #[must_use]
    pub fn input_required(&self) -> InputRequired {
        InputRequired::new(self.capabilities.clone()).round(self.round.saturating_add(1))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::mrtr::seal::tests::sealer;
    use crate::protocol::error::ErrorCode;

    fn params(extra: Value) -> Value {
        let mut p = json!({
            "name": "t",
            "arguments": {},
            "_meta": {meta::CLIENT_CAPABILITIES: {"elicitation": {}, "roots": {}}},
        });
        if let (Value::Object(p), Value::Object(extra)) = (&mut p, extra) {
            p.extend(extra);
        }
        p
    }

    /// A retry may ask what its client declared, and no more: a client
    /// that declares `sampling` without `sampling.tools` is not sent a
    /// sampling request with tools (moved from `input.rs`'s
    /// `modes_and_options_need_their_sub_capabilities`, so that `input.rs`
    /// does not import this file, which imports it).
    #[test]
    fn a_retry_allows_only_the_sub_capabilities_declared() {
        let plain = InputRequest::sample_text("hi", 5);
        let with_tools =
            InputRequest::sampling(json!({"messages": [], "maxTokens": 5, "tools": []}));
        let inputs = Inputs::from_request(
            &sealer(),
            "",
            "tools/call",
            Some(&json!({"_meta": {crate::protocol::meta::CLIENT_CAPABILITIES: {"sampling": {}}}})),
        )
        .unwrap();
        assert!(inputs.allows(&plain) && !inputs.allows(&with_tools));
    }

    #[test]
    fn inputs_round_trip_through_input_required() {
        let s = sealer();
        let first = params(json!({}));
        let inputs = Inputs::from_request(&s, "alice", "tools/call", Some(&first)).unwrap();
        assert!(inputs.state().is_none());
        assert!(inputs.declares(InputKind::Elicitation));
        assert!(!inputs.declares(InputKind::Sampling));
        let result = inputs
            .input_required()
            .request(
                "user_name",
                InputRequest::elicit("Name?", json!({"type": "object"})),
            )
            .unwrap()
            .state(b"r1".to_vec())
            .into_result(&s, &Binding::new("alice", "tools/call", Some(&first)));
        assert_eq!(result["resultType"], "input_required");
        assert_eq!(
            result["inputRequests"]["user_name"]["method"],
            "elicitation/create"
        );
        assert_eq!(
            result["inputRequests"]["user_name"]["params"]["message"],
            "Name?"
        );
        assert!(result.get("ttlMs").is_none());
        let retry = params(json!({
            "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Ada"}}},
            "requestState": result["requestState"],
        }));
        let again = Inputs::from_request(&s, "alice", "tools/call", Some(&retry)).unwrap();
        assert_eq!(again.state(), Some(&b"r1"[..]));
        assert_eq!(again.round(), 1);
        assert_eq!(again.accepted("user_name").unwrap()["name"], "Ada");
        assert_eq!(again.responses().len(), 1);
        // Issue 16, item 14: an answer to a key the round did not ask is
        // never seen (the state binds the keys it asked); SEP-2322: it is
        // ignored, not an error.
        let extra = params(json!({
            "inputResponses": {"user_name": {"action": "decline"}, "extra": 1},
            "requestState": result["requestState"],
        }));
        let kept = Inputs::from_request(&s, "alice", "tools/call", Some(&extra)).unwrap();
        assert_eq!(kept.responses().keys().collect::<Vec<_>>(), ["user_name"]);
        // The next round is round 2, and its state answers its own keys only:
        // round 1's key with round 2's state answers nothing.
        let second = again
            .input_required()
            .request(
                "age",
                InputRequest::elicit("Age?", json!({"type": "object"})),
            )
            .unwrap()
            .into_result(&s, &Binding::new("alice", "tools/call", Some(&first)));
        let mixed = params(json!({
            "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Ada"}}},
            "requestState": second["requestState"],
        }));
        let mixed = Inputs::from_request(&s, "alice", "tools/call", Some(&mixed)).unwrap();
        assert_eq!((mixed.round(), mixed.responses().len()), (2, 0));
        let answered = params(json!({
            "inputResponses": {"age": {"action": "accept", "content": {"age": 36}}},
            "requestState": second["requestState"],
        }));
        let third = Inputs::from_request(&s, "alice", "tools/call", Some(&answered)).unwrap();
        assert_eq!(third.round(), 2);
        // The same state from another principal is a -32602 rejection.
        let refused = Inputs::from_request(&s, "bob", "tools/call", Some(&retry)).unwrap_err();
        assert_eq!(refused.code, ErrorCode::INVALID_PARAMS);
    }

    #[test]
    fn malformed_mrtr_fields_are_invalid_params() {
        let s = sealer();
        for bad in [
            json!({"inputResponses": null}),
            json!({"inputResponses": [1]}),
            json!({"requestState": 5}),
            json!({"requestState": "not-a-state"}),
        ] {
            let err =
                Inputs::from_request(&s, "", "tools/call", Some(&params(bad.clone()))).unwrap_err();
            assert_eq!(err.code, ErrorCode::INVALID_PARAMS, "{bad}");
        }
        // A response that is not an object is simply not an answer.
        let asked = InputRequired::new(json!({"roots": {}}))
            .request("user_name", InputRequest::list_roots())
            .unwrap()
            .into_result(
                &s,
                &Binding::new("", "tools/call", Some(&params(json!({})))),
            );
        let p = params(json!({
            "inputResponses": {"user_name": 12345},
            "requestState": asked["requestState"],
        }));
        let inputs = Inputs::from_request(&s, "", "tools/call", Some(&p)).unwrap();
        assert!(inputs.response("user_name").is_none());
        assert!(inputs.accepted("user_name").is_none());
        // Answers without the state that asked for them answer nothing asked.
        let orphan = params(json!({"inputResponses": {"user_name": {"action": "decline"}}}));
        let orphan = Inputs::from_request(&s, "", "tools/call", Some(&orphan)).unwrap();
        assert!(orphan.responses().is_empty());
    }

    #[test]
    fn undeclared_kinds_cannot_be_requested() {
        let inputs =
            Inputs::from_request(&sealer(), "", "tools/call", Some(&params(json!({})))).unwrap();
        let err = inputs
            .input_required()
            .request("s", InputRequest::sample_text("hi", 10))
            .unwrap_err();
        assert_eq!(err.0, InputKind::Sampling);
        assert_eq!(err.required(), &json!({"sampling": {}}));
        let error = err.rpc_error();
        assert_eq!(error.code, ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY);
        assert!(
            inputs
                .require(&[InputKind::Elicitation, InputKind::Roots])
                .is_ok()
        );
        let missing = inputs
            .require(&[InputKind::Sampling, InputKind::Roots])
            .unwrap_err();
        assert_eq!(missing.code, ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY);
        // No capabilities at all: nothing may be asked.
        let bare = Inputs::from_request(&sealer(), "", "tools/call", None).unwrap();
        assert_eq!(bare.capabilities(), &json!({}));
        assert!(
            bare.input_required()
                .request("r", InputRequest::list_roots())
                .is_err()
        );
        // A capability declared as a non-object is not a declaration.
        assert!(!InputKind::Roots.declared_in(&json!({"roots": true})));
    }
}
