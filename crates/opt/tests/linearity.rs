//! The split's classification is sound: every prelude def that splits into
//! one multi-linear subprogram is, run by the interpreter, affine in each
//! of its float tensor inputs, the others fixed: f(X + Y) + f(0) equals
//! f(X) + f(Y) on random X and Y (within float rounding). The operators
//! that are linear by nature (matmuls, convolutions, pooling by sums,
//! layout operators) are recognized as such, and the activations and
//! normalizations are cut. (Division by a tensor is cut even when that
//! tensor is a constant, as `avgpool2d`'s count of valid points is: the
//! classification is conservative, never the other way.)

use std::collections::HashMap;

use interp::{Arg, Mode, Tensor};
use ir::{DType, Def, Param, Program, Value};
use opt::PartKind;

use testkit::prelude;

/// Arguments for `def` with every size 4: scalars fixed, tensors seeded
/// random (integer tensors 0 and 1, valid indices). `None` when the def
/// does not bind at that size.
fn arguments(def: &Def, seed: u64) -> Option<(HashMap<String, Arg>, HashMap<String, i64>)> {
    let given: HashMap<String, i64> = def.size_symbols().into_iter().map(|s| (s, 4)).collect();
    let mut args: HashMap<String, Arg> = HashMap::new();
    for p in &def.params {
        if let Param::Scalar { name, dtype } = p {
            let v = if dtype.is_float() {
                Value::Float(0.5)
            } else {
                Value::Int(1)
            };
            args.insert(name.clone(), Arg::Scalar(v));
        }
    }
    let bound = interp::bind_sizes(def, &args, &given).ok()?;
    for (k, p) in def.params.iter().enumerate() {
        if let Param::Tensor(t) = p {
            let shape = interp::param_shape(def, t, &bound).ok()?;
            let dtype = def.tensor(t).map_or(DType::F32, |x| x.dtype);
            let tensor = Tensor::sample(dtype, &shape, seed + k as u64);
            args.insert(t.clone(), Arg::Tensor(tensor));
        }
    }
    Some((args, given))
}

fn outputs(
    p: &Program,
    def: &Def,
    args: &HashMap<String, Arg>,
    sizes: &HashMap<String, i64>,
) -> Vec<Vec<f64>> {
    interp::run(p, &def.name, args, sizes, Mode::Real)
        .unwrap_or_else(|e| panic!("{}: {}", def.name, e.message))
        .into_iter()
        .map(|(_, t)| t.to_f64_vec())
        .collect()
}

fn with(args: &HashMap<String, Arg>, name: &str, t: Tensor) -> HashMap<String, Arg> {
    let mut out = args.clone();
    out.insert(name.to_string(), Arg::Tensor(t));
    out
}

/// Whether `def` is affine in its float tensor input `name` at `args`.
fn affine_in(
    p: &Program,
    def: &Def,
    args: &HashMap<String, Arg>,
    sizes: &HashMap<String, i64>,
    name: &str,
) -> bool {
    let Some(Arg::Tensor(x)) = args.get(name) else {
        return true;
    };
    let y = Tensor::random(x.dtype(), x.shape(), 9_001);
    let sum = Tensor::from_f64(
        x.dtype(),
        x.shape(),
        x.to_f64_vec()
            .iter()
            .zip(y.to_f64_vec())
            .map(|(a, b)| a + b)
            .collect(),
    );
    let zero = Tensor::zeros(x.dtype(), x.shape());
    let fx = outputs(p, def, args, sizes);
    let fy = outputs(p, def, &with(args, name, y), sizes);
    let fs = outputs(p, def, &with(args, name, sum), sizes);
    let f0 = outputs(p, def, &with(args, name, zero), sizes);
    fx.iter()
        .zip(&fy)
        .zip(&fs)
        .zip(&f0)
        .all(|(((a, b), s), z)| {
            let scale = a.iter().chain(b).map(|v| v.abs()).fold(1.0, f64::max);
            a.iter()
                .zip(b)
                .zip(s)
                .zip(z)
                .all(|(((a, b), s), z)| (s + z - a - b).abs() <= 1e-4 * scale)
        })
}

#[test]
fn defs_split_as_one_multilinear_subprogram_are_affine_in_each_input() {
    let p = prelude();
    let mut checked = Vec::new();
    for def in &p.defs {
        let split = opt::split(p, &def.name).unwrap();
        let whole = matches!(split.parts.as_slice(), [part] if matches!(part.kind, PartKind::MultiLinear { .. }));
        if !whole {
            continue;
        }
        let Some((args, sizes)) = arguments(def, 11) else {
            continue;
        };
        // Some defs need sizes other than 4 (a slice's bounds); skip them.
        if interp::run(p, &def.name, &args, &sizes, Mode::Real).is_err() {
            continue;
        }
        for t in def.tensor_params() {
            if t.dtype.is_float() {
                assert!(
                    affine_in(p, def, &args, &sizes, &t.name),
                    "`{}` is split as multi-linear but is not affine in `{}`",
                    def.name,
                    t.name
                );
            }
        }
        checked.push(def.name.clone());
    }
    assert!(
        checked.len() >= 150,
        "only {} defs checked: {checked:?}",
        checked.len()
    );
}

#[test]
fn linear_operators_are_recognized_and_activations_are_cut() {
    let p = prelude();
    let whole = |name: &str| {
        let split = opt::split(p, name).unwrap_or_else(|e| panic!("{name}: {e}"));
        matches!(split.parts.as_slice(), [part] if matches!(part.kind, PartKind::MultiLinear { .. }))
    };
    let linear: Vec<&str> = p
        .defs
        .iter()
        .map(|d| d.name.as_str())
        .filter(|n| {
            [
                "matmul",
                "conv",
                "transpose",
                "concat",
                "pad",
                "avgpool2d_incpad",
            ]
            .iter()
            .any(|k| n.starts_with(k))
                // A convolution with its ReLU epilogue is not linear.
                && !n.ends_with("_relu")
                // The split recognizes multi-linear subprograms over
                // floats; the integer convolutions are not among them.
                && !n.ends_with("_int")
        })
        .collect();
    assert!(linear.len() >= 10, "{linear:?}");
    for name in &linear {
        assert!(whole(name), "`{name}` is not one multi-linear subprogram");
    }
    let cut: Vec<&str> = p
        .defs
        .iter()
        .map(|d| d.name.as_str())
        .filter(|n| {
            ["relu", "softmax", "sigmoid", "tanh", "exp_r", "maxpool"]
                .iter()
                .any(|k| n.starts_with(k))
                || n.ends_with("_relu")
        })
        .collect();
    assert!(cut.len() >= 5, "{cut:?}");
    for name in &cut {
        assert!(!whole(name), "`{name}` is not cut");
    }
}
