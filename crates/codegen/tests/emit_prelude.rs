//! Every def of `ops/prelude.tc` through the cpu pipeline, emitted as C,
//! compiled and run against the interpreter (floats within 1e-4 relative),
//! with every size symbol bound to 3 and then to 5 (which divides neither
//! the vector width nor most tiles), integer scalars 1 and float scalars
//! 0.5. One test per target (generic, 512-bit vectors), each compiling all
//! its kernels as one C file, so the two run in parallel.

mod emit_common;

use emit_common::{case, job, run_jobs, targets, Outcome};

/// Emits, compiles and checks every prelude def for target number `t`.
fn sweep(t: usize) {
    let program = testkit::prelude();
    let targets = targets();
    let target = &targets[t];
    let (mut jobs, mut not_lowered) = (Vec::new(), Vec::new());
    for d in &program.defs {
        for size in [3, 5] {
            match case(program, &d.name, size, &[], &[]) {
                Outcome::Case(c) => {
                    let prefix = format!("p{}", jobs.len());
                    jobs.push(job(&c, target, &prefix));
                }
                Outcome::Skipped => {}
                Outcome::NotLowered(e) => not_lowered.push(e),
            }
        }
    }
    let n = run_jobs(&format!("prelude-{}", target.0), &jobs);
    println!(
        "{n} prelude kernels for {} compiled and matched; not lowered yet: {}",
        target.0,
        not_lowered.len()
    );
    for e in &not_lowered {
        println!("  {e}");
    }
    assert!(n >= 300, "only {n} prelude kernels ran");
}

#[test]
fn every_prelude_def_matches_the_interpreter_on_the_generic_target() {
    sweep(0);
}

#[test]
fn every_prelude_def_matches_the_interpreter_with_512_bit_vectors() {
    sweep(1);
}
