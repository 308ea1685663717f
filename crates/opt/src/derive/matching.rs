//! The derivation's view of operator matching: `ir::opmatch`'s iterator
//! mapping table asked about a state's statement, and the layout fixes a
//! mismatch calls for (OLLIE §5.2's guided derivation: "for the iterator
//! mismatches, OLLIE transforms data layouts").
//!
//! [`exact`] lists the operators a statement runs as: a matmul (batched
//! over the iterators that do not nest, which the library loops over)
//! whose reads all lie in bounds (the library reads no padding), a
//! convolution, a transposed convolution, a G2BMM or GBMM, an elementwise
//! operator. [`fixes`] turns a matmul's layout mismatches into states
//! where they are gone: a temporary's dimensions permuted in place (a
//! substitution by a permutation), an input read through a copy in the
//! wanted layout (an eOperator, evaluated at load for weights), all at
//! once or only the free ones (temporaries and inputs known at load).
//!
//! Requires statements of a [`State`]. Guarantees: fixes change only
//! layouts, so every value keeps its meaning; the copies they add are
//! instantiated eOperators.

use std::collections::HashMap;

use ir::opmatch::{self, Mismatch, Table};
use ir::{Comprehension, Expr, Reduction};

use super::rules::substitute_permute as permute;
use super::state::{bounds, iter_range, Operator, State, Status};
use super::subscript::{linear, Linear, Term};
use super::Step;

/// The operators statement `at` runs as, exactly.
pub fn exact(state: &State, at: usize) -> Vec<Operator> {
    let c = state.comp(at);
    let Ok(t) = opmatch::table(&state.def, c) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (op, shape) in opmatch::match_table(&t) {
        // The library reads no padding: a matmul reading out of bounds is
        // no library matmul.
        let runs = op != Operator::Matmul || (in_bounds(state, c) && c.op == Reduction::Add);
        if shape.is_ok() && runs {
            out.push(op);
        }
    }
    out
}

/// Whether every read of `c` lies in its tensor at every point of the box.
fn in_bounds(state: &State, c: &Comprehension) -> bool {
    let lets: HashMap<String, Expr> = c.lets.iter().cloned().collect();
    let b = bounds(c);
    c.body.reads().iter().all(|(t, ix)| {
        let Some(shape) = state.shape(t) else {
            return false;
        };
        ix.iter().zip(&shape).all(|(e, &n)| {
            linear(e, &lets)
                .and_then(|l| l.interval(&b))
                .is_some_and(|(lo, hi)| lo >= 0 && hi < n)
        })
    })
}

/// The states where statement `at`'s matmul layout mismatches are fixed,
/// with the steps.
pub fn fixes(state: &State, at: usize) -> Vec<(State, Vec<Step>)> {
    let c = state.comp(at);
    if state.status[at] != Status::Open || c.op != Reduction::Add {
        return Vec::new();
    }
    let Ok(t) = opmatch::table(&state.def, c) else {
        return Vec::new();
    };
    let mismatches = match opmatch::matmul(&t) {
        Ok(shape) => shape.layout,
        Err(ms) => ms,
    };
    if mismatches.is_empty()
        || !mismatches
            .iter()
            .all(|m| matches!(m, Mismatch::Layout { .. }))
    {
        return Vec::new();
    }
    let Some(orders) = canonical(&t) else {
        return Vec::new();
    };
    let mut wrong: Vec<&str> = Vec::new();
    for m in &mismatches {
        if let Mismatch::Layout { tensor, .. } = m {
            if !wrong.contains(&tensor.as_str()) {
                wrong.push(tensor);
            }
        }
    }
    let free = |name: &str| {
        state.is_temp(name)
            && state
                .writers(name)
                .iter()
                .all(|&w| state.status[w] == Status::Open || w == at)
    };
    let mut out = Vec::new();
    for only_free in [false, true] {
        let mut s = state.clone();
        let mut steps = Vec::new();
        let mut at = at;
        let mut ok = true;
        for name in &wrong {
            let Some(order) = orders.get(*name) else {
                ok = false;
                break;
            };
            if free(name) {
                match permute(&s, name, order) {
                    Some(n) => s = n,
                    None => {
                        ok = false;
                        break;
                    }
                }
                steps.push(Step {
                    rule: "variable substitution",
                    what: format!("`{name}`'s dimensions as {order:?} (its layout)"),
                    after: std::sync::Arc::new(s.clone()),
                });
            } else if !only_free {
                match copy(&s, at, name, order) {
                    Some(n) => s = n,
                    None => {
                        ok = false;
                        break;
                    }
                }
                at += 1;
                steps.push(Step {
                    rule: "eOperator generation",
                    what: format!("`{name}` copied with its dimensions as {order:?}"),
                    after: std::sync::Arc::new(s.clone()),
                });
            }
        }
        if ok && !steps.is_empty() && !out.iter().any(|(o, _): &(State, _)| *o == s) {
            out.push((s, steps));
        }
    }
    out
}

/// Every tensor's dimension order that makes the matmul's groups nest:
/// the output as (batch, M, N), the first input as (batch, M, K), the
/// second as (batch, K, N), each group's iterators in the order of a
/// tensor that has them. `None` when a dimension holds iterators of two
/// groups or none of a group's.
fn canonical(t: &Table) -> Option<HashMap<String, Vec<usize>>> {
    if t.inputs.len() != 2 {
        return None;
    }
    let accesses = [&t.output, &t.inputs[0], &t.inputs[1]];
    // Group rank per tensor position: batch 0, then the two others.
    let rank = |g: &opmatch::Group, tensor: usize| -> Option<usize> {
        let key = (g.output, g.inputs[0], g.inputs[1]);
        let r = match (tensor, key) {
            (_, (true, true, true)) => 0,
            (0, (true, true, false)) | (1, (true, true, false)) | (2, (false, true, true)) => 1,
            (0, (true, false, true)) | (1, (false, true, true)) | (2, (true, false, true)) => 2,
            _ => return None,
        };
        Some(r)
    };
    // Each iterator's place within its group: its dimension's position in
    // the first tensor (output, first input, second input) that has it.
    let place = |iter: &str| -> usize {
        let source = match t.group(iter) {
            g if g.output && g.inputs[0] && !g.inputs[1] => 1,
            g if !g.output && g.inputs[0] && g.inputs[1] => 1,
            g if g.output && !g.inputs[0] && g.inputs[1] => 2,
            _ => 0,
        };
        accesses[source].dims_of(iter).first().copied().unwrap_or(0)
    };
    let mut out = HashMap::new();
    for (k, a) in accesses.iter().enumerate() {
        let mut keys = Vec::new();
        for (d, sub) in a.dims.iter().enumerate() {
            let iters: Vec<&str> = sub
                .inner()
                .terms
                .iter()
                .map(|(n, _)| n.as_str())
                .filter(|n| t.extent(n).is_some_and(|e| e > 1))
                .collect();
            let key = match iters.as_slice() {
                [] => (0, 0),
                [x] => (rank(&t.group(x), k)?, place(x)),
                _ => return None,
            };
            keys.push((key, d));
        }
        keys.sort();
        out.insert(a.tensor.clone(), keys.into_iter().map(|(_, d)| d).collect());
    }
    Some(out)
}

/// Input `name` of statement `at` read through a copy whose dimension `k`
/// is `name`'s dimension `order[k]`, the copy inserted before `at` as an
/// instantiated eOperator.
fn copy(state: &State, at: usize, name: &str, order: &[usize]) -> Option<State> {
    let shape = state.shape(name)?;
    let dtype = state.dtype(name)?;
    let mut next = state.clone();
    let new_shape: Vec<i64> = order.iter().map(|&d| shape[d]).collect();
    let t = next.fresh_tensor(dtype, &new_shape);
    let iters: Vec<String> = (0..shape.len()).map(|d| format!("i{d}")).collect();
    let stmt = Comprehension {
        tensor: t.clone(),
        indices: order.iter().map(|&d| iters[d].clone()).collect(),
        op: Reduction::Assign,
        init: false,
        body: Expr::Read(
            name.to_string(),
            iters.iter().map(|n| Expr::Iter(n.clone())).collect(),
        ),
        ranges: order
            .iter()
            .map(|&d| iter_range(&iters[d], 0, shape[d]))
            .collect(),
        lets: Vec::new(),
        exists: Vec::new(),
    };
    let c = next.comp_mut(at);
    let body = std::mem::replace(&mut c.body, Expr::int(0));
    c.body = body.map(&mut |e| match e {
        Expr::Read(x, ix) if x == name => {
            Expr::Read(t.clone(), order.iter().map(|&d| ix[d].clone()).collect())
        }
        e => e,
    });
    next.insert(at, stmt, Status::EOperator);
    Some(next)
}

/// The state where statement `at`'s reads at `d·q + r` are made through
/// copies split into quotient and residue, when that makes the statement a
/// band product (G2BMM or GBMM) exactly, with the steps; empty otherwise.
pub fn split_fixes(state: &State, at: usize) -> Vec<(State, Vec<Step>)> {
    let c = state.comp(at);
    if state.status[at] != Status::Open || c.op != Reduction::Add {
        return Vec::new();
    }
    let lets: HashMap<String, Expr> = c.lets.iter().cloned().collect();
    let b = bounds(c);
    let reads = c.body.reads();
    let mut s = state.clone();
    let mut at = at;
    let mut steps = Vec::new();
    for (name, ix) in &reads {
        // A tensor read twice would need both reads split alike.
        if reads.iter().filter(|(t, _)| t == name).count() != 1 {
            continue;
        }
        let Some(shape) = state.shape(name) else {
            continue;
        };
        let split = ix.iter().enumerate().find_map(|(dim, e)| {
            let l = linear(e, &lets)?;
            let (r, d) = residue(&l, &b)?;
            (shape[dim] % d == 0).then_some((dim, r, d, l))
        });
        let Some((dim, r, d, l)) = split else {
            continue;
        };
        // The read's quotient: (l - r) / d, exact by `residue`.
        let quotient = Linear::iter(&r)
            .scale(-1)
            .and_then(|minus_r| l.plus(&minus_r))
            .and_then(|q| exact_div(q, d));
        let (Some(next), Some(quotient)) = (split_copy(&s, at, name, dim, d), quotient) else {
            return Vec::new();
        };
        s = next;
        at += 1;
        let copy = s.comp(at - 1).tensor.clone();
        let c = s.comp_mut(at);
        let body = std::mem::replace(&mut c.body, Expr::int(0));
        c.body = body.map(&mut |e| match e {
            Expr::Read(x, mut ix) if x == *name => {
                ix.splice(dim..=dim, [quotient.to_expr(), Expr::Iter(r.clone())]);
                Expr::Read(copy.clone(), ix)
            }
            e => e,
        });
        steps.push(Step {
            rule: "eOperator generation",
            what: format!("`{name}` copied with dimension {dim} split into quotient and residue of {d} (a reshape)"),
            after: std::sync::Arc::new(s.clone()),
        });
    }
    let band = exact(&s, at)
        .into_iter()
        .any(|op| matches!(op, Operator::G2bmm | Operator::Gbmm));
    if steps.is_empty() || !band {
        return Vec::new();
    }
    vec![(s, steps)]
}

/// The residue iterator `r` and its extent `d > 1` when `l` is `d·q + r`
/// for an affine `q` of some iterator: `r` has coefficient 1 and range
/// `0..d`, and every other coefficient and the constant are multiples of
/// `d`.
fn residue(l: &Linear, b: &dyn Fn(&str) -> Option<(i64, i64)>) -> Option<(String, i64)> {
    if !l.is_affine() || l.terms.len() < 2 {
        return None;
    }
    l.iters().find_map(|(r, c)| {
        let (lo, hi) = b(r)?;
        let d = hi - lo + 1;
        let rest_divisible = l.iters().all(|(v, k)| v == r || k % d == 0) && l.constant % d == 0;
        (c == 1 && lo == 0 && d > 1 && rest_divisible).then(|| (r.to_string(), d))
    })
}

/// `l / d` for a form whose coefficients and constant `d` divides.
fn exact_div(l: Linear, d: i64) -> Option<Linear> {
    let mut out = Linear::constant(l.constant / d);
    for (t, c) in l.terms {
        let Term::Iter(v) = t else { return None };
        out = out.plus(&Linear::iter(&v).scale(c / d)?)?;
    }
    Some(out)
}

/// Input `name` of statement `at` copied with dimension `dim` split into
/// its quotient and residue of `d` (which divides it), inserted before
/// `at` as an instantiated eOperator; the reads are left to the caller.
fn split_copy(state: &State, at: usize, name: &str, dim: usize, d: i64) -> Option<State> {
    let shape = state.shape(name)?;
    let dtype = state.dtype(name)?;
    let mut next = state.clone();
    let mut new_shape = shape.clone();
    new_shape.splice(dim..=dim, [shape[dim] / d, d]);
    let t = next.fresh_tensor(dtype, &new_shape);
    let iters: Vec<String> = (0..new_shape.len()).map(|k| format!("i{k}")).collect();
    let mut source: Vec<Expr> = Vec::new();
    for k in 0..shape.len() {
        source.push(match k.cmp(&dim) {
            std::cmp::Ordering::Less => Expr::Iter(iters[k].clone()),
            std::cmp::Ordering::Equal => Linear::iter(&iters[dim])
                .scale(d)?
                .plus(&Linear::iter(&iters[dim + 1]))?
                .to_expr(),
            std::cmp::Ordering::Greater => Expr::Iter(iters[k + 1].clone()),
        });
    }
    let stmt = Comprehension {
        tensor: t,
        indices: iters.clone(),
        op: Reduction::Assign,
        init: false,
        body: Expr::Read(name.to_string(), source),
        ranges: iters
            .iter()
            .zip(&new_shape)
            .map(|(n, &e)| iter_range(n, 0, e))
            .collect(),
        lets: Vec::new(),
        exists: Vec::new(),
    };
    next.insert(at, stmt, Status::EOperator);
    Some(next)
}
