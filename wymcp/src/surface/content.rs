//! Content blocks (what a tool result or a prompt message carries),
//! resource contents (what `resources/read` answers), and what decorates
//! both and the listings: [`Annotations`] and [`Icon`]s.

use serde::Serialize;
use serde_json::{Map, Value};

/// Who speaks a prompt message, or whom data is meant for (`Role` in the
/// schema).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PromptRole {
    /// The user.
    User,
    /// The assistant.
    Assistant,
}

/// Hints for the client about a content block or a resource: who it is
/// for, how important it is, when it last changed (`Annotations` in the
/// schema).
///
/// ```
/// use wymcp::{Annotations, Content, PromptRole};
///
/// let block = Content::text("the build passed")
///     .annotated(Annotations::new().audience([PromptRole::User]).priority(0.2));
/// # let _ = block;
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Annotations {
    /// Who the data is meant for (the user, the assistant, or both).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub audience: Vec<PromptRole>,
    /// How important it is, from 0 (entirely optional) to 1 (effectively
    /// required).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<f64>,
    /// When it last changed, as an ISO 8601 string
    /// (`"2025-01-12T15:00:58Z"`).
    #[serde(rename = "lastModified", skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
}

impl Annotations {
    /// No hints yet.
    #[must_use]
    pub fn new() -> Self {
        Annotations::default()
    }

    /// Who the data is meant for.
    #[must_use]
    pub fn audience(mut self, audience: impl IntoIterator<Item = PromptRole>) -> Self {
        self.audience = audience.into_iter().collect();
        self
    }

    /// How important it is: clamped to 0..=1 (the schema's range); a NaN
    /// leaves it unset.
    #[must_use]
    pub fn priority(mut self, priority: f64) -> Self {
        self.priority = (!priority.is_nan()).then(|| priority.clamp(0.0, 1.0));
        self
    }

    /// When it last changed, as an ISO 8601 string.
    #[must_use]
    pub fn last_modified(mut self, when: impl Into<String>) -> Self {
        self.last_modified = Some(when.into());
        self
    }
}

/// Which background an [`Icon`] is drawn for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum IconTheme {
    /// A light background.
    Light,
    /// A dark background.
    Dark,
}

/// An icon a client may show for the server, a tool, a resource, a
/// template or a prompt (`Icon` in the schema, 2025-11-25 on).
///
/// ```
/// use wymcp::{Icon, IconTheme, Tool};
///
/// let icon = Icon::new("https://example.com/notes.png")
///     .mime_type("image/png")
///     .sizes(["48x48"])
///     .theme(IconTheme::Light);
/// let tool = Tool::new("add_note").icon(icon);
/// # let _ = tool;
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Icon {
    /// An `https:` URL or a `data:` URI of the image.
    pub src: String,
    /// Its media type, when `src` does not tell.
    #[serde(rename = "mimeType", skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The sizes it suits (`"48x48"`, `"any"`); none: any size.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sizes: Vec<String>,
    /// The background it is drawn for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub theme: Option<IconTheme>,
}

impl Icon {
    /// The icon at `src`.
    pub fn new(src: impl Into<String>) -> Self {
        Icon {
            src: src.into(),
            mime_type: None,
            sizes: Vec::new(),
            theme: None,
        }
    }

    /// Its media type.
    #[must_use]
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// The sizes it suits.
    #[must_use]
    pub fn sizes(mut self, sizes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.sizes = sizes.into_iter().map(Into::into).collect();
        self
    }

    /// The background it is drawn for.
    #[must_use]
    pub fn theme(mut self, theme: IconTheme) -> Self {
        self.theme = Some(theme);
        self
    }
}

/// Puts `icons` (when there are some) into a listing.
pub(crate) fn insert_icons(object: &mut Map<String, Value>, icons: &[Icon]) {
    if !icons.is_empty() {
        // A struct of strings always serialises.
        object.insert(
            "icons".into(),
            serde_json::to_value(icons).unwrap_or(Value::Null),
        );
    }
}

/// Puts `annotations` (when given) into a listing.
pub(crate) fn insert_annotations(
    object: &mut Map<String, Value>,
    annotations: Option<&Annotations>,
) {
    if let Some(annotations) = annotations {
        object.insert(
            "annotations".into(),
            serde_json::to_value(annotations).unwrap_or(Value::Null),
        );
    }
}

/// One content block: text, an image, audio, an embedded resource, or a
/// link to a resource; each may carry [`Annotations`]
/// ([`Content::annotated`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Content {
    /// Plain text.
    Text {
        /// The text.
        text: String,
        /// Hints for the client.
        #[serde(skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations>,
    },
    /// An image, base64-encoded.
    Image {
        /// The base64 data.
        data: String,
        /// Its media type (`image/png`, …).
        #[serde(rename = "mimeType")]
        mime_type: String,
        /// Hints for the client.
        #[serde(skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations>,
    },
    /// Audio, base64-encoded.
    Audio {
        /// The base64 data.
        data: String,
        /// Its media type (`audio/wav`, …).
        #[serde(rename = "mimeType")]
        mime_type: String,
        /// Hints for the client.
        #[serde(skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations>,
    },
    /// A resource's contents, embedded.
    Resource {
        /// The contents.
        resource: ResourceContents,
        /// Hints for the client.
        #[serde(skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations>,
    },
    /// A link to a resource the client may read.
    ResourceLink {
        /// The resource's URI.
        uri: String,
        /// Its name.
        name: String,
        /// Its media type.
        #[serde(rename = "mimeType", skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// Hints for the client.
        #[serde(skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations>,
    },
}

impl Content {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Content::Text {
            text: text.into(),
            annotations: None,
        }
    }

    /// An image block from base64 data.
    pub fn image(base64: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Content::Image {
            data: base64.into(),
            mime_type: mime_type.into(),
            annotations: None,
        }
    }

    /// An audio block from base64 data.
    pub fn audio(base64: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Content::Audio {
            data: base64.into(),
            mime_type: mime_type.into(),
            annotations: None,
        }
    }

    /// An embedded resource.
    pub fn resource(contents: ResourceContents) -> Self {
        Content::Resource {
            resource: contents,
            annotations: None,
        }
    }

    /// A link to a resource.
    pub fn resource_link(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Content::ResourceLink {
            uri: uri.into(),
            name: name.into(),
            mime_type: None,
            annotations: None,
        }
    }

    /// The block with these hints for the client.
    #[must_use]
    pub fn annotated(mut self, hints: Annotations) -> Self {
        match &mut self {
            Content::Text { annotations, .. }
            | Content::Image { annotations, .. }
            | Content::Audio { annotations, .. }
            | Content::Resource { annotations, .. }
            | Content::ResourceLink { annotations, .. } => *annotations = Some(hints),
        }
        self
    }
}

impl From<&str> for Content {
    fn from(text: &str) -> Self {
        Content::text(text)
    }
}

impl From<String> for Content {
    fn from(text: String) -> Self {
        Content::text(text)
    }
}

/// The contents of one resource: text or a base64 blob, with its URI.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResourceContents {
    /// The resource's URI.
    pub uri: String,
    /// Its media type.
    #[serde(rename = "mimeType", skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Text contents.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Binary contents, base64-encoded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
    /// Extra metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

impl ResourceContents {
    /// Text contents.
    pub fn text(uri: impl Into<String>, text: impl Into<String>) -> Self {
        ResourceContents {
            uri: uri.into(),
            mime_type: None,
            text: Some(text.into()),
            blob: None,
            meta: None,
        }
    }

    /// Binary contents from base64 data.
    pub fn blob(uri: impl Into<String>, base64: impl Into<String>) -> Self {
        ResourceContents {
            uri: uri.into(),
            mime_type: None,
            text: None,
            blob: Some(base64.into()),
            meta: None,
        }
    }

    /// Sets the media type.
    #[must_use]
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }
}
