//! Compiled tensor reads: subscripts, strides, bounds checks and skipping.
//!
//! A read `T(e1, ..., en)` is resolved once per statement execution to the
//! tensor's data slice, its dimensions and row-major strides. A subscript's
//! `int64` arithmetic never wraps: where `ir::Bounds` proves that it cannot
//! over the statement's box, a subscript that is an affine form in the
//! iterators (sizes and scalars folded into constants) is kept as
//! `constant + sum(coef * slot)` and any other as a compiled integer
//! closure, both with plain machine arithmetic; the form's own coefficients
//! may wrap as they are folded, but wrapping `+ - *` is a ring homomorphism,
//! so the form computes the subscript's value exactly when that value is an
//! `int64`, as the proof says. A subscript not proved is computed with
//! checked arithmetic (`checked.rs`), and one whose arithmetic overflows is
//! out of bounds.
//!
//! An out-of-bounds read either skips the current point of a reduction (a
//! skippable read: in a reduction, no tensor read in its subscripts; under a
//! `?:` branch too, since a read of a branch that is taken is evaluated like
//! any other) or fails with the indices and the shape.

use ir::{BinOp, Expr, UnOp};

use crate::checked::CheckedFn;
use crate::compile::Scope;
use crate::frame::{Eval, Frame, IntFn, Stop};
use crate::tensors::show_tuple;
use tensor::Tensor;

/// `constant + sum(coef * ints[slot])`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Affine {
    constant: i64,
    terms: Vec<(usize, i64)>,
}

impl Affine {
    fn constant(c: i64) -> Affine {
        Affine {
            constant: c,
            terms: Vec::new(),
        }
    }

    fn scale(mut self, k: i64) -> Affine {
        self.constant = self.constant.wrapping_mul(k);
        for t in &mut self.terms {
            t.1 = t.1.wrapping_mul(k);
        }
        self
    }

    fn add(mut self, other: Affine) -> Affine {
        self.constant = self.constant.wrapping_add(other.constant);
        self.terms.extend(other.terms);
        self
    }

    fn eval(&self, f: &Frame) -> i64 {
        self.terms.iter().fold(self.constant, |acc, &(s, k)| {
            acc.wrapping_add(k.wrapping_mul(f.ints[s]))
        })
    }
}

enum Subscript<'a> {
    /// Proved not to wrap: affine.
    Affine(Affine),
    /// Proved not to wrap: anything else.
    Dynamic(IntFn<'a>),
    /// Not proved: checked.
    Checked(CheckedFn<'a>),
}

impl Subscript<'_> {
    /// The subscript's value, or `None` where its arithmetic overflows.
    fn eval(&self, f: &mut Frame) -> Eval<Option<i64>> {
        match self {
            Subscript::Affine(a) => Ok(Some(a.eval(f))),
            Subscript::Dynamic(g) => g(f).map(Some),
            Subscript::Checked(g) => g(f),
        }
    }
}

/// A read resolved for one statement execution.
pub(crate) struct ReadPlan<'a> {
    name: String,
    dims: Vec<i64>,
    strides: Vec<usize>,
    subs: Vec<Subscript<'a>>,
    skippable: bool,
}

impl<'a> ReadPlan<'a> {
    /// Resolves `name(subs)` in `scope`; also returns the tensor read.
    pub(crate) fn new(
        scope: &Scope<'a>,
        name: &str,
        subs: &[Expr],
    ) -> Result<(ReadPlan<'a>, &'a Tensor), String> {
        let env = scope.env;
        let tensor = env
            .get(name)
            .ok_or_else(|| format!("`{name}` is read before it is defined"))?;
        if tensor.shape().len() != subs.len() {
            return Err(format!(
                "`{name}` has {} dimensions but is read with {} subscripts",
                tensor.shape().len(),
                subs.len()
            ));
        }
        let compiled = subs
            .iter()
            .map(|e| match affine(scope, e) {
                _ if scope.bounds().interval(e).is_err() => scope
                    .checked(e)
                    .map(Subscript::Checked)
                    .map_err(|m| format!("subscript of `{name}`: {m}")),
                Some(a) => Ok(Subscript::Affine(a)),
                None => {
                    let (g, _) = scope
                        .int(e)
                        .map_err(|m| format!("subscript of `{name}`: {m}"))?;
                    Ok(Subscript::Dynamic(g))
                }
            })
            .collect::<Result<Vec<_>, String>>()?;
        let indirect = subs.iter().any(|e| e.any(&|x| matches!(x, Expr::Read(..))));
        let plan = ReadPlan {
            name: name.to_string(),
            // Tensor shapes are capped far below i64::MAX elements.
            dims: tensor.shape().iter().map(|&d| d as i64).collect(),
            strides: tensor.strides().to_vec(),
            subs: compiled,
            skippable: scope.reduction && !indirect,
        };
        Ok((plan, tensor))
    }

    /// The flat offset of the read at the current point.
    pub(crate) fn offset(&self, f: &mut Frame) -> Eval<usize> {
        let mut off = 0usize;
        for ((sub, &dim), &stride) in self.subs.iter().zip(&self.dims).zip(&self.strides) {
            let i = sub.eval(f)?.unwrap_or(-1);
            if i < 0 || i >= dim {
                return Err(self.out_of_bounds(f));
            }
            off += i as usize * stride;
        }
        Ok(off)
    }

    #[cold]
    fn out_of_bounds(&self, f: &mut Frame) -> Stop {
        if self.skippable {
            return Stop::Skip;
        }
        // Re-evaluating the subscripts is safe (they have no effects) and
        // only happens on this error path.
        let idx: Vec<String> = self
            .subs
            .iter()
            .map(|s| {
                s.eval(f).map_or_else(
                    |_| "?".to_string(),
                    |v| v.map_or_else(|| "an int64 overflow".to_string(), |v| v.to_string()),
                )
            })
            .collect();
        f.fail(format!(
            "read of `{}` at {} is out of bounds for shape {}",
            self.name,
            show_tuple(&idx),
            show_tuple(&self.dims)
        ))
    }
}

/// The affine form of an `int64` subscript, if it has one.
fn affine(scope: &Scope, e: &Expr) -> Option<Affine> {
    match e {
        Expr::Iter(n) => scope.iters.get(n).map(|&s| Affine {
            constant: 0,
            terms: vec![(s, 1)],
        }),
        Expr::Unary(UnOp::Neg, a) => Some(affine(scope, a)?.scale(-1)),
        Expr::Binary(BinOp::Add, a, b) => Some(affine(scope, a)?.add(affine(scope, b)?)),
        Expr::Binary(BinOp::Sub, a, b) => Some(affine(scope, a)?.add(affine(scope, b)?.scale(-1))),
        Expr::Binary(BinOp::Mul, a, b) => {
            let (a, b) = (affine(scope, a)?, affine(scope, b)?);
            if a.terms.is_empty() {
                Some(b.scale(a.constant))
            } else if b.terms.is_empty() {
                Some(a.scale(b.constant))
            } else {
                None
            }
        }
        _ => scope.constant_i64(e).map(Affine::constant),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn affine_forms_wrap_like_the_expression() {
        let a = Affine {
            constant: i64::MAX,
            terms: vec![(0, 2)],
        }
        .add(Affine::constant(1));
        let f = Frame {
            ints: vec![3],
            ..Frame::default()
        };
        assert_eq!(a.eval(&f), i64::MAX.wrapping_add(1).wrapping_add(6));
        assert_eq!(
            a.scale(-1).eval(&f),
            i64::MAX.wrapping_add(7).wrapping_neg()
        );
    }
}
