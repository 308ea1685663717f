//! Affine forms with floor atoms: what subscripts and integer conditions of
//! a comprehension compile to for the verifier.
//!
//! A [`Form`] is `constant + sum(coef * iterator) + sum(coef * floor(inner /
//! divisor)) + sum(coef * (inner mod divisor))` with `int64` arithmetic,
//! each `inner` again a form and each divisor a positive constant. Floor
//! division and modulo by a positive constant keep an expression a form
//! (a modulo is kept as such, not as `L - k * floor(L / k)`, so that its
//! range is known to be `[0, k)`),
//! which is what lets box propagation (`boxes.rs`) see reshapes, strides
//! and dilations as affine pieces. Evaluation wraps like `int64` does, so a
//! form computes exactly what the interpreter computes for its expression.

use ir::{floor_div, floor_mod};

/// `floor(inner / divisor)`, with `divisor > 0`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Floor {
    pub inner: Form,
    pub divisor: i64,
}

/// An affine form over iterator slots and floor atoms.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Form {
    pub constant: i64,
    /// `(iterator slot, coefficient)`, one entry per slot, none zero.
    pub iters: Vec<(usize, i64)>,
    /// `(floor atom, coefficient)`, none zero.
    pub floors: Vec<(Floor, i64)>,
    /// `(inner mod divisor, coefficient)`, none zero.
    pub mods: Vec<(Floor, i64)>,
}

impl Form {
    pub(crate) fn constant(c: i64) -> Form {
        Form {
            constant: c,
            ..Form::default()
        }
    }

    pub(crate) fn iter(slot: usize) -> Form {
        Form {
            iters: vec![(slot, 1)],
            ..Form::default()
        }
    }

    /// The constant value, if the form has no iterators or floors.
    pub(crate) fn as_constant(&self) -> Option<i64> {
        (self.iters.is_empty() && self.floors.is_empty() && self.mods.is_empty())
            .then_some(self.constant)
    }

    pub(crate) fn add(mut self, other: Form) -> Form {
        self.constant = self.constant.wrapping_add(other.constant);
        for (slot, k) in other.iters {
            match self.iters.iter_mut().find(|(s, _)| *s == slot) {
                Some(t) => t.1 = t.1.wrapping_add(k),
                None => self.iters.push((slot, k)),
            }
        }
        self.iters.retain(|t| t.1 != 0);
        merge(&mut self.floors, other.floors);
        merge(&mut self.mods, other.mods);
        self
    }

    pub(crate) fn scale(mut self, k: i64) -> Form {
        if k == 0 {
            return Form::default();
        }
        self.constant = self.constant.wrapping_mul(k);
        for t in &mut self.iters {
            t.1 = t.1.wrapping_mul(k);
        }
        for t in self.floors.iter_mut().chain(&mut self.mods) {
            t.1 = t.1.wrapping_mul(k);
        }
        self.iters.retain(|t| t.1 != 0);
        self.floors.retain(|t| t.1 != 0);
        self.mods.retain(|t| t.1 != 0);
        self
    }

    /// `floor(self / k)` for `k > 0` (folded when the form is constant).
    pub(crate) fn floor_div(self, k: i64) -> Form {
        debug_assert!(k > 0);
        match self.as_constant() {
            Some(c) => Form::constant(floor_div(c, k)),
            None if k == 1 => self,
            None => Form {
                floors: vec![(
                    Floor {
                        inner: self,
                        divisor: k,
                    },
                    1,
                )],
                ..Form::default()
            },
        }
    }

    /// `self mod k` (floor modulo) for `k > 0`.
    pub(crate) fn floor_mod(self, k: i64) -> Form {
        debug_assert!(k > 0);
        match self.as_constant() {
            Some(c) => Form::constant(floor_mod(c, k)),
            None if k == 1 => Form::default(),
            None => Form {
                mods: vec![(
                    Floor {
                        inner: self,
                        divisor: k,
                    },
                    1,
                )],
                ..Form::default()
            },
        }
    }

    pub(crate) fn eval(&self, iters: &[i64]) -> i64 {
        let mut v = self.constant;
        for &(s, k) in &self.iters {
            v = v.wrapping_add(k.wrapping_mul(iters[s]));
        }
        for (f, k) in &self.floors {
            v = v.wrapping_add(k.wrapping_mul(floor_div(f.inner.eval(iters), f.divisor)));
        }
        for (f, k) in &self.mods {
            v = v.wrapping_add(k.wrapping_mul(floor_mod(f.inner.eval(iters), f.divisor)));
        }
        v
    }

    /// The least and greatest value over iterators in the inclusive
    /// ranges `range(slot)`, computed without overflow (a bound beyond
    /// `i64` saturates, which only widens it).
    pub(crate) fn interval(&self, range: &dyn Fn(usize) -> (i64, i64)) -> (i64, i64) {
        let (mut lo, mut hi) = (i128::from(self.constant), i128::from(self.constant));
        let mut term = |k: i64, (a, b): (i64, i64)| {
            let (x, y) = (i128::from(k) * i128::from(a), i128::from(k) * i128::from(b));
            lo += x.min(y);
            hi += x.max(y);
        };
        for &(s, k) in &self.iters {
            term(k, range(s));
        }
        for (f, k) in &self.floors {
            term(*k, f.interval(range));
        }
        for (f, k) in &self.mods {
            term(*k, f.mod_interval(range));
        }
        (saturate(lo), saturate(hi))
    }

    /// Every iterator slot the form depends on, floors and mods included.
    pub(crate) fn slots(&self, out: &mut Vec<usize>) {
        out.extend(self.iters.iter().map(|t| t.0));
        for (f, _) in self.floors.iter().chain(&self.mods) {
            f.inner.slots(out);
        }
    }

    /// Whether the form depends on iterator `slot`.
    pub(crate) fn uses(&self, slot: usize) -> bool {
        let mut s = Vec::new();
        self.slots(&mut s);
        s.contains(&slot)
    }
}

/// Adds `terms` into `into`, combining equal atoms; drops zero ones.
fn merge(into: &mut Vec<(Floor, i64)>, terms: Vec<(Floor, i64)>) {
    for (f, k) in terms {
        match into.iter_mut().find(|(g, _)| *g == f) {
            Some(t) => t.1 = t.1.wrapping_add(k),
            None => into.push((f, k)),
        }
    }
    into.retain(|t| t.1 != 0);
}

impl Floor {
    /// The range of `floor(inner / divisor)`.
    pub(crate) fn interval(&self, range: &dyn Fn(usize) -> (i64, i64)) -> (i64, i64) {
        let (a, b) = self.inner.interval(range);
        (floor_div(a, self.divisor), floor_div(b, self.divisor))
    }

    /// The range of `inner mod divisor`.
    pub(crate) fn mod_interval(&self, range: &dyn Fn(usize) -> (i64, i64)) -> (i64, i64) {
        let (a, b) = self.inner.interval(range);
        if floor_div(a, self.divisor) == floor_div(b, self.divisor) {
            (floor_mod(a, self.divisor), floor_mod(b, self.divisor))
        } else {
            (0, self.divisor - 1)
        }
    }
}

fn saturate(x: i128) -> i64 {
    x.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modulo_is_the_inner_form_minus_multiples_of_the_divisor() {
        // (2 * i + j) % 3 and (2 * i + j) / 3 at every point of a small box.
        let l = Form::iter(0).scale(2).add(Form::iter(1));
        let (q, r) = (l.clone().floor_div(3), l.floor_mod(3));
        for i in -4..5 {
            for j in -4..5 {
                let v = 2 * i + j;
                assert_eq!(q.eval(&[i, j]), v.div_euclid(3));
                assert_eq!(r.eval(&[i, j]), v.rem_euclid(3));
            }
        }
        let range = |s: usize| if s == 0 { (0, 4) } else { (0, 2) };
        assert_eq!(q.interval(&range), (0, 3));
        assert_eq!(r.interval(&range), (0, 2));
    }

    #[test]
    fn adding_the_opposite_cancels_every_term() {
        let l = Form::iter(0)
            .add(Form::iter(1).floor_div(4))
            .add(Form::constant(7));
        let zero = l.clone().add(l.scale(-1));
        assert_eq!(zero.as_constant(), Some(0));
    }
}
