//! `completion/complete`: suggestions for a prompt's or a resource
//! template's argument.

use std::future::Future;
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Value, json};

use super::call::{Answer, Call, Env};
use super::catalog::Catalog;
use super::context::{BoxFuture, Context, HandlerError};
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

/// `completion/complete` with the server's `handler`: the request read and
/// its reference checked against `catalog` (-32602 when malformed, or when
/// it names a prompt, template, argument or variable the server does not
/// have), the suggestions capped at [`MAX_COMPLETION_VALUES`].
pub(crate) fn complete(
    handler: Arc<CompletionFn>,
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
