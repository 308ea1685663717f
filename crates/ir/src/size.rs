//! Symbolic sizes: integer expressions over size symbols and integer scalar
//! parameters, kept in a canonical form.
//!
//! A [`SizeExpr`] is a polynomial with integer coefficients whose variables
//! are [`Atom`]s: a symbol, or a floor-division, modulo, minimum or maximum of
//! two size expressions that could not be folded. Every constructor
//! normalizes, so two expressions that are equal as polynomials compare equal
//! and print the same way; printing and re-reading a size gives back the same
//! value. Divisions and moduli are floor semantics (Python's `//` and `%`).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;

use crate::{BinOp, Builtin, Expr};

/// A non-polynomial factor of a monomial.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Atom {
    Sym(String),
    Div(Box<SizeExpr>, Box<SizeExpr>),
    Mod(Box<SizeExpr>, Box<SizeExpr>),
    Min(Box<SizeExpr>, Box<SizeExpr>),
    Max(Box<SizeExpr>, Box<SizeExpr>),
}

/// A product of atoms, sorted; the empty monomial is the constant 1.
pub type Monomial = Vec<Atom>;

/// A symbolic integer: a sum of monomials with non-zero coefficients.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct SizeExpr {
    terms: BTreeMap<Monomial, i64>,
}

/// Why a size could not be evaluated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EvalError {
    Unbound(String),
    DivisionByZero,
    Overflow,
}

impl fmt::Display for EvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EvalError::Unbound(s) => write!(f, "size symbol `{s}` has no value"),
            EvalError::DivisionByZero => f.write_str("division by zero in a size"),
            EvalError::Overflow => f.write_str("integer overflow in a size"),
        }
    }
}

impl SizeExpr {
    pub fn constant(c: i64) -> SizeExpr {
        let mut terms = BTreeMap::new();
        if c != 0 {
            terms.insert(Vec::new(), c);
        }
        SizeExpr { terms }
    }

    pub fn zero() -> SizeExpr {
        SizeExpr::constant(0)
    }

    pub fn sym(name: &str) -> SizeExpr {
        SizeExpr::atom(Atom::Sym(name.to_string()))
    }

    fn atom(a: Atom) -> SizeExpr {
        let mut terms = BTreeMap::new();
        terms.insert(vec![a], 1);
        SizeExpr { terms }
    }

    /// The value, if the expression has no symbols.
    pub fn as_const(&self) -> Option<i64> {
        match self.terms.len() {
            0 => Some(0),
            1 => self.terms.get(&Vec::new()).copied(),
            _ => None,
        }
    }

    pub fn is_const(&self) -> bool {
        self.as_const().is_some()
    }

    /// The constant term.
    pub fn constant_part(&self) -> i64 {
        self.terms.get(&Vec::new()).copied().unwrap_or(0)
    }

    /// The terms: each monomial with its coefficient.
    pub fn terms(&self) -> impl Iterator<Item = (&Monomial, i64)> {
        self.terms.iter().map(|(m, c)| (m, *c))
    }

    fn add_term(&mut self, m: Monomial, c: i64) {
        let e = self.terms.entry(m.clone()).or_insert(0);
        *e = e.wrapping_add(c);
        if *e == 0 {
            self.terms.remove(&m);
        }
    }

    pub fn add(&self, other: &SizeExpr) -> SizeExpr {
        let mut r = self.clone();
        for (m, c) in &other.terms {
            r.add_term(m.clone(), *c);
        }
        r
    }

    pub fn sub(&self, other: &SizeExpr) -> SizeExpr {
        self.add(&other.neg())
    }

    pub fn neg(&self) -> SizeExpr {
        self.scale(-1)
    }

    pub fn add_const(&self, c: i64) -> SizeExpr {
        self.add(&SizeExpr::constant(c))
    }

    pub fn scale(&self, k: i64) -> SizeExpr {
        let mut r = SizeExpr::zero();
        for (m, c) in &self.terms {
            r.add_term(m.clone(), c.wrapping_mul(k));
        }
        r
    }

    pub fn mul(&self, other: &SizeExpr) -> SizeExpr {
        let mut r = SizeExpr::zero();
        for (m1, c1) in &self.terms {
            for (m2, c2) in &other.terms {
                let mut m: Monomial = m1.iter().chain(m2.iter()).cloned().collect();
                m.sort();
                r.add_term(m, c1.wrapping_mul(*c2));
            }
        }
        r
    }

    /// Floor division.
    pub fn div(&self, other: &SizeExpr) -> SizeExpr {
        if let Some(d) = other.as_const() {
            if d == 1 {
                return self.clone();
            }
            if d > 0 {
                // floor((d*q + r) / d) = q + floor(r / d) for integer q.
                let mut q = SizeExpr::zero();
                let mut r = SizeExpr::zero();
                for (m, c) in &self.terms {
                    q.add_term(m.clone(), c.div_euclid(d));
                    r.add_term(m.clone(), c.rem_euclid(d));
                }
                if let Some(rc) = r.as_const() {
                    return q.add_const(rc.div_euclid(d));
                }
                if q.terms.is_empty() {
                    return SizeExpr::atom(Atom::Div(Box::new(r), Box::new(other.clone())));
                }
                return q.add(&r.div(other));
            }
        }
        if let (Some(a), Some(b)) = (self.as_const(), other.as_const()) {
            if b != 0 {
                return SizeExpr::constant(floor_div(a, b));
            }
        }
        if self == other {
            return SizeExpr::constant(1);
        }
        SizeExpr::atom(Atom::Div(Box::new(self.clone()), Box::new(other.clone())))
    }

    /// Floor modulo (the result has the sign of the divisor).
    pub fn rem(&self, other: &SizeExpr) -> SizeExpr {
        if let Some(d) = other.as_const() {
            if d == 1 {
                return SizeExpr::zero();
            }
            if d > 0 {
                let mut r = SizeExpr::zero();
                for (m, c) in &self.terms {
                    r.add_term(m.clone(), c.rem_euclid(d));
                }
                if let Some(rc) = r.as_const() {
                    return SizeExpr::constant(rc.rem_euclid(d));
                }
                return SizeExpr::atom(Atom::Mod(Box::new(r), Box::new(other.clone())));
            }
        }
        if let (Some(a), Some(b)) = (self.as_const(), other.as_const()) {
            if b != 0 {
                return SizeExpr::constant(floor_mod(a, b));
            }
        }
        SizeExpr::atom(Atom::Mod(Box::new(self.clone()), Box::new(other.clone())))
    }

    pub fn smin(&self, other: &SizeExpr) -> SizeExpr {
        match self.sub(other).as_const() {
            Some(d) if d <= 0 => self.clone(),
            Some(_) => other.clone(),
            None => {
                let (a, b) = ordered(self, other);
                SizeExpr::atom(Atom::Min(Box::new(a), Box::new(b)))
            }
        }
    }

    pub fn smax(&self, other: &SizeExpr) -> SizeExpr {
        match self.sub(other).as_const() {
            Some(d) if d >= 0 => self.clone(),
            Some(_) => other.clone(),
            None => {
                let (a, b) = ordered(self, other);
                SizeExpr::atom(Atom::Max(Box::new(a), Box::new(b)))
            }
        }
    }

    /// Evaluates with every symbol bound.
    pub fn eval(&self, env: &dyn Fn(&str) -> Option<i64>) -> Result<i64, EvalError> {
        let mut total: i64 = 0;
        for (m, c) in &self.terms {
            let mut v = *c;
            for a in m {
                let x = a.eval(env)?;
                v = v.checked_mul(x).ok_or(EvalError::Overflow)?;
            }
            total = total.checked_add(v).ok_or(EvalError::Overflow)?;
        }
        Ok(total)
    }

    /// Evaluates against a map of bindings.
    pub fn eval_map(&self, env: &HashMap<String, i64>) -> Result<i64, EvalError> {
        self.eval(&|s| env.get(s).copied())
    }

    /// Replaces symbols by expressions and renormalizes.
    pub fn subst(&self, f: &dyn Fn(&str) -> Option<SizeExpr>) -> SizeExpr {
        let mut r = SizeExpr::zero();
        for (m, c) in &self.terms {
            let mut t = SizeExpr::constant(*c);
            for a in m {
                t = t.mul(&a.subst(f));
            }
            r = r.add(&t);
        }
        r
    }

    /// Binds the symbols `env` knows and folds what becomes constant.
    pub fn partial_eval(&self, env: &HashMap<String, i64>) -> SizeExpr {
        self.subst(&|s| env.get(s).map(|v| SizeExpr::constant(*v)))
    }

    /// Every symbol the expression mentions.
    pub fn symbols(&self) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        self.collect_symbols(&mut out);
        out
    }

    fn collect_symbols(&self, out: &mut BTreeSet<String>) {
        for m in self.terms.keys() {
            for a in m {
                match a {
                    Atom::Sym(s) => {
                        out.insert(s.clone());
                    }
                    Atom::Div(x, y) | Atom::Mod(x, y) | Atom::Min(x, y) | Atom::Max(x, y) => {
                        x.collect_symbols(out);
                        y.collect_symbols(out);
                    }
                }
            }
        }
    }

    /// Whether the expression is a single symbol.
    pub fn as_sym(&self) -> Option<&str> {
        if self.terms.len() != 1 {
            return None;
        }
        let (m, c) = self.terms.iter().next()?;
        match (m.as_slice(), c) {
            ([Atom::Sym(s)], 1) => Some(s),
            _ => None,
        }
    }
}

impl SizeExpr {
    /// The size as an `int64` expression (floor division and modulo as
    /// `/` and `%`, minimum and maximum as the `min` and `max` builtins).
    pub fn to_expr(&self) -> Expr {
        let mut acc: Option<Expr> = None;
        for (m, c) in self.terms() {
            let mut term = Expr::int(c);
            let mut only_const = true;
            for a in m {
                let f = a.to_expr();
                term = if only_const && c == 1 {
                    f
                } else {
                    Expr::binary(BinOp::Mul, term, f)
                };
                only_const = false;
            }
            acc = Some(match acc {
                None => term,
                Some(prev) => Expr::binary(BinOp::Add, prev, term),
            });
        }
        acc.unwrap_or_else(|| Expr::int(0))
    }
}

impl Atom {
    fn to_expr(&self) -> Expr {
        match self {
            Atom::Sym(s) => Expr::Sym(s.clone()),
            Atom::Div(x, y) => Expr::binary(BinOp::Div, x.to_expr(), y.to_expr()),
            Atom::Mod(x, y) => Expr::binary(BinOp::Mod, x.to_expr(), y.to_expr()),
            Atom::Min(x, y) => Expr::Call(Builtin::Min, vec![x.to_expr(), y.to_expr()]),
            Atom::Max(x, y) => Expr::Call(Builtin::Max, vec![x.to_expr(), y.to_expr()]),
        }
    }
}

/// Floor division (rounds toward negative infinity, as Python's `//`).
pub fn floor_div(a: i64, b: i64) -> i64 {
    let q = a.wrapping_div(b);
    if a.wrapping_rem(b) != 0 && ((a < 0) != (b < 0)) {
        q.wrapping_sub(1)
    } else {
        q
    }
}

/// Floor modulo (the result has the sign of the divisor, as Python's `%`).
pub fn floor_mod(a: i64, b: i64) -> i64 {
    a.wrapping_sub(floor_div(a, b).wrapping_mul(b))
}

fn ordered(a: &SizeExpr, b: &SizeExpr) -> (SizeExpr, SizeExpr) {
    if a <= b {
        (a.clone(), b.clone())
    } else {
        (b.clone(), a.clone())
    }
}

impl Atom {
    fn eval(&self, env: &dyn Fn(&str) -> Option<i64>) -> Result<i64, EvalError> {
        Ok(match self {
            Atom::Sym(s) => env(s).ok_or_else(|| EvalError::Unbound(s.clone()))?,
            Atom::Div(a, b) => {
                let d = b.eval(env)?;
                if d == 0 {
                    return Err(EvalError::DivisionByZero);
                }
                floor_div(a.eval(env)?, d)
            }
            Atom::Mod(a, b) => {
                let d = b.eval(env)?;
                if d == 0 {
                    return Err(EvalError::DivisionByZero);
                }
                floor_mod(a.eval(env)?, d)
            }
            Atom::Min(a, b) => a.eval(env)?.min(b.eval(env)?),
            Atom::Max(a, b) => a.eval(env)?.max(b.eval(env)?),
        })
    }

    fn subst(&self, f: &dyn Fn(&str) -> Option<SizeExpr>) -> SizeExpr {
        match self {
            Atom::Sym(s) => f(s).unwrap_or_else(|| SizeExpr::sym(s)),
            Atom::Div(a, b) => a.subst(f).div(&b.subst(f)),
            Atom::Mod(a, b) => a.subst(f).rem(&b.subst(f)),
            Atom::Min(a, b) => a.subst(f).smin(&b.subst(f)),
            Atom::Max(a, b) => a.subst(f).smax(&b.subst(f)),
        }
    }
}

impl From<i64> for SizeExpr {
    fn from(c: i64) -> SizeExpr {
        SizeExpr::constant(c)
    }
}

/// Printing: monomials in canonical order with the constant last, `*` between
/// factors, `a/b` and `a%b` parenthesized whenever they share a product, and
/// `min(a,b)` / `max(a,b)` as calls. The output is TC expression syntax.
impl fmt::Display for SizeExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.terms.is_empty() {
            return f.write_str("0");
        }
        let mut first = true;
        // Positive terms first so sizes read naturally (`W-KW+1`), the
        // constant last.
        let ordered = self
            .terms
            .iter()
            .filter(|(m, c)| !m.is_empty() && **c > 0)
            .chain(self.terms.iter().filter(|(m, c)| !m.is_empty() && **c < 0))
            .chain(self.terms.iter().filter(|(m, _)| m.is_empty()));
        for (m, c) in ordered {
            let c = *c;
            let leading_minus = first && c < 0;
            if first {
                if c < 0 {
                    f.write_str("-")?;
                }
            } else if c < 0 {
                f.write_str("-")?;
            } else {
                f.write_str("+")?;
            }
            first = false;
            let a = c.unsigned_abs();
            if m.is_empty() {
                write!(f, "{a}")?;
                continue;
            }
            // A leading `-` binds tighter than `/` and `%`, so a negated
            // division is parenthesized like a product: `-((b-e)/s)`.
            let product = m.len() > 1 || a != 1 || leading_minus;
            let mut parts = Vec::new();
            if a != 1 {
                parts.push(a.to_string());
            }
            for atom in m {
                parts.push(atom.render(product));
            }
            f.write_str(&parts.join("*"))?;
        }
        Ok(())
    }
}

impl Atom {
    fn render(&self, in_product: bool) -> String {
        let operand = |e: &SizeExpr| {
            let simple = e.terms.len() <= 1
                && e.terms.iter().all(|(m, c)| {
                    (m.is_empty() && *c >= 0)
                        || (*c == 1
                            && m.len() == 1
                            && matches!(m[0], Atom::Sym(_) | Atom::Min(..) | Atom::Max(..)))
                });
            if simple {
                e.to_string()
            } else {
                format!("({e})")
            }
        };
        match self {
            Atom::Sym(s) => s.clone(),
            Atom::Div(a, b) | Atom::Mod(a, b) => {
                let op = if matches!(self, Atom::Div(..)) {
                    "/"
                } else {
                    "%"
                };
                let s = format!("{}{op}{}", operand(a), operand(b));
                if in_product {
                    format!("({s})")
                } else {
                    s
                }
            }
            Atom::Min(a, b) => format!("min({a},{b})"),
            Atom::Max(a, b) => format!("max({a},{b})"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(n: &str) -> SizeExpr {
        SizeExpr::sym(n)
    }

    #[test]
    fn canonical_sums_print_symbols_first_constant_last() {
        let e = s("H").sub(&s("KH")).add_const(1);
        assert_eq!(e.to_string(), "H-KH+1");
        assert_eq!(s("KH").neg().add(&s("H")).add_const(1), e);
    }

    #[test]
    fn floor_division_splits_off_divisible_terms() {
        let e = s("H").scale(6).add_const(1).div(&SizeExpr::constant(3));
        assert_eq!(e, s("H").scale(2));
        let e = s("H")
            .add_const(-2)
            .div(&SizeExpr::constant(2))
            .add_const(1);
        assert_eq!(e.to_string(), "H/2");
        let mut env = HashMap::new();
        env.insert("H".to_string(), 7);
        assert_eq!(e.eval_map(&env), Ok(3));
    }

    #[test]
    fn min_of_provably_ordered_sizes_folds() {
        assert_eq!(s("N").smin(&s("N").add_const(3)), s("N"));
        assert_eq!(s("N").smax(&s("N").add_const(3)), s("N").add_const(3));
        assert_eq!(s("N").smin(&s("M")).to_string(), "min(M,N)");
    }

    #[test]
    fn negated_divisions_print_with_parentheses() {
        let e = s("b").sub(&s("e")).div(&s("s")).neg();
        assert_eq!(e.to_string(), "-((b-e)/s)");
    }

    #[test]
    fn constant_division_floors_for_negative_divisors() {
        let e = SizeExpr::constant(-11).div(&SizeExpr::constant(-3));
        assert_eq!(e.as_const(), Some(3));
        let e = s("a").div(&s("d"));
        let mut env = HashMap::new();
        env.insert("a".to_string(), -11);
        env.insert("d".to_string(), -3);
        assert_eq!(e.eval_map(&env), Ok(3));
        assert_eq!(s("a").rem(&s("d")).eval_map(&env), Ok(-2));
        env.insert("a".to_string(), 7);
        assert_eq!(s("a").rem(&s("d")).eval_map(&env), Ok(-2));
    }

    #[test]
    fn unbound_symbols_are_reported() {
        let env = HashMap::new();
        assert_eq!(s("Q").eval_map(&env), Err(EvalError::Unbound("Q".into())));
    }
}
