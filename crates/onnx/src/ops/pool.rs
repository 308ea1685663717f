//! `MaxPool` and `AveragePool` in the forms the prelude's `maxpoolKd` and
//! `avgpoolKd` defs do not take (one spatial dimension, dilations, element
//! types other than float32), and `LpPool`, as comprehensions in the model
//! def: the
//! maximum or sum over the window's points `o * stride + k * dilation -
//! pad` that fall inside the input (a read outside is skipped under a
//! reduction), and for the mean, a division by how many points the window
//! counts, a constant the import computes (the points inside the input,
//! or with `count_include_pad = 1` every point inside the padded input);
//! for the p-norm, the p-th root of the sum of the points' |x|^p.
//!
//! Requires the window the importer read (`conv::Window`, its end pads
//! grown for `ceil_mode`), and a float input for `AveragePool`.

use ir::DType;
use tensor::Tensor;

use super::conv::Window;
use crate::build::{Node, Var};
use crate::import::Importer;

/// The pooled `x` (`N x C x spatial...`) over windows of `kernel` points.
pub(crate) fn general(
    im: &mut Importer,
    n: &Node,
    x: &Var,
    kernel: &[usize],
    win: &Window,
    include_pad: bool,
) -> Result<Var, String> {
    let d = kernel.len();
    let max = n.op == "MaxPool";
    let float = x.dtype.is_float();
    if x.dtype == DType::Bool || !max && !float {
        return Err(n.error(format!("{} of {} is not supported", n.op, x.dtype)));
    }
    let mut shape = x.shape[..2].to_vec();
    shape.extend(&win.out);
    let mut ix = vec!["_i0".to_string(), "_i1".to_string()];
    let mut ranges = Vec::new();
    for (k, size) in kernel.iter().enumerate() {
        let (s, dil, p) = (win.strides[k], win.dilations[k], win.pads[k]);
        ix.push(format!("_i{} * {s} + _k{k} * {dil} - {p}", k + 2));
        ranges.push(format!("_k{k} in 0:{size}"));
    }
    let read = format!("{}({})", x.name, ix.join(", "));
    if max {
        return Ok(im.b.compute("max=!", &read, &ranges, x.dtype, shape));
    }
    if n.op == "LpPool" {
        // The p-norm of the window's points inside the input.
        let p = n.int("p")?.unwrap_or(2);
        if p < 1 {
            return Err(n.error(format!("p = {p} is not supported (p >= 1 is)")));
        }
        let power = format!("pow(fabs({read}), {p})");
        let sum = im.b.compute("+=!", &power, &ranges, x.dtype, shape.clone());
        let at = format!(
            "{}({})",
            sum.name,
            super::point::point(shape.len()).join(", ")
        );
        let root = format!("pow({at}, 1.0 / {p})");
        return Ok(im.b.compute("=", &root, &[], x.dtype, shape));
    }
    let sum = im.b.compute("+=!", &read, &ranges, x.dtype, shape.clone());
    let counts = window_counts(&x.shape[2..], kernel, win, include_pad);
    let key = format!(
        "{}#counts",
        n.proto.output.first().cloned().unwrap_or_default()
    );
    let counts =
        im.b.weight(&key, &Tensor::from_f64(x.dtype, &win.out, counts));
    let spatial: Vec<String> = (2..2 + d).map(|k| format!("_i{k}")).collect();
    let rhs = format!(
        "{}(_i0, _i1, {s}) / {}({s})",
        sum.name,
        counts.name,
        s = spatial.join(", ")
    );
    Ok(im.b.compute("=", &rhs, &[], x.dtype, shape))
}

/// For each output point (row-major over `win.out`), how many points its
/// window averages: those inside the input, or with `include_pad` those
/// inside the input and its explicit pads.
fn window_counts(spatial: &[usize], kernel: &[usize], win: &Window, include_pad: bool) -> Vec<f64> {
    let d = kernel.len();
    // Per dimension, the count at each output index; the count of a point
    // is their product.
    let per_dim: Vec<Vec<f64>> = (0..d)
        .map(|k| {
            let (s, dil, p) = (win.strides[k], win.dilations[k], win.pads[k]);
            let (lo, hi) = if include_pad {
                (-p, spatial[k] as i64 + win.pads[d + k])
            } else {
                (0, spatial[k] as i64)
            };
            (0..win.out[k] as i64)
                .map(|o| {
                    (0..kernel[k] as i64)
                        .filter(|&j| (lo..hi).contains(&(o * s + j * dil - p)))
                        .count() as f64
                })
                .collect()
        })
        .collect();
    let total: usize = win.out.iter().product();
    (0..total)
        .map(|flat| {
            let mut rest = flat;
            let mut c = 1.0;
            for k in (0..d).rev() {
                c *= per_dim[k][rest % win.out[k]];
                rest /= win.out[k];
            }
            c
        })
        .collect()
}
