//! Operators whose output shape depends on their input's values:
//! `NonZero`, `Compress` and `Unique`. The values that fix the shape are
//! read at import (`Importer::step`): an initializer, a folded value, a
//! graph input the import is then specialized on, or a tensor the model
//! computes, found by running the part of the model that computes it
//! first, whose outputs become a runtime step's (`crate::Step`): the
//! program is specialized on their shapes, and a caller recomputes them
//! for each run. `Compress`'s data may be any tensor of the model.
//!
//! Guarantees: numpy's `nonzero`, `compress` and `unique` (with the ONNX
//! reference's order for `sorted = 0`: first occurrences); an output that
//! would be empty is an error naming the node.

use std::cmp::Ordering;
use std::sync::Arc;

use ir::DType;
use tensor::{row_major_strides, Tensor};

use super::axis;
use super::point::{point, read};
use crate::build::{Node, Value};
use crate::import::Importer;

/// `compute` with its errors about node `n`.
fn about(
    n: &Node,
    compute: impl Fn(&Tensor) -> Result<Vec<Tensor>, String> + Send + Sync + 'static,
) -> crate::Compute {
    let label = n.label.clone();
    Arc::new(move |t: &Tensor| compute(t).map_err(|e| format!("{label}: {e}")))
}

/// `NonZero`: the coordinates of the nonzero elements, one row per axis.
pub fn nonzero(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let compute = about(n, |x: &Tensor| Ok(vec![coordinates(x)?]));
    let what = "the data, whose nonzero elements fix the output's shape";
    let y = im.step(n, 0, what, compute)?.remove(0);
    im.set(n, 0, y);
    Ok(())
}

/// The coordinates of `x`'s nonzero elements, one row per axis.
fn coordinates(x: &Tensor) -> Result<Tensor, String> {
    let shape = x.shape().to_vec();
    let st = row_major_strides(&shape);
    let flat: Vec<usize> = x
        .to_f64_vec()
        .iter()
        .enumerate()
        .filter(|(_, v)| **v != 0.0)
        .map(|(k, _)| k)
        .collect();
    if flat.is_empty() {
        return Err("no element is nonzero: the output would be empty, and tessera's tensors have positive dimensions".to_string());
    }
    let mut rows = Vec::with_capacity(shape.len() * flat.len());
    for (d, s) in st.iter().enumerate() {
        rows.extend(flat.iter().map(|&f| ((f / s) % shape[d]) as i64));
    }
    Ok(Tensor::from_i64(
        DType::I64,
        &[shape.len().max(1), flat.len()],
        rows,
    ))
}

/// `Compress`: the slices along `axis` (of the flattened data without
/// one) whose condition is true.
pub fn compress(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let data = im.value(n, 0)?;
    let shape = data.shape().to_vec();
    let a = n
        .int("axis")?
        .map(|a| axis(n, a, shape.len()))
        .transpose()?;
    let extent = a.map_or_else(|| shape.iter().product(), |a| shape[a]);
    let compute = about(n, move |c: &Tensor| Ok(vec![picks(c, extent)?]));
    let what = "the condition, which fixes the output's shape";
    let picks = match im.step(n, 1, what, compute)?.remove(0) {
        Value::Const(t) => im.b.weight(&format!("{}#picks", n.label), &t),
        Value::Var(v) => v,
    };
    let count = picks.shape[0];
    let x = im.as_var(n, 0, data);
    let y = match a {
        Some(a) => {
            let mut out = shape.clone();
            out[a] = count;
            let here = point(shape.len());
            let mut at = here.clone();
            at[a] = read(&picks, &[here[a].clone()]);
            im.b.compute("=", &read(&x, &at), &[], x.dtype, out)
        }
        None => {
            // Each pick is a flat position of the data.
            let pick = read(&picks, &["_i0".to_string()]);
            let at: Vec<String> = row_major_strides(&shape)
                .iter()
                .zip(&shape)
                .map(|(s, d)| format!("({pick} / {s}) % {d}"))
                .collect();
            im.b.compute("=", &read(&x, &at), &[], x.dtype, vec![count])
        }
    };
    im.set(n, 0, Value::Var(y));
    Ok(())
}

/// The positions where `condition` is true, of the `extent` it selects
/// from.
fn picks(condition: &Tensor, extent: usize) -> Result<Tensor, String> {
    let keep: Vec<i64> = condition
        .to_f64_vec()
        .iter()
        .enumerate()
        .filter(|(_, c)| **c != 0.0)
        .map(|(k, _)| k as i64)
        .collect();
    if let Some(&past) = keep.iter().find(|&&k| k as usize >= extent) {
        return Err(format!(
            "the condition selects position {past}, past the {extent} it selects from"
        ));
    }
    if keep.is_empty() {
        return Err("the condition selects nothing: the output would be empty, and tessera's tensors have positive dimensions".to_string());
    }
    Ok(Tensor::from_i64(DType::I64, &[keep.len()], keep))
}

/// `Unique`: the distinct elements (or slices along `axis`), sorted or in
/// order of first occurrence, with the index of each one's first
/// occurrence, each input slice's position among them, and their counts.
pub fn unique(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 4)?;
    let sorted = n.int("sorted")?.unwrap_or(1) != 0;
    let rank = im.value(n, 0)?.shape().len();
    let a = n.int("axis")?.map(|a| axis(n, a, rank)).transpose()?;
    let compute = about(n, move |x: &Tensor| Ok(distinct(x, a, sorted)));
    let what = "the data, whose distinct values fix the output's shape";
    for (k, v) in im.step(n, 0, what, compute)?.into_iter().enumerate() {
        im.set(n, k, v);
    }
    Ok(())
}

/// `Unique`'s four outputs for `x`, along axis `a` (of the flattened data
/// without one).
fn distinct(x: &Tensor, a: Option<usize>, sorted: bool) -> Vec<Tensor> {
    let shape = x.shape().to_vec();
    // The flat positions of each slice's elements, slice by slice.
    let (count, slices): (usize, Vec<Vec<usize>>) = match a {
        None => {
            let total = shape.iter().product();
            (total, (0..total).map(|k| vec![k]).collect())
        }
        Some(a) => {
            let st = row_major_strides(&shape);
            let total: usize = shape.iter().product();
            let mut slices = vec![Vec::new(); shape[a]];
            for f in 0..total {
                slices[(f / st[a]) % shape[a]].push(f);
            }
            (shape[a], slices)
        }
    };
    let values = x.to_f64_vec();
    let key = |s: &Vec<usize>| -> Vec<f64> { s.iter().map(|&f| values[f]).collect() };
    let keys: Vec<Vec<f64>> = slices.iter().map(key).collect();
    let compare = |p: &Vec<f64>, q: &Vec<f64>| -> Ordering {
        p.iter()
            .zip(q)
            .map(|(u, v)| u.total_cmp(v))
            .find(|o| *o != Ordering::Equal)
            .unwrap_or(Ordering::Equal)
    };
    // The first occurrence of each distinct slice, in input order.
    let mut firsts: Vec<usize> = Vec::new();
    let mut inverse_first = Vec::with_capacity(count);
    for k in 0..count {
        match firsts
            .iter()
            .position(|&f| compare(&keys[f], &keys[k]) == Ordering::Equal)
        {
            Some(u) => inverse_first.push(u),
            None => {
                inverse_first.push(firsts.len());
                firsts.push(k);
            }
        }
    }
    let mut order: Vec<usize> = (0..firsts.len()).collect();
    if sorted {
        order.sort_by(|&p, &q| compare(&keys[firsts[p]], &keys[firsts[q]]));
    }
    // Where each first-occurrence rank lands in the output.
    let mut rank = vec![0; order.len()];
    for (at, &u) in order.iter().enumerate() {
        rank[u] = at;
    }
    let distinct: Vec<usize> = order.iter().map(|&u| firsts[u]).collect();
    let mut counts = vec![0i64; distinct.len()];
    for &u in &inverse_first {
        counts[rank[u]] += 1;
    }
    let source: Vec<usize> = match a {
        None => distinct.iter().map(|&k| slices[k][0]).collect(),
        Some(a) => {
            // The output keeps the data's layout with the distinct slices
            // along `axis`.
            let st = row_major_strides(&shape);
            let mut out = shape.clone();
            out[a] = distinct.len();
            let total: usize = out.iter().product();
            let ost = row_major_strides(&out);
            (0..total)
                .map(|f| {
                    let mut src = 0;
                    for d in 0..out.len() {
                        let i = (f / ost[d]) % out[d];
                        let i = if d == a { distinct[i] } else { i };
                        src += i * st[d];
                    }
                    src
                })
                .collect()
        }
    };
    let y_shape = match a {
        None => vec![distinct.len()],
        Some(a) => {
            let mut out = shape.clone();
            out[a] = distinct.len();
            out
        }
    };
    let y = super::layout::gather(x, &y_shape, &source);
    let as_ints = |v: Vec<i64>| Tensor::from_i64(DType::I64, &[v.len()], v);
    vec![
        y,
        as_ints(distinct.iter().map(|&k| k as i64).collect()),
        as_ints(inverse_first.iter().map(|&u| rank[u] as i64).collect()),
        as_ints(counts),
    ]
}
