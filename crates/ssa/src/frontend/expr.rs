//! Expressions: names, literals, attributes, operators with PyTorch's
//! broadcasting and type promotion, tuples, and the dispatch of calls.

use ruff_python_ast::{self as ast, Expr as PyExpr, Number, Operator};

use crate::error::{Error, Result};
use crate::graph::{Elem, Op, Span, Ty, ValueId};
use ir::{BinOp, DType};

use super::{span, Tracer, Val};

impl Tracer<'_> {
    pub(super) fn expr(&mut self, e: &PyExpr) -> Result<Val> {
        let at = span(e);
        self.enter(at)?;
        let r = self.expr_inner(e, at);
        self.leave();
        r
    }

    fn expr_inner(&mut self, e: &PyExpr, at: Span) -> Result<Val> {
        match e {
            PyExpr::Name(n) => self.name(n.id.as_str(), at),
            PyExpr::NumberLiteral(n) => match &n.value {
                Number::Int(i) => {
                    let v = i
                        .as_i64()
                        .ok_or_else(|| Error::new(at, "integer literal too large for int64"))?;
                    Ok(self.constant(ir::Value::Int(v), at))
                }
                Number::Float(f) => Ok(self.constant(ir::Value::Float(*f), at)),
                Number::Complex { .. } => {
                    Err(Error::new(at, "complex numbers are not in the subset"))
                }
            },
            PyExpr::BooleanLiteral(b) => Ok(self.constant(ir::Value::Bool(b.value), at)),
            PyExpr::NoneLiteral(_) => Ok(Val::None),
            PyExpr::Tuple(t) => {
                let items = t.elts.iter().map(|x| self.expr(x)).collect::<Result<_>>()?;
                Ok(Val::Tuple(items))
            }
            PyExpr::List(t) => {
                let items = t.elts.iter().map(|x| self.expr(x)).collect::<Result<_>>()?;
                Ok(Val::Tuple(items))
            }
            PyExpr::Attribute(a) => self.attribute(a),
            PyExpr::Subscript(s) => self.subscript(s),
            PyExpr::Call(c) => self.call(c),
            PyExpr::BinOp(b) => {
                let l = self.expr(&b.left)?;
                let r = self.expr(&b.right)?;
                let l = self.value(&l, "the left operand", span(&*b.left))?;
                let r = self.value(&r, "the right operand", span(&*b.right))?;
                if b.op == Operator::MatMult {
                    return self.matmul(l, r, at);
                }
                self.arith(b.op, l, r, at)
            }
            PyExpr::UnaryOp(u) => {
                let x = self.expr(&u.operand)?;
                let x = self.value(&x, "the operand", at)?;
                match u.op {
                    ast::UnaryOp::USub => self.elementwise(Elem::Neg, vec![x], None, at),
                    ast::UnaryOp::UAdd => Ok(Val::Value(x)),
                    ast::UnaryOp::Not => {
                        let x = self.item(x, at)?;
                        self.elementwise(Elem::Not, vec![x], Some(DType::Bool), at)
                    }
                    ast::UnaryOp::Invert => {
                        if self.dtype(x) != DType::Bool {
                            return Err(Error::new(at, "`~` is supported on bool tensors only"));
                        }
                        self.elementwise(Elem::Not, vec![x], Some(DType::Bool), at)
                    }
                }
            }
            PyExpr::Compare(c) => {
                // `a < b < c` is `a < b and b < c`.
                let mut left = self.expr(&c.left)?;
                let mut acc: Option<ValueId> = None;
                for (op, right) in c.ops.iter().zip(c.comparators.iter()) {
                    let r = self.expr(right)?;
                    let (l, rv) = (
                        self.value(&left, "the left operand", at)?,
                        self.value(&r, "the right operand", at)?,
                    );
                    let op = cmp_op(*op, at)?;
                    let v = self.binary(op, l, rv, at)?;
                    let v = self.value(&v, "the comparison", at)?;
                    acc = Some(match acc {
                        None => v,
                        Some(a) => {
                            let both = self.binary(BinOp::And, a, v, at)?;
                            self.value(&both, "the comparison", at)?
                        }
                    });
                    left = r;
                }
                Ok(Val::Value(
                    acc.ok_or_else(|| Error::new(at, "empty comparison"))?,
                ))
            }
            PyExpr::BoolOp(b) => {
                let op = match b.op {
                    ast::BoolOp::And => BinOp::And,
                    ast::BoolOp::Or => BinOp::Or,
                };
                let mut acc: Option<ValueId> = None;
                for v in &b.values {
                    let x = self.expr(v)?;
                    let x = self.value(&x, "an operand of `and`/`or`", span(v))?;
                    let x = self.item(x, span(v))?;
                    acc = Some(match acc {
                        None => x,
                        Some(a) => {
                            let r = self.scalar_op(Elem::Binary(op), vec![a, x], Ty::Bool, at)?;
                            self.value(&r, "the condition", at)?
                        }
                    });
                }
                Ok(Val::Value(
                    acc.ok_or_else(|| Error::new(at, "empty `and`/`or`"))?,
                ))
            }
            PyExpr::EllipsisLiteral(_) => {
                Err(Error::new(at, "`...` is only allowed in a subscript"))
            }
            PyExpr::Slice(_) => Err(Error::new(at, "a slice is only allowed in a subscript")),
            PyExpr::StringLiteral(_) => Err(Error::new(at, "strings are not values in the subset")),
            other => Err(Error::new(
                at,
                format!("{} expressions are not in the subset", expr_kind(other)),
            )),
        }
    }

    fn name(&mut self, n: &str, at: Span) -> Result<Val> {
        if let Some(v) = self.env.get(n) {
            return Ok(v.clone());
        }
        match n {
            "torch" => Ok(Val::Module("torch")),
            "F" => Ok(Val::Module("F")),
            "math" => Ok(Val::Module("math")),
            _ if self.module.def(n).is_some() => Ok(Val::Def(n.to_string())),
            _ => self.lookup(n, at),
        }
    }

    fn attribute(&mut self, a: &ast::ExprAttribute) -> Result<Val> {
        let at = span(a);
        let base = self.expr(&a.value)?;
        let attr = a.attr.as_str();
        match &base {
            Val::Module("torch") => {
                if let Some(t) = dtype_name(attr) {
                    return Ok(Val::DType(t));
                }
                match attr {
                    "nn" => Ok(Val::Module("torch.nn")),
                    _ => Err(Error::new(at, format!("`torch.{attr}` is not in the subset (only calls of torch functions and dtypes)"))),
                }
            }
            Val::Module("torch.nn") if attr == "functional" => Ok(Val::Module("F")),
            Val::Module("math") => match attr {
                "pi" => Ok(self.constant(ir::Value::Float(std::f64::consts::PI), at)),
                "e" => Ok(self.constant(ir::Value::Float(std::f64::consts::E), at)),
                "inf" => Ok(self.constant(ir::Value::Float(f64::INFINITY), at)),
                _ => Err(Error::new(at, format!("`math.{attr}` is not in the subset"))),
            },
            Val::Value(v) if matches!(self.g.ty(*v), Ty::Tensor { .. }) => match attr {
                "shape" => {
                    let shape = self.shape(*v);
                    Ok(Val::Tuple(shape.into_iter().map(|d| self.constant(ir::Value::Int(d), at)).collect()))
                }
                "T" | "mT" => Err(Error::new(at, format!("`.{attr}` is not in the subset: write `.t()` or `.transpose(a, b)`"))),
                "dtype" => Ok(Val::DType(self.dtype(*v))),
                _ => Err(Error::new(at, format!("tensor attribute `.{attr}` is not in the subset (methods are called: `.{attr}(...)`)"))),
            },
            other => Err(Error::new(at, format!("`{}` has no attribute `{attr}` in the subset", other.describe()))),
        }
    }

    /// Python's arithmetic operator `op` on tensors or numbers: `/` is true
    /// division and `//` floor division, whatever the operands.
    pub(super) fn arith(&mut self, op: Operator, a: ValueId, b: ValueId, at: Span) -> Result<Val> {
        match op {
            Operator::Pow => self.power(a, b, at),
            Operator::Div => {
                let (ta, tb) = (self.g.ty(a).clone(), self.g.ty(b).clone());
                if result_dtype(&ta, &tb).is_float() {
                    self.binary(BinOp::Div, a, b, at)
                } else {
                    let a = self.as_float(a, at)?;
                    self.binary(BinOp::Div, a, b, at)
                }
            }
            Operator::FloorDiv => {
                let (ta, tb) = (self.g.ty(a).clone(), self.g.ty(b).clone());
                let q = self.binary(BinOp::Div, a, b, at)?;
                if result_dtype(&ta, &tb).is_float() {
                    let q = self.value(&q, "the quotient", at)?;
                    self.elementwise(Elem::Builtin(ir::Builtin::Floor), vec![q], None, at)
                } else {
                    Ok(q)
                }
            }
            other => {
                let op = bin_op(other, at)?;
                self.binary(op, a, b, at)
            }
        }
    }

    /// `v` as a float (a float32 tensor, or a Python float).
    fn as_float(&mut self, v: ValueId, at: Span) -> Result<ValueId> {
        match self.g.ty(v).clone() {
            Ty::Tensor { dtype, .. } if dtype.is_float() => Ok(v),
            Ty::Tensor { .. } => {
                let r = self.elementwise_typed(Elem::Cast, vec![v], DType::F32, at)?;
                self.value(&r, "the operand", at)
            }
            Ty::Float => Ok(v),
            _ => Ok(self.promote_scalar(v, &Ty::Float, at)),
        }
    }

    /// `a op b` on tensors or Python numbers, broadcast, with PyTorch's
    /// result type (`Div` is floor division on integers).
    pub(super) fn binary(&mut self, op: BinOp, a: ValueId, b: ValueId, at: Span) -> Result<Val> {
        let (ta, tb) = (self.g.ty(a).clone(), self.g.ty(b).clone());
        let tensors = matches!(ta, Ty::Tensor { .. }) || matches!(tb, Ty::Tensor { .. });
        if !tensors {
            let ty = scalar_result(op, &ta, &tb);
            let (a, b) = (
                self.promote_scalar(a, &ty, at),
                self.promote_scalar(b, &ty, at),
            );
            return self.scalar_op(
                Elem::Binary(op),
                vec![a, b],
                if op.is_comparison() || op.is_logical() {
                    Ty::Bool
                } else {
                    ty
                },
                at,
            );
        }
        let common = result_dtype(&ta, &tb);
        let out = if op.is_comparison() || op.is_logical() {
            DType::Bool
        } else {
            common
        };
        if op.is_logical() && common != DType::Bool {
            return Err(Error::new(
                at,
                "`&` and `|` are supported on bool tensors only",
            ));
        }
        self.elementwise_typed(Elem::Binary(op), vec![a, b], out, at)
    }

    /// A scalar converted to the type of a scalar operation.
    fn promote_scalar(&mut self, v: ValueId, ty: &Ty, at: Span) -> ValueId {
        if self.g.ty(v) == ty || matches!(ty, Ty::Bool) {
            return v;
        }
        if let Some(c) = self.const_of(v) {
            let conv = match (ty, c) {
                (Ty::Float, ir::Value::Int(i)) => ir::Value::Float(i as f64),
                (Ty::Float, ir::Value::Bool(b)) => ir::Value::Float(b as i64 as f64),
                (Ty::Int, ir::Value::Bool(b)) => ir::Value::Int(b as i64),
                (_, c) => c,
            };
            return self.const_id(conv, at);
        }
        let n = self.g.push(
            self.block,
            Op::Scalar(Elem::Cast),
            vec![v],
            &[("_s", ty.clone())],
            at,
        );
        self.g.nodes[n].outputs[0]
    }

    /// `x ** y`: squares and square roots as multiplications and `sqrt`,
    /// other exponents with `pow`.
    fn power(&mut self, x: ValueId, y: ValueId, at: Span) -> Result<Val> {
        match self.const_of(y) {
            Some(ir::Value::Int(2)) => self.binary(BinOp::Mul, x, x, at),
            Some(ir::Value::Float(0.5)) => self.elementwise(
                Elem::Builtin(ir::Builtin::Sqrt),
                vec![x],
                Some(float_type(self.dtype(x))),
                at,
            ),
            _ => {
                let t = float_type(result_dtype(&self.g.ty(x).clone(), &self.g.ty(y).clone()));
                self.elementwise_typed(Elem::Builtin(ir::Builtin::Pow), vec![x, y], t, at)
            }
        }
    }

    /// An elementwise operation whose result has the common type of its
    /// operands (or `out`).
    pub(super) fn elementwise(
        &mut self,
        op: Elem,
        inputs: Vec<ValueId>,
        out: Option<DType>,
        at: Span,
    ) -> Result<Val> {
        let tys: Vec<Ty> = inputs.iter().map(|&v| self.g.ty(v).clone()).collect();
        if tys.iter().all(|t| !matches!(t, Ty::Tensor { .. })) {
            let ty = match out {
                Some(DType::Bool) => Ty::Bool,
                Some(t) if t.is_float() => Ty::Float,
                Some(_) => Ty::Int,
                None => tys[0].clone(),
            };
            return self.scalar_op(op, inputs, ty, at);
        }
        let common = tys.iter().skip(1).fold(tys[0].clone(), |acc, t| {
            Ty::tensor(result_dtype(&acc, t), Vec::new())
        });
        let Ty::Tensor { dtype, .. } = common else {
            unreachable!("a fold of tensor types")
        };
        self.elementwise_typed(op, inputs, out.unwrap_or(dtype), at)
    }

    /// An elementwise tensor operation with result type `out`.
    pub(super) fn elementwise_typed(
        &mut self,
        op: Elem,
        inputs: Vec<ValueId>,
        out: DType,
        at: Span,
    ) -> Result<Val> {
        let mut shape: Vec<i64> = Vec::new();
        for &v in &inputs {
            let s = self.shape(v);
            shape = broadcast(&shape, &s).ok_or_else(|| {
                Error::new(at, format!("shapes {shape:?} and {s:?} do not broadcast"))
            })?;
        }
        let n = self.g.push(
            self.block,
            Op::Elem(op),
            inputs,
            &[("_t", Ty::tensor(out, shape))],
            at,
        );
        Ok(Val::Value(self.g.nodes[n].outputs[0]))
    }
}

/// PyTorch's broadcast of two shapes (aligned at the right).
pub(crate) fn broadcast(a: &[i64], b: &[i64]) -> Option<Vec<i64>> {
    let n = a.len().max(b.len());
    let mut out = vec![0; n];
    for (k, o) in out.iter_mut().enumerate() {
        let x = if k + a.len() >= n {
            a[k + a.len() - n]
        } else {
            1
        };
        let y = if k + b.len() >= n {
            b[k + b.len() - n]
        } else {
            1
        };
        *o = match (x, y) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => return None,
        };
    }
    Some(out)
}

/// The element type of an operation on `a` and `b` (PyTorch's promotion:
/// a Python number does not widen a tensor of its own kind).
pub(crate) fn result_dtype(a: &Ty, b: &Ty) -> DType {
    let kind = |t: &Ty| match t {
        Ty::Tensor { dtype, .. } if *dtype == DType::Bool => 0,
        Ty::Tensor { dtype, .. } if dtype.is_float() => 2,
        Ty::Tensor { .. } => 1,
        Ty::Bool => 0,
        Ty::Int => 1,
        Ty::Float => 2,
    };
    match (a, b) {
        (Ty::Tensor { dtype: x, .. }, Ty::Tensor { dtype: y, .. }) => DType::promote(*x, *y),
        (Ty::Tensor { dtype, .. }, s) | (s, Ty::Tensor { dtype, .. }) => {
            if kind(s) > kind(&Ty::tensor(*dtype, Vec::new())) {
                if kind(s) == 2 {
                    DType::F32
                } else {
                    DType::I64
                }
            } else {
                *dtype
            }
        }
        _ => match kind(a).max(kind(b)) {
            2 => DType::F32,
            1 => DType::I64,
            _ => DType::Bool,
        },
    }
}

/// The type a scalar operation computes in (comparisons then give bool).
fn scalar_result(op: BinOp, a: &Ty, b: &Ty) -> Ty {
    if matches!(a, Ty::Float) || matches!(b, Ty::Float) {
        Ty::Float
    } else if matches!((a, b), (Ty::Bool, Ty::Bool)) && op.is_logical() {
        Ty::Bool
    } else {
        Ty::Int
    }
}

fn float_type(t: DType) -> DType {
    if t.is_float() {
        t
    } else {
        DType::F32
    }
}

pub(crate) fn bin_op(op: Operator, at: Span) -> Result<BinOp> {
    Ok(match op {
        Operator::Add => BinOp::Add,
        Operator::Sub => BinOp::Sub,
        Operator::Mult => BinOp::Mul,
        Operator::Mod => BinOp::Mod,
        Operator::BitAnd => BinOp::And,
        Operator::BitOr => BinOp::Or,
        other => {
            return Err(Error::new(
                at,
                format!("operator `{}` is not in the subset here", other.as_str()),
            ))
        }
    })
}

fn cmp_op(op: ast::CmpOp, at: Span) -> Result<BinOp> {
    Ok(match op {
        ast::CmpOp::Lt => BinOp::Lt,
        ast::CmpOp::LtE => BinOp::Le,
        ast::CmpOp::Gt => BinOp::Gt,
        ast::CmpOp::GtE => BinOp::Ge,
        ast::CmpOp::Eq => BinOp::Eq,
        ast::CmpOp::NotEq => BinOp::Ne,
        other => {
            return Err(Error::new(
                at,
                format!("comparison `{}` is not in the subset", other.as_str()),
            ))
        }
    })
}

pub(crate) fn dtype_name(n: &str) -> Option<DType> {
    Some(match n {
        "float32" | "float" => DType::F32,
        "float64" | "double" => DType::F64,
        "int64" | "long" => DType::I64,
        "int32" | "int" => DType::I32,
        "bool" => DType::Bool,
        _ => return None,
    })
}

fn expr_kind(e: &PyExpr) -> &'static str {
    match e {
        PyExpr::Lambda(_) => "lambda",
        PyExpr::If(_) => "conditional (`a if c else b`)",
        PyExpr::Dict(_) | PyExpr::DictComp(_) => "dict",
        PyExpr::Set(_) | PyExpr::SetComp(_) => "set",
        PyExpr::ListComp(_) | PyExpr::Generator(_) => "comprehension",
        PyExpr::Await(_) | PyExpr::Yield(_) | PyExpr::YieldFrom(_) => "await/yield",
        PyExpr::FString(_) | PyExpr::TString(_) => "f-string",
        PyExpr::Starred(_) => "starred (`*x`)",
        PyExpr::Named(_) => "walrus (`:=`)",
        _ => "these",
    }
}
