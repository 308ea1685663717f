//! Expression fusion (OLLIE §4.1): a scope defined by `=`, `T(z) =
//! f(z)`, inlined into a statement that reads it, `g(T(π(x)))` becoming
//! `g(f(π(x)))` (the chain rule). After every step the search fuses the
//! copies a substitution leaves (`T(z) = U(σ(z))`, a read and nothing
//! else), which costs nothing and lets the reader see the layout it
//! reads; the post-processing fuses neighbouring eOperators (OLLIE's
//! InfoGAN example) with [`inline`].
//!
//! Requires a temporary written by one `=` statement before the reader,
//! read by the reader only at points that statement computes (checked by
//! intervals), every subscript of those reads linear. Guarantees: the
//! reader computes the same values (each read of `T` was `f` at that
//! point, and `f` reads in bounds there since the `=` statement did);
//! the scope is dropped when nothing else reads it.

use std::collections::HashMap;

use ir::{Comprehension, Expr, Reduction};

use super::{Applied, Rule};
use crate::derive::state::{bounds, range, State, Status};
use crate::derive::subscript::{linear, substitute, Linear};

pub struct ExpressionFusion;

impl Rule for ExpressionFusion {
    fn name(&self) -> &'static str {
        "expression fusion"
    }

    fn apply(&self, state: &State, at: usize, out: &mut Vec<Applied>) {
        if state.status[at] != Status::Open {
            return;
        }
        let reads: Vec<String> = state
            .comp(at)
            .body
            .reads()
            .iter()
            .map(|(t, _)| t.to_string())
            .collect();
        for t in reads {
            let Some(w) = sole_writer(state, &t, at) else {
                continue;
            };
            let wc = state.comp(w);
            if wc.op != Reduction::Assign || !is_copy(&wc.body) || state.status[w] != Status::Open {
                continue;
            }
            if let Some(next) = inline(state, w, at) {
                out.push(Applied {
                    state: next,
                    what: format!("`{t}` inlined into `{}`", state.comp(at).tensor),
                });
                return;
            }
        }
    }
}

/// The statement writing temporary `t`, when exactly one does and it
/// comes before statement `reader`.
pub fn sole_writer(state: &State, t: &str, reader: usize) -> Option<usize> {
    if !state.is_temp(t) {
        return None;
    }
    match state.writers(t).as_slice() {
        [w] if *w < reader => Some(*w),
        _ => None,
    }
}

/// Whether a body only moves data: a read (possibly cast).
fn is_copy(e: &Expr) -> bool {
    match e {
        Expr::Read(_, ix) => ix.iter().all(|x| x.reads().is_empty()),
        Expr::Cast(_, a) => is_copy(a),
        _ => false,
    }
}

/// `=` statement `w` inlined into statement `r`: every read of its tensor
/// replaced by its body at the read's subscripts. `None` when a read may
/// reach a point `w` does not compute, or a subscript is not linear.
pub fn inline(state: &State, w: usize, r: usize) -> Option<State> {
    let wc = state.comp(w);
    let rc = state.comp(r);
    let t = wc.tensor.clone();
    let body = expand_lets(&wc.body, &wc.lets);
    let rb = bounds(rc);
    let rlets: HashMap<String, Expr> = rc.lets.iter().cloned().collect();
    let mut ok = true;
    let new_body = rc.body.clone().map(&mut |e| match e {
        Expr::Read(name, ix) if name == t => match at_written_points(wc, rc, &ix, &rlets) {
            Some(to) => substitute(body.clone(), &to, &rb),
            None => {
                ok = false;
                Expr::Read(name, ix)
            }
        },
        e => e,
    });
    if !ok {
        return None;
    }
    let mut next = state.clone();
    next.comp_mut(r).body = new_body;
    next.prune();
    Some(next)
}

/// The substitution of `wc`'s left-hand iterators by the subscripts `ix`
/// of a read in `rc` (`lets` are `rc`'s), when every point of `rc`'s box
/// reads a point of `wc`'s box: `None` when a subscript is not linear or
/// may reach a point `wc` does not compute.
pub fn at_written_points(
    wc: &Comprehension,
    rc: &Comprehension,
    ix: &[Expr],
    lets: &HashMap<String, Expr>,
) -> Option<HashMap<String, Linear>> {
    let rb = bounds(rc);
    let mut to = HashMap::new();
    for (k, x) in ix.iter().enumerate() {
        let l = linear(x, lets)?;
        let n = wc.indices.get(k)?;
        let (lo, hi) = range(wc, n)?;
        let (a, b) = l.interval(&rb)?;
        if a < lo || b >= hi {
            return None;
        }
        to.insert(n.clone(), l);
    }
    Some(to)
}

/// `e` with every let of `lets` replaced by its value.
pub fn expand_lets(e: &Expr, lets: &[(String, Expr)]) -> Expr {
    let map: HashMap<&str, &Expr> = lets.iter().map(|(n, v)| (n.as_str(), v)).collect();
    fn go(e: Expr, map: &HashMap<&str, &Expr>, depth: usize) -> Expr {
        e.map(&mut |e| match e {
            Expr::Local(n) if depth < 64 => match map.get(n.as_str()) {
                Some(v) => go((*v).clone(), map, depth + 1),
                None => Expr::Local(n),
            },
            e => e,
        })
    }
    go(e.clone(), &map, 0)
}
