//! `Resize` (versions 11 on) and `Upsample` as one comprehension in the
//! model def, from tables the import computes.
//!
//! Resizing is separable: along each resized axis, output index `i` reads
//! a few input indices (1 for `nearest`, 2 for `linear`, 4 for `cubic`)
//! with coefficients, both functions of `i` alone. The import computes
//! them as the ONNX reference does (`coordinate_transformation_mode`,
//! `nearest_mode`, `cubic_coeff_a`, `exclude_outside`; neighbours of the
//! input padded by its edge), as an index table `I_k` and a coefficient
//! table `W_k` per resized axis, and the model def sums, in float64,
//! `X(.., I_k(i_k, p_k), ..) * prod_k W_k(i_k, p_k)` over the taps `p_k`.
//! With `tf_crop_and_resize`, a point whose source falls outside the input
//! along any axis is `extrapolation_value`. An axis the resize leaves as
//! it is (scale 1, the same size, the whole region) is read directly.
//!
//! Not implemented, and refused by name: `antialias`, and `Resize` 10
//! (whose `nearest` rounds differently).

use ir::DType;
use tensor::Tensor;

use super::point::point;
use crate::build::{float, Node, Value};
use crate::import::Importer;

/// The interpolation: the coefficients of the taps at `ratio`, the
/// source coordinate's distance past its floor (1 when it is whole).
#[derive(Clone, Copy)]
enum Mode {
    Nearest(Rounding),
    Linear,
    Cubic(f64),
}

#[derive(Clone, Copy)]
enum Rounding {
    PreferFloor,
    PreferCeil,
    Floor,
    Ceil,
}

impl Mode {
    fn coefficients(self, ratio: f64, whole: bool) -> Vec<f64> {
        let b = |c: bool| f64::from(u8::from(c));
        match self {
            Mode::Nearest(_) if whole => vec![0.0, 1.0],
            Mode::Nearest(Rounding::PreferFloor) => vec![b(ratio <= 0.5), b(ratio > 0.5)],
            Mode::Nearest(Rounding::PreferCeil) => vec![b(ratio < 0.5), b(ratio >= 0.5)],
            Mode::Nearest(Rounding::Floor) => vec![1.0, 0.0],
            Mode::Nearest(Rounding::Ceil) => vec![0.0, 1.0],
            Mode::Linear => vec![1.0 - ratio, ratio],
            Mode::Cubic(a) => {
                let (r, s) = (ratio, 1.0 - ratio);
                vec![
                    ((a * (r + 1.0) - 5.0 * a) * (r + 1.0) + 8.0 * a) * (r + 1.0) - 4.0 * a,
                    ((a + 2.0) * r - (a + 3.0)) * r * r + 1.0,
                    ((a + 2.0) * s - (a + 3.0)) * s * s + 1.0,
                    ((a * (s + 1.0) - 5.0 * a) * (s + 1.0) + 8.0 * a) * (s + 1.0) - 4.0 * a,
                ]
            }
        }
    }
}

/// One resized axis: per output index, its taps' input indices (clamped
/// into the input) and coefficients, and whether it extrapolates.
struct Taps {
    index: Vec<Vec<i64>>,
    coefficient: Vec<Vec<f64>>,
    outside: Vec<bool>,
}

/// The coordinate transformation and what it needs.
struct Transform<'a> {
    mode: &'a str,
    roi: (f64, f64),
}

impl Transform<'_> {
    /// The source coordinate of output index `y` (as float64), and whether
    /// it falls outside the input (`tf_crop_and_resize` only).
    fn source(&self, y: f64, scale: f64, input: usize, output: usize) -> (f64, bool) {
        let (w, out) = (input as f64, scale * input as f64);
        let x = match self.mode {
            "align_corners" if out == 1.0 => 0.0,
            "align_corners" => y * (w - 1.0) / (out - 1.0),
            "asymmetric" => y / scale,
            "tf_crop_and_resize" => {
                let (a, b) = self.roi;
                let x = if out == 1.0 {
                    (b - a) * (w - 1.0) / 2.0
                } else {
                    y * (b - a) * (w - 1.0) / (out - 1.0)
                };
                let x = x + a * (w - 1.0);
                return (x, x < 0.0 || x > w - 1.0);
            }
            "pytorch_half_pixel" if out == 1.0 => -0.5,
            "half_pixel_symmetric" => {
                let adjustment = output as f64 / out;
                let offset = w / 2.0 * (1.0 - adjustment);
                offset + (y + 0.5) / scale - 0.5
            }
            // half_pixel, and pytorch_half_pixel of more than one point.
            _ => (y + 0.5) / scale - 0.5,
        };
        (x, false)
    }
}

fn taps(
    mode: Mode,
    transform: &Transform,
    scale: f64,
    input: usize,
    output: usize,
    exclude_outside: bool,
) -> Taps {
    let mut t = Taps {
        index: Vec::new(),
        coefficient: Vec::new(),
        outside: Vec::new(),
    };
    for y in 0..output {
        let (x, outside) = transform.source(y as f64, scale, input, output);
        let whole = x == x.floor();
        let ratio = if whole { 1.0 } else { x - x.floor() };
        let mut c = mode.coefficients(ratio, whole);
        let n = c.len() as i64;
        // The reference's neighbours: the n nearest indices of the input
        // padded by ceil(n / 2) at each end, lower ones first on a tie.
        let pad = (n + 1) / 2;
        let padded = x + pad as f64;
        let p = padded.floor() as i64;
        let frac = padded - padded.floor();
        let offset = if n % 2 == 0 {
            if frac == 0.0 {
                -(n / 2)
            } else {
                -(n / 2) + 1
            }
        } else if frac <= 0.5 {
            -((n - 1) / 2)
        } else {
            -((n - 1) / 2) + 1
        };
        let start = p + offset - pad;
        let idx: Vec<i64> = (start..start + n).collect();
        if exclude_outside {
            for (k, &i) in idx.iter().enumerate() {
                if i < 0 || i >= input as i64 {
                    c[k] = 0.0;
                }
            }
            let sum: f64 = c.iter().sum();
            let sum = if sum == 0.0 { 1.0 } else { sum };
            c.iter_mut().for_each(|v| *v /= sum);
        }
        t.index
            .push(idx.iter().map(|&i| i.clamp(0, input as i64 - 1)).collect());
        t.coefficient.push(c);
        t.outside.push(outside);
    }
    t
}

/// An optional input's values, absent when not given or empty.
fn optional(im: &Importer, n: &Node, k: usize, what: &str) -> Result<Option<Tensor>, String> {
    match n.input(k) {
        Some(_) => {
            let t = im.constant(n, k, what)?;
            Ok((!t.is_empty()).then_some(t))
        }
        None => Ok(None),
    }
}

pub fn resize(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let x = im.var(n, 0)?;
    let r = x.shape.len();
    let upsample = n.op == "Upsample";
    if n.int("antialias")?.unwrap_or(0) != 0 {
        return Err(n.error("antialias = 1 is not supported"));
    }
    let axes: Vec<usize> = match n.ints("axes")? {
        Some(a) => a
            .iter()
            .map(|&a| super::axis(n, a, r))
            .collect::<Result<_, _>>()?,
        None => (0..r).collect(),
    };
    // Upsample: its scales (an input from version 9, before an attribute).
    let (roi, scales, sizes) = if upsample {
        let scales = match n.floats("scales")? {
            Some(s) => s.iter().map(|&v| f64::from(v)).collect(),
            None => im.constant(n, 1, "the scales")?.to_f64_vec(),
        };
        (None, Some(scales), None)
    } else {
        (
            optional(im, n, 1, "the region")?.map(|t| t.to_f64_vec()),
            optional(im, n, 2, "the scales")?.map(|t| t.to_f64_vec()),
            optional(im, n, 3, "the sizes")?.map(|t| super::ints(&t)),
        )
    };
    let per_axis = |v: &[f64], default: f64| -> Vec<f64> {
        let mut all = vec![default; r];
        for (k, &a) in axes.iter().enumerate() {
            all[a] = v[k];
        }
        all
    };
    if let Some(v) = scales
        .as_ref()
        .map(Vec::len)
        .or(sizes.as_ref().map(Vec::len))
    {
        if v != axes.len() {
            return Err(n.error(format!("{v} scales or sizes for {} axes", axes.len())));
        }
    }
    let (scale, out): (Vec<f64>, Vec<usize>) = match (&scales, &sizes) {
        (Some(s), None) => {
            let s = per_axis(s, 1.0);
            if s.iter().any(|&v| v <= 0.0) {
                return Err(n.error(format!("scales {s:?} (positive ones are needed)")));
            }
            let out = (0..r)
                .map(|k| (s[k] * x.shape[k] as f64) as usize)
                .collect();
            (s, out)
        }
        (None, Some(sz)) => {
            let sz: Vec<f64> = sz.iter().map(|&v| v as f64).collect();
            let given = per_axis(&sz, 0.0);
            let mut out: Vec<f64> = (0..r)
                .map(|k| {
                    if axes.contains(&k) {
                        given[k]
                    } else {
                        x.shape[k] as f64
                    }
                })
                .collect();
            let mut s: Vec<f64> = (0..r).map(|k| out[k] / x.shape[k] as f64).collect();
            let policy = n
                .string("keep_aspect_ratio_policy")?
                .unwrap_or_else(|| "stretch".to_string());
            if policy != "stretch" {
                let picked = axes.iter().map(|&a| s[a]);
                let one = match policy.as_str() {
                    "not_larger" => picked.fold(f64::INFINITY, f64::min),
                    "not_smaller" => picked.fold(0.0, f64::max),
                    other => {
                        return Err(n.error(format!(
                            "keep_aspect_ratio_policy `{other}` is not supported"
                        )))
                    }
                };
                for &a in &axes {
                    s[a] = one;
                    out[a] = (one * x.shape[a] as f64 + 0.5).floor();
                }
            }
            (s, out.iter().map(|&v| v as usize).collect())
        }
        _ => return Err(n.error("exactly one of the scales and the sizes must be given")),
    };
    if out.contains(&0) {
        return Err(n.error(format!("the output {out:?} has an empty axis")));
    }
    let mode_name = n.string("mode")?.unwrap_or_else(|| "nearest".to_string());
    let transform_name = if upsample {
        "asymmetric".to_string()
    } else {
        n.string("coordinate_transformation_mode")?
            .unwrap_or_else(|| "half_pixel".to_string())
    };
    let mode = match mode_name.as_str() {
        "nearest" if upsample => Mode::Nearest(Rounding::Floor),
        "nearest" => Mode::Nearest(
            match n
                .string("nearest_mode")?
                .as_deref()
                .unwrap_or("round_prefer_floor")
            {
                "round_prefer_floor" => Rounding::PreferFloor,
                "round_prefer_ceil" => Rounding::PreferCeil,
                "floor" => Rounding::Floor,
                "ceil" => Rounding::Ceil,
                other => return Err(n.error(format!("nearest_mode `{other}` is not supported"))),
            },
        ),
        "linear" | "bilinear" | "trilinear" => Mode::Linear,
        "cubic" if !upsample => Mode::Cubic(f64::from(n.float("cubic_coeff_a")?.unwrap_or(-0.75))),
        other => return Err(n.error(format!("mode `{other}` is not supported"))),
    };
    const TRANSFORMS: [&str; 6] = [
        "half_pixel",
        "half_pixel_symmetric",
        "pytorch_half_pixel",
        "align_corners",
        "asymmetric",
        "tf_crop_and_resize",
    ];
    if !TRANSFORMS.contains(&transform_name.as_str()) {
        return Err(n.error(format!(
            "coordinate_transformation_mode `{transform_name}` is not supported"
        )));
    }
    let crop = transform_name == "tf_crop_and_resize";
    let roi_all = match (&roi, crop) {
        (Some(v), true) if v.len() == 2 * axes.len() => {
            let mut all = [vec![0.0; r], vec![1.0; r]].concat();
            for (k, &a) in axes.iter().enumerate() {
                all[a] = v[k];
                all[r + a] = v[axes.len() + k];
            }
            all
        }
        (_, true) => return Err(n.error("tf_crop_and_resize needs a region of interest per axis")),
        _ => [vec![0.0; r], vec![1.0; r]].concat(),
    };
    let exclude = n.int("exclude_outside")?.unwrap_or(0) != 0;
    let extrapolation = f64::from(n.float("extrapolation_value")?.unwrap_or(0.0));
    if !x.dtype.is_float() && !x.dtype.is_int() {
        return Err(n.error(format!("Resize of {} is not supported", x.dtype)));
    }
    // The tables of each resized axis, and the read of each axis.
    let key = n.proto.output.first().cloned().unwrap_or_default();
    let mut read = point(r);
    let mut factors = Vec::new();
    let mut ranges = Vec::new();
    let mut outside = Vec::new();
    for k in 0..r {
        let roi_k = (roi_all[k], roi_all[r + k]);
        let same = (scale[k] - 1.0).abs() < 1e-9 && out[k] == x.shape[k] && roi_k == (0.0, 1.0);
        if same {
            continue;
        }
        let transform = Transform {
            mode: &transform_name,
            roi: roi_k,
        };
        let t = taps(mode, &transform, scale[k], x.shape[k], out[k], exclude);
        let width = t.index[0].len();
        let index = Tensor::from_i64(DType::I64, &[out[k], width], t.index.concat());
        let coefficient = Tensor::from_f64(DType::F64, &[out[k], width], t.coefficient.concat());
        let iv = im.b.weight(&format!("{key}#resize_index{k}"), &index);
        let cv =
            im.b.weight(&format!("{key}#resize_coefficient{k}"), &coefficient);
        read[k] = format!("{}(_i{k}, _p{k})", iv.name);
        factors.push(format!("{}(_i{k}, _p{k})", cv.name));
        ranges.push(format!("_p{k} in 0:{width}"));
        if crop && t.outside.iter().any(|&o| o) {
            let flags: Vec<i64> = t.outside.iter().map(|&o| i64::from(o)).collect();
            let fv = im.b.weight(
                &format!("{key}#resize_outside{k}"),
                &Tensor::from_i64(DType::I64, &[out[k]], flags),
            );
            outside.push(format!("{}(_i{k})", fv.name));
        }
    }
    if ranges.is_empty() {
        im.set(n, 0, Value::Var(x));
        return Ok(());
    }
    let term = format!(
        "float64({}({})) * {}",
        x.name,
        read.join(", "),
        factors.join(" * ")
    );
    let sum = im.b.compute("+=!", &term, &ranges, DType::F64, out.clone());
    let at = format!("{}({})", sum.name, point(r).join(", "));
    let value = if outside.is_empty() {
        at
    } else {
        format!(
            "{} > 0 ? {} : {at}",
            outside.join(" + "),
            float(extrapolation)
        )
    };
    let y = im.b.compute(
        "=",
        &format!("{}({value})", x.dtype.name()),
        &[],
        x.dtype,
        out,
    );
    im.set(n, 0, Value::Var(y));
    Ok(())
}
