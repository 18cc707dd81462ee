//! What every item a server registers has, whatever its kind: a title, a
//! description, icons, the scopes a caller must hold, its `_meta`; and the
//! one set of builder setters that sets them.
//!
//! A [`Tool`](crate::Tool), a [`Prompt`](crate::Prompt), a
//! [`Resource`](crate::Resource) and a
//! [`ResourceTemplate`](crate::ResourceTemplate) are each an [`Item`] of
//! their kind (`Tool` is `Item<ToolKind>`). The setters written here, on
//! `Item<K>` for every kind, are inherent methods: `Tool::new("t").title("T")`
//! needs nothing imported, and a kind's own setters (a tool's
//! `annotations`, a resource's `mime_type`) sit beside its kind.

use serde_json::{Map, Value};

use super::content::{Icon, insert_icons};
use super::scopes::Scopes;

/// An item a server registers: what every item has (a title, a
/// description, icons, the scopes a caller must hold, its `_meta`, each set
/// by the setters written once here) and what its kind `K` adds (a tool's
/// schemas and handler, a resource's URI and contents, set by setters
/// beside the kind). The setters are inherent methods, so
/// `Tool::new("t").title("T")` needs nothing imported. Never named as such:
/// write [`Tool`](crate::Tool), [`Prompt`](crate::Prompt),
/// [`Resource`](crate::Resource) or
/// [`ResourceTemplate`](crate::ResourceTemplate).
///
/// ```
/// use wymcp::{Icon, Prompt, PromptResult};
///
/// let prompt = Prompt::new("greet")
///     .title("Greet")
///     .description("Greets the user")
///     .icon(Icon::new("https://example.com/greet.png"))
///     .meta(serde_json::json!({"example.com/owner": "docs"}))
///     .handler(|_: wymcp::NoArgs, _cx| async { Ok(PromptResult::new().user("Hello")) });
/// # let _ = wymcp::Server::builder().prompt(prompt).build().unwrap();
/// ```
#[derive(Clone)]
pub struct Item<K> {
    /// What every item has.
    pub(crate) about: About,
    /// What its kind adds.
    pub(crate) kind: K,
}

/// The metadata of an item, whatever its kind.
#[derive(Debug, Clone, Default)]
pub(crate) struct About {
    pub(crate) title: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) icons: Vec<Icon>,
    /// What a caller must hold to see and use the item.
    pub(crate) scopes: Scopes,
    pub(crate) meta: Option<Value>,
    /// The state type the item's handler is a method of (a `&self`
    /// method of a `#[wymcp::tools]` impl): checked when the server is
    /// built.
    pub(crate) method_of: Option<MethodOf>,
}

/// What an item's handler needs of the server's state: a value of one
/// type, named for the error, and how to tell whether the state holds it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MethodOf {
    /// The state type's name.
    pub(crate) state: &'static str,
    /// What the item is, for the error (`tool \`add_note\``).
    pub(crate) item: &'static str,
    /// Whether the server's state holds the type.
    pub(crate) given: fn(&http::Extensions) -> bool,
}

impl About {
    /// Writes the metadata into an item's listing (its scopes are the
    /// server's, never listed).
    pub(crate) fn list_into(&self, listing: &mut Map<String, Value>) {
        if let Some(title) = &self.title {
            listing.insert("title".into(), title.clone().into());
        }
        if let Some(description) = &self.description {
            listing.insert("description".into(), description.clone().into());
        }
        insert_icons(listing, &self.icons);
        if let Some(meta) = &self.meta {
            listing.insert("_meta".into(), meta.clone());
        }
    }
}

impl<K: std::fmt::Debug> std::fmt::Debug for Item<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.kind.fmt(f)
    }
}

impl<K> Item<K> {
    /// An item of `kind`, with no metadata yet.
    pub(crate) fn of(kind: K) -> Self {
        Item {
            about: About::default(),
            kind,
        }
    }

    /// A display title.
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.about.title = Some(title.into());
        self
    }

    /// What it is, or does (for a tool: for the model).
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.about.description = Some(description.into());
        self
    }

    /// An icon a client may show for it (each call adds one).
    #[must_use]
    pub fn icon(mut self, icon: Icon) -> Self {
        self.about.icons.push(icon);
        self
    }

    /// The scopes a caller's token must hold to use it (call the tool, get
    /// the prompt, read the resource or the template's resources), on top
    /// of the server's own
    /// ([`AuthConfig::required_scopes`](crate::auth::AuthConfig::required_scopes)).
    /// A caller without them does not see it listed and is answered `403`
    /// `insufficient_scope` naming every scope the call needs. A server
    /// with an item that requires scopes needs an authenticator.
    ///
    /// ```
    /// use wymcp::auth::{AuthConfig, StaticTokens};
    /// use wymcp::{NoArgs, Server, Tool, ToolResult};
    ///
    /// let item = Tool::new("delete_note").handler(|_: NoArgs, _cx| async { Ok(ToolResult::text("deleted")) }).scopes(["notes:write"]);
    /// let server = Server::builder()
    ///     .auth(StaticTokens::new(), AuthConfig::new())
    ///     .tool(item)
    ///     .build()
    ///     .unwrap();
    /// # let _ = server;
    /// ```
    #[must_use]
    pub fn scopes(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.about.scopes = Scopes::new(scopes);
        self
    }

    /// Its `_meta`, listed verbatim.
    #[must_use]
    pub fn meta(mut self, meta: Value) -> Self {
        self.about.meta = Some(meta);
        self
    }
}
