//! Boundary relaxing (OLLIE §4.2): a scope's box widened to its tensor's
//! whole dimension, `Π_{x ∈ X} f` becoming `Π_{x ∈ X'} f` with `X ⊂ X'`,
//! computing elements no reader uses or that are zero anyway — a box
//! without edges can match an operator that a cut one does not. (The
//! substitution rule relaxes the scopes it makes to their bounding boxes
//! itself.)
//!
//! Requires an open reduction writing a temporary that no earlier
//! statement writes, whose reads a reduction skips out of bounds; the
//! added points are either never read (every reader's subscripts stay in
//! the old box, by intervals) or reach no read in bounds (their value is
//! the sum of nothing, the zero they hold). Guarantees: every value a
//! reader reads is unchanged.

use std::collections::HashMap;

use ir::{Expr, Reduction};

use super::boundary::reachable;
use super::{Applied, Rule};
use crate::derive::state::{bounds, iter_range, range, unguarded_reads, State, Status};
use crate::derive::subscript::linear;

pub struct BoundaryRelaxing;

impl Rule for BoundaryRelaxing {
    fn name(&self) -> &'static str {
        "boundary relaxing"
    }

    fn apply(&self, state: &State, at: usize, out: &mut Vec<Applied>) {
        let c = state.comp(at);
        let skippable = unguarded_reads(&c.body).len() == c.body.reads().len();
        if state.status[at] != Status::Open
            || c.op == Reduction::Assign
            || !c.init
            || !skippable
            || !state.is_temp(&c.tensor)
            || state.writers(&c.tensor) != [at]
        {
            return;
        }
        let Some(shape) = state.shape(&c.tensor) else {
            return;
        };
        for (k, x) in c.indices.iter().enumerate() {
            let Some((lo, hi)) = range(c, x) else {
                continue;
            };
            if (lo, hi) == (0, shape[k]) {
                continue;
            }
            let zero_outside =
                reachable(state, c, x, (0, shape[k])).is_some_and(|(a, b)| a >= lo && b <= hi);
            if !zero_outside && !unread_outside(state, &c.tensor, k, lo, hi) {
                continue;
            }
            let mut next = state.clone();
            if let Some(r) = next.comp_mut(at).ranges.iter_mut().find(|r| r.name == *x) {
                *r = iter_range(x, 0, shape[k]);
            }
            out.push(Applied {
                state: next,
                what: format!("`{}`: {x} in 0:{} (was {lo}:{hi})", c.tensor, shape[k]),
            });
        }
    }
}

/// Whether every read of `tensor` reads dimension `k` inside `lo..hi`.
fn unread_outside(state: &State, tensor: &str, k: usize, lo: i64, hi: i64) -> bool {
    state.readers(tensor).into_iter().all(|r| {
        let rc = state.comp(r);
        let lets: HashMap<String, Expr> = rc.lets.iter().cloned().collect();
        rc.body
            .reads()
            .iter()
            .filter(|(t, _)| *t == tensor)
            .all(|(_, ix)| {
                ix.get(k)
                    .and_then(|e| linear(e, &lets))
                    .and_then(|l| l.interval(&bounds(rc)))
                    .is_some_and(|(a, b)| a >= lo && b < hi)
            })
    })
}
