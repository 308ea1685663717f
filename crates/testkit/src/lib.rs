//! tessera's test harness, used only as a dev-dependency.
//!
//! Every test that needs random numbers, the checked operator prelude, a
//! checked file of the repository or a file test with a blessable
//! expectation takes it from here, so that there is one generator, one
//! prelude check per test binary and one bless rule (`BLESS=1`).
//!
//! - [`Rng`]: the seeded SplitMix64 stream, the same one that
//!   `interp::Tensor::random` draws from.
//! - [`prelude`] and [`load`]: checked programs of the repository.
//! - [`filetest`]: expectation blocks, blessing and diffs for file tests.
//! - [`close`]: float outputs against a reference, NaN and infinities exact.
//! - [`gen`]: the random-program generator the property tests share.

pub mod close;
pub mod filetest;
pub mod gen;
mod programs;
mod rng;

pub use programs::{load, prelude, root, with_prelude};
pub use rng::Rng;
