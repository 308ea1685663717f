//! Normalizations as comprehensions in the model def, in the forms the
//! prelude's `layernorm_rK` does not take: `LayerNormalization` over any
//! trailing axes with its `Mean` and `InvStdDev` outputs,
//! `RMSNormalization`, `InstanceNormalization`, `GroupNormalization`,
//! `MeanVarianceNormalization`, and `LRN` (across channels).
//!
//! Each computes the mean over the normalized axes, then the mean square
//! of the deviation (`E[(x - mean)^2]`, as the ONNX reference does), then
//! `1 / sqrt(var + epsilon)`, all held with the normalized axes kept (of
//! size one) and read back at each element. Scales and biases broadcast to
//! the normalized shape (aligned at the right) or are per channel.

use super::point::{kept, point, read, reduce_kept};
use super::{axis, map};
use crate::build::{float, Node, Value, Var};
use crate::import::Importer;

/// Fails unless `x` is float32 or float64.
fn float_input(n: &Node, x: &Var) -> Result<(), String> {
    if !x.dtype.is_float() {
        return Err(n.error(format!("{} of {} is not supported", n.op, x.dtype)));
    }
    Ok(())
}

/// The mean of `element` (an expression of `x` read with the reduced axes
/// through `_rK`) over `axes`, kept.
fn mean(im: &mut Importer, x: &Var, axes: &[usize], element: impl Fn(&str) -> String) -> Var {
    let count: usize = axes.iter().map(|&k| x.shape[k]).product();
    let sum = reduce_kept(im, x, axes, "+=!", x.dtype, element);
    let rhs = format!("{} / {count}", read(&sum, &point(sum.shape.len())));
    im.b.compute("=", &rhs, &[], x.dtype, sum.shape.clone())
}

/// The mean of `x` over `axes` and `1 / sqrt(variance + eps)`, both kept.
fn moments(im: &mut Importer, x: &Var, axes: &[usize], eps: f64) -> (Var, Var) {
    let mu = mean(im, x, axes, |e| e.to_string());
    let m = kept(&mu, axes);
    // The deviation's mean square reads the mean at the result's point,
    // which the kept axes (size 1) read at 0.
    let var = mean(im, x, axes, |e| format!("({e} - {m}) * ({e} - {m})"));
    let rhs = format!(
        "1 / sqrt({} + {})",
        read(&var, &point(var.shape.len())),
        float(eps)
    );
    let inv = im.b.compute("=", &rhs, &[], x.dtype, var.shape.clone());
    (mu, inv)
}

/// `x` normalized over `axes` by its mean `mu` (none: not centered) and
/// inverse deviation `inv`, times the scale then plus the bias (each an
/// expression read at the point), if given.
fn normalized(
    im: &mut Importer,
    x: &Var,
    axes: &[usize],
    mu: Option<&Var>,
    inv: &Var,
    [scale, bias]: [Option<String>; 2],
) -> Var {
    let here = read(x, &point(x.shape.len()));
    let centered = match mu {
        Some(mu) => format!("({here} - {})", kept(mu, axes)),
        None => here,
    };
    let mut rhs = format!("{centered} * {}", kept(inv, axes));
    if let Some(s) = scale {
        rhs = format!("{rhs} * {s}");
    }
    if let Some(b) = bias {
        rhs = format!("{rhs} + {b}");
    }
    im.b.compute("=", &rhs, &[], x.dtype, x.shape.clone())
}

/// A parameter read at the point of `x` under broadcasting aligned at the
/// right, checked to broadcast to the normalized trailing shape (the axes
/// from `from` on).
fn trailing(n: &Node, what: &str, p: &Var, x: &Var, from: usize) -> Result<String, String> {
    let r = x.shape.len();
    let fits = p.shape.len() <= r
        && p.shape.iter().rev().enumerate().all(|(k, &d)| {
            let e = x.shape[r - 1 - k];
            d == 1 || d == e && r - 1 - k >= from
        });
    if !fits || p.dtype != x.dtype {
        return Err(n.error(format!(
            "{what} {} {:?} does not broadcast to the normalized shape {:?}",
            p.dtype,
            p.shape,
            &x.shape[from..]
        )));
    }
    Ok(map::read(p, &x.shape))
}

/// The input of `LayerNormalization` or `RMSNormalization`, its `axis`,
/// the axes from it on, which are normalized, and `epsilon`.
fn trailing_axes(im: &mut Importer, n: &Node) -> Result<(Var, usize, Vec<usize>, f64), String> {
    let x = im.var(n, 0)?;
    float_input(n, &x)?;
    let r = x.shape.len();
    let a = axis(n, n.int("axis")?.unwrap_or(-1), r.max(1))?;
    let eps = f64::from(n.float("epsilon")?.unwrap_or(1e-5));
    if n.int("stash_type")?.unwrap_or(1) != 1 {
        return Err(n.error("stash_type other than 1 (float32) is not supported"));
    }
    Ok((x, a, (a..r).collect(), eps))
}

/// `LayerNormalization` over the axes from `axis` on, with the optional
/// `Mean` and `InvStdDev` outputs.
pub fn layernorm(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 3)?;
    let (x, a, axes, eps) = trailing_axes(im, n)?;
    let (mu, inv) = moments(im, &x, &axes, eps);
    let scale = im.var(n, 1)?;
    let s = trailing(n, "the scale", &scale, &x, a)?;
    let b = match im.optional_var(n, 2)? {
        Some(b) => Some(trailing(n, "the bias", &b, &x, a)?),
        None => None,
    };
    let y = normalized(im, &x, &axes, Some(&mu), &inv, [Some(s), b]);
    im.set(n, 0, Value::Var(y));
    im.set(n, 1, Value::Var(mu));
    im.set(n, 2, Value::Var(inv));
    Ok(())
}

/// `RMSNormalization`: `x / sqrt(mean(x^2) + epsilon) * scale` over the
/// axes from `axis` on.
pub fn rms(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let (x, a, axes, eps) = trailing_axes(im, n)?;
    let square = mean(im, &x, &axes, |e| format!("{e} * {e}"));
    let rhs = format!(
        "1 / sqrt({} + {})",
        read(&square, &point(x.shape.len())),
        float(eps)
    );
    let inv = im.b.compute("=", &rhs, &[], x.dtype, square.shape.clone());
    let scale = im.var(n, 1)?;
    let s = trailing(n, "the scale", &scale, &x, a)?;
    let y = normalized(im, &x, &axes, None, &inv, [Some(s), None]);
    im.set(n, 0, Value::Var(y));
    Ok(())
}

/// A per-channel parameter (`[C]`) read at the point of an N x C x ...
/// input, `index` giving the channel.
fn per_channel(
    n: &Node,
    what: &str,
    p: &Var,
    x: &Var,
    count: usize,
    index: &str,
) -> Result<String, String> {
    if p.shape != [count] || p.dtype != x.dtype {
        return Err(n.error(format!(
            "{what} is {} {:?}, not {} [{count}]",
            p.dtype, p.shape, x.dtype
        )));
    }
    Ok(format!("{}({index})", p.name))
}

/// `InstanceNormalization` (each channel of each item over its spatial
/// axes) and `MeanVarianceNormalization` (over `axes`, no scale).
pub fn instance(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let x = im.var(n, 0)?;
    float_input(n, &x)?;
    let r = x.shape.len();
    if n.op == "MeanVarianceNormalization" {
        let axes: Vec<usize> = match n.ints("axes")? {
            Some(a) => a.iter().map(|&a| axis(n, a, r)).collect::<Result<_, _>>()?,
            None => vec![0, 2, 3],
        };
        if axes.iter().any(|&k| k >= r) {
            return Err(n.error(format!("axes {axes:?} for an input of rank {r}")));
        }
        // No epsilon: the ONNX function divides by the deviation itself.
        let (mu, inv) = moments(im, &x, &axes, 0.0);
        let y = normalized(im, &x, &axes, Some(&mu), &inv, [None, None]);
        im.set(n, 0, Value::Var(y));
        return Ok(());
    }
    if r < 3 {
        return Err(n.error(format!("an input of rank {r} (N x C x spatial is needed)")));
    }
    let eps = f64::from(n.float("epsilon")?.unwrap_or(1e-5));
    let axes: Vec<usize> = (2..r).collect();
    let (mu, inv) = moments(im, &x, &axes, eps);
    let c = x.shape[1];
    let (scale, bias) = (im.var(n, 1)?, im.var(n, 2)?);
    let s = per_channel(n, "the scale", &scale, &x, c, "_i1")?;
    let b = per_channel(n, "the bias", &bias, &x, c, "_i1")?;
    let y = normalized(im, &x, &axes, Some(&mu), &inv, [Some(s), Some(b)]);
    im.set(n, 0, Value::Var(y));
    Ok(())
}

/// `GroupNormalization`: the channels in `num_groups` groups, each group
/// of each item normalized over its channels and spatial axes; the scale
/// and bias are per channel (version 21) or per group (version 18).
pub fn group(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let x = im.var(n, 0)?;
    float_input(n, &x)?;
    let r = x.shape.len();
    let eps = f64::from(n.float("epsilon")?.unwrap_or(1e-5));
    let groups = n
        .int("num_groups")?
        .ok_or_else(|| n.error("attribute `num_groups` is required"))?;
    if n.int("stash_type")?.unwrap_or(1) != 1 {
        return Err(n.error("stash_type other than 1 (float32) is not supported"));
    }
    let c = *x
        .shape
        .get(1)
        .ok_or_else(|| n.error("the input has no channel axis"))?;
    let g = usize::try_from(groups)
        .ok()
        .filter(|&g| g > 0 && c % g == 0)
        .ok_or_else(|| n.error(format!("{groups} groups do not divide {c} channels")))?;
    let cg = c / g;
    // The statistics per item and group: over the group's channels and
    // every spatial point.
    let spatial: Vec<String> = (2..r).map(|k| format!("_r{k}")).collect();
    let mut index = vec!["_i0".to_string(), format!("_i1 * {cg} + _rc")];
    index.extend(spatial.iter().cloned());
    let mut ranges = vec![format!("_rc in 0:{cg}")];
    ranges.extend((2..r).map(|k| format!("_r{k} in 0:{}", x.shape[k])));
    let count = cg * x.shape[2..].iter().product::<usize>();
    let element = read(&x, &index);
    let sum =
        im.b.compute("+=!", &element, &ranges, x.dtype, vec![x.shape[0], g]);
    let mu = im.b.compute(
        "=",
        &format!("{}(_i0, _i1) / {count}", sum.name),
        &[],
        x.dtype,
        vec![x.shape[0], g],
    );
    let m = format!("{}(_i0, _i1)", mu.name);
    let dev = im.b.compute(
        "+=!",
        &format!("({element} - {m}) * ({element} - {m})"),
        &ranges,
        x.dtype,
        vec![x.shape[0], g],
    );
    let inv = im.b.compute(
        "=",
        &format!(
            "1 / sqrt({}(_i0, _i1) / {count} + {})",
            dev.name,
            float(eps)
        ),
        &[],
        x.dtype,
        vec![x.shape[0], g],
    );
    let (scale, bias) = (im.var(n, 1)?, im.var(n, 2)?);
    let (count, index) = if im.version(n) >= 21 {
        (c, "_i1".to_string())
    } else {
        (g, format!("_i1 / {cg}"))
    };
    let s = per_channel(n, "the scale", &scale, &x, count, &index)?;
    let b = per_channel(n, "the bias", &bias, &x, count, &index)?;
    let here = read(&x, &point(r));
    let group = format!("_i0, _i1 / {cg}");
    let rhs = format!(
        "({here} - {}({group})) * {}({group}) * {s} + {b}",
        mu.name, inv.name
    );
    let y = im.b.compute("=", &rhs, &[], x.dtype, x.shape.clone());
    im.set(n, 0, Value::Var(y));
    Ok(())
}

/// `LRN`: each element divided by `(bias + alpha / size * s)^beta`, `s`
/// the sum of squares over the `size` channels around its own (from
/// `floor((size - 1) / 2)` before to `ceil((size - 1) / 2)` after; those
/// past the ends are not read).
pub fn lrn(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let x = im.var(n, 0)?;
    float_input(n, &x)?;
    if x.shape.len() < 3 {
        return Err(n.error(format!("input {:?}: LRN needs N x C x spatial", x.shape)));
    }
    let size = n
        .int("size")?
        .filter(|&s| s > 0)
        .ok_or_else(|| n.error("attribute `size` (positive) is required"))?;
    let alpha = n.float("alpha")?.unwrap_or(1e-4);
    let beta = n.float("beta")?.unwrap_or(0.75);
    let bias = n.float("bias")?.unwrap_or(1.0);
    let before = (size - 1) / 2;
    let mut at = point(x.shape.len());
    at[1] = format!("_i1 + _c - {before}");
    let element = read(&x, &at);
    let squares = im.b.compute(
        "+=!",
        &format!("{element} * {element}"),
        &[format!("_c in 0:{size}")],
        x.dtype,
        x.shape.clone(),
    );
    let here = point(x.shape.len());
    let rhs = format!(
        "{} / pow({} + {} * {}, {})",
        read(&x, &here),
        float(f64::from(bias)),
        float(f64::from(alpha) / size as f64),
        read(&squares, &here),
        float(f64::from(beta))
    );
    let y = im.b.compute("=", &rhs, &[], x.dtype, x.shape.clone());
    im.set(n, 0, Value::Var(y));
    Ok(())
}

/// `BatchNormalization` in training mode: normalized by the batch's own
/// mean and (population) variance per channel, with the running mean and
/// variance updated by `momentum` as outputs 2 and 3.
pub fn batchnorm_training(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 3)?;
    let eps = f64::from(n.float("epsilon")?.unwrap_or(1e-5));
    let momentum = f64::from(n.float("momentum")?.unwrap_or(0.9));
    let x = im.var(n, 0)?;
    float_input(n, &x)?;
    let (c, params) = super::linear::batchnorm_params(im, n, &x)?;
    let r = x.shape.len();
    let count: usize = x
        .shape
        .iter()
        .enumerate()
        .filter(|&(k, _)| k != 1)
        .map(|(_, d)| d)
        .product();
    // The channel is the result's `_i0`; the other axes are reduced.
    let mut at: Vec<String> = (0..r).map(|k| format!("_r{k}")).collect();
    at[1] = "_i0".to_string();
    let ranges: Vec<String> = (0..r)
        .filter(|&k| k != 1)
        .map(|k| format!("_r{k} in 0:{}", x.shape[k]))
        .collect();
    let element = read(&x, &at);
    let t = x.dtype;
    let mean =
        im.b.compute("+=!", &format!("{element} / {count}"), &ranges, t, vec![c]);
    let centred = format!("({element} - {})", read(&mean, &["_i0".into()]));
    let var = im.b.compute(
        "+=!",
        &format!("{centred} * {centred} / {count}"),
        &ranges,
        t,
        vec![c],
    );
    let channel = ["_i1".to_string()];
    let here = point(r);
    let y = im.b.compute(
        "=",
        &format!(
            "{} * ({} - {}) / sqrt({} + {}) + {}",
            read(&params[0], &channel),
            read(&x, &here),
            read(&mean, &channel),
            read(&var, &channel),
            float(eps),
            read(&params[1], &channel)
        ),
        &[],
        t,
        x.shape.clone(),
    );
    im.set(n, 0, Value::Var(y));
    let c0 = ["_i0".to_string()];
    for (k, (running, batch)) in [(&params[2], &mean), (&params[3], &var)]
        .into_iter()
        .enumerate()
    {
        let updated = im.b.compute(
            "=",
            &format!(
                "{} * {} + {} * {}",
                read(running, &c0),
                float(momentum),
                read(batch, &c0),
                float(1.0 - momentum)
            ),
            &[],
            t,
            vec![c],
        );
        im.set(n, 1 + k, Value::Var(updated));
    }
    Ok(())
}
