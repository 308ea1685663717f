//! The autotuner (TC §6), built in parts: the genetic search over a space
//! of kernel options (`genetic.rs`), measurement jobs (`job.rs`) run in
//! worker processes under a time limit (`worker.rs`), and the tuning cache
//! every process shares (`cache.rs`). The search driven over a kernel's
//! options and `tessera tune` are not built yet.

pub mod cache;
pub mod genetic;
pub mod job;
pub mod worker;
