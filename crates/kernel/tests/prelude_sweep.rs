//! Every operator of the prelude through lowering and every pass: each def
//! runs with all its size symbols bound to small sizes (3, then 5, which
//! does not divide the vector width or most tiles), integer scalars 1 and
//! float scalars 0.5 (a def whose kernel would visit more than
//! [`MAX_POINTS`] points at a size, as the rank-9 tiles of Winograd's
//! algorithm do at 5, runs at the smaller size only: in the VM and in
//! the interpreter, unoptimized, once per pass, it would take minutes).
//! Where the interpreter accepts the arguments, the
//! lowered kernel, and the kernel after each pass and after the cpu
//! pipeline, must verify and compute the interpreter's results (exactly
//! after lowering; within 1e-5 relative after passes, which may reorder
//! float reductions). Every def lowers.

use std::collections::HashMap;

mod common;

use common::{all_close, identical};
use interp::{Arg, Mode, Tensor};
use ir::{DType, Param, Value};

// The defs are dealt to four shards, one test each, so the test harness
// keeps both of CI's threads busy although a few defs take most of the time.
const SHARDS: usize = 4;

#[test]
fn every_prelude_def_lowers_and_survives_every_pass_shard_0() {
    sweep(0);
}

#[test]
fn every_prelude_def_lowers_and_survives_every_pass_shard_1() {
    sweep(1);
}

#[test]
fn every_prelude_def_lowers_and_survives_every_pass_shard_2() {
    sweep(2);
}

#[test]
fn every_prelude_def_lowers_and_survives_every_pass_shard_3() {
    sweep(3);
}

fn sweep(shard: usize) {
    let program = testkit::prelude();
    let target = kernel::Target::generic();
    let cpu = kernel::parse_pipeline(kernel::builtin_pipeline("cpu").unwrap_or_default()).unwrap();
    let mut pipelines: Vec<Vec<String>> = kernel::pass_names()
        .into_iter()
        .map(|p| vec![p.to_string()])
        .collect();
    pipelines.push(cpu);
    let mut checked = 0;
    for def in program.defs.iter().skip(shard).step_by(SHARDS) {
        for size in [3i64, 5] {
            let given: HashMap<String, i64> =
                def.size_symbols().into_iter().map(|s| (s, size)).collect();
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
            let Ok(bound) = interp::bind_sizes(def, &args, &given) else {
                continue;
            };
            let mut ok = true;
            for (k, p) in def.params.iter().enumerate() {
                if let Param::Tensor(t) = p {
                    let Ok(shape) = interp::param_shape(def, t, &bound) else {
                        ok = false;
                        break;
                    };
                    let dtype = def.tensor(t).map(|x| x.dtype).unwrap_or(DType::F32);
                    let tensor = Tensor::sample(dtype, &shape, 100 + k as u64);
                    args.insert(t.clone(), Arg::Tensor(tensor));
                }
            }
            if !ok {
                continue;
            }
            let lowered = kernel::lower_def(program, &def.name, &bound);
            if lowered.as_ref().is_ok_and(|b| points(b) > MAX_POINTS) {
                continue;
            }
            let Ok(want) = interp::run(program, &def.name, &args, &given, Mode::Real) else {
                continue;
            };
            let block = lowered
                .unwrap_or_else(|e| panic!("{} (size {size}) does not lower: {e}", def.name));
            let inputs: kernel::vm::Buffers = args
                .iter()
                .map(|(k, a)| match a {
                    Arg::Tensor(t) => (k.clone(), t.values()),
                    Arg::Scalar(v) => (k.clone(), vec![*v]),
                })
                .collect();
            if let Err(e) = kernel::verify_block(&block) {
                panic!(
                    "{} (size {size}): the lowered kernel does not verify: {e:?}",
                    def.name
                );
            }
            let got = kernel::vm::run(&block, inputs.clone())
                .unwrap_or_else(|e| panic!("{}: vm: {e}", def.name));
            for (name, t) in &want {
                assert!(
                    identical(&got[name], &t.values()),
                    "{} (size {size}): `{name}` after lowering",
                    def.name
                );
            }
            for passes in &pipelines {
                let mut b = block.clone();
                kernel::run_pipeline(&mut b, passes, &target, &mut |_, _| {})
                    .unwrap_or_else(|e| panic!("{} (size {size}): {e}", def.name));
                let got = kernel::vm::run(&b, inputs.clone())
                    .unwrap_or_else(|e| panic!("{}: vm after {passes:?}: {e}", def.name));
                for (name, t) in &want {
                    assert!(
                        all_close(&got[name], &t.values()),
                        "{} (size {size}): `{name}` after {passes:?}",
                        def.name
                    );
                }
            }
            checked += 1;
        }
    }
    assert!(checked >= 275, "only {checked} (def, size) pairs ran");
}

/// The most points a def's lowered kernel may visit at a size of the
/// sweep: the few defs above it at size 5 (rank-4 and deeper kernels)
/// would take most of the sweep's time there, and run at size 3.
const MAX_POINTS: u64 = 1 << 18;

/// The points `b` visits: its own, times those of the blocks it nests (at
/// least one).
fn points(b: &kernel::Block) -> u64 {
    let own = b.idxs.iter().map(|i| i.range).product::<u64>();
    let nested: u64 = b
        .stmts
        .iter()
        .filter_map(|s| match &s.kind {
            kernel::StmtKind::Block(c) => Some(points(c)),
            _ => None,
        })
        .sum();
    own.saturating_mul(nested.max(1))
}
