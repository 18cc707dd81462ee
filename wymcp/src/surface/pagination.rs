//! Opaque cursors for list results.
//!
//! A cursor names the offset of the next page. It is opaque to clients (the
//! spec forbids them to parse it) but not secret; wymcp mints `p1.` and the
//! offset in hex, and refuses anything it would not have minted with
//! -32602, so a client cannot make the server read past a list or from a
//! negative offset.

use serde_json::Value;

use super::context::HandlerError;

const PREFIX: &str = "p1.";

/// The cursor of the page starting at `offset`.
pub(crate) fn encode(offset: usize) -> String {
    format!("{PREFIX}{offset:x}")
}

/// The offset a cursor names, for a list of `len` items.
pub(crate) fn decode(cursor: &str, len: usize) -> Option<usize> {
    let hex = cursor.strip_prefix(PREFIX)?;
    if hex.is_empty()
        || hex.len() > 16
        || !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    {
        return None;
    }
    let offset = usize::from_str_radix(hex, 16).ok()?;
    (offset > 0 && offset < len && encode(offset) == cursor).then_some(offset)
}

/// One page of `items`: the page and the cursor of the next, if any. A
/// `cursor` that is not one wymcp minted for this list is -32602.
pub(crate) fn page<'a, T>(
    items: &'a [T],
    params: Option<&Value>,
    size: usize,
) -> Result<(&'a [T], Option<String>), HandlerError> {
    let start = match params.and_then(|p| p.get("cursor")) {
        None | Some(Value::Null) => 0,
        Some(Value::String(cursor)) => {
            decode(cursor, items.len()).ok_or_else(|| HandlerError::InvalidParams {
                message: "invalid cursor".into(),
                data: Some(serde_json::json!({"cursor": cursor})),
            })?
        }
        Some(_) => return Err(HandlerError::invalid_params("the cursor must be a string")),
    };
    let end = start.saturating_add(size).min(items.len());
    let next = (end < items.len()).then(|| encode(end));
    Ok((&items[start..end], next))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pages_walk_the_list_and_refuse_foreign_cursors() {
        let items: Vec<u32> = (0..5).collect();
        let (first, next) = page(&items, None, 2).unwrap();
        assert_eq!(first, [0, 1]);
        let next = next.unwrap();
        let (second, next) = page(&items, Some(&json!({"cursor": next})), 2).unwrap();
        assert_eq!(second, [2, 3]);
        let (third, next) = page(&items, Some(&json!({"cursor": next.unwrap()})), 2).unwrap();
        assert_eq!((third, next), (&[4][..], None));
        for bad in [
            "",
            "p1.",
            "p1.0",
            "p1.5",
            "p1.A",
            "p1.02",
            "2",
            "p1.-1",
            "p1.ffffffffffffffffff",
        ] {
            assert!(
                page(&items, Some(&json!({"cursor": bad})), 2).is_err(),
                "{bad}"
            );
        }
    }
}
