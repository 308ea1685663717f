//! Variable substitution (OLLIE §4.2): the traversal iterators `x` of a
//! statement `O(x) = f(x)` replaced by new ones `y = Φ(x)` through an
//! intermediate scope, `T(y) = f(Φ⁻¹(y))` and `O(x) = T(Φ(x))`.
//!
//! Φ is bijective on the integer lattice, drawn from the statement
//! itself: a read subscript `L` of two or more traversal iterators, one
//! of them `x` with coefficient ±1, gives `t = L` in place of `x` (the
//! step of OLLIE's Figure 6 that makes `h + r` an iterator of its own);
//! a traversal iterator `x` read beside another whose coefficient is
//! `d > 1` (a dilation) gives `(x mod d, x / d)` in place of `x`. The
//! image of the box is not a box, so `T` spans its bounding box (OLLIE's
//! boundary relaxing, in the same step): at the extra points `Φ⁻¹(y)`
//! lies outside the original box and `T` holds values no reader uses.
//! [`permute`] is the substitution by a permutation, a scope's layout,
//! which guided derivation applies.
//!
//! Requires an open statement without indirect reads; an `=` one gets its
//! body guarded by the original box (its reads out of bounds would be
//! errors), a reduction skips the points whose reads fall out of bounds.
//! Candidates come from reads' subscripts and from the sides of integer
//! comparisons (a transposed convolution's `th = oh + 1 - kh` is both);
//! a quotient or residue by `d` of one traversal iterator asks for its
//! residues mod `d` too. Guarantees: `O`
//! gets the values it had — `T(Φ(x))` is `f(x)` for every `x` of the box.

use std::collections::HashMap;

use ir::{BinOp, Comprehension, DType, Expr, Reduction, Value};

use super::{Applied, Rule};
use crate::derive::scope::{combine, read, rewrite};
use crate::derive::state::{bounds, fresh_iter, iter_range, range, State, Status};
use crate::derive::subscript::{linear, Linear, Term};

pub struct VariableSubstitution;

impl Rule for VariableSubstitution {
    fn name(&self) -> &'static str {
        "variable substitution"
    }

    fn apply(&self, state: &State, at: usize, out: &mut Vec<Applied>) {
        let c = state.comp(at);
        if state.status[at] != Status::Open || !substitutable(c) {
            return;
        }
        let lets: HashMap<String, Expr> = c.lets.iter().cloned().collect();
        let mut seen: Vec<(String, Linear)> = Vec::new();
        let mut splits: Vec<(String, i64)> = Vec::new();
        for l in forms(&c.body, &lets) {
            let mut affine = l.clone();
            affine.constant = 0;
            // A quotient or residue by d of a single traversal iterator
            // (`t / 2` of a transposed convolution) asks for that
            // iterator's residues mod d.
            for t in l.terms.keys() {
                if let Term::Div(inner, d) | Term::Mod(inner, d) = t {
                    if let [(x, 1)] = inner.iters().collect::<Vec<_>>().as_slice() {
                        if inner.is_affine()
                            && c.indices.iter().any(|n| n == x)
                            && !splits.contains(&(x.to_string(), *d))
                        {
                            splits.push((x.to_string(), *d));
                        }
                    }
                }
            }
            if !affine.is_affine() {
                continue;
            }
            let iters: Vec<(String, i64)> =
                affine.iters().map(|(n, k)| (n.to_string(), k)).collect();
            if iters.len() < 2 || iters.iter().any(|(n, _)| !c.indices.contains(n)) {
                continue;
            }
            for (x, k) in &iters {
                if k.abs() == 1 && !seen.contains(&(x.clone(), affine.clone())) {
                    seen.push((x.clone(), affine.clone()));
                }
                // `x` beside an iterator of coefficient d > 1: a dilation
                // of `x`'s partner, which `x`'s residues mod d undo.
                for (_, d) in &iters {
                    if k.abs() == 1 && d.abs() > 1 && !splits.contains(&(x.clone(), d.abs())) {
                        splits.push((x.clone(), d.abs()));
                    }
                }
            }
        }
        for (x, l) in seen {
            if let Some(a) = shear(state, at, &x, &l) {
                out.push(a);
            }
        }
        for (x, d) in splits {
            if let Some(a) = split(state, at, &x, d) {
                out.push(a);
            }
        }
    }
}

/// Whether `c`'s body may be evaluated at points outside its box: an `=`
/// gets a guard; a reduction skips a point whose taken reads fall out of
/// bounds, under `?:` branches too, so any reduction may.
fn substitutable(c: &Comprehension) -> bool {
    c.op == Reduction::Assign
        || c.body
            .reads()
            .iter()
            .all(|(_, ix)| ix.iter().all(|x| x.reads().is_empty()))
}

/// The linear forms of a body a substitution may be drawn from: its
/// reads' subscripts and the sides of its integer comparisons.
fn forms(e: &Expr, lets: &HashMap<String, Expr>) -> Vec<Linear> {
    let mut out = Vec::new();
    e.walk(&mut |x| match x {
        Expr::Read(_, ix) => out.extend(ix.iter().filter_map(|s| linear(s, lets))),
        Expr::Binary(op, a, b) if op.is_comparison() => {
            out.extend([a, b].into_iter().filter_map(|s| linear(s, lets)));
        }
        _ => {}
    });
    out
}

/// The substitution of traversal iterator `x` by `t = l` (`l` has `x`
/// with coefficient ±1 and no constant).
fn shear(state: &State, at: usize, x: &str, l: &Linear) -> Option<Applied> {
    let c = state.comp(at);
    let (tlo, thi) = l.interval(&bounds(c))?;
    let sign = l.coeff(x);
    let t = fresh_iter(c, "t");
    // x = sign·(t + tlo − rest), rest = l − sign·x, the other iterators
    // shifted to their zero-based selves.
    let mut others: HashMap<String, Linear> = HashMap::new();
    for n in c.indices.iter().filter(|n| n.as_str() != x) {
        let (lo, _) = range(c, n)?;
        others.insert(n.clone(), Linear::iter(n).plus(&Linear::constant(lo))?);
    }
    let mut rest = l.clone();
    rest.terms.remove(&Term::Iter(x.to_string()));
    let rest = rest.substitute(&|n| others.get(n).cloned(), &|_| None)?;
    let x_is = Linear::iter(&t)
        .plus(&Linear::constant(tlo))?
        .plus(&rest.scale(-1)?)?
        .scale(sign)?;
    let mut to = others.clone();
    to.insert(x.to_string(), x_is.clone());
    let extents: Vec<i64> = c
        .indices
        .iter()
        .map(|n| {
            if n == x {
                Some(thi - tlo + 1)
            } else {
                range(c, n).map(|(lo, hi)| hi - lo)
            }
        })
        .collect::<Option<_>>()?;
    let mut reader_subs = Vec::new();
    for n in &c.indices {
        let (lo, _) = range(c, n)?;
        reader_subs.push(if n == x {
            l.clone().plus(&Linear::constant(-tlo))?
        } else {
            Linear::iter(n).plus(&Linear::constant(-lo))?
        });
    }
    let guard = vec![(x_is, range(c, x)?)];
    let what = format!(
        "`{}`: {t} = {} in place of {x}",
        c.tensor,
        ir::print_expr(&state.def, None, &l.to_expr())
    );
    let indices = c
        .indices
        .iter()
        .map(|n| if n == x { t.clone() } else { n.clone() })
        .collect();
    let new_range = vec![(t.clone(), 0, thi - tlo + 1)];
    scoped_with(
        state,
        at,
        &to,
        &guard,
        indices,
        &extents,
        &|n| (n == x).then(|| new_range.clone()),
        &reader_subs,
        what,
    )
}

/// The substitution of traversal iterator `x` by its residue mod `d` and
/// its quotient, in that order.
fn split(state: &State, at: usize, x: &str, d: i64) -> Option<Applied> {
    let c = state.comp(at);
    let (lo, hi) = range(c, x)?;
    let extent = hi - lo;
    if extent <= d {
        return None;
    }
    let q_extent = (extent + d - 1) / d;
    let r = fresh_iter(c, &format!("{x}r"));
    let q = fresh_iter(c, &format!("{x}q"));
    let x_is = Linear::iter(&q)
        .scale(d)?
        .plus(&Linear::iter(&r))?
        .plus(&Linear::constant(lo))?;
    let mut to: HashMap<String, Linear> = HashMap::new();
    for n in c.indices.iter().filter(|n| n.as_str() != x) {
        let (lo, _) = range(c, n)?;
        to.insert(n.clone(), Linear::iter(n).plus(&Linear::constant(lo))?);
    }
    to.insert(x.to_string(), x_is.clone());
    let mut extents = Vec::new();
    let mut reader_subs = Vec::new();
    let none = |_: &str| None;
    for n in &c.indices {
        let (nlo, nhi) = range(c, n)?;
        if n == x {
            extents.extend([d, q_extent]);
            let shifted = Linear::iter(x).plus(&Linear::constant(-lo))?;
            reader_subs.push(shifted.clone().floor_mod(d, &none)?);
            reader_subs.push(shifted.floor_div(d, &none)?);
        } else {
            extents.push(nhi - nlo);
            reader_subs.push(Linear::iter(n).plus(&Linear::constant(-nlo))?);
        }
    }
    let what = format!("`{}`: {x} = {d}·{q} + {r}", c.tensor);
    let guard = vec![(x_is, (lo, hi))];
    let indices: Vec<String> = c
        .indices
        .iter()
        .flat_map(|n| {
            if n == x {
                vec![r.clone(), q.clone()]
            } else {
                vec![n.clone()]
            }
        })
        .collect();
    scoped_with(
        state,
        at,
        &to,
        &guard,
        indices,
        &extents,
        &|n| {
            if n == x {
                Some(vec![(r.clone(), 0, d), (q.clone(), 0, q_extent)])
            } else {
                None
            }
        },
        &reader_subs,
        what,
    )
}

/// A new iterator's name and half-open range.
type NewRange = (String, i64, i64);

/// The two statements of a substitution: the scope `T(y) = f(Φ⁻¹(y))`
/// over `extents` (its iterators `indices`, each replaced traversal
/// iterator's new ones from `replaced`, every other traversal iterator
/// zero-based), and `O(x) = T(reader_subs)` in place of statement `at`.
#[allow(clippy::too_many_arguments)]
fn scoped_with(
    state: &State,
    at: usize,
    to: &HashMap<String, Linear>,
    guard: &[(Linear, (i64, i64))],
    indices: Vec<String>,
    extents: &[i64],
    replaced: &dyn Fn(&str) -> Option<Vec<NewRange>>,
    reader_subs: &[Linear],
    what: String,
) -> Option<Applied> {
    let c = state.comp(at);
    let dtype = state.dtype(&c.tensor)?;
    let mut next = state.clone();
    let t = next.fresh_tensor(dtype, extents);
    let mut scope = c.clone();
    scope.tensor = t.clone();
    scope.indices = indices;
    scope.init = c.op != Reduction::Assign;
    scope.exists.clear();
    let mut ranges = Vec::new();
    for r in &c.ranges {
        match replaced(&r.name) {
            Some(new) => ranges.extend(new.into_iter().map(|(n, lo, hi)| iter_range(&n, lo, hi))),
            None if c.indices.contains(&r.name) => {
                let (lo, hi) = range(c, &r.name)?;
                ranges.push(iter_range(&r.name, 0, hi - lo));
            }
            None => ranges.push(r.clone()),
        }
    }
    scope.ranges = ranges;
    rewrite(&mut scope, to);
    if c.op == Reduction::Assign {
        let cond = guard
            .iter()
            .map(|(l, (lo, hi))| {
                let e = l.to_expr();
                Expr::binary(
                    BinOp::And,
                    Expr::binary(BinOp::Ge, e.clone(), Expr::int(*lo)),
                    Expr::binary(BinOp::Lt, e, Expr::int(*hi)),
                )
            })
            .reduce(|a, b| Expr::binary(BinOp::And, a, b))?;
        let body = std::mem::replace(&mut scope.body, Expr::int(0));
        scope.body = Expr::Select(Box::new(cond), Box::new(body), Box::new(zero(dtype)?));
    }
    let op = combine(c);
    let reader = Comprehension {
        tensor: c.tensor.clone(),
        indices: c.indices.clone(),
        op,
        init: false,
        body: read(&t, reader_subs),
        ranges: c
            .ranges
            .iter()
            .filter(|r| c.indices.contains(&r.name))
            .cloned()
            .collect(),
        lets: Vec::new(),
        exists: Vec::new(),
    };
    next.splice(at, vec![(scope, Status::Open), (reader, Status::Open)]);
    Some(Applied { state: next, what })
}

/// The zero of a numeric type, as a literal.
fn zero(t: DType) -> Option<Expr> {
    if t.is_float() {
        Some(Expr::Lit(Value::Float(0.0), t))
    } else if t.is_int() {
        Some(Expr::Lit(Value::Int(0), t))
    } else {
        None
    }
}

/// The temporary `tensor` with its dimensions in the order `perm` gives
/// (new dimension `k` is old dimension `perm[k]`): its writers' left-hand
/// sides and every read of it permuted alike, so every value stays where
/// its readers look. `None` when `tensor` is no temporary.
pub fn permute(state: &State, tensor: &str, perm: &[usize]) -> Option<State> {
    if !state.is_temp(tensor) {
        return None;
    }
    let shape = state.shape(tensor)?;
    if perm.len() != shape.len() {
        return None;
    }
    let mut next = state.clone();
    let decl = next.def.tensors.iter_mut().find(|t| t.name == tensor)?;
    decl.shape = perm.iter().map(|&k| decl.shape[k].clone()).collect();
    for k in 0..next.statements() {
        let c = next.comp_mut(k);
        if c.tensor == tensor {
            let old = c.indices.clone();
            c.indices = perm.iter().map(|&p| old[p].clone()).collect();
            let order = c.indices.clone();
            c.ranges.sort_by_key(|r| {
                order
                    .iter()
                    .position(|n| *n == r.name)
                    .unwrap_or(usize::MAX)
            });
        }
        let body = std::mem::replace(&mut c.body, Expr::int(0));
        c.body = body.map(&mut |e| match e {
            Expr::Read(t, ix) if t == tensor => {
                Expr::Read(t, perm.iter().map(|&p| ix[p].clone()).collect())
            }
            e => e,
        });
    }
    Some(next)
}
