//! What a Python name or expression stands for while tracing, and the
//! helpers that make and read graph values.

use crate::error::{Error, Result};
use crate::graph::{Elem, Op, Origin, Span, Ty, ValueId};
use ir::DType;

use super::Tracer;

#[derive(Clone, Debug, PartialEq)]
pub enum Val {
    /// A tensor or a Python scalar in the graph.
    Value(ValueId),
    Tuple(Vec<Val>),
    /// `torch`, `torch.nn.functional` (as `F`) or `math`.
    Module(&'static str),
    DType(DType),
    /// A def of the file.
    Def(String),
    None,
}

impl Val {
    pub fn describe(&self) -> String {
        match self {
            Val::Value(_) => "a value".into(),
            Val::Tuple(items) => format!("a tuple of {}", items.len()),
            Val::Module(m) => format!("the module `{m}`"),
            Val::DType(t) => format!("the dtype {t}"),
            Val::Def(d) => format!("the def `{d}`"),
            Val::None => "None".into(),
        }
    }
}

impl Tracer<'_> {
    /// A Python constant.
    pub fn constant(&mut self, v: ir::Value, at: Span) -> Val {
        Val::Value(self.const_id(v, at))
    }

    /// A Python constant's graph value.
    pub fn const_id(&mut self, v: ir::Value, at: Span) -> ValueId {
        let ty = match v {
            ir::Value::Int(_) => Ty::Int,
            ir::Value::Float(_) => Ty::Float,
            ir::Value::Bool(_) => Ty::Bool,
        };
        let n = self
            .g
            .push(self.block, Op::Const(v), Vec::new(), &[("_c", ty)], at);
        self.g.nodes[n].outputs[0]
    }

    /// The value of `v` if it is known while tracing.
    pub fn const_of(&self, v: ValueId) -> Option<ir::Value> {
        match self.g.values[v].origin {
            Origin::Node(n, _) => match self.g.nodes[n].op {
                Op::Const(c) => Some(c),
                _ => None,
            },
            Origin::Param(..) => None,
        }
    }

    /// The integer `val` must be known while tracing (a size, a count).
    pub fn known_int(&self, val: &Val, what: &str, at: Span) -> Result<i64> {
        match val {
            Val::Value(v) => match self.const_of(*v) {
                Some(ir::Value::Int(i)) => Ok(i),
                Some(ir::Value::Bool(b)) => Ok(b as i64),
                Some(ir::Value::Float(_)) => Err(Error::new(at, format!("{what} must be an integer, not a float"))),
                None if self.g.ty(*v) == &Ty::Int => Err(Error {
                    needs_known: true,
                    ..Error::new(
                        at,
                        format!("{what} must be known when the def is traced (a size, an integer argument or a literal), not computed at run time"),
                    )
                }),
                None => Err(Error::new(at, format!("{what} must be an integer"))),
            },
            other => Err(Error::new(at, format!("{what} must be an integer, not {}", other.describe()))),
        }
    }

    /// The graph value `val` stands for.
    pub fn value(&self, val: &Val, what: &str, at: Span) -> Result<ValueId> {
        match val {
            Val::Value(v) => Ok(*v),
            other => Err(Error::new(
                at,
                format!("{what} is {}, not a tensor or number", other.describe()),
            )),
        }
    }

    /// The tensor `val` stands for.
    pub fn tensor(&self, val: &Val, what: &str, at: Span) -> Result<ValueId> {
        let v = self.value(val, what, at)?;
        match self.g.ty(v) {
            Ty::Tensor { .. } => Ok(v),
            _ => Err(Error::new(
                at,
                format!("{what} must be a tensor, not a Python number"),
            )),
        }
    }

    pub fn shape(&self, v: ValueId) -> Vec<i64> {
        self.g
            .ty(v)
            .shape()
            .map(<[i64]>::to_vec)
            .unwrap_or_default()
    }

    pub fn dtype(&self, v: ValueId) -> DType {
        match self.g.ty(v) {
            Ty::Tensor { dtype, .. } => *dtype,
            Ty::Int => DType::I64,
            Ty::Float => DType::F32,
            Ty::Bool => DType::Bool,
        }
    }

    /// A 0-d tensor holding scalar `v`.
    pub fn scalar_tensor(&mut self, v: ValueId, at: Span) -> ValueId {
        let ty = Ty::tensor(self.dtype(v), Vec::new());
        let n = self
            .g
            .push(self.block, Op::ToTensor, vec![v], &[("_s", ty)], at);
        self.g.nodes[n].outputs[0]
    }

    /// The scalar a 0-d tensor holds (`bool(t)`, a condition).
    pub fn item(&mut self, v: ValueId, at: Span) -> Result<ValueId> {
        match self.g.ty(v).clone() {
            Ty::Tensor { dtype, shape } => {
                if shape.iter().product::<i64>() != 1 {
                    return Err(Error::new(
                        at,
                        format!("a tensor of shape {shape:?} has no single truth value or number (PyTorch raises here too)"),
                    ));
                }
                let v = if shape.is_empty() {
                    v
                } else {
                    self.view(v, crate::graph::View::Reshape(Vec::new()), Vec::new(), at)?
                };
                let ty = if dtype == DType::Bool {
                    Ty::Bool
                } else if dtype.is_float() {
                    Ty::Float
                } else {
                    Ty::Int
                };
                let n = self
                    .g
                    .push(self.block, Op::Item, vec![v], &[("_item", ty)], at);
                Ok(self.g.nodes[n].outputs[0])
            }
            _ => Ok(v),
        }
    }

    /// A Python scalar operation, folded when its operands are known.
    pub fn scalar_op(&mut self, op: Elem, inputs: Vec<ValueId>, ty: Ty, at: Span) -> Result<Val> {
        let known: Option<Vec<ir::Value>> = inputs.iter().map(|&v| self.const_of(v)).collect();
        if let Some(vals) = known {
            if let Some(v) = fold(&op, &vals, &ty) {
                return Ok(self.constant(v, at));
            }
        }
        let n = self
            .g
            .push(self.block, Op::Scalar(op), inputs, &[("_s", ty)], at);
        Ok(Val::Value(self.g.nodes[n].outputs[0]))
    }
}

/// Python's value of a scalar operation on known operands.
fn fold(op: &Elem, vals: &[ir::Value], ty: &Ty) -> Option<ir::Value> {
    use ir::{BinOp, Value};
    let as_f = |v: &Value| match v {
        Value::Int(i) => *i as f64,
        Value::Float(f) => *f,
        Value::Bool(b) => *b as i64 as f64,
    };
    let as_i = |v: &Value| match v {
        Value::Int(i) => Some(*i),
        Value::Bool(b) => Some(*b as i64),
        Value::Float(_) => None,
    };
    match (op, vals) {
        (Elem::Binary(b), [x, y]) => {
            if b.is_comparison() {
                let (a, c) = (as_f(x), as_f(y));
                let r = match b {
                    BinOp::Lt => a < c,
                    BinOp::Le => a <= c,
                    BinOp::Gt => a > c,
                    BinOp::Ge => a >= c,
                    BinOp::Eq => a == c,
                    _ => a != c,
                };
                return Some(Value::Bool(r));
            }
            if b.is_logical() {
                let (a, c) = (as_f(x) != 0.0, as_f(y) != 0.0);
                return Some(Value::Bool(if *b == BinOp::And { a && c } else { a || c }));
            }
            match ty {
                Ty::Int => {
                    let (a, c) = (as_i(x)?, as_i(y)?);
                    Some(Value::Int(match b {
                        BinOp::Add => a.checked_add(c)?,
                        BinOp::Sub => a.checked_sub(c)?,
                        BinOp::Mul => a.checked_mul(c)?,
                        BinOp::Div if c != 0 => ir::floor_div(a, c),
                        BinOp::Mod if c != 0 => ir::floor_mod(a, c),
                        _ => return None,
                    }))
                }
                _ => {
                    let (a, c) = (as_f(x), as_f(y));
                    Some(Value::Float(match b {
                        BinOp::Add => a + c,
                        BinOp::Sub => a - c,
                        BinOp::Mul => a * c,
                        BinOp::Div => a / c,
                        BinOp::Mod => a - c * (a / c).floor(),
                        _ => return None,
                    }))
                }
            }
        }
        (Elem::Neg, [x]) => match x {
            Value::Int(i) => Some(Value::Int(i.checked_neg()?)),
            Value::Float(f) => Some(Value::Float(-f)),
            Value::Bool(b) => Some(Value::Int(-(*b as i64))),
        },
        (Elem::Not, [x]) => Some(Value::Bool(as_f(x) == 0.0)),
        _ => None,
    }
}
