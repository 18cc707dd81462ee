//! A POST's body, read within the server's [`Limits`]: its ceiling, its
//! read timeout and deadline, and the budget of body bytes in flight. The
//! parse step's read, which [`Exchange::read_body`](crate::Exchange::read_body)
//! runs for whichever stage asks it first.

use std::future::Future as _;
use std::task::Poll;
use std::time::Duration;

use axum::body::Body;
use bytes::Bytes;
use http_body::Body as _;
use http_body_util::BodyExt as _;

use crate::ledger::{Place, Refusal};
use crate::server::Limits;

/// Why a body read did not produce the body.
pub(crate) enum ReadFailure {
    /// More than the ceiling, declared or read.
    OverCeiling,
    /// The body would go over the server's budget of body bytes in flight.
    OverBudget,
    /// The body would go over its caller's share of that budget, or its
    /// place gave way to a caller under its fair share.
    OverShare,
    /// No piece of the body arrived within the read timeout, or the whole
    /// body not within the body deadline.
    Stalled,
    /// The transport failed the read.
    Transport(axum::Error),
}

/// Reads the whole body within the body ceiling, waiting at most the read
/// timeout for each piece of it and the body deadline for all of it, its
/// bytes beyond what `place` holds taken from the ledger as they arrive;
/// a place that gives way ends the read ([`ReadFailure::OverShare`]).
///
/// A body that arrives in one piece (the common case for a small request) is
/// kept as that piece, without a copy. Otherwise it is put together from
/// [`Pieces`] once its last piece is there: one allocation of exactly its
/// length, each byte copied once.
pub(crate) async fn read(
    mut body: Body,
    limits: &Limits,
    place: &mut Place,
) -> Result<Bytes, ReadFailure> {
    let ceiling = limits.body_bytes;
    let deadline = tokio::time::Instant::now() + limits.body_deadline;
    let mut held = reserved_len(&body, ceiling);
    let hint = body.size_hint();
    let ceiling_u64 = u64::try_from(ceiling).unwrap_or(u64::MAX);
    if hint.lower() > ceiling_u64 {
        return Err(ReadFailure::OverCeiling);
    }
    let declared = hint
        .exact()
        .map_or(0, |len| usize::try_from(len).unwrap_or(ceiling));

    let mut first: Option<Bytes> = None;
    let mut pieces = Pieces::new(declared);
    let mut total = 0usize;
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let frame = match next_frame(&mut body, limits.read_timeout.min(left), place).await {
            Err(failure) => return Err(failure),
            Ok(None) => break,
            Ok(Some(Err(error))) => return Err(ReadFailure::Transport(error)),
            Ok(Some(Ok(frame))) => frame,
        };
        // Trailers carry nothing the message is made of.
        let Ok(data) = frame.into_data() else {
            continue;
        };
        if data.is_empty() {
            continue;
        }
        total = total.saturating_add(data.len());
        if total > ceiling {
            return Err(ReadFailure::OverCeiling);
        }
        if total > held {
            match place.grow(total - held) {
                Ok(()) => {}
                Err(Refusal::Share(_)) => return Err(ReadFailure::OverShare),
                Err(Refusal::Cap(_)) => return Err(ReadFailure::OverBudget),
            }
            held = total;
        }
        match first.take() {
            None if pieces.is_empty() => first = Some(data),
            None => pieces.push(data),
            Some(held) => {
                pieces.push(held);
                pieces.push(data);
            }
        }
    }
    Ok(match first {
        Some(only) => only,
        None => pieces.into_body(total),
    })
}

/// The bytes reserved for `body` before its read: its declared length,
/// within the ceiling.
pub(crate) fn reserved_len(body: &Body, ceiling: usize) -> usize {
    usize::try_from(body.size_hint().lower())
        .unwrap_or(usize::MAX)
        .min(ceiling)
}

/// A body frame of at least this many bytes is kept as the transport gave
/// it until the body is whole; smaller ones are copied together at once.
const KEEP: usize = 64 * 1024;

/// The most the buffer of small frames is sized from the body's declared
/// length before the bytes are there.
const PREALLOCATION: usize = 64 * 1024;

/// The pieces of a body that arrives in more than one.
///
/// Large frames are kept as they came (no copy until the body is put
/// together); small ones are copied into one buffer as they arrive, so a
/// client that sends many small pieces does not hold a transport buffer
/// alive per piece. That buffer is sized from the declared length only up to
/// [`PREALLOCATION`]: a declared length is a client's claim, and trusting it
/// whole would let a client that sends two small pieces and stalls hold the
/// server to the whole declared size. Past it the buffer grows as bytes
/// arrive.
struct Pieces {
    declared: usize,
    kept: Vec<Bytes>,
    small: Vec<u8>,
}

impl Pieces {
    fn new(declared: usize) -> Self {
        Pieces {
            declared,
            kept: Vec::new(),
            small: Vec::new(),
        }
    }

    fn is_empty(&self) -> bool {
        self.kept.is_empty() && self.small.is_empty()
    }

    fn push(&mut self, data: Bytes) {
        if data.len() >= KEEP {
            if !self.small.is_empty() {
                self.kept.push(Bytes::from(std::mem::take(&mut self.small)));
            }
            self.kept.push(data);
        } else {
            if self.small.capacity() == 0 {
                self.small
                    .reserve_exact(self.declared.min(PREALLOCATION).max(data.len()));
            }
            self.small.extend_from_slice(&data);
        }
    }

    /// The body, `total` bytes, in one allocation.
    fn into_body(mut self, total: usize) -> Bytes {
        if self.kept.is_empty() {
            return Bytes::from(self.small);
        }
        if !self.small.is_empty() {
            self.kept.push(Bytes::from(self.small));
        }
        if self.kept.len() == 1 {
            return self.kept.pop().unwrap_or_default();
        }
        let mut body = Vec::with_capacity(total);
        for piece in &self.kept {
            body.extend_from_slice(piece);
        }
        Bytes::from(body)
    }
}

/// The body's next frame, waiting at most `timeout` for it. A frame already
/// there (a small body arrives with its head) is taken without arming a
/// timer.
async fn next_frame(
    body: &mut Body,
    timeout: Duration,
    place: &Place,
) -> Result<Option<Result<http_body::Frame<Bytes>, axum::Error>>, ReadFailure> {
    if place.is_evicted() {
        return Err(ReadFailure::OverShare);
    }
    let mut frame = std::pin::pin!(body.frame());
    match std::future::poll_fn(|cx| Poll::Ready(frame.as_mut().poll(cx))).await {
        Poll::Ready(frame) => Ok(frame),
        // Waiting on the client: until the piece, the read timeout, or the
        // place giving way, whichever comes first.
        Poll::Pending => tokio::select! {
            frame = tokio::time::timeout(timeout, frame) => frame.map_err(|_elapsed| ReadFailure::Stalled),
            () = place.evicted() => Err(ReadFailure::OverShare),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whatever mix of small and large frames a body arrives in, it is put
    /// together in order, whole, in one allocation of exactly its length.
    #[test]
    fn pieces_put_a_body_together_in_order() {
        let sizes: [&[usize]; 6] = [
            &[10, 20],
            &[KEEP, 5],
            &[5, KEEP, 7, KEEP + 3],
            &[KEEP * 2, KEEP],
            &[1, 1, 1, KEEP, 1],
            &[KEEP, 1, 1, 1],
        ];
        for frames in sizes {
            let mut pieces = Pieces::new(0);
            let mut expected = Vec::new();
            let mut next = 0u8;
            for &len in frames {
                let frame: Vec<u8> = (0..len)
                    .map(|_| {
                        next = next.wrapping_add(1);
                        next
                    })
                    .collect();
                expected.extend_from_slice(&frame);
                pieces.push(Bytes::from(frame));
            }
            let body = pieces.into_body(expected.len());
            assert_eq!(body.len(), expected.len(), "{frames:?}");
            assert!(body == expected, "{frames:?}");
        }
    }
}
