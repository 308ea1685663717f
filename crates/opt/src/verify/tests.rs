//! The lazy evaluator against the reference interpreter's mod-p mode: for
//! every def of the operator prelude that compiles to a polynomial graph,
//! every output element the evaluator computes on demand equals the one
//! `interp::run` computes in `Mode::ModP` on the same inputs.

use std::collections::HashMap;

use interp::{Arg, Mode, Tensor};
use ir::{DType, Param, Value};
use testkit::prelude;

use super::eval::{random, Evaluator};
use super::graph;

#[test]
fn lazy_evaluation_agrees_with_the_mod_p_interpreter_on_the_prelude() {
    let program = prelude();
    let seed = 11;
    let (mut compared, mut elements) = (0, 0);
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
        let Ok(g) = graph::build(program, def, &sizes) else {
            continue;
        };
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
        let mut ev = Evaluator::new(&g, seed);
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
