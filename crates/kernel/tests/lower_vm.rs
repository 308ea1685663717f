//! Lowering is result-preserving: every lowerable program of the examples
//! and the prelude, lowered for concrete sizes and run on the kernel VM,
//! gives exactly the interpreter's results on the same random inputs (the
//! VM visits points in the interpreter's order, so floats agree bit for
//! bit). Every lowered kernel also passes the verifier and reads back from
//! its printed form unchanged.

use std::collections::HashMap;

mod common;

use common::load;
use ir::{Program, Value};
use kernel::LowerErrorKind;

/// Lowers `def` for `sizes` and checks it against the interpreter: the
/// lowered kernel exactly, then after every pass alone and after the whole
/// cpu pipeline within a tolerance (a pass may reorder float reductions).
fn check(
    program: &Program,
    def: &str,
    sizes: &[(&str, i64)],
    scalars: &[(&str, Value)],
    seed: u64,
) {
    let c = common::case(program, def, sizes, scalars, seed);
    common::check_kernel(&c.block, &c, true, "lowered");
    let mut pipelines: Vec<(String, Vec<String>)> = kernel::pass_names()
        .into_iter()
        .map(|p| (p.to_string(), vec![p.to_string()]))
        .collect();
    for name in kernel::BUILTIN_PIPELINES {
        let passes = kernel::parse_pipeline(kernel::builtin_pipeline(name).unwrap_or_default())
            .unwrap_or_else(|e| panic!("the {name} pipeline: {e}"));
        pipelines.push((format!("the {name} pipeline"), passes));
    }
    for (what, passes) in pipelines {
        let mut b = c.block.clone();
        kernel::run_pipeline(&mut b, &passes, &kernel::Target::generic(), &mut |_, _| {})
            .unwrap_or_else(|e| panic!("{def}: {e}"));
        common::check_kernel(&b, &c, false, &what);
    }
}

#[test]
fn the_papers_programs_lower_exactly() {
    let p = |f: &str| load(&format!("examples/paper/{f}"));
    check(&p("mv.tc"), "mv", &[("M", 5), ("K", 7)], &[], 1);
    check(&p("mv.tc"), "mv1", &[("M", 5), ("K", 7)], &[], 2);
    let ab = [("a", Value::Float(1.5)), ("b", Value::Float(-0.5))];
    check(
        &p("sgemm.tc"),
        "sgemm",
        &[("N", 3), ("M", 4), ("K", 5)],
        &ab,
        3,
    );
    check(&p("tmm.tc"), "tmm", &[("M", 3), ("K", 9), ("N", 4)], &[], 4);
    // Large enough for autotile to split it on the generic target.
    check(
        &p("tmm.tc"),
        "tmm",
        &[("M", 40), ("K", 96), ("N", 36)],
        &[],
        18,
    );
    check(
        &p("tbmm.tc"),
        "tbmm",
        &[("B", 2), ("N", 3), ("M", 5), ("K", 4)],
        &[],
        5,
    );
    check(
        &p("conv2d.tc"),
        "conv2d",
        &[
            ("B", 2),
            ("IP", 3),
            ("H", 7),
            ("W", 6),
            ("OP", 4),
            ("KH", 3),
            ("KW", 2),
        ],
        &[],
        6,
    );
    check(
        &p("maxpool2x2.tc"),
        "maxpool2x2",
        &[("B", 1), ("C", 2), ("H", 5), ("W", 6)],
        &[],
        7,
    );
    let s = [("sh", Value::Int(2)), ("sw", Value::Int(3))];
    let dims = [
        ("N", 2),
        ("C", 2),
        ("H", 9),
        ("W", 10),
        ("F", 3),
        ("KH", 3),
        ("KW", 2),
    ];
    check(&p("sconv2d.tc"), "sconv2d", &dims, &s, 8);
    check(
        &p("gather.tc"),
        "gather",
        &[("N", 4), ("A", 2), ("B", 3)],
        &[],
        9,
    );
    let lut = [
        ("E1", 5),
        ("D", 3),
        ("B", 2),
        ("L1", 4),
        ("E2", 6),
        ("L2", 2),
    ];
    check(&p("2LUT.tc"), "2LUT", &lut, &[], 10);
    check(
        &p("mlp.tc"),
        "MLP1",
        &[("B", 3), ("M", 4), ("N", 5)],
        &[],
        11,
    );
    check(
        &p("mlp.tc"),
        "MLP3",
        &[("B", 2), ("N", 4), ("O", 5), ("P", 3), ("Q", 2)],
        &[],
        12,
    );
    let g = [
        ("N", 2),
        ("G", 2),
        ("C", 2),
        ("H", 5),
        ("W", 4),
        ("F", 3),
        ("KH", 3),
        ("KW", 2),
    ];
    check(&p("gconv.tc"), "gconv", &g, &[], 13);
    check(
        &p("outerProductMM.tc"),
        "outerProductMM",
        &[("P", 2), ("Q", 3), ("R", 4), ("S", 2), ("T", 3)],
        &[],
        14,
    );
    check(&p("conv1d.tc"), "conv1d", &[("M", 9), ("N", 4)], &[], 15);
    let mlp4 = [("B", 2), ("M", 3), ("N", 4), ("O", 5), ("P", 3), ("Q", 2)];
    check(&p("mlp.tc"), "MLP4", &mlp4, &[], 17);
}

#[test]
fn padding_becomes_constraints_and_stays_exact() {
    let p = load("examples/quickstart/layer.tc");
    for (h, w) in [(8, 8), (5, 7), (2, 3)] {
        check(
            &p,
            "layer",
            &[
                ("N", 1),
                ("C", 2),
                ("H", h),
                ("W", w),
                ("F", 3),
                ("KH", 3),
                ("KW", 3),
            ],
            &[],
            16,
        );
    }
}

#[test]
fn prelude_operators_lower_exactly() {
    let p = testkit::prelude();
    let i = |v: i64| Value::Int(v);
    let conv = |sh, ph0, ph1, dh| {
        [
            ("sh", i(sh)),
            ("sw", i(1)),
            ("ph0", i(ph0)),
            ("pw0", i(1)),
            ("ph1", i(ph1)),
            ("pw1", i(0)),
            ("dh", i(dh)),
            ("dw", i(1)),
            ("G", i(1)),
        ]
    };
    let dims = [
        ("N", 1),
        ("C", 3),
        ("H", 7),
        ("W", 6),
        ("F", 4),
        ("CG", 3),
        ("KH", 3),
        ("KW", 2),
    ];
    check(p, "conv2d", &dims, &conv(1, 1, 1, 1), 20);
    check(p, "conv2d", &dims, &conv(2, 0, 2, 2), 21);
    let pool = [
        ("KH", i(3)),
        ("KW", i(2)),
        ("sh", i(2)),
        ("sw", i(1)),
        ("ph0", i(1)),
        ("pw0", i(0)),
        ("ph1", i(1)),
        ("pw1", i(1)),
    ];
    check(
        p,
        "maxpool2d",
        &[("N", 1), ("C", 2), ("H", 6), ("W", 5)],
        &pool,
        22,
    );
    check(
        p,
        "avgpool2d",
        &[("N", 1), ("C", 2), ("H", 6), ("W", 5)],
        &pool,
        23,
    );
    check(p, "softmax_r2", &[("N0", 3), ("N1", 5)], &[], 24);
    check(
        p,
        "layernorm_r2",
        &[("N0", 3), ("D", 6)],
        &[("eps", Value::Float(1e-5))],
        25,
    );
    check(
        p,
        "gemm",
        &[("M", 3), ("K", 4), ("N", 5)],
        &[("alpha", Value::Float(0.5)), ("beta", Value::Float(2.0))],
        26,
    );
    check(
        p,
        "batchnorm_r4",
        &[("N", 2), ("C", 3), ("S0", 2), ("S1", 3)],
        &[("eps", Value::Float(1e-3))],
        27,
    );
    check(
        p,
        "g2bmm",
        &[("NB", 2), ("M", 6), ("K", 3)],
        &[("W", i(2)), ("D", i(2))],
        28,
    );
    check(
        p,
        "reduce_mean_r3_a2",
        &[("N0", 2), ("N1", 3), ("N2", 4)],
        &[],
        30,
    );
    check(
        p,
        "reshape_r4_r2",
        &[("I0", 2), ("I1", 3), ("I2", 2), ("I3", 2)],
        &[("O0", i(4)), ("O1", i(6))],
        31,
    );
}

/// The forms the ONNX importer generates beside the prelude (its
/// `forms.rs`): a transpose of a rank-5 tensor and a gather along a middle
/// axis by rank-2 indices, a rank-0 index, with the negative-index wrap.
#[test]
fn generated_operator_forms_lower_exactly() {
    let src = "\
def transpose_r5_p31204(float32(N0, N1, N2, N3, N4) X) -> (Y) {
  Y(i3, i1, i2, i0, i4) = X(i0, i1, i2, i3, i4)
}
def gather_r3_a1_i2(float32(N0, N1, N2) X, int64(M0, M1) I) -> (Y) {
  Y(i0, j0, j1, i2) = X(i0, I(j0, j1) < 0 ? I(j0, j1) + N1 : I(j0, j1), i2)
}
def gather_r2_a0_i0(float32(N0, N1) X, int64() I) -> (Y) {
  Y(i1) = X(I() < 0 ? I() + N0 : I(), i1)
}
";
    let p = tc::check_source(src).unwrap().program;
    check(
        &p,
        "transpose_r5_p31204",
        &[("N0", 3), ("N1", 2), ("N2", 2), ("N3", 4), ("N4", 3)],
        &[],
        29,
    );
    check(
        &p,
        "gather_r3_a1_i2",
        &[("N0", 2), ("N1", 3), ("N2", 4), ("M0", 2), ("M1", 3)],
        &[],
        32,
    );
    check(&p, "gather_r2_a0_i0", &[("N0", 3), ("N1", 5)], &[], 33);
}

#[test]
fn guarded_branches_lower_to_guard_blocks() {
    let p = testkit::prelude();
    let i = |v: i64| Value::Int(v);
    check(p, "concat_r2_a1", &[("N0", 2), ("P", 3), ("Q", 2)], &[], 40);
    let pads = [
        ("pb0", i(1)),
        ("pb1", i(2)),
        ("pe0", i(0)),
        ("pe1", i(1)),
        ("v", Value::Float(0.5)),
    ];
    check(p, "pad_r2", &[("N0", 3), ("N1", 2)], &pads, 41);
    check(
        p,
        "split_r2_a1",
        &[("N0", 2), ("N1", 5)],
        &[("s", i(2))],
        42,
    );
    check(
        p,
        "global_avgpool2d",
        &[("N", 2), ("C", 3), ("H", 4), ("W", 3)],
        &[],
        43,
    );
    let src = "def cat(float(N) A, float(M) B) -> (O) {\n  O(i) = i < N ? A(i) : B(i - N) where i in 0:N+M\n}\n";
    let cat = tc::check_source(src).unwrap().program;
    check(&cat, "cat", &[("N", 2), ("M", 3)], &[], 44);
    // A reduction whose guarded read uses a let and sits beside a skipped read.
    let src = "def g(float(N) A) -> (O) {\n  O(i) +=! (t < N ? A(t) : 0.0) * A(i + k - 1) where i in 0:N, k in 0:3, t = i + k\n}\n";
    let g = tc::check_source(src).unwrap().program;
    check(&g, "g", &[("N", 4)], &[], 45);
    // Three pieces: the second branch is a guard block inside the first's,
    // whose local the inner one must not take the name of.
    let src = "def cat3(float(N) A, float(M) B, float(P) C) -> (O) {\n  O(i) = i < N ? A(i) : i < N + M ? B(i - N) : C(i - N - M) where i in 0:N+M+P\n}\n";
    let cat3 = tc::check_source(src).unwrap().program;
    check(&cat3, "cat3", &[("N", 1), ("M", 1), ("P", 1)], &[], 46);
    check(&cat3, "cat3", &[("N", 2), ("M", 2), ("P", 2)], &[], 47);
}

#[test]
fn floor_quotients_get_indices_of_their_own() {
    // A strided, padded, grouped transposed convolution: `th % sh == 0`
    // guards the reads `X(.., th / sh, ..)`, and the input channel is
    // `f / FG * C / G + c`.
    let p = testkit::prelude();
    let i = |v: i64| Value::Int(v);
    let scalars = [
        ("sh", i(2)),
        ("sw", i(3)),
        ("ph0", i(1)),
        ("pw0", i(0)),
        ("ph1", i(0)),
        ("pw1", i(1)),
        ("oph", i(1)),
        ("opw", i(0)),
        ("dh", i(1)),
        ("dw", i(2)),
        ("G", i(2)),
    ];
    let sizes = [
        ("N", 1),
        ("C", 4),
        ("H", 3),
        ("W", 2),
        ("FG", 2),
        ("KH", 2),
        ("KW", 2),
    ];
    check(p, "conv_transpose2d", &sizes, &scalars, 46);
    // A strided reduction over a quotient that skips: upsampling by
    // summing neighbours, reads out of bounds contribute nothing.
    let src = "def up(float(N) A) -> (O) {\n  O(i) +=! A((i + k - 1) / 2) where i in 0:2*N, k in 0:3\n}\n";
    let up = tc::check_source(src).unwrap().program;
    check(&up, "up", &[("N", 5)], &[], 47);
}

/// A scalar argument TC has no literal for (the ONNX importer writes an
/// infinite Clip bound as `1.0 / 0.0`) is computed at lowering, not left to
/// the interpreter.
#[test]
fn infinite_scalar_arguments_lower_as_constants() {
    let p = tc::check_source(
        "def clip(float(N) X, float lo, float hi) -> (Y) {\n  Y(i) = min(max(X(i), lo), hi)\n}\n\
         def f(float(N) X) -> (Y) {\n  Y = clip(X, -1.0 / 0.0, 1.0 / 0.0 - 2.0)\n}\n",
    )
    .unwrap()
    .program;
    check(&p, "f", &[("N", 8)], &[], 3);
}

#[test]
fn unsupported_forms_are_clear_errors() {
    let lower = |src: &str, sizes: &[(&str, i64)]| {
        let p = tc::check_source(src).unwrap().program;
        let sizes: HashMap<String, i64> = sizes.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        kernel::lower_def(&p, &p.defs[0].name, &sizes).unwrap_err()
    };
    let e = lower(
        "def f(float(N) A) -> (O) {\n  O(i) +=! A(i * k) where i in 0:N, k in 0:N\n}\n",
        &[("N", 4)],
    );
    assert_eq!(e.kind, LowerErrorKind::NotLoweredYet, "{e}");
    assert!(
        e.message.contains(
            "statement 1: a non-affine subscript of `A` in a reduction is not lowered yet"
        ),
        "{e}"
    );
    let e = lower(
        "def f(float(N) A) -> (O) {\n  O(i) +=! (i < 1 || i > 2) ? A(i + k - 1) : 0.0 where i in 0:N, k in 0:3\n}\n",
        &[("N", 4)],
    );
    assert_eq!(e.kind, LowerErrorKind::NotLoweredYet, "{e}");
    assert!(
        e.message
            .contains("not a conjunction of affine comparisons"),
        "{e}"
    );
    // A padded branch inside another, and a padded branch of an
    // accumulating reduction: the interpreter runs both, so the engine must
    // be told to fall back, not that the program is wrong.
    let e = lower(
        "def f(float(N) A, float(N) B, float(N) C) -> (O) {\n  O(i) +=! i < 1 ? A(i + k) : i < 2 ? B(i + k) : C(i + k) where i in 0:N, k in 0:3\n}\n",
        &[("N", 4)],
    );
    assert_eq!(e.kind, LowerErrorKind::NotLoweredYet, "{e}");
    assert!(e.message.contains("a `?:` inside a `?:` branch"), "{e}");
    let e = lower(
        "def f(float(N) A, float(N) B) -> (O) {\n  O(i) = B(i)\n  O(i) += i < 2 ? A(i + k) : 0.0 where i in 0:N, k in 0:3\n}\n",
        &[("N", 4)],
    );
    assert_eq!(e.kind, LowerErrorKind::NotLoweredYet, "{e}");
    assert!(e.message.contains("an accumulating reduction"), "{e}");
    // A size without a value is the caller's error, not a form to lower
    // later: no fallback note may call it "not lowered yet".
    let e = lower("def f(float(N) A) -> (O) {\n  O(i) = A(i)\n}\n", &[]);
    assert_eq!(e.kind, LowerErrorKind::Invalid, "{e}");
}

#[test]
fn in_place_updates_read_the_old_tensor() {
    // A reduction revisits each element: every visit reads the old value.
    let src = "def f(float(N) a, float(M) c) -> (b) {\n  b(i) = a(i)\n  b(i) += b(i) * c(j)\n}\n";
    let p = tc::check_source(src).unwrap().program;
    check(&p, "f", &[("N", 4), ("M", 3)], &[], 50);
    // Reading other elements: a transpose in place.
    let src = "def t(float(N,N) a) -> (b) {\n  b(i,j) = a(i,j)\n  b(i,j) = b(j,i) + 1.0\n}\n";
    let p = tc::check_source(src).unwrap().program;
    check(&p, "t", &[("N", 5)], &[], 51);
    // An initializing reduction reads the values from before the identity.
    let src = "def g(int32(N) a) -> (b) {\n  b(i) = a(i)\n  b(i) +=! b(i) * 3 + b(N - 1 - i)\n}\n";
    let p = tc::check_source(src).unwrap().program;
    check(&p, "g", &[("N", 6)], &[], 52);
}

#[test]
fn passes_leave_library_blocks_alone() {
    // MLP3 with its three matmul blocks tagged `library`: every pass leaves
    // them as lowered (the runtime reads their form), fuses nothing across
    // them, and the kernel still computes the interpreter's results.
    let p = load("examples/paper/mlp.tc");
    let sizes = [("B", 3), ("N", 5), ("O", 4), ("P", 6), ("Q", 2)];
    let mut c = common::case(&p, "MLP3", &sizes, &[], 53);
    let mut library = Vec::new();
    for s in &mut c.block.stmts {
        if let kernel::StmtKind::Block(b) = &mut s.kind {
            if b.idxs.len() == 3 {
                b.tags.insert("library".to_string());
                library.push((**b).clone());
            }
        }
    }
    assert_eq!(library.len(), 3);
    let passes =
        kernel::parse_pipeline(kernel::builtin_pipeline("cpu").unwrap_or_default()).unwrap();
    let mut b = c.block.clone();
    kernel::run_pipeline(&mut b, &passes, &kernel::Target::generic(), &mut |_, _| {}).unwrap();
    let kept: Vec<kernel::Block> = b
        .stmts
        .iter()
        .filter_map(|s| match &s.kind {
            kernel::StmtKind::Block(x) if x.is_library() => Some((**x).clone()),
            _ => None,
        })
        .collect();
    assert_eq!(kept, library);
    common::check_kernel(&b, &c, false, "the cpu pipeline around library blocks");
}

#[test]
fn unsigned_64_bit_values_cast_to_floats_as_unsigned() {
    // Values above 2^63 are held as negative integers; a cast to a float
    // must still read them as unsigned, as the interpreter does.
    let src = "def f(uint64(N) A) -> (B, C) {\n  B(i) = float64(A(i))\n  C(i) = float32(A(i) + A(i))\n}\n";
    let p = tc::check_source(src).unwrap().program;
    let a = interp::Tensor::from_i64(ir::DType::U64, &[3], vec![-1, i64::MIN, 5]);
    let args: HashMap<String, interp::Arg> =
        [("A".to_string(), interp::Arg::Tensor(a.clone()))].into();
    let sizes: HashMap<String, i64> = [("N".to_string(), 3)].into();
    let want = interp::run(&p, "f", &args, &sizes, interp::Mode::Real).unwrap();
    let block = kernel::lower_def(&p, "f", &sizes).unwrap();
    let got = kernel::vm::run(&block, [("A".to_string(), a.values())].into()).unwrap();
    for (name, t) in &want {
        assert_eq!(got[name], t.values(), "`{name}`");
    }
    assert_eq!(got["B"][0], Value::Float(18446744073709551615.0));
}
