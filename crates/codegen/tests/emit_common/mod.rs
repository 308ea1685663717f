//! Helpers shared by the emitter's tests: lowering a def of a TC file for
//! concrete sizes with seeded inputs and the interpreter's outputs, running
//! the cpu pipeline for a target, and compiling many emitted programs into
//! ONE shared object (so the C compiler runs once per test, not once per
//! kernel), then running each with `codegen::exec::run_serial` and
//! comparing with the interpreter.

#![allow(dead_code)] // Each test binary uses a different subset.

use std::collections::HashMap;
use std::path::PathBuf;

use codegen::compile::Compiler;
use codegen::emit::{emit_c, CProgram};
use codegen::exec::run_serial;
use codegen::load::Kernel;
use interp::{Arg, Mode, Tensor};
use ir::{DType, Param, Program, Value};
use kernel::{Block, Target};

/// A TC file of the repository, checked.
pub fn load(path: &str) -> Program {
    testkit::load(path)
}

/// A def lowered for concrete sizes, with seeded inputs as VM buffers and
/// the interpreter's outputs on them.
pub struct Case {
    pub label: String,
    pub block: Block,
    pub inputs: kernel::vm::Buffers,
    pub want: Vec<(String, Tensor)>,
}

/// What became of a def at some sizes.
pub enum Outcome {
    Case(Box<Case>),
    /// The interpreter refuses these arguments (sizes that do not fit the
    /// def), so there is nothing to compare with.
    Skipped,
    /// Lowering does not handle the def yet (its message).
    NotLowered(String),
}

/// Lowers `def` with every size symbol bound to `size` (overridden by
/// `sizes`), integer scalars 1 (or `scalars`) and float scalars 0.5. Float
/// tensors are seeded random values; integer tensors alternate 0 and 1
/// (valid indices for any table).
pub fn case(
    program: &Program,
    def: &str,
    size: i64,
    sizes: &[(&str, i64)],
    scalars: &[(&str, Value)],
) -> Outcome {
    let d = program.def(def).unwrap_or_else(|| panic!("no def `{def}`"));
    let mut given: HashMap<String, i64> = d.size_symbols().into_iter().map(|s| (s, size)).collect();
    for (k, v) in sizes {
        given.insert(k.to_string(), *v);
    }
    let mut args: HashMap<String, Arg> = HashMap::new();
    for p in &d.params {
        if let Param::Scalar { name, dtype } = p {
            let v = scalars
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| *v)
                .unwrap_or(if dtype.is_float() {
                    Value::Float(0.5)
                } else {
                    Value::Int(1)
                });
            args.insert(name.clone(), Arg::Scalar(v));
        }
    }
    let Ok(bound) = interp::bind_sizes(d, &args, &given) else {
        return Outcome::Skipped;
    };
    for (k, p) in d.params.iter().enumerate() {
        if let Param::Tensor(t) = p {
            let Ok(shape) = interp::param_shape(d, t, &bound) else {
                return Outcome::Skipped;
            };
            let dtype = d.tensor(t).map_or(DType::F32, |x| x.dtype);
            let tensor = Tensor::sample(dtype, &shape, 1000 + size as u64 * 31 + k as u64);
            args.insert(t.clone(), Arg::Tensor(tensor));
        }
    }
    let Ok(want) = interp::run(program, def, &args, &given, Mode::Real) else {
        return Outcome::Skipped;
    };
    let block = match kernel::lower_def(program, def, &bound) {
        Ok(b) => b,
        Err(e) => return Outcome::NotLowered(format!("{def}: {e}")),
    };
    let inputs = args
        .iter()
        .map(|(k, a)| match a {
            Arg::Tensor(t) => (k.clone(), t.values()),
            Arg::Scalar(v) => (k.clone(), vec![*v]),
        })
        .collect();
    let mut label = format!("{def} at {size}");
    for (k, v) in sizes {
        label.push_str(&format!(" {k}={v}"));
    }
    Outcome::Case(Box::new(Case {
        label,
        block,
        inputs,
        want,
    }))
}

/// The targets every kernel is compiled for: the generic one (256-bit
/// vectors) and one with 512-bit vectors.
pub fn targets() -> Vec<(&'static str, Target)> {
    vec![
        ("generic", Target::generic()),
        (
            "avx512",
            Target {
                name: "avx512".to_string(),
                vector_bits: 512,
                vector_registers: 32,
                ..Target::generic()
            },
        ),
    ]
}

/// `block` after the cpu pipeline for `target`.
pub fn cpu(block: &Block, target: &Target, label: &str) -> Block {
    let passes = kernel::parse_pipeline(kernel::builtin_pipeline("cpu").unwrap_or_default())
        .unwrap_or_else(|e| panic!("the cpu pipeline: {e}"));
    let mut b = block.clone();
    kernel::run_pipeline(&mut b, &passes, target, &mut |_, _| {})
        .unwrap_or_else(|e| panic!("{label}: {e}"));
    b
}

/// An emitted program and what it must compute.
pub struct Job {
    pub label: String,
    pub program: CProgram,
    pub kernel: Block,
    pub inputs: kernel::vm::Buffers,
    pub want: Vec<(String, Tensor)>,
}

/// Emits `case` after the cpu pipeline for `target` as a job with symbols
/// `{prefix}_*`.
pub fn job(case: &Case, target: &(&str, Target), prefix: &str) -> Job {
    let label = format!("{} ({})", case.label, target.0);
    let kernel = cpu(&case.block, &target.1, &label);
    let program = emit_c(&kernel, prefix)
        .unwrap_or_else(|e| panic!("{label}: {e}\n{}", kernel::print_block(&kernel)));
    Job {
        label,
        program,
        kernel,
        inputs: case.inputs.clone(),
        want: case.want.clone(),
    }
}

/// Whether two values agree: integers and booleans exactly, floats within
/// 1e-4 relative (absolute below magnitude 1), equal infinities, or both NaN.
pub fn close(got: &Value, want: &Value) -> bool {
    match (got, want) {
        (Value::Float(a), Value::Float(b)) => {
            a == b || (a - b).abs() <= 1e-4 * b.abs().max(1.0) || (a.is_nan() && b.is_nan())
        }
        _ => got == want,
    }
}

/// A directory for this test binary's objects.
pub fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("emit");
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir.join(format!("{name}-{}.so", std::process::id()))
}

/// Compiles every job's program into one object named after `name`, runs
/// each serially and compares its outputs with the interpreter's. Returns
/// the number of jobs run; panics listing every failure.
pub fn run_jobs(name: &str, jobs: &[Job]) -> usize {
    let mut source = String::new();
    for j in jobs {
        source.push_str(&j.program.source);
        source.push('\n');
    }
    let object = scratch(name);
    let compiler = Compiler::detect().unwrap_or_else(|e| panic!("{e}"));
    compiler
        .compile(&source, &object)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut failures = Vec::new();
    for j in jobs {
        let kernel =
            Kernel::load(&object, &j.program).unwrap_or_else(|e| panic!("{}: {e}", j.label));
        let got = match run_serial(&kernel, &j.program, j.inputs.clone()) {
            Ok(g) => g,
            Err(e) => {
                failures.push(format!("{}: {e}", j.label));
                continue;
            }
        };
        for (name, t) in &j.want {
            let want = t.values();
            let got = &got[name];
            let bad = got.len() != want.len() || got.iter().zip(&want).any(|(g, w)| !close(g, w));
            if bad {
                let first = got
                    .iter()
                    .zip(&want)
                    .position(|(g, w)| !close(g, w))
                    .unwrap_or(0);
                failures.push(format!(
                    "{}: output `{name}` differs from the interpreter's (first at {first}: {:?} vs {:?})\n{}\n{}",
                    j.label,
                    got.get(first),
                    want.get(first),
                    kernel::print_block(&j.kernel),
                    j.program.source
                ));
            }
        }
    }
    let _ = std::fs::remove_file(&object);
    let _ = std::fs::remove_file(object.with_extension("c"));
    assert!(
        failures.is_empty(),
        "{} failures among {} kernels:\n{}",
        failures.len(),
        jobs.len(),
        failures.join("\n\n")
    );
    jobs.len()
}
