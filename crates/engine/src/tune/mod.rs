//! The autotuner (TC §6): the genetic search (`genetic.rs`) over a
//! kernel's space of options (`space.rs`), measurement jobs (`job.rs`) run
//! in worker processes under a time limit (`worker.rs`), the tuning cache
//! every process shares (`cache.rs`), and tuning one kernel with them
//! (`tuner.rs`).

pub mod cache;
pub mod genetic;
pub mod job;
pub mod space;
pub mod tuner;
pub mod worker;
