//! What the tests share: [`alone`] for a test that needs a process of its
//! own.

mod alone;

pub use alone::alone;
