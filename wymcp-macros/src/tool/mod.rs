//! `#[tool]` and `#[tools]`: an `async fn` served as an MCP tool.
//!
//! The passes, as `#[pipeline]`'s: `attr` reads the keys, `ast` reads the
//! function into a typed model (its parameters, its answer), `check`
//! applies the rules (a name the spec allows, no name twice in one impl),
//! and `expand` writes the tokens. Every pass records its errors in one
//! `Ctxt`, so a build reports every mistake at once.

mod ast;
mod attr;
mod check;
mod complete;
mod expand;
mod others;

#[cfg(test)]
mod expansion;
#[cfg(test)]
mod tests;

pub use expand::{tool, tools};
