//! The runtime end to end: defs compiled through the cpu pipeline, the C
//! backend and a fresh kernel cache, run with their parallel steps split
//! over the rayon pool and their temporaries in planned (shared) slots,
//! give the interpreter's results (floats within 1e-4 relative). A second
//! run on the same state gives the same results again (temporaries are
//! zeroed, nothing leaks from one run into the next) on the calling thread
//! with every step whole, and a second build hits the cache.

mod common;

use common::{cache, close, options};
use std::collections::HashMap;

use codegen::cache::KernelCache;
use interp::{Arg, Mode, Tensor};
use ir::{DType, Param, Program, Value};
use runtime::Placement;

fn load(path: &str) -> Program {
    testkit::load(path)
}

/// Compiles and runs `def` at `sizes` with seeded inputs, matmuls by the
/// library or not; compares every output with the interpreter, twice on
/// one state.
fn check_with(
    library: bool,
    cache: &KernelCache,
    program: &Program,
    def: &str,
    sizes: &[(&str, i64)],
    scalars: &[(&str, Value)],
) -> runtime::Executable {
    check_options(&options(library), cache, program, def, sizes, scalars)
}

/// [`check_with`] with the given build options.
fn check_options(
    options: &runtime::Options,
    cache: &KernelCache,
    program: &Program,
    def: &str,
    sizes: &[(&str, i64)],
    scalars: &[(&str, Value)],
) -> runtime::Executable {
    let d = program.def(def).unwrap();
    let given: HashMap<String, i64> = sizes.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    let mut args: HashMap<String, Arg> = scalars
        .iter()
        .map(|(k, v)| (k.to_string(), Arg::Scalar(*v)))
        .collect();
    let bound = interp::bind_sizes(d, &args, &given).unwrap();
    for (k, p) in d.params.iter().enumerate() {
        if let Param::Tensor(t) = p {
            let shape = interp::param_shape(d, t, &bound).unwrap();
            let dtype = d.tensor(t).map_or(DType::F32, |x| x.dtype);
            args.insert(
                t.clone(),
                Arg::Tensor(Tensor::random(dtype, &shape, 7 + k as u64)),
            );
        }
    }
    let want = interp::run(program, def, &args, &given, Mode::Real).unwrap();
    let exe = runtime::build(program, def, &bound, options, cache)
        .unwrap_or_else(|e| panic!("{def}: {e}"));
    let mut state = exe.state();
    for (name, a) in &args {
        let v = match a {
            Arg::Tensor(t) => t.values(),
            Arg::Scalar(v) => vec![*v],
        };
        exe.set_values(&mut state, name, &v).unwrap();
    }
    for run in 0..2 {
        // A parameter that is also a result is updated in place; put the
        // caller's values back before running again.
        if run == 1 {
            for (name, a) in &args {
                if let Arg::Tensor(t) = a {
                    exe.set_values(&mut state, name, &t.values()).unwrap();
                }
            }
        }
        // The first run splits parallel steps over the pool, the second
        // runs every step whole on this thread: both must compute the
        // same, whichever the executable would pick.
        let placement = [Placement::Pool, Placement::Here][run];
        exe.run_placed(&mut state, None, placement)
            .unwrap_or_else(|e| panic!("{def}: {e}"));
        for (name, t) in &want {
            let got = exe.values(&state, name).unwrap();
            let w = t.values();
            assert_eq!(got.len(), w.len());
            for (i, (g, x)) in got.iter().zip(&w).enumerate() {
                assert!(
                    close(g, x),
                    "{def} run {run}: `{name}`[{i}] is {g:?}, want {x:?}"
                );
            }
        }
    }
    exe
}

/// [`check_with`] with library matmuls.
fn check(
    cache: &KernelCache,
    program: &Program,
    def: &str,
    sizes: &[(&str, i64)],
    scalars: &[(&str, Value)],
) -> runtime::Executable {
    check_with(true, cache, program, def, sizes, scalars)
}

/// A file, a def, its sizes, how many matmuls the library runs, and how
/// many zero fills before them are skipped.
type Case = (
    &'static str,
    &'static str,
    Vec<(&'static str, i64)>,
    usize,
    usize,
);

#[test]
fn library_matmuls_and_generated_ones_match_the_interpreter() {
    // Each matmul form, with the library and as generated code; the MLP's
    // bias and ReLU steps run as generated code around the library calls.
    let cache = cache("library");
    let cases: [Case; 4] = [
        (
            "examples/paper/tmm.tc",
            "tmm",
            vec![("M", 37), ("K", 29), ("N", 41)],
            1,
            1,
        ),
        (
            "examples/paper/tbmm.tc",
            "tbmm",
            vec![("B", 5), ("N", 7), ("M", 9), ("K", 6)],
            1,
            1,
        ),
        (
            "examples/paper/outerProductMM.tc",
            "outerProductMM",
            vec![("P", 3), ("Q", 5), ("R", 7), ("S", 2), ("T", 6)],
            1,
            1,
        ),
        (
            "examples/paper/mlp.tc",
            "MLP3",
            vec![("B", 9), ("N", 33), ("O", 17), ("P", 20), ("Q", 5)],
            3,
            0,
        ),
    ];
    for (file, def, sizes, matmuls, skipped) in cases {
        let p = load(file);
        let exe = check_with(true, &cache, &p, def, &sizes, &[]);
        assert_eq!(exe.library_steps(), matmuls, "{def}");
        assert_eq!(exe.skipped_steps(), skipped, "{def}");
        let exe = check_with(false, &cache, &p, def, &sizes, &[]);
        assert_eq!(exe.library_steps(), 0, "{def}");
    }
}

#[test]
fn compiled_programs_match_the_interpreter() {
    let cache = cache("examples");
    let mlp = load("examples/paper/mlp.tc");
    let exe = check(
        &cache,
        &mlp,
        "MLP3",
        &[("B", 9), ("N", 33), ("O", 17), ("P", 20), ("Q", 5)],
        &[],
    );
    assert!(
        exe.c
            .steps
            .iter()
            .any(|s| s.parallel.is_some_and(|r| r > 1)),
        "MLP3 should have a partitioned step"
    );
    // 88 kFLOP stay on the calling thread; 1.8 MFLOP go to the pool.
    let tmm = load("examples/paper/tmm.tc");
    let small = check(&cache, &tmm, "tmm", &[("M", 37), ("K", 29), ("N", 41)], &[]);
    assert_eq!(small.placement(), Placement::Here);
    let large = check(&cache, &tmm, "tmm", &[("M", 96), ("K", 96), ("N", 96)], &[]);
    assert_eq!(large.placement(), Placement::Pool);
    check(
        &cache,
        &load("examples/paper/tbmm.tc"),
        "tbmm",
        &[("B", 5), ("N", 7), ("M", 9), ("K", 6)],
        &[],
    );
    check(
        &cache,
        &load("examples/quickstart/layer.tc"),
        "layer",
        &[
            ("N", 2),
            ("C", 3),
            ("H", 9),
            ("W", 11),
            ("F", 4),
            ("KH", 3),
            ("KW", 3),
        ],
        &[],
    );
    check(
        &cache,
        &load("examples/paper/sgemm.tc"),
        "sgemm",
        &[("N", 20), ("M", 13), ("K", 18)],
        &[("a", Value::Float(1.5)), ("b", Value::Float(-0.5))],
    );
    check(
        &cache,
        &load("examples/paper/2LUT.tc"),
        "2LUT",
        &[
            ("E1", 50),
            ("E2", 40),
            ("D", 19),
            ("B", 6),
            ("L1", 4),
            ("L2", 3),
        ],
        &[],
    );
    let before = cache.counters();
    check(
        &cache,
        &load("examples/paper/tmm.tc"),
        "tmm",
        &[("M", 37), ("K", 29), ("N", 41)],
        &[],
    );
    let after = cache.counters();
    assert_eq!(after.compiles, before.compiles, "a second build recompiled");
}

#[test]
fn convolutions_run_as_masked_vectors_with_jammed_filters() {
    let cache = cache("convolutions");
    let gconv = load("bench/workloads/gconv.tc");
    // Rows of 14, 7 and 5 are partial vectors whose padded edges mask
    // lanes; 16, 8 and 12 filters are jammed with the lanes.
    for (h, w, f) in [(14, 14, 16), (5, 7, 8), (3, 5, 12)] {
        let exe = check(
            &cache,
            &gconv,
            "gconv",
            &[
                ("N", 2),
                ("G", 3),
                ("C", 4),
                ("F", f),
                ("H", h),
                ("W", w),
                ("KH", 3),
                ("KW", 3),
            ],
            &[],
        );
        let source = &exe.c.source;
        assert!(
            source.contains("_mm512_maskz_loadu_ps(") && source.contains("_mm512_set1_ps(tsr_b"),
            "gconv {h}x{w}, {f} filters: the reduction is not vector code:\n{source}"
        );
    }
    // A row of 20: one full vector and a partial one of 4 lanes.
    check(
        &cache,
        &load("bench/workloads/conv3x3.tc"),
        "conv3x3",
        &[
            ("N", 1),
            ("C", 3),
            ("H", 4),
            ("W", 20),
            ("F", 8),
            ("KH", 3),
            ("KW", 3),
        ],
        &[],
    );
}

/// A chain of `n` statements `A{k}(i) = A{k-1}(i) + c_k` with `c_k` one of
/// `distinct` constants: statements `distinct` apart compute the same thing.
fn chain(n: usize, distinct: usize) -> Program {
    let mut src = format!("def chain(float(N) A0) -> (A{n}) {{\n");
    for k in 1..=n {
        let c = k % distinct;
        src += &format!("  A{k}(i) = A{}(i) + {c}.5\n", k - 1);
    }
    src += "}\n";
    tc::check_source(&src).unwrap().program
}

#[test]
fn steps_share_functions_and_a_program_of_several_units_runs() {
    let distinct = codegen::emit::FUNCTIONS_PER_UNIT + 3;
    let cache = cache("units");
    let exe = check(
        &cache,
        &chain(3 * distinct, distinct),
        "chain",
        &[("N", 50)],
        &[],
    );
    let c = &exe.c;
    // The pipeline may split a statement into a few steps (a vector body
    // and its tail); the steps of statements `distinct` apart share their
    // functions.
    let per = c.steps.len() / (3 * distinct);
    assert_eq!(c.steps.len(), per * 3 * distinct);
    for k in per * distinct..c.steps.len() {
        assert_eq!(c.steps[k].function, c.steps[k - per * distinct].function);
    }
    assert_eq!(c.functions.len(), per * distinct, "{}", c.source);
    assert!(c.units.len() >= 2, "{} units", c.units.len());
    assert_eq!(cache.counters().compiles, c.units.len() as u64);
}

#[test]
fn a_damaged_unit_is_rebuilt_alone() {
    let distinct = codegen::emit::FUNCTIONS_PER_UNIT + 3;
    let program = chain(distinct, distinct);
    let (dir, compiler, units, object) = {
        let cache = cache("damaged-unit");
        let exe = check(&cache, &program, "chain", &[("N", 40)], &[]);
        let target = options(true).target.codegen_text();
        let key = cache.key(&exe.c.units[1].source, &target);
        let object = cache.dir().join(format!("{key}.so"));
        let dir = cache.dir().to_path_buf();
        (dir, cache.compiler().clone(), exe.c.units.len(), object)
    };
    assert!(units >= 2, "{units} units");
    // A truncated object (no longer loaded: cutting a loaded one would
    // fault its missing pages): its sidecar no longer matches.
    let bytes = std::fs::read(&object).unwrap();
    std::fs::write(&object, &bytes[..bytes.len() / 2]).unwrap();
    let fresh = KernelCache::open(dir, compiler).unwrap();
    check(&fresh, &program, "chain", &[("N", 40)], &[]);
    assert_eq!(std::fs::read(&object).unwrap().len(), bytes.len());
    assert_eq!(
        fresh.counters(),
        codegen::cache::CacheCounters {
            compiles: 1,
            disk_hits: units as u64 - 1,
            memory_hits: 0,
        }
    );
}

#[test]
fn temporaries_share_memory_and_start_at_zero() {
    // Three layers through temporaries: t1 and t3 do not overlap in time,
    // so they share a slot; t3 must still start at zero (its statement
    // fills only its upper half, and the slot held t1 before).
    let src = "def chain(float(N) x) -> (y) {
  t1(i) = x(i) * 2.0 where i in 0:N
  t2(i) = t1(i) + 1.0 where i in 0:N
  t3(i) = t2(i) where i in N/2:N
  y(i) = t3(i) + t2(i) where i in 0:N
}
";
    let program = tc::check_source(src).unwrap().program;
    let cache = cache("temps");
    let exe = check(&cache, &program, "chain", &[("N", 64)], &[]);
    let slot_of = |name: &str| {
        let k = exe.c.buffers.iter().position(|b| b.name == name).unwrap();
        exe.plan.map[k]
    };
    assert_eq!(slot_of("t1"), slot_of("t3"), "{:?}", exe.plan);
    // t1 and t2 are written whole by their first step, so their memory is
    // not zeroed first; t3 is not.
    let overwritten = |name: &str| {
        exe.c
            .buffers
            .iter()
            .any(|b| b.name == name && b.overwritten)
    };
    assert!(overwritten("t1") && overwritten("t2") && !overwritten("t3"));
    // A second run on the same state, where t3's slot holds t1's values of
    // this run and its own of the last, computes the same.
    let mut state = exe.state();
    let x = Tensor::random(DType::F32, &[64], 7);
    exe.bind(&mut state, "x", &x).unwrap();
    exe.run(&mut state, None).unwrap();
    let first = exe.output(&state, "y").unwrap().to_f64_vec();
    exe.run(&mut state, None).unwrap();
    assert_eq!(exe.output(&state, "y").unwrap().to_f64_vec(), first);
    let xs = x.to_f64_vec();
    for (i, &y) in first.iter().enumerate() {
        let t2 = f64::from(xs[i] as f32 * 2.0 + 1.0);
        let t3 = if i >= 32 { t2 } else { 0.0 };
        assert_eq!(y, f64::from((t3 + t2) as f32), "y({i})");
    }
}

/// Reshapes in row-major order are views: their steps are skipped and
/// their results share their input's slot (a chain of them, and one of a
/// parameter, too), while a copy that reorders elements runs; a step may
/// read a buffer and its view at once.
#[test]
fn reshapes_are_views_of_their_input() {
    let src = "def reshape_r2_r3(float(I0,I1) X, int32 O0, int32 O1, int32 O2) -> (Y) {
  Y(y0, y1, y2) = X(t / I1, t % I1)
    where y0 in 0:O0, y1 in 0:O1, y2 in 0:O2, t = (y0 * O1 + y1) * O2 + y2
}
def reshape_r3_r2(float(I0,I1,I2) X, int32 O0, int32 O1) -> (Y) {
  Y(y0, y1) = X(t / I2 / I1, t / I2 % I1, t % I2)
    where y0 in 0:O0, y1 in 0:O1, t = y0 * O1 + y1
}
def columns(float(I0,I1) X, int32 O0, int32 O1) -> (Y) {
  Y(y0, y1) = X(t % I0, t / I0)
    where y0 in 0:O0, y1 in 0:O1, t = y0 * O1 + y1
}
def f(float(N, M) A) -> (float(3, 2, 8) Z, float(6, 8) W, float(6, 8) C) {
  T(i, j) = A(i, j) + 1.0
  U = reshape_r2_r3(T, 3, 2, 8)
  R = reshape_r2_r3(A, 3, 2, 8)
  Z(i, j, k) = U(i, j, k) * R(i, j, k)
  V = reshape_r3_r2(U, 6, 8)
  W(i, j) = V(i, j) + T(i, j)
  P = columns(T, 6, 8)
  C(i, j) = P(i, j) - A(i, j)
}
";
    let program = tc::check_source(src).unwrap().program;
    let cache = cache("views");
    let exe = check(&cache, &program, "f", &[("N", 6), ("M", 8)], &[]);
    let slot_of = |name: &str| {
        let k = exe.c.buffers.iter().position(|b| b.name == name).unwrap();
        exe.plan.map[k]
    };
    assert_eq!(exe.view_steps(), 3);
    assert_eq!(slot_of("U"), slot_of("T"));
    assert_eq!(slot_of("V"), slot_of("T"));
    assert_eq!(slot_of("R"), slot_of("A"));
    assert_ne!(slot_of("P"), slot_of("T"));
}

/// Callers' tensors are bound without copies and results handed out over
/// their slots; a result a caller still holds is not overwritten by the
/// next run; an input never bound is an error naming it.
#[test]
fn tensors_are_bound_and_handed_out_without_copies() {
    let program = tc::check_source(
        "def scale(float(N) X, float(N) Y) -> (O) {\n  O(i) = X(i) * 2.0 + Y(i)\n}\n",
    )
    .unwrap()
    .program;
    let sizes: HashMap<String, i64> = [("N".to_string(), 40)].into();
    let cache = cache("bind");
    let exe = runtime::build(&program, "scale", &sizes, &options(true), &cache).unwrap();
    let mut state = exe.state();
    let x = Tensor::random(DType::F32, &[40], 1);
    let y = Tensor::random(DType::F32, &[40], 2);
    let unbound = exe.run(&mut state, None).unwrap_err();
    assert!(unbound.contains("input `X` has no value"), "{unbound}");
    exe.bind(&mut state, "X", &x).unwrap();
    exe.bind(&mut state, "Y", &y).unwrap();
    let bound = exe.output(&state, "X").unwrap();
    assert!(
        std::sync::Arc::ptr_eq(bound.buffer(), x.buffer()),
        "X was copied"
    );
    exe.run(&mut state, None).unwrap();
    let first = exe.output(&state, "O").unwrap();
    let (xs, ys) = (x.to_f64_vec(), y.to_f64_vec());
    let want: Vec<f64> = (0..40)
        .map(|i| f64::from((xs[i] as f32) * 2.0 + ys[i] as f32))
        .collect();
    assert_eq!(first.to_f64_vec(), want);
    // Rebinding an input and running again writes a fresh result slot:
    // the first result, still held, is untouched.
    let wide = Tensor::random(DType::F32, &[40, 2], 3);
    let column = wide.slice(1, 1, 2).unwrap().reshape(&[40]).unwrap();
    exe.bind(&mut state, "X", &column).unwrap();
    exe.run(&mut state, None).unwrap();
    assert_eq!(first.to_f64_vec(), want, "the held result changed");
    let second = exe.output(&state, "O").unwrap();
    let cs = column.to_f64_vec();
    let want2: Vec<f64> = (0..40)
        .map(|i| f64::from((cs[i] as f32) * 2.0 + ys[i] as f32))
        .collect();
    assert_eq!(second.to_f64_vec(), want2);
    let wrong = exe.bind(&mut state, "Y", &Tensor::zeros(DType::F32, &[41]));
    assert!(wrong
        .unwrap_err()
        .contains("`Y` is float32(40), got float32(41)"));
}

#[test]
fn library_band_products_match_the_interpreter() {
    // OLLIE's G2BMM at bands of 65 and 81 (the library's minimum is 64),
    // dilations 1 to 3, rows that are no multiple of the library's block
    // of 64 and bands that reach past both ends of the sequence; the
    // library runs it, and as generated code it gives the same.
    let cache = cache("band");
    let p = load("bench/derive/workloads/g2bmm.tc");
    for (l, w, dil) in [(150, 32, 1), (200, 40, 3), (77, 40, 2)] {
        let sizes = [("B", 2), ("L", l), ("D", 9)];
        let scalars = [("W", Value::Int(w)), ("DIL", Value::Int(dil))];
        let exe = check_with(true, &cache, &p, "g2bmm", &sizes, &scalars);
        assert_eq!(exe.library_steps(), 1, "L={l} W={w} DIL={dil}");
        let exe = check_with(false, &cache, &p, "g2bmm", &sizes, &scalars);
        assert_eq!(exe.library_steps(), 0);
    }
}

#[test]
fn kernel_options_change_the_kernel_and_keep_the_results() {
    let cache = cache("kernel-options");
    let p = load("examples/paper/tmm.tc");
    let sizes = [("M", 40), ("K", 96), ("N", 36)];
    let parallel = |b: &kernel::Block| -> Vec<String> {
        b.stmts
            .iter()
            .filter_map(|s| match &s.kind {
                kernel::StmtKind::Block(b) if b.tags.contains("parallel") => Some(b.name.clone()),
                _ => None,
            })
            .collect()
    };
    let default = check_with(false, &cache, &p, "tmm", &sizes, &[]);
    let steps = parallel(&default.block);
    assert!(!steps.is_empty(), "the default partitions a step");
    // Every step the default partitions, given no parallel index.
    let mut given = kernel::Options::default();
    for name in &steps {
        given.record(name, |s| s.parallel = Some(None));
    }
    let serial = runtime::Options {
        kernel_options: given,
        ..options(false)
    };
    let exe = check_options(&serial, &cache, &p, "tmm", &sizes, &[]);
    assert_eq!(parallel(&exe.block), Vec::<String>::new());
}

#[test]
fn partitions_per_thread_are_recorded_where_they_matter_and_keep_the_results() {
    let cache = cache("partitions");
    let p = load("examples/paper/tmm.tc");
    // C has 256 columns: four of the library's chunks at least, and a
    // parallel index of generated code with more points than threads.
    let sizes = [("M", 48), ("K", 32), ("N", 256)];
    let bound: HashMap<String, i64> = sizes.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    for library in [true, false] {
        let (taken, _) =
            runtime::options_taken(&p, "tmm", &bound, &options(library)).expect("builds");
        let split: Vec<&String> = taken
            .steps
            .iter()
            .filter(|(_, s)| s.partitions.is_some())
            .map(|(n, _)| n)
            .collect();
        if rayon::current_num_threads() > 1 {
            assert!(!split.is_empty(), "library {library}: {taken:?}");
        }
        for n in [1, 3, 16] {
            let mut given = kernel::Options::default();
            for name in &split {
                given.record(name, |s| s.partitions = Some(n));
            }
            let o = runtime::Options {
                kernel_options: given,
                ..options(library)
            };
            check_options(&o, &cache, &p, "tmm", &sizes, &[]);
        }
    }
    // A product too small to split has no partitions to choose.
    let small: HashMap<String, i64> = [("M", 8), ("K", 8), ("N", 8)]
        .iter()
        .map(|(k, v)| (k.to_string(), *v))
        .collect();
    let (taken, _) = runtime::options_taken(&p, "tmm", &small, &options(true)).expect("builds");
    assert!(
        taken.steps.values().all(|s| s.partitions.is_none()),
        "{taken:?}"
    );
}

#[test]
fn register_blocks_loop_orders_and_widths_given_compile_to_the_same_results() {
    let cache = cache("register-blocks");
    let p = load("bench/workloads/conv3x3.tc");
    let sizes = [
        ("N", 2),
        ("C", 8),
        ("F", 16),
        ("H", 6),
        ("W", 20),
        ("KH", 3),
        ("KW", 3),
    ];
    let bound: HashMap<String, i64> = sizes.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    let (taken, indices) =
        runtime::options_taken(&p, "conv3x3", &bound, &options(false)).expect("builds");
    let (step, jam) = taken
        .steps
        .iter()
        .find_map(|(n, s)| match s.jam.as_deref() {
            Some([j]) => Some((n.clone(), j.clone())),
            _ => None,
        })
        .expect("the default jams the convolution's reduction");
    let nest = &indices[&step];
    let mut variations: Vec<kernel::StepOptions> = Vec::new();
    // The register block along each other index of the step, and two of
    // its points by the model's.
    for (index, range) in nest[0].iter().filter(|(i, r)| *i != jam.0 && *r > 1) {
        variations.push(kernel::StepOptions {
            jam: Some(vec![(index.clone(), jam.1.min(*range))]),
            ..Default::default()
        });
        variations.push(kernel::StepOptions {
            jam: Some(vec![(index.clone(), 2), jam.clone()]),
            ..Default::default()
        });
    }
    // Every block's loops reversed; vectors of 8 lanes.
    let reversed: Vec<String> = nest
        .iter()
        .flat_map(|block| block.iter().rev().map(|(i, _)| i.clone()))
        .collect();
    variations.push(kernel::StepOptions {
        order: Some(reversed),
        ..Default::default()
    });
    variations.push(kernel::StepOptions {
        width: Some(8),
        ..Default::default()
    });
    let mut jams_taken = 0;
    for v in variations {
        let mut given = kernel::Options::default();
        given.steps.insert(step.clone(), v.clone());
        let o = runtime::Options {
            kernel_options: given,
            ..options(false)
        };
        check_options(&o, &cache, &p, "conv3x3", &sizes, &[]);
        let (got, _) = runtime::options_taken(&p, "conv3x3", &bound, &o).expect("builds");
        let got = got.step(&step);
        if v.jam.is_some() && got.jam == v.jam {
            jams_taken += 1;
        }
        if v.order.is_some() {
            assert!(got.order.is_some(), "the order is taken: {got:?}");
        }
        if v.width.is_some() {
            assert_eq!(got.width, v.width, "the width is taken");
        }
    }
    assert!(
        jams_taken >= 4,
        "register blocks along other indices are taken"
    );
}

#[test]
fn a_layout_copy_forwarded_to_its_reader_compiles_to_the_same_results() {
    let cache = cache("forward");
    let p = load("tests/files/lower/blocked_forward.tc");
    let sizes = [
        ("N", 2),
        ("C", 32),
        ("H", 7),
        ("W", 9),
        ("G", 8),
        ("KH", 3),
        ("KW", 3),
        ("L", 4),
        ("M", 4),
    ];
    let bound: HashMap<String, i64> = sizes.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    let (taken, _) =
        runtime::options_taken(&p, "blocked", &bound, &options(false)).expect("builds");
    assert_eq!(
        taken.step("s1_Xb").forward,
        Some(false),
        "the cost model keeps the copy"
    );
    let mut given = kernel::Options::default();
    given.record("s1_Xb", |s| s.forward = Some(true));
    // The convolution reads the plain input in another loop order too, as
    // a search may pair them.
    given.record("s2_Ob_init_fused", |s| {
        s.order = Some(["l", "kh", "kw"].map(String::from).to_vec())
    });
    let o = runtime::Options {
        kernel_options: given,
        ..options(false)
    };
    check_options(&o, &cache, &p, "blocked", &sizes, &[]);
    let (got, _) = runtime::options_taken(&p, "blocked", &bound, &o).expect("builds");
    assert_eq!(
        got.step("s1_Xb").forward,
        Some(true),
        "the copy is forwarded"
    );
}
