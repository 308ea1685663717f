//! Integer subscripts as linear forms: the algebra the derivation rules do
//! on iterators (substituting one for an expression of others, splitting
//! one into a quotient and a remainder, bounding one over a box).
//!
//! A [`Linear`] is `Σ c·term + constant` over terms that are iterators,
//! integer symbols, or floor quotients and modulos of linear forms by
//! positive constants. [`linear`] reads one from an `int64` expression
//! (lets expanded), [`Linear::to_expr`] writes it back in one canonical
//! form, and [`simplify`] puts every subscript of an expression in that
//! form, folding quotients whose divisor divides the coefficients.
//!
//! Requires expressions of a verified def. Guarantees: a form evaluates to
//! what its expression evaluates to at every point (floor division and
//! modulo as `ir::arith` defines them), so rewriting a subscript by its
//! form changes no value; a subscript that is not linear is left as is.

use std::collections::{BTreeMap, HashMap};

use ir::{floor_div, floor_mod, BinOp, DType, Expr, UnOp, Value};

/// A term of a linear form.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Term {
    Iter(String),
    /// `floor(form / k)`, `k > 0`.
    Div(Box<Linear>, i64),
    /// `form mod k` (in `0..k`), `k > 0`.
    Mod(Box<Linear>, i64),
}

/// `Σ c·term + constant`, no zero coefficient.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Linear {
    pub terms: BTreeMap<Term, i64>,
    pub constant: i64,
}

impl Linear {
    pub fn constant(c: i64) -> Linear {
        Linear {
            terms: BTreeMap::new(),
            constant: c,
        }
    }

    pub fn iter(name: &str) -> Linear {
        Linear::term(Term::Iter(name.to_string()))
    }

    fn term(t: Term) -> Linear {
        let mut terms = BTreeMap::new();
        terms.insert(t, 1);
        Linear { terms, constant: 0 }
    }

    pub fn plus(mut self, other: &Linear) -> Option<Linear> {
        for (t, c) in &other.terms {
            let e = self.terms.entry(t.clone()).or_insert(0);
            *e = e.checked_add(*c)?;
            if *e == 0 {
                self.terms.remove(t);
            }
        }
        self.constant = self.constant.checked_add(other.constant)?;
        Some(self)
    }

    pub fn scale(mut self, k: i64) -> Option<Linear> {
        if k == 0 {
            return Some(Linear::constant(0));
        }
        for c in self.terms.values_mut() {
            *c = c.checked_mul(k)?;
        }
        self.constant = self.constant.checked_mul(k)?;
        Some(self)
    }

    /// The coefficient of iterator `name` (0 when absent).
    pub fn coeff(&self, name: &str) -> i64 {
        self.terms
            .iter()
            .find_map(|(t, c)| matches!(t, Term::Iter(n) if n == name).then_some(*c))
            .unwrap_or(0)
    }

    /// Whether iterator `name` appears anywhere, inside quotients too.
    pub fn mentions(&self, name: &str) -> bool {
        self.terms.keys().any(|t| match t {
            Term::Iter(n) => n == name,
            Term::Div(l, _) | Term::Mod(l, _) => l.mentions(name),
        })
    }

    /// The iterators with a plain coefficient, in name order.
    pub fn iters(&self) -> impl Iterator<Item = (&str, i64)> {
        self.terms.iter().filter_map(|(t, c)| match t {
            Term::Iter(n) => Some((n.as_str(), *c)),
            _ => None,
        })
    }

    /// Whether every term is a plain iterator (an affine form).
    pub fn is_affine(&self) -> bool {
        self.terms.keys().all(|t| matches!(t, Term::Iter(_)))
    }

    /// `floor(self / k)`, simplified: the terms whose coefficients `k`
    /// divides leave the quotient exactly (`floor((k·q + r) / k) = q +
    /// floor(r / k)`), and a remainder that the box keeps in `0..k`
    /// divides to nothing.
    pub fn floor_div(self, k: i64, bounds: &dyn Fn(&str) -> Option<(i64, i64)>) -> Option<Linear> {
        if k == 1 {
            return Some(self);
        }
        let (whole, rest) = self.split_multiples(k)?;
        match rest.interval(bounds) {
            Some((lo, hi)) if floor_div(lo, k) == floor_div(hi, k) => {
                whole.plus(&Linear::constant(floor_div(lo, k)))
            }
            _ if rest.terms.is_empty() => {
                whole.plus(&Linear::constant(floor_div(rest.constant, k)))
            }
            _ => whole.plus(&Linear::term(Term::Div(Box::new(rest), k))),
        }
    }

    /// `self mod k`, simplified as [`Linear::floor_div`] is.
    pub fn floor_mod(self, k: i64, bounds: &dyn Fn(&str) -> Option<(i64, i64)>) -> Option<Linear> {
        if k == 1 {
            return Some(Linear::constant(0));
        }
        let (_, rest) = self.split_multiples(k)?;
        match rest.interval(bounds) {
            Some((lo, hi)) if floor_div(lo, k) == floor_div(hi, k) => {
                rest.plus(&Linear::constant(-k * floor_div(lo, k)))
            }
            _ if rest.terms.is_empty() => Some(Linear::constant(floor_mod(rest.constant, k))),
            _ => Some(Linear::term(Term::Mod(Box::new(rest), k))),
        }
    }

    /// `(q, r)` with `self = k·q + r`, `q` taking every term whose
    /// coefficient `k` divides and the constant's multiple of `k`.
    fn split_multiples(self, k: i64) -> Option<(Linear, Linear)> {
        let mut whole = Linear::constant(floor_div(self.constant, k));
        let mut rest = Linear::constant(floor_mod(self.constant, k));
        for (t, c) in self.terms {
            if c % k == 0 {
                whole.terms.insert(t, c / k);
            } else {
                rest.terms.insert(t, c);
            }
        }
        Some((whole, rest))
    }

    /// The smallest and largest value over iterators bounded by `bounds`
    /// (inclusive), when every term is bounded.
    pub fn interval(&self, bounds: &dyn Fn(&str) -> Option<(i64, i64)>) -> Option<(i64, i64)> {
        let (mut lo, mut hi) = (self.constant, self.constant);
        for (t, &c) in &self.terms {
            let (a, b) = match t {
                Term::Iter(n) => bounds(n)?,
                Term::Div(l, k) => {
                    let (a, b) = l.interval(bounds)?;
                    (floor_div(a, *k), floor_div(b, *k))
                }
                Term::Mod(l, k) => match l.interval(bounds) {
                    Some((a, b)) if floor_div(a, *k) == floor_div(b, *k) => {
                        (floor_mod(a, *k), floor_mod(b, *k))
                    }
                    _ => (0, k - 1),
                },
            };
            let (x, y) = (c.checked_mul(a)?, c.checked_mul(b)?);
            lo = lo.checked_add(x.min(y))?;
            hi = hi.checked_add(x.max(y))?;
        }
        Some((lo, hi))
    }

    /// The form with every iterator replaced by what `to` gives it (kept
    /// when it gives nothing), simplified over `bounds`.
    pub fn substitute(
        &self,
        to: &dyn Fn(&str) -> Option<Linear>,
        bounds: &dyn Fn(&str) -> Option<(i64, i64)>,
    ) -> Option<Linear> {
        let mut out = Linear::constant(self.constant);
        for (t, &c) in &self.terms {
            let part = match t {
                Term::Iter(n) => to(n).unwrap_or_else(|| Linear::iter(n)),
                Term::Div(l, k) => l.substitute(to, bounds)?.floor_div(*k, bounds)?,
                Term::Mod(l, k) => l.substitute(to, bounds)?.floor_mod(*k, bounds)?,
            };
            out = out.plus(&part.scale(c)?)?;
        }
        Some(out)
    }

    /// The canonical `int64` expression: terms in order, positive ones
    /// first, the constant last.
    pub fn to_expr(&self) -> Expr {
        let term = |t: &Term| match t {
            Term::Iter(n) => Expr::Iter(n.clone()),
            Term::Div(l, k) => Expr::binary(BinOp::Div, l.to_expr(), Expr::int(*k)),
            Term::Mod(l, k) => Expr::binary(BinOp::Mod, l.to_expr(), Expr::int(*k)),
        };
        let mut parts: Vec<(bool, Expr)> = Vec::new();
        let ordered = self
            .terms
            .iter()
            .filter(|(_, c)| **c > 0)
            .chain(self.terms.iter().filter(|(_, c)| **c < 0));
        for (t, &c) in ordered {
            let e = match c.unsigned_abs() {
                1 => term(t),
                m => Expr::binary(BinOp::Mul, Expr::int(m as i64), term(t)),
            };
            parts.push((c > 0, e));
        }
        if self.constant != 0 || parts.is_empty() {
            parts.push((
                self.constant >= 0,
                Expr::int(self.constant.unsigned_abs() as i64),
            ));
        }
        let mut it = parts.into_iter();
        let Some((positive, first)) = it.next() else {
            return Expr::int(0);
        };
        let mut e = if positive {
            first
        } else {
            Expr::binary(BinOp::Sub, Expr::int(0), first)
        };
        for (positive, p) in it {
            e = Expr::binary(if positive { BinOp::Add } else { BinOp::Sub }, e, p);
        }
        e
    }
}

/// The linear form of an integer expression, lets looked up in `lets`;
/// `None` when it is not linear (a product of iterators, a read, a
/// select, a symbol: derivations work at bound sizes and scalars).
pub fn linear(e: &Expr, lets: &HashMap<String, Expr>) -> Option<Linear> {
    let none = |_: &str| None;
    match e {
        Expr::Lit(Value::Int(v), t) if t.is_int() => Some(Linear::constant(*v)),
        Expr::Iter(n) => Some(Linear::iter(n)),
        Expr::Local(n) => linear(lets.get(n)?, lets),
        // A cast between the wide integer types changes no subscript's
        // value: tensors have at most 2^28 elements.
        Expr::Cast(DType::I64 | DType::I32, a) => linear(a, lets),
        Expr::Unary(UnOp::Neg, a) => linear(a, lets)?.scale(-1),
        Expr::Binary(op, a, b) => {
            let (x, y) = (linear(a, lets)?, linear(b, lets)?);
            match op {
                BinOp::Add => x.plus(&y),
                BinOp::Sub => x.plus(&y.scale(-1)?),
                BinOp::Mul if x.terms.is_empty() => y.scale(x.constant),
                BinOp::Mul if y.terms.is_empty() => x.scale(y.constant),
                BinOp::Div if y.terms.is_empty() && y.constant > 0 => {
                    x.floor_div(y.constant, &none)
                }
                BinOp::Mod if y.terms.is_empty() && y.constant > 0 => {
                    x.floor_mod(y.constant, &none)
                }
                _ => None,
            }
        }
        _ => None,
    }
}

/// `e` with every iterator replaced by the expression `to` gives it; every
/// subscript (of a read, at any depth) and every side of an integer
/// comparison rewritten in canonical linear form over `bounds` where it
/// is linear; a comparison the box decides replaced by its truth, and the
/// `&&`, `||` and `?:` that truth decides folded (constant propagation).
pub fn substitute(
    e: Expr,
    to: &HashMap<String, Linear>,
    bounds: &dyn Fn(&str) -> Option<(i64, i64)>,
) -> Expr {
    let none = HashMap::new();
    let canonical = |x: Expr| match linear(&x, &none) {
        Some(l) => l.substitute(&|_| None, bounds).map_or(x, |l| l.to_expr()),
        None => x,
    };
    e.map(&mut |e| match e {
        Expr::Iter(n) => match to.get(&n) {
            Some(l) => l.to_expr(),
            None => Expr::Iter(n),
        },
        Expr::Read(t, ix) => Expr::Read(t, ix.into_iter().map(canonical).collect()),
        Expr::Binary(op, a, b) if op.is_comparison() => {
            match (linear(&a, &none), linear(&b, &none)) {
                (Some(x), Some(y)) => {
                    let decided = x
                        .clone()
                        .plus(&y.clone().scale(-1).unwrap_or_default())
                        .and_then(|d| d.substitute(&|_| None, bounds))
                        .and_then(|d| d.interval(bounds))
                        .and_then(|range| decide(op, range));
                    match decided {
                        Some(v) => Expr::Lit(Value::Bool(v), DType::Bool),
                        None => Expr::binary(op, canonical(*a), canonical(*b)),
                    }
                }
                _ => Expr::Binary(op, a, b),
            }
        }
        Expr::Binary(op @ (BinOp::And | BinOp::Or), a, b) => match (*a, *b, op) {
            (Expr::Lit(Value::Bool(true), _), x, BinOp::And)
            | (x, Expr::Lit(Value::Bool(true), _), BinOp::And) => x,
            (Expr::Lit(Value::Bool(false), _), x, BinOp::Or)
            | (x, Expr::Lit(Value::Bool(false), _), BinOp::Or) => x,
            (f @ Expr::Lit(Value::Bool(false), _), _, BinOp::And)
            | (_, f @ Expr::Lit(Value::Bool(false), _), BinOp::And) => f,
            (t @ Expr::Lit(Value::Bool(true), _), _, BinOp::Or)
            | (_, t @ Expr::Lit(Value::Bool(true), _), BinOp::Or) => t,
            (a, b, op) => Expr::binary(op, a, b),
        },
        Expr::Select(c, a, b) => match *c {
            Expr::Lit(Value::Bool(true), _) => *a,
            Expr::Lit(Value::Bool(false), _) => *b,
            c => Expr::Select(Box::new(c), a, b),
        },
        e => e,
    })
}

/// The truth of `d op 0` for every `d` in `range` (inclusive), when the
/// range decides it.
fn decide(op: BinOp, (lo, hi): (i64, i64)) -> Option<bool> {
    let (always, never) = match op {
        BinOp::Lt => (hi < 0, lo >= 0),
        BinOp::Le => (hi <= 0, lo > 0),
        BinOp::Gt => (lo > 0, hi <= 0),
        BinOp::Ge => (lo >= 0, hi < 0),
        BinOp::Eq => (lo == 0 && hi == 0, lo > 0 || hi < 0),
        BinOp::Ne => (lo > 0 || hi < 0, lo == 0 && hi == 0),
        _ => return None,
    };
    if always {
        Some(true)
    } else if never {
        Some(false)
    } else {
        None
    }
}
