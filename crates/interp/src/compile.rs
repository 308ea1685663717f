//! Compiling expressions with ordinary semantics into closures.
//!
//! [`Scope::any`] turns an [`Expr`] into a closure chosen by the node's type
//! (`f64`, `i64` or `bool` result), once per statement execution: names are
//! resolved to frame slots, constants and reads are bound now, and every
//! operation rounds (`float32`) or wraps (narrow integers) as `arith` says.
//! Types are taken from the compiled operands, so ill-typed IR is reported
//! as an error rather than computed with a wrong type.
//!
//! In mod-p mode this compiler handles the "ordinary" parts of a body:
//! conditions and subscripts, which may use iterators, sizes, scalars and
//! literals but never tensor values; a read here is then an error.

use std::collections::HashMap;

use ir::{BinOp, Builtin, Comprehension, DType, Def, Expr, UnOp, Value};

use crate::frame::{BoolFn, FloatFn, Frame, IntFn, LetSlots, Slot};
use crate::read::ReadPlan;
use crate::Mode;
use ir::arith;
use tensor::{with_int_element, Tensor};

/// A compiled expression with its type.
pub(crate) enum Compiled<'a> {
    Float(FloatFn<'a>, DType),
    Int(IntFn<'a>, DType),
    Bool(BoolFn<'a>),
}

impl Compiled<'_> {
    fn dtype(&self) -> DType {
        match self {
            Compiled::Float(_, t) | Compiled::Int(_, t) => *t,
            Compiled::Bool(_) => DType::Bool,
        }
    }
}

/// Everything names in an expression can refer to during one statement.
pub(crate) struct Scope<'a> {
    pub def: &'a Def,
    /// The statement's 0-based index, for messages.
    pub stmt: usize,
    pub env: &'a HashMap<String, Tensor>,
    /// Scalar parameters, converted to their declared types.
    pub scalars: &'a HashMap<String, Value>,
    /// Size symbols and integer scalars.
    pub sizes: &'a HashMap<String, i64>,
    pub mode: Mode,
    /// Whether the statement is a reduction (where reads may skip a point).
    pub reduction: bool,
    /// Iterator slots in `Frame::ints`.
    pub iters: HashMap<String, usize>,
    /// Each iterator's smallest and largest value.
    pub values: HashMap<String, (i64, i64)>,
    /// The statement, when compiling a comprehension (for its lets' types).
    pub comp: Option<&'a Comprehension>,
    /// The lets bound so far.
    pub lets: HashMap<String, LetSlots>,
    /// How many of the comprehension's lets are bound so far.
    pub lets_bound: usize,
}

/// `x op y` on floats of type `t` (`+ - * / %`): `arith::float_arith`.
fn float_op<'a>(x: FloatFn<'a>, y: FloatFn<'a>, t: DType, op: BinOp) -> FloatFn<'a> {
    Box::new(move |f| {
        let a = x(f)?;
        let b = y(f)?;
        arith::float_arith(op, t, a, b)
            .ok_or_else(|| f.fail(format!("ill-typed IR: `{}` on {t}", op.symbol())))
    })
}

/// `x op y` on integers of type `t` (`+ - * / %`, which fail on a zero
/// divisor): `arith::int_arith`.
fn int_op<'a>(x: IntFn<'a>, y: IntFn<'a>, t: DType, op: BinOp) -> IntFn<'a> {
    Box::new(move |f| {
        let a = x(f)?;
        let b = y(f)?;
        arith::int_arith(op, t, a, b).map_err(|e| f.fail(e.to_string()))
    })
}

fn constant<'a>(t: DType, v: Value) -> Compiled<'a> {
    match arith::cast_value(t, v) {
        Value::Float(x) => Compiled::Float(Box::new(move |_| Ok(x)), t),
        Value::Int(i) => Compiled::Int(Box::new(move |_| Ok(i)), t),
        Value::Bool(b) => Compiled::Bool(Box::new(move |_| Ok(b))),
    }
}

/// Converts a compiled value to type `t` (the semantics of `Expr::Cast`).
fn cast(t: DType, c: Compiled<'_>) -> Compiled<'_> {
    if t == DType::Bool {
        return match c {
            Compiled::Float(g, _) => Compiled::Bool(Box::new(move |f| Ok(g(f)? != 0.0))),
            Compiled::Int(g, _) => Compiled::Bool(Box::new(move |f| Ok(g(f)? != 0))),
            Compiled::Bool(g) => Compiled::Bool(g),
        };
    }
    if t.is_float() {
        return match c {
            // To float64, or to the same type: the value is unchanged.
            Compiled::Float(g, s) if s == t || t == DType::F64 => Compiled::Float(g, t),
            Compiled::Float(g, _) => {
                Compiled::Float(Box::new(move |f| Ok(arith::round(t, g(f)?))), t)
            }
            Compiled::Int(g, s) => {
                Compiled::Float(Box::new(move |f| Ok(arith::int_to_float(s, t, g(f)?))), t)
            }
            Compiled::Bool(g) => {
                Compiled::Float(Box::new(move |f| Ok(if g(f)? { 1.0 } else { 0.0 })), t)
            }
        };
    }
    match c {
        Compiled::Float(g, _) => {
            Compiled::Int(Box::new(move |f| Ok(arith::float_to_int(t, g(f)?))), t)
        }
        Compiled::Int(g, _) => Compiled::Int(Box::new(move |f| Ok(arith::wrap(t, g(f)?))), t),
        Compiled::Bool(g) => Compiled::Int(Box::new(move |f| Ok(i64::from(g(f)?))), t),
    }
}

impl<'a> Scope<'a> {
    /// " (def f, statement 3)": where a mod-p rejection happened, for
    /// messages that must make sense without the caller's location.
    pub(crate) fn location(&self) -> String {
        format!(" (def {}, statement {})", self.def.name, self.stmt + 1)
    }

    /// What the iterators, sizes and bound lets range over, for proving
    /// that a subscript cannot wrap.
    pub(crate) fn bounds(&self) -> ir::Bounds<'_> {
        ir::Bounds {
            def: self.def,
            lets: self.comp.map_or(&[], |c| &c.lets[..self.lets_bound]),
            iters: &self.values,
            sizes: self.sizes,
        }
    }

    /// Compiles `e` to a closure of its own type.
    pub(crate) fn any(&self, e: &Expr) -> Result<Compiled<'a>, String> {
        Ok(match e {
            Expr::Lit(v, t) => constant(*t, *v),
            Expr::Iter(n) => {
                let s = *self
                    .iters
                    .get(n)
                    .ok_or_else(|| format!("iterator `{n}` has no range"))?;
                Compiled::Int(Box::new(move |f| Ok(f.ints[s])), DType::I64)
            }
            Expr::Sym(n) => self.symbol(n)?,
            Expr::Local(n) => self.local(n)?,
            Expr::Read(t, subs) => self.read(t, subs)?,
            Expr::Unary(UnOp::Neg, a) => match self.any(a)? {
                Compiled::Float(g, t) => {
                    Compiled::Float(Box::new(move |f| Ok(arith::float_neg(t, g(f)?))), t)
                }
                Compiled::Int(g, t) => {
                    Compiled::Int(Box::new(move |f| Ok(arith::int_neg(t, g(f)?))), t)
                }
                Compiled::Bool(_) => return Err("ill-typed IR: `-` applied to bool".into()),
            },
            Expr::Unary(UnOp::Not, a) => {
                let g = self.boolean(a)?;
                Compiled::Bool(Box::new(move |f| Ok(!g(f)?)))
            }
            Expr::Binary(op, a, b) => self.binary(*op, a, b)?,
            Expr::Select(c, a, b) => {
                let c = self.boolean(c)?;
                match (self.any(a)?, self.any(b)?) {
                    (Compiled::Float(x, t), Compiled::Float(y, u)) if t == u => {
                        Compiled::Float(Box::new(move |f| if c(f)? { x(f) } else { y(f) }), t)
                    }
                    (Compiled::Int(x, t), Compiled::Int(y, u)) if t == u => {
                        Compiled::Int(Box::new(move |f| if c(f)? { x(f) } else { y(f) }), t)
                    }
                    (Compiled::Bool(x), Compiled::Bool(y)) => {
                        Compiled::Bool(Box::new(move |f| if c(f)? { x(f) } else { y(f) }))
                    }
                    (x, y) => {
                        return Err(format!(
                            "ill-typed IR: branches of `?:` have types {} and {}",
                            x.dtype(),
                            y.dtype()
                        ))
                    }
                }
            }
            Expr::Call(b, args) => self.builtin(*b, args)?,
            Expr::Cast(t, a) => cast(*t, self.any(a)?),
        })
    }

    pub(crate) fn float(&self, e: &Expr) -> Result<(FloatFn<'a>, DType), String> {
        match self.any(e)? {
            Compiled::Float(g, t) => Ok((g, t)),
            c => Err(format!(
                "ill-typed IR: expected a float, found {}",
                c.dtype()
            )),
        }
    }

    pub(crate) fn int(&self, e: &Expr) -> Result<(IntFn<'a>, DType), String> {
        match self.any(e)? {
            Compiled::Int(g, t) => Ok((g, t)),
            c => Err(format!(
                "ill-typed IR: expected an integer, found {}",
                c.dtype()
            )),
        }
    }

    pub(crate) fn boolean(&self, e: &Expr) -> Result<BoolFn<'a>, String> {
        match self.any(e)? {
            Compiled::Bool(g) => Ok(g),
            c => Err(format!("ill-typed IR: expected bool, found {}", c.dtype())),
        }
    }

    /// Evaluates an expression that involves no iterator, let or read (a
    /// call's scalar argument), to a value of its type.
    pub(crate) fn value(&self, e: &Expr) -> Result<Value, String> {
        let mut f = Frame::default();
        let r = match self.any(e)? {
            Compiled::Float(g, _) => g(&mut f).map(Value::Float),
            Compiled::Int(g, _) => g(&mut f).map(Value::Int),
            Compiled::Bool(g) => g(&mut f).map(Value::Bool),
        };
        r.map_err(|_| f.message)
    }

    /// The value of an `int64` expression that is constant during the
    /// statement (no iterator, let or read), if it evaluates without error.
    pub(crate) fn constant_i64(&self, e: &Expr) -> Option<i64> {
        if e.any(&|x| matches!(x, Expr::Iter(_) | Expr::Local(_) | Expr::Read(..))) {
            return None;
        }
        match self.any(e).ok()? {
            Compiled::Int(g, DType::I64) => g(&mut Frame::default()).ok(),
            _ => None,
        }
    }

    fn symbol(&self, n: &str) -> Result<Compiled<'a>, String> {
        if let (Some(t), Some(&v)) = (self.def.scalar(n), self.scalars.get(n)) {
            // In mod-p mode a float scalar may hold an integer (a residue);
            // read ordinarily, it is that integer converted to the type.
            return Ok(constant(t, v));
        }
        match self.sizes.get(n) {
            Some(&v) => Ok(constant(DType::I64, Value::Int(v))),
            None => Err(format!("unknown symbol `{n}`")),
        }
    }

    fn local(&self, n: &str) -> Result<Compiled<'a>, String> {
        let slot = self
            .lets
            .get(n)
            .ok_or_else(|| format!("let `{n}` is used before it is bound"))?;
        Ok(match slot.real {
            Some(Slot::Float(s, t)) => Compiled::Float(Box::new(move |f| Ok(f.floats[s])), t),
            Some(Slot::Int(s, t)) => Compiled::Int(Box::new(move |f| Ok(f.ints[s])), t),
            Some(Slot::Bool(s)) => Compiled::Bool(Box::new(move |f| Ok(f.ints[s] != 0))),
            None => {
                return Err(format!(
                    "let `{n}` has no ordinary value{}",
                    self.location()
                ))
            }
        })
    }

    fn read(&self, name: &str, subs: &[Expr]) -> Result<Compiled<'a>, String> {
        if self.mode == Mode::ModP {
            return Err(format!(
                "in mod-p mode tensor values can only be added and multiplied, but `{name}` is read \
                 in a subscript, condition or comparison{}",
                self.location()
            ));
        }
        let (plan, tensor) = ReadPlan::new(self, name, subs)?;
        let t = tensor.dtype();
        let missing = || format!("`{name}` is not a contiguous {t} tensor{}", self.location());
        Ok(match t {
            DType::F32 => {
                let v = tensor.as_slice::<f32>().ok_or_else(missing)?;
                Compiled::Float(Box::new(move |f| Ok(f64::from(v[plan.offset(f)?]))), t)
            }
            DType::F64 => {
                let v = tensor.as_slice::<f64>().ok_or_else(missing)?;
                Compiled::Float(Box::new(move |f| Ok(v[plan.offset(f)?])), t)
            }
            DType::Bool => {
                let v = tensor.as_slice::<u8>().ok_or_else(missing)?;
                Compiled::Bool(Box::new(move |f| Ok(v[plan.offset(f)?] != 0)))
            }
            // A narrow float's element is its code.
            DType::F16 | DType::BF16 => {
                let format = t.narrow().ok_or_else(missing)?;
                let v = tensor.as_slice::<u16>().ok_or_else(missing)?;
                Compiled::Float(
                    Box::new(move |f| Ok(format.decode(u32::from(v[plan.offset(f)?])))),
                    t,
                )
            }
            _ if t.narrow().is_some() => {
                let format = t.narrow().ok_or_else(missing)?;
                let v = tensor.as_slice::<u8>().ok_or_else(missing)?;
                Compiled::Float(
                    Box::new(move |f| Ok(format.decode(u32::from(v[plan.offset(f)?])))),
                    t,
                )
            }
            // Integers widen to the `int64` the closures compute in (a
            // `uint64` keeps its bit pattern, as everywhere); for `int64`
            // itself the cast is the identity.
            #[allow(clippy::unnecessary_cast)]
            _ => with_int_element!(t, S => {
                let v = tensor.as_slice::<S>().ok_or_else(missing)?;
                Compiled::Int(Box::new(move |f| Ok(v[plan.offset(f)?] as i64)), t)
            }, return Err(missing())),
        })
    }

    fn binary(&self, op: BinOp, a: &Expr, b: &Expr) -> Result<Compiled<'a>, String> {
        let (x, y) = (self.any(a)?, self.any(b)?);
        let mismatch = |x: &Compiled, y: &Compiled| {
            format!(
                "ill-typed IR: operands of `{}` have types {} and {}",
                op.symbol(),
                x.dtype(),
                y.dtype()
            )
        };
        if x.dtype() != y.dtype() {
            return Err(mismatch(&x, &y));
        }
        let ill = |t: DType| Err(format!("ill-typed IR: `{}` applied to {t}", op.symbol()));
        Ok(match (x, y) {
            (Compiled::Bool(x), Compiled::Bool(y)) => match op {
                // `&&` and `||` evaluate their second operand only when it
                // decides the result.
                BinOp::And => Compiled::Bool(Box::new(move |f| Ok(x(f)? && y(f)?))),
                BinOp::Or => Compiled::Bool(Box::new(move |f| Ok(x(f)? || y(f)?))),
                _ if op.is_comparison() => Compiled::Bool(Box::new(move |f| {
                    let a = x(f)?;
                    let b = y(f)?;
                    arith::bool_binary(op, a, b).map_err(|e| f.fail(e.to_string()))
                })),
                _ => return ill(DType::Bool),
            },
            (Compiled::Float(x, t), Compiled::Float(y, _)) => match op {
                BinOp::And | BinOp::Or => return ill(t),
                _ if op.is_comparison() => Compiled::Bool(Box::new(move |f| {
                    let a = x(f)?;
                    Ok(arith::float_compare(op, a, y(f)?))
                })),
                _ => Compiled::Float(float_op(x, y, t, op), t),
            },
            (Compiled::Int(x, t), Compiled::Int(y, _)) => match op {
                BinOp::And | BinOp::Or => return ill(t),
                _ if op.is_comparison() => Compiled::Bool(Box::new(move |f| {
                    let a = x(f)?;
                    Ok(arith::int_compare(op, t, a, y(f)?))
                })),
                _ => Compiled::Int(int_op(x, y, t, op), t),
            },
            (x, y) => return Err(mismatch(&x, &y)),
        })
    }

    fn builtin(&self, b: Builtin, args: &[Expr]) -> Result<Compiled<'a>, String> {
        let compiled = args
            .iter()
            .map(|a| self.any(a))
            .collect::<Result<Vec<_>, _>>()?;
        let t = compiled.first().map_or(DType::F32, Compiled::dtype);
        let types: Vec<String> = compiled.iter().map(|c| c.dtype().to_string()).collect();
        let bad = || {
            format!(
                "ill-typed IR: `{}` applied to ({})",
                b.name(),
                types.join(", ")
            )
        };
        if compiled.len() != b.arity() || compiled.iter().any(|c| c.dtype() != t) {
            return Err(bad());
        }
        if t.is_float() {
            let fs: Vec<FloatFn<'a>> = compiled
                .into_iter()
                .filter_map(|c| match c {
                    Compiled::Float(g, _) => Some(g),
                    _ => None,
                })
                .collect();
            // Every argument has the float type `t` and the count is the
            // arity; the common arities get closures without a vector.
            let fail = move |f: &mut Frame| f.fail(format!("ill-typed IR: `{}` on {t}", b.name()));
            let g: FloatFn<'a> = match <[FloatFn<'a>; 1]>::try_from(fs) {
                Ok([x]) => Box::new(move |f| {
                    let a = x(f)?;
                    arith::float_builtin(b, t, &[a]).ok_or_else(|| fail(f))
                }),
                Err(fs) => match <[FloatFn<'a>; 2]>::try_from(fs) {
                    Ok([x, y]) => Box::new(move |f| {
                        let a = x(f)?;
                        let c = y(f)?;
                        arith::float_builtin(b, t, &[a, c]).ok_or_else(|| fail(f))
                    }),
                    Err(fs) => Box::new(move |f| {
                        let args = fs.iter().map(|x| x(f)).collect::<Result<Vec<f64>, _>>()?;
                        arith::float_builtin(b, t, &args).ok_or_else(|| fail(f))
                    }),
                },
            };
            return Ok(Compiled::Float(g, t));
        }
        if !b.accepts_int() {
            return Err(bad());
        }
        let is: Vec<IntFn<'a>> = compiled
            .into_iter()
            .filter_map(|c| match c {
                Compiled::Int(g, _) => Some(g),
                _ => None,
            })
            .collect();
        let fail = move |f: &mut Frame| f.fail(format!("ill-typed IR: `{}` on {t}", b.name()));
        let g: IntFn<'a> = Box::new(move |f| {
            let args = is.iter().map(|x| x(f)).collect::<Result<Vec<i64>, _>>()?;
            arith::int_builtin(b, t, &args).ok_or_else(|| fail(f))
        });
        Ok(Compiled::Int(g, t))
    }
}
