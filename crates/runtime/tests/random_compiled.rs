//! Random programs, compiled: every def comes from the shared generator
//! (`testkit::gen`) with the sizes of its symbols, is checked at those
//! sizes (`tc::check_source_with_sizes`; a def that does not check is a
//! generator bug and fails the test), compiled through the whole native
//! path (lowering, the cpu pass pipeline, C emission, the system C
//! compiler, the runtime) and run on seeded random inputs. Its outputs are
//! the reference interpreter's (floats within 1e-4 relative, integers
//! exactly), on two runs of one state, with library matmuls and, for every
//! case the library takes and a quarter of the others, without them; where
//! the interpreter fails (an integer division by zero) the compiled run
//! fails too, as a hand-written def checks on every run. Lowering may
//! refuse only forms it does not handle yet (`?:` pieces nested in padded
//! ones, or in a `+=`), never a matmul or a convolution, and few cases.
//!
//! The families are the kernels the compiled path specializes on
//! (`gen::kernels`: generic statements of rank 1 to 4 by `=` and the
//! reductions `+=! max=! min=! *=!`, alone, through a temporary or
//! accumulated onto; batched and transposed matmuls with a bias, a ReLU or
//! a second matmul; 2-d, depthwise and 1-d convolutions and poolings,
//! padded and strided), the families every property test shares
//! (`gen::FAMILIES`: reductions, assignments, `?:` concatenations, chains
//! and forks of statements through temporaries, `+=` onto an earlier
//! statement) and reductions by `max`, `min` and `*`. Between them they
//! have affine subscripts (`X(i + 2*k - 1, j)`), ranges fixed by `where`
//! or inferred, reads that fall outside their inputs (padding: such points
//! contribute nothing), odd sizes and rows of 16 and more (vectors with
//! tails, partial vectors, jammed indices), bodies with `+ - * /`, maxima
//! and minima, and float32, float64 and int32. The cases are the same on
//! every run (fixed seeds of `testkit::Rng`); a failure prints the def and
//! its sizes.

mod common;

use common::{cache, close, options};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};

use codegen::cache::KernelCache;
use interp::{Arg, Mode, RunError, Tensor};
use ir::{DType, Param, Program, Stmt};
use kernel::{Block, LowerErrorKind, RefDir, StmtKind};
use testkit::gen::{self, kernels, Family, Generated, Profile};
use testkit::Rng;

/// Each case costs a C compile or two (about 0.2 s each at `-O3`): 200 of
/// them take about 25 s on two cores.
const CASES: u64 = 200;
const SEED: u64 = 0x7e55_e7a5_eed5;

/// Statements stay below this many points of their iteration box (kernels
/// below four times as many), and inputs below this many elements, so the
/// interpreter is quick.
const MAX_POINTS: i64 = 60_000;
const MAX_ELEMENTS: i64 = 300_000;

/// Odd widths, and widths around and above the 16 float32 lanes of a
/// vector, for left-hand iterators; small ones for reductions.
const SIZES: [i64; 10] = [1, 3, 5, 7, 13, 16, 17, 19, 20, 33];
const SMALL: [i64; 7] = [1, 2, 3, 5, 7, 13, 17];

/// The kernels' families, the shared ones at their own weights, and
/// reductions by `max`, `min` and `*` (which the shared ones leave out).
/// The kernels weigh about two thirds of the draws, matmuls a fifth, so
/// that the library takes many cases.
const FAMILIES: [(&str, Family, u64); 4 + gen::FAMILIES.len()] = {
    let mut all = [("generic", kernels::generic as Family, 6); 4 + gen::FAMILIES.len()];
    all[1] = ("matmul", kernels::matmul, 5);
    all[2] = ("convolution", kernels::convolution, 5);
    all[3] = ("reduce_other", gen::generate::reduce_other, 1);
    let mut k = 0;
    while k < gen::FAMILIES.len() {
        all[4 + k] = gen::FAMILIES[k];
        k += 1;
    }
    all
};

/// Float32 mostly, float64 and int32 each about one case in seven; half
/// the float programs have float literals; bodies divide and take maxima
/// and minima.
const PROFILE: Profile = Profile {
    dtypes: &[(DType::F32, 70), (DType::F64, 15), (DType::I32, 15)],
    families: &FAMILIES,
    float_literals: 50,
    nonlinear: true,
    lhs_widths: &SIZES,
    reduction_widths: &SMALL,
    max_volume: MAX_POINTS,
    max_elements: MAX_ELEMENTS,
};

/// Every block of `b`'s nest, `b` first.
fn blocks(b: &Block) -> Vec<&Block> {
    let mut out = vec![b];
    let mut k = 0;
    while k < out.len() {
        let parent = out[k];
        for s in &parent.stmts {
            if let StmtKind::Block(child) = &s.kind {
                out.push(child);
            }
        }
        k += 1;
    }
    out
}

/// The multi-dimensional index of element `flat` of `shape`.
fn unravel(mut flat: usize, shape: &[usize]) -> Vec<usize> {
    let mut index = vec![0; shape.len()];
    for (x, &d) in index.iter_mut().zip(shape).rev() {
        *x = flat % d.max(1);
        flat /= d.max(1);
    }
    index
}

/// Builds def `random` for `sizes` (matmuls by the library or not) and runs it
/// twice on one state with `args`: every output must be the interpreter's,
/// or the run must fail where the interpreter failed. Lowering may refuse
/// a form it does not handle yet (its error); refusing a def that checks
/// and runs for any other reason is a bug.
fn compiled(
    library: bool,
    cache: &KernelCache,
    program: &Program,
    sizes: &HashMap<String, i64>,
    args: &HashMap<String, Arg>,
    want: &Result<Vec<(String, Tensor)>, RunError>,
    context: &str,
) -> Result<runtime::Executable, kernel::LowerError> {
    let exe = match runtime::build(program, "random", sizes, &options(library), cache) {
        Ok(exe) => exe,
        Err(runtime::BuildError::Lower(e)) if e.kind == LowerErrorKind::NotLoweredYet => {
            return Err(e)
        }
        Err(e) => panic!("{context}library {library}: {e}"),
    };
    let mut state = exe.state();
    for run in 0..2 {
        // A parameter that is also a result is updated in place; every run
        // starts from the caller's values.
        for (name, a) in args {
            if let Arg::Tensor(t) = a {
                exe.set_values(&mut state, name, &t.values()).unwrap();
            }
        }
        let ran = exe.run(&mut state, None);
        let want = match want {
            Ok(want) => want,
            Err(e) => {
                let Err(got) = ran else {
                    panic!("{context}library {library}, run {run}: the interpreter fails ({e}), the compiled def does not");
                };
                // The generated defs can fail only by dividing by zero, so a
                // compiled failure of any other kind is a bug of its own.
                assert!(
                    got.contains("by zero"),
                    "{context}library {library}, run {run}: the interpreter fails ({e}), the compiled def otherwise: {got}"
                );
                continue;
            }
        };
        ran.unwrap_or_else(|e| panic!("{context}library {library}, run {run}: {e}"));
        for (name, t) in want {
            let got = exe.values(&state, name).unwrap();
            let w = t.values();
            assert_eq!(got.len(), w.len(), "{context}`{name}`");
            for (i, (g, x)) in got.iter().zip(&w).enumerate() {
                assert!(
                    close(g, x),
                    "{context}library {library}, run {run}: `{name}`{:?} is {g:?}, want {x:?}",
                    unravel(i, t.shape())
                );
            }
        }
    }
    Ok(exe)
}

/// For a `#vector` block: whether its vectors are partial (fewer lanes than
/// a 512-bit register holds, the rest masked off) and whether an index
/// besides the lanes moves along the tensor it writes (jammed with them).
fn vector_kind(b: &Block) -> (bool, bool) {
    let Some(out) = b
        .refs
        .iter()
        .find(|r| r.from.is_some() && matches!(r.dir, RefDir::Out | RefDir::InOut))
    else {
        return (false, false);
    };
    let lanes = u64::from(512 / out.dtype.bits());
    let mut partial = false;
    let mut moving = 0;
    for ix in b
        .idxs
        .iter()
        .filter(|ix| ix.affine.is_none() && ix.range > 1)
    {
        for (a, dim) in out.access.iter().zip(&out.shape) {
            if a.terms.contains_key(&ix.name) {
                moving += 1;
                partial |= dim.stride == 1 && ix.range < lanes;
            }
        }
    }
    (partial, moving > 1)
}

/// What became of one case.
enum Outcome {
    /// Lowering refused a form it does not handle yet (the case and the
    /// error, for the report).
    NotLowered(String),
    /// The interpreter failed, and so did the compiled def.
    ProgramError,
    /// Compiled, run and compared; what it exercised.
    Compared(Vec<String>),
}

fn run_case(cache: &KernelCache, case: &Generated, seed: u64) -> Outcome {
    let source = case.prog.source("random");
    let context = format!(
        "case {seed:#x} (family {}), sizes {:?}:\n{source}",
        case.family, case.prog.sizes
    );
    let sizes: HashMap<String, i64> = case.prog.sizes.clone().into_iter().collect();
    let program = match tc::check_source_with_sizes(&source, &sizes) {
        Ok(checked) => checked.program,
        Err(diags) => {
            let diags: Vec<String> = diags.iter().map(ToString::to_string).collect();
            panic!("{context}the generator wrote a def that does not check: {diags:?}")
        }
    };
    let d = program.def("random").expect("def random");
    let bound =
        interp::bind_sizes(d, &HashMap::new(), &sizes).unwrap_or_else(|e| panic!("{context}{e}"));
    let mut args = HashMap::new();
    for (k, p) in d.params.iter().enumerate() {
        if let Param::Tensor(t) = p {
            let shape =
                interp::param_shape(d, t, &bound).unwrap_or_else(|e| panic!("{context}{e}"));
            let dtype = d.tensor(t).map_or(DType::F32, |x| x.dtype);
            let tensor = Tensor::random(dtype, &shape, seed.wrapping_mul(31) + k as u64);
            args.insert(t.clone(), Arg::Tensor(tensor));
        }
    }
    let want = interp::run(&program, "random", &args, &sizes, Mode::Real);
    let exe = match compiled(true, cache, &program, &bound, &args, &want, &context) {
        Ok(exe) => exe,
        Err(e) => {
            // Matmuls and convolutions are what the compiled path is for:
            // lowering takes every one of them.
            assert!(
                !["matmul", "convolution"].contains(&case.family),
                "{context}{e}"
            );
            return Outcome::NotLowered(format!("{context}{e}"));
        }
    };
    let Ok(outputs) = &want else {
        return Outcome::ProgramError;
    };
    let mut kinds = vec![format!("family {}", case.family)];
    // The C differs without the library only where it took a matmul; the
    // other cases recompile nothing, so a quarter of them is enough.
    if exe.library_steps() > 0 || seed.is_multiple_of(4) {
        compiled(false, cache, &program, &bound, &args, &want, &context)
            .expect("lowered with the library, so without it");
        kinds.push("also without library".to_string());
    }
    for s in &d.stmts {
        if let Stmt::Comp(c) = s {
            let bang = if c.init { "!" } else { "" };
            kinds.push(format!("op {}{bang}", c.op.symbol()));
        }
    }
    let first = d.tensor(&d.outputs[0]).expect("an output").dtype;
    kinds.push(format!("type {first}"));
    let lowered = kernel::lower_def(&program, "random", &bound).expect("lowered once already");
    let vectors: Vec<&Block> = blocks(&exe.block)
        .into_iter()
        .filter(|b| b.tags.contains("vector"))
        .collect();
    let flags = [
        ("two statements", d.stmts.len() > 1),
        // A reduction's reads that fall outside their inputs somewhere
        // become constraints of its block; a `?:` branch whose reads would
        // runs in a guard block, constrained by its condition.
        (
            "padded",
            blocks(&lowered)
                .iter()
                .any(|b| !b.tags.contains("guard") && !b.constraints.is_empty()),
        ),
        (
            "guarded branch",
            blocks(&lowered).iter().any(|b| b.tags.contains("guard")),
        ),
        ("rank 4", d.tensors.iter().any(|t| t.shape.len() == 4)),
        (
            "rows of 16 or more",
            outputs
                .iter()
                .any(|(_, t)| t.shape().last().is_some_and(|&w| w >= 16)),
        ),
        ("library matmul", exe.library_steps() > 0),
        ("vector", !vectors.is_empty()),
        ("partial vector", vectors.iter().any(|b| vector_kind(b).0)),
        ("jammed vector", vectors.iter().any(|b| vector_kind(b).1)),
        (
            "vector tail",
            blocks(&exe.block).iter().any(|b| {
                b.tags.contains("tail") && blocks(b).iter().any(|v| v.tags.contains("vector"))
            }),
        ),
    ];
    kinds.extend(
        flags
            .iter()
            .filter(|(_, on)| *on)
            .map(|(k, _)| k.to_string()),
    );
    Outcome::Compared(kinds)
}

/// What the cases were and what became of them.
#[derive(Debug, Default)]
struct Tally {
    cases: u64,
    not_lowered: Vec<String>,
    program_errors: u64,
    compared: u64,
    /// Compared cases by what they exercised.
    kinds: BTreeMap<String, u64>,
}

#[test]
fn random_programs_compile_to_what_the_interpreter_computes() {
    let cache = cache("random");
    // Nearly all the time goes to the C compiler, one process per case:
    // run cases on every core.
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get().min(4));
    let next = AtomicU64::new(0);
    let mut outcomes: Vec<(u64, Outcome)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let k = next.fetch_add(1, Ordering::Relaxed);
                        if k >= CASES {
                            return mine;
                        }
                        let seed = SEED + k;
                        let case = gen::generate(&mut Rng::new(seed), &PROFILE);
                        mine.push((k, run_case(&cache, &case, seed)));
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    outcomes.sort_by_key(|(k, _)| *k);
    let mut tally = Tally::default();
    for (_, outcome) in outcomes {
        tally.cases += 1;
        match outcome {
            Outcome::NotLowered(context) => tally.not_lowered.push(context),
            Outcome::ProgramError => tally.program_errors += 1,
            Outcome::Compared(kinds) => {
                tally.compared += 1;
                for k in kinds {
                    *tally.kinds.entry(k).or_default() += 1;
                }
            }
        }
    }
    println!("{tally:#?}");
    // Skipping everything would pass vacuously.
    assert!(
        tally.compared * 10 >= tally.cases * 7,
        "only {} of {} cases compared: {tally:#?}",
        tally.compared,
        tally.cases
    );
    // The core's statements (the shared families' and the generic one's)
    // put `?:` pieces into reductions whose reads may fall outside their
    // inputs, sometimes nested or accumulated (`+=`): forms that lowering
    // refuses as not lowered yet. They must stay few, or the cases would
    // mostly test the refusal.
    assert!(
        tally.not_lowered.len() as u64 * 8 <= tally.cases,
        "lowering refused {} cases: {tally:#?}",
        tally.not_lowered.len()
    );
    assert!(
        tally.program_errors >= 1,
        "no case checks that a failing program fails compiled: {tally:#?}"
    );
    let at_least = [
        ("padded", 20),
        ("guarded branch", 5),
        ("rank 4", 20),
        ("rows of 16 or more", 20),
        ("library matmul", 15),
        ("two statements", 15),
        ("vector", 30),
        ("partial vector", 5),
        ("vector tail", 5),
        ("jammed vector", 5),
    ];
    for (family, _, _) in FAMILIES {
        let kind = format!("family {family}");
        assert!(
            tally.kinds.contains_key(&kind),
            "no case of {kind} compared: {tally:#?}"
        );
    }
    for (kind, want) in at_least {
        let got = tally.kinds.get(kind).copied().unwrap_or(0);
        assert!(
            got >= want,
            "{got} cases of {kind}, want {want}: {tally:#?}"
        );
    }
}

/// An int32 def that divides by an input holding a zero fails on the
/// interpreter, and compiled (with library matmuls or without, on both
/// runs of one state) fails too, whether the zero lies among the first 16
/// elements of a row (the block of 16 lanes the pipeline makes of them) or
/// in the tail of 3 after them. The random cases come upon such a def only
/// now and then.
#[test]
fn an_integer_division_by_zero_fails_compiled_too() {
    let cache = cache("division");
    let source = "def random(int32(N, M) A, int32(M) B) -> (O) {\n  O(i, j) = A(i, j) / B(j)\n}\n";
    let (n, m) = (3, 19);
    let sizes = HashMap::from([("N".to_string(), n), ("M".to_string(), m)]);
    let program = tc::check_source_with_sizes(source, &sizes)
        .expect("the def checks")
        .program;
    let a = Tensor::random(DType::I32, &[n as usize, m as usize], 1);
    for zero in [3, 17] {
        let b: Vec<i64> = (0..m).map(|j| if j == zero { 0 } else { j + 1 }).collect();
        let args = HashMap::from([
            ("A".to_string(), Arg::Tensor(a.clone())),
            (
                "B".to_string(),
                Arg::Tensor(Tensor::from_i64(DType::I32, &[m as usize], b)),
            ),
        ]);
        let want = interp::run(&program, "random", &args, &sizes, Mode::Real);
        assert!(
            want.as_ref().is_err_and(|e| e.message.contains("by zero")),
            "the interpreter divides by B({zero}) = 0: {want:?}"
        );
        let context = format!("B({zero}) = 0:\n{source}");
        for library in [true, false] {
            compiled(library, &cache, &program, &sizes, &args, &want, &context)
                .expect("the def lowers");
        }
    }
}
