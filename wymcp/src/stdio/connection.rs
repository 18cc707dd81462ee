//! One stdio connection: the lines read, each checked and handed to the
//! surface, the answers written by the one writer.
//!
//! Each line goes through, in order, and stops at the first refusal:
//!
//! 1. the line ceiling ([`Lines`]);
//! 2. the JSON parse, bounded by [`Limits::json_values`](crate::Limits)
//!    ([`parse_bounded`]: `-32700`, or `-32600` past the bound; id null);
//! 3. classification ([`classify_within`], string ids bounded by
//!    `Limits::id_bytes`) and the era ([`era_of_message`]: stdio has no
//!    header layer, so the message alone says it);
//! 4. a 2026-07-28 message's protocol fields ([`read_fields`], [`judge`]);
//!    a 2025 message is held to the revision its connection negotiated
//!    with `initialize`, when it did;
//! 5. the schema of its method in that revision ([`check`]);
//! 6. for a request: an id not already in flight, and room under the
//!    in-flight ceiling;
//! 7. the surface ([`Surface::answer`](crate::surface::Surface)).
//!
//! Steps 2 to 5 and 7 are the same functions the HTTP chain's parse step,
//! `Classify`, `ProtocolFields`, `Validate` and `Dispatch` call, with the
//! server's own [`Limits`](crate::Limits). A refused request is
//! answered with its id under the rejection-id rule ([`answer_id`]); a
//! refused notification is never answered (JSON-RPC answers no
//! notification) and a JSON-RPC response from the client (the answer to a
//! server request this server never makes) is dropped.
//!
//! Steps 1 to 7 run in order on the reading task, so a
//! `notifications/cancelled` always finds the request it follows. Every
//! request the surface answers with a running handler or a listen stream
//! then runs as a task of its own, and writes its notifications and its
//! answer as they come: a slow call never holds a fast one up. One writer
//! task owns the output and writes each message whole, with its `\n`.
//!
//! A 2025 client's `initialize` that succeeds leaves the connection its
//! session token, and opens the session stream the token names (one a
//! connection: a second `initialize` replaces it), which then writes as a
//! task of its own ([`run_session`]). The token goes back to the surface
//! with `resources/subscribe` and `unsubscribe` only, which reach that
//! stream through the change bus.

use std::collections::HashMap;
use std::future::poll_fn;
use std::io;
use std::sync::Arc;

use bytes::Bytes;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt as _, BufWriter};
use tokio::sync::{mpsc, watch};
use tokio::task::{AbortHandle, JoinError, JoinSet};

use super::config::StdioConfig;
use super::lines::{Line, Lines};
use crate::auth::Principal;
use crate::ledger::Caller;
use crate::protocol::error::{ErrorCode, RpcError};
use crate::protocol::fields::{judge, read_fields};
use crate::protocol::json::{JsonError, parse_bounded};
use crate::protocol::jsonrpc::{
    MessageKind, MessageSource, answer_id, classify_within, error_envelope, is_response,
    notification,
};
use crate::protocol::revision::{Era, Revision, era_of_message};
use crate::protocol::text::Bounded;
use crate::protocol::validation::{check, revision_for};
use crate::server::Server;
use crate::surface::ListenStream;
use crate::surface::call::{Answer, Call, Emitted, Outcome, Running, Session, take};
use crate::surface::negotiate;

/// How many messages may wait for the writer; a task with more to say
/// waits its turn (the client reads too slowly).
const OUTBOX: usize = 256;

/// The writer's buffer: small messages and their `\n` go out in one write.
const WRITE_BUFFER: usize = 64 * 1024;

/// Serves one connection until its input ends (then the requests in flight
/// get up to the drain timeout), its output fails, or its input fails.
pub(super) async fn run<R, W>(
    server: Arc<Server>,
    reader: R,
    writer: W,
    config: StdioConfig,
) -> io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (out, outbox) = mpsc::channel(OUTBOX);
    let writer = tokio::spawn(write_lines(writer, outbox));
    let mut lines = Lines::new(reader, config.max_line_bytes);
    let mut connection = Connection::new(server, config, out);
    let read = loop {
        tokio::select! {
            line = lines.next() => match line {
                Ok(Line::Message(line)) => connection.line(line).await,
                Ok(Line::TooLong) => connection.too_long().await,
                Ok(Line::End) => break Ok(()),
                Err(error) => break Err(error),
            },
            Some(done) = connection.tasks.join_next_with_id(), if !connection.tasks.is_empty() => {
                connection.finished(done);
            }
            () = connection.out.closed() => break Ok(()),
        }
    };
    if connection.out.is_closed() {
        // Nothing can be answered any more: stop every call now.
        connection.tasks.shutdown().await;
    } else {
        connection.drain().await;
    }
    drop(connection);
    let written = match writer.await {
        Ok(written) => written,
        Err(error) => Err(io::Error::other(error)),
    };
    read?;
    match written {
        Err(error) if error.kind() == io::ErrorKind::BrokenPipe => {
            tracing::debug!(target: "wymcp::stdio", "the client closed its end of the output");
            Ok(())
        }
        written => written,
    }
}

/// What one connection knows: its calls in flight, and the revision a 2025
/// client negotiated on it.
struct Connection {
    server: Arc<Server>,
    config: StdioConfig,
    out: mpsc::Sender<Bytes>,
    tasks: JoinSet<()>,
    /// The requests in flight by id (its JSON text), for cancellation.
    in_flight: HashMap<String, AbortHandle>,
    /// The id of each task's request.
    ids: HashMap<tokio::task::Id, String>,
    /// Tells open listen streams the connection is ending.
    stopping: watch::Sender<bool>,
    /// The revision `initialize` negotiated, once a 2025 client sent it.
    negotiated: Option<Revision>,
    /// The session token a 2025 `initialize` minted: what names this
    /// connection's session stream to `resources/subscribe`.
    token: Option<Arc<str>>,
    /// The task writing the session stream (one a connection; see
    /// [`run_session`]).
    session_stream: Option<AbortHandle>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        // The session stream is owed nothing: it ends with the connection.
        if let Some(stream) = self.session_stream.take() {
            stream.abort();
        }
    }
}

/// Which check refused a message, for the rejection event.
#[derive(Debug, Clone, Copy)]
enum Check {
    Line,
    Parse,
    Fields,
    Validate,
    InFlight,
    Surface,
}

impl Check {
    fn name(self) -> &'static str {
        match self {
            Check::Line => "line ceiling",
            Check::Parse => "parse",
            Check::Fields => "protocol fields",
            Check::Validate => "validate",
            Check::InFlight => "in flight",
            Check::Surface => "surface",
        }
    }
}

impl Connection {
    fn new(server: Arc<Server>, config: StdioConfig, out: mpsc::Sender<Bytes>) -> Self {
        Connection {
            server,
            config,
            out,
            tasks: JoinSet::new(),
            in_flight: HashMap::new(),
            ids: HashMap::new(),
            stopping: watch::channel(false).0,
            negotiated: None,
            token: None,
            session_stream: None,
        }
    }

    /// Sends one message to the writer (`false` once it is gone).
    async fn send(&self, message: Bytes) -> bool {
        self.out.send(message).await.is_ok()
    }

    /// Answers `id` with `error`, recording one rejection event.
    async fn refuse(&self, id: &Value, error: &RpcError, by: Check) {
        self.send(Bytes::from(refusal(id, error, by))).await;
    }

    async fn too_long(&self) {
        let ceiling = self.config.max_line_bytes;
        let error = RpcError::new(
            ErrorCode::INVALID_REQUEST,
            format!("the line is longer than the line ceiling of {ceiling} bytes; it is skipped"),
        )
        .data(json!({ "ceiling": ceiling, "limit": "max_line_bytes" }));
        self.refuse(&Value::Null, &error, Check::Line).await;
    }

    /// One line: checked, then answered or started (see the module docs).
    async fn line(&mut self, line: Bytes) {
        let limits = *self.server.limits();
        let mut message = match parse_bounded(&line, limits.json_values) {
            Ok(message) => message,
            Err(JsonError::Syntax(error)) => {
                let error = RpcError::new(
                    ErrorCode::PARSE_ERROR,
                    format!("the line is not valid JSON: {error}"),
                );
                return self.refuse(&Value::Null, &error, Check::Parse).await;
            }
            Err(JsonError::TooManyValues(max)) => {
                let error = RpcError::new(
                    ErrorCode::INVALID_REQUEST,
                    format!("the line holds more than {max} JSON values"),
                )
                .data(json!({ "ceiling": max, "limit": "json_values" }));
                return self.refuse(&Value::Null, &error, Check::Parse).await;
            }
        };
        let kind = classify_within(&message, limits.id_bytes);
        let era = era_of_message(&message);
        let id = answer_id(kind, &message);
        let revision = match self.check(kind, era, &message) {
            Ok(revision) => revision,
            Err((error, by)) => {
                if kind == MessageKind::Notification || is_response(&message) {
                    tracing::debug!(
                        target: "wymcp::stdio",
                        check = by.name(),
                        code = error.code.get(),
                        "a notification or response refused; nothing is answered"
                    );
                    return;
                }
                return self.refuse(&id, &error, by).await;
            }
        };
        let key = id.to_string();
        if kind == MessageKind::Request {
            if self.in_flight.contains_key(&key) {
                let error = RpcError::new(
                    ErrorCode::INVALID_REQUEST,
                    "a request with this id is still in flight; ids must not be reused until answered",
                );
                return self.refuse(&id, &error, Check::InFlight).await;
            }
            self.reap();
            if self.tasks.len() >= self.config.max_in_flight {
                let limit = self.config.max_in_flight;
                let error = RpcError::new(
                    ErrorCode::INTERNAL_ERROR,
                    format!("too many requests in flight: the limit is {limit}; retry once one is answered"),
                )
                .data(json!({ "limit": "max_in_flight", "max": limit }));
                return self.refuse(&id, &error, Check::InFlight).await;
            }
        }
        let params = take(Some(&mut message), "params");
        let method = message.get("method").and_then(Value::as_str);
        if kind == MessageKind::Notification && method == Some("notifications/cancelled") {
            self.cancel(params.as_ref());
        }
        let initialize = era == Era::Legacy && method == Some("initialize");
        let negotiated = initialize
            .then(|| negotiate(self.server.revisions(), params.as_ref()))
            .flatten();
        // The token goes with these two methods only: they carry a
        // subscription to the session stream (the surface publishes it for
        // the stream the token names). With a token, any other 2025 call
        // could ask the client mid-call (sampling, elicitation, roots, as
        // the token says it declared), and stdio drops the client's
        // responses (see `check`): such a call would wait for an answer
        // that never comes.
        let session = match method {
            Some("resources/subscribe" | "resources/unsubscribe") if era == Era::Legacy => {
                self.token.clone()
            }
            _ => None,
        };
        let call = Call {
            kind,
            era,
            revision,
            id: id.clone(),
            method,
            params,
            principal: self.config.principal.as_ref(),
            // stdio has no address: a caller is its principal, or nobody.
            caller: self.server.caller_of(self.config.principal.as_ref(), None),
            raw: line,
            // The request span is the HTTP router's; stdio has none yet.
            span: tracing::Span::none(),
            slot: None,
            // No header layer: the connection's token, for a subscription
            // only (see above).
            session: session.as_deref(),
        };
        match self.server.surface.answer(call) {
            Answer::Accepted => {}
            Answer::Done(outcome, session) => {
                let answered = matches!(outcome, Outcome::Result(_));
                if answered && negotiated.is_some() {
                    self.negotiated = negotiated;
                }
                match session {
                    Session::Issued(token) if answered => self.open_session(token.into()),
                    // The token no longer opens (past its time to live): the
                    // client is told to initialize again, and its later
                    // subscriptions are acknowledged, reaching nothing.
                    Session::Refused => self.token = None,
                    Session::Issued(_) | Session::Unchanged => {}
                }
                self.send(render(&id, outcome)).await;
            }
            Answer::Running(running) => {
                let out = self.out.clone();
                let abort = self.tasks.spawn(run_call(running, id, out));
                self.track(key, abort);
            }
            Answer::Listen(stream) => {
                let out = self.out.clone();
                let stopping = self.stopping.subscribe();
                let abort = self.tasks.spawn(run_listen(stream, id, out, stopping));
                self.track(key, abort);
            }
            // Over stdio there is no `WWW-Authenticate`: the error names the
            // scopes the configured principal lacks.
            Answer::Forbidden { what, scopes } => {
                let error = RpcError::new(
                    ErrorCode::INVALID_REQUEST,
                    format!(
                        "forbidden: {what} needs the scopes {}, which the stdio principal does not all hold",
                        scopes.join(" ")
                    ),
                )
                .data(json!({"requiredScopes": scopes}));
                self.refuse(&id, &error, Check::Surface).await;
            }
            // Over stdio there is no `Retry-After`: the error says it all.
            Answer::Busy { error, .. } => self.refuse(&id, &error, Check::Surface).await,
        }
    }

    /// A 2025 `initialize` succeeded with `token`: the connection keeps it
    /// and opens the session stream it names, in place of any before (one
    /// stream a connection). The stream is opened here, before the answer
    /// is written, so that it hears every change made once the client has
    /// read its answer.
    fn open_session(&mut self, token: Arc<str>) {
        if let Some(old) = self.session_stream.take() {
            old.abort();
        }
        self.token = Some(token.clone());
        if !self.server.surface.serves_legacy_stream() {
            return;
        }
        let principal = self.config.principal.clone();
        let caller = self.server.caller_of(principal.as_ref(), None);
        let Some(stream) = session_stream(&self.server, principal.as_ref(), &caller, &token) else {
            return;
        };
        let reopen = Reopen {
            server: self.server.clone(),
            principal,
            caller,
            token,
        };
        let task = tokio::spawn(run_session(
            stream,
            reopen,
            self.out.clone(),
            self.stopping.subscribe(),
        ));
        self.session_stream = Some(task.abort_handle());
    }

    /// Steps 4 and 5 of the module docs: the revision the message speaks,
    /// when known, or the refusal and which check made it.
    fn check(
        &self,
        kind: MessageKind,
        era: Era,
        message: &Value,
    ) -> Result<Option<Revision>, (RpcError, Check)> {
        let served = self.server.revisions();
        let established = match (era, kind) {
            (Era::Modern, MessageKind::Request | MessageKind::Notification) => {
                match read_fields(message, kind == MessageKind::Request) {
                    Ok(Some(version)) => {
                        Some(judge(version, served).map_err(|error| (error, Check::Fields))?)
                    }
                    Ok(None) => None,
                    Err(error) => return Err((error, Check::Fields)),
                }
            }
            (Era::Modern, _) => None,
            (Era::Legacy, _) => self.negotiated,
        };
        let revision = revision_for(era, established, None, message, served);
        check(self.server.schemas(), revision, kind, message)
            .map_err(|error| (error, Check::Validate))?;
        Ok(established)
    }

    /// `notifications/cancelled`: the request it names stops, and nothing
    /// more is sent for it. An unknown or finished request is ignored.
    fn cancel(&mut self, params: Option<&Value>) {
        let Some(id) = params.and_then(|p| p.get("requestId")) else {
            return;
        };
        if let Some(abort) = self.in_flight.remove(&id.to_string()) {
            abort.abort();
            tracing::debug!(target: "wymcp::stdio", "a request in flight was cancelled by the client");
        }
    }

    fn track(&mut self, key: String, abort: AbortHandle) {
        self.ids.insert(abort.id(), key.clone());
        self.in_flight.insert(key, abort);
    }

    /// Forgets a task that ended (answered or cancelled). A handler that
    /// panics is answered by the surface (-32603); a task that panics
    /// nonetheless is logged.
    fn finished(&mut self, done: Result<(tokio::task::Id, ()), JoinError>) {
        let task = match done {
            Ok((task, ())) => task,
            Err(error) => {
                if error.is_panic() {
                    tracing::error!(target: "wymcp::stdio", "a request's task panicked");
                }
                error.id()
            }
        };
        if let Some(key) = self.ids.remove(&task)
            && self
                .in_flight
                .get(&key)
                .is_some_and(|abort| abort.id() == task)
        {
            // (A cancelled request's id may already name a newer request.)
            self.in_flight.remove(&key);
        }
    }

    /// Forgets every task that has ended, so the in-flight count is true.
    fn reap(&mut self) {
        while let Some(done) = self.tasks.try_join_next_with_id() {
            self.finished(done);
        }
    }

    /// The input ended: listen streams are told, and the requests in flight
    /// get up to the drain timeout to answer.
    async fn drain(&mut self) {
        let _ = self.stopping.send(true);
        if self.tasks.is_empty() {
            return;
        }
        tracing::debug!(
            target: "wymcp::stdio",
            in_flight = self.tasks.len(),
            "end of input: finishing the requests in flight"
        );
        let timeout = self.config.drain_timeout;
        let drained = tokio::time::timeout(timeout, async {
            while let Some(done) = self.tasks.join_next_with_id().await {
                self.finished(done);
            }
        })
        .await;
        if drained.is_err() {
            tracing::warn!(
                target: "wymcp::stdio",
                left = self.tasks.len(),
                "drain timeout: the requests still in flight are dropped unanswered"
            );
            self.tasks.shutdown().await;
        }
    }
}

/// The error answer to `id`, and its one rejection event.
fn refusal(id: &Value, error: &RpcError, by: Check) -> Vec<u8> {
    tracing::info!(
        target: "wymcp::rejection",
        transport = "stdio",
        stage = by.name(),
        code = error.code.get(),
        // Escaped and cut short: it may quote client text.
        message = %Bounded(&error.message),
        "request rejected"
    );
    error_envelope(id, error.code, &error.message, error.data.as_ref())
}

/// A request's answer as the line to write.
fn render(id: &Value, outcome: Outcome) -> Bytes {
    match outcome {
        Outcome::Result(bytes) => Bytes::from(bytes),
        // Over stdio there is no `Retry-After`: the error says it all.
        Outcome::Error(error) => Bytes::from(refusal(id, &error, Check::Surface)),
        Outcome::Busy(refused) => Bytes::from(refusal(id, &refused.error, Check::Surface)),
    }
}

/// A running handler: its notifications as it sends them, then its answer.
/// Dropping the task (a cancellation) drops the handler.
async fn run_call(mut running: Running, id: Value, out: mpsc::Sender<Bytes>) {
    loop {
        let message = match poll_fn(|cx| running.poll_next(cx)).await {
            Some(Emitted::Notification(message)) => message,
            Some(Emitted::Final(outcome)) => {
                let _ = out.send(render(&id, outcome)).await;
                return;
            }
            None => {
                let error = RpcError::new(
                    ErrorCode::INTERNAL_ERROR,
                    "the handler ended without an answer",
                );
                let _ = out.send(render(&id, Outcome::Error(error))).await;
                return;
            }
        };
        if out.send(message).await.is_err() {
            return;
        }
    }
}

/// A `subscriptions/listen` stream: its messages as they come, until the
/// server closes it (its `complete` result is the last), the client cancels
/// it, or the connection ends; then, as stdio has it, the server's
/// `notifications/cancelled` naming the listen request is the last.
async fn run_listen<S: MessageSource>(
    mut stream: S,
    id: Value,
    out: mpsc::Sender<Bytes>,
    mut stopping: watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            message = poll_fn(|cx| stream.poll_message(cx)) => {
                let Some(message) = message else { return };
                if out.send(message).await.is_err() || stream.finished() {
                    return;
                }
            }
            () = stopped(&mut stopping) => {
                let cancelled = notification(
                    "notifications/cancelled",
                    &json!({ "requestId": id, "reason": "the server is shutting down" }),
                );
                let _ = out.send(Bytes::from(cancelled)).await;
                return;
            }
        }
    }
}

/// What reopens a session stream: the token, and whom it is held for.
struct Reopen {
    server: Arc<Server>,
    principal: Option<Principal>,
    caller: Caller,
    token: Arc<str>,
}

/// The session stream `token` names, held for `principal` counted as
/// `caller` (a place of [`Kind::LegacyStreams`](crate::ledger::Kind)), or
/// none when it does not open (the token past its time to live, the
/// caller over its share, the server at its cap): then the connection is
/// told nothing unasked, as an HTTP client whose GET is refused.
fn session_stream(
    server: &Server,
    principal: Option<&Principal>,
    caller: &Caller,
    token: &str,
) -> Option<Box<ListenStream>> {
    let answer = server
        .surface
        .legacy_stream(principal, caller, token, false);
    if let Answer::Listen(stream) = answer {
        return Some(stream);
    }
    tracing::debug!(
        target: "wymcp::stdio",
        "the session stream does not open; the connection is told nothing unasked"
    );
    None
}

/// A 2025 client's session stream over stdio: the connection is the
/// stream. Its messages (list changes, `resources/updated` for what the
/// connection subscribes to) are written as notifications, untagged, until
/// the connection ends (then nothing more: there is no request to cancel)
/// or the stream does. A stream that reaches its lifetime is reopened at
/// once, watching what it watched (the client never saw it end, so never
/// subscribes again); a change published in the instant between the two
/// is missed. A stream whose place gave way to a caller under its fair
/// share writes the caller-share error (id null, as on the GET stream) and
/// is not reopened: reopening would take the place back from the caller it
/// gave way to. One the server closes is not reopened either.
async fn run_session(
    mut stream: Box<ListenStream>,
    reopen: Reopen,
    out: mpsc::Sender<Bytes>,
    mut stopping: watch::Receiver<bool>,
) {
    loop {
        loop {
            tokio::select! {
                message = poll_fn(|cx| stream.poll_message(cx)) => {
                    let Some(message) = message else { break };
                    if out.send(message).await.is_err() {
                        return;
                    }
                }
                () = stopped(&mut stopping) => return,
            }
        }
        if !stream.outlived() {
            return;
        }
        let Some(mut next) = session_stream(
            &reopen.server,
            reopen.principal.as_ref(),
            &reopen.caller,
            &reopen.token,
        ) else {
            return;
        };
        next.carry_over(&stream);
        stream = next;
    }
}

/// Resolves once the connection is ending (or gone).
async fn stopped(stopping: &mut watch::Receiver<bool>) {
    let _ = stopping.wait_for(|stopping| *stopping).await;
}

/// The one writer: each message whole, then its `\n`, flushed on its own.
///
/// One write per message rather than a batch: a client that handles a
/// notification a moment later than a response (the TypeScript SDK runs its
/// notification handlers in a microtask, its response handlers at once)
/// then mostly reads a request's progress apart from its answer, rather
/// than losing the last one to the answer read with it.
async fn write_lines<W: AsyncWrite + Unpin>(
    writer: W,
    mut outbox: mpsc::Receiver<Bytes>,
) -> io::Result<()> {
    let mut out = BufWriter::with_capacity(WRITE_BUFFER, writer);
    while let Some(message) = outbox.recv().await {
        write_line(&mut out, &message).await?;
        out.flush().await?;
    }
    out.shutdown().await
}

async fn write_line<W: AsyncWrite + Unpin>(out: &mut W, message: &[u8]) -> io::Result<()> {
    // serde_json writes no raw newline (a string's is escaped): one message
    // is one line.
    debug_assert!(!message.contains(&b'\n'), "a message with a raw newline");
    out.write_all(message).await?;
    out.write_all(b"\n").await
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn responses_are_told_from_requests() {
        assert!(is_response(
            &json!({"jsonrpc": "2.0", "id": 1, "result": {}})
        ));
        assert!(is_response(
            &json!({"id": 1, "error": {"code": 1, "message": "x"}})
        ));
        assert!(!is_response(&json!({"id": 1, "method": "m", "result": {}})));
        assert!(!is_response(&json!({"result": {}})));
        assert!(!is_response(&json!([])));
    }
}
