//! Name resolution and typing of expressions: syntax-tree expressions to
//! explicitly typed IR expressions.
//!
//! Literals are "weak": they take the type of the operand they meet
//! (`A(i) * 2` multiplies by a float if `A` is float); an expression of
//! literals alone is folded to one literal and defaults to `int32` /
//! `float32` when nothing else decides. Two strong operands of different
//! types are converted to the wider type ([`DType::promote`]) with explicit
//! casts. The printer (`ir::print`) relies on exactly these rules to print
//! programs that read back to the same IR.

use std::collections::{HashMap, HashSet};

use crate::ast::{ExprAst, ExprKind, Ident};
use crate::diag::{Diagnostic, Span};
use ir::{BinOp, Builtin, DType, Expr, SizeExpr, UnOp, Value};

/// A tensor as the checker knows it at some point of a def.
#[derive(Clone, Debug)]
pub struct TensorInfo {
    pub dtype: DType,
    pub rank: usize,
    /// `None` while the shape is still to be inferred.
    pub shape: Option<Vec<SizeExpr>>,
}

/// What names mean where an expression is typed.
pub struct Scope<'a> {
    pub scalars: &'a HashMap<String, DType>,
    pub sizes: &'a HashSet<String>,
    /// Tensors readable here.
    pub tensors: &'a HashMap<String, TensorInfo>,
    /// Tensors of the def that cannot be read here, with a note why. A
    /// tensor defined inside a region's body is here after the region even
    /// though `tensors` still knows it (for its shape): this map wins.
    pub unreadable: &'a HashMap<String, String>,
    pub defs: &'a HashSet<String>,
    pub lets: HashMap<String, DType>,
    /// Whether unknown names become iterators (false in sizes and call arguments).
    pub allow_iters: bool,
    /// Iterators in order of first appearance.
    pub iters: Vec<String>,
}

/// A typed expression; `weak` if built from literals only.
#[derive(Clone, Debug)]
pub struct Typed {
    pub e: Expr,
    pub t: DType,
    pub weak: bool,
}

type TResult = Result<Typed, Diagnostic>;

fn strong(e: Expr, t: DType) -> Typed {
    Typed { e, t, weak: false }
}

/// Converts a literal value to type `t` (C conversions; floats truncate).
pub fn convert(v: Value, t: DType) -> Value {
    if t == DType::Bool {
        return Value::Bool(match v {
            Value::Int(i) => i != 0,
            Value::Float(f) => f != 0.0,
            Value::Bool(b) => b,
        });
    }
    if t.is_float() {
        let f = match v {
            Value::Int(i) => i as f64,
            Value::Float(f) => f,
            Value::Bool(b) => f64::from(u8::from(b)),
        };
        return Value::Float(if t == DType::F32 {
            f64::from(f as f32)
        } else {
            f
        });
    }
    let i = match v {
        Value::Int(i) => i,
        Value::Float(f) => f as i64,
        Value::Bool(b) => i64::from(b),
    };
    Value::Int(wrap_int(i, t))
}

/// Wraps an integer to the width of type `t`.
pub fn wrap_int(i: i64, t: DType) -> i64 {
    ir::arith::wrap(t, i)
}

/// Gives a weak expression type `t`, or converts a strong one with a cast.
pub fn coerce(x: Typed, t: DType) -> Expr {
    if x.weak {
        retype(x.e, t)
    } else if x.t != t {
        Expr::Cast(t, Box::new(x.e))
    } else {
        x.e
    }
}

fn retype(e: Expr, t: DType) -> Expr {
    match e {
        Expr::Lit(v, _) => Expr::Lit(convert(v, t), t),
        Expr::Unary(op, a) => Expr::Unary(op, Box::new(retype(*a, t))),
        Expr::Binary(op, a, b) => {
            Expr::Binary(op, Box::new(retype(*a, t)), Box::new(retype(*b, t)))
        }
        Expr::Select(c, a, b) => Expr::Select(c, Box::new(retype(*a, t)), Box::new(retype(*b, t))),
        Expr::Call(f, args) if !t.is_float() && !f.accepts_int() => {
            // A float-only builtin computes in float32, then converts.
            let call = Expr::Call(f, args.into_iter().map(|a| retype(a, DType::F32)).collect());
            Expr::Cast(t, Box::new(call))
        }
        Expr::Call(f, args) => Expr::Call(f, args.into_iter().map(|a| retype(a, t)).collect()),
        other => other,
    }
}

/// The type two operands are brought to.
fn unify(a: &Typed, b: &Typed) -> DType {
    match (a.weak, b.weak) {
        (true, false) => weak_meets(a.t, b.t),
        (false, true) => weak_meets(b.t, a.t),
        _ => DType::promote(a.t, b.t),
    }
}

fn weak_meets(weak: DType, strong: DType) -> DType {
    if weak.is_float() && !strong.is_float() {
        DType::F32
    } else {
        strong
    }
}

fn default_type(t: DType) -> DType {
    if t.is_float() {
        DType::F32
    } else if t == DType::Bool {
        DType::Bool
    } else {
        DType::I32
    }
}

/// The final type of a body or let whose context does not decide.
pub fn settle(x: Typed) -> (Expr, DType) {
    if x.weak {
        let t = default_type(x.t);
        (retype(x.e, t), t)
    } else {
        (x.e, x.t)
    }
}

impl Scope<'_> {
    pub fn expr(&mut self, a: &ExprAst) -> TResult {
        match &a.kind {
            ExprKind::Int(v) => Ok(Typed {
                e: Expr::Lit(Value::Int(*v), DType::I32),
                t: DType::I32,
                weak: true,
            }),
            ExprKind::Float(v) => Ok(Typed {
                e: Expr::Lit(Value::Float(*v), DType::F32),
                t: DType::F32,
                weak: true,
            }),
            ExprKind::Bool(v) => Ok(Typed {
                e: Expr::Lit(Value::Bool(*v), DType::Bool),
                t: DType::Bool,
                weak: true,
            }),
            ExprKind::Name(n) => self.name(n, a.span),
            ExprKind::Dim(t, d) => {
                let s = self.dim(t, *d)?;
                // Integer scalars used as sizes keep their own type in
                // expressions; sizes are int64.
                let e = s.to_expr().map(&mut |x| match x {
                    Expr::Sym(n) if self.scalars.get(&n).is_some_and(|t| *t != DType::I64) => {
                        Expr::Cast(DType::I64, Box::new(Expr::Sym(n)))
                    }
                    other => other,
                });
                Ok(strong(e, DType::I64))
            }
            ExprKind::Apply(f, args) => self.apply(f, args, a.span),
            ExprKind::Unary(op, x) => {
                let x = self.expr(x)?;
                match op {
                    UnOp::Neg => {
                        if x.t == DType::Bool {
                            return Err(Diagnostic::error("`-` applied to a bool value", a.span));
                        }
                        // Negated literals fold, so `-1` is one literal
                        // whichever way it was written.
                        if let Expr::Lit(v, t) = &x.e {
                            let v = match v {
                                Value::Int(i) => Value::Int(wrap_int(i.wrapping_neg(), *t)),
                                Value::Float(f) => Value::Float(-f),
                                Value::Bool(b) => Value::Bool(*b),
                            };
                            return Ok(Typed {
                                e: Expr::Lit(v, *t),
                                t: *t,
                                weak: x.weak,
                            });
                        }
                        Ok(Typed {
                            e: Expr::Unary(UnOp::Neg, Box::new(x.e)),
                            t: x.t,
                            weak: x.weak,
                        })
                    }
                    UnOp::Not => {
                        if x.t != DType::Bool {
                            return Err(Diagnostic::error(
                                format!("`!` needs a bool operand, found {}", x.t),
                                a.span,
                            )
                            .with_help("compare explicitly, e.g. `x == 0`"));
                        }
                        Ok(strong(
                            Expr::Unary(UnOp::Not, Box::new(coerce(x, DType::Bool))),
                            DType::Bool,
                        ))
                    }
                }
            }
            ExprKind::Binary(op, x, y) => {
                let xt = self.expr(x)?;
                let yt = self.expr(y)?;
                binary(*op, xt, yt, a.span)
            }
            ExprKind::Select(c, x, y) => {
                let ct = self.expr(c)?;
                if ct.t != DType::Bool {
                    return Err(Diagnostic::error(
                        format!("the condition of `?:` must be bool, found {}", ct.t),
                        c.span,
                    )
                    .with_help("compare explicitly, e.g. `x != 0 ? a : b`"));
                }
                let xt = self.expr(x)?;
                let yt = self.expr(y)?;
                let t = unify(&xt, &yt);
                let weak = xt.weak && yt.weak;
                let c = coerce(ct, DType::Bool);
                // Literal-only branches keep their exact values until the
                // context fixes the type.
                let (a, b) = if weak {
                    (xt.e, yt.e)
                } else {
                    (coerce(xt, t), coerce(yt, t))
                };
                let e = Expr::Select(Box::new(c), Box::new(a), Box::new(b));
                Ok(Typed { e, t, weak })
            }
        }
    }

    fn name(&mut self, n: &str, span: Span) -> TResult {
        if let Some(t) = self.lets.get(n) {
            return Ok(strong(Expr::Local(n.to_string()), *t));
        }
        if let Some(t) = self.scalars.get(n) {
            return Ok(strong(Expr::Sym(n.to_string()), *t));
        }
        if self.sizes.contains(n) {
            return Ok(strong(Expr::Sym(n.to_string()), DType::I64));
        }
        if let Some(why) = self.unreadable.get(n) {
            return Err(Diagnostic::error(format!("`{n}` {why}"), span));
        }
        if let Some(info) = self.tensors.get(n).filter(|i| i.rank == 0) {
            // A rank-0 tensor may be read without parentheses, as TC writes
            // it: `b = a` for a `float() a`.
            return Ok(strong(Expr::Read(n.to_string(), Vec::new()), info.dtype));
        }
        if self.tensors.contains_key(n) {
            return Err(Diagnostic::error(
                format!("tensor `{n}` is used as a value without subscripts"),
                span,
            )
            .with_help(format!("read an element, e.g. `{n}(i)`")));
        }
        // An iterator may share a def's name (`O(n,f,h,w)` in a file with a
        // def `f`): a def is only ever named as the callee of a call
        // statement, so inside a comprehension the name is the iterator.
        if self.defs.contains(n) && !self.allow_iters {
            return Err(Diagnostic::error(
                format!("`{n}` is a def, not a value"),
                span,
            ));
        }
        if !self.allow_iters {
            return Err(
                Diagnostic::error(format!("unknown size symbol or scalar `{n}`"), span)
                    .with_label("not a size symbol or scalar parameter of this def"),
            );
        }
        if !self.iters.iter().any(|i| i == n) {
            self.iters.push(n.to_string());
        }
        Ok(strong(Expr::Iter(n.to_string()), DType::I64))
    }

    /// The size of dimension `d` of a tensor, as a size expression.
    pub fn dim(&self, t: &Ident, d: i64) -> Result<SizeExpr, Diagnostic> {
        if let Some(why) = self.unreadable.get(&t.name) {
            return Err(Diagnostic::error(format!("`{}` {why}", t.name), t.span));
        }
        let Some(info) = self.tensors.get(&t.name) else {
            return Err(Diagnostic::error(
                format!("unknown tensor `{}` in `{}.{d}`", t.name, t.name),
                t.span,
            ));
        };
        let Some(shape) = &info.shape else {
            return Err(Diagnostic::error(
                format!("the shape of `{}` is not known yet here", t.name),
                t.span,
            ));
        };
        usize::try_from(d)
            .ok()
            .and_then(|d| shape.get(d))
            .cloned()
            .ok_or_else(|| {
                Diagnostic::error(
                    format!(
                        "`{}` has {} dimensions; `{}.{d}` does not exist",
                        t.name,
                        shape.len(),
                        t.name
                    ),
                    t.span,
                )
            })
    }

    fn apply(&mut self, f: &Ident, args: &[ExprAst], span: Span) -> TResult {
        if let Some(why) = self.unreadable.get(&f.name) {
            return Err(Diagnostic::error(format!("`{}` {why}", f.name), f.span));
        }
        if let Some(info) = self.tensors.get(&f.name).cloned() {
            if args.len() != info.rank {
                return Err(Diagnostic::error(
                    format!(
                        "`{}` has {} but is read with {}",
                        f.name,
                        crate::check::count(info.rank, "dimension"),
                        crate::check::count(args.len(), "subscript")
                    ),
                    span,
                ));
            }
            let mut subs = Vec::new();
            for a in args {
                let x = self.expr(a)?;
                if !x.t.is_int() {
                    return Err(Diagnostic::error(
                        format!("subscripts must be integers; this one is {}", x.t),
                        a.span,
                    )
                    .with_help("convert explicitly with `int64(...)`"));
                }
                subs.push(if x.weak { retype(x.e, DType::I64) } else { x.e });
            }
            return Ok(strong(Expr::Read(f.name.clone(), subs), info.dtype));
        }
        if let Some(t) = DType::from_name(&f.name) {
            if args.len() != 1 {
                return Err(Diagnostic::error(
                    format!("the conversion `{}` takes one argument", f.name),
                    span,
                ));
            }
            let x = self.expr(&args[0])?;
            if x.weak {
                return Ok(strong(retype(x.e, t), t));
            }
            if x.t == t {
                return Ok(x);
            }
            return Ok(strong(Expr::Cast(t, Box::new(x.e)), t));
        }
        if let Some(b) = Builtin::from_name(&f.name) {
            if args.len() != b.arity() {
                return Err(Diagnostic::error(
                    format!(
                        "`{}` takes {} argument{}, found {}",
                        f.name,
                        b.arity(),
                        if b.arity() == 1 { "" } else { "s" },
                        args.len()
                    ),
                    span,
                ));
            }
            let mut xs = Vec::new();
            for a in args {
                let x = self.expr(a)?;
                if x.t == DType::Bool {
                    return Err(Diagnostic::error(
                        format!("`{}` applied to a bool value", f.name),
                        a.span,
                    ));
                }
                xs.push(x);
            }
            let weak = xs.iter().all(|x| x.weak);
            let mut t = xs[0].clone();
            for x in &xs[1..] {
                let u = unify(&t, x);
                t = Typed {
                    e: Expr::int(0),
                    t: u,
                    weak: t.weak && x.weak,
                };
            }
            let mut t = t.t;
            if !t.is_float() && !b.accepts_int() {
                t = DType::F32;
            }
            let e = if weak {
                Expr::Call(b, xs.into_iter().map(|x| x.e).collect())
            } else {
                Expr::Call(b, xs.into_iter().map(|x| coerce(x, t)).collect())
            };
            return Ok(Typed { e, t, weak });
        }
        if self.defs.contains(&f.name) {
            return Err(Diagnostic::error(
                format!("`{}` is a def; calls of defs are statements", f.name),
                f.span,
            )
            .with_help(format!(
                "write `X = {}(...)` as its own statement, then read `X`",
                f.name
            )));
        }
        Err(Diagnostic::error(format!("unknown tensor or function `{}`", f.name), f.span)
            .with_label("not a tensor of this def, a builtin or a type")
            .with_help("builtins: TC's 64 math functions (exp, log, tanh, erf, pow, fma, fmax, ...; docs/LANGUAGE.md lists them) and sigmoid, also in CUDA spellings such as expf"))
    }

    /// A size expression (`where` bounds, `T.d`): literals, size symbols,
    /// integer scalars, `+ - * / %`, `min`, `max`.
    pub fn size(&self, a: &ExprAst) -> Result<SizeExpr, Diagnostic> {
        let not_size = || {
            Diagnostic::error("not a size expression", a.span)
                .with_help("sizes are built from integers, size symbols, integer scalars, `T.d`, + - * / %, min and max")
        };
        match &a.kind {
            ExprKind::Int(v) => Ok(SizeExpr::constant(*v)),
            ExprKind::Name(n) => {
                if self.sizes.contains(n) || self.scalars.get(n).is_some_and(|t| t.is_int()) {
                    Ok(SizeExpr::sym(n))
                } else if self.scalars.contains_key(n) {
                    Err(Diagnostic::error(
                        format!("scalar `{n}` is not an integer, so it cannot be a size"),
                        a.span,
                    ))
                } else {
                    Err(
                        Diagnostic::error(format!("unknown size symbol or scalar `{n}`"), a.span)
                            .with_label("sizes may use only size symbols and integer scalars"),
                    )
                }
            }
            ExprKind::Dim(t, d) => self.dim(t, *d),
            ExprKind::Unary(UnOp::Neg, x) => Ok(self.size(x)?.neg()),
            ExprKind::Binary(op, x, y) => {
                let (x, y) = (self.size(x)?, self.size(y)?);
                match op {
                    BinOp::Add => Ok(x.add(&y)),
                    BinOp::Sub => Ok(x.sub(&y)),
                    BinOp::Mul => Ok(x.mul(&y)),
                    BinOp::Div | BinOp::Mod => {
                        if y.as_const() == Some(0) {
                            return Err(Diagnostic::error("division by zero in a size", a.span));
                        }
                        Ok(if *op == BinOp::Div {
                            x.div(&y)
                        } else {
                            x.rem(&y)
                        })
                    }
                    _ => Err(not_size()),
                }
            }
            ExprKind::Apply(f, args) if (f.name == "min" || f.name == "max") && args.len() == 2 => {
                let (x, y) = (self.size(&args[0])?, self.size(&args[1])?);
                Ok(if f.name == "min" {
                    x.smin(&y)
                } else {
                    x.smax(&y)
                })
            }
            _ => Err(not_size()),
        }
    }
}

fn binary(op: BinOp, x: Typed, y: Typed, span: Span) -> TResult {
    if op.is_logical() {
        for v in [&x, &y] {
            if v.t != DType::Bool {
                return Err(Diagnostic::error(
                    format!("`{}` needs bool operands, found {}", op.symbol(), v.t),
                    span,
                ));
            }
        }
        let e = Expr::binary(op, coerce(x, DType::Bool), coerce(y, DType::Bool));
        return Ok(strong(e, DType::Bool));
    }
    let t = unify(&x, &y);
    if t == DType::Bool && !matches!(op, BinOp::Eq | BinOp::Ne) {
        return Err(Diagnostic::error(
            format!("`{}` is not defined on bool values", op.symbol()),
            span,
        ));
    }
    let weak = x.weak && y.weak;
    if weak && !op.is_comparison() {
        // Literal-only arithmetic is exact until the context fixes its type
        // (`float64(0.1 + 0.0)` is the double 0.1): fold in f64 or i64 and
        // round or wrap once, when the expression is coerced.
        let wide = if t.is_float() { DType::F64 } else { DType::I64 };
        if let (Expr::Lit(va, _), Expr::Lit(vb, _)) = (&x.e, &y.e) {
            if let Some(v) = fold(op, convert(*va, wide), convert(*vb, wide), wide, span)? {
                return Ok(Typed {
                    e: Expr::Lit(v, t),
                    t,
                    weak: true,
                });
            }
        }
        return Ok(Typed {
            e: Expr::binary(op, x.e, y.e),
            t,
            weak: true,
        });
    }
    let (a, b) = (coerce(x, t), coerce(y, t));
    if let (Expr::Lit(va, _), Expr::Lit(vb, _)) = (&a, &b) {
        if let Some(v) = fold(op, *va, *vb, t, span)? {
            let rt = if op.is_comparison() { DType::Bool } else { t };
            return Ok(Typed {
                e: Expr::Lit(v, rt),
                t: rt,
                weak: weak && !op.is_comparison(),
            });
        }
    }
    let rt = if op.is_comparison() { DType::Bool } else { t };
    Ok(Typed {
        e: Expr::binary(op, a, b),
        t: rt,
        weak: weak && !op.is_comparison(),
    })
}

/// Folds an operation on two literals of type `t`; `None` when the result
/// would not be a finite literal.
fn fold(op: BinOp, a: Value, b: Value, t: DType, span: Span) -> Result<Option<Value>, Diagnostic> {
    use std::cmp::Ordering;
    let cmp = |o: Option<Ordering>| -> Option<Value> {
        let o = o?;
        Some(Value::Bool(match op {
            BinOp::Lt => o == Ordering::Less,
            BinOp::Le => o != Ordering::Greater,
            BinOp::Gt => o == Ordering::Greater,
            BinOp::Ge => o != Ordering::Less,
            BinOp::Eq => o == Ordering::Equal,
            _ => o != Ordering::Equal,
        }))
    };
    Ok(match (a, b) {
        (Value::Int(x), Value::Int(y)) => {
            if op.is_comparison() {
                return Ok(cmp(Some(x.cmp(&y))));
            }
            if matches!(op, BinOp::Div | BinOp::Mod) && y == 0 {
                return Err(Diagnostic::error("integer division by zero", span));
            }
            let v = match op {
                BinOp::Add => x.wrapping_add(y),
                BinOp::Sub => x.wrapping_sub(y),
                BinOp::Mul => x.wrapping_mul(y),
                BinOp::Div => floor_div(x, y),
                BinOp::Mod => x.wrapping_sub(floor_div(x, y).wrapping_mul(y)),
                _ => return Ok(None),
            };
            Some(Value::Int(wrap_int(v, t)))
        }
        (Value::Float(x), Value::Float(y)) => {
            if op.is_comparison() {
                return Ok(cmp(x.partial_cmp(&y)));
            }
            let v = match op {
                BinOp::Add => x + y,
                BinOp::Sub => x - y,
                BinOp::Mul => x * y,
                BinOp::Div => x / y,
                BinOp::Mod => x - y * (x / y).floor(),
                _ => return Ok(None),
            };
            let v = if t == DType::F32 {
                f64::from(v as f32)
            } else {
                v
            };
            v.is_finite().then_some(Value::Float(v))
        }
        (Value::Bool(x), Value::Bool(y)) if op.is_comparison() => cmp(Some(x.cmp(&y))),
        _ => None,
    })
}

fn floor_div(x: i64, y: i64) -> i64 {
    let q = x.wrapping_div(y);
    if (x.wrapping_rem(y) != 0) && ((x < 0) != (y < 0)) {
        q - 1
    } else {
        q
    }
}

/// Reads an integer expression without iterators back as a size.
pub fn expr_to_size(e: &Expr) -> Option<SizeExpr> {
    match e {
        Expr::Lit(Value::Int(v), _) => Some(SizeExpr::constant(*v)),
        Expr::Sym(s) => Some(SizeExpr::sym(s)),
        Expr::Cast(t, x) if t.is_int() => expr_to_size(x),
        Expr::Unary(UnOp::Neg, x) => Some(expr_to_size(x)?.neg()),
        Expr::Binary(op, x, y) => {
            let (x, y) = (expr_to_size(x)?, expr_to_size(y)?);
            match op {
                BinOp::Add => Some(x.add(&y)),
                BinOp::Sub => Some(x.sub(&y)),
                BinOp::Mul => Some(x.mul(&y)),
                BinOp::Div if y.as_const() != Some(0) => Some(x.div(&y)),
                BinOp::Mod if y.as_const() != Some(0) => Some(x.rem(&y)),
                _ => None,
            }
        }
        Expr::Call(Builtin::Min, a) if a.len() == 2 => {
            Some(expr_to_size(&a[0])?.smin(&expr_to_size(&a[1])?))
        }
        Expr::Call(Builtin::Max, a) if a.len() == 2 => {
            Some(expr_to_size(&a[0])?.smax(&expr_to_size(&a[1])?))
        }
        _ => None,
    }
}
