//! Expression merging (OLLIE §4.1): two consecutive statements computing
//! the same body into the same tensor over boxes that meet along one
//! traversal iterator, `Π_{X1} f ~ Π_{X2} f`, become one over `X1 ∪ X2`
//! — the inverse of expression splitting.
//!
//! Requires two open neighbouring statements equal but for one traversal
//! iterator's range, `a:b` and `b:c`, that each initialize or assign their
//! box. Guarantees: the merged statement computes each element of the
//! union as the part containing it did.

use ir::Reduction;

use super::{Applied, Rule};
use crate::derive::state::{iter_range, range, State, Status};

pub struct ExpressionMerging;

impl Rule for ExpressionMerging {
    fn name(&self) -> &'static str {
        "expression merging"
    }

    fn apply(&self, state: &State, at: usize, out: &mut Vec<Applied>) {
        if at + 1 >= state.statements()
            || state.status[at] != Status::Open
            || state.status[at + 1] != Status::Open
        {
            return;
        }
        let (c, d) = (state.comp(at), state.comp(at + 1));
        if c.tensor != d.tensor
            || c.indices != d.indices
            || c.op != d.op
            || c.init != d.init
            || !(c.init || c.op == Reduction::Assign)
            || c.body != d.body
            || c.lets != d.lets
            || c.ranges.len() != d.ranges.len()
        {
            return;
        }
        let differ: Vec<usize> = (0..c.ranges.len())
            .filter(|&k| c.ranges[k] != d.ranges[k])
            .collect();
        let [k] = differ.as_slice() else { return };
        let x = &c.ranges[*k].name;
        if !c.indices.contains(x) || d.ranges[*k].name != *x {
            return;
        }
        let (Some((a, b)), Some((b2, e))) = (range(c, x), range(d, x)) else {
            return;
        };
        let (lo, hi) = if b == b2 {
            (a, e)
        } else if e == a {
            (b2, b)
        } else {
            return;
        };
        let mut merged = c.clone();
        merged.ranges[*k] = iter_range(x, lo, hi);
        let mut next = state.clone();
        next.remove(at + 1);
        *next.comp_mut(at) = merged;
        out.push(Applied {
            state: next,
            what: format!("`{}`'s two parts merged along {x}", c.tensor),
        });
    }
}
