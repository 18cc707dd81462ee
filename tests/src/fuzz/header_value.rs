//! Header values as the wire checks read them: OWS trimming, the plain-text
//! check, the strict `=?base64?…?=` decoder and the client-side encoder.

use http::HeaderValue;
use wymcp::fuzzing::{
    HeaderValueError, base64_decode, base64_encode, decoded_text, encode_value, plain_text,
    trim_ows,
};

use super::ensure;

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// A lenient reference decoder: any length, `=` anywhere at the end, bits
/// after the last byte ignored. `None` for a character outside the alphabet.
#[must_use]
pub fn lenient_base64_decode(input: &[u8]) -> Option<Vec<u8>> {
    let data: Vec<u8> = {
        let end = input.iter().rposition(|b| *b != b'=').map_or(0, |i| i + 1);
        input[..end].to_vec()
    };
    let mut bits = Vec::with_capacity(data.len() * 6);
    for b in data {
        let v = u8::try_from(ALPHABET.iter().position(|a| *a == b)?).ok()?;
        for shift in (0..6).rev() {
            bits.push((v >> shift) & 1);
        }
    }
    Some(
        bits.chunks_exact(8)
            .map(|byte| byte.iter().fold(0u8, |acc, bit| (acc << 1) | bit))
            .collect(),
    )
}

/// Checks, on the input as base64, as a header value and as a string to
/// encode, that
///
/// * the strict decoder accepts exactly the canonical encodings (what it
///   accepts re-encodes to the same text; what the lenient reference
///   decodes and re-encodes to the same text, it accepts), and encoding
///   round-trips through it;
/// * `trim_ows` leaves no optional whitespace at either end, is idempotent
///   and returns a part of its input;
/// * `plain_text` accepts a value iff its trimmed bytes are visible ASCII,
///   space or tab, and `decoded_text` decodes only the exact sentinel form,
///   into text whose encoding is the payload;
/// * `encode_value` of any string is a valid header value that
///   `decoded_text` reads back as that string.
pub fn check_header_value(data: &[u8]) -> Result<(), String> {
    strict_base64(data)?;
    ows(data)?;
    if let Ok(value) = HeaderValue::from_bytes(data) {
        header_value(&value)?;
    }
    let text = String::from_utf8_lossy(data);
    encode_round_trip(&text)?;
    Ok(())
}

fn strict_base64(data: &[u8]) -> Result<(), String> {
    let encoded = base64_encode(data);
    ensure!(
        base64_decode(encoded.as_bytes()).as_deref() == Ok(data),
        "base64 of {data:?} ({encoded}) does not decode back"
    );
    ensure!(
        encoded.len() == data.len().div_ceil(3) * 4,
        "base64 of {} bytes is {} characters",
        data.len(),
        encoded.len()
    );
    if let Ok(bytes) = base64_decode(data) {
        ensure!(
            base64_encode(&bytes).as_bytes() == data,
            "the strict decoder accepted the non-canonical {:?}",
            String::from_utf8_lossy(data)
        );
    } else {
        let canonical = lenient_base64_decode(data)
            .is_some_and(|bytes| base64_encode(&bytes).as_bytes() == data);
        ensure!(
            !canonical,
            "the strict decoder refused the canonical {:?}",
            String::from_utf8_lossy(data)
        );
    }
    Ok(())
}

fn is_ows(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

fn ows(data: &[u8]) -> Result<(), String> {
    let trimmed = trim_ows(data);
    ensure!(
        !trimmed.first().is_some_and(|b| is_ows(*b)) && !trimmed.last().is_some_and(|b| is_ows(*b)),
        "trim_ows({data:?}) left whitespace: {trimmed:?}"
    );
    ensure!(
        trim_ows(trimmed) == trimmed,
        "trim_ows is not idempotent on {data:?}"
    );
    // `trim_ows` returns a part of its input: where it starts tells what
    // was removed on either side.
    let start = (trimmed.as_ptr() as usize).wrapping_sub(data.as_ptr() as usize);
    ensure!(
        start <= data.len() && data.len() - start >= trimmed.len(),
        "trim_ows({data:?}) = {trimmed:?} is not a part of it"
    );
    let (before, after) = (&data[..start], &data[start + trimmed.len()..]);
    ensure!(
        before.iter().chain(after).all(|b| is_ows(*b)),
        "trim_ows({data:?}) removed more than whitespace"
    );
    Ok(())
}

fn header_value(value: &HeaderValue) -> Result<(), String> {
    let trimmed = trim_ows(value.as_bytes());
    let plain = trimmed
        .iter()
        .all(|&b| b == b'\t' || (b' '..=b'~').contains(&b));
    match plain_text(value) {
        Ok(text) => ensure!(
            plain && text.as_bytes() == trimmed,
            "plain_text({value:?}) = {text:?}"
        ),
        Err(error) => ensure!(
            !plain && error == HeaderValueError::InvalidCharacters,
            "plain_text({value:?}) refused a plain value: {error}"
        ),
    }
    let sentinel = plain
        && trimmed.len() >= "=?base64??=".len()
        && trimmed.starts_with(b"=?base64?")
        && trimmed.ends_with(b"?=");
    match decoded_text(value) {
        Ok(text) if sentinel => {
            let payload = &trimmed["=?base64?".len()..trimmed.len() - 2];
            ensure!(
                base64_encode(text.as_bytes()).as_bytes() == payload,
                "decoded_text({value:?}) = {text:?}, whose base64 is not the payload"
            );
        }
        Ok(text) => ensure!(
            plain && text.as_bytes() == trimmed,
            "decoded_text({value:?}) = {text:?} for a literal value"
        ),
        Err(HeaderValueError::InvalidCharacters) => {
            ensure!(!plain, "decoded_text({value:?}) refused a plain value");
        }
        Err(HeaderValueError::Base64(_)) => {
            let payload = &trimmed["=?base64?".len()..trimmed.len() - 2];
            ensure!(
                sentinel && base64_decode(payload).is_err(),
                "decoded_text({value:?}) refused a valid payload as base64"
            );
        }
        Err(HeaderValueError::NotUtf8) => {
            let payload = &trimmed["=?base64?".len()..trimmed.len() - 2];
            ensure!(
                sentinel
                    && base64_decode(payload)
                        .is_ok_and(|bytes| std::str::from_utf8(&bytes).is_err()),
                "decoded_text({value:?}) called UTF-8 bytes not UTF-8"
            );
        }
        Err(error) => return Err(format!("decoded_text({value:?}): unexpected {error}")),
    }
    Ok(())
}

fn encode_round_trip(text: &str) -> Result<(), String> {
    let encoded = encode_value(text);
    let value = HeaderValue::from_str(&encoded)
        .map_err(|_| format!("encode_value({text:?}) = {encoded:?} is not a header value"))?;
    let decoded = decoded_text(&value)
        .map_err(|error| format!("decode of encode_value({text:?}) = {encoded:?}: {error}"))?;
    ensure!(
        decoded == text,
        "encode_value({text:?}) = {encoded:?} decodes to {decoded:?}"
    );
    Ok(())
}
