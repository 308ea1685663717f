//! Output layouts: an output that one elementwise statement computes from
//! a transposed read of a tensor at least as large (FCOS's
//! `cls_score.permute(0, 2, 3, 1).reshape(B, -1, C).sigmoid()`) is stored
//! with its dimensions in the order that read walks them, and handed out
//! as a strided view in its declared order, as PyTorch hands out the
//! result of an elementwise operation on a permuted tensor. The
//! statement's innermost loop then walks both the read and the write
//! along rows, and the transposing copy that would otherwise come first
//! is not made at all.
//!
//! A view that only transposes (`fuse` keeps such a view a copy of its
//! own, since computing through it strides across rows) is substituted
//! into the output's statement first, when that statement is its only
//! reader.
//!
//! The engine applies it to the program it compiles (`engine::compile`)
//! and hands each reordered output out as a view; the program `tessera
//! functionalize` prints and the interpreter runs keeps its layouts.
//!
//! Requires a verified def. An output qualifies when it is no parameter,
//! exactly one top-level `=` statement over its own indices writes it,
//! nothing reads it, and its largest read (no other read as large, none
//! smaller than the output) mentions every iterator of more than one value
//! in an order other than the statement's. Guarantees the
//! same values at the same logical positions: only the order of the
//! output's dimensions (its declaration, the statement's indices and
//! loops) changes, and the returned permutation says how; each
//! substituted view is removed with its declaration.

use std::collections::HashMap;

use ir::{walk_stmts, Comprehension, Def, Expr, Reduction, Stmt, TensorRole};

use crate::fuse::{is_view, substitute};

/// An output stored in another order: dimension `k` of its storage is
/// dimension `perm[k]` of the declared tensor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Permuted {
    pub tensor: String,
    pub perm: Vec<usize>,
}

/// Reorders the qualifying outputs of `def` in place, with `sizes` binding
/// the size symbols; returns each reordered output's permutation.
pub fn permute_outputs(def: &mut Def, sizes: &HashMap<String, i64>) -> Vec<Permuted> {
    let mut writes: HashMap<String, usize> = HashMap::new();
    let mut readers: HashMap<String, usize> = HashMap::new();
    walk_stmts(&def.stmts, &mut |s| {
        for w in s.written() {
            *writes.entry(w.to_string()).or_default() += 1;
        }
        let mut read: Vec<&str> = s.reads();
        read.sort_unstable();
        read.dedup();
        for r in read {
            *readers.entry(r.to_string()).or_default() += 1;
        }
    });
    let elements = |t: &str, def: &Def| -> Option<i64> {
        def.tensor(t)?
            .shape
            .iter()
            .try_fold(1i64, |n, d| n.checked_mul(d.eval_map(sizes).ok()?))
    };
    let mut out = Vec::new();
    for o in def.outputs.clone() {
        let decl_ok = def.tensor(&o).is_some_and(|d| d.role == TensorRole::Output);
        if !decl_ok || writes.get(&o) != Some(&1) || readers.contains_key(&o) {
            continue;
        }
        let Some(k) = def.stmts.iter().position(|s| writes_to(s, &o)) else {
            continue;
        };
        let Stmt::Comp(c) = &def.stmts[k] else {
            continue;
        };
        if !pointwise(c) {
            continue;
        }
        // The transposing views only this statement reads, substituted.
        let mut body = c.body.clone();
        let mut views = Vec::new();
        for (t, _) in c.body.reads() {
            let single = writes.get(t) == Some(&1) && readers.get(t) == Some(&1);
            let temp = def.tensor(t).is_some_and(|d| d.role == TensorRole::Temp);
            if !single || !temp || views.iter().any(|(v, _)| v == t) {
                continue;
            }
            if let Some(j) = def.stmts.iter().position(|s| writes_to(s, t)) {
                if let Stmt::Comp(v) = &def.stmts[j] {
                    if pointwise(v) && is_view(&v.body) {
                        body = substitute(body, v);
                        views.push((t.to_string(), j));
                    }
                }
            }
        }
        let Some(own) = elements(&o, def) else {
            continue;
        };
        let Some(order) = read_order(&body, c, own, &|t| elements(t, def), sizes) else {
            continue;
        };
        let perm: Vec<usize> = order
            .iter()
            .map(|i| c.indices.iter().position(|x| x == i).unwrap_or(0))
            .collect();
        if perm.iter().enumerate().all(|(k, &p)| k == p) {
            continue;
        }
        let Stmt::Comp(c) = &mut def.stmts[k] else {
            continue;
        };
        c.body = body;
        c.ranges = order
            .iter()
            .filter_map(|i| c.ranges.iter().find(|r| &r.name == i).cloned())
            .collect();
        c.indices = order;
        if let Some(d) = def.tensors.iter_mut().find(|d| d.name == o) {
            d.shape = perm.iter().map(|&p| d.shape[p].clone()).collect();
        }
        let mut gone: Vec<usize> = views.iter().map(|(_, j)| *j).collect();
        gone.sort_unstable();
        for j in gone.into_iter().rev() {
            def.stmts.remove(j);
        }
        def.tensors
            .retain(|d| !views.iter().any(|(v, _)| *v == d.name));
        out.push(Permuted { tensor: o, perm });
    }
    out
}

/// Whether `s` is a comprehension writing `t`.
fn writes_to(s: &Stmt, t: &str) -> bool {
    matches!(s, Stmt::Comp(c) if c.tensor == t)
}

/// An `=` over its own indices (each a distinct iterator), without lets.
fn pointwise(c: &Comprehension) -> bool {
    c.op == Reduction::Assign
        && c.lets.is_empty()
        && c.ranges.len() == c.indices.len()
        && c.indices.iter().all(|i| c.range(i).is_some())
}

/// The order in which the largest read of `body` (by elements, at least
/// `own`, and the only one that large) mentions `c`'s iterators, when it
/// mentions every iterator of
/// more than one value, ends on another one than `c`'s innermost, and
/// each subscript mentions at most one iterator; iterators of one value
/// come first.
fn read_order(
    body: &Expr,
    c: &Comprehension,
    own: i64,
    elements: &dyn Fn(&str) -> Option<i64>,
    sizes: &HashMap<String, i64>,
) -> Option<Vec<String>> {
    let reads = body.reads();
    let largest = reads.iter().filter_map(|(t, _)| elements(t)).max()?;
    let mut at_largest = reads.iter().filter(|(t, _)| elements(t) == Some(largest));
    let (_, subs) = at_largest.next()?;
    // Another read as large would walk across its rows instead.
    if largest < own
        || at_largest.next().is_some()
        || subs.iter().any(|s| s.any(&|x| matches!(x, Expr::Read(..))))
    {
        return None;
    }
    let single = |i: &String| {
        c.range(i).is_some_and(|r| {
            matches!((r.lo.eval_map(sizes), r.hi.eval_map(sizes)), (Ok(lo), Ok(hi)) if hi - lo == 1)
        })
    };
    let mut order: Vec<String> = c.indices.iter().filter(|i| single(i)).cloned().collect();
    let fixed = order.len();
    for s in subs.iter() {
        let mut mentioned: Vec<String> = Vec::new();
        s.walk(&mut |x| {
            if let Expr::Iter(i) = x {
                if c.indices.contains(i) && !single(i) && !mentioned.contains(i) {
                    mentioned.push(i.clone());
                }
            }
        });
        match mentioned.as_slice() {
            [] => {}
            [i] if order[fixed..].last() == Some(i) => {}
            [i] if !order.contains(i) => order.push(i.clone()),
            _ => return None,
        }
    }
    let inner = c.indices.iter().rev().find(|i| !single(i))?;
    (order.len() == c.indices.len() && order.last() != Some(inner)).then_some(order)
}
