//! `solve`: removes an index that an equality among a block's constraints
//! determines, so that the block iterates only over the points that run.
//!
//! Lowering turns a read at `(e) / d` or `(e) % d` into an index of its own
//! with constraints that tie it to `e`; when a comprehension reads both,
//! and the remainder's dimension has room for one value only (a tensor a
//! derivation split by parity, then cut to the live residue), the
//! constraints hold `e - d·q - r == 0` as a pair of opposite inequalities.
//! A block over a transposed convolution's taps then visits every
//! (output, tap, quotient) triple and runs one in sixteen. When some index
//! `x` of such an equality has coefficient ±1, `x` is the rest of the
//! equality's value: the pass substitutes it everywhere the block names it
//! (constraints, views' accesses, `index` statements, the affine forms of
//! its child blocks' passed indices), drops it from the indices, and keeps
//! its range as two constraints. Of several candidates it removes the one
//! the block writes through no view (a reduction index), then the one of
//! largest range.
//!
//! Requires: a verified kernel whose root steps have only indices of their
//! own (run it right after `inline`). Guarantees: the same results (the
//! points that run map one to one onto the old points that ran, each with
//! the same index values), a verified kernel; blocks without such an
//! equality are unchanged.

use crate::pass::rewrite_each_block;
use crate::{Affine, Block, Pass, RefDir, Target};

#[derive(Debug)]
pub struct Solve;

impl Pass for Solve {
    fn name(&self) -> &'static str {
        "solve"
    }

    fn run(&self, root: &mut Block, _target: &Target) -> Result<(), String> {
        rewrite_each_block(root, |b, check| {
            let old = b.clone();
            while solve_one(b) {}
            if check.verify(b).is_err() {
                *b = old;
            }
        });
        Ok(())
    }
}

/// Removes one index an equality determines; whether there was one.
fn solve_one(b: &mut Block) -> bool {
    let Some((x, value)) = equality(b) else {
        return false;
    };
    let Some(pos) = b.idxs.iter().position(|i| i.name == x) else {
        return false;
    };
    let range = b.idxs[pos].range as i64;
    b.idxs.remove(pos);
    let sub = |n: &str| (n == x).then(|| value.clone());
    for c in &mut b.constraints {
        *c = c.subst(&sub);
    }
    b.constraints.push(value.clone());
    b.constraints.push(Affine::constant(range - 1).sub(&value));
    // The equality itself is now `0 >= 0`, as is any other constraint the
    // substitution settled: a constraint with no index that holds says
    // nothing.
    b.constraints
        .retain(|c| !(c.is_constant() && c.constant >= 0));
    for r in &mut b.refs {
        for a in &mut r.access {
            *a = a.subst(&sub);
        }
    }
    b.subst_in_stmts(&sub);
    true
}

/// An index of `b` that a pair of opposite constraints determines, and its
/// value as an affine form of the other indices.
fn equality(b: &Block) -> Option<(String, Affine)> {
    let own = |n: &str| {
        b.idxs
            .iter()
            .find(|i| i.name == n)
            .filter(|i| i.affine.is_none() && i.range > 1)
    };
    let written: Vec<&str> = b
        .refs
        .iter()
        .filter(|r| matches!(r.dir, RefDir::Out | RefDir::InOut))
        .flat_map(|r| r.access.iter().flat_map(|a| a.terms.keys()))
        .map(String::as_str)
        .collect();
    let mut best: Option<(bool, u64, String, Affine)> = None;
    for (k, e) in b.constraints.iter().enumerate() {
        let opposite = b.constraints[k + 1..]
            .iter()
            .any(|f| e.add(f) == Affine::constant(0));
        if !opposite || e.terms.is_empty() {
            continue;
        }
        for (n, &coef) in &e.terms {
            let Some(ix) = own(n) else { continue };
            if coef.abs() != 1 {
                continue;
            }
            // e = coef·x + rest = 0, so x = -coef·rest (coef is ±1).
            let mut rest = e.clone();
            rest.terms.remove(n);
            let value = rest.scale(-coef);
            let key = (!written.contains(&n.as_str()), ix.range);
            if best.as_ref().is_none_or(|(w, r, _, _)| key > (*w, *r)) {
                best = Some((key.0, key.1, n.clone(), value));
            }
        }
    }
    best.map(|(_, _, n, v)| (n, v))
}
