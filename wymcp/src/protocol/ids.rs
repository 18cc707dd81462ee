//! Ids and the clock: what every part that mints an id or reads the time
//! shares, so a task's id, a replica's origin on the bus and a mid-call
//! request's nonce are made one way, and every timestamp, expiry, lease and
//! deadline is read on one clock.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch, now (the clock tasks' timestamps,
/// expiries and leases are read on).
#[must_use]
pub fn now_ms() -> u64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
}

/// 128 random bits from the operating system, as 32 hex digits: a task's
/// id, a replica's origin on the bus, a mid-call request's nonce. `None`
/// when the system has no randomness to give.
pub(crate) fn random_hex() -> Option<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).ok()?;
    Some(bytes.iter().fold(String::with_capacity(32), |mut out, b| {
        use std::fmt::Write as _;
        let _ = write!(out, "{b:02x}");
        out
    }))
}
