//! Comparisons and logic: `Equal`, `Less`, `Greater`, `LessOrEqual`,
//! `GreaterOrEqual` on float32 or int64 operands, `And`, `Or` on bool
//! operands (all with ONNX broadcasting, bool results), and `Not`. Every
//! operand is brought to the result's rank and the prelude's
//! `OP_f32_bcast_rK` / `OP_i64_bcast_rK` / `and_bcast_rK` stretch axes of
//! size 1. On constants they are folded.

use ir::DType;
use tensor::Tensor;

use super::elementwise::{broadcast_index, broadcast_operands, to_rank};
use super::rank;
use crate::build::{Node, Value};
use crate::import::Importer;

/// The prelude's name for the operator and its value on two numbers.
fn comparison(op: &str) -> (&'static str, fn(f64, f64) -> bool) {
    match op {
        "Equal" => ("equal", |a, b| a == b),
        "Less" => ("less", |a, b| a < b),
        "Greater" => ("greater", |a, b| a > b),
        "LessOrEqual" => ("less_equal", |a, b| a <= b),
        "GreaterOrEqual" => ("greater_equal", |a, b| a >= b),
        "And" => ("and", |a, b| a != 0.0 && b != 0.0),
        _ => ("or", |a, b| a != 0.0 || b != 0.0),
    }
}

pub fn binary(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let a = im.value(n, 0)?;
    let b = super::elementwise::legacy_operand(im, n, &a, im.value(n, 1)?)?;
    let logic = matches!(n.op, "And" | "Or");
    let ty = a.dtype();
    let ok = if logic {
        ty == DType::Bool
    } else {
        matches!(ty, DType::F32 | DType::I64)
    };
    let scalar_var = |v: &Value| matches!(v, Value::Var(x) if x.shape.is_empty());
    let computed = !matches!((&a, &b), (Value::Const(_), Value::Const(_)));
    // The prelude's defs take float32, int64 or bool operands brought to
    // the result's rank (1 to 5), which a computed scalar cannot be; the
    // rest is a generated map.
    if computed
        && (!ok
            || b.dtype() != ty
            || scalar_var(&a)
            || scalar_var(&b)
            || !(1..=super::MAX_RANK).contains(&a.shape().len().max(b.shape().len())))
    {
        let (x, y) = (im.as_var(n, 0, a), im.as_var(n, 1, b));
        let out = super::map::compare(im, n, x, y)?;
        im.set(n, 0, Value::Var(out));
        return Ok(());
    }
    if !ok || b.dtype() != ty {
        return Err(n.error(format!(
            "operands of types {} and {} are not supported ({})",
            ty,
            b.dtype(),
            if logic {
                "bool and bool are"
            } else {
                "two float32 or two int64 are"
            }
        )));
    }
    let shape = broadcast_operands(n, &a, &b)?;
    let (base, f) = comparison(n.op);
    if let (Value::Const(x), Value::Const(y)) = (&a, &b) {
        // int64 values beyond 2^53 would compare wrongly through f64.
        let big = |t: &Tensor| super::ints(t).iter().any(|v| v.unsigned_abs() > 1 << 53);
        if ty == DType::I64 && (big(x) || big(y)) {
            return Err(n.error("comparing int64 constants beyond 2^53 is not supported"));
        }
        let (xs, ys) = (x.to_f64_vec(), y.to_f64_vec());
        let count: usize = shape.iter().product();
        let v = (0..count)
            .map(|k| {
                let (p, q) = (
                    xs[broadcast_index(x, &shape, k)],
                    ys[broadcast_index(y, &shape, k)],
                );
                i64::from(f(p, q))
            })
            .collect();
        im.set(n, 0, Value::Const(Tensor::from_i64(DType::Bool, &shape, v)));
        return Ok(());
    }
    let r = rank(n, &shape, "a result")?;
    let def = match (logic, ty) {
        (true, _) => format!("{base}_bcast_r{r}"),
        (false, DType::F32) => format!("{base}_f32_bcast_r{r}"),
        (false, _) => format!("{base}_i64_bcast_r{r}"),
    };
    let (x, y) = (to_rank(im, n, &a, 0, r)?, to_rank(im, n, &b, 1, r)?);
    let out = im.b.call(&def, &[&x, &y], &[], DType::Bool, shape);
    im.set(n, 0, Value::Var(out));
    Ok(())
}

pub fn not(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let y = match im.value(n, 0)? {
        Value::Const(t) if t.dtype() == DType::Bool => {
            let v = super::ints(&t).iter().map(|&b| i64::from(b == 0)).collect();
            Value::Const(Tensor::from_i64(DType::Bool, t.shape(), v))
        }
        Value::Var(x) if x.dtype == DType::Bool => {
            let r = rank(n, &x.shape, "an input")?;
            Value::Var(im.b.call(
                &format!("not_r{r}"),
                &[&x],
                &[],
                DType::Bool,
                x.shape.clone(),
            ))
        }
        other => return Err(n.error(format!("the input is {}, not bool", other.dtype()))),
    };
    im.set(n, 0, y);
    Ok(())
}
