//! Differential fuzzing of the emitter: kernels of the prelude (after the
//! cpu pipeline) with one random mutation each — an operation swapped for
//! another, a constant replaced by an edge value, an aggregation changed,
//! or a loaded value sent through a cast to another type, an operation in
//! that type and a cast back — are emitted. The emitter must never panic;
//! a kernel it accepts must compute what the VM computes on it (both fail
//! for the same reason, or both give the same buffers: exactly, but for floats within 1e-4
//! relative, as float builtins may differ in the last bits and mutations
//! can amplify that). Seeded, so every run sees the same mutants; all
//! accepted mutants share one C file.

mod emit_common;

use codegen::emit::emit_c;
use emit_common::{case, cpu, Outcome};
use ir::{BinOp, Builtin, DType, UnOp, Value};
use kernel::{Agg, Block, Op, Statement, StmtKind};
use testkit::Rng;

/// The number of statements of `b`'s nest that a mutation can start from.
fn sites(b: &Block) -> usize {
    b.stmts
        .iter()
        .map(|s| match &s.kind {
            StmtKind::Block(c) => 1 + sites(c),
            _ => 1,
        })
        .sum()
}

/// Mutates the `at`-th site of `b`'s nest (counting down); returns what it
/// did, or `None` when that site offers no mutation.
fn mutate(b: &mut Block, at: &mut usize, rng: &mut Rng) -> Option<Option<String>> {
    for k in 0..b.stmts.len() {
        if *at == 0 {
            return Some(mutate_here(b, k, rng));
        }
        *at -= 1;
        if let StmtKind::Block(c) = &mut b.stmts[k].kind {
            if let Some(done) = mutate(c, at, rng) {
                return Some(done);
            }
        }
    }
    None
}

const ARITH: [Op; 10] = [
    Op::Binary(BinOp::Add),
    Op::Binary(BinOp::Sub),
    Op::Binary(BinOp::Mul),
    Op::Binary(BinOp::Div),
    Op::Binary(BinOp::Mod),
    Op::Builtin(Builtin::Max),
    Op::Builtin(Builtin::Min),
    Op::Builtin(Builtin::Fmax),
    Op::Builtin(Builtin::Fmin),
    Op::Builtin(Builtin::Pow),
];

const UNARY: [Op; 13] = [
    Op::Unary(UnOp::Neg),
    Op::Builtin(Builtin::Exp),
    Op::Builtin(Builtin::Log),
    Op::Builtin(Builtin::Tanh),
    Op::Builtin(Builtin::Sqrt),
    Op::Builtin(Builtin::Rsqrt),
    Op::Builtin(Builtin::Abs),
    Op::Builtin(Builtin::Erf),
    Op::Builtin(Builtin::Sin),
    Op::Builtin(Builtin::Cos),
    Op::Builtin(Builtin::Floor),
    Op::Builtin(Builtin::Ceil),
    Op::Builtin(Builtin::Sigmoid),
];

const AGGS: [Agg; 5] = [Agg::Assign, Agg::Add, Agg::Mul, Agg::Min, Agg::Max];

fn mutate_here(b: &mut Block, k: usize, rng: &mut Rng) -> Option<String> {
    let name = b.name.clone();
    match &mut b.stmts[k].kind {
        StmtKind::Intrinsic { op, inputs, .. } => {
            let choices: &[Op] = match inputs.len() {
                1 => &UNARY,
                2 => &ARITH,
                _ => return None,
            };
            let new = rng.pick(choices);
            let what = format!("{name}: {op:?} -> {new:?}");
            *op = new;
            Some(what)
        }
        StmtKind::Constant { value, dtype, .. } => {
            let new = if dtype.is_float() {
                Value::Float(rng.pick(&[0.0, -0.0, -1.5, 1e30, f64::NAN, f64::NEG_INFINITY]))
            } else if *dtype == DType::Bool {
                Value::Bool(rng.next_u64().is_multiple_of(2))
            } else {
                Value::Int(rng.pick(&[0, -1, 2, i64::MIN, i64::MAX]))
            };
            let what = format!("{name}: constant {value:?} -> {new:?}");
            *value = new;
            Some(what)
        }
        StmtKind::Load { from, into } => {
            let view = b.refs.iter().find(|r| r.into == *from)?;
            let (from_t, into) = (view.dtype, into.clone());
            if !from_t.is_float() {
                return None;
            }
            let t = rng.pick(&DType::ALL);
            let op = rng.pick(&ARITH[..5]);
            let names = [
                format!("{into}_m1"),
                format!("{into}_m2"),
                format!("{into}_m3"),
            ];
            let stmt = |kind| Statement {
                kind,
                tags: Default::default(),
            };
            // Later uses of the loaded scalar read the round trip instead.
            for s in &mut b.stmts[k + 1..] {
                rename_uses(&mut s.kind, &into, &names[2]);
            }
            let inserted = [
                StmtKind::Intrinsic {
                    op: Op::Cast,
                    inputs: vec![into.clone()],
                    into: names[0].clone(),
                    dtype: t,
                },
                StmtKind::Intrinsic {
                    op: op.clone(),
                    inputs: vec![names[0].clone(), names[0].clone()],
                    into: names[1].clone(),
                    dtype: t,
                },
                StmtKind::Intrinsic {
                    op: Op::Cast,
                    inputs: vec![names[1].clone()],
                    into: names[2].clone(),
                    dtype: from_t,
                },
            ];
            for (j, kind) in inserted.into_iter().enumerate() {
                b.stmts.insert(k + 1 + j, stmt(kind));
            }
            Some(format!("{name}: ${into} through {t} {op:?}"))
        }
        StmtKind::Store { into, .. } => {
            let view = b.refs.iter_mut().find(|r| r.into == *into)?;
            let new = rng.pick(&AGGS);
            let what = format!("{name}: {} agg {:?} -> {new:?}", view.into, view.agg);
            view.agg = new;
            Some(what)
        }
        _ => None,
    }
}

/// Renames reads of scalar `from` to `to` in one statement.
fn rename_uses(kind: &mut StmtKind, from: &str, to: &str) {
    let swap = |n: &mut String| {
        if n == from {
            *n = to.to_string();
        }
    };
    match kind {
        StmtKind::Store { from: f, .. } => swap(f),
        StmtKind::Intrinsic { inputs, .. } => inputs.iter_mut().for_each(swap),
        StmtKind::Gather { indices, .. } => indices.iter_mut().for_each(swap),
        _ => {}
    }
}

#[test]
fn mutated_kernels_are_refused_or_match_the_vm() {
    let program = testkit::prelude();
    let target = kernel::Target::generic();
    let mut rng = Rng::new(0x005e_ed0f_c0de);
    let mut bases = Vec::new();
    for d in &program.defs {
        if let Outcome::Case(c) = case(program, &d.name, 3, &[], &[]) {
            let kernel = cpu(&c.block, &target, &c.label);
            bases.push((c, kernel));
        }
    }
    let (mut accepted, mut refused) = (Vec::new(), 0usize);
    for round in 0..500 {
        let (c, base) = &bases[rng.below(bases.len())];
        let mut mutant = base.clone();
        let n = sites(&mutant);
        if n == 0 {
            continue;
        }
        let mut at = rng.below(n);
        let Some(Some(what)) = mutate(&mut mutant, &mut at, &mut rng) else {
            continue;
        };
        let label = format!("{} with {what}", c.label);
        match emit_c(&mutant, &format!("fz{round}")) {
            Ok(p) => accepted.push((label, mutant, p, c.inputs.clone())),
            Err(_) => refused += 1,
        }
    }
    let source: String = accepted.iter().map(|a| a.2.source.as_str()).collect();
    let object = emit_common::scratch("fuzz");
    codegen::compile::Compiler::detect()
        .and_then(|cc| cc.compile(&source, &object))
        .unwrap_or_else(|e| panic!("{e}"));
    let (mut failures, mut both_failed) = (Vec::new(), 0usize);
    for (label, mutant, program, inputs) in &accepted {
        let kernel = codegen::load::Kernel::load(&object, program)
            .unwrap_or_else(|e| panic!("{label}: {e}"));
        let want = kernel::vm::run(mutant, inputs.clone());
        let got = codegen::exec::run_serial(&kernel, program, inputs.clone());
        match (want, got) {
            (Err(w), Err(g)) => {
                // The C fails only where the VM fails for the same reason.
                let same = ["by zero", "out of bounds"]
                    .iter()
                    .any(|f| w.contains(f) && g.contains(f));
                if same {
                    both_failed += 1;
                } else {
                    failures.push(format!(
                        "{label}: the VM failed with `{w}`, the C with `{g}`"
                    ));
                }
            }
            (Ok(want), Ok(got)) => {
                for b in &program.buffers {
                    let same = got[&b.name].len() == want[&b.name].len()
                        && got[&b.name]
                            .iter()
                            .zip(&want[&b.name])
                            .all(|(g, w)| emit_common::close(g, w));
                    if !same {
                        failures.push(format!(
                            "{label}: `{}` differs\n{}\n{}",
                            b.name,
                            kernel::print_block(mutant),
                            program.source
                        ));
                    }
                }
            }
            (w, g) => failures.push(format!(
                "{label}: the VM gave {:?}, the C {:?}",
                w.err(),
                g.err()
            )),
        }
    }
    let _ = std::fs::remove_file(&object);
    let _ = std::fs::remove_file(object.with_extension("c"));
    println!(
        "{} mutants emitted and matched the VM ({both_failed} of them failing on both), \
         {refused} refused",
        accepted.len()
    );
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    assert!(
        accepted.len() >= 200,
        "only {} mutants were emitted",
        accepted.len()
    );
}
