//! Traversal merging (OLLIE §4.2): a statement that only reads a scope
//! defined by a reduction, `O(x) = Σ_y T(Φ(x, y))` with `T(z) = Σ_s
//! f(z, s)`, becomes one scope `O(x) = Σ_{y,s} f(Φ(x, y), s)` — the
//! inverse of summation splitting and variable substitution, and the step
//! that turns OLLIE's Figure 6 E4 into E5.
//!
//! Requires: the reader's body is one read of a temporary written by one
//! statement before it, which initializes (`op=!`) the same reduction the
//! reader does (or the reader is `=` without reduction iterators);
//! `Φ(X × Y)` lies in that statement's box (checked by intervals); the
//! reader's subscripts are linear. Guarantees: the same sums — each
//! element of `T` the reader adds was the sum over `s` at that point,
//! including the points the reduction skipped there.

use std::collections::HashMap;

use ir::{Expr, Reduction};

use super::expr_fusion::{at_written_points, expand_lets, sole_writer};
use super::{Applied, Rule};
use crate::derive::state::{bounds, fresh_iter, State, Status};
use crate::derive::subscript::{substitute, Linear};

pub struct TraversalMerging;

impl Rule for TraversalMerging {
    fn name(&self) -> &'static str {
        "traversal merging"
    }

    fn apply(&self, state: &State, at: usize, out: &mut Vec<Applied>) {
        let rc = state.comp(at);
        let Expr::Read(t, ix) = &rc.body else { return };
        let Some(w) = sole_writer(state, t, at) else {
            return;
        };
        let wc = state.comp(w);
        let reader_sums = rc.reduction_iters().count();
        let fits = wc.init
            && wc.op != Reduction::Assign
            && (rc.op == wc.op || (rc.op == Reduction::Assign && reader_sums == 0));
        if !fits || state.status[at] != Status::Open || state.status[w] != Status::Open {
            return;
        }
        let lets: HashMap<String, Expr> = rc.lets.iter().cloned().collect();
        let Some(mut to) = at_written_points(wc, rc, ix, &lets) else {
            return;
        };
        // The scope's reduction iterators join the reader's, renamed apart.
        let mut merged = rc.clone();
        for r in wc.reduction_iters() {
            let mut nr = r.clone();
            nr.name = fresh_iter(&merged, &r.name);
            to.insert(r.name.clone(), Linear::iter(&nr.name));
            merged.ranges.push(nr);
        }
        let snapshot = merged.clone();
        merged.body = substitute(expand_lets(&wc.body, &wc.lets), &to, &bounds(&snapshot));
        merged.op = wc.op;
        merged.init = rc.init || rc.op == Reduction::Assign;
        merged.lets.clear();
        let mut next = state.clone();
        *next.comp_mut(at) = merged;
        next.prune();
        out.push(Applied {
            state: next,
            what: format!("`{t}` merged into `{}`", rc.tensor),
        });
    }
}
