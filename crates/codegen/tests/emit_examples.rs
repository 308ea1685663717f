//! Every program of `examples/` through the cpu pipeline (generic and
//! 512-bit targets), emitted as C, compiled and run: the C computes the
//! interpreter's results (floats within 1e-4 relative). Sizes: every size
//! symbol 3, then 5, and a few larger shapes that 16 does not divide, so
//! that vector tails, partial tiles and padded edges all run. All kernels
//! share one C file, compiled once. A second test emits every example as
//! lowered and after each pass alone, so that the emitter also meets the
//! shapes the pipeline passes through.

mod emit_common;

use codegen::emit::emit_c;
use emit_common::{case, job, load, run_jobs, targets, Job, Outcome};
use ir::Value;

/// Every `.tc` file of `examples/`, as paths from the workspace root.
fn example_files() -> Vec<String> {
    let root = format!("{}/../../examples", env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    for dir in ["paper", "quickstart"] {
        let entries = std::fs::read_dir(format!("{root}/{dir}"))
            .unwrap_or_else(|e| panic!("examples/{dir}: {e}"));
        for e in entries {
            let name = e.expect("a readable directory entry").file_name();
            let name = name.to_string_lossy();
            if name.ends_with(".tc") {
                out.push(format!("examples/{dir}/{name}"));
            }
        }
    }
    out.sort();
    out
}

/// A def at explicit sizes: file, def, sizes, scalars.
type Larger = (
    &'static str,
    &'static str,
    Vec<(&'static str, i64)>,
    Vec<(&'static str, Value)>,
);

#[test]
fn every_example_compiles_to_c_that_matches_the_interpreter() {
    let targets = targets();
    let mut cases = Vec::new();
    let mut not_lowered = Vec::new();
    for file in example_files() {
        let program = load(&file);
        for d in &program.defs {
            for size in [3, 5] {
                match case(&program, &d.name, size, &[], &[]) {
                    Outcome::Case(c) => cases.push(c),
                    Outcome::Skipped => {}
                    Outcome::NotLowered(e) => not_lowered.push(e),
                }
            }
        }
    }
    let larger: [Larger; 6] = [
        (
            "examples/paper/sgemm.tc",
            "sgemm",
            vec![("N", 37), ("M", 19), ("K", 23)],
            vec![("a", Value::Float(1.5)), ("b", Value::Float(-0.5))],
        ),
        (
            "examples/paper/tmm.tc",
            "tmm",
            vec![("M", 40), ("K", 97), ("N", 35)],
            vec![],
        ),
        (
            "examples/paper/mv.tc",
            "mv",
            vec![("M", 33), ("K", 21)],
            vec![],
        ),
        (
            "examples/paper/conv2d.tc",
            "conv2d",
            vec![
                ("B", 2),
                ("IP", 3),
                ("H", 19),
                ("W", 21),
                ("OP", 5),
                ("KH", 3),
                ("KW", 2),
            ],
            vec![],
        ),
        (
            "examples/quickstart/layer.tc",
            "layer",
            vec![
                ("N", 1),
                ("C", 2),
                ("H", 17),
                ("W", 19),
                ("F", 3),
                ("KH", 3),
                ("KW", 3),
            ],
            vec![],
        ),
        (
            "examples/paper/sconv2d.tc",
            "sconv2d",
            vec![
                ("N", 2),
                ("C", 2),
                ("H", 21),
                ("W", 19),
                ("F", 3),
                ("KH", 3),
                ("KW", 2),
            ],
            vec![("sh", Value::Int(2)), ("sw", Value::Int(3))],
        ),
    ];
    for (file, def, sizes, scalars) in &larger {
        match case(&load(file), def, 1, sizes, scalars) {
            Outcome::Case(c) => cases.push(c),
            Outcome::Skipped => panic!("{def}: the interpreter refuses {sizes:?}"),
            Outcome::NotLowered(e) => panic!("{e}"),
        }
    }
    let mut jobs = Vec::new();
    for c in &cases {
        for t in &targets {
            jobs.push(job(c, t, &format!("ex{}", jobs.len())));
        }
    }
    let n = run_jobs("examples", &jobs);
    println!(
        "{n} example kernels compiled and matched; not lowered yet: {}",
        not_lowered.len()
    );
    for e in &not_lowered {
        println!("  {e}");
    }
    assert!(n >= 80, "only {n} example kernels ran");
}

#[test]
fn every_example_after_each_pass_alone_matches_the_interpreter() {
    let target = kernel::Target::generic();
    let mut passes: Vec<Vec<String>> = vec![Vec::new()];
    passes.extend(
        kernel::pass_names()
            .into_iter()
            .map(|p| vec![p.to_string()]),
    );
    let mut jobs = Vec::new();
    for file in example_files() {
        let program = load(&file);
        for d in &program.defs {
            let Outcome::Case(c) = case(&program, &d.name, 5, &[], &[]) else {
                continue;
            };
            for p in &passes {
                let label = format!("{} after {p:?}", c.label);
                let mut kernel = c.block.clone();
                kernel::run_pipeline(&mut kernel, p, &target, &mut |_, _| {})
                    .unwrap_or_else(|e| panic!("{label}: {e}"));
                let program = emit_c(&kernel, &format!("pass{}", jobs.len()))
                    .unwrap_or_else(|e| panic!("{label}: {e}"));
                jobs.push(Job {
                    label,
                    program,
                    kernel,
                    inputs: c.inputs.clone(),
                    want: c.want.clone(),
                });
            }
        }
    }
    let n = run_jobs("passes", &jobs);
    println!("{n} kernels (examples after each pass) compiled and matched");
    assert!(n >= 150, "only {n} kernels ran");
}
