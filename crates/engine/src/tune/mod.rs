//! The autotuner (TC §6), built in parts: the genetic search over a space
//! of kernel options (`genetic.rs`). Measuring candidates in isolation,
//! the tuning cache and `tessera tune` are not built yet.

pub mod genetic;
