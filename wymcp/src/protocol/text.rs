//! Client text, bounded: what a log line or an error message may quote of
//! a string the client sent.
//!
//! A method name, a header name or a property key can be megabytes long and
//! hold line breaks. In a log line one is quoted [`Bounded`]: at most
//! [`QUOTE_LIMIT`] characters, escaped (a CR/LF never starts a line of its
//! own), its full length noted when cut. In an error message, which is JSON
//! and escaped by its serialisation, one is quoted [`truncated`].

use std::fmt;

/// The most characters of a client's string a log line or an error message
/// quotes.
pub(crate) const QUOTE_LIMIT: usize = 200;

/// A client's string as a log line quotes it: escaped, cut at
/// [`QUOTE_LIMIT`] characters, its length noted when cut.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bounded<'a>(pub(crate) &'a str);

impl fmt::Display for Bounded<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = self.0;
        match text.char_indices().nth(QUOTE_LIMIT) {
            None => write!(f, "{}", text.escape_debug()),
            Some((cut, _)) => write!(
                f,
                "{}… ({} bytes in all)",
                text[..cut].escape_debug(),
                text.len()
            ),
        }
    }
}

/// A client's string as an error message quotes it: cut at
/// [`QUOTE_LIMIT`] characters, its length noted when cut.
pub(crate) fn truncated(text: &str) -> std::borrow::Cow<'_, str> {
    match text.char_indices().nth(QUOTE_LIMIT) {
        None => std::borrow::Cow::Borrowed(text),
        Some((cut, _)) => {
            std::borrow::Cow::Owned(format!("{}… ({} bytes in all)", &text[..cut], text.len()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rule (issue 16, item 15): a quoted client string is bounded, its
    /// length noted, and escaped in a log line.
    #[test]
    fn client_text_is_bounded_and_escaped() {
        let long = "a\nb".repeat(1_000_000);
        let logged = Bounded(&long).to_string();
        assert!(logged.len() < 2 * QUOTE_LIMIT + 40, "{}", logged.len());
        assert!(!logged.contains('\n'));
        assert!(logged.ends_with("(3000000 bytes in all)"), "{logged}");
        assert_eq!(Bounded("ok\r\n").to_string(), "ok\\r\\n");
        let message = truncated(&long);
        assert!(message.len() < QUOTE_LIMIT + 40);
        assert_eq!(truncated("short"), "short");
        // Never cut inside a character.
        let wide = "é".repeat(QUOTE_LIMIT + 1);
        assert!(truncated(&wide).starts_with(&"é".repeat(QUOTE_LIMIT)));
    }
}
