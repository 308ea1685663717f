//! Layout operators: `Flatten`, `Reshape`, `Transpose`, `Concat`,
//! `Squeeze`, `Unsqueeze`, `Slice`, `Pad`, `Split`. On constants they are
//! folded; on tensors of the model they call the prelude's reshape, concat,
//! slice, pad and split defs and the generated transposes (a reshape to the
//! same shape, or the identity permutation, is no call at all).

use ir::DType;
use tensor::{with_element, Tensor};

use super::{axis, blocked, ints, rank};
use crate::build::{int, Node, Value, Var};
use crate::forms::MAX_RANK;
use crate::import::Importer;

/// `v` with shape `shape` (same element count, row-major order kept).
pub(crate) fn reshaped(
    im: &mut Importer,
    n: &Node,
    v: Value,
    shape: Vec<usize>,
) -> Result<Value, String> {
    match v {
        Value::Const(t) => Ok(Value::Const(t.reshape(&shape).map_err(|e| n.error(e))?)),
        Value::Var(x) => reshape_var(im, n, &x, shape).map(Value::Var),
    }
}

/// A computed tensor as `shape` (of as many elements).
pub(crate) fn reshape_var(
    im: &mut Importer,
    n: &Node,
    x: &Var,
    shape: Vec<usize>,
) -> Result<Var, String> {
    if x.shape == shape {
        return Ok(x.clone());
    }
    let prelude = |s: &[usize]| (1..=super::MAX_RANK).contains(&s.len());
    if !prelude(&x.shape)
        || !prelude(&shape)
        || !matches!(x.dtype, DType::F32 | DType::I64 | DType::Bool)
    {
        return Ok(reshape_comprehension(im, x, shape));
    }
    let (ra, rb) = (rank(n, &x.shape, "an input")?, rank(n, &shape, "a result")?);
    let dims: Vec<String> = shape.iter().map(|&d| int(d as i64)).collect();
    // Float tensors have `reshape_rA_rB`; int64 and bool ones (ids,
    // masks) `reshape_i64_rA_rB` and `reshape_bool_rA_rB`.
    let prefix = match x.dtype {
        DType::F32 => "",
        DType::I64 => "i64_",
        DType::Bool => "bool_",
        other => {
            return Err(n.error(format!(
                "reshaping a computed {other} tensor is not supported"
            )))
        }
    };
    let def = format!("reshape_{prefix}r{ra}_r{rb}");
    Ok(im.b.call(&def, &[x], &dims, x.dtype, shape))
}

/// `x` as `shape` by index arithmetic, for the ranks and element types the
/// prelude's reshapes do not take: the result's point as a row-major
/// position, read at the same position of `x`.
fn reshape_comprehension(im: &mut Importer, x: &Var, shape: Vec<usize>) -> Var {
    let strides = |s: &[usize]| -> Vec<usize> {
        let mut v = vec![1; s.len()];
        for k in (0..s.len().saturating_sub(1)).rev() {
            v[k] = v[k + 1] * s[k + 1];
        }
        v
    };
    let flat = strides(&shape)
        .iter()
        .enumerate()
        .map(|(k, st)| format!("_i{k} * {st}"))
        .collect::<Vec<_>>();
    let flat = if flat.is_empty() {
        "0".to_string()
    } else {
        flat.join(" + ")
    };
    let index: Vec<String> = strides(&x.shape)
        .iter()
        .zip(&x.shape)
        .map(|(st, d)| format!("(({flat}) / {st}) % {d}"))
        .collect();
    im.b.compute("=", &super::point::read(x, &index), &[], x.dtype, shape)
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
        Value::Const(t) => Value::Const(permute(&t, &perm).map_err(|e| n.error(e))?),
        Value::Var(v) if perm.iter().enumerate().all(|(k, &p)| k == p) => Value::Var(v),
        Value::Var(v) if super::swap::defer(im, n, &v, &perm) => return Ok(()),
        Value::Var(v) => {
            if r > MAX_RANK {
                return Err(n.error(format!(
                    "transposing a rank-{r} tensor is not supported (ranks up to {MAX_RANK} are)"
                )));
            }
            let def = im.b.forms.transpose(v.dtype, &perm);
            Value::Var(im.b.call(&def, &[&v], &[], v.dtype, shape))
        }
    };
    im.set(n, 0, y);
    Ok(())
}

/// A constant with its axes permuted (`perm` was checked to be a
/// permutation of its axes).
fn permute(t: &Tensor, perm: &[usize]) -> Result<Tensor, String> {
    Ok(t.permute(perm).map_err(|e| e.to_string())?.contiguous())
}

/// The tensor of shape `shape` whose element `i` is `t`'s element
/// `source[i]`.
/// The elements keep their type and bits (no conversion through `f64`).
pub(crate) fn gather(t: &Tensor, shape: &[usize], source: &[usize]) -> Tensor {
    let t = t.contiguous();
    with_element!(t.dtype(), T => {
        let v = t.as_slice::<T>().expect("a contiguous tensor of its own type");
        let picked: Vec<T> = source.iter().map(|&i| v[i]).collect();
        Tensor::from_slice(t.dtype(), shape, &picked)
    })
}

pub fn concat(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let count = n.proto.input.len();
    if count == 0 {
        return Err(n.error("Concat needs at least one input"));
    }
    if blocked::concat(im, n)? {
        return Ok(());
    }
    im.plain_inputs(n);
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
        let t = concat_consts(&tensors, a).map_err(|e| n.error(e))?;
        im.set(n, 0, Value::Const(t));
        return Ok(());
    }
    // An empty input (a constant without elements) adds nothing.
    let keep: Vec<usize> = (0..count)
        .filter(|&k| !matches!(&values[k], Value::Const(t) if t.is_empty()))
        .collect();
    if let [only] = keep[..] {
        im.set(n, 0, values[only].clone());
        return Ok(());
    }
    let parts: Vec<Var> = keep
        .iter()
        .map(|&k| im.var(n, k))
        .collect::<Result<_, _>>()?;
    if let Some(p) = parts.iter().find(|p| p.dtype != parts[0].dtype) {
        return Err(n.error(format!(
            "inputs of types {} and {} (ONNX requires one type)",
            parts[0].dtype, p.dtype
        )));
    }
    // The prelude's `concat_rK_aA` joins two float32 tensors of ranks 1 to
    // 5; any other concatenation picks each point's part by a comprehension
    // of its own.
    if parts[0].dtype != DType::F32 || !(1..=super::MAX_RANK).contains(&r) {
        let mut shape = parts[0].shape.clone();
        shape[a] = parts.iter().map(|p| p.shape[a]).sum();
        let mut offset = shape[a];
        let mut rhs = String::new();
        for p in parts.iter().rev() {
            offset -= p.shape[a];
            let mut index = super::point::point(r);
            index[a] = format!("_i{a} - {offset}");
            let read = super::point::read(p, &index);
            rhs = if rhs.is_empty() {
                read
            } else {
                format!("_i{a} < {} ? {read} : ({rhs})", offset + p.shape[a])
            };
        }
        let y = im.b.compute("=", &rhs, &[], parts[0].dtype, shape);
        im.set(n, 0, Value::Var(y));
        return Ok(());
    }
    let r = rank(n, values[0].shape(), "an input")?;
    let mut acc: Var = parts[0].clone();
    for next in &parts[1..] {
        let mut shape = acc.shape.clone();
        shape[a] += next.shape[a];
        acc = im.b.call(
            &format!("concat_r{r}_a{a}"),
            &[&acc, next],
            &[],
            acc.dtype,
            shape,
        );
    }
    im.set(n, 0, Value::Var(acc));
    Ok(())
}

fn concat_consts(ts: &[Tensor], a: usize) -> Result<Tensor, String> {
    let mut shape = ts[0].shape().to_vec();
    shape[a] = ts.iter().map(|t| t.shape()[a]).sum();
    let outer: usize = shape[..a].iter().product();
    let dtype = ts[0].dtype();
    let parts: Vec<Tensor> = ts.iter().map(Tensor::contiguous).collect();
    with_element!(dtype, T => {
        let mut out: Vec<T> = Vec::with_capacity(shape.iter().product());
        for o in 0..outer {
            for t in &parts {
                let block: usize = t.shape()[a..].iter().product();
                let v = t.as_slice::<T>().ok_or_else(|| {
                    format!("concatenates {} and {} constants", dtype, t.dtype())
                })?;
                out.extend_from_slice(&v[o * block..(o + 1) * block]);
            }
        }
        Ok(Tensor::from_slice(dtype, &shape, &out))
    })
}

pub fn slice(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let x = im.value(n, 0)?;
    let dims = x.shape().to_vec();
    let r = dims.len();
    // Slice 1 has its bounds and axes as attributes, and no steps.
    let legacy = im.version(n) < 10;
    let (starts, ends, given_axes, steps) = if legacy {
        let attr = |name: &str| {
            n.ints(name)?
                .ok_or_else(|| n.error(format!("attribute `{name}` is missing")))
        };
        (attr("starts")?, attr("ends")?, n.ints("axes")?, None)
    } else {
        let optional = |k: usize, what: &str| match n.input(k) {
            Some(_) => im.constant(n, k, what).map(|t| Some(ints(&t))),
            None => Ok(None),
        };
        (
            ints(&im.constant(n, 1, "the starts")?),
            ints(&im.constant(n, 2, "the ends")?),
            optional(3, "the axes")?,
            optional(4, "the steps")?,
        )
    };
    let axes: Vec<usize> = match given_axes {
        Some(a) => a.iter().map(|&a| axis(n, a, r)).collect::<Result<_, _>>()?,
        None => (0..starts.len()).collect(),
    };
    let steps = steps.unwrap_or_else(|| vec![1; starts.len()]);
    if ends.len() != starts.len() || axes.len() != starts.len() || steps.len() != starts.len() {
        return Err(n.error("starts, ends, axes and steps differ in length"));
    }
    let (mut b, mut e, mut s): (Vec<i64>, Vec<i64>, Vec<i64>) = (
        vec![0; r],
        dims.iter().map(|&d| d as i64).collect(),
        vec![1; r],
    );
    for k in 0..starts.len() {
        let (a, d, st) = (axes[k], dims[axes[k]] as i64, steps[k]);
        if st == 0 {
            return Err(n.error("a step of 0"));
        }
        let norm = |v: i64| if v < 0 { v.saturating_add(d) } else { v };
        // ONNX clamps starts to [0, d] (stepping forward) or [0, d - 1]
        // (backward), ends to [0, d] or [-1, d - 1].
        let (lo, hi) = if st > 0 { (0, d) } else { (-1, d - 1) };
        b[a] = norm(starts[k]).clamp(0, if st > 0 { d } else { d - 1 });
        e[a] = norm(ends[k]).clamp(lo, hi);
        s[a] = st;
    }
    let mut shape = Vec::with_capacity(r);
    for k in 0..r {
        // ceil((e - b) / s), as floor division: the prelude's formula.
        let len = ir::floor_div(e[k] - b[k] + s[k] - s[k].signum(), s[k]);
        // An empty slice of a constant is a shape's empty part (exporters
        // slice shapes and concatenate the parts); the model's tensors
        // have positive dimensions.
        if len <= 0 && matches!(x, Value::Var(_)) {
            return Err(n.error(format!(
                "the slice of axis {k} is empty, which tessera does not support"
            )));
        }
        shape.push(len.max(0) as usize);
    }
    let y = match x {
        Value::Const(t) => {
            let st = tensor::row_major_strides(t.shape());
            let count: usize = shape.iter().product();
            let source: Vec<usize> = (0..count)
                .map(|flat| {
                    let (mut rest, mut off) = (flat, 0i64);
                    for k in (0..r).rev() {
                        let i = (rest % shape[k]) as i64;
                        rest /= shape[k];
                        off += (b[k] + i * s[k]) * st[k] as i64;
                    }
                    off as usize
                })
                .collect();
            Value::Const(gather(&t, &shape, &source))
        }
        // The prelude's `slice_rK` takes float32 of ranks 1 to 5; any other
        // slice reads its points by a comprehension of its own.
        Value::Var(v) if v.dtype != DType::F32 || !(1..=super::MAX_RANK).contains(&r) => {
            let index: Vec<String> = (0..r)
                .map(|k| format!("{} + _i{k} * {}", b[k], s[k]))
                .collect();
            Value::Var(im.b.compute("=", &super::point::read(&v, &index), &[], v.dtype, shape))
        }
        Value::Var(v) => {
            let mut scalars = Vec::new();
            for k in 0..r {
                scalars.extend([int(b[k]), int(e[k]), int(s[k])]);
            }
            Value::Var(im.b.call(&format!("slice_r{r}"), &[&v], &scalars, v.dtype, shape))
        }
    };
    im.set(n, 0, y);
    Ok(())
}

pub fn pad(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let mode = n.string("mode")?.unwrap_or_else(|| "constant".to_string());
    let x = im.var(n, 0)?;
    let r = x.shape.len();
    // Pad 2 has its pads and value as attributes.
    let legacy = im.version(n) < 11;
    let given = if legacy {
        n.ints("pads")?
            .ok_or_else(|| n.error("attribute `pads` is missing"))?
    } else {
        ints(&im.constant(n, 1, "the pads")?)
    };
    let axes: Vec<usize> = match n.input(3).filter(|_| !legacy) {
        Some(_) => ints(&im.constant(n, 3, "the axes")?)
            .iter()
            .map(|&a| axis(n, a, r))
            .collect::<Result<_, _>>()?,
        None => (0..r).collect(),
    };
    if given.len() != 2 * axes.len() {
        return Err(n.error(format!("{} pads for {} axes", given.len(), axes.len())));
    }
    let mut pads = vec![0i64; 2 * r];
    for (k, &a) in axes.iter().enumerate() {
        pads[a] = given[k];
        pads[r + a] = given[axes.len() + k];
    }
    let value = match n.input(2).filter(|_| !legacy) {
        _ if legacy => f64::from(n.float("value")?.unwrap_or(0.0)),
        Some(_) => im
            .constant(n, 2, "the constant value")?
            .to_f64_vec()
            .first()
            .copied()
            .unwrap_or(0.0),
        None => 0.0,
    };
    if !super::rearrange::prelude_pads(&x, &pads, &mode) {
        let y = super::rearrange::pad(im, n, &x, &pads, &mode, value)?;
        im.set(n, 0, Value::Var(y));
        return Ok(());
    }
    let shape: Vec<usize> = (0..r)
        .map(|k| x.shape[k] + (pads[k] + pads[r + k]) as usize)
        .collect();
    let mut scalars: Vec<String> = pads.iter().map(|&p| int(p)).collect();
    scalars.push(crate::build::float(value));
    let y =
        im.b.call(&format!("pad_r{r}"), &[&x], &scalars, x.dtype, shape);
    im.set(n, 0, Value::Var(y));
    Ok(())
}

pub fn split(im: &mut Importer, n: &Node) -> Result<(), String> {
    let x = im.var(n, 0)?;
    let r = x.shape.len();
    if r == 0 {
        return Err(n.error("splitting a rank-0 tensor"));
    }
    let a = axis(n, n.int("axis")?.unwrap_or(0), r)?;
    let count = n.proto.output.len();
    let sizes: Vec<usize> = if im.version(n) >= 13 && n.input(1).is_some() {
        ints(&im.constant(n, 1, "the split sizes")?)
            .iter()
            .map(|&s| s.max(0) as usize)
            .collect()
    } else if let Some(s) = n.ints("split")? {
        s.iter().map(|&s| s.max(0) as usize).collect()
    } else {
        let parts = n.int("num_outputs")?.map_or(count, |p| p.max(1) as usize);
        let each = x.shape[a].div_ceil(parts);
        (0..parts)
            .map(|k| each.min(x.shape[a].saturating_sub(k * each)))
            .collect()
    };
    if sizes.len() != count
        || sizes.iter().sum::<usize>() != x.shape[a]
        || sizes.iter().all(|&s| s == 0)
    {
        return Err(n.error(format!(
            "split sizes {sizes:?} do not divide axis {a} of {:?} into {count} parts",
            x.shape
        )));
    }
    // A part of size 0 is a constant without elements; the others split
    // the axis among themselves.
    let mut outputs = Vec::new();
    for (k, &size) in sizes.iter().enumerate() {
        if size == 0 {
            let mut shape = x.shape.clone();
            shape[a] = 0;
            im.set(n, k, Value::Const(Tensor::zeros(x.dtype, &shape)));
        } else {
            outputs.push((k, size));
        }
    }
    if let [(k, _)] = outputs[..] {
        im.set(n, k, Value::Var(x));
        return Ok(());
    }
    let count = outputs.len();
    // The prelude's `split_rK_aA` splits float32 of ranks 1 to 5; any other
    // split reads each part by a comprehension of its own.
    if x.dtype != DType::F32 || r > super::MAX_RANK {
        let mut offset = 0;
        for &(k, size) in &outputs {
            let mut index = super::point::point(r);
            index[a] = format!("_i{a} + {offset}");
            let mut shape = x.shape.clone();
            shape[a] = size;
            let part =
                im.b.compute("=", &super::point::read(&x, &index), &[], x.dtype, shape);
            im.set(n, k, Value::Var(part));
            offset += size;
        }
        return Ok(());
    }
    // A chain of two-way splits: the first part, then the rest.
    let mut rest = x;
    for (j, &(k, size)) in outputs.iter().enumerate() {
        if j + 1 == count {
            im.set(n, k, Value::Var(rest.clone()));
            break;
        }
        let mut first = rest.shape.clone();
        first[a] = size;
        let mut second = rest.shape.clone();
        second[a] -= size;
        let parts = im.b.call_many(
            &format!("split_r{r}_a{a}"),
            &[&rest],
            &[int(size as i64)],
            vec![(rest.dtype, first), (rest.dtype, second)],
        );
        im.set(n, k, Value::Var(parts[0].clone()));
        rest = parts[1].clone();
    }
    Ok(())
}
