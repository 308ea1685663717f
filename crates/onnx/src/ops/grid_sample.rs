//! `GridSample` of a 2-D or 3-D input as comprehensions in the model def,
//! as the ONNX reference computes it: for each spatial axis, the grid's
//! coordinate (its last component is the input's last axis) is mapped
//! from [-1, 1] onto the axis (`align_corners`), rounded half to even for
//! `nearest`, and, outside the axis's border, clamped (`border`) or
//! reflected (`reflection`); the output then sums the taps around it (1
//! for `nearest`, 2 for `linear`, 4 for `cubic`, per axis) with their
//! coefficients, each tap's index resolved by the padding mode: outside
//! the input a tap reads 0 (`zeros`), the edge (`border`) or its
//! reflection (`reflection`). Every read is clamped into the input; a
//! `zeros` tap outside is multiplied by 0.

use super::point::{point, read};
use crate::build::{float, Node, Value};
use crate::import::Importer;

/// `x` reflected into [lo, hi] by its near border, over and over, as the
/// reference's `_gs_reflect`.
fn reflect(x: &str, lo: f64, hi: f64) -> String {
    let (lo, hi, range) = (float(lo), float(hi), float(hi - lo));
    let side = |dx: String, near: &str, far: &str, sign: &str| {
        let count = format!("floor(({dx}) / {range})");
        let rest = format!("(({dx}) - {count} * {range})");
        format!(
            "(fmod({count}, 2) == 0 ? {near} {sign} {rest} : {far} {} {rest})",
            if sign == "+" { "-" } else { "+" }
        )
    };
    format!(
        "({x} < {lo} ? {} : ({x} > {hi} ? {} : {x}))",
        side(format!("{lo} - {x}"), &lo, &hi, "+"),
        side(format!("{x} - {hi}"), &hi, &lo, "-"),
    )
}

pub fn grid_sample(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let (x, grid) = (im.var(n, 0)?, im.var(n, 1)?);
    let r = x.shape.len();
    let d = r.saturating_sub(2);
    let fits = (4..=5).contains(&r)
        && grid.shape.len() == r
        && grid.shape[0] == x.shape[0]
        && grid.shape[r - 1] == d
        && x.dtype.is_float()
        && grid.dtype.is_float();
    if !fits {
        return Err(n.error(format!(
            "an input {} {:?} and a grid {} {:?} (N x C x spatial floats, and N x out x {d} float coordinates, are needed)",
            x.dtype, x.shape, grid.dtype, grid.shape
        )));
    }
    let align = n.int("align_corners")?.unwrap_or(0) != 0;
    let mode = n.string("mode")?.unwrap_or_else(|| {
        if im.version(n) >= 20 {
            "linear"
        } else {
            "bilinear"
        }
        .to_string()
    });
    let taps = match mode.as_str() {
        "nearest" => 1,
        "linear" | "bilinear" => 2,
        "cubic" | "bicubic" => 4,
        other => return Err(n.error(format!("mode `{other}` is not supported"))),
    };
    let padding = n
        .string("padding_mode")?
        .unwrap_or_else(|| "zeros".to_string());
    if !matches!(padding.as_str(), "zeros" | "border" | "reflection") {
        return Err(n.error(format!("padding_mode `{padding}` is not supported")));
    }
    let t = grid.dtype;
    // The grid's points: N x out...
    let out_shape: Vec<usize> = grid.shape[..r - 1].to_vec();
    let at = point(r - 1);
    // Per spatial axis, the source coordinate of each grid point.
    let mut coordinate = Vec::new();
    for i in 0..d {
        let len = x.shape[2 + i] as f64;
        let mut gi = at.clone();
        gi.push((d - 1 - i).to_string());
        let c = read(&grid, &gi);
        let mut v = if align {
            format!("({c} + 1) / 2 * {}", float(len - 1.0))
        } else {
            format!("(({c} + 1) * {} - 1) / 2", float(len))
        };
        if taps == 1 {
            v = "(_v - floor(_v) == 0.5 ? 2 * round(_v / 2) : round(_v))"
                .replace("_v", &format!("({v})"));
        }
        let first = im.b.compute("=", &v, &[], t, out_shape.clone());
        let v = read(&first, &at);
        let (lo, hi) = if align {
            (0.0, len - 1.0)
        } else {
            (-0.5, len - 0.5)
        };
        let adjusted = match padding.as_str() {
            "border" => format!(
                "({v} < {} || {v} > {} ? max(0, min({v}, {})) : {v})",
                float(lo),
                float(hi),
                float(len - 1.0)
            ),
            "reflection" => reflect(&v, lo, hi),
            _ => v,
        };
        coordinate.push(im.b.compute("=", &adjusted, &[], t, out_shape.clone()));
    }
    // The output: each tap of each axis, its index resolved by the
    // padding mode and its coefficient.
    let mut index = vec!["_i0".to_string(), "_i1".to_string()];
    let mut factors = Vec::new();
    let mut ranges = Vec::new();
    let here: Vec<String> = std::iter::once("_i0".to_string())
        .chain((0..d).map(|k| format!("_i{}", k + 2)))
        .collect();
    for (i, c) in coordinate.iter().enumerate() {
        let len = x.shape[2 + i];
        let v = read(c, &here);
        let (tap, coefficient) = match taps {
            1 => (format!("int64({v})"), None),
            2 => {
                let f = format!("({v} - floor({v}))");
                (
                    format!("int64(floor({v})) + _p{i}"),
                    Some(format!("(_p{i} == 0 ? 1 - {f} : {f})")),
                )
            }
            _ => {
                let f = format!("({v} - floor({v}))");
                let a = -0.75;
                let k = |s: String| {
                    format!(
                        "((({a} * ({s} + 1) - 5 * {a}) * ({s} + 1) + 8 * {a}) * ({s} + 1) - 4 * {a})"
                    )
                };
                let near = |s: String| format!("((({a} + 2) * {s} - ({a} + 3)) * {s} * {s} + 1)");
                let coefficient = format!(
                    "(_p{i} == 0 ? {} : (_p{i} == 1 ? {} : (_p{i} == 2 ? {} : {})))",
                    k(f.clone()),
                    near(f.clone()),
                    near(format!("(1 - {f})")),
                    k(format!("(1 - {f})")),
                );
                (format!("int64(floor({v})) - 1 + _p{i}"), Some(coefficient))
            }
        };
        if taps > 1 {
            ranges.push(format!("_p{i} in 0:{taps}"));
        }
        let last = len as i64 - 1;
        let resolved = match padding.as_str() {
            "reflection" => {
                let (lo, hi) = if align {
                    (0.0, last as f64)
                } else {
                    (-0.5, len as f64 - 0.5)
                };
                format!("int64({})", reflect(&format!("float64({tap})"), lo, hi))
            }
            _ => tap.clone(),
        };
        index.push(format!("max(0, min({resolved}, {last}))"));
        if padding == "zeros" {
            factors.push(format!("({tap} >= 0 && {tap} <= {last} ? 1 : 0)"));
        }
        if let Some(c) = coefficient {
            factors.push(c);
        }
    }
    let mut shape = vec![x.shape[0], x.shape[1]];
    shape.extend(&grid.shape[1..r - 1]);
    let mut term = read(&x, &index);
    for f in &factors {
        term = format!("{term} * {}({f})", x.dtype.name());
    }
    let y = if ranges.is_empty() {
        im.b.compute("=", &term, &[], x.dtype, shape)
    } else {
        im.b.compute("+=!", &term, &ranges, x.dtype, shape)
    };
    im.set(n, 0, Value::Var(y));
    Ok(())
}
