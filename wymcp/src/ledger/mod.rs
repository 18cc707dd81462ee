//! The ledger: everything a caller can hold beyond its own request, counted
//! per caller and in all, in one place (`book.rs`), and who a caller is
//! (`caller.rs`). Every limit of that kind is a [`Share`] of a [`Kind`];
//! docs/limits.md has the table.

mod book;
mod caller;

pub use book::{Kind, Ledger, Place, Refusal, Share};
pub use caller::{Caller, Grouping};
