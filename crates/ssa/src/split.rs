//! Index-set splitting of selects: an elementwise statement whose `?:`s
//! compare one of its iterators with constants (an in-place update of a
//! slice, `boxes[..., 2:] = ...`, fused into the statement that reads it;
//! a channel swap) is split at those constants into statements over the
//! sub-ranges of that iterator, and each is simplified over its own box,
//! where the comparisons are decided. Every point then computes only its
//! own branch, and the reads that only one branch made (`loc(i2 - 2)`
//! under `i2 >= 2`) are affine over the piece's box instead of clamped
//! gathers that the C compiler does not vectorize.
//!
//! The pieces write one tensor from several statements, which TC's shape
//! inference does not read back (a temporary's shape comes from its first
//! statement), so this runs on the program being compiled
//! (`engine::compile`), not on the one `tessera functionalize` prints and
//! the interpreter runs.
//!
//! Requires a verified block. A statement qualifies when it is an `=` over
//! its own indices with constant ranges and without lets, writes a tensor
//! no other statement of the block writes, splits into at most
//! [`MAX_PIECES`] pieces, and every piece has fewer `?:`s than the
//! statement had. Guarantees the same tensor: the pieces' boxes partition
//! the statement's, and each piece computes the statement's body at its
//! points (simplification folds only conditions its box decides).

use std::collections::HashMap;

use ir::{BinOp, Comprehension, Expr, Reduction, SizeExpr, Stmt, Value};

use crate::simplify::{box_of, flip, simplify};

/// The most statements one statement is split into.
pub const MAX_PIECES: usize = 4;

/// Splits the qualifying statements of `stmts` in place; returns how many
/// statements it split.
pub fn split_selects(stmts: &mut Vec<Stmt>) -> usize {
    let mut writes: HashMap<String, usize> = HashMap::new();
    for s in stmts.iter() {
        for t in s.written() {
            *writes.entry(t.to_string()).or_default() += 1;
        }
    }
    let mut split = 0;
    let mut out = Vec::with_capacity(stmts.len());
    for s in std::mem::take(stmts) {
        match s {
            Stmt::Comp(c) if writes.get(&c.tensor) == Some(&1) => match pieces(&c) {
                Some(p) => {
                    split += 1;
                    out.extend(p.into_iter().map(Stmt::Comp));
                }
                None => out.push(Stmt::Comp(c)),
            },
            s => out.push(s),
        }
    }
    *stmts = out;
    split
}

/// `c` split on the iterator its selects compare with constants, when
/// every piece loses a select.
fn pieces(c: &Comprehension) -> Option<Vec<Comprehension>> {
    if c.op != Reduction::Assign
        || !c.lets.is_empty()
        || !c.exists.is_empty()
        || c.ranges.len() != c.indices.len()
    {
        return None;
    }
    let b = box_of(c);
    if b.len() != c.ranges.len() {
        return None;
    }
    let mut cuts: Vec<(String, i64)> = Vec::new();
    c.body.walk(&mut |x| {
        if let Expr::Select(cond, _, _) = x {
            cond.walk(&mut |a| cuts.extend(cut(a)));
        }
    });
    // The first iterator compared: one split per statement.
    let (it, _) = cuts.first()?.clone();
    let (lo, hi) = b[&it];
    let mut at: Vec<i64> = cuts
        .iter()
        .filter(|(i, k)| *i == it && lo < *k && *k <= hi)
        .map(|(_, k)| *k)
        .collect();
    at.sort_unstable();
    at.dedup();
    if at.is_empty() || at.len() + 1 > MAX_PIECES {
        return None;
    }
    let selects = |e: &Expr| {
        let mut n = 0;
        e.walk(&mut |x| n += usize::from(matches!(x, Expr::Select(..))));
        n
    };
    let before = selects(&c.body);
    let bounds: Vec<i64> = std::iter::once(lo)
        .chain(at)
        .chain(std::iter::once(hi + 1))
        .collect();
    let mut out = Vec::new();
    for w in bounds.windows(2) {
        let mut p = c.clone();
        let r = p.ranges.iter_mut().find(|r| r.name == it)?;
        r.lo = SizeExpr::constant(w[0]);
        r.hi = SizeExpr::constant(w[1]);
        let body = std::mem::replace(&mut p.body, Expr::int(0));
        p.body = simplify(body, &box_of(&p));
        if selects(&p.body) >= before {
            return None;
        }
        out.push(p);
    }
    Some(out)
}

/// Where comparison `a` of an iterator with a constant changes its value:
/// the first value of the iterator on its other side (both sides of an
/// equality).
fn cut(a: &Expr) -> Vec<(String, i64)> {
    let Expr::Binary(op, x, y) = a else {
        return Vec::new();
    };
    let (it, k, op) = match (&**x, &**y) {
        (Expr::Iter(i), Expr::Lit(Value::Int(k), _)) => (i, *k, *op),
        (Expr::Lit(Value::Int(k), _), Expr::Iter(i)) => (i, *k, flip(*op)),
        _ => return Vec::new(),
    };
    let at = match op {
        BinOp::Lt | BinOp::Ge => vec![k],
        BinOp::Le | BinOp::Gt => vec![k.saturating_add(1)],
        BinOp::Eq | BinOp::Ne => vec![k, k.saturating_add(1)],
        _ => Vec::new(),
    };
    at.into_iter().map(|k| (it.clone(), k)).collect()
}
