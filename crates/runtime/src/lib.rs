//! tessera's runtime (DESIGN.md data flow: `runtime`): compiles a def
//! through lowering, the pass pipeline, C emission and the kernel cache,
//! plans its memory, and runs its steps on one rayon pool, generated
//! kernels per partition of their parallel index.

pub mod band;
pub mod cost;
pub mod exec;
pub mod matmul;
pub mod plan;
pub mod saved;

pub use exec::{
    build, options_taken, BuildError, Executable, Options, Placement, State, StepProfile,
};
pub use plan::Plan;
