//! Ids and the clock: what every part that mints an id or reads the time
//! shares, so a task's id, a replica's origin on the bus and a mid-call
//! request's nonce are made one way, and every timestamp, expiry, lease and
//! deadline is read on one clock (and written, where the wire wants a date,
//! in one format), and every sweep of what expires runs on one kind of
//! timer ([`every`]).

use std::sync::Weak;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch, now (the clock tasks' timestamps,
/// expiries and leases are read on).
#[must_use]
pub fn now_ms() -> u64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
}

/// Calls `tick` with what `held` points to every `period` (the first a
/// period from now, a late tick delayed rather than bunched), on the tokio
/// runtime of the caller, until what it points to is dropped: a sweep that
/// ends with what it sweeps and never keeps it alive. `false` when there is
/// no runtime to run it on.
pub(crate) fn every<T: Send + Sync + 'static>(
    period: Duration,
    held: Weak<T>,
    tick: impl Fn(&T) + Send + 'static,
) -> bool {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return false;
    };
    let period = period.max(Duration::from_millis(1));
    runtime.spawn(async move {
        let mut timer = tokio::time::interval(period);
        timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        timer.tick().await;
        loop {
            timer.tick().await;
            let Some(held) = held.upgrade() else {
                return;
            };
            tick(&held);
        }
    });
    true
}

/// 128 random bits from the operating system, as 32 hex digits: a task's
/// id, a replica's origin on the bus, a mid-call request's nonce. `None`
/// when the system has no randomness to give.
pub(crate) fn random_hex() -> Option<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).ok()?;
    Some(hex(&bytes))
}

/// `bytes` as lowercase hex digits, two a byte (a byte at a time through
/// `write!` cost ≈ 120 instructions a byte; this, a table look-up).
pub(crate) fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(2 * bytes.len());
    hex_into(&mut out, bytes);
    out
}

/// Appends `bytes` to `out` as [`hex`] writes them.
pub(crate) fn hex_into(out: &mut String, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    out.reserve(2 * bytes.len());
    for &b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
}

/// Milliseconds since the Unix epoch (as [`now_ms`] reads them) as an RFC
/// 3339 UTC timestamp.
pub(crate) fn iso(ms: u64) -> String {
    let secs = ms / 1000;
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (proleptic Gregorian).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        ms % 1000
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every byte's two digits as `format!("{:02x}")` writes them, in
    /// order, and the random ids 32 of them.
    #[test]
    #[allow(clippy::unwrap_used)]
    fn hex_is_two_lowercase_digits_a_byte() {
        let all: Vec<u8> = (0..=255).collect();
        let expected = all.iter().fold(String::new(), |mut out, b| {
            use std::fmt::Write as _;
            let _ = write!(out, "{b:02x}");
            out
        });
        assert_eq!(hex(&all), expected);
        assert_eq!(hex(&[]), "");
        let mut out = String::from("sha256:");
        hex_into(&mut out, &[0x0f, 0xa0]);
        assert_eq!(out, "sha256:0fa0");
        let id = random_hex().unwrap();
        assert_eq!(id.len(), 32);
        assert!(
            id.bytes()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
    }

    #[test]
    fn timestamps_are_rfc_3339_utc() {
        assert_eq!(iso(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(iso(1_798_761_599_999), "2026-12-31T23:59:59.999Z");
    }
}
