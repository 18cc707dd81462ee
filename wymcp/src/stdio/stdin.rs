//! The process's standard input as an [`AsyncRead`], read on a thread of
//! its own.
//!
//! Why not `tokio::io::stdin()`: its reads run on the runtime's blocking
//! pool and cannot be cancelled, so a runtime shutting down while one waits
//! (the server ended for another reason than end of input: stdout closed)
//! waits with it until the client writes or closes. A plain thread the
//! runtime does not own is left behind instead, and the process exits.
//! The thread reads at most two chunks ahead of the server (a bounded
//! channel), so a server that stops reading stops it too.

use std::io::Read as _;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::{Buf as _, Bytes};
use tokio::io::{AsyncRead, ReadBuf};
use tokio::sync::mpsc;

const CHUNK: usize = 64 * 1024;

/// Standard input, fed by the `wymcp-stdin` thread.
#[derive(Debug)]
pub(super) struct Stdin {
    rx: mpsc::Receiver<std::io::Result<Bytes>>,
    chunk: Bytes,
}

/// Starts the thread that reads standard input.
pub(super) fn stdin() -> std::io::Result<Stdin> {
    let (tx, rx) = mpsc::channel(2);
    std::thread::Builder::new()
        .name("wymcp-stdin".to_owned())
        .spawn(move || {
            let mut input = std::io::stdin().lock();
            let mut buf = vec![0; CHUNK];
            loop {
                let read = match input.read(&mut buf) {
                    Ok(0) => return,
                    Ok(n) => Ok(Bytes::copy_from_slice(&buf[..n])),
                    Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(error) => Err(error),
                };
                let failed = read.is_err();
                if tx.blocking_send(read).is_err() || failed {
                    return;
                }
            }
        })?;
    Ok(Stdin {
        rx,
        chunk: Bytes::new(),
    })
}

impl AsyncRead for Stdin {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if self.chunk.is_empty() {
            match ready!(self.rx.poll_recv(cx)) {
                // The thread is done: end of input.
                None => return Poll::Ready(Ok(())),
                Some(Err(error)) => return Poll::Ready(Err(error)),
                Some(Ok(chunk)) => self.chunk = chunk,
            }
        }
        let n = self.chunk.len().min(buf.remaining());
        buf.put_slice(&self.chunk[..n]);
        self.chunk.advance(n);
        Poll::Ready(Ok(()))
    }
}
