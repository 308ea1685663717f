//! `LayerNormalization` and the reductions `ReduceMean`, `ReduceSum`,
//! `ReduceMax` over the axes the prelude has defs for (`reduce_OP_rK_aAXES`
//! with `_keep` for `keepdims = 1`).

use ir::DType;

use super::{axis, ints, MAX_RANK};
use crate::build::{float, Node, Value};
use crate::import::{Importer, PRELUDE};

pub fn layernorm(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let x = im.var(n, 0)?;
    let r = x.shape.len();
    let a = axis(n, n.int("axis")?.unwrap_or(-1), r.max(1))?;
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
            None => Value::Const(tensor::Tensor::zeros(DType::F32, &[d])),
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
    let x = im.var(n, 0)?;
    let r = x.shape.len();
    // The axes are an input for ReduceSum from opset 13, for the others
    // from opset 18; an attribute before.
    let as_input = if n.op == "ReduceSum" {
        im.opset >= 13
    } else {
        im.opset >= 18
    };
    let axes = if as_input {
        match n.input(1) {
            Some(_) => Some(ints(&im.constant(n, 1, "the axes")?)),
            None => None,
        }
    } else {
        n.ints("axes")?
    };
    let keep = n.int("keepdims")?.unwrap_or(1) != 0;
    if as_input
        && n.int("noop_with_empty_axes")?.unwrap_or(0) != 0
        && axes.as_ref().is_none_or(Vec::is_empty)
    {
        return Err(n.error("noop_with_empty_axes with no axes is not supported"));
    }
    let mut axes: Vec<usize> = match axes {
        Some(a) if !a.is_empty() => a.iter().map(|&a| axis(n, a, r)).collect::<Result<_, _>>()?,
        _ => (0..r).collect(),
    };
    axes.sort_unstable();
    axes.dedup();
    let op = match n.op {
        "ReduceMean" => "mean",
        "ReduceSum" => "sum",
        _ => "max",
    };
    let code: String = axes.iter().map(ToString::to_string).collect();
    let def = format!(
        "reduce_{op}_r{r}_a{code}{}",
        if keep { "_keep" } else { "" }
    );
    if !PRELUDE.contains(&format!("def {def}(")) {
        return Err(n.error(format!(
            "reducing axes {axes:?} of a rank-{r} tensor is not supported"
        )));
    }
    let shape: Vec<usize> = (0..r)
        .filter_map(|k| match (axes.contains(&k), keep) {
            (false, _) => Some(x.shape[k]),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect();
    let y = im.b.call(&def, &[&x], &[], DType::F32, shape);
    im.set(n, 0, Value::Var(y));
    Ok(())
}
