//! What a candidate program costs, as the searches ask it: the
//! [`CostModel`] trait, implemented outside `opt` (by the engine, which
//! compiles and runs), so that `opt` needs no compiler or runtime.
//!
//! A model gives an analytic [`Estimate`] (cheap, no compiling) and a
//! measured time (compiled and run; a model may answer a repeated request
//! from a cache). [`fastest`] is how a search compares candidates.

use std::collections::HashMap;
use std::time::Duration;

use ir::Program;

/// An analytic estimate of one run of a def.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    /// Floating-point operations.
    pub flops: u64,
    /// Bytes moved between memory and the caches.
    pub bytes: u64,
    /// The estimated time of a run, in seconds.
    pub seconds: f64,
}

/// A source of costs for defs of a program with bound sizes (every size
/// symbol and integer scalar of the def).
pub trait CostModel {
    type Error: std::fmt::Display;

    /// An analytic estimate of a run of `def`.
    fn estimate(
        &self,
        program: &Program,
        def: &str,
        sizes: &HashMap<String, i64>,
    ) -> Result<Estimate, Self::Error>;

    /// The measured time of a run of `def`.
    fn measure(
        &self,
        program: &Program,
        def: &str,
        sizes: &HashMap<String, i64>,
    ) -> Result<Duration, Self::Error>;

    /// The times of `defs` measured now and side by side (their runs
    /// interleaved, so that a drift of the machine touches all alike),
    /// taking about `within` when the defs are slow enough to need
    /// fewer runs: how a search confirms that a candidate beats the
    /// original. By default, each one's [`CostModel::measure`].
    fn compare(
        &self,
        program: &Program,
        defs: &[&str],
        sizes: &HashMap<String, i64>,
        within: Duration,
    ) -> Result<Vec<Duration>, Self::Error> {
        let _ = within;
        defs.iter()
            .map(|d| self.measure(program, d, sizes))
            .collect()
    }
}

/// The candidate def of `program` with the smallest measured time, and its
/// time (the first of equal ones); `None` when there are no candidates.
pub fn fastest<'c, M: CostModel>(
    model: &M,
    program: &Program,
    candidates: &[&'c str],
    sizes: &HashMap<String, i64>,
) -> Result<Option<(&'c str, Duration)>, M::Error> {
    let mut best: Option<(&'c str, Duration)> = None;
    for &c in candidates {
        let t = model.measure(program, c, sizes)?;
        if best.is_none_or(|(_, b)| t < b) {
            best = Some((c, t));
        }
    }
    Ok(best)
}
