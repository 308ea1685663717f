//! tessera's engine: the one library API from input to results, used by
//! the command-line tool and the Python package (and, later, the
//! searches).
//!
//! Load a program ([`source`]: TC text checked, or an ONNX model
//! imported), bind its sizes and arguments ([`bind`]), compile it for those
//! sizes into a [`Compiled`] that runs many times ([`compile`]: lower,
//! pipeline, C, kernel cache, load), run it compiled or on the interpreter
//! with the interpreter fallback ([`session`]), and cost it ([`cost`]: an
//! analytic estimate and measured times cached on disk). For callers that
//! run a program many times on new tensors, [`Model`] (an ONNX model, as an
//! inference session) and [`Function`] (a TC def, called like a function)
//! compile once per set of shapes and run from many threads at once
//! ([`specialized`]); a model whose shapes depend on values it computes
//! runs in [`stages`]; [`verify`] decides whether two defs are equivalent,
//! and [`optimize`] searches for a faster equivalent of a def, its results
//! cached on disk ([`optimize_cache`]).
//! Errors are one typed [`Error`]; what the engine did that the user may
//! want to know comes back as [`Note`]s, never printed here.

pub mod bind;
pub mod compile;
pub mod constants;
pub mod cost;
pub mod derive;
pub mod error;
pub mod function;
pub mod lowering;
pub mod model;
pub mod note;
pub mod optimize;
pub mod optimize_cache;
pub mod python;
pub mod regions;
pub mod session;
pub mod source;
pub mod specialized;
pub mod stages;
pub mod target;
mod transfer;
pub mod tune;
pub mod verify;

pub use bind::{Bound, Sizes};
pub use compile::{Compiled, Options};
pub use error::Error;
pub use function::Function;
pub use model::Model;
pub use note::Note;
pub use session::{Outputs, Profile, RunOptions};
pub use source::Source;
pub use specialized::{thread_pool, Setup};
