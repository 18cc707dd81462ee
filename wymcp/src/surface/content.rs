//! Content blocks (what a tool result or a prompt message carries) and
//! resource contents (what `resources/read` answers).

use serde::Serialize;
use serde_json::{Map, Value};

/// One content block: text, an image, audio, an embedded resource, or a
/// link to a resource.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Content {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, base64-encoded.
    Image {
        /// The base64 data.
        data: String,
        /// Its media type (`image/png`, …).
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// Audio, base64-encoded.
    Audio {
        /// The base64 data.
        data: String,
        /// Its media type (`audio/wav`, …).
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// A resource's contents, embedded.
    Resource {
        /// The contents.
        resource: ResourceContents,
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
    },
}

impl Content {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Content::Text { text: text.into() }
    }

    /// An image block from base64 data.
    pub fn image(base64: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Content::Image {
            data: base64.into(),
            mime_type: mime_type.into(),
        }
    }

    /// An audio block from base64 data.
    pub fn audio(base64: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Content::Audio {
            data: base64.into(),
            mime_type: mime_type.into(),
        }
    }

    /// An embedded resource.
    pub fn resource(contents: ResourceContents) -> Self {
        Content::Resource { resource: contents }
    }

    /// A link to a resource.
    pub fn resource_link(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Content::ResourceLink {
            uri: uri.into(),
            name: name.into(),
            mime_type: None,
        }
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
