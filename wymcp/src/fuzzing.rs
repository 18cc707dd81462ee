//! Internals the fuzz targets (and the project's own tests of the same
//! functions) reach, behind the non-default `fuzzing` feature. Not a public
//! API: it may change in any release.

pub use crate::mrtr::{Binding, Sealer, UnsealError, params_digest};
pub use crate::protocol::headers::{
    Base64Error, HeaderParam, HeaderParamType, HeaderValueError, MCP_METHOD, MCP_NAME,
    MCP_PARAM_PREFIX, MCP_PROTOCOL_VERSION, base64_decode, base64_encode, decoded_text,
    encode_value, plain_text, trim_ows,
};
pub use crate::protocol::jsonrpc::{classify, is_request_id};
pub use crate::protocol::meta;
pub use crate::protocol::revision::era_of;

/// The `x-mcp-header` rows `HeaderBinding` checks for the tool `tool`.
#[must_use]
pub fn header_params<'s>(server: &'s crate::Server, tool: &str) -> &'s [HeaderParam] {
    server.header_params(tool)
}

/// The sealer of a server's MRTR `requestState`.
#[must_use]
pub fn sealer(server: &crate::Server) -> &Sealer {
    server.sealer()
}

/// Sets an exchange's facts as the stages before the one under test would
/// leave them, whatever its request says: for the project's tests and
/// benchmarks of one stage in isolation. A chain's stages establish them
/// by their rules (see [`Exchange`](crate::Exchange)).
pub fn set_facts(
    ex: &mut crate::Exchange<'_>,
    bytes: bytes::Bytes,
    message: Option<serde_json::Value>,
    kind: Option<crate::MessageKind>,
    era: crate::Era,
    revision: Option<crate::Revision>,
) {
    ex.set_facts(bytes, message, kind, era, revision);
}

/// What the stdio transport's line reader says next (see
/// [`StdioLines`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StdioLine {
    /// A line's bytes, without its ending.
    Message(Vec<u8>),
    /// A line over the ceiling, reported once; its rest is skipped.
    TooLong,
    /// The input ended.
    End,
}

/// The stdio transport's line reader, the one its connections read with:
/// newline-delimited messages, none longer than a ceiling.
#[derive(Debug)]
pub struct StdioLines<R>(crate::stdio::lines::Lines<R>);

impl<R: tokio::io::AsyncRead + Unpin> StdioLines<R> {
    /// Lines of at most `ceiling` bytes (their ending not counted) from
    /// `reader`.
    pub fn new(reader: R, ceiling: usize) -> Self {
        StdioLines(crate::stdio::lines::Lines::new(reader, ceiling))
    }

    /// The next line.
    ///
    /// # Errors
    ///
    /// The reader's error.
    pub async fn next(&mut self) -> std::io::Result<StdioLine> {
        use crate::stdio::lines::Line;
        Ok(match self.0.next().await? {
            Line::Message(bytes) => StdioLine::Message(bytes.to_vec()),
            Line::TooLong => StdioLine::TooLong,
            Line::End => StdioLine::End,
        })
    }

    /// How many bytes the reader holds now.
    #[must_use]
    pub fn buffered(&self) -> usize {
        self.0.buffered()
    }
}
