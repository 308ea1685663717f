//! The reference interpreter of tessera IR: what every program means.
//!
//! [`run`] executes a def of an [`ir::Program`] on concrete tensors, in one
//! of two modes:
//!
//! - [`Mode::Real`]: floats, integers and `bool` with exact machine
//!   semantics (`float32` rounding after every operation, wrapping narrow
//!   integers, floor division and modulo), as `docs/LANGUAGE.md` describes;
//! - [`Mode::ModP`]: every value is a residue mod [`P`] and bodies must be
//!   polynomials, for the randomized equivalence verifier.
//!
//! Each comprehension is compiled once per execution into closures over a
//! flat frame of slots (`compile.rs`, `poly.rs`, `read.rs`) and then
//! iterated (`exec.rs`); nothing looks names up or walks the expression tree
//! per element. No input panics the interpreter: every problem, in the
//! program or the arguments, is a [`RunError`].

mod bind;
mod checked;
mod compile;
mod error;
mod exec;
mod frame;
mod poly;
mod progress;
mod read;
pub mod residue;
mod run;
mod tensors;

pub use bind::{bind_sizes, param_shape};
pub use error::RunError;
pub use progress::{points, Progress, Reporter, Task, MAX_POINTS, REPORTED_POINTS};
pub use residue::P;
pub use run::{run, run_reporting};
pub use tensor::{row_major_strides as strides, Tensor};
pub use tensors::random_residues;

/// An argument of a def: a tensor or a scalar.
#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    Tensor(Tensor),
    Scalar(ir::Value),
}

/// How values are computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Ordinary arithmetic on floats, integers and `bool`.
    Real,
    /// Arithmetic on residues mod [`P`]; only polynomial bodies run.
    ModP,
}
