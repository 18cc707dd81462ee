//! The stdio transport's line reader: newline-delimited messages, each held
//! to the line ceiling without being buffered past it.
//!
//! The input: byte 0 sets the ceiling (0 to 63), byte 1 how many chunk
//! sizes follow (0 to 7), those bytes the sizes (1 to 256 each, used in
//! turn) of the reads a reader returns the rest in. The reader is polled
//! with a no-op waker, and its reader says "not yet" before every read.

use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use tokio::io::{AsyncRead, ReadBuf};
use wymcp::fuzzing::{StdioLine, StdioLines};

use super::ensure;

/// A reader that hands out its bytes in reads of the given sizes, in turn,
/// and says "not yet" before each read: the line reader's future is then
/// dropped and asked again (it is cancel-safe), and what it holds between
/// reads can be looked at.
struct Chunked<'a> {
    data: &'a [u8],
    sizes: Vec<usize>,
    next: usize,
    ready: bool,
}

impl AsyncRead for Chunked<'_> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let ready = self.ready;
        self.ready = !ready;
        if !ready {
            context.waker().wake_by_ref();
            return Poll::Pending;
        }
        let size = self.sizes[self.next % self.sizes.len()];
        self.next += 1;
        let n = size.min(buf.remaining()).min(self.data.len());
        buf.put_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Poll::Ready(Ok(()))
    }
}

/// The lines a reference reads in `stream`: split at every `\n`, one `\r`
/// before it dropped, a piece longer than the ceiling too long, a blank one
/// skipped.
fn reference(stream: &[u8], ceiling: usize) -> Vec<StdioLine> {
    stream
        .split(|b| *b == b'\n')
        .filter_map(|piece| {
            let piece = piece.strip_suffix(b"\r").unwrap_or(piece);
            if piece.len() > ceiling {
                Some(StdioLine::TooLong)
            } else if piece.iter().all(u8::is_ascii_whitespace) {
                None
            } else {
                Some(StdioLine::Message(piece.to_vec()))
            }
        })
        .collect()
}

/// Every line of `stream` read in reads of `sizes`, each checked against
/// the bound on what the reader may hold.
fn read_all(stream: &[u8], ceiling: usize, sizes: Vec<usize>) -> Result<Vec<StdioLine>, String> {
    let largest = sizes.iter().copied().max().unwrap_or(0);
    let reader = Chunked {
        data: stream,
        sizes,
        next: 0,
        ready: false,
    };
    let mut lines = StdioLines::new(reader, ceiling);
    let mut context = Context::from_waker(Waker::noop());
    let mut out = Vec::new();
    // Each poll returns a line, reads at least one byte or waits for the
    // next read: more polls than that is a reader that does not advance.
    for _ in 0..=4 * stream.len() + 4 {
        let polled = {
            let mut next = std::pin::pin!(lines.next());
            next.as_mut().poll(&mut context)
        };
        let line = match polled {
            Poll::Ready(Ok(line)) => line,
            Poll::Ready(Err(error)) => return Err(format!("a read failed: {error}")),
            Poll::Pending => {
                // Between reads it holds at most the ceiling and a `\r`.
                ensure!(
                    lines.buffered() <= ceiling + 1,
                    "the reader holds {} bytes between reads with a ceiling of {ceiling}",
                    lines.buffered()
                );
                continue;
            }
        };
        // A read adds at most one chunk.
        ensure!(
            lines.buffered() <= ceiling + 1 + largest,
            "the reader holds {} bytes with a ceiling of {ceiling} and reads of at most {largest}",
            lines.buffered()
        );
        if let StdioLine::Message(message) = &line {
            ensure!(
                message.len() <= ceiling,
                "a message of {} bytes passed a ceiling of {ceiling}",
                message.len()
            );
        }
        if line == StdioLine::End {
            return Ok(out);
        }
        out.push(line);
    }
    Err("the reader never reported the end of its input".to_owned())
}

/// Checks that the line reader yields exactly the lines of the reference,
/// whether the input comes in the chunk sizes the input chose, one byte at
/// a time, or all at once; that no message is longer than the ceiling; and
/// that the reader never holds more than the ceiling and a `\r` between
/// reads, nor more than one read on top of that.
pub fn check_stdio_lines(data: &[u8]) -> Result<(), String> {
    let Some((&ceiling, rest)) = data.split_first() else {
        return Ok(());
    };
    let ceiling = usize::from(ceiling % 64);
    let (count, rest) = rest
        .split_first()
        .map_or((0, rest), |(c, r)| (usize::from(c % 8), r));
    let count = count.min(rest.len());
    let (sizes, stream) = rest.split_at(count);
    let mut sizes: Vec<usize> = sizes.iter().map(|s| usize::from(*s) + 1).collect();
    if sizes.is_empty() {
        sizes.push(7);
    }
    let expected = reference(stream, ceiling);
    for sizes in [sizes, vec![1], vec![stream.len().max(1)]] {
        let got = read_all(stream, ceiling, sizes.clone())?;
        ensure!(
            got == expected,
            "reads of {sizes:?} with a ceiling of {ceiling} gave {got:?}, the reference {expected:?}"
        );
    }
    Ok(())
}
