//! The lazy evaluator against the reference interpreter: for every def of
//! the operator prelude that compiles to a polynomial graph, every output
//! element the evaluator computes on demand over Z_p equals the one
//! `interp::run` computes in `Mode::ModP` on the same inputs; for every def
//! that compiles with its non-polynomial statements, every element it
//! computes in floating point is the one `Mode::Real` computes.

use std::collections::HashMap;

use interp::{Arg, Mode, Tensor};
use ir::{DType, Param, Value};
use testkit::prelude;

use super::eval::{random, Evaluator, Number};
use super::float::agree;
use super::graph;

/// A prelude def that builds as a graph: the def, its sizes, the sizes
/// and integer scalars given, and the graph.
struct Built {
    def: &'static ir::Def,
    sizes: HashMap<String, i64>,
    given: HashMap<String, i64>,
    graph: graph::Graph,
}

/// Every prelude def, with its sizes at 5 and integer scalars at 1, that
/// builds as a graph (`real`: with non-polynomial statements).
fn prelude_graphs(real: bool) -> Vec<Built> {
    let program = prelude();
    let mut out = Vec::new();
    for def in &program.defs {
        let mut given: HashMap<String, i64> =
            def.size_symbols().into_iter().map(|s| (s, 5)).collect();
        for p in &def.params {
            if let Param::Scalar { name, dtype } = p {
                if dtype.is_int() {
                    given.insert(name.clone(), 1);
                }
            }
        }
        let Ok(sizes) = interp::bind_sizes(def, &HashMap::new(), &given) else {
            continue;
        };
        let Ok(g) = graph::build(program, def, &sizes, real) else {
            continue;
        };
        out.push(Built {
            def,
            sizes,
            given,
            graph: g,
        });
    }
    out
}

#[test]
fn lazy_evaluation_agrees_with_the_mod_p_interpreter_on_the_prelude() {
    let program = prelude();
    let seed = 11;
    let (mut compared, mut elements) = (0, 0);
    for Built {
        def,
        sizes,
        given,
        graph: g,
    } in prelude_graphs(false)
    {
        let mut args = HashMap::new();
        for (k, p) in def.params.iter().enumerate() {
            let arg = match p {
                Param::Tensor(t) => {
                    let shape = interp::param_shape(def, t, &sizes).unwrap();
                    let n: usize = shape.iter().product();
                    let values = (0..n).map(|f| random(seed, k, f) as i64).collect();
                    Arg::Tensor(Tensor::from_i64(DType::I64, &shape, values))
                }
                Param::Scalar { name, dtype } if dtype.is_int() => {
                    Arg::Scalar(Value::Int(given[name]))
                }
                Param::Scalar { .. } => Arg::Scalar(Value::Int(random(seed, k, 0) as i64)),
            };
            args.insert(p.name().to_string(), arg);
        }
        // The interpreter's mod-p mode takes no division; the evaluator
        // does (by inverses), so those defs are compared elsewhere.
        let Ok(outputs) = interp::run(program, &def.name, &args, &sizes, Mode::ModP) else {
            continue;
        };
        let mut ev: Evaluator<u64> = Evaluator::new(&g, seed);
        for (&node, (name, t)) in g.outputs.iter().zip(&outputs) {
            for flat in 0..t.len() {
                let want = match t.get(flat) {
                    Value::Int(i) => i as u64,
                    v => panic!("{}: `{name}` holds {v:?} in mod-p mode", def.name),
                };
                let got = ev
                    .value(node, flat)
                    .unwrap_or_else(|e| panic!("{}: `{name}`[{flat}]: {e}", def.name));
                assert_eq!(got, want, "{}: `{name}` element {flat}", def.name);
                elements += 1;
            }
        }
        compared += 1;
    }
    assert!(
        compared >= 100,
        "only {compared} prelude defs were compared ({elements} elements)"
    );
}

#[test]
fn lazy_evaluation_in_floats_agrees_with_the_real_interpreter_on_the_prelude() {
    let program = prelude();
    let seed = 5;
    let (mut compared, mut nonlinear) = (0, 0);
    for Built {
        def,
        sizes,
        given,
        graph: g,
    } in prelude_graphs(true)
    {
        // Integer parameters (indices) are drawn only by the whole
        // comparison; the sampled one refuses them.
        if def.tensor_params().any(|t| !t.dtype.is_float()) {
            continue;
        }
        let mut args = HashMap::new();
        for (k, p) in def.params.iter().enumerate() {
            let arg = match p {
                Param::Tensor(t) => {
                    let decl = def.tensor(t).unwrap();
                    let shape = interp::param_shape(def, t, &sizes).unwrap();
                    let n: usize = shape.iter().product();
                    let values = (0..n).map(|f| f64::input(seed, k, f)).collect();
                    Arg::Tensor(Tensor::from_f64(decl.dtype, &shape, values))
                }
                Param::Scalar { name, dtype } if dtype.is_int() => {
                    Arg::Scalar(Value::Int(given[name]))
                }
                Param::Scalar { .. } => Arg::Scalar(Value::Float(f64::scalar(seed, k))),
            };
            args.insert(p.name().to_string(), arg);
        }
        let Ok(outputs) = interp::run(program, &def.name, &args, &sizes, Mode::Real) else {
            continue;
        };
        let mut ev: Evaluator<f64> = Evaluator::new(&g, seed);
        for (&node, (name, t)) in g.outputs.iter().zip(&outputs) {
            let want = t.to_f64_vec();
            let scale = want
                .iter()
                .filter(|x| x.is_finite())
                .fold(0.0f64, |m, x| m.max(x.abs()));
            for (flat, &w) in want.iter().enumerate() {
                let got = ev
                    .value(node, flat)
                    .unwrap_or_else(|e| panic!("{}: `{name}`[{flat}]: {e}", def.name));
                // The interpreter rounds what it stores to float32; the
                // evaluator keeps float64 throughout.
                assert!(
                    agree(got, w, 1e-5, scale),
                    "{}: `{name}` element {flat}: {got} against the interpreter's {w}",
                    def.name
                );
            }
        }
        compared += 1;
        nonlinear += usize::from(graph::build(program, def, &sizes, false).is_err());
    }
    assert!(
        compared >= 300 && nonlinear >= 150,
        "only {compared} prelude defs were compared, {nonlinear} of them not polynomials"
    );
}
