//! Elementwise operators: `Relu`, `Sigmoid`, `Tanh`, `Exp`, `Log`, `Sqrt`,
//! `Neg`, `Abs`, `Erf`, and `Add`, `Sub`, `Mul`, `Div`, `Pow` with ONNX
//! (numpy) broadcasting: shapes aligned at the right, a dimension of 1
//! stretched; `Mod` of constants only (shape arithmetic). Equal shapes call `op_rK`; a rank-0 second operand
//! `op_rK_scalar`; anything else brings both operands to one rank (a
//! constant reshaped at import, a variable by a reshape call) and calls
//! `op_bcast_rK`. Operators on constants are folded (shape arithmetic).
//! The activations with parameters (`LeakyRelu`, `Clip`, `Gelu`, `PRelu`),
//! `Where` and `Expand` broadcast the same way.

use ir::DType;
use tensor::Tensor;

use super::{blocked, rank};
use crate::build::{int, Node, Value, Var};
use crate::import::Importer;

pub fn unary(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    if n.op == "Relu" && blocked::relu(im, n) {
        return Ok(());
    }
    im.plain_inputs(n);
    if let Value::Const(t) = im.value(n, 0)? {
        let y = fold_unary(n, &t)?;
        im.set(n, 0, Value::Const(y));
        return Ok(());
    }
    let x = im.var(n, 0)?;
    if x.dtype != DType::F32 || !(1..=super::MAX_RANK).contains(&x.shape.len()) {
        return super::map::unary(im, n);
    }
    let r = rank(n, &x.shape, "an input")?;
    let base = match n.op {
        "Relu" => "relu",
        "Sigmoid" => "sigmoid",
        "Tanh" => "tanh",
        "Exp" => "exp",
        "Log" => "log",
        "Sqrt" => "sqrt",
        "Neg" => "neg",
        "Abs" => "abs",
        _ => "erf",
    };
    let y = im.b.call(
        &format!("{base}_r{r}"),
        &[&x],
        &[],
        x.dtype,
        x.shape.clone(),
    );
    im.set(n, 0, Value::Var(y));
    Ok(())
}

/// A unary operator on a constant (index arithmetic such as a band's
/// `|key - query|` that exporters leave unfolded).
fn fold_unary(n: &Node, t: &Tensor) -> Result<Tensor, String> {
    if !t.dtype().is_float() {
        let f: fn(i64) -> i64 = match n.op {
            "Abs" => i64::wrapping_abs,
            "Neg" => i64::wrapping_neg,
            "Relu" => |v| v.max(0),
            op => return Err(n.error(format!("{op} of an integer constant is not supported"))),
        };
        let v = super::ints(t).into_iter().map(f).collect();
        return Ok(Tensor::from_i64(t.dtype(), t.shape(), v));
    }
    // The interpreter's own operations (`ir::arith`), so that folding
    // means what the prelude's defs mean.
    let builtin = match n.op {
        "Relu" | "Neg" => None,
        "Sigmoid" => Some(ir::Builtin::Sigmoid),
        "Tanh" => Some(ir::Builtin::Tanh),
        "Exp" => Some(ir::Builtin::Exp),
        "Log" => Some(ir::Builtin::Log),
        "Sqrt" => Some(ir::Builtin::Sqrt),
        "Abs" => Some(ir::Builtin::Abs),
        _ => Some(ir::Builtin::Erf),
    };
    let v = t
        .to_f64_vec()
        .into_iter()
        .map(|x| match builtin {
            Some(b) => ir::arith::float_builtin(b, t.dtype(), &[x])
                .ok_or_else(|| n.error(format!("`{}` of one float", b.name()))),
            None if n.op == "Neg" => Ok(ir::arith::float_neg(t.dtype(), x)),
            None => Ok(ir::arith::maximum(x, 0.0)),
        })
        .collect::<Result<Vec<f64>, String>>()?;
    Ok(Tensor::from_f64(t.dtype(), t.shape(), v))
}

pub(crate) fn float_only(n: &Node, v: &Var) -> Result<(), String> {
    if v.dtype != DType::F32 {
        return Err(n.error(format!(
            "{} inputs are supported only as float32, not {}",
            n.op, v.dtype
        )));
    }
    Ok(())
}

/// The broadcast shape of two shapes, or `None` if they do not broadcast.
pub fn broadcast(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let r = a.len().max(b.len());
    let at = |s: &[usize], k: usize| {
        let pad = r - s.len();
        if k < pad {
            1
        } else {
            s[k - pad]
        }
    };
    (0..r)
        .map(|k| match (at(a, k), at(b, k)) {
            (x, y) if x == y => Some(x),
            (1, y) => Some(y),
            (x, 1) => Some(x),
            _ => None,
        })
        .collect()
}

/// The broadcast shape of two operands, or an error naming their shapes.
pub(crate) fn broadcast_operands(n: &Node, a: &Value, b: &Value) -> Result<Vec<usize>, String> {
    broadcast(a.shape(), b.shape()).ok_or_else(|| {
        n.error(format!(
            "shapes {:?} and {:?} do not broadcast",
            a.shape(),
            b.shape()
        ))
    })
}

pub fn binary(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    if n.op == "Add" && im.version(n) >= 7 && blocked::add(im, n) {
        return Ok(());
    }
    im.plain_inputs(n);
    let a = im.value(n, 0)?;
    let b = legacy_operand(im, n, &a, im.value(n, 1)?)?;
    // Pow's exponent may have another type than its base.
    let mixed = n.op == "Pow" && a.dtype() != b.dtype();
    if a.dtype() != b.dtype() && !mixed {
        return Err(n.error(format!(
            "operands of types {} and {} (ONNX requires one type)",
            a.dtype(),
            b.dtype()
        )));
    }
    let shape = broadcast_operands(n, &a, &b)?;
    // Mod's remainder takes the dividend's sign (C's fmod) with `fmod = 1`,
    // the divisor's (Python's %, numpy's `mod`) without, on integers and
    // floats alike.
    let fmod = n.op == "Mod" && n.int("fmod")?.unwrap_or(0) != 0;
    if let (Value::Const(x), Value::Const(y), false) = (&a, &b, mixed) {
        let t = fold(n, x, y, &shape, fmod)?;
        im.set(n, 0, Value::Const(t));
        return Ok(());
    }
    let commutative = matches!(n.op, "Add" | "Mul");
    // A scalar first operand of a commutative operator goes second.
    let (a, b, ka, kb) = if commutative && a.shape().is_empty() && !b.shape().is_empty() {
        (b, a, 1, 0)
    } else {
        (a, b, 0, 1)
    };
    // The prelude's defs take float32 operands of ranks 1 to 5, the same
    // shape, a scalar second one, or both brought to the result's rank
    // (which a computed scalar cannot be); the rest is a generated map.
    let scalar_var = |v: &Value| matches!(v, Value::Var(x) if x.shape.is_empty());
    let prelude = a.dtype() == DType::F32
        && b.dtype() == DType::F32
        && n.op != "Mod"
        && (1..=super::MAX_RANK).contains(&shape.len())
        && (a.shape() == b.shape()
            || (b.shape().is_empty() && a.shape() == shape.as_slice())
            || !(scalar_var(&a) || scalar_var(&b)));
    if !prelude {
        let (x, y) = (im.as_var(n, ka, a), im.as_var(n, kb, b));
        let y = super::map::arithmetic(im, n, x, y, fmod)?;
        im.set(n, 0, Value::Var(y));
        return Ok(());
    }
    let base = n.op.to_lowercase();
    let r = rank(n, &shape, "a result")?;
    let y = if a.shape() == b.shape() {
        let (x, y) = (operand(im, n, &a, ka)?, operand(im, n, &b, kb)?);
        im.b.call(&format!("{base}_r{r}"), &[&x, &y], &[], DType::F32, shape)
    } else if b.shape().is_empty() && a.shape() == shape.as_slice() {
        let (x, y) = (operand(im, n, &a, ka)?, operand(im, n, &b, kb)?);
        im.b.call(
            &format!("{base}_r{r}_scalar"),
            &[&x, &y],
            &[],
            DType::F32,
            shape,
        )
    } else {
        let x = to_rank(im, n, &a, ka, r)?;
        let y = to_rank(im, n, &b, kb, r)?;
        float_only(n, &x)?;
        float_only(n, &y)?;
        im.b.call(
            &format!("{base}_bcast_r{r}"),
            &[&x, &y],
            &[],
            DType::F32,
            shape,
        )
    };
    im.set(n, 0, Value::Var(y));
    Ok(())
}

/// Operand `b` of a binary operator of sets 1 to 6 (versions with
/// `broadcast` and `axis` attributes instead of numpy broadcasting) in
/// numpy's form. With `broadcast = 1`, B's dimensions are a run of A's
/// (or ones) starting at `axis` (by default A's last ones), or B is one
/// element, so
/// ones appended to B's shape up to A's rank broadcast it the same way;
/// with `broadcast = 0` the shapes must be equal. From version 7 `b` is
/// returned as it is.
pub(crate) fn legacy_operand(
    im: &mut Importer,
    n: &Node,
    a: &Value,
    b: Value,
) -> Result<Value, String> {
    if im.version(n) >= 7 {
        return Ok(b);
    }
    let broadcast = n.int("broadcast")?.unwrap_or(0) != 0;
    let given = n.int("axis")?;
    let (sa, sb) = (a.shape().to_vec(), b.shape().to_vec());
    if !broadcast {
        if sa != sb {
            return Err(n.error(format!(
                "shapes {sa:?} and {sb:?} differ, and broadcast = 0 (before operator set 7 only `broadcast = 1` broadcasts)"
            )));
        }
        return Ok(b);
    }
    let (ra, rb) = (sa.len(), sb.len());
    let one = sb.iter().product::<usize>() == 1;
    let at = match given {
        Some(x) => super::axis(n, x, ra.max(1))?,
        None => ra.saturating_sub(rb),
    };
    let runs = |k: usize| sb[k] == 1 || sb[k] == sa[at + k];
    if !one && (at + rb > ra || !(0..rb).all(runs)) {
        return Err(n.error(format!(
            "B of shape {sb:?} is not a run of A's dimensions {sa:?} from axis {at}"
        )));
    }
    if one || at + rb == ra {
        return Ok(b);
    }
    let mut shape = sb;
    shape.resize(ra - at, 1);
    match b {
        // The reshaped constant is a weight of its own.
        Value::Const(t) => {
            let t = t.reshape(&shape).map_err(|e| n.error(e))?;
            let key = format!("{}#legacy{ra}", n.input(1).unwrap_or_default());
            Ok(Value::Var(im.b.weight(&key, &t)))
        }
        Value::Var(x) => super::layout::reshape_var(im, n, &x, shape).map(Value::Var),
    }
}

/// Operand `k` as a float32 tensor of the model def.
fn operand(im: &mut Importer, n: &Node, v: &Value, k: usize) -> Result<Var, String> {
    let var = im.as_var(n, k, v.clone());
    float_only(n, &var)?;
    Ok(var)
}

/// Operand `k` with ones prepended to rank `r`.
pub(crate) fn to_rank(
    im: &mut Importer,
    n: &Node,
    v: &Value,
    k: usize,
    r: usize,
) -> Result<Var, String> {
    let pad = r - v.shape().len();
    let mut shape = vec![1; pad];
    shape.extend(v.shape());
    match v {
        Value::Const(t) => {
            let t = t.reshape(&shape).map_err(|e| n.error(e))?;
            let key = format!("{}#r{r}", n.input(k).unwrap_or_default());
            Ok(im.b.weight(&key, &t))
        }
        Value::Var(x) if pad == 0 => Ok(x.clone()),
        Value::Var(x) => {
            if x.shape.is_empty() {
                return Err(n.error("a rank-0 operand broadcast against a tensor is not supported"));
            }
            super::layout::reshape_var(im, n, x, shape)
        }
    }
}

/// The flat index in `t` of the element that element `flat` of a result
/// of `shape` reads under ONNX broadcasting.
pub(crate) fn broadcast_index(t: &Tensor, shape: &[usize], flat: usize) -> usize {
    // Right-aligned broadcasting: walk the result's dimensions from the
    // last, a dimension of 1 in `t` staying at 0.
    let (mut rest, mut off, mut stride) = (flat, 0, 1);
    for k in (0..shape.len()).rev() {
        let i = rest % shape[k];
        rest /= shape[k];
        let pad = shape.len() - t.shape().len();
        if k >= pad {
            let d = t.shape()[k - pad];
            off += if d == 1 { 0 } else { i } * stride;
            stride *= d;
        }
    }
    off
}

/// `a op b` on constants, broadcast to `shape` (`fmod`: Mod's remainder
/// takes the dividend's sign).
fn fold(n: &Node, a: &Tensor, b: &Tensor, shape: &[usize], fmod: bool) -> Result<Tensor, String> {
    let count: usize = shape.iter().product();
    let index = |t: &Tensor, flat: usize| broadcast_index(t, shape, flat);
    if a.dtype().is_float() {
        let (x, y) = (a.to_f64_vec(), b.to_f64_vec());
        // The interpreter's operations (`ir::arith`), rounded to the type.
        let op = match n.op {
            "Add" => Some(ir::BinOp::Add),
            "Sub" => Some(ir::BinOp::Sub),
            "Mul" => Some(ir::BinOp::Mul),
            "Div" => Some(ir::BinOp::Div),
            // The divisor's sign: `ir::arith::float_mod`.
            "Mod" if !fmod => Some(ir::BinOp::Mod),
            _ => None,
        };
        let builtin = if n.op == "Mod" {
            ir::Builtin::Fmod
        } else {
            ir::Builtin::Pow
        };
        let v = (0..count)
            .map(|f| {
                let (p, q) = (x[index(a, f)], y[index(b, f)]);
                match op {
                    Some(op) => ir::arith::float_arith(op, a.dtype(), p, q),
                    None => ir::arith::float_builtin(builtin, a.dtype(), &[p, q]),
                }
                .ok_or_else(|| n.error(format!("{} of float constants", n.op)))
            })
            .collect::<Result<Vec<f64>, String>>()?;
        return Ok(Tensor::from_f64(a.dtype(), shape, v));
    }
    let (x, y) = (super::ints(a), super::ints(b));
    let mut v = Vec::with_capacity(count);
    for f in 0..count {
        let (p, q) = (x[index(a, f)], y[index(b, f)]);
        v.push(match n.op {
            "Add" => p.wrapping_add(q),
            "Sub" => p.wrapping_sub(q),
            "Mul" => p.wrapping_mul(q),
            "Div" => truncating_div(p, q)
                .ok_or_else(|| n.error("integer division by zero in a constant"))?,
            "Mod" => remainder(a.dtype(), p, q, fmod)
                .ok_or_else(|| n.error("integer remainder by zero in a constant"))?,
            _ => wrapping_pow(p, q).ok_or_else(|| n.error("negative integer power"))?,
        });
    }
    Ok(Tensor::from_i64(a.dtype(), shape, v))
}

/// `p / q` rounded toward zero, as ONNX and C divide integers (`None` for
/// `q == 0`); `i64::MIN / -1` wraps to `i64::MIN`, as every other integer
/// operation wraps.
fn truncating_div(p: i64, q: i64) -> Option<i64> {
    (q != 0).then(|| p.wrapping_div(q))
}

/// ONNX `Mod` of integers of type `t`: with `fmod`, C's remainder (the
/// dividend's sign; `i64::MIN % -1` wraps to 0), else Python's (the
/// divisor's); `None` for `q == 0`.
fn remainder(t: DType, p: i64, q: i64, fmod: bool) -> Option<i64> {
    if fmod {
        (q != 0).then(|| p.wrapping_rem(q))
    } else {
        ir::arith::floor_mod(t, p, q)
    }
}

/// `p` to the power `q` (`q >= 0`, else `None`) with int64 semantics, as
/// every other integer operation: wrapping modulo 2^64 on overflow (the
/// tensor's own width wraps after), by squaring.
fn wrapping_pow(p: i64, q: i64) -> Option<i64> {
    let mut e = u64::try_from(q).ok()?;
    let (mut base, mut r) = (p, 1i64);
    while e > 0 {
        if e & 1 == 1 {
            r = r.wrapping_mul(base);
        }
        base = base.wrapping_mul(base);
        e >>= 1;
    }
    Some(r)
}

/// `LeakyRelu`, `Clip`, `Gelu`, `PRelu`: activations with parameters.
pub fn activation(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    if n.op == "Clip" {
        return clip(im, n);
    }
    let x = im.var(n, 0)?;
    float_only(n, &x)?;
    let r = rank(n, &x.shape, "an input")?;
    let (def, tensors, scalars) = match n.op {
        "LeakyRelu" => {
            let alpha = f64::from(n.float("alpha")?.unwrap_or(0.01));
            (
                format!("leaky_relu_r{r}"),
                vec![],
                vec![crate::build::float(alpha)],
            )
        }
        "Gelu" => {
            let approx = n
                .string("approximate")?
                .unwrap_or_else(|| "none".to_string());
            if approx == "tanh" {
                // 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
                let expr =
                    "0.5 * _a * (1 + tanh(0.7978845608028654 * (_a + 0.044715 * _a * _a * _a)))";
                let t = x.dtype;
                let y = super::map::map(im, n, expr, &[x], t)?;
                im.set(n, 0, Value::Var(y));
                return Ok(());
            }
            if approx != "none" {
                return Err(n.error(format!("approximate = `{approx}` is not supported")));
            }
            (format!("gelu_r{r}"), vec![], vec![])
        }
        _ => {
            // PRelu: one slope per channel (axis 1) is the prelude's
            // `prelu_rK`. Under numpy broadcasting (version 7 on) a slope
            // is per channel when its shape, leading ones aside, is
            // [C, 1, ..., 1] reaching the input's axis 1; version 6 also
            // reads a slope [C] so. Any other slope is a generated map.
            let version = im.version(n);
            let slope = im.value(n, 1)?;
            let c = x.shape.get(1).copied().unwrap_or(0);
            let s = slope.shape();
            let lead = s.iter().take_while(|&&d| d == 1).count();
            let mut channel = vec![c];
            channel.resize(r.saturating_sub(1), 1);
            let per_channel = (2..=super::MAX_RANK).contains(&r)
                && slope.dtype() == DType::F32
                && (s[lead..] == channel[..] && s.len() <= r || version < 7 && s == [c]);
            if !per_channel {
                let slope = im.as_var(n, 1, slope);
                let y = super::map::prelu(im, n, x, slope)?;
                im.set(n, 0, Value::Var(y));
                return Ok(());
            }
            let slope = match slope {
                Value::Const(t) => {
                    let t = t.reshape(&[c]).map_err(|e| n.error(e))?;
                    im.b.weight(&format!("{}#c", n.input(1).unwrap_or_default()), &t)
                }
                Value::Var(v) => super::layout::reshape_var(im, n, &v, vec![c])?,
            };
            (format!("prelu_r{r}"), vec![slope], vec![])
        }
    };
    let mut all = vec![&x];
    all.extend(tensors.iter());
    let y = im.b.call(&def, &all, &scalars, x.dtype, x.shape.clone());
    im.set(n, 0, Value::Var(y));
    Ok(())
}

/// `Clip`: `min(max(x, lo), hi)`, each bound optional; the prelude's
/// `clip_rK` for float32 of ranks 1 to 5, else a map of any numeric type.
fn clip(im: &mut Importer, n: &Node) -> Result<(), String> {
    let x = im.var(n, 0)?;
    // From version 11 the bounds are optional constant inputs, before
    // attributes.
    let (lo, hi) = if im.version(n) >= 11 {
        let bound = |k: usize| -> Result<Option<Tensor>, String> {
            match n.input(k) {
                Some(_) => {
                    let t = im.constant(n, k, "a bound")?;
                    if t.is_empty() {
                        return Err(n.error("an empty bound"));
                    }
                    Ok(Some(t))
                }
                None => Ok(None),
            }
        };
        (bound(1)?, bound(2)?)
    } else {
        let attr = |name: &str| -> Result<Option<Tensor>, String> {
            Ok(n.float(name)?
                .map(|v| Tensor::from_f64(DType::F32, &[], vec![f64::from(v)])))
        };
        (attr("min")?, attr("max")?)
    };
    if x.dtype == DType::F32 && (1..=super::MAX_RANK).contains(&x.shape.len()) {
        let value = |t: &Option<Tensor>, default: f32| {
            let v = t.as_ref().map_or(f64::from(default), |t| t.to_f64_vec()[0]);
            crate::build::float(v)
        };
        let scalars = [value(&lo, f32::MIN), value(&hi, f32::MAX)];
        let def = format!("clip_r{}", x.shape.len());
        let y = im.b.call(&def, &[&x], &scalars, x.dtype, x.shape.clone());
        im.set(n, 0, Value::Var(y));
        return Ok(());
    }
    if x.dtype == DType::Bool {
        return Err(n.error("Clip of bool is not supported"));
    }
    // A bound as a literal of the input's type.
    let literal = |t: &Tensor| {
        if x.dtype.is_float() {
            crate::build::float(t.to_f64_vec()[0])
        } else {
            super::ints(t)[0].to_string()
        }
    };
    let mut expr = "_a".to_string();
    if let Some(t) = &lo {
        expr = format!("max({expr}, {})", literal(t));
    }
    if let Some(t) = &hi {
        expr = format!("min({expr}, {})", literal(t));
    }
    let t = x.dtype;
    let y = super::map::map(im, n, &expr, &[x], t)?;
    im.set(n, 0, Value::Var(y));
    Ok(())
}

/// `Expand` with ONNX broadcasting: the input is brought to the result's
/// rank, then `expand_rK` stretches its axes of size 1.
pub fn expand(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let x = im.value(n, 0)?;
    let target: Vec<usize> = super::ints(&im.constant(n, 1, "the shape")?)
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| n.error(format!("dimension {d}"))))
        .collect::<Result<_, _>>()?;
    let shape = broadcast(x.shape(), &target)
        .ok_or_else(|| n.error(format!("{:?} does not expand to {target:?}", x.shape())))?;
    if let Value::Const(t) = &x {
        im.set(n, 0, Value::Const(broadcast_const(t, &shape)));
        return Ok(());
    }
    let r = rank(n, &shape, "a result")?;
    if x.dtype() != DType::F32 {
        // Other types: a comprehension reading each result point's
        // element of `x`, whose axes align with the result's last ones
        // (an axis of size 1 is read at 0).
        let x = im.as_var(n, 0, x);
        let lead = r - x.shape.len();
        let subs: Vec<String> = (0..x.shape.len())
            .map(|k| match x.shape[k] {
                1 if shape[lead + k] != 1 => "0".to_string(),
                _ => format!("_i{}", lead + k),
            })
            .collect();
        let rhs = super::point::read(&x, &subs);
        let y = im.b.compute("=", &rhs, &[], x.dtype, shape);
        im.set(n, 0, Value::Var(y));
        return Ok(());
    }
    let x = to_rank(im, n, &x, 0, r)?;
    let dims: Vec<String> = shape.iter().map(|&d| int(d as i64)).collect();
    let y =
        im.b.call(&format!("expand_r{r}"), &[&x], &dims, DType::F32, shape);
    im.set(n, 0, Value::Var(y));
    Ok(())
}

/// `Where` (`C ? A : B`) with ONNX broadcasting: every operand is brought
/// to the result's rank, then `where_bcast_rK` stretches axes of size 1.
pub fn select(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let (c, a, b) = (im.value(n, 0)?, im.value(n, 1)?, im.value(n, 2)?);
    if c.dtype() != DType::Bool {
        return Err(n.error(format!("the condition is {}, not bool", c.dtype())));
    }
    let shape = broadcast(c.shape(), a.shape())
        .and_then(|s| broadcast(&s, b.shape()))
        .ok_or_else(|| {
            n.error(format!(
                "shapes {:?}, {:?} and {:?} do not broadcast",
                c.shape(),
                a.shape(),
                b.shape()
            ))
        })?;
    if let (Value::Const(c), Value::Const(a), Value::Const(b)) = (&c, &a, &b) {
        let t = select_consts(n, c, a, b, &shape)?;
        im.set(n, 0, Value::Const(t));
        return Ok(());
    }
    let scalar_var = |v: &Value| matches!(v, Value::Var(x) if x.shape.is_empty());
    if a.dtype() != DType::F32
        || b.dtype() != DType::F32
        || [&c, &a, &b].into_iter().any(scalar_var)
        || !(1..=super::MAX_RANK).contains(&shape.len())
    {
        let (c, a, b) = (im.as_var(n, 0, c), im.as_var(n, 1, a), im.as_var(n, 2, b));
        let out = super::map::select(im, n, c, a, b)?;
        im.set(n, 0, Value::Var(out));
        return Ok(());
    }
    let r = rank(n, &shape, "a result")?;
    let cond = to_rank(im, n, &c, 0, r)?;
    let (x, y) = (to_rank(im, n, &a, 1, r)?, to_rank(im, n, &b, 2, r)?);
    float_only(n, &x)?;
    float_only(n, &y)?;
    let out = im.b.call(
        &format!("where_bcast_r{r}"),
        &[&cond, &x, &y],
        &[],
        DType::F32,
        shape,
    );
    im.set(n, 0, Value::Var(out));
    Ok(())
}

/// Constant `t` broadcast to `shape`, its elements keeping their bits.
fn broadcast_const(t: &Tensor, shape: &[usize]) -> Tensor {
    let count: usize = shape.iter().product();
    let source: Vec<usize> = (0..count).map(|k| broadcast_index(t, shape, k)).collect();
    super::layout::gather(t, shape, &source)
}

/// `Where` on constants (the shape arithmetic of exported masks): `a` where
/// `c` holds, else `b`, all broadcast to `shape`.
fn select_consts(
    n: &Node,
    c: &Tensor,
    a: &Tensor,
    b: &Tensor,
    shape: &[usize],
) -> Result<Tensor, String> {
    if a.dtype() != b.dtype() {
        return Err(n.error(format!(
            "operands of types {} and {} (ONNX requires one type)",
            a.dtype(),
            b.dtype()
        )));
    }
    let c = super::ints(&broadcast_const(c, shape));
    let (a, b) = (broadcast_const(a, shape), broadcast_const(b, shape));
    let dtype = a.dtype();
    Ok(if dtype.is_float() {
        let (x, y) = (a.to_f64_vec(), b.to_f64_vec());
        let v = (0..c.len()).map(|k| if c[k] != 0 { x[k] } else { y[k] });
        Tensor::from_f64(dtype, shape, v.collect())
    } else {
        let (x, y) = (super::ints(&a), super::ints(&b));
        let v = (0..c.len()).map(|k| if c[k] != 0 { x[k] } else { y[k] });
        Tensor::from_i64(dtype, shape, v.collect())
    })
}

#[cfg(test)]
mod tests {
    use super::{remainder, truncating_div, wrapping_pow, DType};

    #[test]
    fn integer_division_truncates_and_wraps() {
        assert_eq!(truncating_div(7, 2), Some(3));
        assert_eq!(truncating_div(-7, 2), Some(-3));
        assert_eq!(truncating_div(7, -2), Some(-3));
        assert_eq!(truncating_div(i64::MIN, -1), Some(i64::MIN));
        assert_eq!(truncating_div(5, 0), None);
    }

    #[test]
    fn remainders_take_the_sign_onnx_mod_says() {
        let t = DType::I64;
        assert_eq!(remainder(t, -7, 2, false), Some(1));
        assert_eq!(remainder(t, -7, 2, true), Some(-1));
        assert_eq!(remainder(t, 7, -2, false), Some(-1));
        assert_eq!(remainder(t, 7, -2, true), Some(1));
        assert_eq!(remainder(t, 6, -3, false), Some(0));
        assert_eq!(remainder(t, i64::MIN, -1, true), Some(0));
        assert_eq!(remainder(t, i64::MIN, -1, false), Some(0));
        assert_eq!(remainder(t, 1, 0, false), None);
        assert_eq!(remainder(t, 1, 0, true), None);
    }

    #[test]
    fn integer_powers_wrap_like_int64() {
        assert_eq!(wrapping_pow(7, 0), Some(1));
        assert_eq!(wrapping_pow(0, 0), Some(1));
        assert_eq!(wrapping_pow(-2, 3), Some(-8));
        assert_eq!(wrapping_pow(10, 18), Some(1_000_000_000_000_000_000));
        // Past i64::MAX: the values modulo 2^64 (worked out with Python's
        // unbounded integers).
        assert_eq!(wrapping_pow(10, 19), Some(-8_446_744_073_709_551_616));
        assert_eq!(wrapping_pow(3, 40), Some(-6_289_078_614_652_622_815));
        assert_eq!(wrapping_pow(-3, 41), Some(420_491_770_248_316_829));
        assert_eq!(wrapping_pow(2, 64), Some(0));
        assert_eq!(wrapping_pow(-2, 63), Some(i64::MIN));
        // A huge exponent terminates (63 squarings) instead of looping.
        assert_eq!(wrapping_pow(1, i64::MAX), Some(1));
        assert_eq!(wrapping_pow(-1, i64::MAX), Some(-1));
        assert_eq!(wrapping_pow(2, -1), None);
    }
}
