//! Operators along an axis, as comprehensions in the model def:
//! `Softmax` (beyond the prelude's last-axis defs), `LogSoftmax` and
//! `Hardmax` along any axis, `ArgMax` and `ArgMin`, `TopK`, `CumSum`,
//! `CumProd` and `LpNormalization`.
//!
//! Before version 13, `Softmax`, `LogSoftmax` and `Hardmax` see their
//! input as a matrix split at `axis` (the rows are the axes before it,
//! the columns every axis from it on), so their rows span every axis from
//! `axis`; from version 13 they span `axis` alone. The softmaxes subtract
//! the row's maximum before `exp`, so large inputs do not overflow.
//! `Hardmax` and the arg operators pick the first of equal extremes
//! (`select_last_index` the last).

use ir::DType;

use super::point::{drop_axes, kept, point, reduce_kept};
use super::{axis, ints};
use crate::build::{Node, Value, Var};
use crate::import::Importer;

/// Fails unless `x` is float32 or float64.
fn float_input(n: &Node, x: &Var) -> Result<(), String> {
    if !x.dtype.is_float() {
        return Err(n.error(format!("{} of {} is not supported", n.op, x.dtype)));
    }
    Ok(())
}

/// The axes a row of `Softmax`, `LogSoftmax` or `Hardmax` spans.
fn row_axes(im: &Importer, n: &Node, r: usize) -> Result<Vec<usize>, String> {
    let modern = im.version(n) >= 13;
    let a = axis(
        n,
        n.int("axis")?.unwrap_or(if modern { -1 } else { 1 }),
        r.max(1),
    )?;
    Ok(if modern { vec![a] } else { (a..r).collect() })
}

/// `Softmax`, `LogSoftmax` and `Hardmax`.
pub fn softmax(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let x = im.var(n, 0)?;
    float_input(n, &x)?;
    let axes = row_axes(im, n, x.shape.len())?;
    let y = if n.op == "Hardmax" {
        let t = x.dtype;
        let max = reduce_kept(im, &x, &axes, "max=!", t, |e| e.to_string());
        let first = first_extreme(im, &x, &axes, &max, false);
        let flat = flat_index(&x, &axes, "_i");
        let rhs = format!("{}({flat} == {} ? 1 : 0)", t.name(), kept(&first, &axes));
        im.b.compute("=", &rhs, &[], t, x.shape.clone())
    } else {
        softmax_of(im, &x, &axes, n.op == "LogSoftmax")
    };
    im.set(n, 0, Value::Var(y));
    Ok(())
}

/// The softmax of `x` over rows spanning `axes` (with `log`, its log),
/// the row's maximum subtracted before `exp`.
pub(crate) fn softmax_of(im: &mut Importer, x: &Var, axes: &[usize], log: bool) -> Var {
    let t = x.dtype;
    let here = point(x.shape.len()).join(", ");
    let max = reduce_kept(im, x, axes, "max=!", t, |e| e.to_string());
    let m = kept(&max, axes);
    let shifted = format!("{}({here}) - {m}", x.name);
    let e =
        im.b.compute("=", &format!("exp({shifted})"), &[], t, x.shape.clone());
    let sum = reduce_kept(im, &e, axes, "+=!", t, |e| e.to_string());
    let s = kept(&sum, axes);
    let rhs = if log {
        format!("{shifted} - log({s})")
    } else {
        format!("{}({here}) / {s}", e.name)
    };
    im.b.compute("=", &rhs, &[], t, x.shape.clone())
}

/// The index within the row (row-major over `axes`) of the row's first
/// element equal to its extreme `ext` (reduced over `axes`, kept), or with
/// `last` its last one, as int64, reduced over `axes` and kept.
fn first_extreme(im: &mut Importer, x: &Var, axes: &[usize], ext: &Var, last: bool) -> Var {
    let count: usize = axes.iter().map(|&k| x.shape[k]).product();
    let flat = flat_index(x, axes, "_r");
    let e = kept(ext, axes);
    let (reduction, none) = if last {
        ("max=!", -1)
    } else {
        ("min=!", count as i64)
    };
    reduce_kept(im, x, axes, reduction, DType::I64, |read| {
        format!("{read} == {e} ? int64({flat}) : int64({none})")
    })
}

/// The row-major index over `axes` of `x`'s point whose iterator for axis
/// `k` is `{prefix}{k}`.
fn flat_index(x: &Var, axes: &[usize], prefix: &str) -> String {
    axes.iter().fold(String::from("0"), |acc, &k| {
        format!("({acc}) * {} + {prefix}{k}", x.shape[k])
    })
}

/// `ArgMax` and `ArgMin`: the int64 index along `axis` of the first (or
/// with `select_last_index` the last) extreme.
pub fn arg(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let x = im.var(n, 0)?;
    if x.dtype == DType::Bool {
        return Err(n.error(format!("{} of bool is not supported", n.op)));
    }
    let r = x.shape.len();
    let a = axis(n, n.int("axis")?.unwrap_or(0), r.max(1))?;
    let keep = n.int("keepdims")?.unwrap_or(1) != 0;
    let last = n.int("select_last_index")?.unwrap_or(0) != 0;
    let reduction = if n.op == "ArgMax" { "max=!" } else { "min=!" };
    let ext = reduce_kept(im, &x, &[a], reduction, x.dtype, |e| e.to_string());
    let index = first_extreme(im, &x, &[a], &ext, last);
    let y = if keep {
        index
    } else {
        drop_axes(im, &index, &[a])
    };
    im.set(n, 0, Value::Var(y));
    Ok(())
}

/// `CumSum` and `CumProd` along the axis the second input gives
/// (`exclusive` leaves the element itself out, `reverse` goes from the
/// end).
pub fn cumsum(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let x = im.var(n, 0)?;
    if x.dtype == DType::Bool {
        return Err(n.error(format!("{} of bool is not supported", n.op)));
    }
    let given = ints(&im.constant(n, 1, "the axis")?);
    let [a] = given[..] else {
        return Err(n.error(format!("the axis is {given:?}, not one value")));
    };
    let r = x.shape.len();
    let a = axis(n, a, r.max(1))?;
    let exclusive = n.int("exclusive")?.unwrap_or(0) != 0;
    let reverse = n.int("reverse")?.unwrap_or(0) != 0;
    let compare = match (reverse, exclusive) {
        (false, false) => "<=",
        (false, true) => "<",
        (true, false) => ">=",
        (true, true) => ">",
    };
    let mut index = point(r);
    index[a] = "_s".to_string();
    let (reduction, identity) = if n.op == "CumProd" {
        ("*=!", 1)
    } else {
        ("+=!", 0)
    };
    let rhs = format!(
        "_s {compare} _i{a} ? {} : {identity}",
        super::point::read(&x, &index)
    );
    let range = format!("_s in 0:{}", x.shape[a]);
    let y =
        im.b.compute(reduction, &rhs, &[range], x.dtype, x.shape.clone());
    im.set(n, 0, Value::Var(y));
    Ok(())
}

/// `LpNormalization`: each vector along `axis` divided by its L1 or L2
/// norm (a vector of zeros stays zeros).
pub fn lp_normalization(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let x = im.var(n, 0)?;
    float_input(n, &x)?;
    let r = x.shape.len();
    let a = axis(n, n.int("axis")?.unwrap_or(-1), r.max(1))?;
    let p = n.int("p")?.unwrap_or(2);
    let (element, norm): (fn(&str) -> String, &str) = match p {
        1 => (|e| format!("fabs({e})"), "_v"),
        2 => (|e| format!("{e} * {e}"), "sqrt(_v)"),
        _ => return Err(n.error(format!("p = {p} is not supported (1 and 2 are)"))),
    };
    let sum = reduce_kept(im, &x, &[a], "+=!", x.dtype, element);
    let here = point(r).join(", ");
    // A vector of zeros stays zeros (the ONNX reference's 0 / 0 = 0).
    let norm = norm.replace("_v", &kept(&sum, &[a]));
    let rhs = format!("{norm} == 0 ? 0 : {}({here}) / {norm}", x.name);
    let y = im.b.compute("=", &rhs, &[], x.dtype, x.shape.clone());
    im.set(n, 0, Value::Var(y));
    Ok(())
}

/// `TopK`: the `k` largest (or smallest) elements along `axis` and their
/// int64 indices, in order, the lower index first among equals. Each
/// element's place in that order is the count of elements before it
/// along the axis; output `m` is the element whose place is `m`.
pub fn top_k(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 2)?;
    let x = im.var(n, 0)?;
    if x.dtype == DType::Bool {
        return Err(n.error("TopK of bool is not supported"));
    }
    let r = x.shape.len();
    let a = axis(n, n.int("axis")?.unwrap_or(-1), r.max(1))?;
    let k = match ints(&im.constant(n, 1, "k")?)[..] {
        [k] => k,
        ref other => return Err(n.error(format!("k is {other:?}, not one value"))),
    };
    let size = x.shape[a];
    let k = usize::try_from(k)
        .ok()
        .filter(|&k| (1..=size).contains(&k))
        .ok_or_else(|| n.error(format!("k = {k} for an axis of {size} (1 to {size} are)")))?;
    let largest = n.int("largest")?.unwrap_or(1) != 0;
    // The order is total whatever `sorted` says, so results are sorted.
    let _ = n.int("sorted")?;
    let here = point(r);
    let mut other = here.clone();
    other[a] = "_s".to_string();
    let (xi, xs) = (
        super::point::read(&x, &here),
        super::point::read(&x, &other),
    );
    let before = if largest { ">" } else { "<" };
    let place = im.b.compute(
        "+=!",
        &format!("{xs} {before} {xi} || {xs} == {xi} && _s < _i{a} ? int64(1) : int64(0)"),
        &[format!("_s in 0:{size}")],
        DType::I64,
        x.shape.clone(),
    );
    let mut shape = x.shape.clone();
    shape[a] = k;
    let at = super::point::read(&place, &other);
    let range = [format!("_s in 0:{size}")];
    let values = im.b.compute(
        "+=!",
        &format!("{at} == _i{a} ? {xs} : 0"),
        &range,
        x.dtype,
        shape.clone(),
    );
    let indices = im.b.compute(
        "+=!",
        &format!("{at} == _i{a} ? int64(_s) : int64(0)"),
        &range,
        DType::I64,
        shape,
    );
    im.set(n, 0, Value::Var(values));
    im.set(n, 1, Value::Var(indices));
    Ok(())
}
