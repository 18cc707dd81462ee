//! Unit tests of the checking pass, independent of token output.
