//! Subscripts computed with checked `int64` arithmetic.
//!
//! A subscript's `int64` operations never wrap (`docs/LANGUAGE.md`): one
//! whose result leaves `int64` makes the read out of bounds. Most
//! subscripts are proved free of wrapping over their statement's box
//! (`ir::Bounds`) and computed with plain arithmetic by `read.rs`; the
//! others are compiled here, into closures that give `None` once an
//! `int64` `+ - *`, `/` or negation of the subscript overflows. Narrower
//! integer types keep their wrapping (it is their arithmetic), and what a
//! subscript uses as a value (reads, lets, builtins, `?:` conditions) is
//! computed as everywhere else.

use ir::{arith, BinOp, DType, Expr, UnOp};

use crate::compile::Scope;
use crate::frame::{Eval, Frame};

/// A subscript's value, or `None` where its `int64` arithmetic overflows.
pub(crate) type CheckedFn<'a> = Box<dyn Fn(&mut Frame) -> Eval<Option<i64>> + 'a>;

/// `a op b` for an arithmetic `op` in type `t`: `None` if it leaves `int64`
/// (for `t = int64`), wrapped to `t` otherwise; division by zero fails.
fn binary(f: &mut Frame, op: BinOp, t: DType, a: i64, b: i64) -> Eval<Option<i64>> {
    let exact = match op {
        BinOp::Add => a.checked_add(b),
        BinOp::Sub => a.checked_sub(b),
        BinOp::Mul => a.checked_mul(b),
        // `i64::MIN / -1` is the one quotient that overflows.
        BinOp::Div => Some(a).filter(|_| (a, b) != (i64::MIN, -1)),
        _ => Some(a),
    };
    if t == DType::I64 && exact.is_none() {
        return Ok(None);
    }
    arith::int_arith(op, t, a, b)
        .map(Some)
        .map_err(|e| f.fail(e.to_string()))
}

impl<'a> Scope<'a> {
    /// Compiles integer subscript `e` with checked `int64` arithmetic.
    pub(crate) fn checked(&self, e: &Expr) -> Result<CheckedFn<'a>, String> {
        let int = |x: &Expr| {
            let t = self.def.type_of(self.comp, x);
            t.is_int().then_some(t)
        };
        Ok(match (e, int(e)) {
            (Expr::Binary(op, a, b), Some(t)) if !op.is_comparison() && !op.is_logical() => {
                let (x, y, op) = (self.checked(a)?, self.checked(b)?, *op);
                Box::new(move |f| match (x(f)?, y(f)?) {
                    (Some(a), Some(b)) => binary(f, op, t, a, b),
                    _ => Ok(None),
                })
            }
            (Expr::Unary(UnOp::Neg, a), Some(t)) => {
                let x = self.checked(a)?;
                Box::new(move |f| {
                    Ok(x(f)?
                        .filter(|&v| t != DType::I64 || v != i64::MIN)
                        .map(|v| arith::int_neg(t, v)))
                })
            }
            (Expr::Select(c, a, b), Some(_)) => {
                let c = self.boolean(c)?;
                let (x, y) = (self.checked(a)?, self.checked(b)?);
                Box::new(move |f| if c(f)? { x(f) } else { y(f) })
            }
            // Between integer types a cast wraps to the target.
            (Expr::Cast(t, a), Some(_)) if int(a).is_some() => {
                let (x, t) = (self.checked(a)?, *t);
                Box::new(move |f| Ok(x(f)?.map(|v| arith::wrap(t, v))))
            }
            _ => {
                let (g, _) = self.int(e)?;
                Box::new(move |f| g(f).map(Some))
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int64_operations_that_overflow_give_none() {
        let mut f = Frame::default();
        let i64_op = |f: &mut Frame, op, a, b| binary(f, op, DType::I64, a, b);
        assert_eq!(i64_op(&mut f, BinOp::Mul, 1 << 62, 4), Ok(None));
        assert_eq!(i64_op(&mut f, BinOp::Add, i64::MAX, 1), Ok(None));
        assert_eq!(i64_op(&mut f, BinOp::Sub, i64::MIN, 1), Ok(None));
        assert_eq!(i64_op(&mut f, BinOp::Div, i64::MIN, -1), Ok(None));
        assert_eq!(i64_op(&mut f, BinOp::Div, -7, 2), Ok(Some(-4)));
        assert_eq!(i64_op(&mut f, BinOp::Mod, i64::MIN, -1), Ok(Some(0)));
        assert!(i64_op(&mut f, BinOp::Div, 1, 0).is_err());
        // Narrower types wrap, as their arithmetic does everywhere.
        let i32_mul = binary(&mut f, BinOp::Mul, DType::I32, 1 << 30, 4);
        assert_eq!(i32_mul, Ok(Some(0)));
    }
}
