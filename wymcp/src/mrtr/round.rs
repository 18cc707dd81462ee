//! What a sealed `requestState` holds besides the handler's own bytes: the
//! round it closes and the keys that round asked.
//!
//! ```text
//! round (4, big-endian) | key count (4) | (key length (4) | key)… | handler state
//! ```
//!
//! Sealed with the rest, so a client can read it but not change it. On the
//! retry, [`Inputs`](super::Inputs) accepts answers to those keys only:
//! `inputResponses` naming a key the round did not ask (a response to a
//! question the server never asked, or one carried over from another round
//! of the same call) is refused.

/// A state's round, its asked keys and the handler's bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Round {
    pub(crate) number: u32,
    pub(crate) asked: Vec<String>,
    pub(crate) state: Vec<u8>,
}

fn len(n: usize) -> [u8; 4] {
    // Keys and counts of a server's own making are far below 4 GiB.
    u32::try_from(n).unwrap_or(u32::MAX).to_be_bytes()
}

impl Round {
    /// The bytes to seal.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let keys: usize = self.asked.iter().map(|k| 4 + k.len()).sum();
        let mut out = Vec::with_capacity(8 + keys + self.state.len());
        out.extend_from_slice(&self.number.to_be_bytes());
        out.extend_from_slice(&len(self.asked.len()));
        for key in &self.asked {
            out.extend_from_slice(&len(key.len()));
            out.extend_from_slice(key.as_bytes());
        }
        out.extend_from_slice(&self.state);
        out
    }

    /// The round of unsealed bytes; `None` when they are not one (only a
    /// sealer bug or a retired format gets here: the bytes were sealed).
    pub(crate) fn decode(bytes: &[u8]) -> Option<Round> {
        let (number, rest) = take_u32(bytes)?;
        let (count, mut rest) = take_u32(rest)?;
        let mut asked = Vec::new();
        for _ in 0..count {
            let (len, tail) = take_u32(rest)?;
            let len = usize::try_from(len).ok()?;
            if tail.len() < len {
                return None;
            }
            let (key, tail) = tail.split_at(len);
            asked.push(String::from_utf8(key.to_vec()).ok()?);
            rest = tail;
        }
        Some(Round {
            number,
            asked,
            state: rest.to_vec(),
        })
    }
}

fn take_u32(bytes: &[u8]) -> Option<(u32, &[u8])> {
    let (head, rest) = bytes.split_first_chunk::<4>()?;
    Some((u32::from_be_bytes(*head), rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_round_trip_and_garbage_is_none() {
        let round = Round {
            number: 3,
            asked: vec!["a".into(), "ключ".into(), String::new()],
            state: b"state".to_vec(),
        };
        assert_eq!(Round::decode(&round.encode()), Some(round));
        assert_eq!(Round::decode(b""), None);
        assert_eq!(Round::decode(&[0, 0, 0, 1, 0, 0, 0, 9]), None);
        let empty = Round {
            number: 1,
            asked: Vec::new(),
            state: Vec::new(),
        };
        assert_eq!(Round::decode(&empty.encode()), Some(empty));
    }
}
