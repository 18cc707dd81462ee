//! Parsing a body into a JSON tree whose size is bounded, not only its bytes.
//!
//! A `Value` costs more than the text it is parsed from: 32 bytes for each
//! value, more for each object member, so a body of `[0,0,0,…]` becomes a
//! tree about twenty times its size. [`parse_bounded`] counts the values as
//! it builds them and stops at the limit, before the tree is built whole,
//! so what any body may cost once parsed is bounded by the limit, whoever
//! sent it and whether or not it is ever authenticated.
//!
//! The tree is built exactly as `serde_json::from_slice::<Value>` builds it
//! (the same numbers, the same map), by a seed that counts.
//!
//! [`parse_measured`] also answers what the tree costs in memory, so the
//! [ledger](crate::ledger) can count a body's parse beside its bytes: the
//! value count bounds one body, but 250,000 values of `{"":0}` (an
//! 875 KB body) build an 83 MB tree, and a caller's share of body bytes
//! would otherwise hold a hundred times its size. The cost is an upper
//! estimate from the tree's shape, measured against glibc's allocator:
//!
//! * the root's [`Value`] (32 bytes; a child's is counted in its parent's
//!   buffer);
//! * a string: its bytes, and one allocation's overhead;
//! * an array: its buffer's capacity of 32-byte values, and an overhead;
//! * an object: serde_json's `BTreeMap` nodes (at most one per five
//!   members past the first node, each at most an internal node of 11
//!   keys, values and 12 edges: 728 bytes), and its keys' bytes.

use std::cell::Cell;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Why a body is not a JSON tree within its limit.
#[derive(Debug)]
pub(crate) enum JsonError {
    /// It is not JSON (syntax, UTF-8, trailing bytes, nesting past 128).
    Syntax(serde_json::Error),
    /// It holds more than this many values.
    TooManyValues(usize),
}

/// Parses `bytes` as one JSON value holding at most `max_values` values
/// (every scalar, array and object counts one; object keys do not).
pub(crate) fn parse_bounded(bytes: &[u8], max_values: usize) -> Result<Value, JsonError> {
    parse_measured(bytes, max_values).map(|(value, _)| value)
}

/// What one allocation costs beyond the bytes asked for (glibc's header,
/// and its rounding to 16 bytes).
const ALLOCATION: usize = 16;

/// The most one `BTreeMap<String, Value>` node takes: an internal node's 11
/// keys (24 bytes each), 11 values (32 each), 12 edges, its header, and an
/// allocation's overhead.
const MAP_NODE: usize = 728 + ALLOCATION;

/// [`parse_bounded`], and an upper estimate of the tree's heap cost in
/// bytes (the module's docs say how it is counted).
pub(crate) fn parse_measured(bytes: &[u8], max_values: usize) -> Result<(Value, usize), JsonError> {
    let left = Cell::new(max_values);
    let cost = Cell::new(std::mem::size_of::<Value>());
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let parsed = Counted {
        left: &left,
        cost: &cost,
    }
    .deserialize(&mut deserializer);
    match parsed {
        Ok(value) => match deserializer.end() {
            Ok(()) => Ok((value, cost.get())),
            Err(error) => Err(JsonError::Syntax(error)),
        },
        Err(_) if left.get() == usize::MAX => Err(JsonError::TooManyValues(max_values)),
        Err(error) => Err(JsonError::Syntax(error)),
    }
}

/// A seed building one value, counting it against `left`; `left` is set to
/// `usize::MAX` when the limit is what stopped the parse.
#[derive(Clone, Copy)]
struct Counted<'a> {
    left: &'a Cell<usize>,
    /// The heap the tree built so far takes, estimated from above.
    cost: &'a Cell<usize>,
}

impl Counted<'_> {
    fn costs(self, bytes: usize) {
        self.cost.set(self.cost.get().saturating_add(bytes));
    }

    fn take<E: de::Error>(self) -> Result<(), E> {
        match self.left.get() {
            0 | usize::MAX => {
                self.left.set(usize::MAX);
                Err(E::custom("too many JSON values"))
            }
            n => {
                self.left.set(n - 1);
                Ok(())
            }
        }
    }
}

impl<'de> DeserializeSeed<'de> for Counted<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Counted<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        self.take()?;
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        self.take()?;
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        self.take()?;
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        self.take()?;
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        self.take()?;
        self.costs(heap_of(v.len()));
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        self.take()?;
        self.costs(heap_of(v.capacity()));
        Ok(Value::String(v))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        self.take()?;
        Ok(Value::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        self.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        self.deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        self.take()?;
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(item) = seq.next_element_seed(self)? {
            items.push(item);
        }
        self.costs(heap_of(items.capacity() * std::mem::size_of::<Value>()));
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        self.take()?;
        let mut members = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            self.costs(heap_of(key.capacity()));
            let value = map.next_value_seed(self)?;
            members.insert(key, value);
        }
        if !members.is_empty() {
            self.costs(MAP_NODE * (1 + (members.len() - 1) / 5));
        }
        Ok(Value::Object(members))
    }
}

/// What a heap buffer of `bytes` costs (nothing when empty: no allocation).
fn heap_of(bytes: usize) -> usize {
    if bytes == 0 { 0 } else { bytes + ALLOCATION }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// The tree is the one serde_json builds, numbers and all.
    #[test]
    fn it_parses_as_serde_json_does() {
        for text in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"x":[1,2.5,-3,true,null,"é\u00e9"]}}}"#,
            "18446744073709551615",
            "-9223372036854775808",
            "1e400",
            "[[],{}]",
            r#"{"a":1,"a":2}"#,
        ] {
            let ours = parse_bounded(text.as_bytes(), 1_000);
            let theirs = serde_json::from_slice::<Value>(text.as_bytes());
            match (ours, theirs) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "{text}"),
                (Err(JsonError::Syntax(_)), Err(_)) => {}
                (a, b) => panic!("{text}: {a:?} vs {b:?}"),
            }
        }
        for bad in ["", "{", "[1,]", "1 2", "\"\\ud800\"x"] {
            assert!(
                matches!(parse_bounded(bad.as_bytes(), 10), Err(JsonError::Syntax(_))),
                "{bad}"
            );
        }
    }

    /// Rule (issue 16, item 9): a body holding more values than the limit
    /// is refused as such, not parsed whole; one at the limit is parsed.
    #[test]
    fn the_count_of_values_is_bounded() {
        // `[0,0,0]`: four values.
        assert!(parse_bounded(b"[0,0,0]", 4).is_ok());
        assert!(matches!(
            parse_bounded(b"[0,0,0]", 3),
            Err(JsonError::TooManyValues(3))
        ));
        assert!(matches!(
            parse_bounded(br#"{"a":{"b":{"c":1}}}"#, 3),
            Err(JsonError::TooManyValues(3))
        ));
        let huge = format!("[{}0]", "0,".repeat(1_000_000));
        assert!(matches!(
            parse_bounded(huge.as_bytes(), 250_000),
            Err(JsonError::TooManyValues(250_000))
        ));
    }

    /// Rule (issue 23, the ledger): the measured cost of a tree is what its
    /// shape costs, not its text's length: a body of small objects costs
    /// about a hundred times its bytes, a flat array of zeros about
    /// sixteen, a long string about its length.
    #[test]
    fn the_cost_follows_the_trees_shape() {
        let objects = format!("[{}{{\"\":0}}]", "{\"\":0},".repeat(124_999));
        let (_, cost) = parse_measured(objects.as_bytes(), 250_001).unwrap();
        // 125,000 one-member maps: a node each (measured: 83 MB in all).
        assert!(cost >= 125_000 * 640, "{cost}");
        assert!(cost > 90 * objects.len(), "{cost} for {}", objects.len());
        let zeros = format!("[{}0]", "0,".repeat(99_999));
        let (_, cost) = parse_measured(zeros.as_bytes(), 100_001).unwrap();
        assert!(cost >= 100_000 * 32, "{cost}");
        assert!(cost < 100_000 * 64, "{cost}");
        let text = format!("\"{}\"", "x".repeat(1_000_000));
        let (_, cost) = parse_measured(text.as_bytes(), 1).unwrap();
        assert!((1_000_000..1_000_100).contains(&cost), "{cost}");
    }
}
