//! tessera's C backend (DESIGN.md data flow: `codegen`): kernel IR after
//! the CPU pipeline becomes readable C, compiled by the system C compiler
//! into a shared object that is cached on disk by content and loaded into
//! the process.

pub mod cache;
pub mod compile;
mod elf;
pub mod emit;
pub mod exec;
pub mod load;
