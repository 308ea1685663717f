//! The values an integer expression takes over an iteration box, and
//! whether computing it may wrap `int64`.
//!
//! Subscripts are computed without wrapping (`docs/LANGUAGE.md`, "What
//! out-of-bounds reads mean"): a subscript whose `int64` arithmetic leaves
//! `int64` reads out of bounds. The interpreter computes a subscript with
//! plain machine arithmetic only where [`Bounds::interval`] proves that no
//! `int64` operation in it can wrap anywhere in the statement's box, and
//! checks every operation otherwise; lowering refuses a subscript or a
//! condition it cannot prove, since a kernel computes affine forms exactly
//! and everything else wrapping. The analysis is strict so that both may
//! rely on it: the lets a subscript uses and the conditions of its `?:`
//! count too (a let is computed wrapping, but lowering inlines it into an
//! exact affine form); the subscripts of the reads it uses do not (each
//! read's own subscripts are analysed for that read).
//!
//! Intervals are by operation, not relational: `i - i` over `0:4` is
//! `[-3, 3]`, so a proof may fail where the values would not wrap, never
//! the other way round. Narrower integer types wrap by definition (`int32`
//! arithmetic is arithmetic modulo 2^32), so an operation of theirs that
//! may leave the type gives the type's whole range instead of failing;
//! `uint64` values and floats always have their whole range. A `?:`
//! narrows, in each branch, an expression its condition compares with
//! another (`I(i) < 0 ? I(i) + N : I(i)`: the first branch sees
//! `I(i) <= -1`), so the usual guard of a gather's negative indices is
//! proved.

use std::collections::HashMap;

use crate::{int_max, int_min, BinOp, Builtin, DType, Def, Expr, UnOp, Value};

/// What the names of an expression range over.
#[derive(Clone, Copy, Debug)]
pub struct Bounds<'a> {
    pub def: &'a Def,
    /// The lets in scope, in order; each sees only the ones before it.
    pub lets: &'a [(String, Expr)],
    /// The smallest and largest value of each iterator.
    pub iters: &'a HashMap<String, (i64, i64)>,
    /// Size symbols and integer scalars.
    pub sizes: &'a HashMap<String, i64>,
}

/// An `int64` operation of the expression may wrap somewhere in the box.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MayWrap;

/// The values of a subexpression, with its type.
#[derive(Clone, Copy, Debug)]
struct Span {
    t: DType,
    lo: i64,
    hi: i64,
}

/// What a branch knows of an expression its condition compared.
type Fact<'e> = (&'e Expr, i64, i64);

impl Span {
    /// Every value of type `t` (a float's or `uint64`'s: unknown).
    fn whole(t: DType) -> Span {
        let (lo, hi) = match t {
            DType::Bool => (0, 1),
            DType::U64 => (i64::MIN, i64::MAX),
            _ if t.is_float() => (i64::MIN, i64::MAX),
            _ => (int_min(t), int_max(t)),
        };
        Span { t, lo, hi }
    }

    /// The result `[lo, hi]` of an operation of type `t`: itself if the
    /// type holds it; else, for `int64`, a wrap, and for narrower types
    /// (which wrap by definition) the type's whole range.
    fn of(t: DType, lo: i128, hi: i128) -> Result<Span, MayWrap> {
        let w = Span::whole(t);
        if !t.is_int() || t == DType::U64 {
            return Ok(w);
        }
        if lo >= i128::from(w.lo) && hi <= i128::from(w.hi) {
            // Inside the type's range, so inside i64's.
            return Ok(Span {
                t,
                lo: lo as i64,
                hi: hi as i64,
            });
        }
        if t == DType::I64 {
            Err(MayWrap)
        } else {
            Ok(w)
        }
    }

    /// Whether the interval is that of comparable integers (signed, or
    /// unsigned narrower than 64 bits: their order is `i64`'s).
    fn ordered(self) -> bool {
        self.t.is_int() && self.t != DType::U64
    }
}

impl<'a> Bounds<'a> {
    /// The smallest and largest value of integer or `bool` expression `e`
    /// over the box (for floats and `uint64`, all of `i64`), or
    /// `Err(MayWrap)` if some `int64` operation in it may wrap there.
    pub fn interval(&self, e: &Expr) -> Result<(i64, i64), MayWrap> {
        self.span(e, self.lets.len(), &[]).map(|s| (s.lo, s.hi))
    }

    fn span<'e>(&self, e: &'e Expr, lets: usize, facts: &[Fact<'e>]) -> Result<Span, MayWrap> {
        let mut s = self.raw(e, lets, facts)?;
        for (x, lo, hi) in facts {
            if *x == e && s.ordered() {
                // An empty intersection is a branch never taken, where any
                // interval is sound.
                s.lo = s.lo.max(*lo);
                s.hi = s.hi.min(*hi).max(s.lo);
            }
        }
        Ok(s)
    }

    fn raw<'e>(&self, e: &'e Expr, lets: usize, facts: &[Fact<'e>]) -> Result<Span, MayWrap> {
        let span = |x: &'e Expr| self.span(x, lets, facts);
        Ok(match e {
            Expr::Lit(Value::Int(v), t) if t.is_int() && *t != DType::U64 => Span {
                t: *t,
                lo: *v,
                hi: *v,
            },
            Expr::Lit(Value::Bool(b), _) => Span {
                t: DType::Bool,
                lo: i64::from(*b),
                hi: i64::from(*b),
            },
            Expr::Lit(_, t) => Span::whole(*t),
            Expr::Iter(n) => match self.iters.get(n) {
                Some(&(lo, hi)) => Span {
                    t: DType::I64,
                    lo,
                    hi,
                },
                None => Span::whole(DType::I64),
            },
            Expr::Sym(n) => {
                let t = self.def.scalar(n).unwrap_or(DType::I64);
                match self.sizes.get(n) {
                    Some(&v) if t.is_int() => Span::of(t, v.into(), v.into())?,
                    _ => Span::whole(t),
                }
            }
            // The last binding before the use, seeing only the lets before it.
            Expr::Local(n) => match self.lets[..lets].iter().rposition(|(m, _)| m == n) {
                Some(k) => self.span(&self.lets[k].1, k, &[])?,
                None => Span::whole(DType::I64),
            },
            Expr::Read(t, _) => Span::whole(self.def.tensor(t).map_or(DType::F32, |d| d.dtype)),
            Expr::Cast(t, a) => {
                let s = span(a)?;
                if s.t.is_float() || (s.t == DType::U64) != (*t == DType::U64) {
                    Span::whole(*t)
                } else {
                    // An integer in the target's range keeps its value.
                    Span::of(*t, s.lo.into(), s.hi.into()).map_or(Span::whole(*t), |x| x)
                }
            }
            Expr::Unary(UnOp::Not, a) => {
                span(a)?;
                Span::whole(DType::Bool)
            }
            Expr::Unary(UnOp::Neg, a) => {
                let s = span(a)?;
                Span::of(s.t, -i128::from(s.hi), -i128::from(s.lo))?
            }
            Expr::Binary(op, a, b) => {
                let (x, y) = (span(a)?, span(b)?);
                if op.is_comparison() || op.is_logical() {
                    return Ok(Span::whole(DType::Bool));
                }
                let (lo, hi) = arith(*op, x, y);
                Span::of(x.t, lo, hi)?
            }
            Expr::Select(c, a, b) => {
                span(c)?;
                let mut yes = facts.to_vec();
                self.facts(c, true, lets, &mut yes);
                let mut no = facts.to_vec();
                self.facts(c, false, lets, &mut no);
                let (x, y) = (self.span(a, lets, &yes)?, self.span(b, lets, &no)?);
                Span {
                    t: x.t,
                    lo: x.lo.min(y.lo),
                    hi: x.hi.max(y.hi),
                }
            }
            Expr::Call(f, args) => {
                let xs = args.iter().map(span).collect::<Result<Vec<_>, _>>()?;
                let Some(&x) = xs.first() else {
                    return Ok(Span::whole(DType::F32));
                };
                match (f, xs.get(1)) {
                    _ if !x.ordered() => Span::whole(x.t),
                    (Builtin::Max, Some(y)) => Span {
                        lo: x.lo.max(y.lo),
                        hi: x.hi.max(y.hi),
                        ..x
                    },
                    (Builtin::Min, Some(y)) => Span {
                        lo: x.lo.min(y.lo),
                        hi: x.hi.min(y.hi),
                        ..x
                    },
                    // `abs` of the least value wraps to itself, by definition.
                    (Builtin::Abs, _) if x.lo > int_min(x.t) => {
                        let (lo, hi) = (i128::from(x.lo), i128::from(x.hi));
                        let top = lo.abs().max(hi.abs());
                        let bottom = if lo <= 0 && hi >= 0 {
                            0
                        } else {
                            lo.abs().min(hi.abs())
                        };
                        Span::of(x.t, bottom, top)?
                    }
                    _ => Span::whole(x.t),
                }
            }
        })
    }

    /// Adds to `out` what condition `c` being `taken` says of the
    /// expressions it compares.
    fn facts<'e>(&self, c: &'e Expr, taken: bool, lets: usize, out: &mut Vec<Fact<'e>>) {
        use BinOp::{And, Eq, Ge, Gt, Le, Lt, Ne, Or};
        match c {
            Expr::Unary(UnOp::Not, x) => self.facts(x, !taken, lets, out),
            Expr::Binary(op @ (And | Or), x, y) if (*op == And) == taken => {
                self.facts(x, taken, lets, out);
                self.facts(y, taken, lets, out);
            }
            Expr::Binary(op, x, y) if op.is_comparison() => {
                let known: &[Fact<'e>] = out;
                let (Ok(sx), Ok(sy)) = (self.span(x, lets, known), self.span(y, lets, known))
                else {
                    return;
                };
                if !sx.ordered() {
                    return;
                }
                let op = match (op, taken) {
                    (_, true) => *op,
                    (Lt, false) => Ge,
                    (Le, false) => Gt,
                    (Gt, false) => Le,
                    (Ge, false) => Lt,
                    (Eq, false) => Ne,
                    _ => Eq,
                };
                // `x op y`, and the same read from `y`'s side.
                let mirrored = match op {
                    Lt => Gt,
                    Le => Ge,
                    Gt => Lt,
                    Ge => Le,
                    other => other,
                };
                for (e, other, op) in [(&**x, sy, op), (&**y, sx, mirrored)] {
                    let (lo, hi) = match op {
                        Lt => (i64::MIN, other.hi.saturating_sub(1)),
                        Le => (i64::MIN, other.hi),
                        Gt => (other.lo.saturating_add(1), i64::MAX),
                        Ge => (other.lo, i64::MAX),
                        Eq => (other.lo, other.hi),
                        _ => continue,
                    };
                    out.push((e, lo, hi));
                }
            }
            _ => {}
        }
    }
}

/// `[lo, hi]` of `x op y` for an arithmetic `op`, exactly (in `i128`, where
/// products and quotients of `i64` bounds fit).
fn arith(op: BinOp, x: Span, y: Span) -> (i128, i128) {
    let (a, b) = (
        (i128::from(x.lo), i128::from(x.hi)),
        (i128::from(y.lo), i128::from(y.hi)),
    );
    let hull = |v: &[i128]| {
        (
            v.iter().copied().min().unwrap_or(0),
            v.iter().copied().max().unwrap_or(0),
        )
    };
    // The divisor's interval without 0: a negative and a positive part.
    let parts = [(b.0, b.1.min(-1)), (b.0.max(1), b.1)];
    let parts = parts.iter().filter(|(lo, hi)| lo <= hi);
    match op {
        BinOp::Add => (a.0 + b.0, a.1 + b.1),
        BinOp::Sub => (a.0 - b.1, a.1 - b.0),
        BinOp::Mul => hull(&[a.0 * b.0, a.0 * b.1, a.1 * b.0, a.1 * b.1]),
        // Floor division is monotone in each operand while the divisor
        // keeps its sign, so each part takes its extremes at its corners.
        BinOp::Div => {
            let q: Vec<i128> = parts
                .flat_map(|&(lo, hi)| [(a.0, lo), (a.0, hi), (a.1, lo), (a.1, hi)])
                .map(|(n, d)| n.div_euclid(d) - i128::from(d < 0 && n.rem_euclid(d) != 0))
                .collect();
            hull(&q)
        }
        // The remainder has the divisor's sign and is smaller in size; a
        // dividend already below a positive divisor is its own remainder.
        BinOp::Mod if a.0 >= 0 && b.0 > a.1 => a,
        BinOp::Mod => {
            let r: Vec<i128> = parts
                .map(|&(lo, hi)| if lo > 0 { hi - 1 } else { lo + 1 })
                .chain([0])
                .collect();
            hull(&r)
        }
        // Not arithmetic: the caller handles comparisons and logic.
        _ => (i128::from(i64::MIN), i128::from(i64::MAX)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Param, SizeExpr, TensorDecl, TensorRole};

    fn lit(v: i64) -> Expr {
        Expr::Lit(Value::Int(v), DType::I64)
    }
    fn iter(n: &str) -> Expr {
        Expr::Iter(n.to_string())
    }
    fn bin(op: BinOp, a: Expr, b: Expr) -> Expr {
        Expr::Binary(op, Box::new(a), Box::new(b))
    }
    fn read(t: &str) -> Expr {
        Expr::Read(t.to_string(), vec![iter("i")])
    }

    /// A def with an `int64` index tensor `I` and an `int32` one `J`.
    fn def() -> Def {
        let decl = |name: &str, dtype| TensorDecl {
            name: name.to_string(),
            dtype,
            shape: vec![SizeExpr::constant(4)],
            role: TensorRole::Input,
        };
        Def {
            name: "f".to_string(),
            params: vec![
                Param::Tensor("I".to_string()),
                Param::Tensor("J".to_string()),
            ],
            outputs: Vec::new(),
            tensors: vec![decl("I", DType::I64), decl("J", DType::I32)],
            stmts: Vec::new(),
        }
    }

    /// The interval of `e` with `i` in `0..=4`, `k` in `0..=2` and `N = 10`.
    fn interval(e: &Expr, lets: &[(String, Expr)]) -> Result<(i64, i64), MayWrap> {
        let d = def();
        let iters = [("i".to_string(), (0, 4)), ("k".to_string(), (0, 2))].into();
        let sizes = [("N".to_string(), 10)].into();
        Bounds {
            def: &d,
            lets,
            iters: &iters,
            sizes: &sizes,
        }
        .interval(e)
    }

    #[test]
    fn affine_subscripts_that_leave_int64_may_wrap() {
        // The subscript: 4 * 2^62 + k is 2^64 + k.
        let big = bin(BinOp::Mul, iter("i"), lit(1 << 62));
        let e = bin(BinOp::Add, big.clone(), iter("k"));
        assert_eq!(interval(&e, &[]), Err(MayWrap));
        let small = bin(BinOp::Mul, iter("i"), lit(1 << 60));
        let e = bin(BinOp::Add, small, iter("k"));
        assert_eq!(interval(&e, &[]), Ok((0, (4 << 60) + 2)));
        // Through a let, and under a cast to a narrower type.
        let lets = [("t".to_string(), big.clone())];
        assert_eq!(interval(&Expr::Local("t".to_string()), &lets), Err(MayWrap));
        assert_eq!(
            interval(&Expr::Cast(DType::I32, Box::new(big)), &[]),
            Err(MayWrap)
        );
        // `i64::MIN / -1` and `-i64::MIN` wrap; `%` never does.
        let min = bin(BinOp::Sub, lit(i64::MIN + 2), iter("k"));
        assert_eq!(
            interval(&bin(BinOp::Div, min.clone(), lit(-1)), &[]),
            Err(MayWrap)
        );
        assert_eq!(
            interval(&Expr::Unary(UnOp::Neg, Box::new(min.clone())), &[]),
            Err(MayWrap)
        );
        assert_eq!(interval(&bin(BinOp::Mod, min, lit(-3)), &[]), Ok((-2, 0)));
    }

    #[test]
    fn floor_division_and_modulo_take_exact_extremes() {
        let x = bin(BinOp::Sub, iter("i"), lit(3)); // -3..=1
        assert_eq!(
            interval(&bin(BinOp::Div, x.clone(), lit(2)), &[]),
            Ok((-2, 0))
        );
        assert_eq!(
            interval(&bin(BinOp::Div, x.clone(), lit(-2)), &[]),
            Ok((-1, 1))
        );
        assert_eq!(interval(&bin(BinOp::Mod, x, lit(4)), &[]), Ok((0, 3)));
        assert_eq!(
            interval(&bin(BinOp::Mod, iter("k"), lit(4)), &[]),
            Ok((0, 2))
        );
    }

    #[test]
    fn tensor_values_span_their_type_and_guards_narrow_them() {
        // `I(i) + 1` may wrap for an int64 `I`; int32 arithmetic wraps by
        // definition and is the type's range.
        let plus = |t: &str, one: Expr| bin(BinOp::Add, read(t), one);
        assert_eq!(interval(&plus("I", lit(1)), &[]), Err(MayWrap));
        let one32 = Expr::Lit(Value::Int(1), DType::I32);
        assert_eq!(
            interval(&plus("J", one32), &[]),
            Ok((i64::from(i32::MIN), i64::from(i32::MAX)))
        );
        // The prelude's gather: `I(i) < 0 ? I(i) + N : I(i)`.
        let n = Expr::Sym("N".to_string());
        let gather = Expr::Select(
            Box::new(bin(BinOp::Lt, read("I"), lit(0))),
            Box::new(bin(BinOp::Add, read("I"), n.clone())),
            Box::new(read("I")),
        );
        assert_eq!(interval(&gather, &[]), Ok((i64::MIN + 10, i64::MAX)));
        // Negated, the other branch is the narrowed one.
        let flipped = Expr::Select(
            Box::new(Expr::Unary(
                UnOp::Not,
                Box::new(bin(BinOp::Ge, read("I"), lit(0))),
            )),
            Box::new(bin(BinOp::Add, read("I"), n)),
            Box::new(read("I")),
        );
        assert_eq!(interval(&flipped, &[]), Ok((i64::MIN + 10, i64::MAX)));
    }
}
