//! Task records as read back from Redis: the task store's receive path
//! (the bound and the tag, bound to the task's id and version).

use std::sync::OnceLock;

use wymcp::fuzzing::redis::{Dropped, Keys, TAG_LEN, task_open, task_seal};
use wymcp::mrtr::SealingKey;

use super::ensure;

/// The bound the check reads with: small, so the fuzzer reaches it.
const MAX: usize = 512;

fn keys() -> &'static Keys {
    static KEYS: OnceLock<Keys> = OnceLock::new();
    KEYS.get_or_init(|| Keys::new(&key(0x42)))
}

fn stranger() -> &'static Keys {
    static KEYS: OnceLock<Keys> = OnceLock::new();
    KEYS.get_or_init(|| Keys::new(&key(0x43)))
}

fn key(byte: u8) -> SealingKey {
    SealingKey::new("fuzz", vec![byte; 32]).expect("a valid key")
}

/// Byte 0 the record's version, byte 1 its id's length (0–15): the id is
/// the next bytes, as text; the rest is the record.
fn split(data: &[u8]) -> (u64, String, &[u8]) {
    let version = u64::from(data.first().copied().unwrap_or(0));
    let len = usize::from(data.get(1).copied().unwrap_or(0) % 16);
    let rest = data.get(2..).unwrap_or_default();
    let (id, record) = rest.split_at(len.min(rest.len()));
    (version, String::from_utf8_lossy(id).into_owned(), record)
}

/// Whether the input's record, read back for its task, opens.
#[must_use]
pub fn accepts(data: &[u8]) -> bool {
    let (version, id, record) = split(data);
    task_open(keys(), &id, version, MAX, record).is_ok()
}

/// Checks that, with byte 0 the version and byte 1 the id's length (see
/// `split`),
///
/// * the record, read back for that task as it is, never panics and opens
///   only when it is exactly the data behind the tag the shared key gives
///   it for that id and version (the reference seals again and compares);
///   over the bound it is refused as too large, unread;
/// * the record sealed as a task's data opens to it for that id and
///   version only: not for another id or version, not under another key,
///   not with one byte changed anywhere, not cut short.
pub fn check_task_record(data: &[u8]) -> Result<(), String> {
    let keys = keys();
    let (version, id, record) = split(data);
    let opened = task_open(keys, &id, version, MAX, record);
    if record.len() > MAX + TAG_LEN {
        ensure!(
            opened == Err(Dropped::TooLarge(record.len())),
            "a record of {} bytes over the bound was not refused as too large: {opened:?}",
            record.len()
        );
    } else if let Ok(payload) = opened {
        ensure!(
            task_seal(keys, &id, version, payload).as_deref() == Some(record),
            "a record without the shared key's tag for {id:?} v{version} opened"
        );
    } else {
        ensure!(
            opened == Err(Dropped::Forged),
            "a record within the bound was refused as {opened:?}"
        );
    }

    let sealed = task_seal(keys, &id, version, record).ok_or("the shared key seals nothing")?;
    let big = usize::MAX;
    ensure!(
        task_open(keys, &id, version, big, &sealed) == Ok(record),
        "a sealed record did not open to its data"
    );
    if record.len() > MAX {
        ensure!(
            task_open(keys, &id, version, MAX, &sealed).is_err(),
            "a sealed record over the bound opened"
        );
    }
    let other_id = format!("{id}x");
    for (what, opened) in [
        (
            "another id",
            task_open(keys, &other_id, version, big, &sealed),
        ),
        (
            "another version",
            task_open(keys, &id, version + 1, big, &sealed),
        ),
        (
            "another key",
            task_open(stranger(), &id, version, big, &sealed),
        ),
    ] {
        ensure!(opened == Err(Dropped::Forged), "a record opened for {what}");
    }
    let at = usize::from(data.get(2).copied().unwrap_or(0)) % sealed.len();
    let mut flipped = sealed.clone();
    flipped[at] ^= 0x80;
    ensure!(
        task_open(keys, &id, version, big, &flipped) == Err(Dropped::Forged),
        "a record changed at byte {at} opened"
    );
    ensure!(
        task_open(keys, &id, version, big, &sealed[..sealed.len() - 1]) == Err(Dropped::Forged),
        "a record cut short opened"
    );
    Ok(())
}
