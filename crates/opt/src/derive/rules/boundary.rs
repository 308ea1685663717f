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

use ir::{BinOp, Comprehension, Expr, Value};

use crate::derive::state::{bounds, range, unguarded_reads, State};
use crate::derive::subscript::{linear, Linear, Term};

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
    let none = HashMap::new();
    let b = bounds(c);
    // Each constraint `d >= 0` on the point: every unguarded read (and,
    // for the points that are not zero, every read of the taken branch of
    // `cond ? value : 0` and the conjuncts of `cond`) in bounds.
    let mut constraints: Vec<Linear> = Vec::new();
    let (conds, value) = match (&c.body, every) {
        (Expr::Select(cond, value, zero), false) if is_zero(zero) => {
            (conjuncts(cond), value.as_ref())
        }
        _ => (Vec::new(), &c.body),
    };
    let mut reads = unguarded_reads(value);
    if !conds.is_empty() {
        reads.extend(unguarded_reads(&c.body));
    }
    for (t, ix) in reads {
        let shape = state.shape(t)?;
        for (k, e) in ix.iter().enumerate() {
            let l = linear(e, &none)?;
            let n = shape.get(k).copied()?;
            constraints.push(l.clone());
            constraints.push(Linear::constant(n - 1).plus(&l.scale(-1)?)?);
        }
    }
    for cond in conds {
        let Expr::Binary(op, p, q) = cond else {
            continue;
        };
        let (Some(p), Some(q)) = (linear(p, &none), linear(q, &none)) else {
            continue;
        };
        let d = p.plus(&q.scale(-1)?)?;
        match op {
            BinOp::Ge => constraints.push(d),
            BinOp::Gt => constraints.push(d.plus(&Linear::constant(-1))?),
            BinOp::Le => constraints.push(d.scale(-1)?),
            BinOp::Lt => constraints.push(d.scale(-1)?.plus(&Linear::constant(-1))?),
            BinOp::Eq => {
                constraints.push(d.clone());
                constraints.push(d.scale(-1)?);
            }
            _ => {}
        }
    }
    for d in constraints {
        let a = d.coeff(x);
        let mut rest = d.clone();
        rest.terms.remove(&Term::Iter(x.to_string()));
        if rest.mentions(x) {
            // `x` under a quotient: the constraint is not linear in it.
            // Leaving it out only widens what some point reaches, but it
            // would claim too much of what every point does.
            if every {
                return None;
            }
            continue;
        }
        if a == 0 {
            continue;
        }
        let (rmin, rmax) = rest.interval(&b)?;
        // a·x + r >= 0 for some (every) r in [rmin, rmax].
        let need = if every { rmin } else { rmax };
        let (xl, xh) = if a > 0 {
            (ceil_div(-need, a), i64::MAX)
        } else {
            (i64::MIN, floor_div(-need, a))
        };
        lo = lo.max(xl);
        hi = hi.min(xh.saturating_add(1));
    }
    Some((lo, hi.max(lo)))
}

/// The conjuncts of a condition.
fn conjuncts(e: &Expr) -> Vec<&Expr> {
    match e {
        Expr::Binary(BinOp::And, a, b) => {
            let mut v = conjuncts(a);
            v.extend(conjuncts(b));
            v
        }
        _ => vec![e],
    }
}

/// Whether `e` is a literal zero.
fn is_zero(e: &Expr) -> bool {
    matches!(e, Expr::Lit(Value::Float(v), _) if *v == 0.0)
        || matches!(e, Expr::Lit(Value::Int(0), _))
}

fn floor_div(a: i64, b: i64) -> i64 {
    ir::floor_div(a, b)
}

fn ceil_div(a: i64, b: i64) -> i64 {
    -ir::floor_div(-a, b)
}
