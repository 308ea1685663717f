//! Property test of the optimizer (`opt::optimize::optimize`): on random
//! defs of prelude operator calls, searched with the shipped rules, the
//! def it returns computes what the original computed and costs no more.
//!
//! The programs come from `testkit::gen::calls`: a few calls of matrix
//! products (transposed operands, Gemms, batched), sums and products,
//! activations, row biases and scales, concatenations, slices, reshapes,
//! batch norms, convolutions with small random attributes, per-channel
//! scales and biases, pooling and padding, over dimensions 1 to 6 (size
//! symbols or literals) shared so that operators chain and share
//! operands: the form ONNX import writes and the rules
//! (`ops/rewrites.rules`) fire on. The shared generator's comprehensions
//! would be opaque to the e-graph, so no rule would fire on them.
//!
//! Each program is optimized at its sizes with a cost model the test
//! controls ([`Points`]): a def costs the points of every comprehension
//! its run executes, callees included (a matrix product M K N, a sum its
//! elements), or the sum of their square roots, under which one large
//! operator is cheaper than two small ones, so that merges win too. Either
//! way reassociated products, distributivity and scales folded into
//! weights pay, and the optimizer changes a third to a half of the
//! programs. Measuring gives the estimate back, so half the cases decide by
//! "measured" times (side by side included) and half by the estimate alone.
//!
//! For every case the optimizer must return without an error
//! (`not_searched`, its answer for a def the e-graph does not take, would
//! count as unchanged), and its def must
//!
//! - be the original exactly when unchanged;
//! - when changed, carry the proof and give the same outputs as the
//!   original on the interpreter on the same random inputs, within 1e-4
//!   of the largest output magnitude (at least 1: rewritten sums round in
//!   other orders);
//! - cost no more than the original by the same model, and less when
//!   changed.
//!
//! A failure prints the program's TC text, its sizes, the optimized def
//! and the optimizer's explanation. Shrinking drops statements from the
//! end (a program of fewer statements is the start of the same seed's
//! longer one); the seed itself does not shrink, a smaller seed being no
//! smaller a program. `fixed_seeds_change_some_programs` checks the same
//! on fixed seeds and that the optimizer changed some of them, so that the
//! property is not vacuous.

use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::Duration;

use interp::{Arg, Mode, Tensor};
use ir::{CallArg, DType, Expr, Param, Program, SizeExpr, Stmt, Value};
use opt::cost::{CostModel, Estimate};
use opt::optimize::{optimize, shipped_rules, Options};
use opt::rules::Rule;
use opt::signature::{call_sizes, ArgKind};
use proptest::prelude::*;
use proptest::test_runner::Config;
use testkit::gen::calls::{self, Calls};
use testkit::Rng;

/// Outputs agree within this fraction of the largest output magnitude,
/// at least 1: inputs are in [-1, 1), so intermediate values are of that
/// order, and a rewritten sum is off by a few float32 roundings of them.
const TOLERANCE: f64 = 1e-4;

/// The fixed seeds' programs start here.
const SEED: u64 = 0x0b7_5eed_0000;

/// The prelude's text and the shipped rules, loaded once per binary.
fn prelude() -> &'static (String, Vec<Rule>) {
    static PRELUDE: OnceLock<(String, Vec<Rule>)> = OnceLock::new();
    PRELUDE.get_or_init(|| {
        let text = std::fs::read_to_string(testkit::root().join("ops/prelude.tc")).unwrap();
        let rules = shipped_rules(testkit::prelude()).unwrap();
        (text, rules)
    })
}

// ---------------------------------------------------------------------
// The cost model.

/// Costs a def by the points its comprehensions run over, callees'
/// included, each raised to `power`: deterministic, and growing with the
/// sizes as a run's time does.
#[derive(Debug)]
struct Points {
    power: f64,
}

impl Points {
    fn points(
        &self,
        program: &Program,
        def: &str,
        sizes: &HashMap<String, i64>,
    ) -> Result<f64, String> {
        let d = program.def(def).ok_or_else(|| format!("no def `{def}`"))?;
        let eval = |e: &SizeExpr| e.eval_map(sizes).map_err(|e| format!("`{def}`: {e}"));
        let mut total = 0.0;
        for s in &d.stmts {
            match s {
                Stmt::Comp(c) => {
                    let mut points = 1.0;
                    for r in &c.ranges {
                        points *= (eval(&r.hi)? - eval(&r.lo)?).max(0) as f64;
                    }
                    total += points.powf(self.power);
                }
                Stmt::Call(call) => {
                    let callee = program
                        .def(&call.callee)
                        .ok_or_else(|| format!("no def `{}`", call.callee))?;
                    let mut args = Vec::new();
                    for (a, p) in call.args.iter().zip(&callee.params) {
                        args.push(match (a, p) {
                            (CallArg::Tensor(t), _) => {
                                let decl = d
                                    .tensor(t)
                                    .ok_or_else(|| format!("`{def}`: `{t}` has no declaration"))?;
                                let shape =
                                    decl.shape.iter().map(eval).collect::<Result<_, _>>()?;
                                ArgKind::Tensor(shape)
                            }
                            (CallArg::Scalar(_), Param::Scalar { dtype, .. })
                                if dtype.is_float() =>
                            {
                                ArgKind::Float
                            }
                            (CallArg::Scalar(e), _) => ArgKind::Int(int(e, sizes)?),
                        });
                    }
                    let inner = call_sizes(callee, &args)?;
                    total += self.points(program, &call.callee, &inner)?;
                }
                Stmt::Loop(_) | Stmt::If(_) => {
                    return Err(format!(
                        "`{def}` has regions, which this model does not cost"
                    ))
                }
            }
        }
        Ok(total)
    }
}

/// The value of an integer scalar argument: literals, size symbols and
/// integer scalars, and arithmetic on them.
fn int(e: &Expr, sizes: &HashMap<String, i64>) -> Result<i64, String> {
    use ir::BinOp::{Add, Div, Mod, Mul, Sub};
    Ok(match e {
        Expr::Lit(Value::Int(v), _) => *v,
        Expr::Sym(s) => *sizes.get(s).ok_or_else(|| format!("`{s}` is not bound"))?,
        Expr::Cast(_, x) => int(x, sizes)?,
        Expr::Unary(ir::UnOp::Neg, x) => -int(x, sizes)?,
        Expr::Binary(op, a, b) => {
            let (a, b) = (int(a, sizes)?, int(b, sizes)?);
            match op {
                Add => a + b,
                Sub => a - b,
                Mul => a * b,
                Div if b != 0 => a.div_euclid(b),
                Mod if b != 0 => a.rem_euclid(b),
                _ => return Err(format!("cannot evaluate {op:?} on {a} and {b}")),
            }
        }
        e => return Err(format!("not an integer argument: {e:?}")),
    })
}

impl CostModel for Points {
    type Error = String;

    fn estimate(
        &self,
        program: &Program,
        def: &str,
        sizes: &HashMap<String, i64>,
    ) -> Result<Estimate, String> {
        // At least one point, so that the extraction's per-operator costs
        // are positive (it falls back on its own otherwise).
        let points = self.points(program, def, sizes)?.max(1.0);
        Ok(Estimate {
            flops: points as u64,
            bytes: 0,
            seconds: points * 1e-9,
        })
    }

    fn measure(
        &self,
        program: &Program,
        def: &str,
        sizes: &HashMap<String, i64>,
    ) -> Result<Duration, String> {
        let e = self.estimate(program, def, sizes)?;
        Ok(Duration::from_secs_f64(e.seconds))
    }
}

// ---------------------------------------------------------------------
// A case.

/// What a case found.
#[derive(Debug)]
struct Found {
    changed: bool,
    /// The rules of the result's steps.
    rules: Vec<String>,
}

/// Generates the program of `seed` with `statements` statements (or a few
/// more), optimizes it and checks the result; the error shows the
/// program.
fn case(statements: usize, seed: u64) -> Result<Found, String> {
    let mut rng = Rng::new(seed);
    let options = calls::Options {
        statements,
        // A size symbol passed as an integer attribute is `int32(D0)` after
        // checking, which the e-graph does not take: the def would not be
        // searched at all.
        symbol_scalars: false,
        ..calls::Options::default()
    };
    let generated = calls::calls(&mut rng, &options);
    let model = Points {
        power: if rng.coin() { 1.0 } else { 0.5 },
    };
    let measure = rng.coin();
    let input_seed = rng.next_u64();
    check(&generated, &model, measure, input_seed).map_err(|e| {
        format!(
            "{e}\n\nseed {seed:#x}, {statements} statements, {model:?}, measure {measure}, \
             sizes {:?}:\n{}",
            generated.sizes, generated.source
        )
    })
}

fn check(c: &Calls, model: &Points, measure: bool, input_seed: u64) -> Result<Found, String> {
    let (prelude, rules) = prelude();
    let source = format!("{prelude}\n{}", c.source);
    let program = tc::check_source(&source)
        .map_err(|d| tc::render_diagnostics(&d, "case.tc", &source))?
        .program;
    let sizes: HashMap<String, i64> = c.sizes.iter().map(|(k, v)| (k.clone(), *v)).collect();
    // A few seconds: saturation stops at its node and iteration limits
    // well within them at these sizes.
    let options = Options {
        budget: Duration::from_secs(4),
        measure,
        verify: true,
        ..Options::default()
    };
    let out = optimize(
        &program,
        &c.name,
        &sizes,
        rules,
        model,
        &options,
        &mut |_| {},
    )
    .map_err(|e| format!("the optimizer failed: {e:?}"))?;
    let explain = || opt::optimize::print_explanation(&out);
    let original = program.def(&c.name).unwrap();
    let result = out
        .program
        .def(&c.name)
        .ok_or_else(|| format!("the result has no `{}`", c.name))?;

    let before = model.points(&program, &c.name, &sizes)?;
    let after = model.points(&out.program, &c.name, &sizes)?;
    if after > before || (out.changed && after >= before) {
        return Err(format!(
            "the result costs {after} points, the original {before}:\n{}",
            explain()
        ));
    }
    if !out.changed {
        if result != original {
            return Err(format!(
                "unchanged, but the def differs:\n{}",
                ir::print_def(&out.program, result)
            ));
        }
        return Ok(Found {
            changed: false,
            rules: Vec::new(),
        });
    }
    if out.proof.is_none() {
        return Err(format!("changed without a proof:\n{}", explain()));
    }
    agree(&program, &out.program, c, &sizes, input_seed).map_err(|e| {
        format!(
            "{e}\nthe optimized def:\n{}\n{}",
            ir::print_def(&out.program, result),
            explain()
        )
    })?;
    Ok(Found {
        changed: true,
        rules: out.steps.iter().map(|s| s.rule.clone()).collect(),
    })
}

/// Runs the def of `original` and of `optimized` on the same random
/// inputs and compares their outputs.
fn agree(
    original: &Program,
    optimized: &Program,
    c: &Calls,
    sizes: &HashMap<String, i64>,
    seed: u64,
) -> Result<(), String> {
    let args: HashMap<String, Arg> = c
        .inputs
        .iter()
        .enumerate()
        .map(|(k, (name, shape))| {
            let t = Tensor::random(DType::F32, shape, seed.wrapping_add(k as u64));
            (name.clone(), Arg::Tensor(t))
        })
        .collect();
    let run = |p: &Program, which: &str| {
        interp::run(p, &c.name, &args, sizes, Mode::Real)
            .map_err(|e| format!("the {which} def does not run: {e}"))
    };
    let want = run(original, "original")?;
    let got = run(optimized, "optimized")?;
    for ((name, w), (got_name, g)) in want.iter().zip(&got) {
        if name != got_name || w.shape() != g.shape() {
            return Err(format!(
                "output `{got_name}` of shape {:?} where the original has `{name}` of {:?}",
                g.shape(),
                w.shape()
            ));
        }
        let (w, g) = (w.to_f64_vec(), g.to_f64_vec());
        let scale = w
            .iter()
            .filter(|x| x.is_finite())
            .fold(1.0f64, |m, x| m.max(x.abs()));
        let bad = w.iter().zip(&g).position(|(a, b)| {
            if a.is_nan() || b.is_nan() {
                a.is_nan() != b.is_nan()
            } else {
                (a - b).abs() > TOLERANCE * scale
            }
        });
        if let Some(k) = bad {
            return Err(format!(
                "output `{name}` differs at element {k}: {} where the original has {}",
                g[k], w[k]
            ));
        }
    }
    Ok(())
}

proptest! {
    // Each case saturates, extracts and proves: a fraction of a second to
    // a few seconds in the dev profile, so few cases.
    #![proptest_config(Config { cases: 20, failure_persistence: None, ..Config::default() })]

    #[test]
    fn optimized_programs_compute_what_the_originals_did(
        statements in 1..=6usize,
        seed in any::<u64>().no_shrink(),
    ) {
        case(statements, seed).map_err(TestCaseError::fail)?;
    }
}

/// The property on fixed seeds (the same programs on every run), which
/// the optimizer must change some of: a search that never changed
/// anything would pass the property test vacuously.
#[test]
fn fixed_seeds_change_some_programs() {
    let mut changed = Vec::new();
    for k in 0..12 {
        let found = case(6, SEED + k).unwrap_or_else(|e| panic!("{e}"));
        if found.changed {
            changed.push((k, found.rules));
        }
    }
    println!("changed: {changed:?}");
    assert!(changed.len() >= 2, "only {changed:?} changed");
}
