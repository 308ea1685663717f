//! Index simplification over an iteration box: rewrites the subscripts and
//! the conditions of a comprehension with what the ranges of its iterators
//! prove.
//!
//! A view chain composes index maps, and a reshape of a reshape (or of a
//! permutation) goes through a flat row-major offset: `(i0 * 1728 + i1 *
//! 64 + i2) / 64 % 27`. Over the box, most of those divisions and
//! remainders are exact: a floor quotient `(q * d + r) / d` with `r` in
//! `[0, d)` is `q`, a remainder `(q * m + r) % m` with `r` in `[0, m)` is
//! `r`, and `(g * x + r) / d` with `g` dividing `d` and `r` in `[0, g)` is
//! `x / (d / g)`. Simplified, a view of a reshape reads through affine
//! subscripts (fusion may substitute it anywhere, lowering proves it
//! directly), and what stays a division divides an outer iterator, not a
//! flat offset. A `?:` whose condition the box decides (an Assign's select
//! read at channels it never writes) is replaced by the branch it takes.
//!
//! Requires integer subscripts of `int64` (the verifier's rule) and
//! constant ranges (a traced def's). Guarantees the same value at every
//! point of the box: only floor division and remainder by positive
//! constants are rewritten, by identities that hold for every integer,
//! given the ranges of the terms, and only conditions proved constant over
//! the box are folded.

use std::collections::HashMap;

use ir::{BinOp, Builtin, Comprehension, DType, Expr, Stmt, UnOp, Value};

/// The smallest and largest value of each iterator of one box.
pub type Ranges = HashMap<String, (i64, i64)>;

/// The box of `c`, when its ranges are constant.
pub fn box_of(c: &Comprehension) -> Ranges {
    c.ranges
        .iter()
        .filter_map(|r| Some((r.name.clone(), (r.lo.as_const()?, r.hi.as_const()? - 1))))
        .collect()
}

/// Simplifies every comprehension of `stmts` (regions included).
pub fn simplify_stmts(stmts: &mut [Stmt]) {
    for s in stmts {
        match s {
            Stmt::Comp(c) => {
                let b = box_of(c);
                let body = std::mem::replace(&mut c.body, Expr::int(0));
                c.body = simplify(body, &b);
                for (_, e) in &mut c.lets {
                    *e = simplify(std::mem::replace(e, Expr::int(0)), &b);
                }
            }
            Stmt::Loop(l) => simplify_stmts(&mut l.body),
            Stmt::If(b) => {
                simplify_stmts(&mut b.then_body);
                simplify_stmts(&mut b.else_body);
            }
            Stmt::Call(_) => {}
        }
    }
}

/// `e` with its subscripts simplified and the `?:`s the box decides
/// folded; each branch of the others is simplified over the part of the
/// box where it is taken (when the condition bounds one iterator).
pub fn simplify(e: Expr, b: &Ranges) -> Expr {
    rewrite(e, b, &mut |x, _| x)
}

/// `e` rewritten bottom-up by `f`, which sees each node with the box of
/// its position (narrowed in a `?:`'s branches), then simplified as
/// [`simplify`] does.
pub fn rewrite(e: Expr, b: &Ranges, f: &mut dyn FnMut(Expr, &Ranges) -> Expr) -> Expr {
    let bx = |a: Box<Expr>, f: &mut dyn FnMut(Expr, &Ranges) -> Expr| Box::new(rewrite(*a, b, f));
    let e = match e {
        Expr::Select(c, then, other) => {
            let c = rewrite(*c, b, f);
            match decide(&c, b) {
                Some(true) => return rewrite(*then, b, f),
                Some(false) => return rewrite(*other, b, f),
                None => {
                    let c = at_edge(c, b);
                    let (bt, bo) = (narrow(&c, b, true), narrow(&c, b, false));
                    let then = rewrite(*then, &bt, f);
                    let other = rewrite(*other, &bo, f);
                    Expr::Select(Box::new(c), Box::new(then), Box::new(other))
                }
            }
        }
        Expr::Read(t, subs) => Expr::Read(
            t,
            subs.into_iter()
                .map(|s| index(rewrite(s, b, f), b))
                .collect(),
        ),
        Expr::Unary(op, a) => Expr::Unary(op, bx(a, f)),
        Expr::Cast(t, a) => Expr::Cast(t, bx(a, f)),
        Expr::Binary(op, x, y) => {
            let x = bx(x, f);
            let y = bx(y, f);
            // Integer arithmetic on two literals is one literal, as the TC
            // checker folds it (so the printed program checks back to
            // this one).
            match (op, literal(&x), literal(&y)) {
                (BinOp::Add | BinOp::Sub | BinOp::Mul, Some(_), Some(_))
                | (BinOp::Div | BinOp::Mod, Some(_), Some(1..)) => index(Expr::Binary(op, x, y), b),
                _ => Expr::Binary(op, x, y),
            }
        }
        Expr::Call(g, args) => {
            let mut args: Vec<Expr> = args.into_iter().map(|a| rewrite(a, b, f)).collect();
            match decided_extreme(g, &args, b) {
                Some(k) => args.swap_remove(k),
                None => Expr::Call(g, args),
            }
        }
        leaf @ (Expr::Lit(..) | Expr::Iter(_) | Expr::Sym(_) | Expr::Local(_)) => leaf,
    };
    let e = f(e, b);
    // What `f` made may be a `?:` the box decides.
    match e {
        Expr::Select(c, then, other) => match decide(&c, b) {
            Some(true) => *then,
            Some(false) => *other,
            None => Expr::Select(c, then, other),
        },
        e => e,
    }
}

/// Which argument a `min` or `max` of two index expressions is at every
/// point of the box, when the box decides it: the clamp that keeps a
/// strided view's subscript inside its tensor (`max(min(i * 4 / 4, 80),
/// 0)`) where the subscript already is.
fn decided_extreme(g: Builtin, args: &[Expr], b: &Ranges) -> Option<usize> {
    let [x, y] = args else { return None };
    if !matches!(g, Builtin::Min | Builtin::Max) {
        return None;
    }
    // Whether `x <= y`, or `y <= x`, at every point: from their difference
    // when both are linear, else from their ranges.
    let (x_le, y_le) = if is_index(x) && is_index(y) {
        let (lo, hi) = linear(x, b).sub(&linear(y, b)).range(b)?;
        (hi <= 0, lo >= 0)
    } else {
        let ((xl, xh), (yl, yh)) = (index_range(x, b)?, index_range(y, b)?);
        (xh <= yl, yh <= xl)
    };
    match g {
        Builtin::Min if x_le => Some(0),
        Builtin::Min if y_le => Some(1),
        Builtin::Max if y_le => Some(0),
        Builtin::Max if x_le => Some(1),
        _ => None,
    }
}

/// The smallest and largest value of index expression `e` over the box,
/// through `min` and `max`.
fn index_range(e: &Expr, b: &Ranges) -> Option<(i64, i64)> {
    match e {
        Expr::Call(g @ (Builtin::Min | Builtin::Max), args) => {
            let [x, y] = args.as_slice() else { return None };
            let ((xl, xh), (yl, yh)) = (index_range(x, b)?, index_range(y, b)?);
            Some(if *g == Builtin::Min {
                (xl.min(yl), xh.min(yh))
            } else {
                (xl.max(yl), xh.max(yh))
            })
        }
        _ if is_index(e) => linear(e, b).range(b),
        _ => None,
    }
}

/// An equality the box holds at one end of its difference's range, as the
/// inequality it is there (`i == 2` where `i` is in `2:4` is `i <= 2`):
/// lowering guards an inequality's branches either way, and an equality's
/// other branch only where the box keeps the difference on one side.
fn at_edge(c: Expr, b: &Ranges) -> Expr {
    let Expr::Binary(op @ (BinOp::Eq | BinOp::Ne), x, y) = c else {
        return c;
    };
    if !is_index(&x) || !is_index(&y) {
        return Expr::Binary(op, x, y);
    }
    let eq = op == BinOp::Eq;
    let to = match linear(&x, b).sub(&linear(&y, b)).range(b) {
        Some((0, _)) => Some(if eq { BinOp::Le } else { BinOp::Gt }),
        Some((_, 0)) => Some(if eq { BinOp::Ge } else { BinOp::Lt }),
        _ => None,
    };
    Expr::Binary(to.unwrap_or(op), x, y)
}

/// Whether lowering can guard the branch of a `?:` on `c` that is taken
/// when `c` is `taken`: `c` is then a conjunction of comparisons of affine
/// index expressions, none of them a disequality (whose guard lowering
/// builds only where the whole box keeps the difference on one side).
pub fn guardable(c: &Expr, taken: bool) -> bool {
    match c {
        Expr::Lit(Value::Bool(_), _) => true,
        Expr::Unary(UnOp::Not, x) => guardable(x, !taken),
        Expr::Binary(BinOp::And, x, y) if taken => guardable(x, taken) && guardable(y, taken),
        Expr::Binary(BinOp::Or, x, y) if !taken => guardable(x, taken) && guardable(y, taken),
        Expr::Binary(op, x, y) if op.is_comparison() => {
            let affine = |e: &Expr| {
                is_index(e) && !e.any(&|n| matches!(n, Expr::Binary(BinOp::Div | BinOp::Mod, ..)))
            };
            let disequality = matches!(op, BinOp::Eq | BinOp::Ne) && ((*op == BinOp::Eq) != taken);
            affine(x) && affine(y) && !disequality
        }
        _ => false,
    }
}

/// The box where condition `c` is `taken`: narrowed when `c` (or, taken, a
/// conjunction of its comparisons) bounds one iterator by a constant.
pub fn narrow(c: &Expr, b: &Ranges, taken: bool) -> Ranges {
    let mut out = b.clone();
    let mut cuts = Vec::new();
    bounds_of(c, taken, &mut cuts);
    for (i, lo, hi) in cuts {
        if let Some(r) = out.get_mut(&i) {
            *r = (r.0.max(lo), r.1.min(hi));
        }
    }
    // An empty range: the branch is never taken, and what it computes
    // only needs to stay valid over the box.
    if out.values().any(|(lo, hi)| lo > hi) {
        return b.clone();
    }
    out
}

/// The iterator bounds `c` being `taken` implies, when it is one
/// comparison of an iterator (plus a constant) with a constant, or (taken)
/// a conjunction of such, or (not taken) a disjunction.
fn bounds_of(c: &Expr, taken: bool, out: &mut Vec<(String, i64, i64)>) {
    match c {
        Expr::Unary(UnOp::Not, x) => bounds_of(x, !taken, out),
        Expr::Binary(BinOp::And, x, y) if taken => {
            bounds_of(x, taken, out);
            bounds_of(y, taken, out);
        }
        Expr::Binary(BinOp::Or, x, y) if !taken => {
            bounds_of(x, taken, out);
            bounds_of(y, taken, out);
        }
        Expr::Binary(op, x, y) if op.is_comparison() && is_index(x) && is_index(y) => {
            // d = x - y = s * i + k, s = ±1.
            let d = linear(x, &Ranges::new()).sub(&linear(y, &Ranges::new()));
            let [(s, Expr::Iter(i))] = d.terms.as_slice() else {
                return;
            };
            if s.abs() != 1 {
                return;
            }
            let op = if taken { *op } else { negate(*op) };
            // s i + k op 0: with s = -1 the comparison flips.
            let (op, k) = if *s == 1 { (op, d.c) } else { (flip(op), -d.c) };
            // i op -k.
            let v = -k;
            let (lo, hi) = match op {
                BinOp::Lt => (i64::MIN, v - 1),
                BinOp::Le => (i64::MIN, v),
                BinOp::Gt => (v + 1, i64::MAX),
                BinOp::Ge => (v, i64::MAX),
                BinOp::Eq => (v, v),
                _ => return,
            };
            out.push((i.clone(), lo, hi));
        }
        _ => {}
    }
}

/// The comparison that holds where `op` does not.
fn negate(op: BinOp) -> BinOp {
    match op {
        BinOp::Lt => BinOp::Ge,
        BinOp::Le => BinOp::Gt,
        BinOp::Gt => BinOp::Le,
        BinOp::Ge => BinOp::Lt,
        BinOp::Eq => BinOp::Ne,
        _ => BinOp::Eq,
    }
}

/// `a op b` as `b op' a`.
pub(crate) fn flip(op: BinOp) -> BinOp {
    match op {
        BinOp::Lt => BinOp::Gt,
        BinOp::Le => BinOp::Ge,
        BinOp::Gt => BinOp::Lt,
        BinOp::Ge => BinOp::Le,
        op => op,
    }
}

/// An `int64` subscript simplified over the box.
pub fn index(e: Expr, b: &Ranges) -> Expr {
    linear(&e, b).to_expr()
}

/// The value of condition `c` at every point of the box, when it is the
/// same everywhere.
fn decide(c: &Expr, b: &Ranges) -> Option<bool> {
    match c {
        Expr::Lit(Value::Bool(v), _) => Some(*v),
        Expr::Unary(UnOp::Not, x) => decide(x, b).map(|v| !v),
        Expr::Binary(BinOp::And, x, y) => match (decide(x, b), decide(y, b)) {
            (Some(false), _) | (_, Some(false)) => Some(false),
            (Some(true), Some(true)) => Some(true),
            _ => None,
        },
        Expr::Binary(BinOp::Or, x, y) => match (decide(x, b), decide(y, b)) {
            (Some(true), _) | (_, Some(true)) => Some(true),
            (Some(false), Some(false)) => Some(false),
            _ => None,
        },
        Expr::Binary(op, x, y) if op.is_comparison() && is_index(x) && is_index(y) => {
            // The range of x - y decides every comparison it lies on one
            // side of.
            let (lo, hi) = linear(x, b).sub(&linear(y, b)).range(b)?;
            let all = |f: &dyn Fn(i64) -> bool| f(lo) && f(hi);
            let none = |f: &dyn Fn(i64) -> bool| !f(lo) && !f(hi);
            let holds = |f: &dyn Fn(i64) -> bool| {
                if all(f) {
                    Some(true)
                } else if none(f) {
                    Some(false)
                } else {
                    None
                }
            };
            match op {
                BinOp::Lt => holds(&|d| d < 0),
                BinOp::Le => holds(&|d| d <= 0),
                BinOp::Gt => holds(&|d| d > 0),
                BinOp::Ge => holds(&|d| d >= 0),
                // Equality is decided when the difference is one value, or
                // never zero.
                BinOp::Eq if lo == hi => Some(lo == 0),
                BinOp::Eq if lo > 0 || hi < 0 => Some(false),
                BinOp::Ne if lo == hi => Some(lo != 0),
                BinOp::Ne if lo > 0 || hi < 0 => Some(true),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Whether `e` is an index expression (`int64` arithmetic on iterators and
/// literals), which [`linear`] reads exactly.
fn is_index(e: &Expr) -> bool {
    match e {
        Expr::Iter(_) | Expr::Lit(Value::Int(_), DType::I64) => true,
        Expr::Binary(BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Mod, a, b) => {
            is_index(a) && is_index(b)
        }
        Expr::Unary(UnOp::Neg, a) => is_index(a),
        _ => false,
    }
}

/// `Σ coefficient × atom + constant`: an atom is an iterator, a floor
/// division or remainder that stays one, or any other expression (whose
/// range is unknown).
#[derive(Clone, Debug, PartialEq)]
struct Linear {
    terms: Vec<(i64, Expr)>,
    c: i64,
}

impl Linear {
    fn constant(c: i64) -> Linear {
        Linear {
            terms: Vec::new(),
            c,
        }
    }

    fn atom(e: Expr) -> Linear {
        Linear {
            terms: vec![(1, e)],
            c: 0,
        }
    }

    fn add(mut self, other: &Linear) -> Linear {
        for (k, a) in &other.terms {
            match self.terms.iter_mut().find(|(_, x)| x == a) {
                Some(t) => t.0 += k,
                None => self.terms.push((*k, a.clone())),
            }
        }
        self.terms.retain(|(k, _)| *k != 0);
        self.c += other.c;
        self
    }

    fn scale(mut self, k: i64) -> Linear {
        for t in &mut self.terms {
            t.0 *= k;
        }
        self.terms.retain(|(k, _)| *k != 0);
        self.c *= k;
        self
    }

    fn sub(self, other: &Linear) -> Linear {
        self.add(&other.clone().scale(-1))
    }

    fn as_constant(&self) -> Option<i64> {
        self.terms.is_empty().then_some(self.c)
    }

    /// The smallest and largest value over the box, when every atom's range
    /// is known.
    fn range(&self, b: &Ranges) -> Option<(i64, i64)> {
        let (mut lo, mut hi) = (self.c, self.c);
        for (k, a) in &self.terms {
            let (x, y) = atom_range(a, b)?;
            let (p, q) = (k.checked_mul(x)?, k.checked_mul(y)?);
            lo = lo.checked_add(p.min(q))?;
            hi = hi.checked_add(p.max(q))?;
        }
        Some((lo, hi))
    }

    /// The terms whose coefficient `d` divides, divided, and the others.
    fn split(&self, d: i64) -> (Linear, Linear) {
        let mut q = Linear::constant(self.c.div_euclid(d));
        let mut r = Linear::constant(self.c.rem_euclid(d));
        for (k, a) in &self.terms {
            if k % d == 0 {
                q.terms.push((k / d, a.clone()));
            } else {
                r.terms.push((*k, a.clone()));
            }
        }
        (q, r)
    }

    /// `floor(self / d)`, `d > 0`.
    fn div(&self, d: i64, b: &Ranges) -> Linear {
        if d == 1 {
            return self.clone();
        }
        // (x / a) / d is x / (a * d).
        if let ([(1, Expr::Binary(BinOp::Div, x, a))], 0) = (self.terms.as_slice(), self.c) {
            if let Some(a) = literal(a).filter(|a| *a > 0) {
                if let Some(ad) = a.checked_mul(d) {
                    return linear(x, b).div(ad, b);
                }
            }
        }
        // (q d + r) / d is q + r / d.
        let (q, r) = self.split(d);
        if within(&r, d, b) {
            return q;
        }
        // (g x + s) / d is x / (d / g) where g divides d and s is in
        // [0, g): the largest such g among the coefficients' divisors of d.
        for g in r.divisors_of(d) {
            let (x, s) = r.split(g);
            if within(&s, g, b) {
                return q.add(&x.div(d / g, b));
            }
        }
        // Only a constant to take out: the quotient reads better whole.
        if q.terms.is_empty() {
            return Linear::atom(Expr::binary(BinOp::Div, self.to_expr(), Expr::int(d)));
        }
        q.add(&Linear::atom(Expr::binary(
            BinOp::Div,
            r.to_expr(),
            Expr::int(d),
        )))
    }

    /// `self mod d` (floor), `d > 0`.
    fn rem(&self, d: i64, b: &Ranges) -> Linear {
        let (_, r) = self.split(d);
        if within(&r, d, b) {
            return r;
        }
        // (g x + r) % d is (x % (d / g)) g + r where g divides d and r is
        // in [0, g).
        for g in r.divisors_of(d) {
            let (x, small) = r.split(g);
            if within(&small, g, b) {
                return x.rem(d / g, b).scale(g).add(&small);
            }
        }
        Linear::atom(Expr::binary(BinOp::Mod, r.to_expr(), Expr::int(d)))
    }

    /// The common divisors of `d` and a coefficient, other than 1 and `d`,
    /// largest first.
    fn divisors_of(&self, d: i64) -> Vec<i64> {
        let mut gs: Vec<i64> = self
            .terms
            .iter()
            .map(|(k, _)| gcd(k.abs(), d))
            .filter(|g| *g > 1 && *g < d)
            .collect();
        gs.sort_unstable_by(|a, b| b.cmp(a));
        gs.dedup();
        gs
    }

    fn to_expr(&self) -> Expr {
        let mut out: Option<Expr> = None;
        for (k, a) in &self.terms {
            let term = |k: i64| {
                if k == 1 {
                    a.clone()
                } else {
                    Expr::binary(BinOp::Mul, a.clone(), Expr::int(k))
                }
            };
            out = Some(match out {
                None if *k < 0 => Expr::Unary(UnOp::Neg, Box::new(term(-k))),
                None => term(*k),
                Some(e) if *k < 0 => Expr::binary(BinOp::Sub, e, term(-k)),
                Some(e) => Expr::binary(BinOp::Add, e, term(*k)),
            });
        }
        match out {
            None => Expr::int(self.c),
            Some(e) if self.c > 0 => Expr::binary(BinOp::Add, e, Expr::int(self.c)),
            Some(e) if self.c < 0 => Expr::binary(BinOp::Sub, e, Expr::int(-self.c)),
            Some(e) => e,
        }
    }
}

/// Whether `l` lies in `[0, d)` over the box.
fn within(l: &Linear, d: i64, b: &Ranges) -> bool {
    l.range(b).is_some_and(|(lo, hi)| lo >= 0 && hi < d)
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

fn literal(e: &Expr) -> Option<i64> {
    match e {
        Expr::Lit(Value::Int(v), DType::I64) => Some(*v),
        _ => None,
    }
}

/// The range of an atom over the box.
fn atom_range(a: &Expr, b: &Ranges) -> Option<(i64, i64)> {
    match a {
        Expr::Iter(i) => b.get(i).copied(),
        Expr::Binary(BinOp::Div, x, d) => {
            let d = literal(d).filter(|d| *d > 0)?;
            let (lo, hi) = linear(x, b).range(b)?;
            Some((lo.div_euclid(d), hi.div_euclid(d)))
        }
        Expr::Binary(BinOp::Mod, x, d) => {
            let d = literal(d).filter(|d| *d > 0)?;
            match linear(x, b).range(b) {
                Some((lo, hi)) if lo >= 0 && hi < d => Some((lo, hi)),
                _ => Some((0, d - 1)),
            }
        }
        _ => None,
    }
}

/// `e` as a linear form over the box (its divisions and remainders
/// simplified); anything that is not `int64` index arithmetic is an atom.
fn linear(e: &Expr, b: &Ranges) -> Linear {
    match e {
        Expr::Lit(Value::Int(v), DType::I64) => Linear::constant(*v),
        Expr::Iter(_) => Linear::atom(e.clone()),
        Expr::Unary(UnOp::Neg, a) if is_index(a) => linear(a, b).scale(-1),
        Expr::Binary(op, x, y) if is_index(e) => {
            let (lx, ly) = (linear(x, b), linear(y, b));
            match (op, ly.as_constant(), lx.as_constant()) {
                (BinOp::Add, ..) => lx.add(&ly),
                (BinOp::Sub, ..) => lx.sub(&ly),
                (BinOp::Mul, Some(k), _) => lx.scale(k),
                (BinOp::Mul, None, Some(k)) => ly.scale(k),
                (BinOp::Div, Some(d), _) if d > 0 => lx.div(d, b),
                (BinOp::Mod, Some(d), _) if d > 0 => lx.rem(d, b),
                _ => Linear::atom(Expr::binary(*op, lx.to_expr(), ly.to_expr())),
            }
        }
        _ => Linear::atom(e.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(ranges: &[(&str, i64)]) -> Ranges {
        ranges
            .iter()
            .map(|(n, hi)| (n.to_string(), (0, hi - 1)))
            .collect()
    }

    fn show(e: &Expr) -> String {
        let d = ir::Def {
            name: "f".into(),
            params: Vec::new(),
            outputs: Vec::new(),
            tensors: Vec::new(),
            stmts: Vec::new(),
        };
        ir::print_expr(&d, None, e)
    }

    fn it(n: &str) -> Expr {
        Expr::Iter(n.to_string())
    }

    fn add(a: Expr, b: Expr) -> Expr {
        Expr::binary(BinOp::Add, a, b)
    }

    fn mul(a: Expr, k: i64) -> Expr {
        Expr::binary(BinOp::Mul, a, Expr::int(k))
    }

    fn div(a: Expr, k: i64) -> Expr {
        Expr::binary(BinOp::Div, a, Expr::int(k))
    }

    fn rem(a: Expr, k: i64) -> Expr {
        Expr::binary(BinOp::Mod, a, Expr::int(k))
    }

    /// Evaluates an index expression at one point.
    fn eval(e: &Expr, at: &HashMap<String, i64>) -> i64 {
        match e {
            Expr::Lit(Value::Int(v), _) => *v,
            Expr::Iter(i) => at[i],
            Expr::Unary(UnOp::Neg, a) => -eval(a, at),
            Expr::Binary(op, x, y) => {
                let (x, y) = (eval(x, at), eval(y, at));
                match op {
                    BinOp::Add => x + y,
                    BinOp::Sub => x - y,
                    BinOp::Mul => x * y,
                    BinOp::Div => x.div_euclid(y),
                    BinOp::Mod => x.rem_euclid(y),
                    _ => unreachable!(),
                }
            }
            _ => unreachable!(),
        }
    }

    /// `e` simplified over box `r` prints as `expect` and equals `e` at
    /// every point of the box.
    fn check(e: Expr, r: &[(&str, i64)], expect: &str) {
        let bx = b(r);
        let s = index(e.clone(), &bx);
        assert_eq!(show(&s), expect);
        let mut points = vec![HashMap::new()];
        for (n, hi) in r {
            points = points
                .into_iter()
                .flat_map(|p| {
                    (0..*hi).map(move |v| {
                        let mut p = p.clone();
                        p.insert(n.to_string(), v);
                        p
                    })
                })
                .collect();
        }
        for p in &points {
            assert_eq!(eval(&e, p), eval(&s, p), "at {p:?}");
        }
    }

    #[test]
    fn a_split_of_a_flat_offset_is_affine() {
        // pred.view(2, 3, 9, 8, 8).permute(0, 1, 3, 4, 2): channel i1 * 9 + i4.
        let flat = add(
            mul(it("i0"), 1728),
            add(
                mul(it("i1"), 576),
                add(mul(it("i4"), 64), add(mul(it("i2"), 8), it("i3"))),
            ),
        );
        let r = [("i0", 2), ("i1", 3), ("i2", 8), ("i3", 8), ("i4", 9)];
        check(div(flat.clone(), 1728), &r, "i0");
        check(rem(div(flat.clone(), 64), 27), &r, "i1 * 9 + i4");
        check(rem(div(flat.clone(), 8), 8), &r, "i2");
        check(rem(flat, 8), &r, "i3");
    }

    #[test]
    fn a_merged_dimension_keeps_one_division_of_its_own_iterator() {
        // (1, 8112, 80) read as (1, 3, 52, 52, 80).
        let flat = add(mul(it("i0"), 648960), add(mul(it("i1"), 80), it("i2")));
        let r = [("i0", 1), ("i1", 8112), ("i2", 5)];
        check(div(flat.clone(), 648960), &r, "i0");
        check(rem(div(flat.clone(), 4160), 52), &r, "i1 / 52 % 52");
        check(rem(div(flat.clone(), 80), 52), &r, "i1 % 52");
        check(rem(flat, 80), &r, "i2");
    }

    #[test]
    fn nested_divisions_and_offsets_combine() {
        let r = [("i", 40), ("j", 3)];
        check(div(div(it("i"), 4), 5), &r, "i / 20");
        check(add(sub_(it("i"), 2), Expr::int(2)), &r, "i");
        check(rem(add(mul(it("i"), 3), it("j")), 6), &r, "i % 2 * 3 + j");
        check(div(add(it("i"), Expr::int(-3)), 2), &r, "(i - 3) / 2");
    }

    fn sub_(a: Expr, k: i64) -> Expr {
        Expr::binary(BinOp::Sub, a, Expr::int(k))
    }

    #[test]
    fn conditions_the_box_decides_are_folded() {
        let bx = b(&[("i4", 80)]);
        let read = |c: i64| Expr::Read("p".into(), vec![add(it("i4"), Expr::int(c))]);
        let sel = |c: Expr, a: Expr, o: Expr| Expr::Select(Box::new(c), Box::new(a), Box::new(o));
        let cmp = |op, k| Expr::binary(op, add(it("i4"), Expr::int(5)), Expr::int(k));
        let e = sel(
            cmp(BinOp::Ge, 4),
            read(1),
            sel(cmp(BinOp::Eq, 1), read(2), read(3)),
        );
        assert_eq!(show(&simplify(e, &bx)), "p(i4 + 1)");
        let open = sel(cmp(BinOp::Lt, 40), read(1), read(2));
        assert_eq!(simplify(open.clone(), &bx), open);
    }

    #[test]
    fn clamps_the_box_keeps_a_subscript_inside_are_dropped() {
        let call = |g, a: Expr, k: i64| Expr::Call(g, vec![a, Expr::int(k)]);
        let clamp = |a: Expr, hi: i64| call(Builtin::Max, call(Builtin::Min, a, hi), 0);
        let read = |s: Expr| Expr::Read("d".into(), vec![s]);
        let bx = b(&[("i", 81)]);
        // A strided view's subscript, clamped to the 81 columns it has.
        let e = read(clamp(div(mul(it("i"), 4), 4), 80));
        assert_eq!(show(&simplify(e, &bx)), "d(i)");
        // Under `i >= 3`, `(i - 3) / 4` is at least 0: only `min` stays.
        let shifted = read(clamp(div(sub_(it("i"), 3), 4), 10));
        let c = Expr::binary(BinOp::Ge, it("i"), Expr::int(3));
        let e = Expr::Select(
            Box::new(c),
            Box::new(shifted),
            Box::new(Expr::Lit(Value::Float(0.0), DType::F32)),
        );
        assert_eq!(
            show(&simplify(e, &bx)),
            "i >= 3 ? d(min((i - 3) / 4, 10)) : float32(0.0)"
        );
        // Where the box does not decide it, a clamp stays: `i` passes 40
        // (but is never below 0).
        let open = read(call(Builtin::Min, it("i"), 40));
        assert_eq!(simplify(read(clamp(it("i"), 40)), &bx), open);
        assert_eq!(simplify(open.clone(), &bx), open);
    }
}
