//! Operators on constants, folded at import: `Constant`, `Shape`, `Size`,
//! `Gather` (of constants; of computed data or indices, a call of the
//! generated gather), `Cast`, and the pass-throughs `Identity` and
//! `Dropout` (inference). These are what the shape subgraphs PyTorch
//! exports are made of (`Shape -> Gather -> Unsqueeze -> Concat ->
//! Reshape`): the shapes are known at import, so the whole chain folds and
//! the `Reshape` receives a constant.

use ir::DType;
use tensor::Tensor;

use super::{axis, ints};
use crate::build::{Node, Value};
use crate::forms::MAX_RANK;
use crate::import::Importer;
use crate::load;

pub fn constant(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let t = if let Some(t) = n.tensor("value")? {
        load::tensor(t, im.files, &n.label)?
    } else if let Some(x) = n.float("value_float")? {
        Tensor::from_f64(DType::F32, &[], vec![f64::from(x)])
    } else if let Some(x) = n.int("value_int")? {
        Tensor::from_i64(DType::I64, &[], vec![x])
    } else if let Some(v) = n.floats("value_floats")? {
        Tensor::from_f64(
            DType::F32,
            &[v.len()],
            v.iter().map(|&x| f64::from(x)).collect(),
        )
    } else if let Some(v) = n.ints("value_ints")? {
        Tensor::from_i64(DType::I64, &[v.len()], v)
    } else {
        return Err(n.error(
            "no value (`value`, `value_float`, `value_int`, `value_floats` or `value_ints`)",
        ));
    };
    im.set(n, 0, Value::Const(t));
    Ok(())
}

pub fn identity(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, if n.op == "Dropout" { 2 } else { 1 })?;
    if n.op == "Dropout" {
        // Inference: the ratio does nothing; training mode is refused.
        let _ = n.float("ratio")?;
        let _ = n.int("seed")?;
        if im.version(n) < 7 && n.int("is_test")?.unwrap_or(0) == 0 {
            return Err(n.error("is_test = 0 (training) is not supported (inference only)"));
        }
        if let Some(k) = n.input(2) {
            let t = im.constant(n, 2, "training_mode")?;
            // Training with a ratio of 0 drops nothing: the identity too.
            let ratio = match n.input(1) {
                Some(_) => im
                    .constant(n, 1, "the ratio")?
                    .to_f64_vec()
                    .first()
                    .copied(),
                None => Some(0.5),
            };
            if ints(&t).first().copied().unwrap_or(0) != 0 && ratio != Some(0.0) {
                return Err(n.error(format!(
                    "training mode (`{k}` true) with a nonzero ratio draws a random mask, which tessera does not"
                )));
            }
        }
    }
    let x = im.value(n, 0)?;
    if n.op == "Dropout" && n.outputs() > 1 {
        // In inference every element is kept: the mask is all true.
        let ones = vec![1; x.shape().iter().product()];
        im.set(
            n,
            1,
            Value::Const(Tensor::from_i64(DType::Bool, x.shape(), ones)),
        );
    }
    im.set(n, 0, x);
    Ok(())
}

pub fn shape(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let x = im.value(n, 0)?;
    let dims: Vec<i64> = x.shape().iter().map(|&d| d as i64).collect();
    let r = dims.len() as i64;
    // `start` and `end` (opset 15) slice the shape, clamped like Python's.
    let clamp = |v: i64| if v < 0 { (v + r).max(0) } else { v.min(r) };
    let start = clamp(n.int("start")?.unwrap_or(0)) as usize;
    let end = clamp(n.int("end")?.unwrap_or(r)) as usize;
    let dims = if start < end {
        dims[start..end].to_vec()
    } else {
        Vec::new()
    };
    im.set(
        n,
        0,
        Value::Const(Tensor::from_i64(DType::I64, &[dims.len()], dims)),
    );
    Ok(())
}

/// `Size`: the input's number of elements, an int64 scalar known at
/// import.
pub fn size(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let count = im.plain_shape(n, 0)?.iter().product::<usize>() as i64;
    im.set(
        n,
        0,
        Value::Const(Tensor::from_i64(DType::I64, &[], vec![count])),
    );
    Ok(())
}

pub fn gather(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let (data, indices) = match (im.value(n, 0)?, im.value(n, 1)?) {
        (Value::Const(d), Value::Const(i)) => (d, i),
        _ => return gather_var(im, n),
    };
    let r = data.shape().len();
    if r == 0 {
        return Err(n.error("gathering from a rank-0 tensor"));
    }
    let a = axis(n, n.int("axis")?.unwrap_or(0), r)?;
    let dim = data.shape()[a] as i64;
    let outer: usize = data.shape()[..a].iter().product();
    let inner: usize = data.shape()[a + 1..].iter().product();
    let mut shape = data.shape()[..a].to_vec();
    shape.extend(indices.shape());
    shape.extend(&data.shape()[a + 1..]);
    let mut source = Vec::new();
    let picks = ints(&indices);
    for o in 0..outer {
        for &i in &picks {
            let i = if i < 0 { i + dim } else { i };
            if i < 0 || i >= dim {
                return Err(n.error(format!(
                    "index {i} is out of range for axis {a} of size {dim}"
                )));
            }
            for k in 0..inner {
                source.push((o * data.shape()[a] + i as usize) * inner + k);
            }
        }
    }
    im.set(
        n,
        0,
        Value::Const(super::layout::gather(&data, &shape, &source)),
    );
    Ok(())
}

pub fn cast(im: &mut Importer, n: &Node) -> Result<(), String> {
    let code = n
        .int("to")?
        .ok_or_else(|| n.error("attribute `to` is required"))?;
    let to = load::dtype(code as i32)
        .ok_or_else(|| n.error(format!("cast to type code {code} is not supported")))?;
    cast_to(im, n, to)
}

/// `CastLike`: `Cast` to the element type of its second input (whose
/// values it does not read).
pub fn cast_like(im: &mut Importer, n: &Node) -> Result<(), String> {
    let to = im.value(n, 1)?.dtype();
    cast_to(im, n, to)
}

/// Input 0 of `n` converted to `to`, as `Cast` converts.
fn cast_to(im: &mut Importer, n: &Node, to: DType) -> Result<(), String> {
    im.outputs(n, 1)?;
    // A saturating cast to an 8-bit float (the default) takes values
    // beyond its largest finite one, infinities included, to that value
    // instead of to infinity or NaN; NaN stays NaN. `float16`, `bfloat16`
    // and `float4e2m1` take no attribute: the first two overflow to
    // infinity, the last always saturates.
    let saturate = im.opset < 19 || n.int("saturate")?.unwrap_or(1) != 0;
    let bound = match to {
        DType::F8E4M3FN | DType::F8E4M3FNUZ | DType::F8E5M2 | DType::F8E5M2FNUZ if saturate => {
            to.narrow().map(|f| f.max())
        }
        _ => None,
    };
    let y = match im.value(n, 0)? {
        Value::Const(t) => Value::Const(convert(&t, to, bound)),
        Value::Var(v) if v.dtype == to => Value::Var(v),
        Value::Var(v) => {
            let pair = match (v.dtype, to) {
                (DType::I64, DType::F32) => Some("i64_f32"),
                (DType::Bool, DType::F32) => Some("bool_f32"),
                (DType::F32, DType::I64) => Some("f32_i64"),
                (DType::F32, DType::Bool) => Some("f32_bool"),
                (DType::I64, DType::Bool) => Some("i64_bool"),
                (DType::Bool, DType::I64) => Some("bool_i64"),
                _ => None,
            };
            match pair.filter(|_| (1..=super::MAX_RANK).contains(&v.shape.len())) {
                Some(pair) => {
                    let def = format!("cast_{pair}_r{}", v.shape.len());
                    Value::Var(im.b.call(&def, &[&v], &[], to, v.shape.clone()))
                }
                // Any other pair converts as C does (a float to an
                // integer truncates), as the prelude's casts do.
                None => {
                    let expr = match bound {
                        _ if to == DType::Bool => "_a != 0".to_string(),
                        Some(m) if v.dtype.is_float() => {
                            format!("{}(max(min(_a, {m:?}), -{m:?}))", to.name())
                        }
                        // A float beyond a 2- or 4-bit integer's range
                        // casts to 0, as `ml_dtypes` (the reference) does.
                        _ if to.is_sub_byte() && v.dtype.is_float() => {
                            let (lo, hi) = (ir::int_min(to) - 1, ir::int_max(to) + 1);
                            format!(
                                "_a > {lo}.0 && _a < {hi}.0 ? {t}(_a) : {t}(0)",
                                t = to.name()
                            )
                        }
                        _ => format!("{}(_a)", to.name()),
                    };
                    Value::Var(super::map::map(im, n, &expr, &[v], to)?)
                }
            }
        }
    };
    im.set(n, 0, y);
    Ok(())
}

/// A constant converted as `Cast` does (floats to integers truncate; to
/// bool, nonzero is true; a float clamped to `±bound` first when given).
pub(crate) fn convert(t: &Tensor, to: DType, bound: Option<f64>) -> Tensor {
    let clamp = |x: f64| match bound {
        Some(m) if !x.is_nan() => x.clamp(-m, m),
        _ => x,
    };
    if to == DType::Bool {
        let v = t
            .to_f64_vec()
            .into_iter()
            .map(|x| i64::from(x != 0.0))
            .collect();
        Tensor::from_i64(to, t.shape(), v)
    } else if to.is_float() {
        Tensor::from_f64(
            to,
            t.shape(),
            t.to_f64_vec()
                .into_iter()
                .map(|x| ir::arith::round(to, clamp(x)))
                .collect(),
        )
    } else if to.is_sub_byte() && t.dtype().is_float() {
        let (lo, hi) = (ir::int_min(to) as f64, ir::int_max(to) as f64);
        let v = t
            .to_f64_vec()
            .into_iter()
            .map(|x| {
                let x = x.trunc();
                if lo <= x && x <= hi {
                    x as i64
                } else {
                    0
                }
            })
            .collect();
        Tensor::from_i64(to, t.shape(), v)
    } else {
        let v = t
            .to_f64_vec()
            .into_iter()
            .map(|x| ir::arith::float_to_int(to, x.trunc()))
            .collect();
        Tensor::from_i64(to, t.shape(), v)
    }
}

/// `Gather` with data or indices the model computes (an embedding lookup,
/// a row of a stacked projection): a call of the generated gather of the
/// axis and index rank. Constant indices are checked against the axis here;
/// computed ones when the model runs.
fn gather_var(im: &mut Importer, n: &Node) -> Result<(), String> {
    let data = im.var(n, 0)?;
    let r = data.shape.len();
    if r == 0 {
        return Err(n.error("gathering from a rank-0 tensor"));
    }
    let a = axis(n, n.int("axis")?.unwrap_or(0), r)?;
    let indices = match im.value(n, 1)? {
        Value::Const(t) => {
            let dim = data.shape[a] as i64;
            if let Some(i) = ints(&t).into_iter().find(|&i| i < -dim || i >= dim) {
                return Err(n.error(format!(
                    "index {i} is out of range for axis {a} of size {dim}"
                )));
            }
            // Constant indices of any integer type, as int64.
            let t = Tensor::from_i64(DType::I64, t.shape(), ints(&t));
            im.b.weight(&format!("{}#i64", n.input(1).unwrap_or_default()), &t)
        }
        Value::Var(v) => v,
    };
    if indices.dtype != DType::I64 {
        return Err(n.error(format!(
            "computed indices of type {} are not supported (int64 are)",
            indices.dtype
        )));
    }
    let mut shape = data.shape[..a].to_vec();
    shape.extend(&indices.shape);
    shape.extend(&data.shape[a + 1..]);
    let q = indices.shape.len();
    if r.max(q).max(shape.len()) > MAX_RANK {
        return Err(n.error(format!(
            "gathering along axis {a} of a rank-{r} tensor by rank-{q} indices is not supported (ranks up to {MAX_RANK} are)"
        )));
    }
    let def = im.b.forms.gather(data.dtype, r, a, q);
    let y = im.b.call(&def, &[&data, &indices], &[], data.dtype, shape);
    im.set(n, 0, Value::Var(y));
    Ok(())
}

pub fn constant_of_shape(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let dims = ints(&im.constant(n, 0, "the shape")?);
    let shape: Vec<usize> = dims
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| n.error(format!("dimension {d}"))))
        .collect::<Result<_, _>>()?;
    // The fill value: a one-element tensor, float32 zero by default.
    let fill = match n.tensor("value")? {
        Some(t) => load::tensor(t, im.files, &n.label)?,
        None => Tensor::from_f64(DType::F32, &[1], vec![0.0]),
    };
    if fill.len() != 1 {
        return Err(n.error("attribute `value` must hold one element"));
    }
    let count: usize = shape.iter().product();
    let t = if fill.dtype().is_float() {
        Tensor::from_f64(fill.dtype(), &shape, vec![fill.to_f64_vec()[0]; count])
    } else {
        Tensor::from_i64(fill.dtype(), &shape, vec![ints(&fill)[0]; count])
    };
    im.set(n, 0, Value::Const(t));
    Ok(())
}

pub fn range(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let [start, limit, delta] = [0, 1, 2].map(|k| im.constant(n, k, "a bound"));
    let (start, limit, delta) = (start?, limit?, delta?);
    let dtype = start.dtype();
    let scalar = |t: &Tensor| t.to_f64_vec().first().copied().unwrap_or(0.0);
    let (s, l, d) = (scalar(&start), scalar(&limit), scalar(&delta));
    if d == 0.0 {
        return Err(n.error("a delta of 0"));
    }
    // ONNX: max(ceil((limit - start) / delta), 0) elements.
    let count = ((l - s) / d).ceil().max(0.0) as usize;
    let t = if dtype.is_float() {
        Tensor::from_f64(
            dtype,
            &[count],
            (0..count)
                .map(|k| ir::arith::round(dtype, s + k as f64 * d))
                .collect(),
        )
    } else {
        let (s, d) = (ints(&start)[0], ints(&delta)[0]);
        Tensor::from_i64(
            dtype,
            &[count],
            (0..count as i64).map(|k| s + k * d).collect(),
        )
    };
    im.set(n, 0, Value::Const(t));
    Ok(())
}

/// `OptionalHasElement`: whether its input is present (a tensor is; an
/// omitted input is not). `OptionalGetElement`: its tensor input itself.
pub fn optional(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    if n.op == "OptionalHasElement" {
        let present = i64::from(n.input(0).is_some());
        im.set(
            n,
            0,
            Value::Const(Tensor::from_i64(DType::Bool, &[], vec![present])),
        );
        return Ok(());
    }
    let x = im.value(n, 0)?;
    im.set(n, 0, x);
    Ok(())
}
