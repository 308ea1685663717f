//! The autotuner (TC §6), built in parts: the genetic search over a space
//! of kernel options (`genetic.rs`) and the tuning cache every process
//! shares (`cache.rs`). Measuring candidates in a worker process and
//! `tessera tune` are not built yet.

pub mod cache;
pub mod genetic;
