//! Affine forms over block indices: `constant + sum(coef * index)`.
//!
//! Kernel IR sizes are concrete (a kernel is lowered for bound sizes), so
//! coefficients and constants are integers. Terms with a zero coefficient
//! are never stored, so equal forms compare equal.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Affine {
    pub constant: i64,
    /// Index name to non-zero coefficient.
    pub terms: BTreeMap<String, i64>,
}

impl Affine {
    pub fn constant(c: i64) -> Affine {
        Affine {
            constant: c,
            terms: BTreeMap::new(),
        }
    }

    pub fn index(name: &str) -> Affine {
        Affine::term(name, 1)
    }

    pub fn term(name: &str, coef: i64) -> Affine {
        let mut a = Affine::constant(0);
        a.add_term(name, coef);
        a
    }

    pub fn add_term(&mut self, name: &str, coef: i64) {
        self.add_term_as(name, coef, Arith::Wrapping);
    }

    /// Adds `coef * name`; `None` if the coefficient overflows under
    /// checked arithmetic.
    fn add_term_as(&mut self, name: &str, coef: i64, arith: Arith) -> Option<()> {
        let c = self.terms.entry(name.to_string()).or_insert(0);
        *c = arith.add(*c, coef)?;
        if *c == 0 {
            self.terms.remove(name);
        }
        Some(())
    }

    /// `self + k * other` under `arith`.
    fn add_scaled(&self, other: &Affine, k: i64, arith: Arith) -> Option<Affine> {
        let mut r = self.clone();
        r.constant = arith.add(r.constant, arith.mul(other.constant, k)?)?;
        for (n, c) in &other.terms {
            r.add_term_as(n, arith.mul(*c, k)?, arith)?;
        }
        Some(r)
    }

    /// `self + other`, wrapping: for forms known to fit, as a verified
    /// kernel's are (within its index ranges, `kernel::verify` bounds
    /// every access); forms built from source expressions use
    /// [`Affine::checked_add`].
    pub fn add(&self, other: &Affine) -> Affine {
        self.add_scaled(other, 1, Arith::Wrapping)
            .unwrap_or_default()
    }

    /// `k * self`, wrapping (see [`Affine::add`]).
    pub fn scale(&self, k: i64) -> Affine {
        Affine::constant(0)
            .add_scaled(self, k, Arith::Wrapping)
            .unwrap_or_default()
    }

    pub fn sub(&self, other: &Affine) -> Affine {
        self.add(&other.scale(-1))
    }

    /// `self + k * other`; `None` if a coefficient or the constant leaves
    /// `int64`.
    pub fn checked_add_scaled(&self, other: &Affine, k: i64) -> Option<Affine> {
        self.add_scaled(other, k, Arith::Checked)
    }

    pub fn is_constant(&self) -> bool {
        self.terms.is_empty()
    }

    /// The value with every index bound; `None` if one is missing or the
    /// value leaves `int64`.
    pub fn eval(&self, env: &HashMap<String, i64>) -> Option<i64> {
        self.eval_by(|n| env.get(n).copied())
    }

    /// The value where `index` gives each index's value (`None` if it
    /// lacks one, or on overflow).
    pub fn eval_by(&self, index: impl Fn(&str) -> Option<i64>) -> Option<i64> {
        let exact = self
            .terms
            .iter()
            .try_fold(i128::from(self.constant), |acc, (n, c)| {
                Some(acc + i128::from(*c) * i128::from(index(n)?))
            })?;
        i64::try_from(exact).ok()
    }

    /// Replaces indices by affine forms (those `f` maps; others stay).
    pub fn subst(&self, f: &dyn Fn(&str) -> Option<Affine>) -> Affine {
        let mut r = Affine::constant(self.constant);
        for (n, c) in &self.terms {
            match f(n) {
                Some(a) => r = r.add(&a.scale(*c)),
                None => r.add_term(n, *c),
            }
        }
        r
    }

    /// Whether every partial sum of the form, in any order, fits `int64`
    /// over index ranges `[0, range)` (an index missing from `ranges`
    /// makes it false): what C code computing the form needs.
    pub fn fits(&self, ranges: &HashMap<String, u64>) -> bool {
        let mut total = i128::from(self.constant).abs();
        for (n, c) in &self.terms {
            let Some(&range) = ranges.get(n) else {
                return false;
            };
            // A product is at most 2^63 (2^64 - 1) and the sum stops at the
            // first excess over 2^63, so `i128` holds it.
            total += i128::from(*c).abs() * i128::from(range.saturating_sub(1));
            if total > i128::from(i64::MAX) {
                return false;
            }
        }
        true
    }

    /// The smallest and largest values over index ranges `[0, range)`
    /// (an index missing from `ranges` makes the result `None`).
    pub fn bounds(&self, ranges: &HashMap<String, u64>) -> Option<(i64, i64)> {
        let (mut lo, mut hi) = (self.constant, self.constant);
        for (n, c) in &self.terms {
            let last = i64::try_from(*ranges.get(n)?).ok()?.checked_sub(1)?;
            if *c >= 0 {
                hi = hi.checked_add(c.checked_mul(last)?)?;
            } else {
                lo = lo.checked_add(c.checked_mul(last)?)?;
            }
        }
        Some((lo, hi))
    }
}

/// How coefficients combine: wrapping, or checked (`None` on overflow).
#[derive(Clone, Copy, Debug)]
enum Arith {
    Wrapping,
    Checked,
}

impl Arith {
    fn add(self, a: i64, b: i64) -> Option<i64> {
        match self {
            Arith::Wrapping => Some(a.wrapping_add(b)),
            Arith::Checked => a.checked_add(b),
        }
    }

    fn mul(self, a: i64, b: i64) -> Option<i64> {
        match self {
            Arith::Wrapping => Some(a.wrapping_mul(b)),
            Arith::Checked => a.checked_mul(b),
        }
    }
}

/// `2*i + j - 1`, `0`, `-x`: terms in name order, then the constant.
impl fmt::Display for Affine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for (n, c) in &self.terms {
            let sign = if *c < 0 {
                "-"
            } else if first {
                ""
            } else {
                " + "
            };
            let sign = if *c < 0 && !first { " - " } else { sign };
            let a = c.unsigned_abs();
            if a == 1 {
                write!(f, "{sign}{n}")?;
            } else {
                write!(f, "{sign}{a}*{n}")?;
            }
            first = false;
        }
        if first {
            write!(f, "{}", self.constant)
        } else if self.constant > 0 {
            write!(f, " + {}", self.constant)
        } else if self.constant < 0 {
            write!(f, " - {}", self.constant.unsigned_abs())
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_print_in_name_order_with_signs() {
        let a = Affine::term("x", 3)
            .add(&Affine::index("i"))
            .add(&Affine::constant(-1));
        assert_eq!(a.to_string(), "i + 3*x - 1");
        assert_eq!(Affine::term("x", -1).to_string(), "-x");
        assert_eq!(Affine::constant(0).to_string(), "0");
        assert_eq!(a.sub(&a), Affine::constant(0));
    }

    #[test]
    fn bounds_follow_coefficient_signs() {
        let a = Affine::term("x", 2)
            .sub(&Affine::index("i"))
            .add(&Affine::constant(1));
        let ranges: HashMap<String, u64> = [("x".to_string(), 4), ("i".to_string(), 3)].into();
        assert_eq!(a.bounds(&ranges), Some((1 - 2, 1 + 6)));
    }
}
