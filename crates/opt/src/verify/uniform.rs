//! Directions: along which directions each tensor version reads each
//! input, and whether a box is *uniform* (every input read along one
//! direction by both programs), where testing one point proves the box.
//!
//! Inside a box every element of both programs is a sum over one summation
//! set of products of input elements whose indices are affine in the output
//! index `v`: `I_j[M_j v + g_j(s)]` (box propagation keeps floors constant
//! and modulos affine, `boxes.rs`). When every input `j` is read with one
//! linear part `M_j` by every read of both programs (restricted to the
//! dimensions along which the box is wider than one), the difference at `v`
//! is the difference at the corner `v0` with every input variable
//! `I_j[x]` renamed to `I_j[x + M_j (v - v0)]`: a bijection, so one is
//! identically zero exactly when the other is. A uniform box is then
//! decided by its corner alone (Theorem 1 in a form that needs no more
//! points). A box that is not uniform (a flip `A(5 - v)` beside `A(v)`,
//! diagonals `X(i + j)` against `X(j + k)`, a reshape that reads another
//! way) is where a few points can mislead, so the verifier tests it
//! element by element.
//!
//! The directions of a version are a set of `(parameter position, M)`,
//! `M` a matrix from the version's dimensions to the input's, composed
//! along reads (`M_X * R` for a read `X(R v + ...)` of a version `X` that
//! reads the input along `M_X`). An entry is unknown where a subscript is
//! not an affine form; too many directions make the whole set unknown.

use std::collections::BTreeSet;

use super::expr::{Ord, Val};
use super::form::Form;
use super::graph::{covers, Graph, NodeKind};

/// A linear part: rows are the input's dimensions, columns the version's;
/// `None` is an unknown coefficient.
type Matrix = Vec<Vec<Option<i64>>>;

/// The directions of a version; `None` when unknown.
pub(crate) type Directions = Option<BTreeSet<(usize, Matrix)>>;

/// More directions than this per version count as unknown.
const MAX_DIRECTIONS: usize = 256;

/// The directions of every version of `g`, in node order.
pub(crate) fn directions(g: &Graph) -> Vec<Directions> {
    let mut out: Vec<Directions> = Vec::with_capacity(g.nodes.len());
    for node in &g.nodes {
        let d = match &node.kind {
            NodeKind::Input(k) => {
                let r = node.shape.len();
                let identity = (0..r)
                    .map(|a| (0..r).map(|b| Some(i64::from(a == b))).collect())
                    .collect();
                Some(BTreeSet::from([(*k, identity)]))
            }
            NodeKind::Zeros => Some(BTreeSet::new()),
            NodeKind::Comp { comp, prev } => {
                let mut set = Some(BTreeSet::new());
                if comp.accumulate || !covers(comp, &node.shape) {
                    set = union(set, out[*prev].clone());
                }
                comp.body.walk(&mut |v| {
                    if let Val::Read(r) = v {
                        let rows: Matrix = r.subs.iter().map(|s| linear(s, comp.n_lhs)).collect();
                        let composed = out[r.node].as_ref().map(|inner| {
                            inner
                                .iter()
                                .map(|(k, m)| (*k, multiply(m, &rows, comp.n_lhs)))
                                .collect()
                        });
                        set = union(set.take(), composed);
                    }
                });
                set
            }
        };
        out.push(d.filter(|s| s.len() <= MAX_DIRECTIONS));
    }
    out
}

/// Whether box `b` of an output is uniform for both programs, whose
/// output versions have directions `a` and `b_dirs`.
pub(crate) fn uniform(a: &Directions, b_dirs: &Directions, b: &[(i64, i64)]) -> bool {
    let (Some(a), Some(bd)) = (a, b_dirs) else {
        return false;
    };
    let wide: Vec<usize> = (0..b.len()).filter(|&j| b[j].1 - b[j].0 > 1).collect();
    let mut seen: Vec<(usize, Vec<Vec<Option<i64>>>)> = Vec::new();
    for (k, m) in a.iter().chain(bd) {
        let restricted: Vec<Vec<Option<i64>>> = m
            .iter()
            .map(|row| wide.iter().map(|&j| row[j]).collect())
            .collect();
        if restricted.iter().flatten().any(Option::is_none) {
            return false;
        }
        match seen.iter().find(|(j, _)| j == k) {
            Some((_, other)) if *other != restricted => return false,
            Some(_) => {}
            None => seen.push((*k, restricted)),
        }
    }
    true
}

fn union(a: Directions, b: Directions) -> Directions {
    let (mut a, b) = (a?, b?);
    a.extend(b);
    (a.len() <= MAX_DIRECTIONS).then_some(a)
}

/// The linear part of a subscript in the output dimensions `0..n`, inside
/// a box (floors are constant there; a modulo moves with its inner form).
fn linear(s: &Ord, n: usize) -> Vec<Option<i64>> {
    match s {
        Ord::Form(f) => form_linear(f, n),
        other => {
            let mut slots = Vec::new();
            other.slots(&mut slots);
            (0..n)
                .map(|j| if slots.contains(&j) { None } else { Some(0) })
                .collect()
        }
    }
}

fn form_linear(f: &Form, n: usize) -> Vec<Option<i64>> {
    let mut row = vec![Some(0i64); n];
    for &(slot, k) in &f.iters {
        if slot < n {
            row[slot] = row[slot].and_then(|x| x.checked_add(k));
        }
    }
    for (m, k) in &f.mods {
        for (x, y) in row.iter_mut().zip(form_linear(&m.inner, n)) {
            *x = match (*x, y) {
                (Some(a), Some(b)) => b.checked_mul(*k).and_then(|b| a.checked_add(b)),
                _ => None,
            };
        }
    }
    row
}

/// `m * rows`: `m` maps the read version's dimensions to the input's,
/// `rows` (one per read subscript) the reading statement's `n` output
/// dimensions to the read version's.
fn multiply(m: &Matrix, rows: &Matrix, n: usize) -> Matrix {
    m.iter()
        .map(|mrow| {
            (0..n)
                .map(|c| {
                    let mut acc = Some(0i64);
                    for (x, r) in mrow.iter().zip(rows) {
                        let term = match (*x, r[c]) {
                            (Some(0), _) | (_, Some(0)) => Some(0),
                            (Some(a), Some(b)) => a.checked_mul(b),
                            _ => None,
                        };
                        acc = match (acc, term) {
                            (Some(a), Some(t)) => a.checked_add(t),
                            _ => None,
                        };
                    }
                    acc
                })
                .collect()
        })
        .collect()
}
