//! Loop fission of independent reductions: a reduction in a counted loop's
//! body that depends on nothing the loop carries (an LSTM's input
//! projection `x[t] @ w_ih.t()`, attention's `x[:, t] @ w_q.t()`) is
//! computed for every iteration at once before the loop, over one more
//! iterator, the loop index, and the body reads its iteration's slice.
//! One matrix product over all the iterations reads the weights once
//! where the loop read them once per iteration.
//!
//! Requires an emitted def (every temporary written by one statement).
//! Applies to a loop with a literal count and no condition. A body
//! statement is independent when it is a comprehension over constant
//! ranges that starts afresh (`=` or `op=!`) and reads no carried
//! parameter and no tensor of the body that is not independent itself.
//! The statements moved are every independent reduction and the
//! independent statements it reads, transitively, when none of them is
//! yielded and the results of those the loop index reaches, over all the
//! iterations, have at most 2^24 elements. Guarantees the loop's results:
//! a moved statement the index does not reach (a transposed weight) moves
//! out as it is; every other computes, at index `t` of its new first
//! dimension, what it computed in iteration `t`, and every read of it in
//! the body reads that index.

use std::collections::{HashMap, HashSet};

use ir::{Comprehension, Def, Expr, LoopStmt, Reduction, Stmt, Value};

use crate::parallelize::{lift_comp, map_exprs, widen};

/// Hoists the independent reductions of every counted loop of `def`
/// (innermost first); returns how many statements it moved.
pub fn hoist(def: &mut Def) -> usize {
    let mut stmts = std::mem::take(&mut def.stmts);
    let n = hoist_block(&mut stmts, def);
    def.stmts = stmts;
    n
}

fn hoist_block(stmts: &mut Vec<Stmt>, def: &mut Def) -> usize {
    let mut n = 0;
    let mut k = 0;
    while k < stmts.len() {
        let mut moved = Vec::new();
        match &mut stmts[k] {
            Stmt::Loop(l) => {
                n += hoist_block(&mut l.body, def);
                moved = fission(l, def);
            }
            Stmt::If(b) => {
                n += hoist_block(&mut b.then_body, def);
                n += hoist_block(&mut b.else_body, def);
            }
            Stmt::Comp(_) | Stmt::Call(_) => {}
        }
        let len = moved.len();
        n += len;
        stmts.splice(k..k, moved);
        k += len + 1;
    }
    n
}

/// Moves `l`'s independent reductions (and what they read) out of its
/// body; returns them lifted over the loop index, in body order.
fn fission(l: &mut LoopStmt, def: &mut Def) -> Vec<Stmt> {
    if l.cond.is_some() {
        return Vec::new();
    }
    let count = match &l.count {
        Some(Expr::Lit(Value::Int(n), _)) if *n > 0 => *n,
        _ => return Vec::new(),
    };
    let carried: HashSet<&str> = l.carried.iter().map(|c| c.param.as_str()).collect();
    let written: HashSet<&str> = l.body.iter().flat_map(Stmt::written).collect();
    let mut independent: HashMap<&str, &Comprehension> = HashMap::new();
    for s in &l.body {
        let Stmt::Comp(c) = s else { continue };
        let fresh = c.op == Reduction::Assign || c.init;
        let constant = c
            .ranges
            .iter()
            .all(|r| r.lo.as_const().is_some() && r.hi.as_const().is_some());
        let reads_ok = s
            .reads()
            .iter()
            .all(|t| !carried.contains(t) && (!written.contains(t) || independent.contains_key(t)));
        if fresh && constant && reads_ok {
            independent.insert(&c.tensor, c);
        }
    }
    // The reductions, then what they read, transitively.
    let mut moved: HashSet<String> = HashSet::new();
    let mut work: Vec<&Comprehension> = independent
        .values()
        .filter(|c| c.ranges.len() > c.indices.len())
        .copied()
        .collect();
    while let Some(c) = work.pop() {
        if moved.insert(c.tensor.clone()) {
            let reads = Stmt::Comp(c.clone());
            work.extend(
                reads
                    .reads()
                    .iter()
                    .filter_map(|t| independent.get(t).copied()),
            );
        }
    }
    // What the loop index does not reach (a transposed weight, `w.t()`)
    // is the same in every iteration: it moves out as it is, not lifted.
    let mut invariant: HashSet<String> = HashSet::new();
    for s in &l.body {
        let Stmt::Comp(c) = s else { continue };
        if moved.contains(&c.tensor)
            && !mentions(c, &l.index)
            && s.reads()
                .iter()
                .all(|t| !moved.contains(*t) || invariant.contains(*t))
        {
            invariant.insert(c.tensor.clone());
        }
    }
    let lifted_names: HashSet<String> = moved.difference(&invariant).cloned().collect();
    // One iteration's results times the count must stay a modest buffer:
    // a long loop over large products would trade a loop for gigabytes.
    let lifted: i64 = lifted_names
        .iter()
        .filter_map(|t| independent.get(t.as_str()))
        .map(|c| count.saturating_mul(index_points(c)))
        .fold(0, i64::saturating_add);
    if lifted > MAX_LIFTED {
        return Vec::new();
    }
    // Only a comprehension's reads are rewritten to the iteration's slice:
    // a region or call in the body that reads a moved tensor keeps it in.
    let region_reads = l
        .body
        .iter()
        .any(|s| !matches!(s, Stmt::Comp(_)) && s.reads().iter().any(|t| moved.contains(*t)));
    if moved.is_empty() || region_reads || l.yields.iter().any(|y| moved.contains(y)) {
        return Vec::new();
    }
    let no_inits = HashMap::new();
    let mut out = Vec::new();
    let mut body = Vec::new();
    for s in std::mem::take(&mut l.body) {
        match s {
            Stmt::Comp(c) if invariant.contains(&c.tensor) => out.push(Stmt::Comp(c)),
            Stmt::Comp(c) if moved.contains(&c.tensor) => {
                out.push(Stmt::Comp(lift_comp(
                    &c,
                    &l.index,
                    count,
                    &lifted_names,
                    &no_inits,
                )));
                widen(def, &c.tensor, count);
            }
            s => body.push(at_index(s, &l.index, &lifted_names)),
        }
    }
    l.body = body;
    // Declarations follow the order of definition in the printed program,
    // where the moved statements now come before the loop's parameters.
    let (moved_decls, mut rest): (Vec<_>, Vec<_>) = std::mem::take(&mut def.tensors)
        .into_iter()
        .partition(|t| moved.contains(&t.name));
    let at = rest
        .iter()
        .position(|t| carried.contains(t.name.as_str()))
        .unwrap_or(rest.len());
    rest.splice(at..at, moved_decls);
    def.tensors = rest;
    out
}

/// The most elements the moved statements' results may have together, over
/// all the iterations (64 MiB of `float32`).
const MAX_LIFTED: i64 = 1 << 24;

/// Whether `c` mentions scalar `name` (a loop index) anywhere.
fn mentions(c: &Comprehension, name: &str) -> bool {
    let is = |e: &Expr| e.any(&|x| matches!(x, Expr::Sym(s) if s == name));
    is(&c.body) || c.lets.iter().any(|(_, e)| is(e)) || c.exists.iter().any(is)
}

/// How many points `c`'s indices range over (its result's elements).
fn index_points(c: &Comprehension) -> i64 {
    c.indices
        .iter()
        .map(|i| {
            c.range(i)
                .and_then(|r| Some(r.hi.as_const()? - r.lo.as_const()?))
                .unwrap_or(i64::MAX)
        })
        .fold(1, i64::saturating_mul)
}

/// `s` with every read of a tensor of `moved` taking loop index `index`
/// as its first subscript.
fn at_index(s: Stmt, index: &str, moved: &HashSet<String>) -> Stmt {
    let mut map = |e: Expr| match e {
        Expr::Read(t, subs) if moved.contains(&t) => {
            let mut at = vec![Expr::Sym(index.to_string())];
            at.extend(subs);
            Expr::Read(t, at)
        }
        e => e,
    };
    let Stmt::Comp(mut c) = s else { return s };
    map_exprs(&mut c, &mut map);
    Stmt::Comp(c)
}
