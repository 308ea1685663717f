//! Operators that move or select elements by index arithmetic, as
//! comprehensions in the model def: `Tile`, `Trilu`, `GatherElements`,
//! `ScatterElements`, `GatherND`, `ScatterND`, `OneHot`, `EyeLike`,
//! `DepthToSpace`, `SpaceToDepth`, and `Pad` in the
//! forms the prelude's `pad_rK` does not take (`reflect`, `edge`, `wrap`,
//! element types other than float32, other ranks).
//!
//! Every read is in bounds: an index that may fall outside is guarded by
//! `?:` or clamped, and a negative index counts from the end as ONNX
//! says. The scatters compute each output element from the updates that
//! land on it (the last one with `reduction = none`, as the ONNX reference
//! does with repeated indices).

use ir::DType;

use super::point::{point, read};
use super::{axis, ints};
use crate::build::{Node, Value, Var};
use crate::import::Importer;

/// `Tile`: the input repeated `repeats[k]` times along each axis `k`.
pub fn tile(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let x = im.var(n, 0)?;
    let repeats = ints(&im.constant(n, 1, "the repeats")?);
    if repeats.len() != x.shape.len() || repeats.iter().any(|&k| k < 1) {
        return Err(n.error(format!(
            "repeats {repeats:?} for an input of shape {:?} (one positive count per axis)",
            x.shape
        )));
    }
    let shape: Vec<usize> = x
        .shape
        .iter()
        .zip(&repeats)
        .map(|(&d, &k)| d * k as usize)
        .collect();
    let index: Vec<String> = (0..x.shape.len())
        .map(|k| format!("_i{k} % {}", x.shape[k]))
        .collect();
    let y = im.b.compute("=", &read(&x, &index), &[], x.dtype, shape);
    im.set(n, 0, Value::Var(y));
    Ok(())
}

/// `Trilu`: the upper (or lower) triangle of the last two axes, from
/// diagonal `k` (the optional second input), the rest zero.
pub fn trilu(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let x = im.var(n, 0)?;
    let r = x.shape.len();
    if r < 2 {
        return Err(n.error(format!("an input of rank {r} (Trilu needs 2 or more)")));
    }
    let k = match n.input(1) {
        Some(_) => *ints(&im.constant(n, 1, "the diagonal")?)
            .first()
            .ok_or_else(|| n.error("the diagonal k is empty"))?,
        None => 0,
    };
    let upper = n.int("upper")?.unwrap_or(1) != 0;
    let keep = format!(
        "_i{} - _i{} {} {k}",
        r - 1,
        r - 2,
        if upper { ">=" } else { "<=" }
    );
    let rhs = format!("{keep} ? {} : 0", read(&x, &point(r)));
    let y = im.b.compute("=", &rhs, &[], x.dtype, x.shape.clone());
    im.set(n, 0, Value::Var(y));
    Ok(())
}

/// The integer indices of input `k` and the axis they index, checked
/// against `data`: the same rank, and an integer type.
fn element_indices(
    im: &mut Importer,
    n: &Node,
    data: &Var,
    k: usize,
) -> Result<(Var, usize), String> {
    let indices = im.var(n, k)?;
    let r = data.shape.len();
    if !indices.dtype.is_int() || indices.shape.len() != r || r == 0 {
        return Err(n.error(format!(
            "indices {} of shape {:?} for data of shape {:?} (integers of the data's rank are needed)",
            indices.dtype, indices.shape, data.shape
        )));
    }
    let a = axis(n, n.int("axis")?.unwrap_or(0), r)?;
    Ok((indices, a))
}

/// An index read from `indices` at `at`, a negative one counting from the
/// end of an axis of `size`.
fn wrapped(indices: &Var, at: &[String], size: usize) -> String {
    let i = read(indices, at);
    format!("({i} < 0 ? {i} + {size} : {i})")
}

/// `GatherElements`: `Y[p] = X[p with axis a at I[p]]`.
pub fn gather_elements(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let x = im.var(n, 0)?;
    let (indices, a) = element_indices(im, n, &x, 1)?;
    let here = point(x.shape.len());
    let mut index = here.clone();
    index[a] = wrapped(&indices, &here, x.shape[a]);
    let y =
        im.b.compute("=", &read(&x, &index), &[], x.dtype, indices.shape.clone());
    im.set(n, 0, Value::Var(y));
    Ok(())
}

/// `ScatterElements`: the data, where the updates whose index along the
/// axis lands on an element replace it (`reduction = none`, the last such
/// update) or are combined with it (`add`, `mul`, `max`, `min`).
pub fn scatter_elements(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let x = im.var(n, 0)?;
    let (indices, a) = element_indices(im, n, &x, 1)?;
    let updates = im.var(n, 2)?;
    if updates.shape != indices.shape || updates.dtype != x.dtype {
        return Err(n.error(format!(
            "updates {} {:?} for indices {:?} and data {} (the indices' shape and the data's type are needed)",
            updates.dtype, updates.shape, indices.shape, x.dtype
        )));
    }
    if let Some((k, _)) = (0..x.shape.len())
        .map(|k| (k, indices.shape[k] > x.shape[k]))
        .find(|&(k, bigger)| bigger && k != a)
    {
        return Err(n.error(format!(
            "indices {:?} exceed the data {:?} along axis {k}",
            indices.shape, x.shape
        )));
    }
    let r = x.shape.len();
    let here = point(r);
    // The updates along the axis at this element's other coordinates; a
    // read past the updates' other extents is skipped by the reduction.
    let mut at = here.clone();
    at[a] = "_q".to_string();
    let lands = format!("{} == _i{a}", wrapped(&indices, &at, x.shape[a]));
    let range = [format!("_q in 0:{}", indices.shape[a])];
    let u = read(&updates, &at);
    let xs = read(&x, &here);
    let reduction = n.string("reduction")?.unwrap_or_else(|| "none".to_string());
    let y = match reduction.as_str() {
        "none" => {
            let last = im.b.compute(
                "max=!",
                &format!("{lands} ? int64(_q) : int64(-1)"),
                &range,
                DType::I64,
                x.shape.clone(),
            );
            let l = read(&last, &here);
            // The update read is clamped into the updates' extents: it is
            // taken only where an update landed, which is inside them.
            let clamped: Vec<String> = (0..r)
                .map(|k| {
                    let i = if k == a {
                        format!("max({l}, 0)")
                    } else {
                        here[k].clone()
                    };
                    format!("min({i}, {})", updates.shape[k] - 1)
                })
                .collect();
            let rhs = format!("{l} >= 0 ? {} : {xs}", read(&updates, &clamped));
            im.b.compute("=", &rhs, &[], x.dtype, x.shape.clone())
        }
        other => combined(im, n, &x, other, &lands, &u, &range)?,
    };
    im.set(n, 0, Value::Var(y));
    Ok(())
}

/// A scatter with `reduction` (`add`, `mul`, `max`, `min`): the element
/// of `x` combined with what the updates that land on it give, reduced
/// over `ranges` (`lands` says whether update `u` lands on the point).
fn combined(
    im: &mut Importer,
    n: &Node,
    x: &Var,
    reduction: &str,
    lands: &str,
    u: &str,
    ranges: &[String],
) -> Result<Var, String> {
    let here = point(x.shape.len());
    let xs = read(x, &here);
    let (op, none, out) = match reduction {
        "add" => ("+=!", "0".to_string(), "X + S"),
        "mul" => ("*=!", "1".to_string(), "X * S"),
        "max" => ("max=!", xs.clone(), "max(X, S)"),
        "min" => ("min=!", xs.clone(), "min(X, S)"),
        other => return Err(n.error(format!("reduction `{other}` is not supported"))),
    };
    let rhs = format!("{lands} ? {u} : {none}");
    let s = im.b.compute(op, &rhs, ranges, x.dtype, x.shape.clone());
    let rhs = out.replace("S", &read(&s, &here)).replace("X", &xs);
    Ok(im.b.compute("=", &rhs, &[], x.dtype, x.shape.clone()))
}

/// `DepthToSpace` (`DCR` and `CRD` modes) and `SpaceToDepth` of an
/// N x C x H x W tensor by `blocksize`.
pub fn depth_space(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let x = im.var(n, 0)?;
    let b = n
        .int("blocksize")?
        .filter(|&b| b > 0)
        .ok_or_else(|| n.error("attribute `blocksize` must be a positive integer"))?
        as usize;
    let [nn, c, h, w] = x.shape[..] else {
        return Err(n.error(format!(
            "input of shape {:?} (N x C x H x W is needed)",
            x.shape
        )));
    };
    let (shape, index) = if n.op == "DepthToSpace" {
        if c % (b * b) != 0 {
            return Err(n.error(format!("{c} channels are not a multiple of {b} x {b}")));
        }
        let co = c / (b * b);
        let channel = match n.string("mode")?.as_deref().unwrap_or("DCR") {
            "DCR" => format!("((_i2 % {b}) * {b} + _i3 % {b}) * {co} + _i1"),
            "CRD" => format!("_i1 * {} + (_i2 % {b}) * {b} + _i3 % {b}", b * b),
            other => return Err(n.error(format!("mode `{other}` is not supported"))),
        };
        (
            vec![nn, co, h * b, w * b],
            vec![
                "_i0".to_string(),
                channel,
                format!("_i2 / {b}"),
                format!("_i3 / {b}"),
            ],
        )
    } else {
        if h % b != 0 || w % b != 0 {
            return Err(n.error(format!(
                "{h} x {w} is not a multiple of the block {b} x {b}"
            )));
        }
        // DCR: output channel (bh * b + bw) * C + c; CRD: c * b * b + bh * b + bw.
        let bb = b * b;
        let (channel, within) = match n.string("mode")?.as_deref().unwrap_or("DCR") {
            "DCR" => (format!("_i1 % {c}"), format!("_i1 / {c}")),
            "CRD" => (format!("_i1 / {bb}"), format!("_i1 % {bb}")),
            other => return Err(n.error(format!("mode `{other}` is not supported"))),
        };
        (
            vec![nn, c * bb, h / b, w / b],
            vec![
                "_i0".to_string(),
                channel,
                format!("_i2 * {b} + ({within}) / {b}"),
                format!("_i3 * {b} + ({within}) % {b}"),
            ],
        )
    };
    let y = im.b.compute("=", &read(&x, &index), &[], x.dtype, shape);
    im.set(n, 0, Value::Var(y));
    Ok(())
}

/// `Pad` of `x` by `pads` (all begins, then all ends; negative ones crop)
/// in `mode`: `constant` (`value` outside), `reflect` (mirrored without
/// repeating the edge), `edge` (the edge repeated), `wrap` (the other end).
pub(crate) fn pad(
    im: &mut Importer,
    n: &Node,
    x: &Var,
    pads: &[i64],
    mode: &str,
    value: f64,
) -> Result<Var, String> {
    let r = x.shape.len();
    let shape: Vec<usize> = (0..r)
        .map(|k| x.shape[k] as i64 + pads[k] + pads[r + k])
        .map(|d| usize::try_from(d).ok().filter(|&d| d > 0))
        .collect::<Option<_>>()
        .ok_or_else(|| n.error(format!("pads {pads:?} leave nothing of {:?}", x.shape)))?;
    let source: Vec<String> = (0..r).map(|k| format!("(_i{k} - {})", pads[k])).collect();
    let y = match mode {
        "constant" => {
            let inside: Vec<String> = source
                .iter()
                .zip(&x.shape)
                .map(|(s, d)| format!("{s} >= 0 && {s} < {d}"))
                .collect();
            let v = if x.dtype.is_float() {
                crate::build::float(value)
            } else {
                (value as i64).to_string()
            };
            let rhs = format!("{} ? {} : {v}", inside.join(" && "), read(x, &source));
            im.b.compute("=", &rhs, &[], x.dtype, shape)
        }
        "reflect" | "edge" | "wrap" => {
            let index: Vec<String> = source
                .iter()
                .zip(&x.shape)
                .map(|(s, &d)| match mode {
                    "edge" => format!("max(0, min({s}, {}))", d - 1),
                    "wrap" => format!("{s} % {d}"),
                    // Mirrored about the first and last element; one
                    // reflection reaches pads shorter than the axis.
                    _ if d == 1 => "0".to_string(),
                    _ => format!(
                        "{s} < 0 ? -{s} : ({s} >= {d} ? {} - {s} : {s})",
                        2 * (d - 1)
                    ),
                })
                .collect();
            if mode == "reflect" && (0..r).any(|k| pads[k].max(pads[r + k]) >= x.shape[k] as i64) {
                return Err(n.error(format!(
                    "reflect pads {pads:?} as long as the axes of {:?} are not supported",
                    x.shape
                )));
            }
            im.b.compute("=", &read(x, &index), &[], x.dtype, shape)
        }
        other => return Err(n.error(format!("mode `{other}` is not supported"))),
    };
    Ok(y)
}

/// Whether the prelude's `pad_rK` computes this pad: constant float32 of
/// ranks 1 to 5, no cropping.
pub(crate) fn prelude_pads(x: &Var, pads: &[i64], mode: &str) -> bool {
    mode == "constant"
        && x.dtype == DType::F32
        && (1..=super::MAX_RANK).contains(&x.shape.len())
        && pads.iter().all(|&p| p >= 0)
}

/// The integer index tuples of `GatherND` and `ScatterND` (input 1, of
/// shape `[.., q]`) against `data`, after `batch` shared leading axes: q.
fn index_tuples(n: &Node, data: &Var, indices: &Var, batch: usize) -> Result<usize, String> {
    let q = *indices.shape.last().unwrap_or(&0);
    let fits = indices.dtype.is_int()
        && indices.shape.len() > batch
        && batch + q <= data.shape.len()
        && indices.shape[..batch] == data.shape[..batch];
    if !fits || q == 0 {
        return Err(n.error(format!(
            "indices {} {:?} for data {:?} (integer tuples of at most the data's rank are needed)",
            indices.dtype, indices.shape, data.shape
        )));
    }
    Ok(q)
}

/// `GatherND`: for each index tuple (after `batch_dims` shared axes), the
/// slice of the data it names.
pub fn gather_nd(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let (x, indices) = (im.var(n, 0)?, im.var(n, 1)?);
    let b = usize::try_from(n.int("batch_dims")?.unwrap_or(0))
        .map_err(|_| n.error("a negative batch_dims"))?;
    let q = index_tuples(n, &x, &indices, b)?;
    let m = indices.shape.len() - 1;
    let mut shape = indices.shape[..m].to_vec();
    shape.extend(&x.shape[b + q..]);
    let here = point(shape.len());
    let mut index: Vec<String> = here[..b].to_vec();
    for k in 0..q {
        let mut at = here[..m].to_vec();
        at.push(k.to_string());
        index.push(wrapped(&indices, &at, x.shape[b + k]));
    }
    index.extend(here[m..].iter().cloned());
    let y = im.b.compute("=", &read(&x, &index), &[], x.dtype, shape);
    im.set(n, 0, Value::Var(y));
    Ok(())
}

/// `ScatterND`: the data, where the update slices whose index tuple names
/// an element replace it (`reduction = none`, the last such update) or are
/// combined with it (`add`, `mul`, `max`, `min`).
pub fn scatter_nd(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let (x, indices, updates) = (im.var(n, 0)?, im.var(n, 1)?, im.var(n, 2)?);
    let q = index_tuples(n, &x, &indices, 0)?;
    let m = indices.shape.len() - 1;
    let mut want = indices.shape[..m].to_vec();
    want.extend(&x.shape[q..]);
    if updates.shape != want || updates.dtype != x.dtype {
        return Err(n.error(format!(
            "updates {} {:?}, not {} {want:?}",
            updates.dtype, updates.shape, x.dtype
        )));
    }
    let r = x.shape.len();
    let here = point(r);
    // Each update `u` (its iterators `_u0, ...`) lands where its index
    // tuple equals the element's first q coordinates.
    let us: Vec<String> = (0..m).map(|k| format!("_u{k}")).collect();
    let ranges: Vec<String> = (0..m)
        .map(|k| format!("_u{k} in 0:{}", indices.shape[k]))
        .collect();
    let lands: Vec<String> = (0..q)
        .map(|k| {
            let mut at = us.clone();
            at.push(k.to_string());
            format!("{} == _i{k}", wrapped(&indices, &at, x.shape[k]))
        })
        .collect();
    let lands = lands.join(" && ");
    let mut at = us.clone();
    at.extend(here[q..].iter().cloned());
    let u = read(&updates, &at);
    let xs = read(&x, &here);
    let reduction = n.string("reduction")?.unwrap_or_else(|| "none".to_string());
    let y = match reduction.as_str() {
        "none" => {
            // The last update that lands, as a row-major position.
            let flat = (0..m).fold("0".to_string(), |acc, k| {
                format!("({acc}) * {} + _u{k}", indices.shape[k])
            });
            let last = im.b.compute(
                "max=!",
                &format!("{lands} ? int64({flat}) : int64(-1)"),
                &ranges,
                DType::I64,
                x.shape.clone(),
            );
            let l = read(&last, &here);
            let mut stride = 1;
            let mut index = vec![String::new(); m];
            for k in (0..m).rev() {
                index[k] = format!("(max({l}, 0) / {stride}) % {}", indices.shape[k]);
                stride *= indices.shape[k];
            }
            index.extend(here[q..].iter().cloned());
            let rhs = format!("{l} >= 0 ? {} : {xs}", read(&updates, &index));
            im.b.compute("=", &rhs, &[], x.dtype, x.shape.clone())
        }
        other => combined(im, n, &x, other, &lands, &u, &ranges)?,
    };
    im.set(n, 0, Value::Var(y));
    Ok(())
}

/// `OneHot`: along a new `axis`, `on` where the index (a negative one
/// counting from `depth`) is the position, `off` elsewhere.
pub fn one_hot(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let indices = im.var(n, 0)?;
    let depth = im.constant(n, 1, "the depth")?.to_f64_vec();
    let values = im.var(n, 2)?;
    let depth = match depth[..] {
        [d] if d >= 1.0 => d as usize,
        _ => return Err(n.error(format!("the depth is {depth:?}, not one positive value"))),
    };
    if values.shape.iter().product::<usize>() != 2 || values.shape.len() != 1 {
        return Err(n.error(format!("values of shape {:?}, not [2]", values.shape)));
    }
    let r = indices.shape.len() + 1;
    let a = axis(n, n.int("axis")?.unwrap_or(-1), r)?;
    let mut shape = indices.shape.clone();
    shape.insert(a, depth);
    let mut at = point(r);
    at.remove(a);
    let i = read(&indices, &at);
    let index = format!("({i} < 0 ? {i} + {depth} : {i})");
    let rhs = format!("{index} == _i{a} ? {}(1) : {}(0)", values.name, values.name);
    let y = im.b.compute("=", &rhs, &[], values.dtype, shape);
    im.set(n, 0, Value::Var(y));
    Ok(())
}

/// `EyeLike`: ones on diagonal `k` of a matrix of the input's shape.
pub fn eye_like(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let x = im.var(n, 0)?;
    if x.shape.len() != 2 {
        return Err(n.error(format!(
            "an input of shape {:?} (a matrix is needed)",
            x.shape
        )));
    }
    let dtype = match n.int("dtype")? {
        Some(code) => crate::load::dtype(code as i32)
            .ok_or_else(|| n.error(format!("element type code {code} is not supported")))?,
        None => x.dtype,
    };
    let k = n.int("k")?.unwrap_or(0);
    let rhs = format!("{}(_i1 - _i0 == {k} ? 1 : 0)", dtype.name());
    let y = im.b.compute("=", &rhs, &[], dtype, x.shape.clone());
    im.set(n, 0, Value::Var(y));
    Ok(())
}

/// `ReverseSequence`: along `time_axis`, the first `sequence_lens[b]`
/// steps of each batch entry `b` (along `batch_axis`) reversed, the rest
/// kept. The lengths are read at import (a constant, or a graph input the
/// program is specialized on) into a table of source steps.
pub fn reverse_sequence(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let x = im.var(n, 0)?;
    let lens = ints(&im.constant(n, 1, "the sequence lengths")?);
    let batch = usize::try_from(n.int("batch_axis")?.unwrap_or(1)).unwrap_or(usize::MAX);
    let time = usize::try_from(n.int("time_axis")?.unwrap_or(0)).unwrap_or(usize::MAX);
    if x.shape.len() < 2 || batch > 1 || time > 1 || batch == time {
        return Err(n.error(format!(
            "batch_axis {batch} and time_axis {time} for input {:?} (0 and 1, or 1 and 0)",
            x.shape
        )));
    }
    let (nb, nt) = (x.shape[batch], x.shape[time]);
    if lens.len() != nb || lens.iter().any(|&l| l < 0 || l as usize > nt) {
        return Err(n.error(format!(
            "sequence lengths {lens:?} for {nb} entries of {nt} steps"
        )));
    }
    let source: Vec<i64> = (0..nb)
        .flat_map(|b| {
            let l = lens[b];
            (0..nt as i64).map(move |t| if t < l { l - 1 - t } else { t })
        })
        .collect();
    let table = tensor::Tensor::from_i64(DType::I64, &[nb, nt], source);
    let table = im.b.weight(&format!("{}#steps", n.label), &table);
    let here = point(x.shape.len());
    let mut at = here.clone();
    at[time] = read(&table, &[here[batch].clone(), here[time].clone()]);
    let y =
        im.b.compute("=", &read(&x, &at), &[], x.dtype, x.shape.clone());
    im.set(n, 0, Value::Var(y));
    Ok(())
}

/// `ai.onnx.ml`'s `ArrayFeatureExtractor`: the elements of the last axis
/// of `x` that the indices `y` pick (a vector `x` as one row).
pub fn feature_extractor(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let x = im.var(n, 0)?;
    let y = im.var(n, 1)?;
    if !y.dtype.is_int() || x.shape.is_empty() {
        return Err(n.error(format!(
            "indices {} {:?} into {:?}",
            y.dtype, y.shape, x.shape
        )));
    }
    let picks: usize = y.shape.iter().product();
    let r = x.shape.len();
    let mut shape = if r == 1 {
        vec![1]
    } else {
        x.shape[..r - 1].to_vec()
    };
    shape.push(picks);
    let last = shape.len() - 1;
    let pick = if y.shape.is_empty() {
        read(&y, &[])
    } else {
        // The pick's flat position among the indices.
        let mut at = Vec::new();
        let mut rest = format!("_i{last}");
        for k in (0..y.shape.len()).rev() {
            at.push(format!("({rest}) % {}", y.shape[k]));
            rest = format!("({rest}) / {}", y.shape[k]);
        }
        at.reverse();
        read(&y, &at)
    };
    let mut index: Vec<String> = if r == 1 { Vec::new() } else { point(r - 1) };
    index.push(pick);
    let z = im.b.compute("=", &read(&x, &index), &[], x.dtype, shape);
    im.set(n, 0, Value::Var(z));
    Ok(())
}

/// `CenterCropPad`: each of `axes` (all by default) cropped or padded with
/// zeros to the length `shape` gives it, centred (the odd element at the
/// end). The lengths are read at import. The result reads the input at
/// each point shifted by the crop's start or back by the pad's; a point
/// whose read falls outside the input is left 0.
pub fn center_crop_pad(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let x = im.var(n, 0)?;
    let lengths = ints(&im.constant(n, 1, "the shape")?);
    let r = x.shape.len();
    let axes: Vec<usize> = match n.ints("axes")? {
        Some(a) => a.iter().map(|&a| axis(n, a, r)).collect::<Result<_, _>>()?,
        None => (0..r).collect(),
    };
    if lengths.len() != axes.len() || lengths.iter().any(|&l| l < 1) {
        return Err(n.error(format!(
            "shape {lengths:?} for axes {axes:?} (one positive length each)"
        )));
    }
    let mut shape = x.shape.clone();
    let mut at = point(r);
    for (&a, &l) in axes.iter().zip(&lengths) {
        let (have, want) = (x.shape[a] as i64, l);
        shape[a] = want as usize;
        // Cropping starts (have - want) / 2 in; padding puts (want - have)
        // / 2 zeros first.
        let shift = (have - want).abs() / 2 * (have - want).signum();
        if shift != 0 {
            at[a] = format!("_i{a} + {shift}");
        }
    }
    let y = im.b.compute("+=!", &read(&x, &at), &[], x.dtype, shape);
    im.set(n, 0, Value::Var(y));
    Ok(())
}

/// `TensorScatter`: `past_cache` with `update` written along `axis` from
/// each batch entry's write index (`write_indices`, read at import; 0
/// when absent), wrapping around the axis in `circular` mode. A table
/// gives, for each batch entry and cache step, the update step written
/// there, or none (the past kept).
pub fn tensor_scatter(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let past = im.var(n, 0)?;
    let update = im.var(n, 1)?;
    let r = past.shape.len();
    let a = axis(n, n.int("axis")?.unwrap_or(-2), r)?;
    let circular = match n.string("mode")?.as_deref() {
        None | Some("linear") => false,
        Some("circular") => true,
        Some(other) => return Err(n.error(format!("mode `{other}` is not supported"))),
    };
    let fits = update.shape.len() == r
        && (0..r).all(|k| {
            if k == a {
                update.shape[k] <= past.shape[k]
            } else {
                update.shape[k] == past.shape[k]
            }
        });
    if a == 0 || !fits || update.dtype != past.dtype {
        return Err(n.error(format!(
            "update {} {:?} into the cache {} {:?} along axis {a}",
            update.dtype, update.shape, past.dtype, past.shape
        )));
    }
    let (batch, steps, length) = (past.shape[0], update.shape[a], past.shape[a]);
    let starts = match n.input(2) {
        Some(_) => ints(&im.constant(n, 2, "the write indices")?),
        None => vec![0; batch],
    };
    if starts.len() != batch {
        return Err(n.error(format!(
            "{} write indices for {batch} batch entries",
            starts.len()
        )));
    }
    let mut source = vec![0i64; batch * length];
    let mut written = vec![0i64; batch * length];
    for (b, &start) in starts.iter().enumerate() {
        for s in 0..steps as i64 {
            let mut at = start + s;
            if circular {
                at = at.rem_euclid(length as i64);
            }
            if at < 0 || at >= length as i64 {
                return Err(n.error(format!(
                    "write index {start} puts update step {s} at {at}, outside the cache's {length}"
                )));
            }
            source[b * length + at as usize] = s;
            written[b * length + at as usize] = 1;
        }
    }
    let source = tensor::Tensor::from_i64(DType::I64, &[batch, length], source);
    let written = tensor::Tensor::from_i64(DType::Bool, &[batch, length], written);
    let source = im.b.weight(&format!("{}#source", n.label), &source);
    let written = im.b.weight(&format!("{}#written", n.label), &written);
    let here = point(r);
    let table_at = [here[0].clone(), here[a].clone()];
    let mut from = here.clone();
    from[a] = read(&source, &table_at);
    let rhs = format!(
        "{} ? {} : {}",
        read(&written, &table_at),
        read(&update, &from),
        read(&past, &here)
    );
    let y = im.b.compute("=", &rhs, &[], past.dtype, past.shape.clone());
    im.set(n, 0, Value::Var(y));
    Ok(())
}
