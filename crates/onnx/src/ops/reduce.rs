//! `LayerNormalization` and the reductions: `ReduceMean`, `ReduceSum`,
//! `ReduceMax` of float32 over the axes the prelude has defs for
//! (`reduce_OP_rK_aAXES` with `_keep` for `keepdims = 1`), and every
//! `Reduce*` operator over any axes of any numeric type as comprehensions
//! in the model def.

use ir::DType;
use tensor::Tensor;

use super::{axis, ints, MAX_RANK};
use crate::build::{float, Node, Value, Var};
use crate::import::{Importer, PRELUDE};

pub fn layernorm(im: &mut Importer, n: &Node) -> Result<(), String> {
    let x = im.var(n, 0)?;
    let r = x.shape.len();
    let a = axis(n, n.int("axis")?.unwrap_or(-1), r.max(1))?;
    // The prelude's defs normalize float32 over the last axis of ranks 2
    // to 5 and give no statistics; the rest is comprehensions of its own.
    if n.outputs() > 1 || a + 1 != r || !(2..=MAX_RANK).contains(&r) || x.dtype != DType::F32 {
        return super::normalize::layernorm(im, n);
    }
    let eps = f64::from(n.float("epsilon")?.unwrap_or(1e-5));
    if n.int("stash_type")?.unwrap_or(1) != 1 {
        return Err(n.error("stash_type other than 1 (float32) is not supported"));
    }
    if a + 1 != r || !(2..=MAX_RANK).contains(&r) {
        return Err(n.error(format!(
            "normalizing from axis {a} of a rank-{r} tensor is not supported (the last axis of ranks 2 to {MAX_RANK} is)"
        )));
    }
    let d = x.shape[r - 1];
    let mut params = Vec::new();
    for (k, what) in [(1, "scale"), (2, "bias")] {
        let v = match n.input(k) {
            Some(_) => im.value(n, k)?,
            None => Value::Const(Tensor::zeros(DType::F32, &[d])),
        };
        // Scale and bias may be [D] or [1, .., 1, D].
        if v.shape().iter().product::<usize>() != d || v.shape().last() != Some(&d) {
            return Err(n.error(format!("{what} has shape {:?}, not [{d}]", v.shape())));
        }
        let v = match v {
            Value::Const(t) => {
                let t = t.reshape(&[d]).map_err(|e| n.error(e))?;
                let key = n
                    .input(k)
                    .map_or_else(|| format!("zeros{d}#ln"), |v| format!("{v}#ln"));
                im.b.weight(&key, &t)
            }
            Value::Var(v) if v.shape == [d] => v,
            Value::Var(_) => {
                return Err(n.error(format!("a computed {what} must be of shape [{d}]")))
            }
        };
        params.push(v);
    }
    let y = im.b.call(
        &format!("layernorm_r{r}"),
        &[&x, &params[0], &params[1]],
        &[float(eps)],
        DType::F32,
        x.shape.clone(),
    );
    im.set(n, 0, Value::Var(y));
    Ok(())
}

pub fn reduce(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let data = im.value(n, 0)?;
    let r = data.shape().len();
    // The axes are an input for ReduceSum from version 13, for the others
    // from version 18; an attribute before.
    let as_input = im.version(n) >= if n.op == "ReduceSum" { 13 } else { 18 };
    let axes = if as_input {
        match n.input(1) {
            Some(_) => Some(ints(&im.constant(n, 1, "the axes")?)),
            None => None,
        }
    } else {
        n.ints("axes")?
    };
    let keep = n.int("keepdims")?.unwrap_or(1) != 0;
    // With `noop_with_empty_axes`, no axes reduce none: the operator's
    // elementwise part alone (a ReduceSumSquare squares).
    let noop = as_input && n.int("noop_with_empty_axes")?.unwrap_or(0) != 0;
    let mut axes: Vec<usize> = match axes {
        Some(a) if !a.is_empty() => a.iter().map(|&a| axis(n, a, r)).collect::<Result<_, _>>()?,
        _ if noop => Vec::new(),
        _ => (0..r).collect(),
    };
    axes.sort_unstable();
    axes.dedup();
    let shape: Vec<usize> = (0..r)
        .filter_map(|k| match (axes.contains(&k), keep) {
            (false, _) => Some(data.shape()[k]),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect();
    if let Value::Const(t) = &data {
        if t.is_empty() && !axes.is_empty() {
            // Every reduced set is empty: the result is the reduction's
            // value on no elements.
            let value = empty_set(n.op, t.dtype());
            let y = Tensor::from_f64(t.dtype(), &shape, vec![value; shape.iter().product()]);
            im.set(n, 0, Value::Const(y));
            return Ok(());
        }
    }
    let x = im.as_var(n, 0, data);
    let op = match n.op {
        "ReduceMean" => "mean",
        "ReduceSum" => "sum",
        "ReduceMax" => "max",
        _ => "",
    };
    let code: String = axes.iter().map(ToString::to_string).collect();
    let def = format!(
        "reduce_{op}_r{r}_a{code}{}",
        if keep { "_keep" } else { "" }
    );
    let y = if x.dtype == DType::F32 && !op.is_empty() && PRELUDE.contains(&format!("def {def}(")) {
        im.b.call(&def, &[&x], &[], DType::F32, shape)
    } else {
        general(im, n, &x, &axes, keep, shape)?
    };
    im.set(n, 0, Value::Var(y));
    Ok(())
}

/// What reduction `op` gives on no elements of type `t`: the identity of
/// its combining operation, through its final step (the mean divides 0 by
/// 0, the log-sums take the log of 0).
fn empty_set(op: &str, t: DType) -> f64 {
    match op {
        "ReduceProd" => 1.0,
        "ReduceMax" if t.is_float() => f64::NEG_INFINITY,
        "ReduceMax" => ir::int_min(t) as f64,
        "ReduceMin" if t.is_float() => f64::INFINITY,
        "ReduceMin" => ir::int_max(t) as f64,
        "ReduceMean" => f64::NAN,
        "ReduceLogSum" | "ReduceLogSumExp" => f64::NEG_INFINITY,
        _ => 0.0,
    }
}

/// A reduction over `axes` of `x` as comprehensions in the model def: an
/// elementwise part before (`|x|`, `x * x`, `exp(x - max)`), the
/// reduction (`+=!`, `*=!`, `max=!`, `min=!`; none over no axes), and an
/// elementwise part after (the mean's division, `sqrt`, `log`).
fn general(
    im: &mut Importer,
    n: &Node,
    x: &Var,
    axes: &[usize],
    keep: bool,
    shape: Vec<usize>,
) -> Result<Var, String> {
    if x.dtype == DType::Bool && matches!(n.op, "ReduceMax" | "ReduceMin") {
        // Any and all: the extreme of the elements as 0 and 1.
        let bytes = super::map::map(im, n, "uint8(_a)", std::slice::from_ref(x), DType::U8)?;
        let extreme = general(im, n, &bytes, axes, keep, shape)?;
        return super::map::map(im, n, "_a != 0", &[extreme], DType::Bool);
    }
    let float = x.dtype.is_float();
    let numeric = float || x.dtype.is_int();
    // (before, reduction, after, float only): `_v` is the element or the
    // reduced value.
    let (before, reduction, after, float_only) = match n.op {
        "ReduceSum" => ("_v", "+=!", "_v", false),
        "ReduceMean" => ("_v", "+=!", "_v / COUNT", true),
        "ReduceMax" => ("_v", "max=!", "_v", false),
        "ReduceMin" => ("_v", "min=!", "_v", false),
        "ReduceProd" => ("_v", "*=!", "_v", false),
        "ReduceL1" => ("fabs(_v)", "+=!", "_v", false),
        "ReduceL2" => ("_v * _v", "+=!", "sqrt(_v)", true),
        "ReduceSumSquare" => ("_v * _v", "+=!", "_v", false),
        "ReduceLogSum" => ("_v", "+=!", "log(_v)", true),
        _ => ("exp(_v - MAX)", "+=!", "log(_v) + MAX", true),
    };
    if !numeric || float_only && !float {
        return Err(n.error(format!("{} of {} is not supported", n.op, x.dtype)));
    }
    let r = x.shape.len();
    // The input's index: the result's iterator for a kept axis, a
    // reduction iterator for a reduced one.
    let mut out = 0;
    let mut read = Vec::with_capacity(r);
    let mut ranges = Vec::new();
    for k in 0..r {
        if axes.contains(&k) {
            read.push(format!("_r{k}"));
            ranges.push(format!("_r{k} in 0:{}", x.shape[k]));
            out += usize::from(keep);
        } else {
            read.push(format!("_i{out}"));
            out += 1;
        }
    }
    let element = format!("{}({})", x.name, read.join(", "));
    let point: Vec<String> = (0..shape.len()).map(|k| format!("_i{k}")).collect();
    let at = |v: &Var| format!("{}({})", v.name, point.join(", "));
    let mut before = before.replace("_v", &element);
    let mut after = after.to_string();
    if n.op == "ReduceLogSumExp" {
        // The largest element is subtracted before `exp` and added back
        // after `log`, so that large elements do not overflow.
        let max = if ranges.is_empty() {
            im.b.compute("=", &element, &[], x.dtype, shape.clone())
        } else {
            im.b.compute("max=!", &element, &ranges, x.dtype, shape.clone())
        };
        before = before.replace("MAX", &at(&max));
        after = after.replace("MAX", &at(&max));
    }
    let count: usize = axes.iter().map(|&k| x.shape[k]).product();
    after = after.replace("COUNT", &count.to_string());
    let reduction = if ranges.is_empty() { "=" } else { reduction };
    let reduced =
        im.b.compute(reduction, &before, &ranges, x.dtype, shape.clone());
    if after == "_v" {
        return Ok(reduced);
    }
    Ok(im.b.compute(
        "=",
        &after.replace("_v", &at(&reduced)),
        &[],
        x.dtype,
        shape,
    ))
}
