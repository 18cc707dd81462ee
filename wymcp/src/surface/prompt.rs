//! Prompts: templated messages with named string arguments.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::call::{Answer, Call, Env};
use super::content::{Content, PromptRole};
use super::context::{BoxFuture, Context, HandlerError};
use super::item::Item;
use super::strings;
use crate::protocol::text::truncated;

pub(crate) type PromptFn = dyn Fn(BTreeMap<String, String>, Context) -> BoxFuture<Result<PromptResult, HandlerError>>
    + Send
    + Sync;

/// A prompt's arguments as strings by name: what a handler takes when it
/// wants them untyped.
///
/// ```
/// use wymcp::{Prompt, PromptArgs, PromptResult};
///
/// let prompt = Prompt::new("echo")
///     .argument("text", "What to echo")
///     .handler(|args: PromptArgs, _cx| async move {
///         Ok(PromptResult::new().user(args["text"].clone()))
///     });
/// # let _ = wymcp::Server::builder().prompt(prompt).build().unwrap();
/// ```
pub type PromptArgs = BTreeMap<String, String>;

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

/// A prompt, as registered with [`ServerBuilder::prompt`](crate::ServerBuilder::prompt)
/// or [`Catalog::add_prompt`](crate::Catalog::add_prompt): an [`Item`] (its
/// title, description, icons, scopes and `_meta`, set by `Item`'s setters)
/// of the prompt kind.
pub type Prompt = Item<PromptKind>;

/// What a prompt adds to an [`Item`]: its name, arguments and handler.
/// Never named as such: write [`Prompt`].
#[derive(Clone)]
pub struct PromptKind {
    pub(crate) name: String,
    pub(crate) arguments: Vec<PromptArgument>,
    pub(crate) handler: Option<Arc<PromptFn>>,
}

impl fmt::Debug for PromptKind {
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
        Item::of(PromptKind {
            name: name.into(),
            arguments: Vec::new(),
            handler: None,
        })
    }

    /// A required argument.
    #[must_use]
    pub fn argument(mut self, name: impl Into<String>, description: impl Into<String>) -> Self {
        self.kind.arguments.push(PromptArgument {
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
        self.kind.arguments.push(PromptArgument {
            name: name.into(),
            description: Some(description.into()),
            required: false,
        });
        self
    }

    /// Renders the prompt from its arguments, taken as `A`: a struct whose
    /// fields are the arguments (each string read as its field's type:
    /// `"42"` for a `u64`), or a map of strings
    /// ([`BTreeMap<String, String>`]). Unless arguments were declared with
    /// [`argument`](Self::argument), the prompt's argument list (names,
    /// descriptions from doc comments, which are required) derives from
    /// `A`. Required arguments are checked before the handler runs; an
    /// argument that does not read into `A` is -32602 naming it.
    ///
    /// ```
    /// use wymcp::{Prompt, PromptResult};
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Summarise {
    ///     /// The note to summarise.
    ///     id: u64,
    ///     /// At most this many words.
    ///     words: Option<u32>,
    /// }
    ///
    /// let prompt = Prompt::new("summarise").handler(|args: Summarise, _cx| async move {
    ///     let words = args.words.unwrap_or(50);
    ///     Ok(PromptResult::new().user(format!("Summarise note {} in {words} words.", args.id)))
    /// });
    /// # let _ = wymcp::Server::builder().prompt(prompt).build().unwrap();
    /// ```
    #[must_use]
    pub fn handler<A, F, Fut>(mut self, handler: F) -> Self
    where
        A: DeserializeOwned + JsonSchema + 'static,
        F: Fn(A, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<PromptResult, HandlerError>> + Send + 'static,
    {
        let fields = strings::fields_of(&schemars::schema_for!(A).to_value());
        if self.kind.arguments.is_empty() {
            self.kind.arguments = fields
                .iter()
                .map(|f| PromptArgument {
                    name: f.name.clone(),
                    description: f.description.clone(),
                    required: f.required,
                })
                .collect();
        }
        let name = self.kind.name.clone();
        self.kind.handler = Some(Arc::new(move |args, cx| {
            match strings::read::<A>(&fields, &args) {
                Ok(args) => Box::pin(handler(args, cx)) as BoxFuture<_>,
                Err(unreadable) => {
                    let error = HandlerError::InvalidParams {
                        message: format!(
                            "prompt `{name}`: argument `{}`: {}",
                            truncated(&unreadable.field),
                            truncated(&unreadable.message)
                        ),
                        data: Some(serde_json::json!({"argument": truncated(&unreadable.field)})),
                    };
                    Box::pin(async move { Err(error) })
                }
            }
        }));
        self
    }

    pub(crate) fn listing(&self) -> Value {
        let mut object = Map::new();
        object.insert("name".into(), self.kind.name.clone().into());
        self.about.list_into(&mut object);
        if !self.kind.arguments.is_empty() {
            object.insert(
                "arguments".into(),
                serde_json::to_value(&self.kind.arguments).unwrap_or(Value::Null),
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
            .kind
            .arguments
            .iter()
            .filter(|a| a.required && !args.contains_key(&a.name))
            .map(|a| a.name.as_str())
            .collect();
        if !missing.is_empty() {
            return Err(HandlerError::InvalidParams {
                message: format!(
                    "prompt `{}` is missing required argument(s): {}",
                    self.kind.name,
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
        Err(error) => return error.into_rpc(call.era, "prompts/get").into(),
    };
    let handling = match call.handling("prompts/get", env) {
        Ok(handling) => handling,
        Err(error) => return error.into(),
    };
    let Some(handler) = prompt.kind.handler.clone() else {
        return HandlerError::Execution(format!("prompt `{}` has no handler", prompt.kind.name))
            .into_rpc(call.era, "prompts/get")
            .into();
    };
    handling.run(move |cx, reply| {
        let run = handler(args.clone(), cx);
        Box::pin(async move {
            let result = run.await?;
            let value = serde_json::to_value(&result).unwrap_or(Value::Null);
            Ok(reply.finished(value, false))
        })
    })
}
