//! The error collector: every pass records what it finds here, so one build
//! reports every mistake in a pipeline module instead of the first.
//!
//! Errors are reported in the order of the items they are about, whichever
//! pass found them: a pass says which item it is looking at with
//! [`Ctxt::at`], and [`Ctxt::check`] sorts by that, stably.

use std::cell::{Cell, RefCell};
use std::fmt::Display;

use quote::ToTokens;

/// Collects errors across the passes. It must be [`check`](Ctxt::check)ed
/// before it is dropped; forgetting to is a bug in the macro, caught by a
/// panic in debug builds.
#[derive(Debug)]
pub struct Ctxt {
    errors: RefCell<Option<Vec<(usize, syn::Error)>>>,
    item: Cell<usize>,
}

impl Ctxt {
    pub fn new() -> Self {
        Ctxt {
            errors: RefCell::new(Some(Vec::new())),
            item: Cell::new(0),
        }
    }

    /// The errors recorded from now on are about the module's item `index`.
    pub fn at(&self, index: usize) {
        self.item.set(index);
    }

    /// Records an error spanned on `tokens` (first to last token).
    pub fn error_spanned_by<T: ToTokens, M: Display>(&self, tokens: T, message: M) {
        self.syn_error(syn::Error::new_spanned(tokens.into_token_stream(), message));
    }

    /// Records an already-built error.
    pub fn syn_error(&self, error: syn::Error) {
        self.errors
            .borrow_mut()
            .as_mut()
            .expect("Ctxt used after check")
            .push((self.item.get(), error));
    }

    /// Whether any error has been recorded so far.
    pub fn has_errors(&self) -> bool {
        self.errors.borrow().as_ref().is_some_and(|e| !e.is_empty())
    }

    /// Ends the collection: all errors combined into one, if there were any.
    pub fn check(self) -> Result<(), syn::Error> {
        let mut errors = self.errors.borrow_mut().take().expect("Ctxt checked twice");
        errors.sort_by_key(|(item, _)| *item);
        let mut errors = errors.into_iter().map(|(_, error)| error);
        let Some(mut combined) = errors.next() else {
            return Ok(());
        };
        for error in errors {
            combined.combine(error);
        }
        Err(combined)
    }
}

impl Default for Ctxt {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for Ctxt {
    fn drop(&mut self) {
        assert!(
            std::thread::panicking() || self.errors.borrow().is_none(),
            "Ctxt dropped without being checked"
        );
    }
}
