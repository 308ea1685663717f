//! Compiling one comprehension, for concrete sizes, into a [`Comp`].
//!
//! Names are resolved now: iterators to slots (left-hand ones first, then
//! the reduction iterators in range order, as the interpreter orders them),
//! sizes and integer scalars to constants, float scalars to their values,
//! tensors to the graph node holding their current version, and lets are
//! inlined where they are used. What is not a polynomial over Z_p is an
//! error whose message says why (a `max=` reduction, `exp` of a tensor
//! value, a condition on tensor values, an indirect subscript, an integer
//! result): the verifier then compares in floating point instead.
//!
//! Requires: a def that passes `ir::verify_program`. Guarantees: never
//! panics; a compiled body is a polynomial in the tensors it reads.

use std::collections::HashMap;

use ir::{BinOp, Comprehension, DType, Def, Expr, Reduction, UnOp, Value};

use super::expr::{to_f64, Comp, Ord, Read, RealOp, Val};
use super::form::Form;
use super::graph::Node;
use interp::residue;

/// Everything names in one comprehension can refer to.
pub(crate) struct Scope<'a> {
    pub def: &'a Def,
    pub comp: &'a Comprehension,
    /// `def name, statement N`, for messages.
    pub at: String,
    /// Each tensor's current version.
    pub env: &'a HashMap<String, usize>,
    pub nodes: &'a [Node],
    /// Size symbols and integer scalars.
    pub sizes: &'a HashMap<String, i64>,
    /// Float scalars: their values.
    pub scalars: &'a HashMap<String, Val>,
    pub slots: HashMap<String, usize>,
    /// Whether what is no polynomial compiles too (to [`Val::Real`], any
    /// reduction), for the floating-point test at sampled points.
    pub real: bool,
}

/// Compiles comprehension `c`; `scope.slots` is filled here.
pub(crate) fn compile_comp(mut scope: Scope, shape: &[usize]) -> Result<Comp, String> {
    let c = scope.comp;
    let mut order: Vec<&ir::IterRange> = Vec::new();
    for ix in &c.indices {
        order.push(
            c.range(ix)
                .ok_or_else(|| format!("left-hand iterator `{ix}` has no range"))?,
        );
    }
    order.extend(c.reduction_iters());
    let mut bounds = Vec::with_capacity(order.len());
    for (k, r) in order.iter().enumerate() {
        let eval = |e: &ir::SizeExpr| {
            e.eval_map(scope.sizes)
                .map_err(|_| format!("the range of `{}` cannot be evaluated", r.name))
        };
        let (lo, hi) = (eval(&r.lo)?, eval(&r.hi)?);
        if hi <= lo {
            return Err(format!(
                "iterator `{}` has the empty range {lo}:{hi}",
                r.name
            ));
        }
        scope.slots.insert(r.name.clone(), k);
        bounds.push((lo, hi));
    }
    for (k, &(lo, hi)) in bounds.iter().take(c.indices.len()).enumerate() {
        if lo < 0 || hi > shape[k] as i64 {
            return Err(format!(
                "writing `{}`: `{}` ranges over {lo}:{hi}, outside dimension {k} of size {}",
                c.tensor, c.indices[k], shape[k]
            ));
        }
    }
    match c.op {
        Reduction::Assign | Reduction::Add => {}
        _ if scope.real => {}
        op => return Err(format!("a `{}` reduction", op.symbol())),
    }
    let dtype = scope.def.tensor(&c.tensor).map(|t| t.dtype);
    if let Some(t) = dtype.filter(|t| !t.is_float()) {
        return Err(format!(
            "an integer result (`{t}` wraps, so it is no polynomial mod p)"
        ));
    }
    let body = scope.val(&c.body, c.lets.len())?;
    let mut checks = Vec::new();
    scope.checks(&c.body, c.lets.len(), &mut checks)?;
    for (k, (_, e)) in c.lets.iter().enumerate() {
        scope.checks(e, k, &mut checks)?;
    }
    Ok(Comp {
        at: scope.at.clone(),
        n_lhs: c.indices.len(),
        bounds,
        accumulate: c.op != Reduction::Assign && !c.init,
        op: c.op,
        reduction: c.op != Reduction::Assign,
        body,
        checks,
    })
}

impl Scope<'_> {
    /// Compiles a value outside any comprehension's lets (a call's float
    /// scalar argument).
    pub(crate) fn value(&self, e: &Expr) -> Result<Val, String> {
        self.val(e, 0)
    }

    /// Compiles an ordinary expression outside any comprehension's lets (a
    /// call's integer scalar argument).
    pub(crate) fn ordinary(&self, e: &Expr) -> Result<Ord, String> {
        self.ord(e, 0)
    }

    /// The let named `n` visible from a place that sees the first `upto`
    /// lets: the last binding before it.
    fn find_let(&self, n: &str, upto: usize) -> Result<(usize, &Expr), String> {
        self.comp.lets[..upto]
            .iter()
            .enumerate()
            .rev()
            .find(|(_, (m, _))| m == n)
            .map(|(k, (_, e))| (k, e))
            .ok_or_else(|| format!("let `{n}` is used before it is bound"))
    }

    /// Whether `e` reads a tensor, itself or through lets.
    fn reads(&self, e: &Expr, upto: usize) -> bool {
        match e {
            Expr::Read(..) => true,
            Expr::Local(n) => self.find_let(n, upto).is_ok_and(|(k, v)| self.reads(v, k)),
            _ => e.children().into_iter().any(|x| self.reads(x, upto)),
        }
    }

    fn type_of(&self, e: &Expr) -> DType {
        self.def.type_of(Some(self.comp), e)
    }

    fn print(&self, e: &Expr) -> String {
        ir::print_expr(self.def, Some(self.comp), e)
    }

    fn slot(&self, n: &str) -> Result<usize, String> {
        self.slots
            .get(n)
            .copied()
            .ok_or_else(|| format!("iterator `{n}` has no range"))
    }

    /// Compiles a value-position expression to a value over Z_p.
    fn val(&self, e: &Expr, upto: usize) -> Result<Val, String> {
        let t = self.type_of(e);
        let reads = self.reads(e, upto);
        if !reads && !t.is_float() {
            // An integer or a condition used as a coefficient.
            return Ok(Val::Ord(self.ord(e, upto)?));
        }
        let not_poly = |what: &str| Err(format!("{what} in `{}`", self.print(e)));
        let real = |op: RealOp, args: &[&Expr]| -> Result<Val, String> {
            let args = args
                .iter()
                .map(|a| self.val(a, upto))
                .collect::<Result<_, _>>()?;
            Ok(Val::Real(op, args))
        };
        Ok(match e {
            Expr::Read(..) => Val::Read(self.read(e, upto)?),
            Expr::Lit(v, _) => {
                let residue = match literal(*v) {
                    Ok(r) => r,
                    Err(_) if self.real => 0,
                    Err(m) => return Err(m),
                };
                Val::Const(residue, to_f64(*v))
            }
            Expr::Iter(n) => Val::Iter(self.slot(n)?),
            Expr::Sym(n) => match (self.sizes.get(n), self.scalars.get(n)) {
                (Some(&v), _) => Val::Const(residue::from_i64(v), v as f64),
                (None, Some(v)) => v.clone(),
                (None, None) => return Err(format!("unknown symbol `{n}`")),
            },
            Expr::Local(n) => {
                let (k, v) = self.find_let(n, upto)?;
                self.val(v, k)?
            }
            Expr::Unary(UnOp::Neg, a) => Val::Neg(Box::new(self.val(a, upto)?)),
            Expr::Binary(op @ (BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div), a, b)
                if t.is_float() =>
            {
                let (x, y) = (Box::new(self.val(a, upto)?), self.val(b, upto)?);
                match op {
                    BinOp::Add => Val::Add(x, Box::new(y)),
                    BinOp::Sub => Val::Sub(x, Box::new(y)),
                    BinOp::Mul => Val::Mul(x, Box::new(y)),
                    _ if self.reads(b, upto) && self.real => {
                        Val::Real(RealOp::Binary(*op, t), vec![*x, y])
                    }
                    _ if self.reads(b, upto) => return not_poly("a division by a tensor value"),
                    _ => Val::Mul(x, Box::new(Val::Inv(Box::new(y)))),
                }
            }
            Expr::Select(c, a, b) => {
                if self.reads(c, upto) && self.real {
                    return real(RealOp::Select, &[c, a, b]);
                }
                if self.reads(c, upto) {
                    return not_poly("a condition on tensor values");
                }
                Val::Select(
                    self.ord(c, upto)?,
                    Box::new(self.val(a, upto)?),
                    Box::new(self.val(b, upto)?),
                )
            }
            Expr::Cast(to, a) if !reads && self.type_of(a).is_float() && to.is_float() => {
                self.val(a, upto)?
            }
            // A transcendental constant is a coefficient like any other.
            Expr::Call(..) if !reads => Val::Ord(self.ord(e, upto)?),
            Expr::Call(b, args) if self.real => {
                let t = args.first().map_or(DType::F32, |a| self.type_of(a));
                return real(RealOp::Call(*b, t), &args.iter().collect::<Vec<_>>());
            }
            Expr::Cast(to, a) if self.real => {
                return real(RealOp::Cast(*to, self.type_of(a)), &[a])
            }
            Expr::Unary(op, a) if self.real => {
                return real(RealOp::Unary(*op, self.type_of(a)), &[a])
            }
            Expr::Binary(op, a, b) if self.real => {
                return real(RealOp::Binary(*op, self.type_of(a)), &[a, b])
            }
            Expr::Call(b, _) => return not_poly(&format!("`{}` of a tensor value", b.name())),
            Expr::Cast(to, _) => return not_poly(&format!("a cast of a tensor value to {to}")),
            Expr::Binary(op, ..) => {
                return not_poly(&format!("`{}` on a tensor value", op.symbol()))
            }
            _ => return not_poly("a logical operation on a tensor value"),
        })
    }

    fn read(&self, e: &Expr, upto: usize) -> Result<Read, String> {
        let Expr::Read(t, subs) = e else {
            return Err(format!("`{}` is not a read", self.print(e)));
        };
        if subs.iter().any(|s| self.reads(s, upto)) {
            return Err(format!(
                "an indirect subscript in `{}` (a gather is not linear in its indices)",
                self.print(e)
            ));
        }
        let node = *self
            .env
            .get(t)
            .ok_or_else(|| format!("`{t}` is read before it is defined"))?;
        let rank = self.nodes[node].shape.len();
        if rank != subs.len() {
            return Err(format!(
                "`{t}` has {rank} dimensions but is read with {} subscripts",
                subs.len()
            ));
        }
        Ok(Read {
            node,
            subs: subs
                .iter()
                .map(|s| self.ord(s, upto))
                .collect::<Result<_, _>>()?,
            tensor: t.clone(),
        })
    }

    /// The reads of `e` evaluated at every point: not under a `?:` branch.
    fn checks(&self, e: &Expr, upto: usize, out: &mut Vec<Read>) -> Result<(), String> {
        match e {
            Expr::Read(..) => out.push(self.read(e, upto)?),
            Expr::Select(c, _, _) => self.checks(c, upto, out)?,
            _ => {
                for x in e.children() {
                    self.checks(x, upto, out)?;
                }
            }
        }
        Ok(())
    }

    /// Compiles an expression with ordinary semantics (a subscript, a
    /// condition, an integer coefficient).
    fn ord(&self, e: &Expr, upto: usize) -> Result<Ord, String> {
        let t = self.type_of(e);
        Ok(match e {
            Expr::Lit(Value::Int(i), DType::I64) => Ord::Form(Form::constant(*i)),
            Expr::Lit(v, t) => Ord::Const(ir::arith::cast_value(*t, *v)),
            Expr::Iter(n) => Ord::Form(Form::iter(self.slot(n)?)),
            Expr::Sym(n) => match (self.sizes.get(n), self.def.scalar(n)) {
                (Some(&v), _) if t == DType::I64 => Ord::Form(Form::constant(v)),
                (Some(&v), _) => Ord::Const(ir::arith::cast_value(t, Value::Int(v))),
                (None, Some(_)) => {
                    return Err(format!(
                        "the float scalar `{n}` in a subscript or condition"
                    ))
                }
                (None, None) => return Err(format!("unknown symbol `{n}`")),
            },
            Expr::Local(n) => {
                let (k, v) = self.find_let(n, upto)?;
                self.ord(v, k)?
            }
            Expr::Unary(op, a) => match (op, self.ord(a, upto)?) {
                (UnOp::Neg, Ord::Form(f)) if t == DType::I64 => Ord::Form(f.scale(-1)),
                (op, x) => Ord::Unary(*op, t, Box::new(x)),
            },
            Expr::Binary(op, a, b) => {
                let ta = self.type_of(a);
                let (x, y) = (self.ord(a, upto)?, self.ord(b, upto)?);
                match (op, x, y) {
                    (op, Ord::Form(f), Ord::Form(g)) if ta == DType::I64 => {
                        match affine(*op, &f, &g) {
                            Some(h) => Ord::Form(h),
                            None => {
                                Ord::Binary(*op, ta, Box::new(Ord::Form(f)), Box::new(Ord::Form(g)))
                            }
                        }
                    }
                    (op, x, y) => Ord::Binary(*op, ta, Box::new(x), Box::new(y)),
                }
            }
            Expr::Select(c, a, b) => Ord::Select(
                Box::new(self.ord(c, upto)?),
                Box::new(self.ord(a, upto)?),
                Box::new(self.ord(b, upto)?),
            ),
            Expr::Cast(to, a) if *to == DType::I64 && self.type_of(a) == DType::I64 => {
                self.ord(a, upto)?
            }
            // A narrower integer constant (an `int32` attribute bound to
            // its value) widened is an affine constant, so subscripts that
            // multiply iterators by it stay affine.
            Expr::Cast(DType::I64, a) if self.type_of(a).is_int() => match self.ord(a, upto)? {
                Ord::Const(Value::Int(v)) => Ord::Form(Form::constant(v)),
                x => Ord::Cast(DType::I64, Box::new(x)),
            },
            Expr::Cast(to, a) => Ord::Cast(*to, Box::new(self.ord(a, upto)?)),
            Expr::Call(b, args) => Ord::Call(
                *b,
                args.first().map_or(DType::F32, |a| self.type_of(a)),
                args.iter()
                    .map(|a| self.ord(a, upto))
                    .collect::<Result<_, _>>()?,
            ),
            Expr::Read(..) => {
                return Err(format!(
                    "a subscript or condition on tensor values (`{}`)",
                    self.print(e)
                ))
            }
        })
    }
}

/// `f op g` as a form when it is one (sums, products by a constant, floor
/// division and modulo by a positive constant).
fn affine(op: BinOp, f: &Form, g: &Form) -> Option<Form> {
    let (f, g) = (f.clone(), g.clone());
    match (op, f.as_constant(), g.as_constant()) {
        (BinOp::Add, ..) => Some(f.add(g)),
        (BinOp::Sub, ..) => Some(f.add(g.scale(-1))),
        (BinOp::Mul, _, Some(k)) => Some(f.scale(k)),
        (BinOp::Mul, Some(k), _) => Some(g.scale(k)),
        (BinOp::Div, _, Some(k)) if k > 0 => Some(f.floor_div(k)),
        (BinOp::Mod, _, Some(k)) if k > 0 => Some(f.floor_mod(k)),
        _ => None,
    }
}

/// A literal's residue (a float as the exact rational it is).
fn literal(v: Value) -> Result<u64, String> {
    match v {
        Value::Int(i) => Ok(residue::from_i64(i)),
        Value::Bool(b) => Ok(u64::from(b)),
        Value::Float(x) => {
            residue::from_dyadic(x).ok_or_else(|| format!("the literal {x:?} is not a number"))
        }
    }
}
