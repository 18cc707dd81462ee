//! Prompts: templated messages with named string arguments.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value};

use super::call::{Answer, Call, Env};
use super::content::Content;
use super::context::{BoxFuture, Context, HandlerError};

pub(crate) type PromptFn = dyn Fn(BTreeMap<String, String>, Context) -> BoxFuture<Result<PromptResult, HandlerError>>
    + Send
    + Sync;

/// Who speaks a prompt message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PromptRole {
    /// The user.
    User,
    /// The assistant.
    Assistant,
}

/// One message of a prompt.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PromptMessage {
    /// Who speaks it.
    pub role: PromptRole,
    /// What is said.
    pub content: Content,
}

/// The result of `prompts/get`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PromptResult {
    /// A description of the prompt as rendered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The messages.
    pub messages: Vec<PromptMessage>,
}

impl PromptResult {
    /// No messages yet.
    #[must_use]
    pub fn new() -> Self {
        PromptResult::default()
    }

    /// Adds a user message.
    #[must_use]
    pub fn user(mut self, content: impl Into<Content>) -> Self {
        self.messages.push(PromptMessage {
            role: PromptRole::User,
            content: content.into(),
        });
        self
    }

    /// Adds an assistant message.
    #[must_use]
    pub fn assistant(mut self, content: impl Into<Content>) -> Self {
        self.messages.push(PromptMessage {
            role: PromptRole::Assistant,
            content: content.into(),
        });
        self
    }

    /// Sets the description.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }
}

/// One argument a prompt takes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PromptArgument {
    /// Its name.
    pub name: String,
    /// What it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether `prompts/get` without it is refused (-32602).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub required: bool,
}

/// A prompt.
#[derive(Clone)]
pub struct Prompt {
    pub(crate) name: String,
    title: Option<String>,
    description: Option<String>,
    pub(crate) arguments: Vec<PromptArgument>,
    pub(crate) handler: Option<Arc<PromptFn>>,
}

impl fmt::Debug for Prompt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Prompt")
            .field("name", &self.name)
            .field("arguments", &self.arguments)
            .finish_non_exhaustive()
    }
}

impl Prompt {
    /// A prompt named `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Prompt {
            name: name.into(),
            title: None,
            description: None,
            arguments: Vec::new(),
            handler: None,
        }
    }

    /// A display title.
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// What the prompt is for.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// A required argument.
    #[must_use]
    pub fn argument(mut self, name: impl Into<String>, description: impl Into<String>) -> Self {
        self.arguments.push(PromptArgument {
            name: name.into(),
            description: Some(description.into()),
            required: true,
        });
        self
    }

    /// An optional argument.
    #[must_use]
    pub fn optional_argument(
        mut self,
        name: impl Into<String>,
        description: impl Into<String>,
    ) -> Self {
        self.arguments.push(PromptArgument {
            name: name.into(),
            description: Some(description.into()),
            required: false,
        });
        self
    }

    /// Renders the prompt from its arguments. Required arguments are checked
    /// before the handler runs.
    #[must_use]
    pub fn handler<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(BTreeMap<String, String>, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<PromptResult, HandlerError>> + Send + 'static,
    {
        self.handler = Some(Arc::new(move |args, cx| {
            Box::pin(handler(args, cx)) as BoxFuture<_>
        }));
        self
    }

    pub(crate) fn listing(&self) -> Value {
        let mut object = Map::new();
        object.insert("name".into(), self.name.clone().into());
        if let Some(title) = &self.title {
            object.insert("title".into(), title.clone().into());
        }
        if let Some(description) = &self.description {
            object.insert("description".into(), description.clone().into());
        }
        if !self.arguments.is_empty() {
            object.insert(
                "arguments".into(),
                serde_json::to_value(&self.arguments).unwrap_or(Value::Null),
            );
        }
        Value::Object(object)
    }

    /// The arguments of a `prompts/get`, as strings; -32602 for a missing
    /// required one or a value that is not a string.
    pub(crate) fn arguments_from(
        &self,
        params: Option<&Value>,
    ) -> Result<BTreeMap<String, String>, HandlerError> {
        let mut args = BTreeMap::new();
        match params.and_then(|p| p.get("arguments")) {
            None | Some(Value::Null) => {}
            Some(Value::Object(given)) => {
                for (name, value) in given {
                    let Value::String(value) = value else {
                        return Err(HandlerError::invalid_params(format!(
                            "prompt argument `{name}` must be a string"
                        )));
                    };
                    args.insert(name.clone(), value.clone());
                }
            }
            Some(_) => {
                return Err(HandlerError::invalid_params(
                    "`arguments` must be an object",
                ));
            }
        }
        let missing: Vec<&str> = self
            .arguments
            .iter()
            .filter(|a| a.required && !args.contains_key(&a.name))
            .map(|a| a.name.as_str())
            .collect();
        if !missing.is_empty() {
            return Err(HandlerError::InvalidParams {
                message: format!(
                    "prompt `{}` is missing required argument(s): {}",
                    self.name,
                    missing.join(", ")
                ),
                data: Some(serde_json::json!({"missing": missing})),
            });
        }
        Ok(args)
    }
}

/// `prompts/get` of `prompt`: its arguments checked (-32602 for a missing
/// required one or one that is not a string), then rendered by its handler.
pub(crate) fn get(prompt: &Prompt, mut call: Call<'_>, env: Env<'_>) -> Answer {
    let args = match prompt.arguments_from(call.params.as_ref()) {
        Ok(args) => args,
        Err(error) => return error.into_rpc("prompts/get").into(),
    };
    let handling = match call.handling("prompts/get", env) {
        Ok(handling) => handling,
        Err(error) => return error.into(),
    };
    let Some(handler) = prompt.handler.clone() else {
        return HandlerError::Execution(format!("prompt `{}` has no handler", prompt.name))
            .into_rpc("prompts/get")
            .into();
    };
    handling.run(move |cx, reply| {
        Box::pin(async move {
            let result = handler(args, cx).await?;
            let value = serde_json::to_value(&result).unwrap_or(Value::Null);
            Ok(reply.finished(value, false))
        })
    })
}
