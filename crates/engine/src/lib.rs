//! tessera's engine: the one library API from input to results, used by
//! the command-line tool (and, later, the Python package and the
//! searches).
//!
//! Load a program ([`source`]: TC text checked, or an ONNX model
//! imported), bind its sizes and arguments ([`bind`]), compile it for those
//! sizes into a [`Compiled`] that runs many times ([`compile`]: lower,
//! pipeline, C, kernel cache, load), run it compiled or on the interpreter
//! with the interpreter fallback ([`session`]), and cost it ([`cost`]: an
//! analytic estimate and measured times cached on disk). Errors are one
//! typed [`Error`]; what the engine did that the user may want to know
//! comes back as [`Note`]s, never printed here.

pub mod bind;
pub mod compile;
pub mod cost;
pub mod error;
pub mod lowering;
pub mod note;
pub mod session;
pub mod source;
pub mod target;
mod transfer;

pub use bind::{Bound, Sizes};
pub use compile::{Compiled, Options};
pub use error::Error;
pub use note::Note;
pub use session::{Outputs, Profile, RunOptions};
pub use source::Source;
