//! Writing the comprehensions importers add to the model def
//! (`Builder::compute`): the result's point is `_i0, _i1, ...`, a reduced
//! axis `k` of an input is read through `_rK`, and a tensor reduced with
//! its axes kept (size 1) is read at the point with those axes at 0.
//! Every iterator an importer names starts with `_` and a letter other
//! than `t` and `w`, which start the def's own tensors' names
//! (`Builder::fresh`).

use ir::DType;

use crate::build::Var;
use crate::import::Importer;

/// The point of a rank-`r` result: `_i0, ..., _i{r-1}`.
pub(crate) fn point(r: usize) -> Vec<String> {
    (0..r).map(|k| format!("_i{k}")).collect()
}

/// `v` read at `index` (one expression per axis).
pub(crate) fn read(v: &Var, index: &[String]) -> String {
    format!("{}({})", v.name, index.join(", "))
}

/// `v` read at the point, its axes of size 1 in `axes` at 0 (a tensor
/// reduced with its axes kept, read where the reduced one is).
pub(crate) fn kept(v: &Var, axes: &[usize]) -> String {
    let index: Vec<String> = point(v.shape.len())
        .into_iter()
        .enumerate()
        .map(|(k, i)| {
            if axes.contains(&k) {
                "0".to_string()
            } else {
                i
            }
        })
        .collect();
    read(v, &index)
}

/// `x` reduced over `axes`, keeping them with size 1: `reduction` (`+=!`,
/// `max=!`, ...) of `element`, an expression of `x` read with each reduced
/// axis `k` through `_rK` (`element` gets that read and may name what is
/// bound at the result's point, as a kept tensor read by [`kept`]).
pub(crate) fn reduce_kept(
    im: &mut Importer,
    x: &Var,
    axes: &[usize],
    reduction: &str,
    dtype: DType,
    element: impl Fn(&str) -> String,
) -> Var {
    let r = x.shape.len();
    let index: Vec<String> = point(r)
        .into_iter()
        .enumerate()
        .map(|(k, i)| {
            if axes.contains(&k) {
                format!("_r{k}")
            } else {
                i
            }
        })
        .collect();
    let ranges: Vec<String> = axes
        .iter()
        .map(|&k| format!("_r{k} in 0:{}", x.shape[k]))
        .collect();
    let shape: Vec<usize> = (0..r)
        .map(|k| if axes.contains(&k) { 1 } else { x.shape[k] })
        .collect();
    im.b.compute(reduction, &element(&read(x, &index)), &ranges, dtype, shape)
}

/// `v` without its axes in `axes`, which have size 1.
pub(crate) fn drop_axes(im: &mut Importer, v: &Var, axes: &[usize]) -> Var {
    let shape: Vec<usize> = (0..v.shape.len())
        .filter(|k| !axes.contains(k))
        .map(|k| v.shape[k])
        .collect();
    let mut next = 0;
    let index: Vec<String> = (0..v.shape.len())
        .map(|k| {
            if axes.contains(&k) {
                "0".to_string()
            } else {
                next += 1;
                format!("_i{}", next - 1)
            }
        })
        .collect();
    im.b.compute("=", &read(v, &index), &[], v.dtype, shape)
}
