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
use super::subscript::linear;
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
