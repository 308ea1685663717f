//! The floating-point comparison, for programs with non-linear parts.
//!
//! Both defs run in the reference interpreter (`Mode::Real`) on the same
//! seeded random inputs (floats uniform in `[-1, 1)`, integers 0 or 1 so
//! that they index any table), several draws, and every element of every output
//! is compared (so boundary elements are always among them): floats within
//! a relative tolerance of the output's largest magnitude, integers and
//! `bool` exactly, NaN equal to NaN. This is weaker than the exact test: a
//! difference smaller than the tolerance, or one no draw exposes, passes.

use std::collections::{BTreeSet, HashMap};

use interp::{Arg, Mode, Tensor};
use ir::{DType, Def, Param, Program, Value};

use super::region::{merge, Region};

/// The relative tolerance for an output type.
pub(crate) fn tolerance(t: DType) -> f64 {
    if t == DType::F64 {
        1e-9
    } else {
        1e-4
    }
}

/// The regions where the outputs of `a` and `b` differ on some draw.
pub(crate) fn compare(
    a: (&Program, &Def, &HashMap<String, i64>),
    b: (&Program, &Def, &HashMap<String, i64>),
    seed: u64,
    draws: usize,
    progress: &interp::Reporter,
) -> Result<Vec<Region>, String> {
    // Elements found on any draw, each once: regions to merge must not
    // overlap.
    let mut differ: BTreeSet<Region> = BTreeSet::new();
    for draw in 0..draws {
        let draw_seed = seed
            .wrapping_mul(1_000_003)
            .wrapping_add(draw as u64 * 7919);
        let (args_a, args_b) = arguments(a.1, b.1, a.2, draw_seed)?;
        let run = |(p, d, sizes): (&Program, &Def, &HashMap<String, i64>), args| {
            interp::run_reporting(p, &d.name, args, sizes, Mode::Real, progress).map_err(|e| {
                let at = e
                    .stmt
                    .map_or(String::new(), |s| format!(" statement {}", s + 1));
                format!("running `{}`{at}: {}", d.name, e.message)
            })
        };
        let (out_a, out_b) = (run(a, &args_a)?, run(b, &args_b)?);
        for (k, ((_, x), (_, y))) in out_a.iter().zip(&out_b).enumerate() {
            differ.extend(differences(k, x, y));
        }
    }
    Ok(merge(differ.into_iter().collect()))
}

type Args = HashMap<String, Arg>;

/// The same random arguments for both defs, by parameter position.
fn arguments(
    a: &Def,
    b: &Def,
    sizes: &HashMap<String, i64>,
    seed: u64,
) -> Result<(Args, Args), String> {
    let (mut x, mut y) = (HashMap::new(), HashMap::new());
    for (k, (p, q)) in a.params.iter().zip(&b.params).enumerate() {
        let s = seed.wrapping_add(k as u64);
        let arg = match p {
            Param::Tensor(t) => {
                let decl = a
                    .tensor(t)
                    .ok_or_else(|| format!("`{t}` has no declaration"))?;
                let shape = interp::param_shape(a, t, sizes).map_err(|e| e.message)?;
                Arg::Tensor(if decl.dtype.is_int() {
                    // Random 0s and 1s: indices valid for any table.
                    let bits = Tensor::random(DType::Bool, &shape, s).to_f64_vec();
                    Tensor::from_i64(decl.dtype, &shape, bits.iter().map(|&b| b as i64).collect())
                } else {
                    Tensor::random(decl.dtype, &shape, s)
                })
            }
            Param::Scalar { name, dtype } if dtype.is_int() => Arg::Scalar(Value::Int(
                *sizes
                    .get(name)
                    .ok_or_else(|| format!("scalar `{name}` has no value"))?,
            )),
            Param::Scalar { .. } => {
                // A float scalar in [0.5, 1.5): away from 0, so a division
                // by it is harmless.
                let r = Tensor::random(DType::F64, &[1], s).to_f64_vec()[0];
                Arg::Scalar(Value::Float(1.0 + r / 2.0))
            }
        };
        x.insert(p.name().to_string(), arg.clone());
        y.insert(q.name().to_string(), arg);
    }
    Ok((x, y))
}

/// The elements of output `k` where `x` and `y` differ, as one-element
/// regions (merged by the caller).
fn differences(k: usize, x: &Tensor, y: &Tensor) -> Vec<Region> {
    let (u, v) = (x.to_f64_vec(), y.to_f64_vec());
    let tol = tolerance(x.dtype());
    let scale = u.iter().fold(
        0.0f64,
        |m, a| if a.is_finite() { m.max(a.abs()) } else { m },
    );
    let exact = !x.dtype().is_float();
    let mut out = Vec::new();
    for (flat, (&a, &b)) in u.iter().zip(&v).enumerate() {
        let same = if exact {
            a == b
        } else {
            agree(a, b, tol, scale)
        };
        if !same {
            out.push(Region {
                output: k,
                ranges: unravel(flat, x.shape())
                    .into_iter()
                    .map(|i| (i, i + 1))
                    .collect(),
            });
        }
    }
    out
}

/// Whether two float elements agree: both NaN, equal, or within `tol` of
/// their magnitude plus `scale` (the output's largest magnitude, so that
/// elements that cancel to near 0 are not held to a tighter bound).
pub fn agree(a: f64, b: f64, tol: f64, scale: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a == b || (a - b).abs() <= tol * (a.abs().max(b.abs()) + scale)
}

fn unravel(mut flat: usize, shape: &[usize]) -> Vec<usize> {
    let mut index = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        index[d] = flat % shape[d].max(1);
        flat /= shape[d].max(1);
    }
    index
}
