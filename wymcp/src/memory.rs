//! The idle memory release, a layer a deployment opts into: after a server
//! has read many body bytes and then goes quiet, it hands the allocator's
//! free memory back to the kernel.
//!
//! ```
//! use wymcp::memory::{DEFAULT_RELEASE_AFTER, ReleaseMemory};
//!
//! let server = std::sync::Arc::new(wymcp::Server::builder().build()?);
//! let release = ReleaseMemory::after(DEFAULT_RELEASE_AFTER);
//! let router = wymcp::chain::post::router(server).layer(release.clone());
//! assert_eq!(release.releases(), 0);
//! # let _ = router;
//! # Ok::<(), wymcp::BuildError>(())
//! ```
//!
//! **Why.** glibc's malloc keeps most memory freed in the middle of its heap
//! (the pages under chunks that are free but not at the heap's top, and the
//! arenas of other threads): after 64 concurrent 8 MB bodies a server stays
//! 15–40 MiB above its idle RSS for good, whatever `GLIBC_TUNABLES` says.
//! Only `malloc_trim(0)` returns those pages. It walks every arena and
//! `madvise`s its free pages away, which costs milliseconds and makes the
//! next requests fault their memory back in, so it is done only when it pays:
//!
//! * at least the layer's threshold of body bytes (the recommended one is
//!   [`DEFAULT_RELEASE_AFTER`]) were read since the last release, and
//! * the server then stays quiet for [`QUIET`]: no request in flight, and no
//!   body byte read, for the whole of it.
//!
//! The hot path is a relaxed atomic addition when a request begins, one per
//! body frame read and one when it ends, and one relaxed load when the last
//! request in flight ends. When both conditions hold, a timer task watches
//! for the quiet period (one at a time; it wakes every [`QUIET`] while
//! requests keep coming, so a steady load never triggers a release) and the
//! release runs on tokio's blocking pool, off every request's path.
//!
//! Off Linux with glibc the release is a no-op: other allocators (musl,
//! macOS's, Windows') have no such call, and return memory their own way.
//!
//! This is wymcp's one use of `unsafe`: a call to a C function, declared here
//! rather than through the `libc` crate, which would add a dependency for
//! one declaration.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::Body;
use bytes::Bytes;
use http_body::{Frame, SizeHint};

/// The recommended threshold of [`ReleaseMemory::after`]: 64 MiB of request
/// bodies read since the last release.
///
/// Why 64 MiB: it is glibc's own largest trim threshold (twice its largest
/// mmap threshold on 64-bit), the most free memory glibc itself agrees to keep
/// at the heap's top, so a server releases only after traffic that could
/// have left more than glibc would keep; and it is eight bodies at the
/// default 8 MB ceiling, so one burst of large bodies is enough, while a
/// stream of small calls (a few hundred bytes each) needs hundreds of
/// thousands of requests — and a pause — before it releases once.
pub const DEFAULT_RELEASE_AFTER: u64 = 64 * 1024 * 1024;

/// How long the server must be quiet (nothing in flight, no body byte read)
/// before it releases memory.
pub const QUIET: Duration = Duration::from_millis(250);

/// The idle memory release as a layer around a chain's router (see the
/// [module docs](self)). Clones share one set of counters: keep a clone to
/// read [`releases`](Self::releases).
#[derive(Debug, Clone)]
pub struct ReleaseMemory(Arc<MemoryRelease>);

impl ReleaseMemory {
    /// Releases free memory once `bytes` of request bodies were read since
    /// the last release and the server then stays quiet for [`QUIET`].
    #[must_use]
    pub fn after(bytes: u64) -> Self {
        ReleaseMemory(Arc::new(MemoryRelease::new(Some(bytes))))
    }

    /// The threshold, in body bytes.
    #[must_use]
    pub fn threshold(&self) -> u64 {
        self.0.threshold.unwrap_or(u64::MAX)
    }

    /// How many times memory was released so far.
    #[must_use]
    pub fn releases(&self) -> u64 {
        self.0.releases()
    }
}

impl<S> tower::Layer<S> for ReleaseMemory {
    type Service = ReleaseMemoryService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        ReleaseMemoryService {
            inner,
            release: Arc::clone(&self.0),
        }
    }
}

/// The service of [`ReleaseMemory`]: counts each request in flight until
/// answered, and its body bytes as they are read.
#[derive(Debug, Clone)]
pub struct ReleaseMemoryService<S> {
    inner: S,
    release: Arc<MemoryRelease>,
}

impl<S> tower::Service<http::Request<Body>> for ReleaseMemoryService<S>
where
    S: tower::Service<http::Request<Body>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        // Counted in flight until answered or dropped.
        let in_flight = InFlight::begin(&self.release);
        let release = Arc::clone(&self.release);
        let request = request.map(|body| Body::new(Counted { body, release }));
        let answer = self.inner.call(request);
        Box::pin(async move {
            let response = answer.await;
            drop(in_flight);
            response
        })
    }
}

/// A request body that counts its bytes as they are read.
struct Counted {
    body: Body,
    release: Arc<MemoryRelease>,
}

impl http_body::Body for Counted {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let polled = Pin::new(&mut self.body).poll_frame(cx);
        if let Poll::Ready(Some(Ok(frame))) = &polled
            && let Some(data) = frame.data_ref()
        {
            self.release.body_read(data.len());
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// The counters of the idle release, shared by a [`ReleaseMemory`] and its
/// services.
#[derive(Debug)]
pub(crate) struct MemoryRelease {
    /// Release after this many body bytes; `None`: never.
    threshold: Option<u64>,
    /// POSTs between the router handing them to the chain and their answer.
    in_flight: AtomicU64,
    /// Body bytes read since the last release.
    bytes: AtomicU64,
    /// Whether a timer task is watching for the quiet period.
    armed: AtomicBool,
    /// Releases done.
    releases: AtomicU64,
}

/// What the timer does after one quiet period's wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AfterWait {
    /// It was quiet: release, this many body bytes read since the last one.
    Release(u64),
    /// Something happened: wait another period, watching from this count of
    /// body bytes.
    Wait(u64),
}

impl MemoryRelease {
    pub(crate) fn new(threshold: Option<u64>) -> Self {
        MemoryRelease {
            threshold,
            in_flight: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            armed: AtomicBool::new(false),
            releases: AtomicU64::new(0),
        }
    }

    pub(crate) fn releases(&self) -> u64 {
        self.releases.load(Relaxed)
    }

    /// A POST begins.
    pub(crate) fn begin(&self) {
        if self.threshold.is_some() {
            self.in_flight.fetch_add(1, Relaxed);
        }
    }

    /// `len` body bytes were read.
    pub(crate) fn body_read(&self, len: usize) {
        if self.threshold.is_some() {
            self.bytes
                .fetch_add(u64::try_from(len).unwrap_or(u64::MAX), Relaxed);
        }
    }

    /// A POST ended (answered, failed or dropped). Whether the caller must
    /// start the timer: the last request in flight ended, enough body bytes
    /// were read, and no timer is watching yet.
    pub(crate) fn end(&self) -> bool {
        let Some(threshold) = self.threshold else {
            return false;
        };
        self.in_flight.fetch_sub(1, Relaxed) == 1
            && self.bytes.load(Relaxed) >= threshold
            && !self.armed.swap(true, Relaxed)
    }

    /// The body-byte count the timer starts watching from.
    fn watch(&self) -> u64 {
        self.bytes.load(Relaxed)
    }

    /// After the timer waited one quiet period having seen `seen` body bytes:
    /// quiet means nothing is in flight and no body byte was read since. A
    /// release takes the count (reset to zero) and disarms the timer, so the
    /// next one starts after another threshold of bytes.
    pub(crate) fn after_wait(&self, seen: u64) -> AfterWait {
        let now = self.bytes.load(Relaxed);
        if now != seen || self.in_flight.load(Relaxed) != 0 {
            return AfterWait::Wait(now);
        }
        let bytes = self.bytes.swap(0, Relaxed);
        self.armed.store(false, Relaxed);
        AfterWait::Release(bytes)
    }
}

/// Counts a POST as in flight for as long as it lives; when the last one
/// ends after enough body bytes, starts the watch for a quiet period.
#[derive(Debug)]
pub(crate) struct InFlight(Arc<MemoryRelease>);

impl InFlight {
    pub(crate) fn begin(release: &Arc<MemoryRelease>) -> Self {
        release.begin();
        InFlight(release.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if self.0.end() {
            match tokio::runtime::Handle::try_current() {
                Ok(runtime) => {
                    runtime.spawn(watch(self.0.clone()));
                }
                // No runtime to wait on (not reachable from the router, which
                // tokio runs): disarm, a later request will arm it again.
                Err(_) => self.0.armed.store(false, Relaxed),
            }
        }
    }
}

/// Waits for a quiet period, then releases memory on the blocking pool.
async fn watch(release: Arc<MemoryRelease>) {
    let mut seen = release.watch();
    let bytes = loop {
        tokio::time::sleep(QUIET).await;
        match release.after_wait(seen) {
            AfterWait::Release(bytes) => break bytes,
            AfterWait::Wait(now) => seen = now,
        }
    };
    let task = tokio::task::spawn_blocking(move || {
        let start = Instant::now();
        let released = trim();
        release.releases.fetch_add(1, Relaxed);
        tracing::debug!(
            target: "wymcp::memory",
            bytes_since_last = bytes,
            released,
            duration_us = u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX),
            "released free memory to the kernel"
        );
    });
    // The task's outcome is only its event; a panic in it is tokio's to report.
    drop(task);
}

/// Hands the allocator's free memory back to the kernel; whether any was.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn trim() -> bool {
    unsafe extern "C" {
        /// glibc's `malloc_trim(3)`: releases free memory at the top of the
        /// main heap beyond `pad` bytes, and the free pages inside every
        /// arena; returns 1 if memory was released, 0 otherwise.
        fn malloc_trim(pad: usize) -> std::ffi::c_int;
    }
    // SAFETY: `malloc_trim` has no preconditions: it takes a plain integer,
    // touches only the allocator's own state under the allocator's own arena
    // locks (it is MT-Safe in glibc's manual), and frees nothing a live
    // allocation uses. The declaration matches glibc's
    // `int malloc_trim(size_t pad)` (`usize` is `size_t` on Linux).
    unsafe { malloc_trim(0) == 1 }
}

/// Elsewhere: nothing to do.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim() -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: usize = 1024 * 1024;

    fn release(threshold: u64) -> MemoryRelease {
        MemoryRelease::new(Some(threshold))
    }

    /// One request: begins, reads `len`, ends; whether it armed the timer.
    fn request(r: &MemoryRelease, len: usize) -> bool {
        r.begin();
        r.body_read(len);
        r.end()
    }

    #[test]
    fn the_last_request_to_end_after_the_threshold_arms_the_timer_once() {
        let r = release(64 * MIB as u64);
        for _ in 0..8 {
            r.begin();
        }
        for _ in 0..8 {
            r.body_read(8 * MIB);
        }
        let armed: Vec<bool> = (0..8).map(|_| r.end()).collect();
        assert_eq!(
            armed,
            [false, false, false, false, false, false, false, true]
        );
        // Armed already: a further request does not start a second timer.
        assert!(!request(&r, 10));
    }

    #[test]
    fn below_the_threshold_nothing_is_armed() {
        let r = release(64 * MIB as u64);
        // 100,000 small calls, one at a time: 21 MB, below 64 MiB.
        for _ in 0..100_000 {
            assert!(!request(&r, 210));
        }
        assert_eq!(r.watch(), 21_000_000);
    }

    #[test]
    fn a_request_still_in_flight_holds_the_release_back() {
        let r = release(MIB as u64);
        r.begin();
        assert!(!request(&r, 2 * MIB), "one is still in flight");
        assert!(r.end(), "the last one ended");
    }

    #[test]
    fn the_release_waits_for_a_quiet_period() {
        let r = release(MIB as u64);
        assert!(request(&r, 2 * MIB));
        let seen = r.watch();
        // A small call during the wait: not quiet, wait again.
        assert!(!request(&r, 210));
        let seen = match r.after_wait(seen) {
            AfterWait::Wait(now) => now,
            AfterWait::Release(_) => panic!("released though a body was read"),
        };
        // A request in flight at the end of the wait: not quiet either.
        r.begin();
        assert_eq!(r.after_wait(seen), AfterWait::Wait(seen));
        assert!(!r.end(), "the timer is still armed");
        // Quiet: release, with every byte since the last release.
        assert_eq!(r.after_wait(seen), AfterWait::Release(2 * MIB as u64 + 210));
        // The count starts again, and so does the threshold.
        assert_eq!(r.watch(), 0);
        assert!(!request(&r, MIB - 1));
        assert!(request(&r, 1), "armed again after another threshold");
    }

    #[test]
    fn disabled_counts_nothing_and_never_arms() {
        let r = MemoryRelease::new(None);
        for _ in 0..10 {
            assert!(!request(&r, 100 * MIB));
        }
        assert_eq!(r.watch(), 0);
        assert_eq!(r.in_flight.load(Relaxed), 0);
    }

    /// Rule: with memory freed in the middle of a heap (what a burst of
    /// large bodies leaves behind), the release hands pages back: glibc's
    /// `malloc_trim` says it released some. (Before, this test called it and
    /// ignored the answer: it could not fail.)
    #[test]
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn the_release_returns_freed_memory() {
        // 64 KiB blocks stay below glibc's mmap threshold, so they come from
        // the heap; freeing all but the last leaves free pages under a live
        // block, which only a trim returns.
        let mut blocks: Vec<Vec<u8>> = (0..512u32)
            .map(|i| vec![i.to_le_bytes()[0]; 64 * 1024])
            .collect();
        let last = blocks.pop();
        drop(blocks);
        assert!(trim(), "32 MiB freed in the heap, and nothing released");
        drop(last);
    }
}
