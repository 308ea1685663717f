//! Summation splitting (OLLIE §4.2): `O(x) +=! Σ_{s1,s2} f` becomes an
//! inner scope `T(x, s1) +=! Σ_{s2} f` and `O(x) +=! Σ_{s1} T(x, s1)`.
//!
//! Requires an open `+` reduction with at least two reduction iterators
//! whose body reads two tensors or more (a sum of one tensor is a
//! memory-bound eOperator: splitting it only adds passes over memory). Every split of the reduction iterators into
//! two non-empty groups is one application (the outer group first).
//! Guarantees: the same sums in another grouping — addition is
//! associative and commutative, so over Z_p the outputs are equal, and
//! in floating point they differ only by the order of the additions; a
//! read the original skips out of bounds is skipped in the inner scope at
//! the same points, and the outer scope reads `T` only in bounds.

use ir::{Comprehension, Reduction};

use super::{Applied, Rule};
use crate::derive::scope::{read, zero_based};
use crate::derive::state::{range, State, Status};
use crate::derive::subscript::Linear;

pub struct SummationSplitting;

/// Splits of more reduction iterators than this are not enumerated (the
/// number of groupings doubles with each).
const MAX_SUMS: usize = 6;

impl Rule for SummationSplitting {
    fn name(&self) -> &'static str {
        "summation splitting"
    }

    fn apply(&self, state: &State, at: usize, out: &mut Vec<Applied>) {
        let c = state.comp(at);
        let sums: Vec<String> = c.reduction_iters().map(|r| r.name.clone()).collect();
        if state.status[at] != Status::Open
            || c.op != Reduction::Add
            || sums.len() < 2
            || sums.len() > MAX_SUMS
            || c.body.reads().len() < 2
        {
            return;
        }
        let Some(dtype) = state.dtype(&c.tensor) else {
            return;
        };
        for mask in 1..(1u32 << sums.len()) - 1 {
            let outer: Vec<String> = (0..sums.len())
                .filter(|k| mask & (1 << k) != 0)
                .map(|k| sums[k].clone())
                .collect();
            let kept: Vec<String> = c.indices.iter().chain(&outer).cloned().collect();
            let Some(extents) = kept
                .iter()
                .map(|n| range(c, n).map(|(lo, hi)| hi - lo))
                .collect::<Option<Vec<i64>>>()
            else {
                return;
            };
            let mut next = state.clone();
            let t = next.fresh_tensor(dtype, &extents);
            let mut inner = zero_based(c, &kept);
            inner.tensor = t.clone();
            inner.indices = kept.clone();
            inner.init = true;
            inner.exists.clear();
            // The kept iterators lead the ranges, as a left-hand side's must.
            inner
                .ranges
                .sort_by_key(|r| kept.iter().position(|n| *n == r.name).unwrap_or(usize::MAX));
            let subscripts: Vec<Linear> = kept
                .iter()
                .map(|n| {
                    let lo = range(c, n).map_or(0, |r| r.0);
                    Linear::iter(n)
                        .plus(&Linear::constant(-lo))
                        .unwrap_or_default()
                })
                .collect();
            let outer_stmt = Comprehension {
                tensor: c.tensor.clone(),
                indices: c.indices.clone(),
                op: Reduction::Add,
                init: c.init,
                body: read(&t, &subscripts),
                ranges: c
                    .ranges
                    .iter()
                    .filter(|r| kept.contains(&r.name))
                    .cloned()
                    .collect(),
                lets: Vec::new(),
                exists: Vec::new(),
            };
            next.splice(at, vec![(inner, Status::Open), (outer_stmt, Status::Open)]);
            out.push(Applied {
                state: next,
                what: format!(
                    "`{}`: sums over {} outside, {} inside as `{t}`",
                    c.tensor,
                    outer.join(", "),
                    sums.iter()
                        .filter(|s| !outer.contains(s))
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            });
        }
    }
}
