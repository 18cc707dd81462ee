//! The transport-free call: a request as a transport hands it to the
//! surface, and what the surface answers. Nothing here knows HTTP, an
//! exchange or a socket: the HTTP chain's [`Dispatch`](crate::stages::Dispatch)
//! translates an exchange into a [`Call`] and an [`Answer`] into a response.
//!
//! Everything up to running a handler is synchronous; only the handler's
//! future is awaited, by the transport, through [`Running`].

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};

use bytes::Bytes;
use serde::Serialize;
use serde_json::Value;

use super::context::{BoxFuture, Context, HandlerError};
use super::finish::Finishing;
use super::listen::ListenStream;
use super::mid_call::{MidCall, Peer};
use super::notify::{Emitter, Notifications};
use crate::auth::Principal;
use crate::ledger::{Caller, Ledger, Refusal};
use crate::mrtr::{Binding, InputRequired, Inputs, MRTR_METHODS, Sealer};
use crate::protocol::error::{ErrorCode, RpcError};
use crate::protocol::jsonrpc::{self, MessageKind};
use crate::protocol::revision::{Era, Revision};
use crate::protocol::text::Bounded;

/// One message, as a transport hands it to the surface once it is trusted
/// (past Validate): the kind and era classification tagged, the id an
/// answer carries, the method, the params (owned: a handler takes its
/// arguments out of them), the caller.
#[derive(Debug)]
pub(crate) struct Call<'a> {
    /// The message kind.
    pub(crate) kind: MessageKind,
    /// The era the message speaks.
    pub(crate) era: Era,
    /// The revision, when a stage established it.
    pub(crate) revision: Option<Revision>,
    /// The id an answer carries: the message's for a request, `null`
    /// otherwise (the rejection-id rule).
    pub(crate) id: Value,
    /// The method, when it is a string.
    pub(crate) method: Option<&'a str>,
    /// The params, taken out of the message.
    pub(crate) params: Option<Value>,
    /// The authenticated caller.
    pub(crate) principal: Option<&'a Principal>,
    /// Who the ledger counts the call against (see
    /// [`Caller`](crate::ledger::Caller)): the principal, else the client's
    /// address as the server groups addresses.
    pub(crate) caller: Caller,
    /// The message as the transport read it. An MRTR `requestState` sealed
    /// in the answer is bound to its params, parsed again from these bytes
    /// only then (rare), so a served call never copies its params.
    pub(crate) raw: Bytes,
    /// The request span, when the transport keeps one (see
    /// [`trace`](crate::trace)).
    pub(crate) span: tracing::Span,
    /// What the request's line and metrics say (see
    /// [`trace`](crate::trace)), when the request came through the router.
    pub(crate) slot: Option<crate::trace::SpanSlot>,
    /// A 2025 request's `Mcp-Session-Id`, when the transport has one (see
    /// [`mid_call`](super::mid_call)). The surface opens it into what the
    /// client declared, which it keeps for the call ([`Env::declared`]).
    pub(crate) session: Option<&'a str>,
}

/// What the surface answers a call with.
#[derive(Debug)]
pub(crate) enum Answer {
    /// A notification, accepted: nothing is sent back.
    Accepted,
    /// The answer, already made, and what it says of the session token.
    Done(Outcome, Session),
    /// A handler to run; its notifications come before its answer.
    Running(Running),
    /// A `subscriptions/listen` stream (boxed: it is far larger than the
    /// other answers).
    Listen(Box<ListenStream>),
    /// Refused: the item the call names requires scopes the caller does not
    /// hold (see [`scopes`](super::scopes)). The transport answers `403`
    /// `insufficient_scope`, naming these and the server's own.
    Forbidden {
        /// What the call names (`tool \`add_note\``), for the message.
        what: String,
        /// The item's scopes.
        scopes: Vec<String>,
    },
    /// Refused for want of capacity: the caller at its own limit, or the
    /// server at its limit for everyone; the client may try again after
    /// `retry_after`.
    Busy {
        /// The error.
        error: RpcError,
        /// The ledger's refusal: the caller's share (429) or the global
        /// cap (503).
        refusal: Refusal,
        /// When to try again.
        retry_after: std::time::Duration,
    },
}

/// What a done answer says of a 2025 client's session token (see
/// [`mid_call`](super::mid_call)): nothing (every answer but two), the
/// token a 2025 `initialize` mints for what the client declared (the
/// transport sends it as `Mcp-Session-Id`), or that the request's token
/// does not open (the client must initialize again: HTTP answers `404`,
/// as 2025-11-25 asks of a session the server does not know).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Session {
    /// Nothing to say of a token.
    Unchanged,
    /// A 2025 `initialize` answered: the token of what the client declared.
    Issued(String),
    /// The request's token does not open; the outcome is its error.
    Refused,
}

/// A request's answer: a result, or an error for the transport to send.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// The bytes of the JSON-RPC result response, id included.
    Result(Vec<u8>),
    /// A JSON-RPC error; the transport renders it with the call's id.
    Error(RpcError),
    /// Refused for want of capacity once the call was under way (a store
    /// shared by replicas holds the caller's share): answered as
    /// [`Answer::Busy`] is, with its status and `Retry-After`.
    Busy(Box<Busy>),
}

/// What an [`Outcome::Busy`] answers.
#[derive(Debug)]
pub(crate) struct Busy {
    /// The error.
    pub(crate) error: RpcError,
    /// The refusal: the caller's share (429) or the global cap (503).
    pub(crate) refusal: Refusal,
    /// When to try again.
    pub(crate) retry_after: std::time::Duration,
}

impl From<RpcError> for Answer {
    fn from(error: RpcError) -> Self {
        Answer::done(Outcome::Error(error))
    }
}

impl Answer {
    /// The answer `outcome`, saying nothing of a session token.
    pub(crate) fn done(outcome: Outcome) -> Self {
        Answer::Done(outcome, Session::Unchanged)
    }
}

/// What every handled method's answer needs of the server, and what the
/// surface learnt of the caller's client for this call.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Env<'a> {
    /// What completes every result.
    pub(crate) finishing: &'a Arc<Finishing>,
    /// The sealer of MRTR `requestState`.
    pub(crate) sealer: &'a Arc<Sealer>,
    /// What every handler's context shares (the catalog, …).
    pub(crate) shared: &'a Arc<http::Extensions>,
    /// The mid-call requests of 2025 calls.
    pub(crate) peer: &'a Arc<Peer>,
    /// What a 2025 client declared at `initialize`, from the session token
    /// its request carries, once the surface opened it (`None` for a
    /// 2026-07-28 call, and for a 2025 one without a token).
    pub(crate) declared: Option<&'a Value>,
    /// The count of what callers hold (a handler's queued notifications).
    pub(crate) ledger: &'a Ledger,
    /// The most bytes of notifications one request may queue.
    pub(crate) notification_bytes: usize,
}

/// Renders a request's result: its id, its era, the server's identity.
/// Cheap to clone into a handler's future.
#[derive(Debug, Clone)]
pub(crate) struct Reply {
    id: Value,
    era: Era,
    finishing: Arc<Finishing>,
}

impl Reply {
    /// The era of the request.
    pub(crate) fn era(&self) -> Era {
        self.era
    }

    /// What completes the request's result.
    pub(crate) fn finishing(&self) -> &Finishing {
        &self.finishing
    }

    /// The response carrying `result` as it is.
    pub(crate) fn result<R: Serialize>(&self, result: &R) -> Vec<u8> {
        jsonrpc::result_envelope(&self.id, result)
    }

    /// The response carrying `result` completed for the wire (see
    /// [`Finishing::finish`]).
    pub(crate) fn finished(&self, result: Value, cacheable: bool) -> Vec<u8> {
        self.result(&self.finishing.finish(self.era, result, cacheable))
    }
}

impl Call<'_> {
    /// The id, era and identity a result of this call is rendered with.
    pub(crate) fn reply(&self, finishing: &Arc<Finishing>) -> Reply {
        Reply {
            id: self.id.clone(),
            era: self.era,
            finishing: Arc::clone(finishing),
        }
    }

    /// Who the caller is, for the limits counted per caller: the
    /// principal's subject when the server authenticates, else the client's
    /// address.
    pub(crate) fn caller(&self) -> &Caller {
        &self.caller
    }

    /// The subject an MRTR state is bound to: the principal's, `""` when
    /// the server has no auth.
    pub(crate) fn subject(&self) -> &str {
        self.principal.map_or("", |p| p.subject.as_str())
    }

    /// Readies the call's handler: the context (with `_meta` taken out of
    /// the params), the principal, the MRTR view (the retry's
    /// `inputResponses` and unsealed `requestState`; one that does not
    /// unseal is -32602), and the notifications the request asked for.
    pub(crate) fn handling(
        &mut self,
        method: &'static str,
        env: Env<'_>,
    ) -> Result<Handling, RpcError> {
        let (inputs, (emitter, notifications)) = match (self.era, env.declared) {
            (Era::Modern, _) => (
                Inputs::from_request(env.sealer, self.subject(), method, self.params.as_ref())?,
                Emitter::for_params(self.params.as_ref()),
            ),
            // 2025 has no MRTR fields in its params; what the client
            // declared comes from its session token, when it sent one.
            (Era::Legacy, Some(declared)) if MRTR_METHODS.contains(&method) => (
                Inputs::declared(declared.clone()),
                Emitter::for_legacy_params(self.params.as_ref()),
            ),
            (Era::Legacy, _) => (
                Inputs::from_request(env.sealer, self.subject(), method, None)?,
                Emitter::for_legacy_params(self.params.as_ref()),
            ),
        };
        let emitter = emitter.bounded(env.ledger, &self.caller, env.notification_bytes);
        let mid_call = match (self.era, env.declared) {
            (Era::Legacy, Some(declared)) if MRTR_METHODS.contains(&method) => Some(MidCall {
                peer: Arc::clone(env.peer),
                capabilities: declared.clone(),
                caller: self.caller.clone(),
                emitter: emitter.clone(),
            }),
            _ => None,
        };
        let meta = take(self.params.as_mut(), "_meta").unwrap_or(Value::Null);
        let mut cx = Context::new(
            Arc::clone(env.shared),
            method,
            self.era,
            meta,
            self.principal.cloned(),
            inputs,
            emitter,
        );
        cx.revision = self.revision;
        if let Some(mid_call) = &mid_call {
            cx.client_capabilities = mid_call.capabilities.clone();
        }
        let finisher = Finisher {
            method,
            sent: self.raw.clone(),
            subject: self.subject().to_owned(),
            sealer: Arc::clone(env.sealer),
            reply: self.reply(env.finishing),
        };
        Ok(Handling {
            cx,
            notifications,
            finisher,
            mid_call,
        })
    }
}

/// The string member `key` of `params`, bounded for a log line.
fn text_of(params: &Value, key: &str) -> String {
    Bounded(params.get(key).and_then(Value::as_str).unwrap_or_default()).to_string()
}

/// What a handler of `method` answers, named for a log line from the
/// request's bytes `sent`: the tool, the prompt or the resource of its
/// `params`, bounded and escaped.
fn what(method: &str, sent: &[u8]) -> String {
    let message = serde_json::from_slice::<Value>(sent).ok();
    match (method, message.as_ref().and_then(|m| m.get("params"))) {
        ("tools/call", Some(p)) => format!("tool `{}`", text_of(p, "name")),
        ("prompts/get", Some(p)) => format!("prompt `{}`", text_of(p, "name")),
        ("resources/read", Some(p)) => format!("resource `{}`", text_of(p, "uri")),
        _ => format!("`{method}`"),
    }
}

/// A future whose panic is caught and given as an error.
pub(crate) struct CatchUnwind<F>(pub(crate) F);

impl<F: std::future::Future + Unpin> std::future::Future for CatchUnwind<F> {
    type Output = Result<F::Output, Box<dyn std::any::Any + Send>>;

    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Self::Output> {
        let inner = &mut self.0;
        match std::panic::catch_unwind(AssertUnwindSafe(|| std::pin::Pin::new(inner).poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(output)) => Poll::Ready(Ok(output)),
            Err(panic) => Poll::Ready(Err(panic)),
        }
    }
}

/// What a handler gave, or the panic that stopped it.
type Guarded = Result<Result<Vec<u8>, HandlerError>, Box<dyn std::any::Any + Send>>;

/// Makes a handler's future with `run` and runs it to its end, a panic in
/// either caught: a handler that panics answers -32603, and the connection
/// and every other call go on.
async fn guarded(
    run: &mut (impl FnMut(Context, Reply) -> BoxFuture<Result<Vec<u8>, HandlerError>> + Send),
    cx: Context,
    reply: Reply,
) -> Guarded {
    let future = std::panic::catch_unwind(AssertUnwindSafe(|| run(cx, reply)))?;
    CatchUnwind(future).await
}

/// Removes the member `key` of `value` when it is an object.
pub(crate) fn take(value: Option<&mut Value>, key: &str) -> Option<Value> {
    value?.as_object_mut()?.remove(key)
}

/// A request about to run its handler: the handler's context, the
/// request's notifications, and what turns the handler's outcome into the
/// answer.
#[derive(Debug)]
pub(crate) struct Handling {
    cx: Context,
    notifications: Notifications,
    finisher: Finisher,
    /// A 2025 call that may ask its client mid-call.
    mid_call: Option<MidCall>,
}

impl Handling {
    /// The handler's context and the rendering of the request's answer, for
    /// a call that runs as a task rather than on its request: the task's
    /// handler sends no notification (there is no stream to send it on).
    /// The handler's context, before it runs.
    pub(crate) fn cx(&self) -> &Context {
        &self.cx
    }

    pub(crate) fn into_task(self) -> (Context, Reply) {
        (self.cx, self.finisher.reply)
    }

    /// Whether the handler may be run more than once (a 2025 call that may
    /// ask its client mid-call runs again with the answers): the closure
    /// given to [`run`](Self::run) then keeps what it hands each run.
    pub(crate) fn reruns(&self) -> bool {
        self.mid_call.is_some()
    }

    /// Runs the handler `run` makes of the context (its result rendered
    /// with the [`Reply`] given) as the call's answer. An `input_required`
    /// error becomes the MRTR result, its state sealed for this request; in
    /// a 2025 call that may ask mid-call, its requests are sent on the
    /// call's stream and the handler runs again with the answers.
    pub(crate) fn run(
        self,
        mut run: impl FnMut(Context, Reply) -> BoxFuture<Result<Vec<u8>, HandlerError>> + Send + 'static,
    ) -> Answer {
        let Handling {
            cx,
            notifications,
            finisher,
            mid_call,
        } = self;
        let run: BoxFuture<Outcome> = match mid_call {
            None => Box::pin(async move {
                let reply = finisher.reply.clone();
                match guarded(&mut run, cx, reply).await {
                    Ok(outcome) => finisher.answer(outcome),
                    Err(panic) => finisher.panicked(&*panic),
                }
            }),
            Some(mid_call) => Box::pin(async move {
                let mut cx = cx;
                let mut rounds = 0u32;
                loop {
                    let reply = finisher.reply.clone();
                    let outcome = match guarded(&mut run, cx.clone(), reply).await {
                        Ok(outcome) => outcome,
                        Err(panic) => return finisher.panicked(&*panic),
                    };
                    let Err(HandlerError::InputRequired(ask)) = outcome else {
                        return finisher.answer(outcome);
                    };
                    rounds += 1;
                    if rounds > mid_call.peer.limits().max_rounds {
                        return Outcome::Error(super::mid_call::failed(
                            format!(
                                "the handler of `{}` asked its client for input more than {} times",
                                finisher.method,
                                mid_call.peer.limits().max_rounds
                            ),
                            serde_json::json!({"limit": "max_rounds"}),
                        ));
                    }
                    let (requests, state, round) = ask.into_task_parts();
                    match mid_call.ask(requests).await {
                        Ok(answers) => {
                            cx.inputs = Inputs::resumed(
                                mid_call.capabilities.clone(),
                                answers,
                                round,
                                state,
                            );
                        }
                        Err(error) => return Outcome::Error(error),
                    }
                }
            }),
        };
        Answer::Running(Running {
            rx: notifications.rx,
            run: Some(run),
            last: None,
        })
    }
}

/// What a handler's answer needs of its call, owned, so the answer can be
/// made by the handler's future after the call is gone.
#[derive(Debug)]
struct Finisher {
    method: &'static str,
    /// The message's bytes, for the binding of a sealed state, and for
    /// naming what the handler answers in the log line of a panic (parsed
    /// again only then: naming it on every call cost ≈ 3,000 instructions
    /// of a ≈ 77,000 small call).
    sent: Bytes,
    subject: String,
    sealer: Arc<Sealer>,
    reply: Reply,
}

impl Finisher {
    fn answer(self, outcome: Result<Vec<u8>, HandlerError>) -> Outcome {
        match outcome {
            Ok(bytes) => Outcome::Result(bytes),
            Err(HandlerError::InputRequired(input)) => match self.input_required(input) {
                Ok(bytes) => Outcome::Result(bytes),
                Err(error) => Outcome::Error(error.into_rpc(self.reply.era, self.method)),
            },
            Err(error) => Outcome::Error(error.into_rpc(self.reply.era, self.method)),
        }
    }

    /// The answer of a handler that panicked: logged at error level naming
    /// what it answers, and -32603 to the client, which learns nothing of
    /// the panic.
    fn panicked(&self, panic: &(dyn std::any::Any + Send)) -> Outcome {
        let message = panic
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
            .unwrap_or("(not a string)");
        tracing::error!(
            target: "wymcp::handler",
            handler = %what(self.method, &self.sent),
            panic = %Bounded(message),
            "a handler panicked; answered -32603"
        );
        Outcome::Error(RpcError::new(
            ErrorCode::INTERNAL_ERROR,
            format!("the handler of `{}` failed", self.method),
        ))
    }

    /// The `input_required` result of an MRTR round, its state sealed for
    /// this request (each input asked is of a kind the client declared:
    /// [`InputRequired::request`] refuses others). A 2025 client has no
    /// MRTR.
    fn input_required(&self, input: InputRequired) -> Result<Vec<u8>, HandlerError> {
        if self.reply.era == Era::Legacy || !MRTR_METHODS.contains(&self.method) {
            return Err(HandlerError::InputRequired(input));
        }
        let mut message = serde_json::from_slice::<Value>(&self.sent).ok();
        let params = take(message.as_mut(), "params");
        let binding = Binding::new(&self.subject, self.method, params.as_ref());
        let result = input.into_result(&self.sealer, &binding);
        Ok(self.reply.finished(result, false))
    }
}

/// One thing a running call says: a notification, or its answer (the last).
#[derive(Debug)]
pub(crate) enum Emitted {
    /// A progress or log notification's bytes.
    Notification(Bytes),
    /// The answer.
    Final(Outcome),
}

/// A handler running: its future and its notifications, polled by the
/// transport until the answer. The handler future lives here, so dropping
/// the call (a client that went away) cancels it.
pub(crate) struct Running {
    /// `None` when the request asked for no notification.
    rx: Option<super::notify::Receiver>,
    run: Option<BoxFuture<Outcome>>,
    /// The answer, once the handler gave it.
    last: Option<Outcome>,
}

impl std::fmt::Debug for Running {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Running")
            .field("notifies", &self.rx.is_some())
            .field("done", &self.run.is_none())
            .finish_non_exhaustive()
    }
}

impl Running {
    /// A handler's future whose answer needs no rendering, and the
    /// notifications it sends (for tests of the transports).
    #[cfg(test)]
    pub(crate) fn new(
        notifications: Notifications,
        run: impl std::future::Future<Output = Outcome> + Send + 'static,
    ) -> Self {
        Running {
            rx: notifications.rx,
            run: Some(Box::pin(run)),
            last: None,
        }
    }

    /// An answer made by `run`, which sends no notification (a task
    /// method's store round trip).
    pub(crate) fn future(run: impl std::future::Future<Output = Outcome> + Send + 'static) -> Self {
        Running {
            rx: None,
            run: Some(Box::pin(run)),
            last: None,
        }
    }

    /// Whether the call may send notifications before its answer.
    pub(crate) fn notifies(&self) -> bool {
        self.rx.is_some()
    }

    /// The next thing the call says: notifications in the order sent, then
    /// the answer, then `None`. Nothing the handler sends after its answer
    /// is given.
    pub(crate) fn poll_next(&mut self, cx: &mut TaskContext<'_>) -> Poll<Option<Emitted>> {
        loop {
            let Some(run) = &mut self.run else {
                // The answer is given: first what was queued before it
                // (still the request's place in the ledger until taken).
                if let Some(rx) = &mut self.rx
                    && let Some(message) = rx.try_recv()
                {
                    return Poll::Ready(Some(Emitted::Notification(message)));
                }
                return Poll::Ready(self.last.take().map(Emitted::Final));
            };
            if let Some(rx) = &mut self.rx
                && let Poll::Ready(Some(message)) = rx.poll_recv(cx)
            {
                return Poll::Ready(Some(Emitted::Notification(message)));
            }
            let Poll::Ready(outcome) = run.as_mut().poll(cx) else {
                return Poll::Pending;
            };
            self.run = None;
            if let Some(rx) = &mut self.rx {
                // Nothing the handler sends after its answer is delivered.
                rx.close();
            }
            self.last = Some(outcome);
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.run.is_some() {
            tracing::debug!(target: "wymcp::stream", "the client went away; the handler is cancelled");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::what;

    /// The panic line names what the handler answers from the request's
    /// bytes alone (the call keeps no name of its own): the tool, the
    /// prompt or the resource, escaped; the method when there is none.
    #[test]
    fn what_a_handler_answers_is_read_from_the_request_bytes() {
        let tool = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"boom\nline","arguments":{}}}"#;
        assert_eq!(what("tools/call", tool), r"tool `boom\nline`");
        let prompt = br#"{"method":"prompts/get","params":{"name":"greet"}}"#;
        assert_eq!(what("prompts/get", prompt), "prompt `greet`");
        let resource = br#"{"method":"resources/read","params":{"uri":"test://x"}}"#;
        assert_eq!(what("resources/read", resource), "resource `test://x`");
        assert_eq!(
            what("tools/list", br#"{"method":"tools/list"}"#),
            "`tools/list`"
        );
        assert_eq!(what("tools/call", b"not json"), "`tools/call`");
    }
}
