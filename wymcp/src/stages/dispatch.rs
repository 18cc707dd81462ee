//! `Dispatch`: routes a validated message to what answers it.
//!
//! It sits last, after `Validate`: every wire check and the schema check
//! have passed, so the body is trusted to be a well-formed message of its
//! method. It answers
//!
//! * a notification with `202 Accepted` and an empty body (the core protocol
//!   defines no client notification a stateless server acts on);
//! * a request by its method, in the request's era (tagged by
//!   classification):
//!   * 2026-07-28: `server/discover`, `tools/*`, `resources/*`, `prompts/*`,
//!     `completion/complete`. A method removed in 2026 (`initialize`,
//!     `ping`, `logging/setLevel`, `resources/subscribe`, …), an unknown one,
//!     or one gated behind a capability the server does not advertise is
//!     **404/-32601**. Handler errors are 400 (-32602, -32021) or 500
//!     (-32603), since the 2026 transport gives every JSON-RPC error an HTTP
//!     status of its own;
//!   * 2025 (the legacy path): `initialize`, `ping`, `logging/setLevel`,
//!     `resources/subscribe`/`unsubscribe` (acknowledged), and the same
//!     tools, resources, prompts and completion, answered as 2025 results
//!     (no `resultType`, no caching hint; resource not found is -32002).
//!     Errors are JSON-RPC errors in a `200 OK`, as 2025 clients expect them.
//!     No session id is ever issued.
//!
//! Every answer that is not a `202` is a JSON-RPC result or an error through
//! the one rejection sender. Handlers run with a [`Context`]; a handler that
//! sends progress or log notifications gets them delivered on its request's
//! answer (see `Running::respond`).
//!
//! Being last, Dispatch takes `params` out of the exchange's message instead
//! of copying them (the `id` and `method` stay): a tool handler owns its
//! `arguments`, the [`Context`] its `_meta`. An MRTR `requestState` sealed
//! here is bound to the params of the body as the parse step read it.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;

use http::StatusCode;
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::exchange::{Exchange, MessageKind};
use crate::listen::{Filter, Listen, Support};
use crate::mrtr::{Binding, InputRequired, Inputs, Sealer};
use crate::response::{self, Rejection, Rejector, code};
use crate::revision::Era;
use crate::stage::{Flow, Stage};
use crate::stream::{self, Emitter, Notifications};
use crate::surface::{
    Advertised, BoxFuture, CompletionRequest, Context, Finishing, HandlerError, ResourceContents,
    Surface, ToolResult, discover, legacy, pagination,
};

/// Routes the method to its handler; see the module documentation.
#[derive(Debug, Clone, Copy, Default)]
pub struct Dispatch;

impl Stage for Dispatch {
    async fn run(ex: &mut Exchange<'_>) -> Flow {
        // Dispatch is the last stage: it takes `params` out of the message
        // rather than copying them (`id` and `method` stay, for the
        // rejection-id rule). Everything up to running the handler is
        // synchronous; only the handler's future is awaited.
        let params = take(ex.message.as_mut(), "params");
        match prepare(ex, params) {
            Prepared::Answered(flow) => flow,
            Prepared::Running(running) => running.respond().await,
        }
    }
}

/// Removes the member `key` of `value` when it is an object.
fn take(value: Option<&mut Value>, key: &str) -> Option<Value> {
    value?.as_object_mut()?.remove(key)
}

/// How far Dispatch got without awaiting anything.
enum Prepared {
    /// The answer, already made.
    Answered(Flow),
    /// A handler to run.
    Running(Running),
}

impl From<Flow> for Prepared {
    fn from(flow: Flow) -> Self {
        Prepared::Answered(flow)
    }
}

/// A handler's answer before its envelope: a finished result, or a tool
/// result serialised straight onto the wire (see [`Finishing::tool`]).
enum Finished {
    Value(Value),
    Tool(ToolResult),
}

/// A handler's future, its notifications, and what turns its outcome into
/// the answer.
struct Running {
    run: BoxFuture<Result<Finished, HandlerError>>,
    notifications: Notifications,
    finisher: Finisher,
}

impl Running {
    /// Runs the handler and answers with its outcome: plain JSON, or an SSE
    /// stream of its notifications ending with the answer as soon as it
    /// sends one (see [`stream`]). The handler future lives in the response,
    /// so a client that closes the stream cancels it.
    async fn respond(self) -> Flow {
        let Running {
            run,
            notifications,
            finisher,
        } = self;
        let response = stream::respond(notifications, async move {
            let outcome = run.await;
            finisher.answer(outcome)
        })
        .await;
        Flow::Answer(response)
    }
}

fn prepare(ex: &Exchange<'_>, params: Option<Value>) -> Prepared {
    match ex.kind {
        Some(MessageKind::Notification) => return Flow::Answer(response::accepted()).into(),
        Some(MessageKind::Request) => {}
        _ => {
            return ex
                .reject(Rejection::new(
                    StatusCode::BAD_REQUEST,
                    code::INVALID_REQUEST,
                    "the message is not a JSON-RPC request or notification",
                ))
                .into();
        }
    }
    let Some(method) = ex.method() else {
        return ex
            .reject(Rejection::new(
                StatusCode::BAD_REQUEST,
                code::INVALID_REQUEST,
                "the request has no method",
            ))
            .into();
    };
    let Some(route) = Route::of(method, ex.era, &ex.server().surface) else {
        return not_found(ex, method).into();
    };
    route.answer(ex, method, params)
}

/// What answers a method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    Discover,
    Initialize,
    Empty,
    SetLevel,
    ToolsList,
    ToolsCall,
    ResourcesList,
    TemplatesList,
    ResourcesRead,
    PromptsList,
    PromptsGet,
    Complete,
    Listen,
}

impl Route {
    /// The route of `method` in `era`, when the server serves it.
    fn of(method: &str, era: Era, surface: &Surface) -> Option<Route> {
        let a = surface.advertised;
        let route = match (method, era) {
            ("server/discover", Era::Modern) => Route::Discover,
            ("subscriptions/listen", Era::Modern) if listen_support(a) != Support::default() => {
                Route::Listen
            }
            ("initialize", Era::Legacy) => Route::Initialize,
            ("ping", Era::Legacy) => Route::Empty,
            ("logging/setLevel", Era::Legacy) => Route::SetLevel,
            ("resources/subscribe" | "resources/unsubscribe", Era::Legacy)
                if a.resources && a.subscribe =>
            {
                Route::Empty
            }
            ("tools/list", _) if a.tools => Route::ToolsList,
            ("tools/call", _) if a.tools => Route::ToolsCall,
            ("resources/list", _) if a.resources => Route::ResourcesList,
            ("resources/templates/list", _) if a.resources => Route::TemplatesList,
            ("resources/read", _) if a.resources => Route::ResourcesRead,
            ("prompts/list", _) if a.prompts => Route::PromptsList,
            ("prompts/get", _) if a.prompts => Route::PromptsGet,
            ("completion/complete", _) if a.completions => Route::Complete,
            _ => return None,
        };
        Some(route)
    }

    fn answer(self, ex: &Exchange<'_>, method: &str, params: Option<Value>) -> Prepared {
        let server = ex.server();
        let surface = &server.surface;
        let immediate = match self {
            Route::Discover => Ok(discover::result(surface, server.revisions())),
            Route::Initialize => legacy::initialize(surface, server.revisions(), params.as_ref()),
            Route::Empty => Ok(json!({})),
            Route::SetLevel => legacy::set_level(params.as_ref()),
            Route::ToolsList => {
                let tools = surface.catalog.tools();
                let definitions: Vec<&Value> = tools.iter().map(|t| &t.definition).collect();
                return listed(ex, method, params.as_ref(), "tools", &definitions);
            }
            Route::ResourcesList => {
                let resources = surface.catalog.resources();
                let listings: Vec<Value> = resources.iter().map(|r| r.listing()).collect();
                return listed(ex, method, params.as_ref(), "resources", &listings);
            }
            Route::TemplatesList => {
                let templates = surface.catalog.templates();
                let listings: Vec<Value> = templates.iter().map(|t| t.listing()).collect();
                return listed(ex, method, params.as_ref(), "resourceTemplates", &listings);
            }
            Route::PromptsList => {
                let prompts = surface.catalog.prompts();
                let listings: Vec<Value> = prompts.iter().map(|p| p.listing()).collect();
                return listed(ex, method, params.as_ref(), "prompts", &listings);
            }
            Route::ToolsCall => return call_tool(ex, method, params),
            Route::ResourcesRead => return read_resource(ex, method, params),
            Route::PromptsGet => return get_prompt(ex, method, params),
            Route::Complete => return complete(ex, method, params),
            Route::Listen => return listen(ex, params.as_ref()).into(),
        };
        answer(ex, method, immediate).into()
    }
}

/// One page of a list, serialised from the catalog's own values straight
/// into the answer (no copy of the definitions).
fn listed<T: Serialize>(
    ex: &Exchange<'_>,
    method: &str,
    params: Option<&Value>,
    key: &'static str,
    items: &[T],
) -> Prepared {
    let surface = &ex.server().surface;
    match pagination::page(items, params, surface.page_size) {
        Ok((page, next)) => Flow::Answer(response::result(
            &ex.rejection_id(),
            &surface.finishing.list(ex.era, key, page, next),
        ))
        .into(),
        Err(error) => answer(ex, method, Err(error)).into(),
    }
}

fn not_found(ex: &Exchange<'_>, method: &str) -> Flow {
    let status = match ex.era {
        Era::Modern => StatusCode::NOT_FOUND,
        Era::Legacy => StatusCode::OK,
    };
    ex.reject(
        Rejection::new(
            status,
            code::METHOD_NOT_FOUND,
            format!("method `{method}` not found"),
        )
        .data(json!({"method": method})),
    )
}

/// The HTTP status of a handler-level JSON-RPC error: the 2026 transport
/// gives each its own; a 2025 client reads errors from a `200 OK`.
fn status_of(era: Era, code: i64) -> StatusCode {
    match era {
        Era::Legacy => StatusCode::OK,
        Era::Modern => match code {
            code::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
            code::INTERNAL_ERROR => StatusCode::INTERNAL_SERVER_ERROR,
            _ => StatusCode::BAD_REQUEST,
        },
    }
}

/// Answers with a finished result, or with the error a handler gave.
fn answer(ex: &Exchange<'_>, method: &str, outcome: Result<Value, HandlerError>) -> Flow {
    match outcome {
        Ok(result) => Flow::Answer(response::result(&ex.rejection_id(), &result)),
        Err(error) => ex.reject(rejection(ex.era, method, error)),
    }
}

fn rejection(era: Era, method: &str, error: HandlerError) -> Rejection {
    let (code, message, data) = match error {
        HandlerError::InvalidParams { message, data } => (code::INVALID_PARAMS, message, data),
        HandlerError::MissingCapability(missing) => (
            code::MISSING_REQUIRED_CLIENT_CAPABILITY,
            format!(
                "`{method}` needs client capabilities the request did not declare: {}",
                missing.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
            Some(json!({"requiredCapabilities": missing})),
        ),
        HandlerError::Rpc {
            code,
            message,
            data,
        } => (code, message, data),
        HandlerError::Execution(message) => (code::INTERNAL_ERROR, message, None),
        HandlerError::InputRequired(_) => (
            code::INTERNAL_ERROR,
            format!(
                "the handler of `{method}` asked the client for input, which this request cannot carry"
            ),
            None,
        ),
        HandlerError::Rejected(rejection) => return rejection,
    };
    let rejection = Rejection::new(status_of(era, code), code, message);
    match data {
        Some(data) => rejection.data(data),
        None => rejection,
    }
}

/// The subject a `requestState` is bound to: the principal's, `""` when
/// the server has no auth.
fn subject<'e>(ex: &'e Exchange<'_>) -> &'e str {
    ex.principal.as_ref().map_or("", |p| p.subject.as_str())
}

/// The handler's context: `_meta` (taken out of `params`), principal, and
/// the MRTR view (the retry's `inputResponses` and unsealed `requestState`;
/// one that does not unseal is 400/-32602).
fn context(
    ex: &Exchange<'_>,
    method: &str,
    params: &mut Option<Value>,
) -> Result<(Context, Notifications), HandlerError> {
    let server = ex.server();
    let (inputs, (emitter, notifications)) = match ex.era {
        Era::Modern => (
            Inputs::from_request(server.sealer(), subject(ex), method, params.as_ref())?,
            Emitter::for_params(params.as_ref()),
        ),
        // 2025 has no MRTR: its params carry no MRTR fields to read.
        Era::Legacy => (
            Inputs::from_request(server.sealer(), subject(ex), method, None)?,
            Emitter::for_legacy_params(params.as_ref()),
        ),
    };
    let meta = take(params.as_mut(), "_meta").unwrap_or(Value::Null);
    let mut cx = Context::new(
        server.surface.catalog.clone(),
        method,
        ex.era,
        meta,
        ex.principal.clone(),
        inputs,
        emitter,
    );
    cx.revision = ex.revision;
    Ok((cx, notifications))
}

/// The params a sealed `requestState` is bound to, kept without copying
/// them: a served call moves its params into its handler, and only a
/// handler that asks for input (an MRTR round, rare) needs them again.
enum Sent {
    /// The body as the parse step read it, parsed again when needed. The
    /// unseal of the retry binds the message's params, which are this body's
    /// unless a stage of a custom chain rewrote them.
    Body(Bytes),
    /// An exchange that never went through the parse step (tests, fuzzing):
    /// the params themselves.
    Params(Option<Value>),
}

impl Sent {
    fn of(ex: &Exchange<'_>, params: Option<&Value>) -> Self {
        if ex.bytes.is_empty() {
            Sent::Params(params.cloned())
        } else {
            Sent::Body(ex.bytes.clone())
        }
    }

    fn params(&self) -> Option<Value> {
        match self {
            Sent::Body(bytes) => {
                let mut message = serde_json::from_slice::<Value>(bytes).ok();
                take(message.as_mut(), "params")
            }
            Sent::Params(params) => params.clone(),
        }
    }
}

/// What a handler's answer needs of its exchange, owned, so the answer can
/// be made by the handler's future after the exchange is gone.
struct Finisher {
    era: Era,
    method: &'static str,
    sent: Sent,
    subject: String,
    sealer: Arc<Sealer>,
    finishing: Arc<Finishing>,
    rejector: Rejector,
}

impl Finisher {
    /// `params` are the request's as Dispatch took them, before anything is
    /// moved out of them.
    fn new(ex: &Exchange<'_>, method: &'static str, params: Option<&Value>) -> Self {
        let server = ex.server();
        Finisher {
            era: ex.era,
            method,
            sent: Sent::of(ex, params),
            subject: subject(ex).to_owned(),
            sealer: Arc::clone(&server.sealer),
            finishing: Arc::clone(&server.surface.finishing),
            rejector: ex.rejector(),
        }
    }

    fn answer(self, outcome: Result<Finished, HandlerError>) -> response::Response {
        let outcome = match outcome {
            Err(HandlerError::InputRequired(input)) => self.input_required(input),
            other => other,
        };
        match outcome {
            Ok(Finished::Value(result)) => response::result(self.rejector.id(), &result),
            Ok(Finished::Tool(result)) => {
                response::result(self.rejector.id(), &self.finishing.tool(self.era, &result))
            }
            Err(error) => self
                .rejector
                .response(rejection(self.era, self.method, error)),
        }
    }

    /// The `input_required` result of an MRTR round, its state sealed for
    /// this request (each input asked is of a kind the client declared:
    /// [`InputRequired::request`] refuses others). A 2025 client has no MRTR.
    fn input_required(&self, input: InputRequired) -> Result<Finished, HandlerError> {
        if self.era == Era::Legacy || !crate::mrtr::MRTR_METHODS.contains(&self.method) {
            return Err(HandlerError::InputRequired(input));
        }
        let binding = Binding::new(&self.subject, self.method, self.sent.params().as_ref());
        let result = input.into_result(&self.sealer, &binding);
        Ok(Finished::Value(self.finishing.finish(
            Era::Modern,
            result,
            false,
        )))
    }

    fn running(
        self,
        run: BoxFuture<Result<Finished, HandlerError>>,
        notifications: Notifications,
    ) -> Prepared {
        Prepared::Running(Running {
            run,
            notifications,
            finisher: self,
        })
    }
}

fn call_tool(ex: &Exchange<'_>, method: &str, mut params: Option<Value>) -> Prepared {
    let surface = &ex.server().surface;
    let name = params
        .as_ref()
        .and_then(|p| p.get("name"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let Some(tool) = surface.catalog.tool(name) else {
        return answer(
            ex,
            method,
            Err(HandlerError::InvalidParams {
                message: format!("unknown tool `{name}`"),
                data: Some(json!({"name": name})),
            }),
        )
        .into();
    };
    let empty = Value::Object(Map::new());
    let arguments = match params.as_ref().and_then(|p| p.get("arguments")) {
        None | Some(Value::Null) => &empty,
        Some(arguments @ Value::Object(_)) => arguments,
        Some(_) => {
            return answer(
                ex,
                method,
                Err(HandlerError::invalid_params(
                    "`arguments` must be an object",
                )),
            )
            .into();
        }
    };
    if let Some(problem) = tool.check_arguments(arguments) {
        return answer(
            ex,
            method,
            Err(HandlerError::invalid_params(format!(
                "invalid arguments for tool `{name}`: {problem}"
            ))),
        )
        .into();
    }
    let finisher = Finisher::new(ex, "tools/call", params.as_ref());
    let (cx, notifications) = match context(ex, method, &mut params) {
        Ok(pair) => pair,
        Err(error) => return answer(ex, method, Err(error)).into(),
    };
    // The handler owns its arguments: moved out of the params, not copied.
    let arguments = match take(params.as_mut(), "arguments") {
        Some(arguments @ Value::Object(_)) => arguments,
        _ => empty,
    };
    drop(params);
    let run = Box::pin(async move {
        let result = match (tool.handler)(arguments, cx).await {
            Ok(result) => result,
            Err(HandlerError::Execution(message)) => ToolResult::error(message),
            Err(other) => return Err(other),
        };
        if let Some(problem) = tool.check_output(&result) {
            tracing::error!(tool = tool.name(), %problem, "tool result breaks its outputSchema");
            return Err(HandlerError::Rpc {
                code: code::INTERNAL_ERROR,
                message: format!("tool `{}` returned an invalid result", tool.name()),
                data: None,
            });
        }
        Ok(Finished::Tool(result))
    });
    finisher.running(run, notifications)
}

fn resource_not_found(era: Era, uri: &str) -> HandlerError {
    // 2026 standardises on -32602 (SEP-2164); 2025 used -32002.
    HandlerError::Rpc {
        code: match era {
            Era::Modern => code::INVALID_PARAMS,
            Era::Legacy => -32002,
        },
        message: format!("resource not found: {uri}"),
        data: Some(json!({"uri": uri})),
    }
}

fn read_resource(ex: &Exchange<'_>, method: &str, mut params: Option<Value>) -> Prepared {
    let surface = &ex.server().surface;
    let era = ex.era;
    let uri = params
        .as_ref()
        .and_then(|p| p.get("uri"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let finisher = Finisher::new(ex, "resources/read", params.as_ref());
    let (cx, notifications) = match context(ex, method, &mut params) {
        Ok(pair) => pair,
        Err(error) => return answer(ex, method, Err(error)).into(),
    };
    let run: BoxFuture<Result<Vec<ResourceContents>, HandlerError>> =
        if let Some(resource) = surface.catalog.resource(&uri) {
            match &resource.reader {
                crate::surface::Reader::Static(contents) => {
                    let contents = resource.static_contents(contents);
                    Box::pin(async move { Ok(contents) })
                }
                crate::surface::Reader::Handler(handler) => handler(uri.clone(), cx),
            }
        } else if let Some((template, vars)) = surface.catalog.template_for(&uri) {
            let mime = template.mime_type().map(str::to_owned);
            let run = (template.handler)(uri.clone(), vars, cx);
            Box::pin(async move {
                let mut contents = run.await?;
                for c in &mut contents {
                    if c.mime_type.is_none() {
                        c.mime_type.clone_from(&mime);
                    }
                }
                Ok(contents)
            })
        } else {
            return answer(ex, method, Err(resource_not_found(era, &uri))).into();
        };
    let finishing = Arc::clone(&surface.finishing);
    let run = Box::pin(async move {
        let contents = run.await?;
        if contents.is_empty() {
            return Err(resource_not_found(era, &uri));
        }
        let value = json!({"contents": contents});
        Ok(Finished::Value(finishing.finish(era, value, true)))
    });
    finisher.running(run, notifications)
}

fn get_prompt(ex: &Exchange<'_>, method: &str, mut params: Option<Value>) -> Prepared {
    let surface = &ex.server().surface;
    let name = params
        .as_ref()
        .and_then(|p| p.get("name"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let Some(prompt) = surface.catalog.prompt(name) else {
        return answer(
            ex,
            method,
            Err(HandlerError::InvalidParams {
                message: format!("unknown prompt `{name}`"),
                data: Some(json!({"name": name})),
            }),
        )
        .into();
    };
    let args: BTreeMap<String, String> = match prompt.arguments_from(params.as_ref()) {
        Ok(args) => args,
        Err(error) => return answer(ex, method, Err(error)).into(),
    };
    let finisher = Finisher::new(ex, "prompts/get", params.as_ref());
    let (cx, notifications) = match context(ex, method, &mut params) {
        Ok(pair) => pair,
        Err(error) => return answer(ex, method, Err(error)).into(),
    };
    let Some(handler) = prompt.handler.clone() else {
        return answer(
            ex,
            method,
            Err(HandlerError::Execution(format!(
                "prompt `{}` has no handler",
                prompt.name
            ))),
        )
        .into();
    };
    let finishing = Arc::clone(&surface.finishing);
    let era = ex.era;
    let run = Box::pin(async move {
        let result = handler(args, cx).await?;
        let value = serde_json::to_value(&result).unwrap_or(Value::Null);
        Ok(Finished::Value(finishing.finish(era, value, false)))
    });
    finisher.running(run, notifications)
}

fn complete(ex: &Exchange<'_>, method: &str, mut params: Option<Value>) -> Prepared {
    let surface = &ex.server().surface;
    let request = match CompletionRequest::from_params(params.as_ref()) {
        Ok(request) => request,
        Err(error) => return answer(ex, method, Err(error)).into(),
    };
    let Some(handler) = surface.completion.clone() else {
        return not_found(ex, method).into();
    };
    let finisher = Finisher::new(ex, "completion/complete", params.as_ref());
    let (cx, notifications) = match context(ex, method, &mut params) {
        Ok(pair) => pair,
        Err(error) => return answer(ex, method, Err(error)).into(),
    };
    let finishing = Arc::clone(&surface.finishing);
    let era = ex.era;
    let run = Box::pin(async move {
        let completions = handler(request, cx).await?.capped();
        let value = json!({"completion": completions});
        Ok(Finished::Value(finishing.finish(era, value, false)))
    });
    finisher.running(run, notifications)
}

/// What a listen stream can deliver: the `listChanged` and `subscribe`
/// capabilities the server advertises.
fn listen_support(a: Advertised) -> Support {
    Support {
        tools_list_changed: a.tools && a.list_changed,
        prompts_list_changed: a.prompts && a.list_changed,
        resources_list_changed: a.resources && a.list_changed,
        resource_subscriptions: a.resources && a.subscribe,
    }
}

/// `subscriptions/listen`: the SSE stream of the catalog's changes the
/// client's filter asked for (see [`listen`](crate::listen)).
fn listen(ex: &Exchange<'_>, params: Option<&Value>) -> Flow {
    let server = ex.server();
    let filter = match Filter::from_params(params) {
        Ok(filter) => filter,
        Err(rejection) => return ex.reject(rejection),
    };
    let response = Listen::new(ex.rejection_id(), filter)
        .support(listen_support(server.surface.advertised))
        .result_meta(
            crate::surface::SERVER_INFO_KEY,
            server.surface.finishing.info().clone(),
        )
        .respond(server.changes());
    Flow::Answer(response)
}
