//! Helpers shared by the kernel's integration tests: converting interpreter
//! tensors to VM buffers, and comparing results.

#![allow(dead_code)] // Each test binary uses a different subset.

use std::collections::HashMap;

use interp::{Arg, Mode, Tensor};
use ir::{DType, Param, Program, Value};
use kernel::Block;

/// Whether two values agree: integers and booleans exactly, floats within
/// 1e-5 relative (absolute below magnitude 1), equal infinities, or both NaN.
pub fn close(g: &Value, w: &Value) -> bool {
    match (g, w) {
        (Value::Float(a), Value::Float(b)) => {
            a == b || (a - b).abs() <= 1e-5 * b.abs().max(1.0) || (a.is_nan() && b.is_nan())
        }
        _ => g == w,
    }
}

/// Whether two buffers agree element by element (see [`close`]).
pub fn all_close(got: &[Value], want: &[Value]) -> bool {
    got.len() == want.len() && got.iter().zip(want).all(|(g, w)| close(g, w))
}

/// Whether two buffers are identical (NaN equals NaN: the same computation
/// gives the same NaN).
pub fn identical(got: &[Value], want: &[Value]) -> bool {
    got.len() == want.len()
        && got.iter().zip(want).all(|(g, w)| match (g, w) {
            (Value::Float(a), Value::Float(b)) => {
                a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
            }
            _ => g == w,
        })
}

/// A TC file of the repository, checked.
pub fn load(path: &str) -> Program {
    testkit::load(path)
}

/// A def lowered for concrete sizes, with seeded inputs as VM buffers and
/// the interpreter's outputs on them.
pub struct Case {
    pub name: String,
    pub block: Block,
    pub inputs: kernel::vm::Buffers,
    pub want: Vec<(String, Tensor)>,
}

/// Lowers `def` for `sizes` and `scalars`; float tensors are seeded random
/// values, integer tensors alternate 0 and 1 (valid indices for any table).
pub fn case(
    program: &Program,
    def: &str,
    sizes: &[(&str, i64)],
    scalars: &[(&str, Value)],
    seed: u64,
) -> Case {
    let d = program.def(def).unwrap_or_else(|| panic!("no def {def}"));
    let given: HashMap<String, i64> = sizes.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    let mut args: HashMap<String, Arg> = scalars
        .iter()
        .map(|(k, v)| (k.to_string(), Arg::Scalar(*v)))
        .collect();
    let bound = interp::bind_sizes(d, &args, &given).unwrap_or_else(|e| panic!("{def}: {e}"));
    for (k, p) in d.params.iter().enumerate() {
        if let Param::Tensor(t) = p {
            let shape = interp::param_shape(d, t, &bound).unwrap_or_else(|e| panic!("{def}: {e}"));
            let dtype = d.tensor(t).map_or(DType::F32, |x| x.dtype);
            let tensor = Tensor::sample(dtype, &shape, seed + k as u64);
            args.insert(t.clone(), Arg::Tensor(tensor));
        }
    }
    let want = interp::run(program, def, &args, &given, Mode::Real)
        .unwrap_or_else(|e| panic!("{def}: interp: {e}"));
    let block =
        kernel::lower_def(program, def, &bound).unwrap_or_else(|e| panic!("{def}: lower: {e}"));
    let inputs = args
        .iter()
        .map(|(k, a)| match a {
            Arg::Tensor(t) => (k.clone(), t.values()),
            Arg::Scalar(v) => (k.clone(), vec![*v]),
        })
        .collect();
    Case {
        name: def.to_string(),
        block,
        inputs,
        want,
    }
}

/// Checks a kernel computed from `c`: it verifies, reads back from its
/// printed form unchanged, and computes the interpreter's outputs on the
/// VM — `exact`ly, or within [`close`].
pub fn check_kernel(block: &Block, c: &Case, exact: bool, what: &str) {
    let def = &c.name;
    let text = kernel::print_block(block);
    if let Err(problems) = kernel::verify_block(block) {
        panic!(
            "{def} ({what}): the kernel does not verify:\n{}\n{text}",
            problems.join("\n")
        );
    }
    let back = kernel::parse_block(&text).unwrap_or_else(|e| panic!("{def} ({what}): {e}\n{text}"));
    assert_eq!(
        &back, block,
        "{def} ({what}): the printed kernel reads back differently:\n{text}"
    );
    let got = kernel::vm::run(block, c.inputs.clone())
        .unwrap_or_else(|e| panic!("{def} ({what}): vm: {e}"));
    for (name, t) in &c.want {
        let want = t.values();
        let ok = if exact {
            identical(&got[name], &want)
        } else {
            all_close(&got[name], &want)
        };
        assert!(
            ok,
            "{def} ({what}): output `{name}` differs from the interpreter's\n{text}"
        );
    }
}
