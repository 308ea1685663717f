//! tessera's kernel IR (DESIGN.md data flow: `kernel`): a comprehension says
//! what to compute; a kernel block says how — which indices are tiled, which
//! loops run in parallel, what lives in registers, what is vectorized.
//!
//! This crate owns the IR ([`Block`] and its parts), its affine forms
//! ([`Affine`]), lowering from comprehensions ([`lower_def`]) and the
//! reference VM ([`vm`]) that runs kernel IR with the interpreter's scalar
//! semantics.

mod affine;
mod block;
mod fm;
mod lower;
pub mod options;
mod parse;
mod partition;
mod pass;
pub mod passes;
mod print;
mod target;
mod verify;
pub mod vm;

pub use affine::Affine;
pub use block::{
    row_major, Agg, Block, Dim, Index, Op, RefDir, Refinement, Statement, StmtKind, Tags,
};
pub use lower::{lower_def, LowerError, LowerErrorKind};
pub use options::{parse_options, print_options, Options, StepOptions};
pub use parse::{parse_block, ParseError};
pub use pass::{
    builtin_pipeline, parse_pipeline, pass_by_name, pass_names, run_pipeline,
    run_pipeline_verifying, run_pipeline_with, Pass, PassCx, StepIndices, Verify,
    BUILTIN_PIPELINES,
};
pub use print::{op_name, print_block};
pub use target::{cache_dir, Cache, Target};
pub use verify::{verify_block, ChildVerifier};
