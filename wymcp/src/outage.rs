//! [`Outage`]: whether a backend (Redis, a task store, the authorization
//! server) is in an outage, so that each outage is logged once — a warning
//! when it begins, a line when it ends — however many operations fail
//! during it.
//!
//! Each user logs its own lines (a `tracing` target is fixed where the
//! event is written); what they share is when to write them.

use std::sync::atomic::{AtomicBool, Ordering};

/// Up, or in an outage.
#[derive(Debug, Default)]
pub(crate) struct Outage {
    down: AtomicBool,
}

impl Outage {
    /// A failure: `true` when it begins an outage (log the warning then,
    /// and only then), `false` while one is under way.
    pub(crate) fn failed(&self) -> bool {
        !self.down.swap(true, Ordering::SeqCst)
    }

    /// A success: `true` when it ends an outage.
    pub(crate) fn succeeded(&self) -> bool {
        self.down.swap(false, Ordering::SeqCst)
    }

    /// Whether an outage is under way.
    pub(crate) fn is_down(&self) -> bool {
        self.down.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rule: of many failures in a row only the first begins an outage;
    /// the first success after them ends it, and only it.
    #[test]
    fn an_outage_begins_once_and_ends_once() {
        let outage = Outage::default();
        assert!(!outage.succeeded());
        assert!(outage.failed());
        assert!((0..37).all(|_| !outage.failed()));
        assert!(outage.is_down());
        assert!(outage.succeeded());
        assert!(!outage.succeeded());
        assert!(outage.failed(), "a new outage");
    }
}
