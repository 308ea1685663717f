//! Where a statement's reads are in bounds, per traversal iterator: the
//! analysis behind boundary tightening (the values a reduction skips
//! entirely are its identity: constant propagation of padding) and the
//! split points of expression splitting (where padding starts).
//!
//! For a read dimension `a·x + rest` (`rest` over the other iterators,
//! bounded by intervals) of a tensor dimension of size `n`, the values of
//! `x` for which some point reads in bounds satisfy `a·x + max(rest) >= 0`
//! and `a·x + min(rest) < n`; those for which every point does satisfy
//! the same with `min` and `max` swapped. Requires a statement of a
//! [`State`]; guarantees intervals that contain (for [`reachable`]) or are
//! contained in (for [`in_box`]) the exact sets.

use std::collections::HashMap;

use ir::Comprehension;

use crate::derive::state::{bounds, range, unguarded_reads, State};
use crate::derive::subscript::{linear, Linear};

/// The values of traversal iterator `x` of `c` within `within`
/// (half-open) at which some point of the box reads every unguarded read
/// in bounds: outside them a reduction skips every point.
pub fn reachable(
    state: &State,
    c: &Comprehension,
    x: &str,
    within: (i64, i64),
) -> Option<(i64, i64)> {
    limits(state, c, x, false, within)
}

/// The values of traversal iterator `x` of `c` (half-open, within its
/// range) at which every point reads every unguarded read in bounds,
/// whatever the other iterators.
pub fn in_box(state: &State, c: &Comprehension, x: &str) -> Option<(i64, i64)> {
    limits(state, c, x, true, range(c, x)?)
}

fn limits(
    state: &State,
    c: &Comprehension,
    x: &str,
    every: bool,
    within: (i64, i64),
) -> Option<(i64, i64)> {
    let (mut lo, mut hi) = within;
    let lets: HashMap<String, ir::Expr> = c.lets.iter().cloned().collect();
    let b = bounds(c);
    for (t, ix) in unguarded_reads(&c.body) {
        let shape = state.shape(t)?;
        for (k, e) in ix.iter().enumerate() {
            let l = linear(e, &lets)?;
            let a = l.coeff(x);
            let mut rest: Linear = l.clone();
            rest.terms
                .remove(&crate::derive::subscript::Term::Iter(x.to_string()));
            if rest.mentions(x) {
                return None;
            }
            if a == 0 {
                continue;
            }
            let (rmin, rmax) = rest.interval(&b)?;
            let n = shape.get(k).copied()?;
            // a·x + r in [0, n) for some (every) r in [rmin, rmax].
            let (need_lo, need_hi) = if every { (rmin, rmax) } else { (rmax, rmin) };
            // a·x >= -need_lo and a·x <= n - 1 - need_hi.
            let (from, to) = (-need_lo, n - 1 - need_hi);
            let (xl, xh) = if a > 0 {
                (ceil_div(from, a), floor_div(to, a))
            } else {
                (ceil_div(to, a), floor_div(from, a))
            };
            lo = lo.max(xl);
            hi = hi.min(xh.checked_add(1)?);
        }
    }
    Some((lo, hi.max(lo)))
}

fn floor_div(a: i64, b: i64) -> i64 {
    ir::floor_div(a, b)
}

fn ceil_div(a: i64, b: i64) -> i64 {
    -ir::floor_div(-a, b)
}
