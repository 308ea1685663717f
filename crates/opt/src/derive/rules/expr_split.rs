//! Expression splitting (OLLIE §4.1): a statement's traversal box cut in
//! two along one iterator, `Π_{X} f` becoming `Π_{X1} f ~ Π_{X2} f`, two
//! independent statements writing the same tensor. The cuts are where
//! the statement's padding starts or ends (where a read of it stops being
//! in bounds for every point), so that the interior becomes a scope
//! without padding, which an operator can match.
//!
//! Requires an open statement that initializes or assigns its box (`op=!`
//! or `=`: each part then starts its own elements afresh) and that no
//! predefined operator matches as it is: one that matches (a convolution,
//! a band product) handles its padding itself, so cutting it would only
//! add a statement, and the search would derive every part's forms
//! again. Guarantees:
//! every element of the box is computed by exactly one part, by the same
//! body.

use ir::Reduction;

use super::boundary::in_box;
use super::{Applied, Rule};
use crate::derive::matching::exact;
use crate::derive::state::{iter_range, range, State, Status};

pub struct ExpressionSplitting;

impl Rule for ExpressionSplitting {
    fn name(&self) -> &'static str {
        "expression splitting"
    }

    fn apply(&self, state: &State, at: usize, out: &mut Vec<Applied>) {
        let c = state.comp(at);
        if state.status[at] != Status::Open
            || !(c.init || c.op == Reduction::Assign)
            || !exact(state, at).is_empty()
        {
            return;
        }
        for x in &c.indices {
            let (Some((lo, hi)), Some((a, b))) = (range(c, x), in_box(state, c, x)) else {
                continue;
            };
            let mut cuts: Vec<i64> = [a, b].into_iter().filter(|p| *p > lo && *p < hi).collect();
            cuts.dedup();
            for p in cuts {
                let mut first = c.clone();
                let mut second = c.clone();
                for (part, (from, to)) in [(&mut first, (lo, p)), (&mut second, (p, hi))] {
                    if let Some(r) = part.ranges.iter_mut().find(|r| r.name == *x) {
                        *r = iter_range(x, from, to);
                    }
                }
                // The upper part comes first: a temporary's shape is read
                // back from its first statement's ranges in TC text, so
                // that statement must reach the tensor's end.
                let mut next = state.clone();
                next.splice(at, vec![(second, Status::Open), (first, Status::Open)]);
                // The part cut off is an expression of its own, derived
                // after this one.
                next.root[at + 1] = next.fresh_root();
                out.push(Applied {
                    state: next,
                    what: format!("`{}` cut at {x} = {p}", c.tensor),
                });
            }
        }
    }
}
