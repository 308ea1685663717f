//! Compiled statements of the verifier's graphs: values over Z_p for
//! bodies, ordinary values for subscripts and conditions.
//!
//! A body compiles to a [`Val`], whose evaluation is a residue mod p; the
//! subscripts and conditions inside it compile to [`Ord`]s, evaluated with
//! the IR's ordinary semantics (`ir::arith`: wrapping integers, floor
//! division, `float32` rounding), as the interpreter's mod-p mode does. An
//! integer expression that is affine up to floors is kept as a [`Form`],
//! which box propagation reads and which evaluates without a tree walk.

use ir::{arith, BinOp, Builtin, DType, UnOp, Value};

use super::form::Form;

/// An expression with ordinary semantics (no tensor reads).
#[derive(Clone, Debug)]
pub(crate) enum Ord {
    /// An `int64` value affine up to floors.
    Form(Form),
    Const(Value),
    Unary(UnOp, DType, Box<Ord>),
    /// The operator, its operands' type, the operands.
    Binary(BinOp, DType, Box<Ord>, Box<Ord>),
    Select(Box<Ord>, Box<Ord>, Box<Ord>),
    /// The target type, the operand.
    Cast(DType, Box<Ord>),
    /// The builtin, its arguments' type, the arguments.
    Call(Builtin, DType, Vec<Ord>),
}

/// A body value over Z_p.
#[derive(Clone, Debug)]
pub(crate) enum Val {
    /// A literal or size: its residue (0 for a non-finite float, which the
    /// exact test refuses to compile) and its value.
    Const(u64, f64),
    /// An iterator's value as a coefficient.
    Iter(usize),
    /// A float scalar parameter of the top-level def: random like an input.
    Scalar(usize),
    /// A read-free sub-expression evaluated ordinarily (an integer or a
    /// condition used as a coefficient), then taken mod p.
    Ord(Ord),
    Read(Read),
    Neg(Box<Val>),
    Add(Box<Val>, Box<Val>),
    Sub(Box<Val>, Box<Val>),
    Mul(Box<Val>, Box<Val>),
    /// The inverse of a value that reads no tensor (division by it).
    Inv(Box<Val>),
    Select(Ord, Box<Val>, Box<Val>),
    /// What is no polynomial (`exp` or `fmax` of a tensor value, a
    /// comparison of tensor values, a division by one): evaluated only in
    /// floating point, by the IR's ordinary semantics.
    Real(RealOp, Vec<Val>),
}

/// A non-polynomial operation on values, with its operands' type.
#[derive(Clone, Copy, Debug)]
pub(crate) enum RealOp {
    Unary(UnOp, DType),
    Binary(BinOp, DType),
    Call(Builtin, DType),
    /// `c ? a : b` on a condition that reads tensors.
    Select,
    /// To the type, from the operand's.
    Cast(DType, DType),
}

/// A tensor read: which tensor version, at which subscripts.
#[derive(Clone, Debug)]
pub(crate) struct Read {
    pub node: usize,
    pub subs: Vec<Ord>,
    /// The tensor's name, for messages.
    pub tensor: String,
}

/// A compiled comprehension.
#[derive(Clone, Debug)]
pub(crate) struct Comp {
    /// `def name, statement N` for messages.
    pub at: String,
    /// `[lo, hi)` of every iterator: left-hand ones first (one per
    /// dimension), then the reduction iterators.
    pub bounds: Vec<(i64, i64)>,
    pub n_lhs: usize,
    /// `op=` without `!` (or `=` over part of the tensor does not matter
    /// here): the point starts from the tensor's earlier value.
    pub accumulate: bool,
    /// How points combine: `+` for the exact test, any reduction for the
    /// floating-point one.
    pub op: ir::Reduction,
    /// Whether it is a reduction, where an out-of-bounds read among
    /// `checks` skips the point instead of failing.
    pub reduction: bool,
    pub body: Val,
    /// Reads tested at every point before the body: those not under a `?:`
    /// branch, in the body and in every let (lets are inlined into `body`,
    /// but an unused let's read still skips or fails a point).
    pub checks: Vec<Read>,
}

impl Val {
    /// Visits every sub-value, parents first.
    pub(crate) fn walk(&self, f: &mut dyn FnMut(&Val)) {
        f(self);
        match self {
            Val::Neg(a) | Val::Inv(a) => a.walk(f),
            Val::Add(a, b) | Val::Sub(a, b) | Val::Mul(a, b) | Val::Select(_, a, b) => {
                a.walk(f);
                b.walk(f);
            }
            Val::Real(_, args) => args.iter().for_each(|a| a.walk(f)),
            Val::Const(..) | Val::Iter(_) | Val::Scalar(_) | Val::Ord(_) | Val::Read(_) => {}
        }
    }
}

impl Ord {
    /// The value at the iterator values `iters`; an error (integer division
    /// by zero) is a message.
    pub(crate) fn eval(&self, iters: &[i64]) -> Result<Value, String> {
        Ok(match self {
            Ord::Form(f) => Value::Int(f.eval(iters)),
            Ord::Const(v) => *v,
            Ord::Unary(UnOp::Not, _, a) => Value::Bool(!a.eval(iters)?.truth()),
            Ord::Unary(UnOp::Neg, t, a) => {
                arith::unary(UnOp::Neg, *t, typed(*t, a.eval(iters)?)).map_err(|e| e.to_string())?
            }
            Ord::Binary(BinOp::And, _, a, b) => {
                Value::Bool(a.eval(iters)?.truth() && b.eval(iters)?.truth())
            }
            Ord::Binary(BinOp::Or, _, a, b) => {
                Value::Bool(a.eval(iters)?.truth() || b.eval(iters)?.truth())
            }
            Ord::Binary(op, t, a, b) => binary(*op, *t, a.eval(iters)?, b.eval(iters)?)?,
            Ord::Select(c, a, b) => {
                if c.eval(iters)?.truth() {
                    a.eval(iters)?
                } else {
                    b.eval(iters)?
                }
            }
            Ord::Cast(t, a) => arith::cast_value(*t, a.eval(iters)?),
            Ord::Call(b, t, args) => {
                let v = args
                    .iter()
                    .map(|a| a.eval(iters))
                    .collect::<Result<Vec<_>, _>>()?;
                call(*b, *t, &v)?
            }
        })
    }

    /// Every iterator slot the expression depends on.
    pub(crate) fn slots(&self, out: &mut Vec<usize>) {
        match self {
            Ord::Form(f) => f.slots(out),
            Ord::Const(_) => {}
            Ord::Unary(_, _, a) | Ord::Cast(_, a) => a.slots(out),
            Ord::Binary(_, _, a, b) => {
                a.slots(out);
                b.slots(out);
            }
            Ord::Select(c, a, b) => {
                c.slots(out);
                a.slots(out);
                b.slots(out);
            }
            Ord::Call(_, _, args) => args.iter().for_each(|a| a.slots(out)),
        }
    }
}

impl RealOp {
    /// The operation on `args` (floating-point values; conditions are 0 or
    /// 1), as the interpreter's real mode computes it.
    pub(crate) fn eval(self, args: &[f64]) -> Result<f64, String> {
        let v = |k: usize, t: DType| typed(t, Value::Float(args[k]));
        let out = match self {
            RealOp::Unary(UnOp::Not, _) => Value::Bool(args[0] == 0.0),
            RealOp::Unary(op, t) => arith::unary(op, t, v(0, t)).map_err(|e| e.to_string())?,
            RealOp::Binary(BinOp::And, _) => Value::Bool(args[0] != 0.0 && args[1] != 0.0),
            RealOp::Binary(BinOp::Or, _) => Value::Bool(args[0] != 0.0 || args[1] != 0.0),
            RealOp::Binary(op, t) => binary(op, t, v(0, t), v(1, t))?,
            RealOp::Call(b, t) => {
                let vs: Vec<Value> = (0..args.len()).map(|k| v(k, t)).collect();
                call(b, t, &vs)?
            }
            RealOp::Select => return Ok(if args[0] != 0.0 { args[1] } else { args[2] }),
            RealOp::Cast(to, from) => arith::cast_value(to, v(0, from)),
        };
        Ok(out.float())
    }
}

/// Whether an ordinary value is true (non-zero).
pub(crate) fn truth(v: Value) -> bool {
    v.truth()
}

/// An ordinary value as a float (a condition as 0 or 1).
pub(crate) fn to_f64(v: Value) -> f64 {
    v.float()
}

/// Ordinary values as the evaluator handles them.
trait Scalar {
    fn truth(self) -> bool;
    fn int(self) -> i64;
    fn float(self) -> f64;
}

impl Scalar for Value {
    fn truth(self) -> bool {
        match self {
            Value::Bool(b) => b,
            Value::Int(i) => i != 0,
            Value::Float(x) => x != 0.0,
        }
    }

    fn int(self) -> i64 {
        match self {
            Value::Bool(b) => i64::from(b),
            Value::Int(i) => i,
            Value::Float(x) => x as i64,
        }
    }

    fn float(self) -> f64 {
        match self {
            Value::Bool(b) => f64::from(u8::from(b)),
            Value::Int(i) => i as f64,
            Value::Float(x) => x,
        }
    }
}

/// `v` as the value `arith` expects of type `t` (the evaluator keeps
/// iterator forms as integers and conditions as booleans whatever the type
/// they are used at).
fn typed(t: DType, v: Value) -> Value {
    if t == DType::Bool {
        Value::Bool(v.truth())
    } else if t.is_float() {
        Value::Float(v.float())
    } else {
        Value::Int(v.int())
    }
}

/// A binary operator on operands of type `t` (not `&&`, `||`).
fn binary(op: BinOp, t: DType, a: Value, b: Value) -> Result<Value, String> {
    arith::binary(op, t, typed(t, a), typed(t, b)).map_err(|e| e.to_string())
}

/// A builtin on arguments of type `t`.
fn call(b: Builtin, t: DType, v: &[Value]) -> Result<Value, String> {
    let args: Vec<Value> = v.iter().map(|a| typed(t, *a)).collect();
    arith::builtin(b, t, &args).map_err(|e| e.to_string())
}
