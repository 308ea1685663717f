//! tessera's kernel IR (DESIGN.md data flow: `kernel`): a comprehension says
//! what to compute; a kernel block says how — which indices are tiled, which
//! loops run in parallel, what lives in registers, what is vectorized.
//!
//! This crate owns the IR ([`Block`] and its parts), its affine forms
//! ([`Affine`]), its text format and its verifier.

mod affine;
mod block;

pub use affine::Affine;
pub use block::{
    row_major, Agg, Block, Dim, Index, Op, RefDir, Refinement, Statement, StmtKind, Tags,
};
