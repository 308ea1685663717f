//! Layout operators: `Flatten`, `Reshape`, `Transpose`, `Concat`,
//! `Squeeze`, `Unsqueeze`. On constants they are folded; on tensors of the
//! model they call the prelude's reshape, flatten, transpose and concat
//! defs (a reshape to the same shape is no call at all).

use interp::Tensor;

use super::{axis, ints, rank};
use crate::build::{int, Node, Value, Var};
use crate::import::Importer;

/// `v` with shape `shape` (same element count, row-major order kept).
fn reshaped(im: &mut Importer, n: &Node, v: Value, shape: Vec<usize>) -> Result<Value, String> {
    match v {
        Value::Const(mut t) => {
            t.shape = shape;
            Ok(Value::Const(t))
        }
        Value::Var(x) if x.shape == shape => Ok(Value::Var(x)),
        Value::Var(x) => {
            let (ra, rb) = (rank(n, &x.shape, "an input")?, rank(n, &shape, "a result")?);
            let dims: Vec<String> = shape.iter().map(|&d| int(d as i64)).collect();
            let def = format!("reshape_r{ra}_r{rb}");
            let y = im.b.call(&def, &[&x], &dims, x.dtype, shape);
            Ok(Value::Var(y))
        }
    }
}

pub fn flatten(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let x = im.value(n, 0)?;
    let r = x.shape().len();
    let a = n.int("axis")?.unwrap_or(1);
    let a = if a == r as i64 {
        r
    } else {
        axis(n, a, r.max(1))?
    };
    let outer: usize = x.shape()[..a].iter().product();
    let inner: usize = x.shape()[a..].iter().product();
    let y = reshaped(im, n, x, vec![outer, inner])?;
    im.set(n, 0, y);
    Ok(())
}

pub fn reshape(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let x = im.value(n, 0)?;
    let target = ints(&im.constant(n, 1, "the new shape")?);
    let allowzero = n.int("allowzero")?.unwrap_or(0) != 0;
    let count: usize = x.shape().iter().product();
    let mut shape = Vec::with_capacity(target.len());
    let mut infer = None;
    for (k, &d) in target.iter().enumerate() {
        match d {
            -1 if infer.is_none() => {
                infer = Some(k);
                shape.push(1);
            }
            0 if !allowzero => {
                shape.push(*x.shape().get(k).ok_or_else(|| {
                    n.error(format!("shape {target:?}: no dimension {k} to copy"))
                })?)
            }
            d if d >= 0 => shape.push(d as usize),
            _ => return Err(n.error(format!("shape {target:?} is not a valid reshape target"))),
        }
    }
    let known: usize = shape.iter().product();
    if let Some(k) = infer {
        if known == 0 || !count.is_multiple_of(known) {
            return Err(n.error(format!(
                "cannot reshape {:?} ({count} elements) to {target:?}",
                x.shape()
            )));
        }
        shape[k] = count / known;
    }
    if shape.iter().product::<usize>() != count {
        return Err(n.error(format!(
            "cannot reshape {:?} ({count} elements) to {shape:?}",
            x.shape()
        )));
    }
    let y = reshaped(im, n, x, shape)?;
    im.set(n, 0, y);
    Ok(())
}

pub fn squeeze(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let x = im.value(n, 0)?;
    // Axes are an attribute before opset 13 and an input from it on.
    let axes = if im.opset >= 13 {
        match n.input(1) {
            Some(_) => Some(ints(&im.constant(n, 1, "the axes")?)),
            None => None,
        }
    } else {
        n.ints("axes")?
    };
    let mut shape = x.shape().to_vec();
    if n.op == "Squeeze" {
        let r = shape.len();
        let drop: Vec<usize> = match axes {
            Some(a) => a.iter().map(|&a| axis(n, a, r)).collect::<Result<_, _>>()?,
            None => (0..r).filter(|&k| shape[k] == 1).collect(),
        };
        if let Some(&k) = drop.iter().find(|&&k| shape[k] != 1) {
            return Err(n.error(format!("axis {k} of {shape:?} is not of size 1")));
        }
        shape = (0..r)
            .filter(|k| !drop.contains(k))
            .map(|k| shape[k])
            .collect();
    } else {
        let axes = axes.ok_or_else(|| n.error("the axes are required"))?;
        let r = shape.len() + axes.len();
        let mut at: Vec<usize> = axes
            .iter()
            .map(|&a| axis(n, a, r))
            .collect::<Result<_, _>>()?;
        at.sort_unstable();
        for k in at {
            shape.insert(k, 1);
        }
    }
    let y = reshaped(im, n, x, shape)?;
    im.set(n, 0, y);
    Ok(())
}

pub fn transpose(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let x = im.value(n, 0)?;
    let r = x.shape().len();
    let perm: Vec<usize> = match n.ints("perm")? {
        Some(p) => p.iter().map(|&a| axis(n, a, r)).collect::<Result<_, _>>()?,
        None => (0..r).rev().collect(),
    };
    let mut seen = perm.clone();
    seen.sort_unstable();
    if seen != (0..r).collect::<Vec<_>>() {
        return Err(n.error(format!("perm {perm:?} is not a permutation of 0..{r}")));
    }
    let shape: Vec<usize> = perm.iter().map(|&p| x.shape()[p]).collect();
    let y = match x {
        Value::Const(t) => Value::Const(permute(&t, &perm)),
        Value::Var(v) if perm.iter().enumerate().all(|(k, &p)| k == p) => Value::Var(v),
        Value::Var(v) => {
            let code: String = perm.iter().map(ToString::to_string).collect();
            let def = match (r, code.as_str()) {
                (2, "10") => "transpose_r2".to_string(),
                (3, "021" | "102") | (4, "0213" | "0132" | "0231" | "0312") => {
                    format!("transpose_r{r}_{code}")
                }
                _ => {
                    return Err(n.error(format!(
                        "the permutation {perm:?} of a rank-{r} tensor is not supported"
                    )))
                }
            };
            Value::Var(im.b.call(&def, &[&v], &[], v.dtype, shape))
        }
    };
    im.set(n, 0, y);
    Ok(())
}

/// A constant with its axes permuted.
fn permute(t: &Tensor, perm: &[usize]) -> Tensor {
    let shape: Vec<usize> = perm.iter().map(|&p| t.shape[p]).collect();
    let strides = strides(&t.shape);
    let count: usize = shape.iter().product();
    let source: Vec<usize> = (0..count)
        .map(|flat| {
            let (mut rest, mut off) = (flat, 0);
            for k in (0..shape.len()).rev() {
                off += (rest % shape[k]) * strides[perm[k]];
                rest /= shape[k];
            }
            off
        })
        .collect();
    gather(t, &shape, &source)
}

fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for k in (0..shape.len().saturating_sub(1)).rev() {
        s[k] = s[k + 1] * shape[k + 1];
    }
    s
}

/// The tensor of shape `shape` whose element `i` is `t`'s element
/// `source[i]`.
pub(crate) fn gather(t: &Tensor, shape: &[usize], source: &[usize]) -> Tensor {
    if t.dtype.is_float() {
        let v = t.to_f64_vec();
        Tensor::from_f64(t.dtype, shape, source.iter().map(|&i| v[i]).collect())
    } else {
        let v = ints(t);
        Tensor::from_i64(t.dtype, shape, source.iter().map(|&i| v[i]).collect())
    }
}

pub fn concat(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let count = n.proto.input.len();
    if count == 0 {
        return Err(n.error("Concat needs at least one input"));
    }
    let values: Vec<Value> = (0..count)
        .map(|k| im.value(n, k))
        .collect::<Result<_, _>>()?;
    let r = values[0].shape().len();
    let a = axis(
        n,
        n.int("axis")?
            .ok_or_else(|| n.error("attribute `axis` is required"))?,
        r.max(1),
    )?;
    for v in &values[1..] {
        let (s, t) = (v.shape(), values[0].shape());
        if s.len() != r || (0..r).any(|k| k != a && s[k] != t[k]) {
            return Err(n.error(format!(
                "inputs {t:?} and {s:?} do not concatenate along axis {a}"
            )));
        }
    }
    let consts: Option<Vec<Tensor>> = values
        .iter()
        .map(|v| match v {
            Value::Const(t) => Some(t.clone()),
            Value::Var(_) => None,
        })
        .collect();
    if let Some(tensors) = consts {
        im.set(n, 0, Value::Const(concat_consts(&tensors, a)));
        return Ok(());
    }
    let r = rank(n, values[0].shape(), "an input")?;
    let mut acc: Var = im.var(n, 0)?;
    for k in 1..count {
        let next = im.var(n, k)?;
        let mut shape = acc.shape.clone();
        shape[a] += next.shape[a];
        acc = im.b.call(
            &format!("concat_r{r}_a{a}"),
            &[&acc, &next],
            &[],
            acc.dtype,
            shape,
        );
    }
    im.set(n, 0, Value::Var(acc));
    Ok(())
}

fn concat_consts(ts: &[Tensor], a: usize) -> Tensor {
    let mut shape = ts[0].shape.clone();
    shape[a] = ts.iter().map(|t| t.shape[a]).sum();
    let outer: usize = shape[..a].iter().product();
    let float = ts[0].dtype.is_float();
    let (mut f, mut i) = (Vec::new(), Vec::new());
    for o in 0..outer {
        for t in ts {
            let block: usize = t.shape[a..].iter().product();
            if float {
                f.extend_from_slice(&t.to_f64_vec()[o * block..(o + 1) * block]);
            } else {
                i.extend_from_slice(&ints(t)[o * block..(o + 1) * block]);
            }
        }
    }
    if float {
        Tensor::from_f64(ts[0].dtype, &shape, f)
    } else {
        Tensor::from_i64(ts[0].dtype, &shape, i)
    }
}
