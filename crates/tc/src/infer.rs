//! Range inference (TC §3.1), symbolic in size symbols and scalars.
//!
//! Iterators fixed by `where` are resolved from the start. Then, in rounds,
//! every subscript that mentions exactly one unresolved iterator `x` (with a
//! non-zero coefficient `a`) bounds it: the largest range, starting at 0 or
//! above, for which `a*x + rest` stays inside the dimension for every value
//! of the already-resolved iterators in `rest`. Bounds found in the same
//! round intersect, except that a subscript of the iterator alone (`K(x)`)
//! overrides subscripts that also mention resolved iterators (`I(h+x)`), so
//! a window fixed by `where` over a padded input keeps its full extent and
//! its out-of-bounds points are skipped (DESIGN.md semantics 1). Reads
//! under `?:` branches bound, in rounds of their own, only the iterators the
//! other accesses leave unresolved (TC intersects them with the rest; here a
//! guard's partial range never narrows what the unguarded reads give). Subscripts `e / c` with `e` affine and `c` a positive
//! constant or symbol bound `e` to `0 : c*D`. Size symbols and scalars used
//! as coefficients or offsets are assumed non-negative, as sizes are.
//!
//! Inference never fails silently: it returns every iterator's range, or
//! says which iterators are unconstrained (no subscript bounds them) and
//! which are ambiguous (they only appear together with other unresolved
//! iterators).

use std::collections::{BTreeMap, HashMap};

use ir::{BinOp, Expr, SizeExpr, Value};

use crate::typing::expr_to_size;

/// One tensor access that takes part in inference.
#[derive(Clone, Debug)]
pub struct Access {
    pub dims: Vec<SizeExpr>,
    pub subs: Vec<Expr>,
    /// Printable form for messages, e.g. `I(i + k)`.
    pub text: String,
    /// A read under a `?:` branch: it bounds only iterators that no other
    /// access can bound.
    pub guarded: bool,
}

/// `sum(coef * iterator) + rest`.
#[derive(Clone, Debug, PartialEq)]
pub struct Linear {
    pub coefs: BTreeMap<String, SizeExpr>,
    pub rest: SizeExpr,
}

impl Linear {
    fn constant(rest: SizeExpr) -> Linear {
        Linear {
            coefs: BTreeMap::new(),
            rest,
        }
    }

    fn add(mut self, o: Linear, sign: i64) -> Linear {
        for (k, v) in o.coefs {
            let cur = self
                .coefs
                .remove(&k)
                .unwrap_or_default()
                .add(&v.scale(sign));
            if cur != SizeExpr::zero() {
                self.coefs.insert(k, cur);
            }
        }
        self.rest = self.rest.add(&o.rest.scale(sign));
        self
    }

    fn scale(self, k: &SizeExpr) -> Linear {
        let coefs = self
            .coefs
            .into_iter()
            .map(|(n, c)| (n, c.mul(k)))
            .filter(|(_, c)| *c != SizeExpr::zero())
            .collect();
        Linear {
            coefs,
            rest: self.rest.mul(k),
        }
    }
}

/// The affine form of an integer expression in the iterators, if it has one.
pub fn linear(e: &Expr) -> Option<Linear> {
    match e {
        Expr::Lit(Value::Int(v), _) => Some(Linear::constant(SizeExpr::constant(*v))),
        Expr::Sym(s) => Some(Linear::constant(SizeExpr::sym(s))),
        Expr::Iter(i) => {
            let mut coefs = BTreeMap::new();
            coefs.insert(i.clone(), SizeExpr::constant(1));
            Some(Linear {
                coefs,
                rest: SizeExpr::zero(),
            })
        }
        Expr::Cast(t, x) if t.is_int() => linear(x),
        Expr::Unary(ir::UnOp::Neg, x) => Some(linear(x)?.scale(&SizeExpr::constant(-1))),
        Expr::Binary(BinOp::Add, a, b) => Some(linear(a)?.add(linear(b)?, 1)),
        Expr::Binary(BinOp::Sub, a, b) => Some(linear(a)?.add(linear(b)?, -1)),
        Expr::Binary(BinOp::Mul, a, b) => {
            let (la, lb) = (linear(a)?, linear(b)?);
            if la.coefs.is_empty() {
                Some(lb.scale(&la.rest))
            } else if lb.coefs.is_empty() {
                Some(la.scale(&lb.rest))
            } else {
                None
            }
        }
        Expr::Binary(BinOp::Div | BinOp::Mod, ..) => {
            let s = expr_to_size(e)?;
            Some(Linear::constant(s))
        }
        _ => None,
    }
}

/// A subscript's affine form and the dimension it must fit, after seeing
/// through a floor division by a positive size: `e / c` in `0:D` iff `e` in
/// `0:c*D`.
pub fn bounded_form(sub: &Expr, dim: &SizeExpr) -> Option<(Linear, SizeExpr)> {
    if let Some(l) = linear(sub) {
        return Some((l, dim.clone()));
    }
    if let Expr::Binary(BinOp::Div, a, c) = sub {
        let c = expr_to_size(c)?;
        if c.as_const().is_some_and(|v| v <= 0) {
            return None;
        }
        return Some((linear(a)?, dim.mul(&c)));
    }
    None
}

/// Whether a size is provably non-negative (sizes and scalars are assumed to be).
pub fn nonneg(e: &SizeExpr) -> bool {
    e.terms().all(|(_, c)| c >= 0)
}

/// `max(0, e)`, folded when the sign of `e` is known.
fn clamp0(e: SizeExpr) -> SizeExpr {
    if nonneg(&e) {
        e
    } else if nonneg(&e.neg()) {
        SizeExpr::zero()
    } else {
        e.smax(&SizeExpr::zero())
    }
}

/// `max(a, b)`, folded when the sign of `a - b` is known (sizes being
/// non-negative), so intersected ranges stay readable and an empty one is
/// seen to be empty (`max(0, M):min(M, 2*M)` is `M:M`).
fn max_of(a: &SizeExpr, b: &SizeExpr) -> SizeExpr {
    let d = a.sub(b);
    if nonneg(&d) {
        a.clone()
    } else if nonneg(&d.neg()) {
        b.clone()
    } else {
        a.smax(b)
    }
}

/// `min(a, b)`, folded like [`max_of`].
fn min_of(a: &SizeExpr, b: &SizeExpr) -> SizeExpr {
    let d = a.sub(b);
    if nonneg(&d) {
        b.clone()
    } else if nonneg(&d.neg()) {
        a.clone()
    } else {
        a.smin(b)
    }
}

fn sign_of(c: &SizeExpr) -> i64 {
    match c.as_const() {
        Some(v) => v.signum(),
        None if nonneg(&c.neg()) => -1,
        None => 1,
    }
}

/// The smallest and largest values of `lin.rest + sum(coef * it)` over the
/// resolved iterators (an inclusive interval).
pub fn extent(
    lin: &Linear,
    ranges: &HashMap<String, (SizeExpr, SizeExpr)>,
    skip: Option<&str>,
) -> Option<(SizeExpr, SizeExpr)> {
    let mut lo = lin.rest.clone();
    let mut hi = lin.rest.clone();
    for (it, c) in &lin.coefs {
        if Some(it.as_str()) == skip {
            continue;
        }
        let (rlo, rhi) = ranges.get(it)?;
        let last = rhi.add_const(-1);
        if sign_of(c) >= 0 {
            lo = lo.add(&c.mul(rlo));
            hi = hi.add(&c.mul(&last));
        } else {
            lo = lo.add(&c.mul(&last));
            hi = hi.add(&c.mul(rlo));
        }
    }
    Some((lo, hi))
}

#[derive(Clone, Debug, PartialEq)]
pub enum InferError {
    /// Iterators no subscript bounds.
    Unconstrained(Vec<String>),
    /// Iterators that only appear together in `access`.
    Ambiguous { iters: Vec<String>, access: String },
}

/// Infers the range of every iterator in `iters`.
pub fn infer(
    iters: &[String],
    fixed: &HashMap<String, (SizeExpr, SizeExpr)>,
    accesses: &[Access],
) -> Result<HashMap<String, (SizeExpr, SizeExpr)>, InferError> {
    let mut ranges = fixed.clone();
    let mut with_guarded = false;
    loop {
        // Bounds from subscripts of the iterator alone (`W(f,c,r,s)`) take
        // precedence over bounds from subscripts that also mention resolved
        // iterators (`I(n,c,h+r-1,w+s-1)` with `h` fixed by `where`): that is
        // what makes the padding idiom keep every kernel tap. Reads under a
        // `?:` branch come last, in rounds of their own once the other
        // accesses bound nothing more: a guard usually keeps a branch's read
        // inside its tensor on a part of the range only (`j >= 1 ? A(j-1) :
        // B(j)`), which must not narrow a range the other reads give.
        let mut found: HashMap<String, (SizeExpr, SizeExpr)> = HashMap::new();
        let mut rank: HashMap<String, u8> = HashMap::new();
        for acc in accesses.iter().filter(|a| with_guarded || !a.guarded) {
            for (sub, dim) in acc.subs.iter().zip(&acc.dims) {
                let Some((lin, dim)) = bounded_form(sub, dim) else {
                    continue;
                };
                let unresolved: Vec<&String> = lin
                    .coefs
                    .keys()
                    .filter(|k| !ranges.contains_key(*k))
                    .collect();
                let [x] = unresolved.as_slice() else { continue };
                let x = (*x).clone();
                let a = lin.coefs[&x].clone();
                let Some((rmin, rmax)) = extent(&lin, &ranges, Some(&x)) else {
                    continue;
                };
                let last = dim.add_const(-1);
                let (lo, hi) = if sign_of(&a) > 0 {
                    // a*x + rmin >= 0 and a*x + rmax <= D-1; iterators start
                    // at 0 or above, so a non-negative rmin needs no bound.
                    let lo = if nonneg(&rmin) {
                        SizeExpr::zero()
                    } else {
                        rmin.neg().add(&a).add_const(-1).div(&a)
                    };
                    let hi = last.sub(&rmax).div(&a).add_const(1);
                    (lo, hi)
                } else {
                    let m = a.neg();
                    let lo = rmax.sub(&last).add(&m).add_const(-1).div(&m);
                    let hi = rmin.div(&m).add_const(1);
                    (lo, hi)
                };
                let lo = clamp0(lo);
                // Lower ranks take precedence; equal ranks intersect.
                let r = 2 * u8::from(acc.guarded) + u8::from(lin.coefs.len() != 1);
                match rank.get(&x) {
                    Some(&best) if best < r => continue,
                    Some(&best) if best > r => {
                        found.remove(&x);
                    }
                    _ => {}
                }
                rank.insert(x.clone(), r);
                let e = found.entry(x).or_insert((lo.clone(), hi.clone()));
                *e = (max_of(&e.0, &lo), min_of(&e.1, &hi));
            }
        }
        if found.is_empty() {
            if with_guarded {
                break;
            }
            with_guarded = true;
            continue;
        }
        with_guarded = false;
        ranges.extend(found);
    }
    let missing: Vec<String> = iters
        .iter()
        .filter(|i| !ranges.contains_key(*i))
        .cloned()
        .collect();
    if missing.is_empty() {
        return Ok(ranges);
    }
    for acc in accesses {
        for (sub, dim) in acc.subs.iter().zip(&acc.dims) {
            let Some((lin, _)) = bounded_form(sub, dim) else {
                continue;
            };
            let together: Vec<String> = lin
                .coefs
                .keys()
                .filter(|k| missing.contains(k))
                .cloned()
                .collect();
            if together.len() > 1 {
                return Err(InferError::Ambiguous {
                    iters: together,
                    access: acc.text.clone(),
                });
            }
        }
    }
    Err(InferError::Unconstrained(missing))
}
