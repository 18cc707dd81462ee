//! The framing of the stdio transport: one message a line, each line held
//! to the line ceiling without ever being buffered past it.
//!
//! A line ends at `\n`; a `\r` before it is part of the ending. A line of
//! whitespace alone is skipped (it carries no message). A line longer than
//! the ceiling is reported as [`Line::TooLong`] as soon as the buffer holds
//! more than the ceiling, the buffer is emptied, and everything up to the
//! next `\n` is read and dropped as it arrives: whatever its length, an
//! over-long line never costs more than the ceiling and one read. A last
//! line without its `\n` before the end of the input is a line all the same.

use bytes::{Buf as _, Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt as _};

/// How much is asked of the reader at once.
const READ_CHUNK: usize = 64 * 1024;

/// What the reader says next.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Line {
    /// A line's bytes, without its ending: its own allocation, so a call that
    /// keeps them holds nothing else.
    Message(Bytes),
    /// A line over the ceiling; its rest is being skipped.
    TooLong,
    /// The input ended.
    End,
}

/// Lines from `reader`, none longer than the ceiling.
#[derive(Debug)]
pub(crate) struct Lines<R> {
    reader: R,
    buf: BytesMut,
    ceiling: usize,
    /// How much of `buf` is known to hold no `\n`.
    scanned: usize,
    /// Dropping the rest of an over-long line.
    skipping: bool,
    /// The reader said end of input.
    ended: bool,
}

impl<R: AsyncRead + Unpin> Lines<R> {
    /// Lines of at most `ceiling` bytes (their ending not counted) from `reader`.
    pub(crate) fn new(reader: R, ceiling: usize) -> Self {
        Lines {
            reader,
            buf: BytesMut::with_capacity(READ_CHUNK),
            ceiling,
            scanned: 0,
            skipping: false,
            ended: false,
        }
    }

    /// The next line. Cancel-safe: the state lives in `self`, and the one
    /// await reads into the buffer or not at all.
    pub(crate) async fn next(&mut self) -> std::io::Result<Line> {
        loop {
            if let Some(at) = self.buf[self.scanned..].iter().position(|&b| b == b'\n') {
                let end = self.scanned + at;
                let line = self.take(end, 1);
                if std::mem::take(&mut self.skipping) {
                    // The tail of a line already reported.
                    continue;
                }
                match self.judge(line) {
                    Some(line) => return Ok(line),
                    None => continue,
                }
            }
            if self.skipping {
                self.buf.clear();
                self.scanned = 0;
            } else if self.buf.len() > self.ceiling + 1 {
                // Past the ceiling with no end in sight (the one byte more
                // is a `\r` that may end a line of exactly the ceiling).
                self.buf.clear();
                self.scanned = 0;
                self.skipping = true;
                return Ok(Line::TooLong);
            } else {
                self.scanned = self.buf.len();
            }
            if self.ended {
                if self.skipping || self.buf.is_empty() {
                    return Ok(Line::End);
                }
                let line = self.take(self.buf.len(), 0);
                if let Some(line) = self.judge(line) {
                    return Ok(line);
                }
                return Ok(Line::End);
            }
            self.shrink();
            self.buf.reserve(READ_CHUNK);
            if self.reader.read_buf(&mut self.buf).await? == 0 {
                self.ended = true;
            }
        }
    }

    /// The first `len` bytes of the buffer as a line of its own, and the
    /// `ending` bytes after them dropped.
    fn take(&mut self, len: usize, ending: usize) -> Bytes {
        let line = Bytes::copy_from_slice(&self.buf[..len]);
        self.buf.advance(len + ending);
        self.scanned = 0;
        line
    }

    /// A whole line as what it says: its message, over the ceiling, or
    /// nothing (a blank line).
    fn judge(&self, mut line: Bytes) -> Option<Line> {
        if line.last() == Some(&b'\r') {
            line.truncate(line.len() - 1);
        }
        if line.len() > self.ceiling {
            return Some(Line::TooLong);
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            return None;
        }
        Some(Line::Message(line))
    }

    /// How many bytes the reader holds now: for the fuzz target's check
    /// that an over-long line is never held past the ceiling.
    #[cfg(feature = "fuzzing")]
    pub(crate) fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// Gives back the room a large line took once the buffer is empty again.
    fn shrink(&mut self) {
        if self.buf.is_empty() && self.buf.capacity() > 4 * READ_CHUNK {
            self.buf = BytesMut::with_capacity(READ_CHUNK);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    async fn all(input: &[u8], ceiling: usize) -> Vec<Line> {
        let mut lines = Lines::new(input, ceiling);
        let mut out = Vec::new();
        loop {
            let line = lines.next().await.unwrap();
            if line == Line::End {
                return out;
            }
            out.push(line);
        }
    }

    fn message(text: &str) -> Line {
        Line::Message(Bytes::copy_from_slice(text.as_bytes()))
    }

    #[tokio::test]
    async fn lines_end_at_newlines_crlf_included_and_blank_ones_are_skipped() {
        assert_eq!(
            all(b"{\"a\":1}\n\r\n  \n{\"b\":2}\r\n{\"c\":3}", 100).await,
            [
                message("{\"a\":1}"),
                message("{\"b\":2}"),
                message("{\"c\":3}")
            ]
        );
    }

    #[tokio::test]
    async fn a_line_of_the_ceiling_passes_and_one_byte_more_is_too_long() {
        let at = "x".repeat(10);
        let over = "y".repeat(11);
        let input = format!("{at}\r\n{over}\n{at}\n{over}");
        assert_eq!(
            all(input.as_bytes(), 10).await,
            [message(&at), Line::TooLong, message(&at), Line::TooLong]
        );
    }

    #[tokio::test]
    async fn an_over_long_line_is_skipped_without_being_held() {
        // 1 MiB with a ceiling of 100: reported once, as soon as the buffer
        // holds more than the ceiling; the line after it is read whole.
        let mut input = vec![b'z'; 1 << 20];
        input.extend_from_slice(b"\n{\"after\":true}\n");
        let mut lines = Lines::new(&input[..], 100);
        assert_eq!(lines.next().await.unwrap(), Line::TooLong);
        assert!(lines.buf.capacity() <= 2 * READ_CHUNK + 101);
        assert_eq!(lines.next().await.unwrap(), message("{\"after\":true}"));
        assert_eq!(lines.next().await.unwrap(), Line::End);
    }
}
