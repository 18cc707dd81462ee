//! `completion/complete`: suggestions for a prompt's or a resource
//! template's argument.

use std::future::Future;
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Value, json};

use super::call::{Answer, Call, Env};
use super::catalog::Catalog;
use super::context::{BoxFuture, Context, HandlerError};
use super::item::MethodOf;
use crate::protocol::text::truncated;

pub(crate) type CompletionFn = dyn Fn(CompletionRequest, Context) -> BoxFuture<Result<Completions, HandlerError>>
    + Send
    + Sync;

pub(crate) fn boxed<F, Fut>(handler: F) -> Arc<CompletionFn>
where
    F: Fn(CompletionRequest, Context) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Completions, HandlerError>> + Send + 'static,
{
    Arc::new(move |request, cx| Box::pin(handler(request, cx)) as BoxFuture<_>)
}

/// What is being completed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompletionRef {
    /// An argument of the prompt with this name.
    Prompt(String),
    /// A variable of the resource template with this URI template.
    Resource(String),
}

/// A `completion/complete` request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompletionRequest {
    /// The prompt or resource template.
    pub reference: CompletionRef,
    /// The argument's name.
    pub argument: String,
    /// What the user typed so far.
    pub value: String,
    /// Values of other arguments already resolved (`context.arguments`).
    pub context: std::collections::BTreeMap<String, String>,
}

impl CompletionRequest {
    pub(crate) fn from_params(params: Option<&Value>) -> Result<Self, HandlerError> {
        let params = params.ok_or_else(|| HandlerError::invalid_params("missing params"))?;
        let reference = params
            .get("ref")
            .ok_or_else(|| HandlerError::invalid_params("missing `ref`"))?;
        let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_owned);
        let reference = match reference.get("type").and_then(Value::as_str) {
            Some("ref/prompt") => CompletionRef::Prompt(
                text(reference, "name")
                    .ok_or_else(|| HandlerError::invalid_params("`ref.name` must be a string"))?,
            ),
            Some("ref/resource") => CompletionRef::Resource(
                text(reference, "uri")
                    .ok_or_else(|| HandlerError::invalid_params("`ref.uri` must be a string"))?,
            ),
            _ => {
                return Err(HandlerError::invalid_params(
                    "`ref.type` must be `ref/prompt` or `ref/resource`",
                ));
            }
        };
        let argument = params
            .get("argument")
            .ok_or_else(|| HandlerError::invalid_params("missing `argument`"))?;
        let context = params
            .get("context")
            .and_then(|c| c.get("arguments"))
            .and_then(Value::as_object)
            .map(|args| {
                args.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                    .collect()
            })
            .unwrap_or_default();
        Ok(CompletionRequest {
            reference,
            argument: text(argument, "name")
                .ok_or_else(|| HandlerError::invalid_params("`argument.name` must be a string"))?,
            value: text(argument, "value")
                .ok_or_else(|| HandlerError::invalid_params("`argument.value` must be a string"))?,
            context,
        })
    }
}

/// The suggestions: at most 100 values (more are cut, and `hasMore` set).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Completions {
    /// The suggested values, best first.
    pub values: Vec<String>,
    /// How many matches there are in all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// Whether there are more than `values`.
    #[serde(rename = "hasMore", skip_serializing_if = "Option::is_none")]
    pub has_more: Option<bool>,
}

/// The most values one completion result may carry.
pub const MAX_COMPLETION_VALUES: usize = 100;

impl Completions {
    /// These values.
    pub fn new(values: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Completions {
            values: values.into_iter().map(Into::into).collect(),
            total: None,
            has_more: None,
        }
    }

    /// The values among `candidates` that start with `prefix`.
    pub fn matching<'a>(prefix: &str, candidates: impl IntoIterator<Item = &'a str>) -> Self {
        Completions::new(candidates.into_iter().filter(|c| c.starts_with(prefix)))
    }

    pub(crate) fn capped(mut self) -> Self {
        if self.values.len() > MAX_COMPLETION_VALUES {
            let total = self.values.len() as u64;
            self.values.truncate(MAX_COMPLETION_VALUES);
            self.has_more = Some(true);
            self.total.get_or_insert(total);
        }
        self
    }
}

/// Completion handlers by what they complete: a prompt's argument or a
/// resource template's variable. Written by `#[complete(…)]` methods of a
/// `#[wymcp::handlers]` impl (its `completer()`), or by hand; given to
/// [`ServerBuilder::completer`](crate::ServerBuilder::completer).
///
/// A request for a key of the table is answered by its handler; any other
/// by the server's [`ServerBuilder::completion`](crate::ServerBuilder::completion)
/// handler, the fallback, if it has one, and otherwise with -32602. One key
/// given twice (in one `Completer` or across several) is a `build()` error.
///
/// ```
/// use wymcp::{Completer, Completions};
///
/// let completer = Completer::new().prompt("summarize", "id", |request, _cx| async move {
///     Ok(Completions::matching(&request.value, ["1", "2", "10"]))
/// });
/// assert_eq!(completer.len(), 1);
/// ```
#[derive(Clone, Default)]
pub struct Completer {
    entries: Vec<Entry>,
}

#[derive(Clone)]
struct Entry {
    reference: CompletionRef,
    argument: String,
    handler: Arc<CompletionFn>,
    method_of: Option<MethodOf>,
}

impl std::fmt::Debug for Completer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.entries.iter().map(|e| (&e.reference, &e.argument)))
            .finish()
    }
}

impl Completer {
    /// An empty table.
    #[must_use]
    pub fn new() -> Self {
        Completer::default()
    }

    /// Completes the argument `argument` of the prompt named `prompt`.
    #[must_use]
    pub fn prompt<F, Fut>(
        self,
        prompt: impl Into<String>,
        argument: impl Into<String>,
        handler: F,
    ) -> Self
    where
        F: Fn(CompletionRequest, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Completions, HandlerError>> + Send + 'static,
    {
        self.with(
            CompletionRef::Prompt(prompt.into()),
            argument.into(),
            handler,
        )
    }

    /// Completes the variable `argument` of the resource template whose URI
    /// template is `uri_template` (`notes://{id}`).
    #[must_use]
    pub fn template<F, Fut>(
        self,
        uri_template: impl Into<String>,
        argument: impl Into<String>,
        handler: F,
    ) -> Self
    where
        F: Fn(CompletionRequest, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Completions, HandlerError>> + Send + 'static,
    {
        self.with(
            CompletionRef::Resource(uri_template.into()),
            argument.into(),
            handler,
        )
    }

    fn with<F, Fut>(mut self, reference: CompletionRef, argument: String, handler: F) -> Self
    where
        F: Fn(CompletionRequest, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Completions, HandlerError>> + Send + 'static,
    {
        self.entries.push(Entry {
            reference,
            argument,
            handler: boxed(handler),
            method_of: None,
        });
        self
    }

    /// This table and `other`'s entries.
    #[must_use]
    pub fn merge(mut self, other: Completer) -> Self {
        self.entries.extend(other.entries);
        self
    }

    /// How many keys it completes.
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it completes nothing.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Records that every entry's handler is a `&self` method of a state
    /// type (see `__private::completer_method_of`).
    pub(crate) fn set_method_of(&mut self, method_of: MethodOf) {
        for entry in &mut self.entries {
            entry.method_of = Some(method_of);
        }
    }

    /// What the handlers need of the server's state.
    pub(crate) fn needs(&self) -> impl Iterator<Item = MethodOf> + '_ {
        self.entries.iter().filter_map(|e| e.method_of)
    }

    /// A key given twice, described: `argument `id` of prompt `summarize``.
    pub(crate) fn repeated(&self) -> Option<String> {
        self.entries.iter().enumerate().find_map(|(at, entry)| {
            self.entries[..at]
                .iter()
                .any(|e| e.reference == entry.reference && e.argument == entry.argument)
                .then(|| entry.describe())
        })
    }

    fn find(&self, reference: &CompletionRef, argument: &str) -> Option<Arc<CompletionFn>> {
        self.entries
            .iter()
            .find(|e| &e.reference == reference && e.argument == argument)
            .map(|e| Arc::clone(&e.handler))
    }
}

impl Entry {
    fn describe(&self) -> String {
        describe(&self.reference, &self.argument)
    }
}

/// `argument `id` of prompt `summarize``, each name cut to a bounded length.
fn describe(reference: &CompletionRef, argument: &str) -> String {
    match reference {
        CompletionRef::Prompt(name) => {
            format!(
                "argument `{}` of prompt `{}`",
                truncated(argument),
                truncated(name)
            )
        }
        CompletionRef::Resource(uri) => {
            format!(
                "variable `{}` of resource template `{}`",
                truncated(argument),
                truncated(uri)
            )
        }
    }
}

/// Whether `request` names something the server has: a prompt of the
/// catalog and one of its arguments, or a resource template (by its URI
/// template) and one of its variables. -32602 otherwise: completing what
/// does not exist is an invalid request, not an empty completion.
fn check_reference(request: &CompletionRequest, catalog: &Catalog) -> Result<(), HandlerError> {
    let unknown = |what: String, reference: &str| HandlerError::InvalidParams {
        message: what,
        data: Some(json!({"ref": truncated(reference)})),
    };
    let argument = request.argument.as_str();
    match &request.reference {
        CompletionRef::Prompt(name) => {
            let prompt = catalog
                .prompt(name)
                .ok_or_else(|| unknown(format!("unknown prompt `{}`", truncated(name)), name))?;
            if !prompt.kind.arguments.iter().any(|a| a.name == argument) {
                return Err(unknown(
                    format!(
                        "prompt `{}` has no argument `{}`",
                        truncated(name),
                        truncated(argument)
                    ),
                    name,
                ));
            }
        }
        CompletionRef::Resource(uri) => {
            let template = catalog.template(uri).ok_or_else(|| {
                unknown(
                    format!("unknown resource template `{}`", truncated(uri)),
                    uri,
                )
            })?;
            if !template.variables().iter().any(|v| v == argument) {
                return Err(unknown(
                    format!(
                        "resource template `{}` has no variable `{}`",
                        truncated(uri),
                        truncated(argument)
                    ),
                    uri,
                ));
            }
        }
    }
    Ok(())
}

/// `completion/complete`: the request read and its reference checked
/// against `catalog` (-32602 when malformed, or when it names a prompt,
/// template, argument or variable the server does not have), answered by
/// the `completer`'s handler for its key, else by the `fallback`, else
/// -32602 (nothing completes that argument); the suggestions capped at
/// [`MAX_COMPLETION_VALUES`].
pub(crate) fn complete(
    completer: &Completer,
    fallback: Option<&Arc<CompletionFn>>,
    catalog: &Catalog,
    mut call: Call<'_>,
    env: Env<'_>,
) -> Answer {
    let request = match CompletionRequest::from_params(call.params.as_ref())
        .and_then(|request| check_reference(&request, catalog).map(|()| request))
    {
        Ok(request) => request,
        Err(error) => return error.into_rpc(call.era, "completion/complete").into(),
    };
    let Some(handler) = completer
        .find(&request.reference, &request.argument)
        .or_else(|| fallback.cloned())
    else {
        let described = describe(&request.reference, &request.argument);
        return HandlerError::invalid_params(format!("the server completes no {described}"))
            .into_rpc(call.era, "completion/complete")
            .into();
    };
    let handling = match call.handling("completion/complete", env) {
        Ok(handling) => handling,
        Err(error) => return error.into(),
    };
    // Not a method that asks its client for input: run once.
    let mut request = Some(request);
    handling.run(move |cx, reply| {
        let run = request.take().map(|request| handler(request, cx));
        Box::pin(async move {
            let Some(run) = run else {
                return Err(HandlerError::execution("the completion handler ran twice"));
            };
            let completions = run.await?.capped();
            Ok(reply.finished(json!({"completion": completions}), false))
        })
    })
}
