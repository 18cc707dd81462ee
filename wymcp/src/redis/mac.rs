//! What the replicas write to Redis, authenticated: every bus message,
//! relayed answer and task record carries an HMAC-SHA256 tag keyed by a
//! subkey of the replicas' shared secret (the secret of the
//! [`SealingKey`] they share), one subkey per purpose. What is read back is
//! bounded first, then its tag verified (in constant time), and only then
//! parsed: a message over its bound or without a valid tag is dropped
//! unread, with one bounded log line per burst.
//!
//! The bound and the tag are checked by [`receive`], apart from any parse,
//! so that the fuzz targets reach both.

// Public for the fuzz targets (`wymcp::fuzzing::redis`).
#![cfg_attr(not(feature = "fuzzing"), allow(unreachable_pub))]

use std::sync::atomic::{AtomicU64, Ordering};

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::mrtr::SealingKey;
use crate::protocol::ids::now_ms;

type HmacSha256 = Hmac<Sha256>;

/// The length of a tag, which leads every authenticated message.
pub const TAG_LEN: usize = 32;

/// What an authenticated message is for: each purpose has its own subkey,
/// so a tag made for one is never valid for another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// A change on the bus's channel.
    Bus,
    /// A relayed 2025 answer, or its acknowledgement.
    Answers,
    /// A task record of the task store.
    Tasks,
}

impl Purpose {
    fn label(self) -> &'static [u8] {
        match self {
            Purpose::Bus => b"wymcp redis bus v1",
            Purpose::Answers => b"wymcp redis answers v1",
            Purpose::Tasks => b"wymcp redis tasks v1",
        }
    }

    fn index(self) -> usize {
        match self {
            Purpose::Bus => 0,
            Purpose::Answers => 1,
            Purpose::Tasks => 2,
        }
    }

    fn all() -> [Purpose; 3] {
        [Purpose::Bus, Purpose::Answers, Purpose::Tasks]
    }
}

/// The subkeys of one secret, by purpose: each one's HMAC keyed once
/// (its two padded blocks hashed), cloned for every tag. Keying it again
/// for each message cost two of a small message's five SHA-256 blocks
/// (BENCHMARKS.md, "A change through Redis, by instructions"). Two sets
/// are the same when their subkeys are.
#[derive(Clone)]
struct Subkeys {
    bytes: [[u8; 32]; 3],
    keyed: [HmacSha256; 3],
}

impl PartialEq for Subkeys {
    fn eq(&self, other: &Self) -> bool {
        self.bytes == other.bytes
    }
}

impl Eq for Subkeys {}

/// The keys the Redis backends sign and verify with: one signs, it and the
/// accepted ones verify (a retired key stays accepted while replicas roll
/// over).
/// Empty until [`RedisConfig::shared_key`](super::RedisConfig::shared_key)
/// is called; a backend refuses to be made without one.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Keys {
    signing: Option<Subkeys>,
    accepted: Vec<Subkeys>,
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keys")
            .field("signs", &self.signing.is_some())
            .field("accepted", &self.accepted.len())
            .finish_non_exhaustive()
    }
}

fn hmac(key: &[u8]) -> HmacSha256 {
    // HMAC takes a key of any length; this cannot fail.
    <HmacSha256 as Mac>::new_from_slice(key)
        .unwrap_or_else(|_| unreachable!("HMAC accepts keys of any length"))
}

fn subkeys(key: &SealingKey) -> Subkeys {
    let bytes: [[u8; 32]; 3] = Purpose::all().map(|purpose| {
        let mut mac = hmac(key.secret());
        mac.update(purpose.label());
        mac.finalize().into_bytes().into()
    });
    Subkeys {
        bytes,
        keyed: bytes.map(|subkey| hmac(&subkey)),
    }
}

/// The tag of `payload` under a subkey's keyed HMAC, bound to `context`
/// (what the message is about: a task's id and version; empty for
/// pub/sub).
fn tagger(subkey: &HmacSha256, context: &[u8], payload: &[u8]) -> HmacSha256 {
    let mut mac = subkey.clone();
    mac.update(&(context.len() as u64).to_be_bytes());
    mac.update(context);
    mac.update(payload);
    mac
}

impl Keys {
    /// Keys whose signing key is `key`'s.
    #[must_use]
    #[cfg_attr(not(any(test, feature = "fuzzing")), allow(dead_code))]
    pub fn new(key: &SealingKey) -> Self {
        Keys::default().rotate(key)
    }

    /// `key` signs from now on; the keys given before still verify.
    #[must_use]
    pub(crate) fn rotate(mut self, key: &SealingKey) -> Self {
        if let Some(previous) = self.signing.replace(subkeys(key)) {
            self.accepted.push(previous);
        }
        self
    }

    /// `key` verifies but never signs.
    #[must_use]
    pub(crate) fn accept(mut self, key: &SealingKey) -> Self {
        self.accepted.push(subkeys(key));
        self
    }

    /// Whether there is a key to sign with.
    #[must_use]
    pub fn signs(&self) -> bool {
        self.signing.is_some()
    }

    /// `payload` with its tag in front (`None` without a key).
    #[must_use]
    pub fn sign(&self, purpose: Purpose, context: &[u8], payload: &[u8]) -> Option<Vec<u8>> {
        let subkey = &self.signing.as_ref()?.keyed[purpose.index()];
        let tag = tagger(subkey, context, payload).finalize().into_bytes();
        let mut out = Vec::with_capacity(TAG_LEN + payload.len());
        out.extend_from_slice(&tag);
        out.extend_from_slice(payload);
        Some(out)
    }

    /// The payload of `message` if its tag verifies under one of the keys
    /// for `purpose` and `context` (compared in constant time).
    #[must_use]
    pub fn verify<'m>(
        &self,
        purpose: Purpose,
        context: &[u8],
        message: &'m [u8],
    ) -> Option<&'m [u8]> {
        let (tag, payload) = message.split_at_checked(TAG_LEN)?;
        self.signing
            .iter()
            .chain(&self.accepted)
            .any(|set| {
                tagger(&set.keyed[purpose.index()], context, payload)
                    .verify_slice(tag)
                    .is_ok()
            })
            .then_some(payload)
    }
}

/// Why a message read from Redis was dropped unread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dropped {
    /// Longer than its bound (the length).
    TooLarge(usize),
    /// No tag, or one that does not verify.
    Forged,
}

/// The payload of `message`, read from Redis, when it is no longer than
/// `max` bytes and its tag verifies; nothing of it is parsed here.
pub fn receive<'m>(
    keys: &Keys,
    purpose: Purpose,
    context: &[u8],
    max: usize,
    message: &'m [u8],
) -> Result<&'m [u8], Dropped> {
    if message.len() > max.saturating_add(TAG_LEN) {
        return Err(Dropped::TooLarge(message.len()));
    }
    keys.verify(purpose, context, message)
        .ok_or(Dropped::Forged)
}

/// One warning per burst of dropped messages (at most one every ten
/// seconds, naming how many were dropped since the last); the rest at
/// debug level. Nothing of a message's content is logged.
#[derive(Debug, Default)]
pub(crate) struct DropLog {
    last_warned_ms: AtomicU64,
    since: AtomicU64,
}

const BURST_MS: u64 = 10_000;

impl DropLog {
    pub(crate) fn dropped(&self, what: &'static str, why: Dropped) {
        let count = self.since.fetch_add(1, Ordering::Relaxed) + 1;
        let now = now_ms();
        let last = self.last_warned_ms.load(Ordering::Relaxed);
        let due = last == 0 || now.saturating_sub(last) >= BURST_MS;
        if due
            && self
                .last_warned_ms
                .compare_exchange(last, now.max(1), Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            self.since.store(0, Ordering::Relaxed);
            match why {
                Dropped::TooLarge(bytes) => {
                    tracing::warn!(target: "wymcp::redis", what, bytes, dropped = count,
                        "a message read from Redis was over its bound and dropped unread (is Redis shared with something else, or open to writers other than the replicas?)");
                }
                Dropped::Forged => {
                    tracing::warn!(target: "wymcp::redis", what, dropped = count,
                        "a message read from Redis did not carry a valid tag and was dropped (do all replicas share the same key? is Redis open to other writers?)");
                }
            }
        } else {
            tracing::debug!(target: "wymcp::redis", what, ?why, "a message read from Redis was dropped");
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn key(byte: u8) -> SealingKey {
        SealingKey::new("k", vec![byte; 32]).unwrap()
    }

    /// Rule (issue 23, item 7): a message verifies under the key, the
    /// purpose and the context it was signed for only; a retired key still
    /// verifies, an unrelated one never does; the bound is checked first.
    #[test]
    fn a_tag_verifies_for_its_key_purpose_and_context_only() {
        let keys = Keys::new(&key(1));
        let signed = keys.sign(Purpose::Bus, b"c", b"{}").unwrap();
        assert_eq!(keys.verify(Purpose::Bus, b"c", &signed), Some(&b"{}"[..]));
        assert_eq!(keys.verify(Purpose::Tasks, b"c", &signed), None);
        assert_eq!(keys.verify(Purpose::Bus, b"d", &signed), None);
        assert_eq!(Keys::new(&key(2)).verify(Purpose::Bus, b"c", &signed), None);
        assert_eq!(Keys::default().verify(Purpose::Bus, b"c", &signed), None);
        assert_eq!(Keys::default().sign(Purpose::Bus, b"", b""), None);
        let rotated = keys.clone().rotate(&key(2));
        assert!(rotated.verify(Purpose::Bus, b"c", &signed).is_some());
        let by_new = rotated.sign(Purpose::Bus, b"c", b"{}").unwrap();
        assert_eq!(keys.verify(Purpose::Bus, b"c", &by_new), None);
        assert!(
            keys.clone()
                .accept(&key(2))
                .verify(Purpose::Bus, b"c", &by_new)
                .is_some()
        );
        let mut flipped = signed.clone();
        flipped[0] ^= 1;
        assert_eq!(
            receive(&keys, Purpose::Bus, b"c", 2, &flipped),
            Err(Dropped::Forged)
        );
        assert_eq!(
            receive(&keys, Purpose::Bus, b"c", 2, b"{}"),
            Err(Dropped::Forged)
        );
        assert_eq!(
            receive(&keys, Purpose::Bus, b"c", 2, &signed),
            Ok(&b"{}"[..])
        );
        assert_eq!(
            receive(&keys, Purpose::Bus, b"c", 1, &signed),
            Err(Dropped::TooLarge(TAG_LEN + 2))
        );
        assert_eq!(format!("{keys:?}"), "Keys { signs: true, accepted: 0, .. }");
    }

    /// Rule: what goes on the wire does not depend on how the MAC is
    /// computed: a tag is HMAC-SHA256, keyed by HMAC-SHA256(secret,
    /// purpose label), of the context's length (8 bytes, big-endian), the
    /// context and the payload, twice from the same keys (each subkey's
    /// HMAC is keyed once and cloned per tag). The expected tags were
    /// computed apart from this crate (Python's `hmac`), so replicas of
    /// different versions keep reading each other's messages.
    #[test]
    fn a_tag_is_hmac_sha256_under_the_purposes_subkey() {
        let keys = Keys::new(&key(1));
        let cases: [(Purpose, &[u8], &[u8], &str); 2] = [
            (
                Purpose::Bus,
                b"",
                br#"{"o":"a","k":"tools"}"#,
                "aea4144daf22f7a3d9ed6a8061778062cef976c3ed3b83920e95770445bf55e4",
            ),
            (
                Purpose::Tasks,
                b"task-1\x00\x07",
                b"{}",
                "7c2475c8baeeeeb52adc352d0c4a3450d93bd777b00fd21f05bbc5ed9c3f07e4",
            ),
        ];
        for (purpose, context, payload, expected) in cases {
            for _ in 0..2 {
                let signed = keys.sign(purpose, context, payload).unwrap();
                let expected: Vec<u8> = (0..expected.len())
                    .step_by(2)
                    .map(|i| u8::from_str_radix(&expected[i..i + 2], 16).unwrap())
                    .collect();
                assert_eq!(signed[..TAG_LEN], expected[..], "{purpose:?}");
                assert_eq!(&signed[TAG_LEN..], payload);
                assert_eq!(keys.verify(purpose, context, &signed), Some(payload));
            }
        }
    }
}
