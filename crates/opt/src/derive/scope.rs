//! Building scopes: the comprehension edits several rules share (a
//! statement's iterators shifted to start at zero, a read of a scope's
//! tensor at given subscripts, a new scope appended to a state).
//!
//! Requires comprehensions of a [`State`]. Guarantees: a shifted
//! statement computes the same values at the shifted points, and the
//! comprehensions built here pass `ir::verify_program` when their parts
//! do.

use std::collections::HashMap;

use ir::{Comprehension, Expr, Reduction};

use super::state::{bounds, iter_range, range};
use super::subscript::{substitute, Linear};

/// `c`'s iterators in `names` replaced by `name + lo` and their ranges
/// shifted to start at 0 (the same values at the shifted points): a
/// scope's left-hand side indexes its tensor from 0.
pub fn zero_based(c: &Comprehension, names: &[String]) -> Comprehension {
    let mut to: HashMap<String, Linear> = HashMap::new();
    let mut out = c.clone();
    for r in &mut out.ranges {
        if !names.contains(&r.name) {
            continue;
        }
        let Some((lo, hi)) = range(c, &r.name) else {
            continue;
        };
        if lo != 0 {
            to.insert(
                r.name.clone(),
                Linear::iter(&r.name)
                    .plus(&Linear::constant(lo))
                    .unwrap_or_default(),
            );
            *r = iter_range(&r.name, 0, hi - lo);
        }
    }
    rewrite(&mut out, &to);
    out
}

/// Applies an iterator substitution to `c`'s body and lets, simplifying
/// subscripts over `c`'s (new) ranges.
pub fn rewrite(c: &mut Comprehension, to: &HashMap<String, Linear>) {
    let snapshot = c.clone();
    let b = bounds(&snapshot);
    let body = std::mem::replace(&mut c.body, Expr::int(0));
    c.body = substitute(body, to, &b);
    for (_, e) in &mut c.lets {
        let old = std::mem::replace(e, Expr::int(0));
        *e = substitute(old, to, &b);
    }
}

/// A read of `tensor` at the given subscripts.
pub fn read(tensor: &str, subscripts: &[Linear]) -> Expr {
    Expr::Read(
        tensor.to_string(),
        subscripts.iter().map(Linear::to_expr).collect(),
    )
}

/// How a statement reading a scope combines it into `c`'s tensor (never
/// initializing): a scope computed whole (`op=!` or `=`) is assigned; one
/// accumulating onto earlier values accumulates.
pub fn combine(c: &Comprehension) -> Reduction {
    if c.init || c.op == Reduction::Assign {
        Reduction::Assign
    } else {
        c.op
    }
}
