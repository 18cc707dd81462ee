//! Bus messages as read from Redis: the change bus's receive path (the
//! bound, the tag, then the parse).

use std::sync::OnceLock;

use wymcp::Change;
use wymcp::fuzzing::redis::{Dropped, Heard, Keys, Purpose, TAG_LEN, bus_encode, bus_hear};
use wymcp::mrtr::SealingKey;

use super::ensure;

/// The bound the check reads with: small, so the fuzzer reaches it.
const MAX: usize = 512;

fn keys() -> &'static Keys {
    static KEYS: OnceLock<Keys> = OnceLock::new();
    KEYS.get_or_init(|| Keys::new(&key(0x42)))
}

/// Another deployment's key (or an attacker's guess).
fn stranger() -> &'static Keys {
    static KEYS: OnceLock<Keys> = OnceLock::new();
    KEYS.get_or_init(|| Keys::new(&key(0x43)))
}

fn key(byte: u8) -> SealingKey {
    SealingKey::new("fuzz", vec![byte; 32]).expect("a valid key")
}

/// Whether the input, read from the channel as it is, is heard.
#[must_use]
pub fn accepts(data: &[u8]) -> bool {
    bus_hear(keys(), "mine", MAX, data).is_ok()
}

/// Checks that
///
/// * the input, read from the channel as it is, never panics and is
///   accepted only when it is exactly a payload behind the tag the shared
///   key gives it (the reference signs the payload again and compares);
///   over the bound it is dropped as too large whatever it holds;
/// * the input signed as a payload is heard (unless over the bound), and
///   not under another key, nor signed for another purpose, nor with any
///   one byte of its tag changed, nor cut short;
/// * changes made of the input (a resource URI, an application topic and
///   body) round-trip through what the bus publishes: another replica
///   hears the same change, the publishing one ignores its own.
pub fn check_bus_message(data: &[u8]) -> Result<(), String> {
    let keys = keys();
    let heard = bus_hear(keys, "mine", MAX, data);
    if data.len() > MAX + TAG_LEN {
        ensure!(
            heard == Err(Dropped::TooLarge(data.len())),
            "a message of {} bytes over the bound was not dropped as too large: {heard:?}",
            data.len()
        );
    } else if heard.is_ok() {
        let (_, payload) = data.split_at(TAG_LEN);
        ensure!(
            keys.sign(Purpose::Bus, b"", payload).as_deref() == Some(data),
            "a message without the shared key's tag was accepted: {heard:?}"
        );
    } else {
        ensure!(
            heard == Err(Dropped::Forged),
            "a message within the bound was dropped as {heard:?}"
        );
    }

    let signed = keys
        .sign(Purpose::Bus, b"", data)
        .ok_or("the shared key signs nothing")?;
    let heard = bus_hear(keys, "mine", MAX, &signed);
    if data.len() > MAX {
        ensure!(heard.is_err(), "a signed message over the bound was heard");
    } else {
        ensure!(heard.is_ok(), "a signed message was dropped: {heard:?}");
    }
    let big = usize::MAX;
    ensure!(
        bus_hear(stranger(), "mine", big, &signed) == Err(Dropped::Forged),
        "a message signed by another key was heard"
    );
    let other = keys.sign(Purpose::Tasks, b"", data).unwrap_or_default();
    ensure!(
        bus_hear(keys, "mine", big, &other) == Err(Dropped::Forged),
        "a tag made for a task record was taken for a bus message"
    );
    let at = usize::from(data.first().copied().unwrap_or(0)) % TAG_LEN;
    let mut flipped = signed.clone();
    flipped[at] ^= 1 << (data.len() % 8);
    ensure!(
        bus_hear(keys, "mine", big, &flipped) == Err(Dropped::Forged),
        "a tag changed at byte {at} was accepted"
    );
    let cut = &signed[..signed.len().saturating_sub(1 + data.len() % 4)];
    ensure!(
        bus_hear(keys, "mine", big, cut) == Err(Dropped::Forged),
        "a message cut short was accepted"
    );

    let text = String::from_utf8_lossy(data).into_owned();
    let middle = text
        .char_indices()
        .nth(text.chars().count() / 2)
        .map_or(text.len(), |(at, _)| at);
    let (topic, body) = text.split_at(middle);
    for change in [
        Change::ResourceUpdated(text.clone()),
        Change::Application {
            topic: topic.to_owned(),
            body: body.to_owned(),
        },
        Change::ToolsListChanged,
    ] {
        let Some(message) = bus_encode(keys, "theirs", &change) else {
            return Err(format!("{change:?} was not encoded"));
        };
        let theirs = bus_hear(keys, "mine", big, &message);
        ensure!(
            theirs == Ok(Heard::Change(change.clone())),
            "{change:?} came back as {theirs:?}"
        );
        let own = bus_hear(keys, "theirs", big, &message);
        ensure!(
            own == Ok(Heard::Ignored),
            "a replica heard its own {change:?}: {own:?}"
        );
    }
    Ok(())
}
