//! Property test: the interpreter computes what `docs/LANGUAGE.md` says.
//!
//! The programs come from `testkit::gen`, the generator every property
//! test shares: mostly single comprehensions (`gen::comprehension`: every
//! operator, ranges fixed by `where` and left to inference, reads that
//! fall outside their tensors, guarded reads, lets, casts, literals), and
//! the shared multi-statement families (temporaries, concatenations,
//! accumulation onto an earlier statement, `*=!`, `max=!` and `min=!`
//! reductions) with division, maxima and minima; in `float32`, `float64`,
//! `int32` and `int64`.
//!
//! `gen::eval` evaluates each program directly in plain loops, following
//! the language document; `tc::check_source` and `interp::run` on the same
//! random inputs must give every output the same shape and values: exactly
//! for integers, and for floats within 1e-5 relative to the larger of the
//! value and the magnitudes that went into it (summation orders differ).
//! When the direct evaluation fails (an out-of-bounds read in `=`, an
//! integer division by zero), checking or running must fail.

use std::collections::{BTreeMap, HashMap};
use std::sync::LazyLock;

use interp::{Arg, Mode, Tensor};
use ir::DType;
use proptest::prelude::*;
use proptest::test_runner::Config;
use testkit::gen::{self, Bound, Evaluation, Failure, Family, Generated, Op, Profile};
use testkit::Rng;

/// The single comprehension, which reaches the most corners, is half of
/// the cases; the multi-statement families and the other reductions the
/// rest.
static FAMILIES: LazyLock<Vec<(&'static str, Family, u64)>> = LazyLock::new(|| {
    let mut f: Vec<(&'static str, Family, u64)> = vec![
        ("comprehension", gen::comprehension, 10),
        ("reduce_other", gen::generate::reduce_other, 2),
    ];
    f.extend(gen::FAMILIES);
    f
});

fn profile() -> Profile {
    Profile {
        dtypes: &[
            (DType::F32, 1),
            (DType::F64, 1),
            (DType::I32, 1),
            (DType::I64, 1),
        ],
        families: &FAMILIES,
        float_literals: 50,
        nonlinear: true,
        lhs_widths: &[1, 2, 3, 4, 5],
        reduction_widths: &[1, 2, 3, 4, 5],
        max_volume: 2000,
        max_elements: 625,
    }
}

/// A case: the generated program and its direct evaluation.
struct Case {
    generated: Generated,
    expected: Result<Evaluation, Failure>,
}

/// Generates the program of `seed`, evaluates it directly and through the
/// interpreter, and compares; the error describes a disagreement.
fn agree(seed: u64) -> Result<Case, String> {
    let mut rng = Rng::new(seed);
    let generated = gen::generate(&mut rng, &profile());
    let prog = &generated.prog;
    let src = prog.source("f");
    let inputs = gen::random_inputs(prog, rng.next_u64());
    let expected = gen::eval(prog, &inputs);
    let args: HashMap<String, Arg> = inputs
        .iter()
        .map(|(name, t)| (name.clone(), Arg::Tensor(t.clone())))
        .collect();
    let result = tc::check_source(&src)
        .map_err(|d| tc::render_diagnostics(&d, "case.tc", &src))
        .and_then(|c| {
            interp::run(&c.program, "f", &args, &HashMap::new(), Mode::Real).map_err(|e| e.message)
        });
    let context = || format!("seed {seed}, family {}:\n{src}", generated.family);
    match (&expected, result) {
        (Err(_), Err(_)) => {}
        (Err(f), Ok(_)) => {
            return Err(format!(
                "{}expected an error ({}), but it ran",
                context(),
                f.reason
            ))
        }
        (Ok(_), Err(e)) => return Err(format!("{}failed:\n{e}", context())),
        (Ok(want), Ok(got)) => compare(prog.dtype, want, &got)
            .map_err(|e| format!("{}{e}\ninputs: {inputs:?}", context()))?,
    }
    Ok(Case {
        generated,
        expected,
    })
}

/// Whether the interpreter's outputs `got` are the evaluation's.
fn compare(dtype: DType, want: &Evaluation, got: &[(String, Tensor)]) -> Result<(), String> {
    for w in &want.outputs {
        let g = &got
            .iter()
            .find(|(name, _)| *name == w.name)
            .ok_or_else(|| format!("no output `{}`", w.name))?
            .1;
        if g.dtype() != dtype || g.shape() != w.tensor.shape() {
            return Err(format!(
                "`{}` is {}{:?}, expected {dtype}{:?}",
                w.name,
                g.dtype(),
                g.shape(),
                w.tensor.shape()
            ));
        }
        let wrong = if dtype.is_float() {
            let (gv, wv) = (g.to_f64_vec(), w.tensor.to_f64_vec());
            (0..gv.len()).find(|&k| {
                let (g, w, s) = (gv[k], wv[k], w.scale[k]);
                // Infinities (an empty `max=!`) and NaN must be exactly
                // what was expected.
                let close =
                    g.is_finite() && w.is_finite() && (g - w).abs() <= 1e-5 * w.abs().max(s);
                !(g == w || g.is_nan() && w.is_nan() || close)
            })
        } else {
            let (gv, wv) = (g.to_i64_vec(), w.tensor.to_i64_vec());
            (0..gv.len()).find(|&k| gv[k] != wv[k])
        };
        if let Some(k) = wrong {
            return Err(format!(
                "`{}` is {:?}, expected {:?} (element {k} differs)",
                w.name,
                g.to_f64_vec(),
                w.tensor.to_f64_vec()
            ));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(Config { cases: 512, failure_persistence: None, ..Config::default() })]

    #[test]
    fn the_interpreter_agrees_with_direct_evaluation(seed in any::<u64>()) {
        agree(seed).map_err(TestCaseError::fail)?;
    }
}

/// The generated cases exercise values, skipped out-of-bounds points,
/// errors, inference and every operator in useful proportions.
#[test]
fn the_cases_cover_values_skips_and_errors() {
    const CASES: u64 = 400;
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for seed in 0..CASES {
        let Case {
            generated,
            expected,
        } = agree(seed).unwrap_or_else(|e| panic!("{e}"));
        let prog = &generated.prog;
        let mut keys = vec![format!("family {}", generated.family)];
        keys.extend(prog.stmts.iter().map(|s| s.op.text()));
        let assigns = prog.stmts.iter().any(|s| s.op == Op::Assign);
        match &expected {
            Ok(e) => {
                keys.push("values".to_string());
                if assigns {
                    keys.push("= values".to_string());
                }
                if e.skipped > 0 {
                    keys.push("skips".to_string());
                }
                if e.empty > 0 {
                    keys.push("empty elements".to_string());
                }
            }
            Err(f) => {
                keys.push("errors".to_string());
                if f.stmt.is_some_and(|k| prog.stmts[k].op == Op::Assign) {
                    keys.push("= errors".to_string());
                }
                if f.reason.contains("division by zero") {
                    keys.push("division errors".to_string());
                }
            }
        }
        if prog
            .stmts
            .iter()
            .any(|s| s.bounds.values().any(|&b| b == Bound::Infer))
        {
            keys.push("inferred".to_string());
        }
        keys.sort();
        keys.dedup();
        for k in keys {
            *counts.entry(k).or_default() += 1;
        }
    }
    // The thresholds are about half of what the seeds give today: a
    // change to the generator that starves one of these kinds of cases
    // fails here.
    let at_least = |key: &str, n: usize| {
        let c = counts.get(key).copied().unwrap_or(0);
        assert!(c >= n, "only {c} of {CASES} cases have `{key}`: {counts:?}");
    };
    at_least("values", 200);
    at_least("= values", 45);
    at_least("skips", 100);
    at_least("empty elements", 100);
    at_least("errors", 12);
    at_least("= errors", 10);
    at_least("division errors", 2);
    at_least("inferred", 80);
    for (op, n) in [
        ("=", 50),
        ("+=!", 60),
        ("*=!", 25),
        ("max=!", 30),
        ("min=!", 30),
        ("+=", 7),
        ("max=", 1),
    ] {
        at_least(op, n);
    }
    at_least("family comprehension", 110);
    for (family, ..) in FAMILIES.iter() {
        at_least(&format!("family {family}"), 5);
    }
}

/// A point that an unguarded out-of-bounds read skips evaluates nothing
/// else, whatever the order of the reads (the interpreter once evaluated the
/// guarded read first and reported it out of bounds).
#[test]
fn a_skipped_point_evaluates_no_guarded_read() {
    let src = "def f(float(N) A) -> (O) {\n  O(i) +=! (i < 1 ? A(k) : 0.0) * A(k) where i in 0:1, k in 0:2\n}\n";
    let checked = tc::check_source(src).expect("the program checks");
    let a = Tensor::from_f64(DType::F32, &[1], vec![0.5]);
    let args = HashMap::from([("A".to_string(), Arg::Tensor(a))]);
    let out = interp::run(&checked.program, "f", &args, &HashMap::new(), Mode::Real)
        .expect("k = 1 is skipped");
    assert_eq!(out[0].1.to_f64_vec(), vec![0.25]);
}
