//! Resources (a fixed URI) and resource templates (an RFC 6570 URI template
//! such as `test://template/{id}/data`).
//!
//! Templates support simple (`{id}`: one or more characters, no `/`) and
//! reserved (`{+path}`: may span `/`) expansion, the forms a server needs to
//! route a read; other operators are refused at registration rather than
//! matched wrongly.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::call::{Answer, Call, Env};
use super::content::{Annotations, ResourceContents, insert_annotations};
use super::context::{BoxFuture, Context, HandlerError};
use super::error::SurfaceError;
use super::item::Item;
use super::strings;
use crate::protocol::text::Bounded;

/// The variables a URI matched a template with, by name.
pub type TemplateVars = BTreeMap<String, String>;

pub(crate) type ReadFn =
    dyn Fn(String, Context) -> BoxFuture<Result<Vec<ResourceContents>, HandlerError>> + Send + Sync;
pub(crate) type TemplateReadFn = dyn Fn(String, TemplateVars, Context) -> BoxFuture<Result<Vec<ResourceContents>, HandlerError>>
    + Send
    + Sync;

#[derive(Clone)]
pub(crate) enum Reader {
    Static(Vec<ResourceContents>),
    Handler(Arc<ReadFn>),
}

/// A resource at a fixed URI, as registered with
/// [`ServerBuilder::resource`](crate::ServerBuilder::resource) or
/// [`Catalog::add_resource`](crate::Catalog::add_resource): an [`Item`]
/// (its title, description, icons, scopes and `_meta`, set by `Item`'s
/// setters) of the resource kind.
pub type Resource = Item<ResourceKind>;

/// What a resource adds to an [`Item`]: its URI, name, media type, size,
/// annotations and contents. Never named as such: write [`Resource`].
#[derive(Clone)]
pub struct ResourceKind {
    pub(crate) uri: String,
    name: String,
    mime_type: Option<String>,
    size: Option<u64>,
    annotations: Option<Annotations>,
    pub(crate) reader: Reader,
}

impl fmt::Debug for ResourceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Resource")
            .field("uri", &self.uri)
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl Resource {
    /// A resource at `uri` called `name`, empty until given contents or a
    /// handler.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Item::of(ResourceKind {
            uri: uri.into(),
            name: name.into(),
            mime_type: None,
            size: None,
            annotations: None,
            reader: Reader::Static(Vec::new()),
        })
    }

    /// Its media type (listed, and given to static contents).
    #[must_use]
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.kind.mime_type = Some(mime_type.into());
        self
    }

    /// Its size in bytes, as listed.
    #[must_use]
    pub fn size(mut self, size: u64) -> Self {
        self.kind.size = Some(size);
        self
    }

    /// Hints for the client: who the resource is for, how important it
    /// is, when it last changed.
    #[must_use]
    pub fn annotations(mut self, annotations: Annotations) -> Self {
        self.kind.annotations = Some(annotations);
        self
    }

    /// Fixed text contents.
    #[must_use]
    pub fn text(mut self, text: impl Into<String>) -> Self {
        self.kind.reader =
            Reader::Static(vec![ResourceContents::text(self.kind.uri.clone(), text)]);
        self
    }

    /// Fixed binary contents, base64-encoded.
    #[must_use]
    pub fn blob(mut self, base64: impl Into<String>) -> Self {
        self.kind.reader =
            Reader::Static(vec![ResourceContents::blob(self.kind.uri.clone(), base64)]);
        self
    }

    /// Contents read by `handler` on each `resources/read`.
    #[must_use]
    pub fn handler<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(String, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<ResourceContents>, HandlerError>> + Send + 'static,
    {
        self.kind.reader = Reader::Handler(Arc::new(move |uri, cx| {
            Box::pin(handler(uri, cx)) as BoxFuture<_>
        }));
        self
    }

    pub(crate) fn listing(&self) -> Value {
        let mut object = Map::new();
        object.insert("uri".into(), self.kind.uri.clone().into());
        object.insert("name".into(), self.kind.name.clone().into());
        self.about.list_into(&mut object);
        insert_opt(&mut object, "mimeType", self.kind.mime_type.clone());
        if let Some(size) = self.kind.size {
            object.insert("size".into(), size.into());
        }
        insert_annotations(&mut object, self.kind.annotations.as_ref());
        Value::Object(object)
    }

    /// The static contents, each given the resource's media type unless it
    /// has its own.
    pub(crate) fn static_contents(&self, contents: &[ResourceContents]) -> Vec<ResourceContents> {
        contents
            .iter()
            .cloned()
            .map(|mut c| {
                if c.mime_type.is_none() {
                    c.mime_type.clone_from(&self.kind.mime_type);
                }
                c
            })
            .collect()
    }
}

fn insert_opt(object: &mut Map<String, Value>, key: &str, value: Option<String>) {
    if let Some(value) = value {
        object.insert(key.into(), value.into());
    }
}

/// A family of resources named by a URI template, as registered with
/// [`ServerBuilder::resource_template`](crate::ServerBuilder::resource_template)
/// or [`Catalog::add_resource_template`](crate::Catalog::add_resource_template):
/// an [`Item`] (its title, description, icons, scopes and `_meta`, set by
/// `Item`'s setters) of the template kind.
pub type ResourceTemplate = Item<TemplateKind>;

/// What a resource template adds to an [`Item`]: its URI template, name,
/// media type, annotations and handler. Never named as such: write
/// [`ResourceTemplate`].
#[derive(Clone)]
pub struct TemplateKind {
    pub(crate) uri_template: String,
    name: String,
    mime_type: Option<String>,
    annotations: Option<Annotations>,
    /// The fields of the handler's variables type.
    fields: Vec<strings::Field>,
    handler: Option<Arc<TemplateReadFn>>,
}

impl fmt::Debug for TemplateKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceTemplate")
            .field("uri_template", &self.uri_template)
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl ResourceTemplate {
    /// A template such as `test://template/{id}/data`, called `name`.
    pub fn new(uri_template: impl Into<String>, name: impl Into<String>) -> Self {
        Item::of(TemplateKind {
            uri_template: uri_template.into(),
            name: name.into(),
            mime_type: None,
            annotations: None,
            fields: Vec::new(),
            handler: None,
        })
    }

    /// The media type of every resource of the template.
    #[must_use]
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.kind.mime_type = Some(mime_type.into());
        self
    }

    /// Hints for the client about the template's resources.
    #[must_use]
    pub fn annotations(mut self, annotations: Annotations) -> Self {
        self.kind.annotations = Some(annotations);
        self
    }

    /// Reads a URI matching the template, given the URI and its variables
    /// as `V`: a struct whose fields are the template's variables (each
    /// string read as its field's type: `notes://{id}` gives a `u64` id), or
    /// [`TemplateVars`] (every variable as a string). A URI whose variables
    /// do not read into `V` (`notes://abc` for a `u64`) names no resource:
    /// it is answered resource not found. A required field the template
    /// has no variable for is refused at registration.
    ///
    /// ```
    /// use wymcp::{ResourceContents, ResourceTemplate};
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Note { id: u64 }
    ///
    /// let notes = ResourceTemplate::new("notes://{id}", "note").handler(
    ///     |uri: String, note: Note, _cx| async move {
    ///         Ok(vec![ResourceContents::text(uri, format!("note {}", note.id))])
    ///     },
    /// );
    /// # let _ = wymcp::Server::builder().resource_template(notes).build().unwrap();
    /// ```
    #[must_use]
    pub fn handler<V, F, Fut>(mut self, handler: F) -> Self
    where
        V: DeserializeOwned + JsonSchema + 'static,
        F: Fn(String, V, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<ResourceContents>, HandlerError>> + Send + 'static,
    {
        let fields = strings::fields_of(&schemars::schema_for!(V).to_value());
        self.kind.fields.clone_from(&fields);
        self.kind.handler = Some(Arc::new(move |uri: String, vars: TemplateVars, cx| {
            match strings::read::<V>(&fields, &vars) {
                Ok(vars) => Box::pin(handler(uri, vars, cx)) as BoxFuture<_>,
                Err(unreadable) => {
                    tracing::debug!(
                        target: "wymcp::handler",
                        uri = %Bounded(&uri),
                        variable = %Bounded(&unreadable.field),
                        problem = %Bounded(&unreadable.message),
                        "a URI's template variables do not read into the handler's type: resource not found"
                    );
                    Box::pin(async move { Err(HandlerError::resource_not_found(uri)) })
                }
            }
        }));
        self
    }

    pub(crate) fn register(self) -> Result<RegisteredTemplate, SurfaceError> {
        self.about
            .scopes
            .check(&format!("resource template `{}`", self.kind.uri_template))?;
        let segments =
            parse(&self.kind.uri_template).map_err(|reason| SurfaceError::UriTemplate {
                template: self.kind.uri_template.clone(),
                reason,
            })?;
        let handler = self
            .kind
            .handler
            .clone()
            .ok_or_else(|| SurfaceError::UriTemplate {
                template: self.kind.uri_template.clone(),
                reason: "the template has no handler".into(),
            })?;
        let (matcher, names) = matcher(&segments).map_err(|reason| SurfaceError::UriTemplate {
            template: self.kind.uri_template.clone(),
            reason,
        })?;
        if let Some(missing) = self
            .kind
            .fields
            .iter()
            .find(|f| f.required && !names.contains(&f.name))
        {
            return Err(SurfaceError::UriTemplate {
                template: self.kind.uri_template.clone(),
                reason: format!(
                    "the handler's variables need `{}`, which the template has no variable for",
                    missing.name
                ),
            });
        }
        Ok(RegisteredTemplate {
            template: self,
            matcher,
            names,
            handler,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Literal(String),
    Var { name: String, reserved: bool },
}

fn parse(template: &str) -> Result<Vec<Segment>, String> {
    let mut segments = Vec::new();
    let mut rest = template;
    while !rest.is_empty() {
        if let Some(open) = rest.find('{') {
            if open > 0 {
                segments.push(Segment::Literal(rest[..open].to_owned()));
            }
            let after = &rest[open + 1..];
            let close = after
                .find('}')
                .ok_or_else(|| "a `{` is never closed".to_owned())?;
            let expression = &after[..close];
            let (reserved, name) = match expression.strip_prefix('+') {
                Some(name) => (true, name),
                None => (false, expression),
            };
            if name.is_empty()
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
            {
                return Err(format!(
                    "the expression `{{{expression}}}` is not supported (only `{{name}}` and `{{+name}}`)"
                ));
            }
            if matches!(segments.last(), Some(Segment::Var { .. })) {
                return Err("two variables must be separated by literal text".into());
            }
            segments.push(Segment::Var {
                name: name.to_owned(),
                reserved,
            });
            rest = &after[close + 1..];
        } else {
            if rest.contains('}') {
                return Err("a `}` has no `{`".into());
            }
            segments.push(Segment::Literal(rest.to_owned()));
            rest = "";
        }
    }
    Ok(segments)
}

/// The matcher of a template: literal text as it is, `{name}` as one or
/// more characters with no `/`, `?` or `#`, `{+name}` as one or more of any;
/// each variable as short as the rest allows. The `regex` crate matches in
/// time linear in the URI (a backtracking matcher took `O(n^k)` for `k`
/// variables).
fn matcher(segments: &[Segment]) -> Result<(regex::Regex, Vec<String>), String> {
    let mut pattern = String::from("^");
    let mut names = Vec::new();
    for segment in segments {
        match segment {
            Segment::Literal(literal) => pattern.push_str(&regex::escape(literal)),
            Segment::Var { name, reserved } => {
                pattern.push_str(if *reserved { "(.+?)" } else { "([^/?#]+?)" });
                names.push(name.clone());
            }
        }
    }
    pattern.push('$');
    let regex = regex::RegexBuilder::new(&pattern)
        .dot_matches_new_line(true)
        .build()
        .map_err(|e| format!("the template cannot be matched: {e}"))?;
    Ok((regex, names))
}

/// A template once parsed.
pub(crate) struct RegisteredTemplate {
    pub(crate) template: ResourceTemplate,
    matcher: regex::Regex,
    names: Vec<String>,
    pub(crate) handler: Arc<TemplateReadFn>,
}

impl fmt::Debug for RegisteredTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.template.fmt(f)
    }
}

impl RegisteredTemplate {
    /// The variables, when `uri` matches the template.
    pub(crate) fn matches(&self, uri: &str) -> Option<TemplateVars> {
        let captures = self.matcher.captures(uri)?;
        Some(
            self.names
                .iter()
                .zip(captures.iter().skip(1))
                .filter_map(|(name, value)| Some((name.clone(), value?.as_str().to_owned())))
                .collect(),
        )
    }

    /// The names of the template's variables, in order.
    pub(crate) fn variables(&self) -> &[String] {
        &self.names
    }

    pub(crate) fn mime_type(&self) -> Option<&str> {
        self.template.kind.mime_type.as_deref()
    }

    pub(crate) fn listing(&self) -> Value {
        let t = &self.template.kind;
        let mut object = Map::new();
        object.insert("uriTemplate".into(), t.uri_template.clone().into());
        object.insert("name".into(), t.name.clone().into());
        self.template.about.list_into(&mut object);
        insert_opt(&mut object, "mimeType", t.mime_type.clone());
        insert_annotations(&mut object, t.annotations.as_ref());
        Value::Object(object)
    }
}

/// What a `resources/read` URI names: a resource, or a template it
/// matched with its variables.
pub(crate) enum Target {
    /// A resource at that URI.
    Resource(Arc<Resource>),
    /// A template the URI matches.
    Template(Arc<RegisteredTemplate>, TemplateVars),
}

/// `resources/read` of `uri`, which names `target` (`None`: nothing; the
/// answer is then resource not found). A handler that reads no contents is
/// resource not found too.
pub(crate) fn read(
    target: Option<Target>,
    uri: String,
    mut call: Call<'_>,
    env: Env<'_>,
) -> Answer {
    let era = call.era;
    let handling = match call.handling("resources/read", env) {
        Ok(handling) => handling,
        Err(error) => return error.into(),
    };
    let Some(target) = target else {
        return HandlerError::resource_not_found(uri)
            .into_rpc(era, "resources/read")
            .into();
    };
    handling.run(move |cx, reply| {
        let uri = uri.clone();
        let run: BoxFuture<Result<Vec<ResourceContents>, HandlerError>> = match &target {
            Target::Resource(resource) => match &resource.kind.reader {
                Reader::Static(contents) => {
                    let contents = resource.static_contents(contents);
                    Box::pin(async move { Ok(contents) })
                }
                Reader::Handler(handler) => handler(uri.clone(), cx),
            },
            Target::Template(template, vars) => {
                let mime = template.mime_type().map(str::to_owned);
                let run = (template.handler)(uri.clone(), vars.clone(), cx);
                Box::pin(async move {
                    let mut contents = run.await?;
                    for c in &mut contents {
                        if c.mime_type.is_none() {
                            c.mime_type.clone_from(&mime);
                        }
                    }
                    Ok(contents)
                })
            }
        };
        Box::pin(async move {
            let contents = run.await?;
            if contents.is_empty() {
                return Err(HandlerError::resource_not_found(uri));
            }
            Ok(reply.finished(json!({"contents": contents}), true))
        })
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn template(t: &str) -> RegisteredTemplate {
        ResourceTemplate::new(t, "t")
            .handler(|_, _: TemplateVars, _| async { Ok(Vec::new()) })
            .register()
            .unwrap()
    }

    #[test]
    fn simple_variables_match_one_segment() {
        let t = template("test://template/{id}/data");
        assert_eq!(t.matches("test://template/123/data").unwrap()["id"], "123");
        assert!(t.matches("test://template//data").is_none());
        assert!(t.matches("test://template/1/2/data").is_none());
        assert!(t.matches("test://template/123/datax").is_none());
        let reserved = template("file:///{+path}");
        assert_eq!(
            reserved.matches("file:///a/b.txt").unwrap()["path"],
            "a/b.txt"
        );
    }

    /// Rule (issue 16, item 12): matching is linear in the URI: a template
    /// of three variables against URIs of 200 KB, matching or nearly (which
    /// a backtracking matcher would take `O(n^3)` steps to refuse), answers.
    #[test]
    fn long_uris_match_in_linear_time() {
        let t = template("x://{a}.{b}.{c}/end");
        let near = format!("x://{}", "a.".repeat(100_000));
        assert!(t.matches(&near).is_none());
        let long = format!("x://{}.b.c/end", "a".repeat(200_000));
        let vars = t.matches(&long).unwrap();
        assert_eq!(vars["a"].len(), 200_000);
        assert_eq!((vars["b"].as_str(), vars["c"].as_str()), ("b", "c"));
        // Each variable as short as the rest allows.
        let shortest = template("x://{a}.{b}").matches("x://1.2.3").unwrap();
        assert_eq!(
            (shortest["a"].as_str(), shortest["b"].as_str()),
            ("1", "2.3")
        );
        let reserved = template("x://{+a}/{b}").matches("x://p/q/r").unwrap();
        assert_eq!(
            (reserved["a"].as_str(), reserved["b"].as_str()),
            ("p/q", "r")
        );
    }

    #[test]
    fn unsupported_expressions_are_refused() {
        for bad in ["x://{?q}", "x://{a}{b}", "x://{a", "x://a}", "x://{}"] {
            assert!(
                ResourceTemplate::new(bad, "t")
                    .handler(|_, _: TemplateVars, _| async { Ok(Vec::new()) })
                    .register()
                    .is_err(),
                "{bad}"
            );
        }
    }
}
