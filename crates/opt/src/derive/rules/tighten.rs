//! Boundary tightening (OLLIE §4.2): a `+` reduction's box shrunk to the
//! traversal points where some term is not skipped. Outside them every
//! read of some factor falls in the padding, so the element is the sum of
//! nothing, 0, which the tensor already holds. When the statement alone
//! writes a temporary and every reader either reads it only inside the
//! new box or is a `+` reduction in which it is a factor of the term (a
//! read out of bounds skips a term that would be 0 anyway), the temporary
//! itself shrinks to the box (OLLIE's Figure 6, E6: `t1` from `[-1, H+1)`
//! to `[0, H)`), its readers' subscripts shifted, so that what was zero
//! padding in it becomes padding outside it.
//!
//! Requires an open `+` statement that either accumulates (`+=`: skipped
//! points keep their values either way) or initializes a tensor no
//! earlier statement writes and no caller passes in (its elements start
//! at zero). Guarantees: every value any statement reads or returns is
//! unchanged; the box shrinks (an application that would empty it is not
//! made).

use std::collections::HashMap;

use ir::{BinOp, Expr, Reduction, SizeExpr, TensorRole};

use super::boundary::reachable;
use super::{Applied, Rule};
use crate::derive::scope::{rewrite, zero_based};
use crate::derive::state::{bounds, iter_range, range, State, Status};
use crate::derive::subscript::{linear, Linear};

pub struct BoundaryTightening;

impl Rule for BoundaryTightening {
    fn name(&self) -> &'static str {
        "boundary tightening"
    }

    fn apply(&self, state: &State, at: usize, out: &mut Vec<Applied>) {
        let c = state.comp(at);
        let fresh = state.writers(&c.tensor).first() == Some(&at)
            && state
                .def
                .tensor(&c.tensor)
                .is_some_and(|t| t.role != TensorRole::InOut);
        if state.status[at] != Status::Open || c.op != Reduction::Add || (c.init && !fresh) {
            return;
        }
        let mut next = state.clone();
        let mut changed = Vec::new();
        let mut boxes = Vec::new();
        for x in &c.indices {
            let Some((lo, hi)) = range(c, x) else { return };
            let Some((a, b)) = reachable(state, c, x, (lo, hi)) else {
                return;
            };
            if (a, b) != (lo, hi) && b > a {
                let nc = next.comp_mut(at);
                if let Some(r) = nc.ranges.iter_mut().find(|r| r.name == *x) {
                    *r = iter_range(x, a, b);
                }
                changed.push(format!("{x} in {a}:{b}"));
                boxes.push((a, b));
            } else {
                boxes.push((lo, hi));
            }
        }
        if changed.is_empty() {
            return;
        }
        // The conditions the new box decides fold away (constant
        // propagation), so that a guarded product becomes a plain one.
        rewrite(next.comp_mut(at), &HashMap::new());
        let shrunk = (state.is_temp(&c.tensor) && state.writers(&c.tensor) == [at])
            .then(|| shrink(&next, at, &boxes))
            .flatten();
        let what = format!("`{}`: {}", c.tensor, changed.join(", "));
        match shrunk {
            Some(s) => out.push(Applied {
                state: s,
                what: format!("{what}, the tensor cut to the box"),
            }),
            // A temporary's shape is read back from its first statement's
            // ranges in TC text: its box keeps reaching the tensor's end.
            None if state.is_temp(&c.tensor) && ends_early(&next, at) => {}
            None => out.push(Applied { state: next, what }),
        }
    }
}

/// Whether statement `at`'s box stops short of its tensor's end in some
/// dimension.
fn ends_early(state: &State, at: usize) -> bool {
    let c = state.comp(at);
    let Some(shape) = state.shape(&c.tensor) else {
        return true;
    };
    c.indices
        .iter()
        .zip(&shape)
        .any(|(x, &n)| range(c, x).is_none_or(|(_, hi)| hi != n))
}

/// Temporary `at` writes cut to `boxes` (one per dimension), when every
/// reader allows it (see the module doc).
fn shrink(state: &State, at: usize, boxes: &[(i64, i64)]) -> Option<State> {
    let c = state.comp(at);
    let t = c.tensor.clone();
    for r in state.readers(&t) {
        let rc = state.comp(r);
        let lets: HashMap<String, Expr> = rc.lets.iter().cloned().collect();
        let inside = rc
            .body
            .reads()
            .iter()
            .filter(|(n, _)| *n == t)
            .all(|(_, ix)| {
                ix.iter().zip(boxes).all(|(e, (lo, hi))| {
                    linear(e, &lets)
                        .and_then(|l| l.interval(&bounds(rc)))
                        .is_some_and(|(a, b)| a >= *lo && b < *hi)
                })
            });
        if !(inside || rc.op == Reduction::Add && factor(&rc.body, &t)) {
            return None;
        }
    }
    let mut next = state.clone();
    let written = zero_based(c, &c.indices);
    *next.comp_mut(at) = written;
    let decl = next.def.tensors.iter_mut().find(|d| d.name == t)?;
    decl.shape = boxes
        .iter()
        .map(|(lo, hi)| SizeExpr::constant(hi - lo))
        .collect();
    for r in next.readers(&t) {
        let rc = next.comp_mut(r);
        let body = std::mem::replace(&mut rc.body, Expr::int(0));
        let none = HashMap::new();
        rc.body = body.map(&mut |e| match e {
            Expr::Read(n, ix) if n == t => Expr::Read(
                n,
                ix.into_iter()
                    .zip(boxes)
                    .map(|(e, (lo, _))| match linear(&e, &none) {
                        Some(l) => l.plus(&Linear::constant(-lo)).map_or(e, |l| l.to_expr()),
                        None => Expr::binary(BinOp::Sub, e, Expr::int(*lo)),
                    })
                    .collect(),
            ),
            e => e,
        });
    }
    Some(next)
}

/// Whether every read of `t` in `e` is a factor of the product that is
/// `e` (so skipping the term is adding 0), unguarded.
fn factor(e: &Expr, t: &str) -> bool {
    match e {
        Expr::Read(n, _) => n == t || !e.reads().iter().any(|(n, _)| *n == t),
        Expr::Binary(BinOp::Mul, a, b) => factor(a, t) && factor(b, t),
        Expr::Cast(_, a) => factor(a, t),
        _ => !e.reads().iter().any(|(n, _)| *n == t),
    }
}
