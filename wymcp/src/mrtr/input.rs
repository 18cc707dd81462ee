//! What a server asks a client for: the kinds of input, one input request,
//! and the `input_required` result that carries them.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value, json};

use super::round::Round;
use super::seal::{Binding, Sealer};
use crate::protocol::error::{ErrorCode, RpcError};

/// A kind of input a server may ask the client for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum InputKind {
    /// `elicitation/create`; needs the `elicitation` client capability.
    Elicitation,
    /// `sampling/createMessage`; needs the `sampling` client capability.
    Sampling,
    /// `roots/list`; needs the `roots` client capability.
    Roots,
}

impl InputKind {
    /// The method of an input request of this kind.
    #[must_use]
    pub const fn method(self) -> &'static str {
        match self {
            Self::Elicitation => "elicitation/create",
            Self::Sampling => "sampling/createMessage",
            Self::Roots => "roots/list",
        }
    }

    /// The client capability this kind needs, as named in `ClientCapabilities`.
    #[must_use]
    pub const fn capability(self) -> &'static str {
        match self {
            Self::Elicitation => "elicitation",
            Self::Sampling => "sampling",
            Self::Roots => "roots",
        }
    }

    /// Whether `capabilities` (a `ClientCapabilities` object) declares this kind.
    #[must_use]
    pub fn declared_in(self, capabilities: &Value) -> bool {
        capabilities
            .get(self.capability())
            .is_some_and(Value::is_object)
    }
}

/// One entry of `inputRequests`: a bare `{method, params}`, no `jsonrpc`, no `id`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InputRequest {
    method: &'static str,
    params: Value,
    #[serde(skip)]
    kind: InputKind,
}

impl InputRequest {
    /// A form elicitation: a message and the (flat) schema of what to ask.
    #[must_use]
    pub fn elicit(message: impl Into<String>, requested_schema: Value) -> Self {
        let mut params = Map::new();
        params.insert("message".into(), Value::String(message.into()));
        params.insert("requestedSchema".into(), requested_schema);
        Self::elicitation(Value::Object(params))
    }

    /// An `elicitation/create` request with the given params, verbatim.
    #[must_use]
    pub fn elicitation(params: Value) -> Self {
        Self::of(InputKind::Elicitation, params)
    }

    /// A `sampling/createMessage` of one user text message.
    #[must_use]
    pub fn sample_text(text: impl Into<String>, max_tokens: u32) -> Self {
        Self::sampling(json!({
            "messages": [{"role": "user", "content": {"type": "text", "text": text.into()}}],
            "maxTokens": max_tokens,
        }))
    }

    /// A `sampling/createMessage` request with the given params, verbatim.
    #[must_use]
    pub fn sampling(params: Value) -> Self {
        Self::of(InputKind::Sampling, params)
    }

    /// A `roots/list` request.
    #[must_use]
    pub fn list_roots() -> Self {
        Self::of(InputKind::Roots, json!({}))
    }

    fn of(kind: InputKind, params: Value) -> Self {
        InputRequest {
            method: kind.method(),
            params,
            kind,
        }
    }

    /// The kind of input asked for.
    #[must_use]
    pub fn kind(&self) -> InputKind {
        self.kind
    }

    /// The client capabilities this request needs, as a `ClientCapabilities`
    /// object: `{"elicitation": {}}` for a form elicitation,
    /// `{"elicitation": {"url": {}}}` for a URL one, `{"sampling": {}}` plus
    /// `tools` when it passes `tools` or `toolChoice` and `context` when it
    /// asks for `includeContext` other than `"none"`, `{"roots": {}}`.
    #[must_use]
    pub fn required_capabilities(&self) -> Value {
        let mut needs = Map::new();
        for sub in self.sub_capabilities() {
            needs.insert(sub.to_owned(), json!({}));
        }
        let mut required = Map::new();
        required.insert(self.kind.capability().to_owned(), Value::Object(needs));
        Value::Object(required)
    }

    /// Whether a client that declared `capabilities` can answer this request.
    #[must_use]
    pub fn allowed_by(&self, capabilities: &Value) -> bool {
        let Some(declared) = capabilities
            .get(self.kind.capability())
            .and_then(Value::as_object)
        else {
            return false;
        };
        let has = |name: &str| declared.get(name).is_some_and(Value::is_object);
        match self.kind {
            InputKind::Elicitation if self.elicitation_mode() == "url" => has("url"),
            // Form mode: `form` declared, or an empty declaration, which
            // means form only (the pre-URL-mode spelling).
            InputKind::Elicitation => {
                has("form") || !(declared.contains_key("form") || declared.contains_key("url"))
            }
            _ => self.sub_capabilities().into_iter().all(has),
        }
    }

    fn elicitation_mode(&self) -> &str {
        self.params
            .get("mode")
            .and_then(Value::as_str)
            .unwrap_or("form")
    }

    /// The members of the kind's capability this request needs.
    fn sub_capabilities(&self) -> Vec<&'static str> {
        match self.kind {
            InputKind::Elicitation if self.elicitation_mode() == "url" => vec!["url"],
            InputKind::Elicitation | InputKind::Roots => Vec::new(),
            InputKind::Sampling => {
                let mut needs = Vec::new();
                if self.params.get("tools").is_some() || self.params.get("toolChoice").is_some() {
                    needs.push("tools");
                }
                if self
                    .params
                    .get("includeContext")
                    .and_then(Value::as_str)
                    .is_some_and(|c| c != "none")
                {
                    needs.push("context");
                }
                needs
            }
        }
    }

    /// The request's params.
    #[must_use]
    pub fn params(&self) -> &Value {
        &self.params
    }
}

/// A handler asked for input the client did not declare it can give (a kind,
/// or a mode or option of one, such as URL elicitation or sampling with
/// tools). Converts to the -32021 error when the handler cannot do without
/// it.
///
/// Not an [`std::error::Error`]: `?` in a handler turns it into the -32021
/// error (every `std::error::Error` would become an execution error).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UndeclaredInput(pub InputKind, Value);

impl std::fmt::Display for UndeclaredInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the client did not declare the capability this input needs: {}",
            self.1
        )
    }
}

impl UndeclaredInput {
    /// The `ClientCapabilities` the refused request needs.
    #[must_use]
    pub fn required(&self) -> &Value {
        &self.1
    }

    /// -32021 (400 on 2026-07-28) with `data.requiredCapabilities` naming
    /// what is needed.
    #[must_use]
    pub fn rpc_error(self) -> RpcError {
        RpcError::new(
            ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
            format!(
                "this request needs client capabilities the client did not declare: {}",
                self.1
            ),
        )
        .data(json!({ "requiredCapabilities": self.1 }))
    }
}

/// The -32021 `MissingRequiredClientCapability` error (400 on 2026-07-28)
/// for `kinds`, with `data.requiredCapabilities` a `ClientCapabilities`
/// object such as `{"sampling": {}}`.
#[must_use]
pub fn missing_capabilities(kinds: &[InputKind]) -> RpcError {
    let required: Map<String, Value> = kinds
        .iter()
        .map(|k| (k.capability().to_owned(), json!({})))
        .collect();
    let names: Vec<&str> = kinds.iter().map(|k| k.capability()).collect();
    RpcError::new(
        ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
        format!(
            "this request needs client capabilities the client did not declare: {}",
            names.join(", ")
        ),
    )
    .data(json!({ "requiredCapabilities": required }))
}

/// An `input_required` answer under construction: the input requests (each
/// of a kind the client declared) and the handler's state, still unsealed.
#[derive(Debug, Clone, PartialEq)]
pub struct InputRequired {
    declared: Value,
    requests: BTreeMap<String, InputRequest>,
    state: Option<Vec<u8>>,
    /// The round this answer opens: one past the retry's.
    round: u32,
}

impl InputRequired {
    /// An empty answer for a client that declared `capabilities`
    /// (a `ClientCapabilities` object).
    #[must_use]
    pub fn new(capabilities: Value) -> Self {
        InputRequired {
            declared: capabilities,
            requests: BTreeMap::new(),
            state: None,
            round: 1,
        }
    }

    /// The answer that opens round `round` (the one after the retry's).
    #[must_use]
    pub(crate) fn round(mut self, round: u32) -> Self {
        self.round = round;
        self
    }

    /// Adds the input request `key`, unless the client did not declare what
    /// it needs ([`InputRequest::allowed_by`]).
    pub fn request(
        mut self,
        key: impl Into<String>,
        request: InputRequest,
    ) -> Result<Self, UndeclaredInput> {
        if !request.allowed_by(&self.declared) {
            return Err(UndeclaredInput(
                request.kind,
                request.required_capabilities(),
            ));
        }
        self.requests.insert(key.into(), request);
        Ok(self)
    }

    /// Sets the handler's state, sealed when rendered and handed back, via
    /// [`Inputs::state`](super::Inputs::state), on the retry.
    #[must_use]
    pub fn state(mut self, state: impl Into<Vec<u8>>) -> Self {
        self.state = Some(state.into());
        self
    }

    /// The input requests so far.
    #[must_use]
    pub fn requests(&self) -> &BTreeMap<String, InputRequest> {
        &self.requests
    }

    /// What a task keeps of this answer instead of sealing it (the tasks
    /// extension): the `inputRequests` object, the handler's state and the
    /// round the answer opens.
    pub(crate) fn into_task_parts(self) -> (serde_json::Map<String, Value>, Option<Vec<u8>>, u32) {
        let requests = match serde_json::to_value(&self.requests) {
            Ok(Value::Object(map)) => map,
            _ => serde_json::Map::new(),
        };
        (requests, self.state, self.round)
    }

    /// The result object: `resultType: "input_required"`, `inputRequests`
    /// (when any) and, always, `requestState` sealed for `binding`: the
    /// handler's state (empty when it set none), the round this answer
    /// opens and the keys it asks (see [`Inputs`](super::Inputs): the retry
    /// may answer those keys only). No `ttlMs`/`cacheScope`: an
    /// `input_required` result is never cached.
    #[must_use]
    pub fn into_result(self, sealer: &Sealer, binding: &Binding) -> Value {
        let mut result = Map::new();
        result.insert("resultType".into(), json!("input_required"));
        if !self.requests.is_empty() {
            result.insert(
                "inputRequests".into(),
                serde_json::to_value(&self.requests).unwrap_or_else(|_| json!({})),
            );
        }
        // Always a state, even an empty one: it carries the round and the
        // keys asked, so the retry can answer those and only those.
        let round = Round {
            number: self.round,
            asked: self.requests.into_keys().collect(),
            state: self.state.unwrap_or_default(),
        };
        result.insert(
            "requestState".into(),
            json!(sealer.seal(binding, &round.encode())),
        );
        Value::Object(result)
    }
}

/// The methods on which a server may answer `input_required` (SEP-2322 §Supported Requests).
pub const MRTR_METHODS: [&str; 3] = ["tools/call", "prompts/get", "resources/read"];

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::mrtr::seal::tests::{binding, sealer};

    #[test]
    fn missing_capability_is_32021_with_required_capabilities() {
        let error = missing_capabilities(&[InputKind::Sampling, InputKind::Elicitation]);
        assert_eq!(error.code, ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY);
        assert_eq!(
            error.data.unwrap()["requiredCapabilities"],
            json!({"sampling": {}, "elicitation": {}})
        );
    }

    #[test]
    fn modes_and_options_need_their_sub_capabilities() {
        let url =
            InputRequest::elicitation(json!({"mode": "url", "message": "m", "url": "https://x"}));
        let form = InputRequest::elicit("m", json!({"type": "object", "properties": {}}));
        assert_eq!(
            url.required_capabilities(),
            json!({"elicitation": {"url": {}}})
        );
        assert_eq!(form.required_capabilities(), json!({"elicitation": {}}));
        // An empty declaration means form only.
        assert!(form.allowed_by(&json!({"elicitation": {}})));
        assert!(!url.allowed_by(&json!({"elicitation": {}})));
        assert!(form.allowed_by(&json!({"elicitation": {"form": {}}})));
        assert!(!url.allowed_by(&json!({"elicitation": {"form": {}}})));
        assert!(url.allowed_by(&json!({"elicitation": {"url": {}}})));
        assert!(!form.allowed_by(&json!({"elicitation": {"url": {}}})));
        assert!(form.allowed_by(&json!({"elicitation": {"form": {}, "url": {}}})));

        let plain = InputRequest::sample_text("hi", 5);
        let with_tools =
            InputRequest::sampling(json!({"messages": [], "maxTokens": 5, "tools": []}));
        let choosing = InputRequest::sampling(
            json!({"messages": [], "maxTokens": 5, "toolChoice": {"mode": "auto"}}),
        );
        let context = InputRequest::sampling(
            json!({"messages": [], "maxTokens": 5, "includeContext": "thisServer"}),
        );
        let no_context = InputRequest::sampling(
            json!({"messages": [], "maxTokens": 5, "includeContext": "none"}),
        );
        let sampling = json!({"sampling": {}});
        assert!(plain.allowed_by(&sampling) && no_context.allowed_by(&sampling));
        for needy in [&with_tools, &choosing, &context] {
            assert!(!needy.allowed_by(&sampling), "{needy:?}");
        }
        assert!(with_tools.allowed_by(&json!({"sampling": {"tools": {}}})));
        assert!(context.allowed_by(&json!({"sampling": {"context": {}}})));
        assert_eq!(
            with_tools.required_capabilities(),
            json!({"sampling": {"tools": {}}})
        );
        assert_eq!(
            context.required_capabilities(),
            json!({"sampling": {"context": {}}})
        );
        assert!(InputRequest::list_roots().allowed_by(&json!({"roots": {"listChanged": true}})));

        // Asking anyway is refused, naming exactly what is missing.
        let err = InputRequired::new(json!({"elicitation": {"form": {}}}))
            .request("u", url)
            .unwrap_err();
        assert_eq!(err.required(), &json!({"elicitation": {"url": {}}}));
        assert_eq!(
            err.rpc_error().code,
            ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
        );
    }

    #[test]
    fn an_empty_answer_still_carries_a_state() {
        let s = sealer();
        let b = binding();
        let result = InputRequired::new(json!({})).into_result(&s, &b);
        let state = result["requestState"].as_str().unwrap();
        let round = Round::decode(&s.unseal(&b, state).unwrap()).unwrap();
        assert_eq!(
            (round.number, round.asked.len(), round.state.len()),
            (1, 0, 0)
        );
        assert!(result.get("inputRequests").is_none());
        let roots = InputRequired::new(json!({"roots": {}}))
            .request("r", InputRequest::list_roots())
            .unwrap()
            .into_result(&s, &b);
        // Issue 16, item 14: a state always, binding the keys asked.
        let sealed = roots["requestState"].as_str().unwrap();
        let round = Round::decode(&s.unseal(&b, sealed).unwrap()).unwrap();
        assert_eq!(round.asked, ["r"]);
        assert_eq!(
            roots["inputRequests"]["r"],
            json!({"method": "roots/list", "params": {}})
        );
    }
}
