//! Progress of long work, and the limit on it.
//!
//! A statement's work is the number of points of its iteration box
//! ([`points`]). The interpreter reports a statement of at least
//! [`REPORTED_POINTS`] to the caller's [`Progress`] (a few seconds of
//! work and more; smaller ones would only flicker), a chunk of points at a
//! time so that the inner loop pays nothing per point, and refuses one of
//! more than [`MAX_POINTS`] before it allocates or computes anything. The
//! trait keeps terminals out of the library crates: the command line draws
//! the bars.

use std::fmt;
use std::sync::Arc;

/// Statements with fewer points run without reports.
pub const REPORTED_POINTS: u128 = 1 << 26;

/// The most points a statement may have: 2^50, over a year of the
/// interpreter's tens of millions of points a second.
pub const MAX_POINTS: u128 = 1 << 50;

/// Where long work reports how far it is.
pub trait Progress: Send + Sync {
    /// Work named `what` (`statement 2 of f`) of `total` units starts.
    fn start(&self, what: &str, total: u64);
    /// `done` more units are done.
    fn advance(&self, done: u64);
    /// The work ended (done, or failed).
    fn finish(&self);
}

/// A [`Progress`] to report to, or none.
#[derive(Clone, Default)]
pub struct Reporter(Option<Arc<dyn Progress>>);

impl Reporter {
    pub fn new(progress: Arc<dyn Progress>) -> Reporter {
        Reporter(Some(progress))
    }

    /// Starts work `what` of `total` units.
    pub fn start(&self, what: &str, total: u64) -> Task<'_> {
        let progress = self.0.as_deref();
        if let Some(p) = progress {
            p.start(what, total);
        }
        Task { progress }
    }
}

/// Started work: it reports its advances, and its end when dropped,
/// whether it is done or an error returned early.
#[derive(Default)]
pub struct Task<'a> {
    progress: Option<&'a dyn Progress>,
}

impl fmt::Debug for Task<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Task(..)")
    }
}

impl Task<'_> {
    /// `done` more units are done.
    pub fn advance(&self, done: u64) {
        if let Some(p) = self.progress {
            p.advance(done);
        }
    }
}

impl Drop for Task<'_> {
    fn drop(&mut self) {
        if let Some(p) = self.progress {
            p.finish();
        }
    }
}

impl fmt::Debug for Reporter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() {
            "Reporter(..)"
        } else {
            "Reporter(none)"
        })
    }
}

/// The number of points of a box of half-open `bounds`, exactly (a
/// product of at most `u64` counts per iterator, saturating only past
/// `u128`, far beyond every limit).
pub fn points(bounds: &[(i64, i64)]) -> u128 {
    bounds.iter().fold(1u128, |n, &(lo, hi)| {
        // `hi - lo` of two `i64`s fits an `i128`; an empty range is 0.
        let count = (i128::from(hi) - i128::from(lo)).max(0) as u128;
        n.saturating_mul(count)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_multiply_exact_range_lengths() {
        assert_eq!(points(&[]), 1);
        assert_eq!(points(&[(0, 4), (2, 5)]), 12);
        assert_eq!(points(&[(0, 4), (3, 3)]), 0);
        // The widest ranges an `i64` allows, past `u64`.
        let whole = (i64::MIN, i64::MAX);
        assert_eq!(points(&[whole]), u128::from(u64::MAX));
        assert_eq!(points(&[whole, whole]), u128::from(u64::MAX).pow(2));
        assert_eq!(points(&[whole, whole, whole]), u128::MAX);
    }
}
