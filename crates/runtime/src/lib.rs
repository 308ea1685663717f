//! tessera's runtime (DESIGN.md data flow: `runtime`): runs a kernel whose
//! steps are compiled C functions or library matmuls, on one rayon pool.

pub mod matmul;
