//! A comprehension at concrete sizes as an iterator mapping [`Table`].
//!
//! The body must be one read, or a binary operation of two reads (a
//! product for the contractions); for a `+=` reduction it may stand under
//! a guard `cond ? body : 0`, `cond` a conjunction of comparisons of
//! subscript expressions and `e % k == 0` tests. The statement is `=` or
//! `+=` (with or without `!`). Subscripts are affine in the iterators after
//! expanding lets and substituting integer scalars by their values; a
//! floor quotient or modulo by a positive constant is simplified away when
//! the divisor divides every coefficient or the iterators' ranges keep the
//! quotient constant (a group count of 1 in the prelude's `f * G / F * CG +
//! c`), and otherwise stays a floor-divided subscript (only as a whole
//! subscript) or a divisibility test (only as `e % k == 0` in the guard).
//! Each iterator's range `lo:hi` becomes `0:hi-lo`, `lo` folded into the
//! constants. Each tensor's strides are row-major from its declared shape;
//! the output is the comprehension's tensor, subscripted by its
//! left-hand-side iterators.
//!
//! Requires a verified def whose shapes and ranges are constants (as
//! `ir::at_sizes` gives for bound sizes); the element types are not part
//! of the table, so a caller that needs floats checks them. Guarantees: the
//! table computes what the comprehension computes, point for point
//! (out-of-bounds reads being skipped in a reduction as in the
//! comprehension); anything it cannot describe is an `Unsupported` (or
//! `NotAProduct`) mismatch, never a panic.

use std::collections::HashMap;

use super::mismatch::Mismatch;
use super::table::{row_major, Access, Affine, Combine, Condition, Iter, Subscript, Table};
use crate::{floor_div, floor_mod, BinOp, Comprehension, DType, Def, Expr, Reduction, Value};

/// A subscript expression as it is built: affine, or a floor quotient or
/// remainder of an affine form by a constant above 1.
#[derive(Clone, Debug)]
enum Lin {
    Aff(Affine),
    Div(Affine, i64),
    Mod(Affine, i64),
}

/// What the conversion of expressions needs: the iterators' offsets and
/// extents, the lets and the scalars' values.
struct Scope<'a> {
    def: &'a Def,
    c: &'a Comprehension,
    lo: HashMap<&'a str, i64>,
    extent: HashMap<&'a str, u64>,
    scalars: &'a HashMap<String, i64>,
}

fn unsupported(why: String) -> Mismatch {
    Mismatch::Unsupported(why)
}

fn overflow() -> Mismatch {
    unsupported("a subscript overflows".into())
}

impl Scope<'_> {
    /// `e` as TC text, for a mismatch's message.
    fn text(&self, e: &Expr) -> String {
        crate::print_expr(self.def, Some(self.c), e)
    }

    fn interval(&self, a: &Affine) -> Option<(i64, i64)> {
        a.interval(&|n| self.extent.get(n).copied())
    }

    /// `floor(a / k)`, simplified when it is affine.
    fn div(&self, a: Affine, k: i64) -> Result<Lin, Mismatch> {
        if k == 1 {
            return Ok(Lin::Aff(a));
        }
        if a.terms.iter().all(|(_, c)| c % k == 0) {
            let terms = a.terms.iter().map(|(n, c)| (n.clone(), c / k));
            return Affine::new(terms, floor_div(a.constant, k))
                .map(Lin::Aff)
                .ok_or_else(overflow);
        }
        match self.interval(&a) {
            Some((lo, hi)) if floor_div(lo, k) == floor_div(hi, k) => {
                Ok(Lin::Aff(Affine::constant(floor_div(lo, k))))
            }
            _ => Ok(Lin::Div(a, k)),
        }
    }

    /// `a mod k` (floor modulo), simplified when it is affine.
    fn rem(&self, a: Affine, k: i64) -> Result<Lin, Mismatch> {
        if k == 1 {
            return Ok(Lin::Aff(Affine::constant(0)));
        }
        if a.terms.iter().all(|(_, c)| c % k == 0) {
            return Ok(Lin::Aff(Affine::constant(floor_mod(a.constant, k))));
        }
        match self.interval(&a) {
            Some((lo, hi)) if floor_div(lo, k) == floor_div(hi, k) => {
                let q = floor_div(lo, k).checked_mul(k).ok_or_else(overflow)?;
                a.add_scaled(&Affine::constant(q), -1)
                    .map(Lin::Aff)
                    .ok_or_else(overflow)
            }
            _ => Ok(Lin::Mod(a, k)),
        }
    }

    /// The affine form of `e`, with the lets before `visible` in scope.
    fn affine(&self, e: &Expr, visible: usize) -> Result<Affine, Mismatch> {
        match self.lin(e, visible)? {
            Lin::Aff(a) => Ok(a),
            Lin::Div(..) | Lin::Mod(..) => Err(unsupported(format!(
                "{} is not affine in the iterators",
                self.text(e)
            ))),
        }
    }

    /// A positive constant divisor.
    fn divisor(&self, e: &Expr, visible: usize) -> Result<i64, Mismatch> {
        let d = self.affine(e, visible)?;
        match (d.is_const(), d.constant) {
            (true, k) if k > 0 => Ok(k),
            _ => Err(unsupported(format!(
                "the divisor {} is not a positive constant",
                self.text(e)
            ))),
        }
    }

    fn lin(&self, e: &Expr, visible: usize) -> Result<Lin, Mismatch> {
        let aff = |a: Option<Affine>| a.map(Lin::Aff).ok_or_else(overflow);
        match e {
            Expr::Lit(Value::Int(v), _) => Ok(Lin::Aff(Affine::constant(*v))),
            Expr::Iter(x) => {
                let lo = self
                    .lo
                    .get(x.as_str())
                    .ok_or_else(|| unsupported(format!("iterator {x} has no range")))?;
                Ok(Lin::Aff(Affine {
                    terms: vec![(x.clone(), 1)],
                    constant: *lo,
                }))
            }
            Expr::Sym(s) => self
                .scalars
                .get(s)
                .map(|v| Lin::Aff(Affine::constant(*v)))
                .ok_or_else(|| unsupported(format!("the scalar or size {s} is unbound"))),
            Expr::Local(n) => {
                let k = self.c.lets[..visible.min(self.c.lets.len())]
                    .iter()
                    .rposition(|(m, _)| m == n)
                    .ok_or_else(|| unsupported(format!("let {n} is unknown")))?;
                self.lin(&self.c.lets[k].1, k)
            }
            Expr::Unary(crate::UnOp::Neg, a) => aff(self.affine(a, visible)?.scale(-1)),
            Expr::Cast(t, a) if t.is_int() => {
                let v = self.affine(a, visible)?;
                // A narrowing cast of a non-constant could wrap.
                let fits = *t == DType::I64
                    || (v.is_const() && v.constant >= crate::int_min(*t) && {
                        let max = crate::int_max(*t);
                        max < 0 || v.constant <= max
                    });
                if fits {
                    Ok(Lin::Aff(v))
                } else {
                    Err(unsupported(format!("the cast {} may wrap", self.text(e))))
                }
            }
            Expr::Binary(op, a, b) => match op {
                BinOp::Add => aff(self
                    .affine(a, visible)?
                    .add_scaled(&self.affine(b, visible)?, 1)),
                BinOp::Sub => aff(self
                    .affine(a, visible)?
                    .add_scaled(&self.affine(b, visible)?, -1)),
                BinOp::Mul => {
                    let (x, y) = (self.affine(a, visible)?, self.affine(b, visible)?);
                    match (x.is_const(), y.is_const()) {
                        (true, _) => aff(y.scale(x.constant)),
                        (_, true) => aff(x.scale(y.constant)),
                        _ => Err(unsupported(format!(
                            "{} multiplies iterators",
                            self.text(e)
                        ))),
                    }
                }
                BinOp::Div => self.div(self.affine(a, visible)?, self.divisor(b, visible)?),
                BinOp::Mod => self.rem(self.affine(a, visible)?, self.divisor(b, visible)?),
                _ => Err(unsupported(format!(
                    "{} is not a subscript expression",
                    self.text(e)
                ))),
            },
            _ => Err(unsupported(format!(
                "{} is not affine in the iterators",
                self.text(e)
            ))),
        }
    }

    /// The subscript `e`: affine or a floor quotient.
    fn subscript(&self, e: &Expr) -> Result<Subscript, Mismatch> {
        match self.lin(e, self.c.lets.len())? {
            Lin::Aff(a) => Ok(Subscript::Affine(a)),
            Lin::Div(a, k) => Ok(Subscript::FloorDiv(a, k)),
            Lin::Mod(..) => Err(unsupported(format!(
                "the subscript {} is a remainder",
                self.text(e)
            ))),
        }
    }

    /// The conditions of guard `e`, a conjunction.
    fn guard(&self, e: &Expr, out: &mut Vec<Condition>) -> Result<(), Mismatch> {
        let all = self.c.lets.len();
        let nonneg = |a: Option<Affine>, out: &mut Vec<Condition>| {
            let a = a.ok_or_else(overflow)?;
            match (a.is_const(), a.constant >= 0) {
                (true, true) => Ok(()),
                (true, false) => Err(unsupported("the guard is never true".into())),
                (false, _) => {
                    out.push(Condition::NonNegative(a));
                    Ok(())
                }
            }
        };
        match e {
            Expr::Lit(Value::Bool(true), _) => Ok(()),
            Expr::Binary(BinOp::And, a, b) => {
                self.guard(a, out)?;
                self.guard(b, out)
            }
            Expr::Binary(BinOp::Eq, a, b) => match (self.lin(a, all)?, self.lin(b, all)?) {
                (Lin::Mod(x, k), Lin::Aff(z)) | (Lin::Aff(z), Lin::Mod(x, k))
                    if z == Affine::constant(0) =>
                {
                    out.push(Condition::Divides(x, k));
                    Ok(())
                }
                (Lin::Aff(x), Lin::Aff(y)) if x == y => Ok(()),
                _ => Err(unsupported(format!(
                    "the guard {} is an equality",
                    self.text(e)
                ))),
            },
            Expr::Binary(op @ (BinOp::Ge | BinOp::Gt | BinOp::Le | BinOp::Lt), a, b) => {
                let (x, y) = (self.affine(a, all)?, self.affine(b, all)?);
                let (hi, lo, strict) = match op {
                    BinOp::Ge => (x, y, 0),
                    BinOp::Gt => (x, y, 1),
                    BinOp::Le => (y, x, 0),
                    _ => (y, x, 1),
                };
                // `hi - lo - strict >= 0`.
                let d = hi
                    .add_scaled(&lo, -1)
                    .and_then(|d| d.add_scaled(&Affine::constant(strict), -1));
                nonneg(d, out)
            }
            _ => Err(unsupported(format!(
                "the guard {} is not a conjunction of comparisons",
                self.text(e)
            ))),
        }
    }
}

/// The value of a constant size, or the mismatch naming what is symbolic.
fn constant(s: &crate::SizeExpr, what: &str) -> Result<i64, Mismatch> {
    s.as_const()
        .ok_or_else(|| unsupported(format!("{what} is symbolic ({s})")))
}

/// [`table_with`] without integer scalars.
pub fn table(def: &Def, c: &Comprehension) -> Result<Table, Vec<Mismatch>> {
    table_with(def, c, &HashMap::new())
}

/// The table of comprehension `c` of `def`, integer scalars taking their
/// values from `scalars`; see the module doc.
pub fn table_with(
    def: &Def,
    c: &Comprehension,
    scalars: &HashMap<String, i64>,
) -> Result<Table, Vec<Mismatch>> {
    build(def, c, scalars).map_err(|m| vec![m])
}

fn build(def: &Def, c: &Comprehension, scalars: &HashMap<String, i64>) -> Result<Table, Mismatch> {
    let mut iters = Vec::new();
    let mut lo = HashMap::new();
    let mut extent = HashMap::new();
    for r in &c.ranges {
        let (l, h) = (
            constant(&r.lo, &format!("the range of {}", r.name))?,
            constant(&r.hi, &format!("the range of {}", r.name))?,
        );
        let e = h
            .checked_sub(l)
            .and_then(|e| u64::try_from(e).ok())
            .filter(|e| *e > 0)
            .ok_or_else(|| unsupported(format!("iterator {} has an empty range", r.name)))?;
        iters.push(Iter {
            name: r.name.clone(),
            extent: e,
        });
        lo.insert(r.name.as_str(), l);
        extent.insert(r.name.as_str(), e);
    }
    let scope = Scope {
        def,
        c,
        lo,
        extent,
        scalars,
    };
    let reduction = match c.op {
        Reduction::Assign => false,
        Reduction::Add => true,
        op => {
            return Err(unsupported(format!(
                "the {} reduction is not a sum",
                op.symbol()
            )))
        }
    };
    let zero = |e: &Expr| {
        matches!(
            e,
            Expr::Lit(Value::Int(0), _) | Expr::Lit(Value::Float(0.0), _)
        )
    };
    let mut guard = Vec::new();
    let body = match &c.body {
        Expr::Select(cond, then, otherwise) if reduction && zero(otherwise) => {
            scope.guard(cond, &mut guard)?;
            &**then
        }
        b => b,
    };
    let (combine, reads) = match body {
        Expr::Read(..) => (Combine::Read, vec![body]),
        Expr::Binary(op, a, b)
            if matches!(**a, Expr::Read(..))
                && matches!(**b, Expr::Read(..))
                && !op.is_comparison()
                && !op.is_logical() =>
        {
            (Combine::Binary(*op), vec![&**a, &**b])
        }
        _ => return Err(Mismatch::NotAProduct),
    };
    let access = |tensor: &str, subs: Vec<Subscript>| -> Result<Access, Mismatch> {
        let decl = def
            .tensor(tensor)
            .ok_or_else(|| unsupported(format!("tensor {tensor} is not declared")))?;
        let sizes = decl
            .shape
            .iter()
            .map(|s| {
                constant(s, &format!("the shape of {tensor}"))
                    .and_then(|v| u64::try_from(v).map_err(|_| overflow()))
            })
            .collect::<Result<Vec<u64>, Mismatch>>()?;
        if sizes.len() != subs.len() {
            return Err(unsupported(format!(
                "{tensor} has {} dimensions, subscripted by {}",
                sizes.len(),
                subs.len()
            )));
        }
        let strides = row_major(&sizes)
            .ok_or_else(|| unsupported(format!("the strides of {tensor} overflow")))?;
        Ok(Access {
            tensor: tensor.to_string(),
            dims: subs,
            sizes,
            strides,
            offset: 0,
        })
    };
    let out_subs = c
        .indices
        .iter()
        .map(|i| scope.subscript(&Expr::Iter(i.clone())))
        .collect::<Result<Vec<_>, _>>()?;
    let output = access(&c.tensor, out_subs)?;
    let mut inputs = Vec::new();
    for r in reads {
        let Expr::Read(t, subs) = r else {
            return Err(Mismatch::NotAProduct);
        };
        let subs = subs
            .iter()
            .map(|s| scope.subscript(s))
            .collect::<Result<Vec<_>, _>>()?;
        inputs.push(access(t, subs)?);
    }
    Ok(Table {
        iters,
        output,
        inputs,
        combine,
        reduction,
        guard,
    })
}
