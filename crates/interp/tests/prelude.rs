//! The operator prelude (`ops/prelude.tc`) against plain-Rust loops.
//!
//! Every def of the prelude runs in the reference interpreter on seeded
//! random inputs, strided, dilated, padded, grouped and odd-sized corner cases
//! included, and its results are compared with the operator's implementation
//! in `prelude_ref`, which is written from the ONNX definitions rather than
//! from the TC. A value `got` matches `want` when
//! `|got - want| <= 1e-4 * max(1, |want|)`. `every_def_is_tested` keeps the
//! list of tested defs and the prelude in step.

mod prelude_ref;

use std::collections::{BTreeSet, HashMap};

use interp::{Arg, Mode, Tensor};
use ir::{DType, Value};
use prelude_ref::{self as r, Nd, Pool, Reduce, Window};
use testkit::prelude;

/// The relative tolerance of every comparison (absolute below magnitude 1).
const RTOL: f64 = 1e-4;

/// Named arguments of a def call.
type Args = Vec<(String, Arg)>;

/// Runs prelude def `name` on `args` and compares its results, in order, with
/// `expected`: shapes exactly, values within `RTOL`. Returns the results.
fn check(name: &str, args: Args, expected: &[&Nd]) -> Vec<(String, Tensor)> {
    let args: HashMap<String, Arg> = args.into_iter().collect();
    let results =
        interp::run(prelude(), name, &args, &HashMap::new(), Mode::Real).unwrap_or_else(|e| {
            let at = e
                .stmt
                .map(|s| format!(", statement {}", s + 1))
                .unwrap_or_default();
            panic!("{name}: run failed in `{}`{at}: {e}", e.def)
        });
    assert_eq!(results.len(), expected.len(), "{name}: number of results");
    for ((res, got), want) in results.iter().zip(expected) {
        assert_eq!(got.shape(), want.shape, "{name}: shape of `{res}`");
        let got = got.to_f64_vec();
        let mut k = 0;
        r::for_each_index(&want.shape, |ix| {
            let (g, w) = (got[k], want.data[k]);
            assert!(
                (g - w).abs() <= RTOL * w.abs().max(1.0),
                "{name}: `{res}`{ix:?} is {g}, expected {w}"
            );
            k += 1;
        });
    }
    results
}

/// A float32 tensor argument.
fn t(name: &str, x: &Nd) -> (String, Arg) {
    (
        name.to_string(),
        Arg::Tensor(Tensor::from_f64(DType::F32, &x.shape, x.data.clone())),
    )
}

/// An integer scalar argument.
fn int(name: &str, v: usize) -> (String, Arg) {
    sint(name, v as i64)
}

/// A signed integer scalar argument.
fn sint(name: &str, v: i64) -> (String, Arg) {
    (name.to_string(), Arg::Scalar(Value::Int(v)))
}

/// A float scalar argument.
fn flt(name: &str, v: f64) -> (String, Arg) {
    (name.to_string(), Arg::Scalar(Value::Float(v)))
}

/// A seeded random float32 tensor with values in [-1, 1).
fn rand(shape: &[usize], seed: u64) -> Nd {
    Nd::new(shape, Tensor::random(DType::F32, shape, seed).to_f64_vec())
}

/// `rand` mapped through `f` and rounded to float32, the interpreter's storage.
fn rand_with(shape: &[usize], seed: u64, f: impl Fn(f64) -> f64) -> Nd {
    rand(shape, seed).map(|x| f(x) as f32 as f64)
}

/// The first `r` entries of `dims`: a shape of rank `r`.
fn shape_of_rank(dims: &[usize], r: usize) -> Vec<usize> {
    dims[..r].to_vec()
}

/// The highest rank of the rank families (`_rK` defs).
const MAX_RANK: usize = 5;

/// Odd sizes used for elementwise tests, by rank 1-5.
fn elementwise_shape(r: usize) -> Vec<usize> {
    [
        vec![7],
        vec![3, 5],
        vec![2, 3, 4],
        vec![2, 3, 2, 5],
        vec![2, 1, 3, 2, 3],
    ][r - 1]
        .clone()
}

// ---------------------------------------------------------------------------
// The tested defs, by family: the tests below iterate over these tables and
// `every_def_is_tested` compares them with the prelude.

/// Defs tested one by one, by name.
const SINGLE_DEFS: &[&str] = &[
    "matmul",
    "matmul_ta",
    "matmul_tb",
    "matmul_tab",
    "matmul_r3_r2",
    "batch_matmul",
    "batch_matmul_tb",
    "batch_matmul_r4",
    "batch_matmul_r4_tb",
    "batch_matmul_r5",
    "batch_matmul_r5_tb",
    "gemm",
    "gemm_ta",
    "gemm_tb",
    "gemm_tab",
    "gemm_full",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv1d_bias",
    "conv2d_bias",
    "conv3d_bias",
    "conv1d_int",
    "conv2d_int",
    "conv3d_int",
    "conv_transpose2d",
    "conv_transpose3d",
    "depth_to_space2d",
    "space_to_depth2d",
    "nchwc",
    "nchw",
    "interleave2d_nchwc",
    "interleave2d_blocked",
    "unpack_weights_nchwc",
    "unpack_weights_nchw_nchwc",
    "unpack_bias_nchwc",
    "conv2d_nchwc",
    "conv2d_nchwc_relu",
    "conv2d_nchwc_add",
    "conv2d_nchwc_add_relu",
    "conv2d_nchw_nchwc",
    "conv2d_nchw_nchwc_relu",
    "point_rows_nchwc",
    "conv2d_point_nchwc",
    "winograd_f23_filter_nchwc",
    "winograd_f23_input_nchwc",
    "winograd_product",
    "winograd_f23_tiles_nchwc",
    "winograd_f23_output_nchwc",
    "winograd_f23_output_nchwc_relu",
    "winograd_f23_output_nchwc_add",
    "winograd_f23_output_nchwc_add_relu",
    "winograd_f22_filter_nchwc",
    "winograd_f22_input_nchwc",
    "winograd_f22_tiles_nchwc",
    "winograd_f22_output_nchwc",
    "winograd_f22_output_nchwc_relu",
    "conv2d_nchwc_grouped",
    "maxpool2d_nchwc",
    "scale_shift_nchwc",
    "batchnorm_factor",
    "maxpool2d",
    "avgpool2d",
    "avgpool2d_incpad",
    "global_avgpool2d",
    "global_maxpool2d",
    "maxpool3d",
    "avgpool3d",
    "avgpool3d_incpad",
    "global_avgpool3d",
    "global_maxpool3d",
    "flatten_r3",
    "flatten_r4",
    "flatten_r5",
    "g2bmm",
    "gbmm",
];

/// Where the inputs of an elementwise operator are drawn from.
#[derive(Clone, Copy)]
enum Domain {
    /// Uniform in [-s, s).
    Scaled(f64),
    /// Uniform in [0.05, 3.05).
    Positive,
    /// Magnitude in [0.5, 1.5), either sign (divisors).
    AwayFromZero,
}

impl Domain {
    fn sample(self, shape: &[usize], seed: u64) -> Nd {
        match self {
            Domain::Scaled(s) => rand_with(shape, seed, |x| s * x),
            Domain::Positive => rand_with(shape, seed, |x| 1.5 * x + 1.55),
            Domain::AwayFromZero => rand_with(shape, seed, |x| x.signum() * (x.abs() + 0.5)),
        }
    }
}

/// A unary operator: its name in the prelude, its definition and its inputs.
type UnaryOp = (&'static str, fn(f64) -> f64, Domain);

/// A binary operator: its name in the prelude, its definition and the inputs
/// of its two operands.
type BinaryOp = (&'static str, fn(f64, f64) -> f64, Domain, Domain);

/// Unary operators without attributes, defined for ranks 1-5 as `op_rK`.
fn unary_ops() -> Vec<UnaryOp> {
    vec![
        ("relu", |x| x.max(0.0), Domain::Scaled(2.0)),
        ("sigmoid", |x| 1.0 / (1.0 + (-x).exp()), Domain::Scaled(4.0)),
        ("tanh", f64::tanh, Domain::Scaled(3.0)),
        (
            "gelu",
            |x| 0.5 * x * (1.0 + r::erf(x / 2f64.sqrt())),
            Domain::Scaled(3.0),
        ),
        ("erf", r::erf, Domain::Scaled(3.0)),
        ("exp", f64::exp, Domain::Scaled(3.0)),
        ("log", f64::ln, Domain::Positive),
        ("sqrt", f64::sqrt, Domain::Positive),
        ("neg", |x| -x, Domain::Scaled(2.0)),
        ("abs", f64::abs, Domain::Scaled(2.0)),
    ]
}

/// Binary operators, with the domains of their operands.
fn binary_ops() -> Vec<BinaryOp> {
    vec![
        (
            "add",
            |a, b| a + b,
            Domain::Scaled(2.0),
            Domain::Scaled(2.0),
        ),
        (
            "sub",
            |a, b| a - b,
            Domain::Scaled(2.0),
            Domain::Scaled(2.0),
        ),
        (
            "mul",
            |a, b| a * b,
            Domain::Scaled(2.0),
            Domain::Scaled(2.0),
        ),
        (
            "div",
            |a, b| a / b,
            Domain::Scaled(2.0),
            Domain::AwayFromZero,
        ),
        ("pow", f64::powf, Domain::Positive, Domain::Scaled(2.0)),
    ]
}

/// The explicit broadcasts of every binary operator: suffix, shape of A,
/// shape of B.
fn binary_broadcasts() -> Vec<(&'static str, Vec<usize>, Vec<usize>)> {
    vec![
        ("r2_row", vec![3, 5], vec![5]),
        ("r3_row", vec![2, 3, 4], vec![4]),
        ("r4_c11", vec![2, 3, 4, 5], vec![3, 1, 1]),
        ("r4_mask", vec![2, 3, 4, 5], vec![2, 1, 1, 5]),
    ]
}

/// The reductions: rank and reduced axes (each with and without `_keep`).
const REDUCTIONS: &[(usize, &[usize])] = &[
    (2, &[0]),
    (2, &[1]),
    (3, &[0]),
    (3, &[1]),
    (3, &[2]),
    (3, &[1, 2]),
    (4, &[0]),
    (4, &[1]),
    (4, &[2]),
    (4, &[3]),
    (4, &[2, 3]),
    (4, &[1, 2, 3]),
    (5, &[0]),
    (5, &[1]),
    (5, &[2]),
    (5, &[3]),
    (5, &[4]),
    (5, &[3, 4]),
    (5, &[2, 3, 4]),
    (5, &[1, 2, 3, 4]),
];

const REDUCE_OPS: &[(&str, Reduce)] = &[
    ("sum", Reduce::Sum),
    ("mean", Reduce::Mean),
    ("max", Reduce::Max),
];

fn reduce_name(op: &str, rank: usize, axes: &[usize], keep: bool) -> String {
    let axes: String = axes.iter().map(usize::to_string).collect();
    format!(
        "reduce_{op}_r{rank}_a{axes}{}",
        if keep { "_keep" } else { "" }
    )
}

/// Every def the tests below exercise.
fn tested_defs() -> BTreeSet<String> {
    let mut names: BTreeSet<String> = SINGLE_DEFS.iter().map(|s| s.to_string()).collect();
    for r in 1..=MAX_RANK {
        for (op, ..) in unary_ops() {
            names.insert(format!("{op}_r{r}"));
        }
        for op in ["leaky_relu", "clip"] {
            names.insert(format!("{op}_r{r}"));
        }
        for (op, ..) in binary_ops() {
            names.insert(format!("{op}_r{r}"));
            names.insert(format!("{op}_bcast_r{r}"));
            names.insert(format!("{op}_r{r}_scalar"));
        }
        for op in [
            "slice",
            "pad",
            "where_bcast",
            "expand",
            "cast_i64_f32",
            "cast_bool_f32",
            "cast_f32_i64",
        ] {
            names.insert(format!("{op}_r{r}"));
        }
        for a in 0..r {
            names.insert(format!("concat_r{r}_a{a}"));
            names.insert(format!("split_r{r}_a{a}"));
        }
        for b in 1..=MAX_RANK {
            if (r, b) != (1, 1) {
                for prefix in ["", "i64_", "bool_"] {
                    names.insert(format!("reshape_{prefix}r{r}_r{b}"));
                }
            }
        }
        for (op, _) in COMPARISONS {
            names.insert(format!("{op}_f32_bcast_r{r}"));
            names.insert(format!("{op}_i64_bcast_r{r}"));
        }
        for op in [
            "and_bcast",
            "or_bcast",
            "not",
            "cast_f32_bool",
            "cast_i64_bool",
            "cast_bool_i64",
        ] {
            names.insert(format!("{op}_r{r}"));
        }
    }
    for r in 2..=MAX_RANK {
        for op in ["batchnorm", "layernorm", "softmax", "prelu"] {
            names.insert(format!("{op}_r{r}"));
        }
    }
    for (op, ..) in binary_ops() {
        for (suffix, ..) in binary_broadcasts() {
            names.insert(format!("{op}_{suffix}"));
        }
    }
    for (op, _) in REDUCE_OPS {
        for (rank, axes) in REDUCTIONS {
            for keep in [false, true] {
                names.insert(reduce_name(op, *rank, axes, keep));
            }
        }
    }
    names
}

#[test]
fn prelude_checks_and_verifies() {
    if let Err(errs) = ir::verify_program(prelude()) {
        panic!(
            "the checked prelude breaks IR invariants:\n{}",
            errs.join("\n")
        );
    }
}

#[test]
fn every_def_is_tested() {
    let defined: BTreeSet<String> = prelude().defs.iter().map(|d| d.name.clone()).collect();
    let tested = tested_defs();
    let untested: Vec<_> = defined.difference(&tested).collect();
    let missing: Vec<_> = tested.difference(&defined).collect();
    assert!(
        untested.is_empty(),
        "prelude defs without a test: {untested:?}"
    );
    assert!(
        missing.is_empty(),
        "tested defs missing from the prelude: {missing:?}"
    );
}

// ---------------------------------------------------------------------------
// Matrix products.

#[test]
fn matrix_products() {
    let (a, b) = (rand(&[3, 5], 1), rand(&[5, 4], 2));
    let (at, bt) = (r::transpose(&a, &[1, 0]), r::transpose(&b, &[1, 0]));
    let ab = r::matmul(&a, &b);
    check("matmul", vec![t("A", &a), t("B", &b)], &[&ab]);
    check("matmul_ta", vec![t("A", &at), t("B", &b)], &[&ab]);
    check("matmul_tb", vec![t("A", &a), t("B", &bt)], &[&ab]);
    check("matmul_tab", vec![t("A", &at), t("B", &bt)], &[&ab]);

    let a3 = rand(&[2, 3, 5], 3);
    let b_each = r::tabulate(&[2, 5, 4], |i| b.at(&i[1..]));
    check(
        "matmul_r3_r2",
        vec![t("A", &a3), t("B", &b)],
        &[&r::batch_matmul(&a3, &b_each)],
    );
    let b3 = rand(&[2, 5, 4], 4);
    let want = r::batch_matmul(&a3, &b3);
    check("batch_matmul", vec![t("A", &a3), t("B", &b3)], &[&want]);
    check(
        "batch_matmul_tb",
        vec![t("A", &a3), t("B", &r::transpose(&b3, &[0, 2, 1]))],
        &[&want],
    );

    let (a4, b4) = (rand(&[2, 3, 4, 5], 5), rand(&[2, 3, 5, 3], 6));
    let want = r::batch_matmul(&a4, &b4);
    check("batch_matmul_r4", vec![t("A", &a4), t("B", &b4)], &[&want]);
    check(
        "batch_matmul_r4_tb",
        vec![t("A", &a4), t("B", &r::transpose(&b4, &[0, 1, 3, 2]))],
        &[&want],
    );
    let (a5, b5) = (rand(&[2, 2, 3, 4, 5], 7), rand(&[2, 2, 3, 5, 3], 8));
    let want = r::batch_matmul(&a5, &b5);
    check("batch_matmul_r5", vec![t("A", &a5), t("B", &b5)], &[&want]);
    check(
        "batch_matmul_r5_tb",
        vec![t("A", &a5), t("B", &r::transpose(&b5, &[0, 1, 2, 4, 3]))],
        &[&want],
    );
}

#[test]
fn gemm() {
    let (a, b, c, full) = (
        rand(&[4, 6], 7),
        rand(&[6, 5], 8),
        rand(&[5], 9),
        rand(&[4, 5], 10),
    );
    let (at, bt) = (r::transpose(&a, &[1, 0]), r::transpose(&b, &[1, 0]));
    let (alpha, beta) = (0.75, -1.25);
    let args = |a: &Nd, b: &Nd, c: &Nd| {
        vec![
            t("A", a),
            t("B", b),
            t("C", c),
            flt("alpha", alpha),
            flt("beta", beta),
        ]
    };
    let want = r::gemm(&a, &b, &c, alpha, beta);
    check("gemm", args(&a, &b, &c), &[&want]);
    check("gemm_ta", args(&at, &b, &c), &[&want]);
    check("gemm_tb", args(&a, &bt, &c), &[&want]);
    check("gemm_tab", args(&at, &bt, &c), &[&want]);
    check(
        "gemm_full",
        args(&a, &b, &full),
        &[&r::gemm(&a, &b, &full, alpha, beta)],
    );
}

// ---------------------------------------------------------------------------
// Convolutions.

/// One convolution: batch, input and output channels, groups, input size,
/// kernel size and window attributes, per spatial axis.
struct Conv {
    n: usize,
    c: usize,
    f: usize,
    groups: usize,
    size: Vec<usize>,
    kernel: Vec<usize>,
    win: Window,
}

/// A convolution of `n` images of `c` channels into `f` channels.
fn conv_case(
    n: usize,
    c: usize,
    f: usize,
    groups: usize,
    size: &[usize],
    kernel: &[usize],
    win: Window,
) -> Conv {
    Conv {
        n,
        c,
        f,
        groups,
        size: size.to_vec(),
        kernel: kernel.to_vec(),
        win,
    }
}

/// Window attributes, per spatial axis: strides, pads at the start and at the
/// end, dilations.
fn win(strides: &[usize], pads_begin: &[usize], pads_end: &[usize], dilations: &[usize]) -> Window {
    Window {
        strides: strides.to_vec(),
        pads_begin: pads_begin.to_vec(),
        pads_end: pads_end.to_vec(),
        dilations: dilations.to_vec(),
    }
}

/// The prelude's scalar arguments of a window over the spatial axes named by
/// the letters of `axes` (`l`, `hw` or `dhw`): strides, begin pads, end pads,
/// dilations.
fn window_args(axes: &str, w: &Window) -> Args {
    let mut args = Vec::new();
    for (k, a) in axes.chars().enumerate() {
        args.push(int(&format!("s{a}"), w.strides[k]));
        args.push(int(&format!("p{a}0"), w.pads_begin[k]));
        args.push(int(&format!("p{a}1"), w.pads_end[k]));
        args.push(int(&format!("d{a}"), w.dilations[k]));
    }
    args
}

/// Runs `conv1d` / `conv2d` / `conv3d` and its `_bias` variant on `case`.
fn check_conv(case: &Conv, seed: u64) {
    let axes = ["l", "hw", "dhw"][case.size.len() - 1];
    let name = format!("conv{}d", case.size.len());
    let x = rand(&[&[case.n, case.c][..], &case.size].concat(), seed);
    let w = rand(
        &[&[case.f, case.c / case.groups][..], &case.kernel].concat(),
        seed + 1,
    );
    let bias = rand(&[case.f], seed + 2);
    let args = |with_bias: bool| {
        let mut args = vec![t("X", &x), t("Wt", &w), int("G", case.groups)];
        args.extend(window_args(axes, &case.win));
        if with_bias {
            args.push(t("B", &bias));
        }
        args
    };
    let want = r::conv(&x, &w, &case.win, case.groups);
    let bias_shape = [&[case.f][..], &vec![1; case.size.len()]].concat();
    let with_bias = r::broadcast(&want, &r::reshape(&bias, &bias_shape), |a, b| a + b);
    check(&name, args(false), &[&want]);
    check(&format!("{name}_bias"), args(true), &[&with_bias]);
    // The int32 form on small integers, exact.
    let whole = |v: &Nd| v.map(|x| (8.0 * x).round());
    let (xi, wi) = (whole(&x), whole(&w));
    let mut args = vec![ti("X", &xi), ti("Wt", &wi), int("G", case.groups)];
    args.extend(window_args(axes, &case.win));
    check(
        &format!("{name}_int"),
        args,
        &[&r::conv(&xi, &wi, &case.win, case.groups)],
    );
}

/// An int32 tensor argument (of `x`'s values, which are integers).
fn ti(name: &str, x: &Nd) -> (String, Arg) {
    let v = x.data.iter().map(|&v| v as i64).collect();
    (
        name.to_string(),
        Arg::Tensor(Tensor::from_i64(DType::I32, &x.shape, v)),
    )
}

/// `x` (N x C x H x W) in channel blocks of `l`: block `c / l`, lane
/// `c % l`, and `fill` in the lanes past C.
fn blocked(x: &Nd, l: usize, fill: f64) -> Nd {
    let s = &x.shape;
    tabulate_blocked(
        &[s[0], s[1].div_ceil(l), s[2], s[3], l],
        s[1],
        |i, c| x.at(&[i[0], c, i[2], i[3]]),
        fill,
    )
}

/// A blocked shape's elements: `f(index, channel)` for channels below `c`,
/// `fill` past them.
fn tabulate_blocked(
    shape: &[usize],
    c: usize,
    f: impl Fn(&[usize], usize) -> f64,
    fill: f64,
) -> Nd {
    let l = shape[4];
    r::tabulate(shape, |i| {
        let ch = i[1] * l + i[4];
        if ch < c {
            f(i, ch)
        } else {
            fill
        }
    })
}

/// F x C x KH x KW weights packed as FB x CB x KH x KW x L x M (`l` given)
/// or FB x C x KH x KW x M (`l` none), zero past F and C.
fn packed(w: &Nd, l: Option<usize>, m: usize) -> Nd {
    let (f, c, kh, kw) = (w.shape[0], w.shape[1], w.shape[2], w.shape[3]);
    let fb = f.div_ceil(m);
    match l {
        Some(l) => r::tabulate(&[fb, c.div_ceil(l), kh, kw, l, m], |i| {
            let (fo, ci) = (i[0] * m + i[5], i[1] * l + i[4]);
            if fo < f && ci < c {
                w.at(&[fo, ci, i[2], i[3]])
            } else {
                0.0
            }
        }),
        None => r::tabulate(&[fb, c, kh, kw, m], |i| {
            let fo = i[0] * m + i[4];
            if fo < f {
                w.at(&[fo, i[1], i[2], i[3]])
            } else {
                0.0
            }
        }),
    }
}

#[test]
fn a_point_convolution_as_a_product() {
    // A 1 x 1 image of 5 channels through a 3 x 2 kernel of 7 filters (in
    // blocks of 3), padded by 2 and 1 on every side: each output point
    // reads one tap, and the product by the reordered weights gives the
    // convolution.
    let (c, f, m, kh, kw) = (5, 7, 3, 3, 2);
    let x = rand(&[2, c, 1, 1], 1900);
    let wt = rand(&[f, c, kh, kw], 1901);
    let bias = rand(&[f], 1902);
    let plain = r::conv(
        &x,
        &wt,
        &win(&[1, 1], &[kh - 1, kw - 1], &[kh - 1, kw - 1], &[1, 1]),
        1,
    );
    let s = &plain.shape;
    assert_eq!((s[2], s[3]), (kh, kw));
    let want = tabulate_blocked(
        &[s[0], f.div_ceil(m), kh, kw, m],
        f,
        |i, fo| plain.at(&[i[0], fo, i[2], i[3]]) + bias.at(&[fo]),
        0.0,
    );
    let packed_w = packed(&wt, None, m);
    let rows = r::tabulate(&[c, kh, kw, f.div_ceil(m), m], |i| {
        packed_w.at(&[i[3], i[0], kh - 1 - i[1], kw - 1 - i[2], i[4]])
    });
    check("point_rows_nchwc", vec![t("Wt", &packed_w)], &[&rows]);
    let b = packed_bias(&bias, m);
    check(
        "conv2d_point_nchwc",
        vec![t("X", &x), t("R", &rows), t("B", &b)],
        &[&want],
    );
}

/// Runs prelude def `name` on `args`: its first result.
fn first_result(name: &str, args: Args) -> Nd {
    let args: HashMap<String, Arg> = args.into_iter().collect();
    let results = interp::run(prelude(), name, &args, &HashMap::new(), Mode::Real)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let (_, y) = &results[0];
    Nd::new(y.shape(), y.to_f64_vec())
}

#[test]
fn convolutions_by_winograds_minimal_filtering() {
    // A 3 x 3 and a 2 x 2 convolution of stride 1, dilated by 2 down the
    // rows, padded unevenly, 5 channels in blocks of 2 (the last block's
    // second lane holds 7s the zero weights must cancel), 3 filters in
    // blocks of 2, odd sizes that leave part of the last tiles outside the
    // output: input transform, filter transform, the products, and each
    // output transform give the plain convolution (bias, ReLU, residual).
    let (c, f, l, m, dil) = (5, 3, 2, 2, [2, 1]);
    let pads = ([1, 2], [0, 1]);
    for (k, r) in [3usize, 2].into_iter().enumerate() {
        let tag = if r == 3 { "f23" } else { "f22" };
        let seed = 1950 + 10 * k as u64;
        let x = rand(&[2, c, 7, 6], seed);
        let wt = rand(&[f, c, r, r], seed + 1);
        let bias = rand(&[f], seed + 2);
        let plain = r::conv(&x, &wt, &win(&[1, 1], &pads.0, &pads.1, &dil), 1);
        let s = plain.shape.clone();
        let want = tabulate_blocked(
            &[s[0], f.div_ceil(m), s[2], s[3], m],
            f,
            |i, fo| plain.at(&[i[0], fo, i[2], i[3]]) + bias.at(&[fo]),
            0.0,
        );
        let window = [
            int("ph0", pads.0[0]),
            int("pw0", pads.0[1]),
            int("ph1", pads.1[0]),
            int("pw1", pads.1[1]),
            int("dh", dil[0]),
            int("dw", dil[1]),
        ];
        let mut args = vec![t("X", &blocked(&x, l, 7.0))];
        args.extend(window);
        let v = first_result(&format!("winograd_{tag}_input_nchwc"), args);
        let u = first_result(
            &format!("winograd_{tag}_filter_nchwc"),
            vec![t("Wt", &packed(&wt, Some(l), m))],
        );
        assert_eq!(v.shape[..2], [r + 1, r + 1], "{tag}: the tiles' transform");
        assert_eq!(
            u.shape[..2],
            [r + 1, r + 1],
            "{tag}: the filters' transform"
        );
        let p = first_result("winograd_product", vec![t("V", &v), t("U", &u)]);
        let b = packed_bias(&bias, m);
        let relu = |y: &Nd| y.map(|v| v.max(0.0));
        let output = format!("winograd_{tag}_output_nchwc");
        let mut args = vec![t("P", &p), t("B", &b)];
        args.extend([int("OH", s[2]), int("OW", s[3])]);
        check(&output, args.clone(), &[&want]);
        check(&format!("{output}_relu"), args, &[&relu(&want)]);
        if r == 3 {
            let residual = rand(&want.shape, seed + 3);
            let added = r::broadcast(&want, &residual, |a, b| a + b);
            let args = vec![t("P", &p), t("B", &b), t("R", &residual)];
            check(&format!("{output}_add"), args.clone(), &[&added]);
            check(&format!("{output}_add_relu"), args, &[&relu(&added)]);
        }
    }
}

/// A bias of F filters in blocks of `m`, as the packed convolutions take
/// it: the lanes past F are zero.
fn packed_bias(bias: &Nd, m: usize) -> Nd {
    let f = bias.shape[0];
    r::tabulate(&[f.div_ceil(m), m], |i| {
        let fo = i[0] * m + i[1];
        if fo < f {
            bias.at(&[fo])
        } else {
            0.0
        }
    })
}

#[test]
fn interleaved_phases() {
    // Four phases of 5 channels in blocks of 4 (the lanes past 5 hold 9s,
    // which must not show), 2 x 3 points each, put in place: the output
    // point (oh, ow) is phase (oh % 2, ow % 2)'s point (oh / 2, ow / 2).
    let (c, l) = (5, 4);
    let phases: Vec<Nd> = (0..4).map(|k| rand(&[2, c, 2, 3], 1700 + k)).collect();
    let want = r::tabulate(&[2, c, 4, 6], |i| {
        phases[2 * (i[2] % 2) + i[3] % 2].at(&[i[0], i[1], i[2] / 2, i[3] / 2])
    });
    let mut args: Vec<_> = ["Z00", "Z01", "Z10", "Z11"]
        .into_iter()
        .zip(&phases)
        .map(|(name, p)| t(name, &blocked(p, l, 9.0)))
        .collect();
    args.push(int("C", c));
    check("interleave2d_nchwc", args.clone(), &[&want]);
    // Blocked, every lane is put in place, those past C too.
    let blocked_phases: Vec<Nd> = phases.iter().map(|p| blocked(p, l, 9.0)).collect();
    let want = r::tabulate(&[2, c.div_ceil(l), 4, 6, l], |i| {
        blocked_phases[2 * (i[2] % 2) + i[3] % 2].at(&[i[0], i[1], i[2] / 2, i[3] / 2, i[4]])
    });
    args.pop();
    check("interleave2d_blocked", args, &[&want]);
}

#[test]
fn packed_weights_unpacked() {
    // 7 filters in blocks of 3 over 5 input channels, packed for a
    // blocked input (blocks of 4) and for a plain one; the first F = 6
    // filters unpacked, a blocked input's channels past 5 as zeros.
    let (f, c, l, m) = (7, 5, 4, 3);
    let wt = rand(&[f, c, 3, 2], 1800);
    let bias = rand(&[f], 1801);
    let want = r::tabulate(&[6, c.div_ceil(l) * l, 3, 2], |i| {
        if i[1] < c {
            wt.at(i)
        } else {
            0.0
        }
    });
    check(
        "unpack_weights_nchwc",
        vec![t("Wt", &packed(&wt, Some(l), m)), int("F", 6)],
        &[&want],
    );
    let want = r::tabulate(&[6, c, 3, 2], |i| wt.at(i));
    check(
        "unpack_weights_nchw_nchwc",
        vec![t("Wt", &packed(&wt, None, m)), int("F", 6)],
        &[&want],
    );
    let packed_bias = packed_bias(&bias, m);
    let want = r::tabulate(&[6], |i| bias.at(i));
    check(
        "unpack_bias_nchwc",
        vec![t("B", &packed_bias), int("F", 6)],
        &[&want],
    );
}

#[test]
fn channel_blocked_layouts() {
    let one = [1, 1];
    // Channels that are not whole blocks (5 in blocks of 4), output
    // channels in blocks of another width (7 in blocks of 3), strides,
    // dilation and uneven pads.
    for (k, (c, f, l, m, size, kernel, w)) in [
        (5, 7, 4, 3, [6, 7], [3, 3], win(&one, &one, &one, &one)),
        (
            8,
            4,
            4,
            4,
            [7, 6],
            [3, 2],
            win(&[2, 1], &[1, 0], &[0, 1], &one),
        ),
        (
            3,
            6,
            4,
            4,
            [9, 8],
            [3, 3],
            win(&[2, 2], &[2, 1], &[1, 2], &[2, 1]),
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let seed = 1500 + 10 * k as u64;
        let x = rand(&[2, c, size[0], size[1]], seed);
        let wt = rand(&[f, c, kernel[0], kernel[1]], seed + 1);
        let bias = rand(&[f], seed + 2);
        let xb = blocked(&x, l, 0.0);
        if c % l == 0 {
            check("nchwc", vec![t("X", &x), int("L", l)], &[&xb]);
        }
        // Whatever the lanes past C hold, they are dropped.
        check(
            "nchw",
            vec![t("X", &blocked(&x, l, 9.0)), int("C", c)],
            &[&x],
        );
        let plain = r::conv(&x, &wt, &w, 1);
        let want = |m: usize| {
            let s = &plain.shape;
            tabulate_blocked(
                &[s[0], f.div_ceil(m), s[2], s[3], m],
                f,
                |i, fo| plain.at(&[i[0], fo, i[2], i[3]]) + bias.at(&[fo]),
                0.0,
            )
        };
        let b = packed_bias(&bias, m);
        // The input's lanes past C are not read as data: its packed
        // weights are zero there. The epilogues: ReLU, a residual, both.
        let relu = |y: &Nd| y.map(|v| v.max(0.0));
        let residual = rand(&want(m).shape, seed + 3);
        let added = r::broadcast(&want(m), &residual, |a, b| a + b);
        let blocked_args = |extra: Vec<(String, Arg)>| {
            let mut args = vec![
                t("X", &blocked(&x, l, 7.0)),
                t("Wt", &packed(&wt, Some(l), m)),
                t("B", &b),
            ];
            args.extend(extra);
            args.extend(window_args("hw", &w));
            args
        };
        check("conv2d_nchwc", blocked_args(vec![]), &[&want(m)]);
        check(
            "conv2d_nchwc_relu",
            blocked_args(vec![]),
            &[&relu(&want(m))],
        );
        let r_arg = || vec![t("R", &residual)];
        check("conv2d_nchwc_add", blocked_args(r_arg()), &[&added]);
        check(
            "conv2d_nchwc_add_relu",
            blocked_args(r_arg()),
            &[&relu(&added)],
        );
        let mut args = vec![t("X", &x), t("Wt", &packed(&wt, None, m)), t("B", &b)];
        args.extend(window_args("hw", &w));
        check("conv2d_nchw_nchwc", args.clone(), &[&want(m)]);
        check("conv2d_nchw_nchwc_relu", args, &[&relu(&want(m))]);
        let (pk, ps, pp) = ([3, 2], [2, 1], [1, 0, 1, 1]);
        let pooled = r::pool(&x, &pk, &ps, &pp, Pool::Max);
        let mut args = vec![t("X", &xb), int("KH", pk[0]), int("KW", pk[1])];
        args.extend([int("sh", ps[0]), int("sw", ps[1])]);
        args.extend([
            int("ph0", pp[0]),
            int("pw0", pp[1]),
            int("ph1", pp[2]),
            int("pw1", pp[3]),
        ]);
        check("maxpool2d_nchwc", args, &[&blocked(&pooled, l, 0.0)]);
    }
}

#[test]
fn channel_blocked_grouped_conv() {
    // Groups of one block each: 3 groups of 4 channels in and out, blocks
    // of 4, stride 2 on one axis, uneven pads and a dilation.
    let (g, l) = (3, 4);
    let w = win(&[2, 1], &[1, 0], &[0, 2], &[1, 2]);
    let x = rand(&[2, g * l, 7, 6], 1600);
    let wt = rand(&[g * l, l, 3, 2], 1601);
    let bias = rand(&[g * l], 1602);
    let plain = r::conv(&x, &wt, &w, g);
    let s = &plain.shape;
    let want = r::tabulate(&[s[0], g, s[2], s[3], l], |i| {
        plain.at(&[i[0], i[1] * l + i[4], i[2], i[3]]) + bias.at(&[i[1] * l + i[4]])
    });
    let packed = r::tabulate(&[g, 3, 2, l, l], |i| {
        wt.at(&[i[0] * l + i[4], i[3], i[1], i[2]])
    });
    let b = r::tabulate(&[g, l], |i| bias.at(&[i[0] * l + i[1]]));
    let mut args = vec![t("X", &blocked(&x, l, 0.0)), t("Wt", &packed), t("B", &b)];
    args.extend(window_args("hw", &w));
    check("conv2d_nchwc_grouped", args, &[&want]);
}

#[test]
fn channel_blocked_batchnorm() {
    // 5 channels in blocks of 4: an inference batch norm as the blocked
    // per-channel scale and shift the importer packs from its statistics.
    let (c, l, eps) = (5, 4, 1e-3);
    let x = rand_with(&[2, c, 3, 4], 1700, |v| 3.0 * v);
    let (scale, bias, mean) = (rand(&[c], 1701), rand(&[c], 1702), rand(&[c], 1703));
    let var = rand_with(&[c], 1704, |v| v.abs() + 0.1);
    let want = r::batchnorm(&x, &scale, &bias, &mean, &var, eps);
    let factor = |k: usize| scale.at(&[k]) / (var.at(&[k]) + eps).sqrt();
    let per_lane = |f: &dyn Fn(usize) -> f64| {
        r::tabulate(&[c.div_ceil(l), l], |i| {
            let k = i[0] * l + i[1];
            if k < c {
                f(k)
            } else {
                0.0
            }
        })
    };
    let s = per_lane(&factor);
    let shift = per_lane(&|k| bias.at(&[k]) - mean.at(&[k]) * factor(k));
    let args = vec![t("X", &blocked(&x, l, 0.0)), t("S", &s), t("T", &shift)];
    check("scale_shift_nchwc", args, &[&blocked(&want, l, 0.0)]);
}

#[test]
fn conv1d() {
    let cases = [
        // Plain, no padding.
        conv_case(2, 3, 4, 1, &[9], &[3], win(&[1], &[0], &[0], &[1])),
        // Stride 2 on an odd length, asymmetric pads, dilation 2.
        conv_case(1, 2, 3, 1, &[11], &[3], win(&[2], &[1], &[2], &[2])),
        // Two groups, and a window that does not fit the last stride.
        conv_case(2, 4, 6, 2, &[10], &[4], win(&[3], &[2], &[0], &[1])),
        // Depthwise.
        conv_case(1, 3, 3, 3, &[8], &[3], win(&[1], &[1], &[1], &[1])),
    ];
    for (k, case) in cases.iter().enumerate() {
        check_conv(case, 100 + 10 * k as u64);
    }
}

#[test]
fn conv2d() {
    let one = [1, 1];
    let cases = [
        // A 3 x 3 "same" convolution.
        conv_case(2, 3, 4, 1, &[5, 5], &[3, 3], win(&one, &one, &one, &one)),
        // Stride 2 on odd sizes.
        conv_case(1, 2, 3, 1, &[7, 9], &[3, 3], win(&[2, 2], &one, &one, &one)),
        // Dilation 2 with padding 2.
        conv_case(
            1,
            2,
            2,
            1,
            &[8, 7],
            &[3, 3],
            win(&one, &[2, 2], &[2, 2], &[2, 2]),
        ),
        // Two groups, different strides per axis.
        conv_case(2, 4, 6, 2, &[6, 5], &[3, 3], win(&[2, 1], &one, &one, &one)),
        // Depthwise, stride 2.
        conv_case(1, 3, 3, 3, &[6, 6], &[3, 3], win(&[2, 2], &one, &one, &one)),
        // Asymmetric pads with a rectangular kernel.
        conv_case(
            1,
            2,
            2,
            1,
            &[5, 6],
            &[2, 3],
            win(&[1, 2], &[0, 2], &[1, 0], &one),
        ),
        // A 1 x 1 convolution.
        conv_case(
            2,
            5,
            3,
            1,
            &[4, 3],
            &[1, 1],
            win(&one, &[0, 0], &[0, 0], &one),
        ),
        // Everything at once: groups, strides, dilation, uneven pads.
        conv_case(
            1,
            4,
            4,
            2,
            &[9, 8],
            &[3, 2],
            win(&[2, 3], &[1, 0], &[2, 1], &[2, 1]),
        ),
    ];
    for (k, case) in cases.iter().enumerate() {
        check_conv(case, 200 + 10 * k as u64);
    }
}

#[test]
fn conv3d() {
    let one = [1, 1, 1];
    let cases = [
        conv_case(
            1,
            2,
            3,
            1,
            &[4, 5, 4],
            &[3, 3, 3],
            win(&one, &one, &one, &one),
        ),
        conv_case(
            2,
            4,
            2,
            2,
            &[5, 4, 6],
            &[2, 3, 2],
            win(&[2, 1, 2], &[1, 0, 1], &[0, 2, 1], &[1, 2, 2]),
        ),
    ];
    for (k, case) in cases.iter().enumerate() {
        check_conv(case, 300 + 10 * k as u64);
    }
}

#[test]
fn conv_transpose2d() {
    // (channels in, output channels per group, groups, input size, kernel,
    // window, output pads)
    let cases = [
        (
            3,
            2,
            1,
            [4, 5],
            [3, 3],
            win(&[1, 1], &[0, 0], &[0, 0], &[1, 1]),
            [0, 0],
        ),
        // The usual 2x upsampling: stride 2, pad 1, output pad 1.
        (
            2,
            3,
            1,
            [3, 4],
            [3, 3],
            win(&[2, 2], &[1, 1], &[1, 1], &[1, 1]),
            [1, 1],
        ),
        // Uneven strides, asymmetric pads, output pads, dilation.
        (
            2,
            2,
            1,
            [3, 3],
            [2, 3],
            win(&[3, 2], &[1, 0], &[0, 2], &[1, 2]),
            [2, 1],
        ),
        // Two groups with stride 2 and dilation 2.
        (
            4,
            3,
            2,
            [3, 4],
            [3, 3],
            win(&[2, 2], &[1, 1], &[1, 1], &[2, 2]),
            [1, 0],
        ),
    ];
    for (k, (c, fg, groups, size, kernel, w, out_pads)) in cases.into_iter().enumerate() {
        let seed = 400 + 10 * k as u64;
        let x = rand(&[2, c, size[0], size[1]], seed);
        let wt = rand(&[c, fg, kernel[0], kernel[1]], seed + 1);
        let mut args = vec![t("X", &x), t("Wt", &wt), int("G", groups)];
        args.extend(window_args("hw", &w));
        args.push(int("oph", out_pads[0]));
        args.push(int("opw", out_pads[1]));
        check(
            "conv_transpose2d",
            args,
            &[&r::conv_transpose(&x, &wt, &w, &out_pads, groups)],
        );
    }
}

#[test]
fn conv_transpose3d() {
    // (channels in, output channels per group, groups, input size, kernel,
    // window, output pads)
    let cases = [
        (
            2,
            3,
            1,
            [3, 2, 4],
            [2, 3, 2],
            win(&[2, 1, 2], &[1, 0, 0], &[0, 1, 1], &[1, 1, 1]),
            [1, 0, 0],
        ),
        // Two groups with dilation.
        (
            4,
            2,
            2,
            [2, 3, 3],
            [2, 2, 2],
            win(&[1, 2, 1], &[0, 1, 0], &[0, 0, 1], &[2, 1, 2]),
            [0, 1, 0],
        ),
    ];
    for (k, (c, fg, groups, size, kernel, w, out_pads)) in cases.into_iter().enumerate() {
        let seed = 450 + 10 * k as u64;
        let x = rand(&[1, c, size[0], size[1], size[2]], seed);
        let wt = rand(&[c, fg, kernel[0], kernel[1], kernel[2]], seed + 1);
        let mut args = vec![t("X", &x), t("Wt", &wt), int("G", groups)];
        args.extend(window_args("dhw", &w));
        for (axis, p) in ["opd", "oph", "opw"].into_iter().zip(out_pads) {
            args.push(int(axis, p));
        }
        check(
            "conv_transpose3d",
            args,
            &[&r::conv_transpose(&x, &wt, &w, &out_pads, groups)],
        );
    }
}

#[test]
fn space_to_depth2d() {
    // (input size, stride, begin pads, output size per phase): rows and
    // columns past the input's end read as zeros.
    for (k, (size, st, pads, out)) in [
        ([6, 7], 2, [1, 1], [4, 4]),
        ([5, 5], 3, [2, 0], [3, 2]),
        ([4, 4], 2, [0, 0], [2, 2]),
    ]
    .into_iter()
    .enumerate()
    {
        let x = rand(&[2, 3, size[0], size[1]], 460 + k as u64);
        let want = r::tabulate(&[2, 3 * st * st, out[0], out[1]], |o| {
            let (c, p, q) = (o[1] / (st * st), o[1] / st % st, o[1] % st);
            let h = (st * o[2] + p) as i64 - pads[0] as i64;
            let w = (st * o[3] + q) as i64 - pads[1] as i64;
            if (0..size[0] as i64).contains(&h) && (0..size[1] as i64).contains(&w) {
                x.at(&[o[0], c, h as usize, w as usize])
            } else {
                0.0
            }
        });
        check(
            "space_to_depth2d",
            vec![
                t("X", &x),
                int("s", st),
                int("ph0", pads[0]),
                int("pw0", pads[1]),
                int("OH", out[0]),
                int("OW", out[1]),
            ],
            &[&want],
        );
    }
}

#[test]
fn depth_to_space2d() {
    // (phase strides, begin pads, phase grid, output size)
    for (k, (st, pads, grid, out)) in [
        ([2, 2], [1, 1], [4, 4], [6, 7]),
        ([3, 1], [0, 2], [3, 5], [8, 3]),
        ([1, 2], [0, 0], [2, 3], [2, 6]),
    ]
    .into_iter()
    .enumerate()
    {
        let f = 2;
        let z = rand(&[2, f * st[0] * st[1], grid[0], grid[1]], 470 + k as u64);
        let want = r::tabulate(&[2, f, out[0], out[1]], |o| {
            let (h, w) = (o[2] + pads[0], o[3] + pads[1]);
            let ch = (o[1] * st[0] + h % st[0]) * st[1] + w % st[1];
            z.at(&[o[0], ch, h / st[0], w / st[1]])
        });
        check(
            "depth_to_space2d",
            vec![
                t("Z", &z),
                int("sh", st[0]),
                int("sw", st[1]),
                int("ph0", pads[0]),
                int("pw0", pads[1]),
                int("OH", out[0]),
                int("OW", out[1]),
            ],
            &[&want],
        );
    }
}

// ---------------------------------------------------------------------------
// Pooling.

/// A pooling case: input size, kernel, strides, pads (every begin, then
/// every end).
type PoolCase = (
    &'static [usize],
    &'static [usize],
    &'static [usize],
    &'static [usize],
);

#[test]
fn pooling() {
    // (input size, kernel, strides, pads: every begin, then every end)
    let cases: [PoolCase; 6] = [
        // ResNet's stem pooling on an odd size.
        (&[7, 7], &[3, 3], &[2, 2], &[1, 1, 1, 1]),
        // No padding; the last column does not fit a window.
        (&[6, 5], &[2, 2], &[2, 2], &[0, 0, 0, 0]),
        // Windows hanging over the edge by two rows, one in-bounds point left.
        (&[5, 6], &[3, 2], &[1, 2], &[2, 0, 1, 1]),
        // Uneven pads and strides larger than one.
        (&[8, 9], &[4, 4], &[3, 3], &[1, 2, 2, 1]),
        // ResNet3D's stem pooling.
        (&[5, 7, 6], &[3, 3, 3], &[2, 2, 2], &[1, 1, 1, 1, 1, 1]),
        // Uneven 3-D windows, strides and pads.
        (&[4, 6, 5], &[2, 3, 2], &[1, 2, 2], &[0, 2, 1, 1, 0, 1]),
    ];
    let names = ["D", "H", "W"];
    for (k, (size, kernel, strides, pads)) in cases.into_iter().enumerate() {
        let d = size.len();
        let dims = &names[3 - d..];
        let mut shape = vec![2, 3];
        shape.extend(size);
        let x = rand(&shape, 500 + k as u64);
        // All values below zero: a padded point taken as 0 would win the max.
        let negative = rand_with(&shape, 520 + k as u64, |v| v - 1.5);
        let pool_args = |x: &Nd| {
            let mut args = vec![t("X", x)];
            let lower: Vec<String> = dims.iter().map(|n| n.to_lowercase()).collect();
            args.extend(
                dims.iter()
                    .zip(kernel)
                    .map(|(n, &v)| int(&format!("K{n}"), v)),
            );
            args.extend(
                lower
                    .iter()
                    .zip(strides.iter())
                    .map(|(n, &v)| int(&format!("s{n}"), v)),
            );
            args.extend(
                lower
                    .iter()
                    .zip(&pads[..d])
                    .map(|(n, &v)| int(&format!("p{n}0"), v)),
            );
            args.extend(
                lower
                    .iter()
                    .zip(&pads[d..])
                    .map(|(n, &v)| int(&format!("p{n}1"), v)),
            );
            args
        };
        let def = |base: &str| base.replace("2d", &format!("{d}d"));
        let want = r::pool(&negative, kernel, strides, pads, Pool::Max);
        check(&def("maxpool2d"), pool_args(&negative), &[&want]);
        for (name, mode) in [
            ("maxpool2d", Pool::Max),
            ("avgpool2d", Pool::AvgExcludePad),
            ("avgpool2d_incpad", Pool::AvgIncludePad),
        ] {
            check(
                &def(name),
                pool_args(&x),
                &[&r::pool(&x, kernel, strides, pads, mode)],
            );
        }
    }
    for (shape, axes, rank) in [
        (vec![2, 3, 4, 5], vec![2, 3], 2),
        (vec![2, 3, 3, 4, 2], vec![2, 3, 4], 3),
    ] {
        let x = rand(&shape, 510);
        check(
            &format!("global_avgpool{rank}d"),
            vec![t("X", &x)],
            &[&r::reduce(&x, &axes, true, Reduce::Mean)],
        );
        check(
            &format!("global_maxpool{rank}d"),
            vec![t("X", &x)],
            &[&r::reduce(&x, &axes, true, Reduce::Max)],
        );
    }
}

// ---------------------------------------------------------------------------
// Normalizations and softmax.

#[test]
fn batchnorm() {
    for (rank, shape) in [
        (2, vec![3, 4]),
        (3, vec![2, 4, 5]),
        (4, vec![2, 3, 4, 5]),
        (5, vec![2, 3, 2, 3, 2]),
    ] {
        let seed = 600 + 10 * rank as u64;
        let ch = shape[1];
        let x = rand_with(&shape, seed, |v| 3.0 * v);
        let (scale, bias, mean) = (
            rand(&[ch], seed + 1),
            rand(&[ch], seed + 2),
            rand(&[ch], seed + 3),
        );
        let var = rand_with(&[ch], seed + 4, |v| v.abs() + 0.1);
        let eps = 1e-5;
        let want = r::batchnorm(&x, &scale, &bias, &mean, &var, eps);
        let args = vec![
            t("X", &x),
            t("Scale", &scale),
            t("Bias", &bias),
            t("Mean", &mean),
            t("Var", &var),
            flt("eps", eps),
        ];
        check(&format!("batchnorm_r{rank}"), args, &[&want]);
    }
}

/// The batch norm's factor per channel is what the normalization scales by:
/// on channels of positive variance it is Scale / sqrt(Var + eps), and a
/// batch norm is `(x - Mean) * factor + Bias` with it (ONNX's definition,
/// `r::batchnorm`), which is what folding it into weights relies on.
#[test]
fn batchnorm_factor() {
    for (ch, seed) in [(1, 690), (4, 691), (7, 692)] {
        let scale = rand(&[ch], seed);
        let var = rand_with(&[ch], seed + 1, |v| v.abs() + 0.1);
        let eps = 1e-3;
        let want = Nd::new(
            &[ch],
            (0..ch)
                .map(|c| scale.data[c] / (var.data[c] + eps).sqrt())
                .collect(),
        );
        let args = vec![t("Scale", &scale), t("Var", &var), flt("eps", eps)];
        let got = check("batchnorm_factor", args, &[&want]);
        let factor = got[0].1.to_f64_vec();
        let (bias, mean) = (rand(&[ch], seed + 2), rand(&[ch], seed + 3));
        let x = rand_with(&[2, ch, 3], seed + 4, |v| 3.0 * v);
        let norm = r::batchnorm(&x, &scale, &bias, &mean, &var, eps);
        r::for_each_index(&x.shape, |ix| {
            let c = ix[1];
            let folded = (x.at(ix) - mean.data[c]) * factor[c] + bias.data[c];
            let w = norm.at(ix);
            assert!(
                (folded - w).abs() <= RTOL * w.abs().max(1.0),
                "batchnorm_factor: channel {c} folds to {folded}, the batch norm gives {w}"
            );
        });
    }
}

#[test]
fn layernorm() {
    for (rank, shape) in [
        (2, vec![4, 7]),
        (3, vec![2, 3, 8]),
        (4, vec![2, 2, 3, 5]),
        (5, vec![2, 1, 2, 3, 5]),
    ] {
        let seed = 700 + 10 * rank as u64;
        let d = shape[rank - 1];
        // Rows with a mean far from zero, as after a residual connection.
        let x = rand_with(&shape, seed, |v| 2.0 * v + 5.0);
        let (scale, bias) = (rand(&[d], seed + 1), rand(&[d], seed + 2));
        let eps = 1e-5;
        let args = vec![
            t("X", &x),
            t("Scale", &scale),
            t("Bias", &bias),
            flt("eps", eps),
        ];
        check(
            &format!("layernorm_r{rank}"),
            args,
            &[&r::layernorm(&x, &scale, &bias, eps)],
        );
    }
}

#[test]
fn softmax() {
    for (rank, shape) in [
        (2, vec![4, 7]),
        (3, vec![2, 3, 8]),
        (4, vec![2, 2, 3, 5]),
        (5, vec![2, 1, 2, 3, 5]),
    ] {
        let seed = 800 + 10 * rank as u64;
        let name = format!("softmax_r{rank}");
        let x = rand_with(&shape, seed, |v| 3.0 * v);
        check(&name, vec![t("X", &x)], &[&r::softmax(&x)]);
        // Large values: exp would overflow without subtracting the maximum.
        let big = rand_with(&shape, seed + 1, |v| 1000.0 + 50.0 * v);
        check(&name, vec![t("X", &big)], &[&r::softmax(&big)]);
        // Equal values in every row.
        let flat = Nd::full(&shape, 1e4);
        check(&name, vec![t("X", &flat)], &[&r::softmax(&flat)]);
    }
}

// ---------------------------------------------------------------------------
// Elementwise operators.

#[test]
fn unary_elementwise() {
    for (op, f, domain) in unary_ops() {
        for rank in 1..=MAX_RANK {
            let x = domain.sample(&elementwise_shape(rank), 900 + rank as u64);
            check(&format!("{op}_r{rank}"), vec![t("X", &x)], &[&x.map(f)]);
        }
    }
}

#[test]
fn unary_elementwise_with_attributes() {
    for rank in 1..=MAX_RANK {
        let shape = elementwise_shape(rank);
        let x = rand_with(&shape, 950 + rank as u64, |v| 2.0 * v);
        let alpha = 0.125;
        let leaky = x.map(|v| if v >= 0.0 { v } else { alpha * v });
        check(
            &format!("leaky_relu_r{rank}"),
            vec![t("X", &x), flt("alpha", alpha)],
            &[&leaky],
        );
        let (lo, hi) = (-0.25, 0.5);
        let clipped = x.map(|v| v.max(lo).min(hi));
        check(
            &format!("clip_r{rank}"),
            vec![t("X", &x), flt("lo", lo), flt("hi", hi)],
            &[&clipped],
        );
    }
    for rank in 2..=MAX_RANK {
        let shape = elementwise_shape(rank);
        let x = rand(&shape, 960 + rank as u64);
        let slope = rand(&[shape[1]], 970 + rank as u64);
        check(
            &format!("prelu_r{rank}"),
            vec![t("X", &x), t("Slope", &slope)],
            &[&r::prelu(&x, &slope)],
        );
    }
}

#[test]
fn binary_elementwise() {
    // Operand shapes for the general broadcasting form, by rank: stretched
    // axes on either side, and an operand of all 1s on the left.
    let bcast_cases: [Vec<(Vec<usize>, Vec<usize>)>; MAX_RANK] = [
        vec![(vec![5], vec![1]), (vec![1], vec![4]), (vec![3], vec![3])],
        vec![
            (vec![3, 1], vec![1, 4]),
            (vec![1, 4], vec![3, 4]),
            (vec![3, 4], vec![3, 1]),
        ],
        vec![
            (vec![2, 1, 4], vec![1, 3, 1]),
            (vec![2, 3, 4], vec![2, 3, 4]),
        ],
        vec![
            (vec![2, 3, 1, 5], vec![1, 3, 4, 1]),
            (vec![1, 1, 1, 1], vec![2, 3, 4, 5]),
        ],
        vec![
            (vec![2, 1, 3, 1, 2], vec![1, 2, 1, 4, 2]),
            (vec![2, 2, 3, 1, 2], vec![1, 1, 1, 1, 1]),
        ],
    ];
    for (k, (op, f, da, db)) in binary_ops().into_iter().enumerate() {
        let seed = 1000 + 100 * k as u64;
        for rank in 1..=MAX_RANK {
            let shape = elementwise_shape(rank);
            let (a, b) = (
                da.sample(&shape, seed + rank as u64),
                db.sample(&shape, seed + 10 + rank as u64),
            );
            check(
                &format!("{op}_r{rank}"),
                vec![t("A", &a), t("B", &b)],
                &[&r::broadcast(&a, &b, f)],
            );
            let s = db.sample(&[], seed + 20 + rank as u64);
            check(
                &format!("{op}_r{rank}_scalar"),
                vec![t("A", &a), t("B", &s)],
                &[&r::broadcast(&a, &s, f)],
            );
            for (c, (sa, sb)) in bcast_cases[rank - 1].iter().enumerate() {
                let case_seed = seed + 30 + 10 * rank as u64 + c as u64;
                let (a, b) = (da.sample(sa, case_seed), db.sample(sb, case_seed + 5));
                check(
                    &format!("{op}_bcast_r{rank}"),
                    vec![t("A", &a), t("B", &b)],
                    &[&r::broadcast(&a, &b, f)],
                );
            }
        }
        for (c, (suffix, sa, sb)) in binary_broadcasts().into_iter().enumerate() {
            let (a, b) = (
                da.sample(&sa, seed + 90 + c as u64),
                db.sample(&sb, seed + 95 + c as u64),
            );
            check(
                &format!("{op}_{suffix}"),
                vec![t("A", &a), t("B", &b)],
                &[&r::broadcast(&a, &b, f)],
            );
        }
    }
}

#[test]
fn casts() {
    for rank in 1..=MAX_RANK {
        let shape = elementwise_shape(rank);
        let n: usize = shape.iter().product();
        // Integers beyond float32's 24 bits round to the nearest float32.
        let ints: Vec<i64> = (0..n as i64)
            .map(|k| (k - 7) * 3 + (k % 3) * (1 << 25))
            .collect();
        let x = Tensor::from_i64(DType::I64, &shape, ints.clone());
        let want = Nd::new(&shape, ints.iter().map(|&v| v as f32 as f64).collect());
        check(
            &format!("cast_i64_f32_r{rank}"),
            vec![("X".to_string(), Arg::Tensor(x))],
            &[&want],
        );
        let bits: Vec<i64> = (0..n as i64).map(|k| k % 2).collect();
        let x = Tensor::from_i64(DType::Bool, &shape, bits.clone());
        let want = Nd::new(&shape, bits.iter().map(|&v| v as f64).collect());
        check(
            &format!("cast_bool_f32_r{rank}"),
            vec![("X".to_string(), Arg::Tensor(x))],
            &[&want],
        );
        // Floats truncate toward zero.
        let x = rand_with(&shape, 2200 + rank as u64, |v| v * 100.0);
        let want = x.map(f64::trunc);
        check(&format!("cast_f32_i64_r{rank}"), vec![t("X", &x)], &[&want]);
    }
}

#[test]
fn where_and_expand() {
    // Shapes of C, A, B by rank: stretched axes on every side.
    let cases: [(Vec<usize>, Vec<usize>, Vec<usize>); MAX_RANK] = [
        (vec![5], vec![1], vec![5]),
        (vec![3, 1], vec![1, 4], vec![3, 4]),
        (vec![2, 1, 4], vec![1, 3, 1], vec![2, 3, 4]),
        (vec![1, 3, 1, 5], vec![2, 1, 4, 1], vec![1, 1, 1, 1]),
        (
            vec![2, 1, 3, 1, 2],
            vec![1, 2, 1, 3, 1],
            vec![2, 2, 1, 1, 2],
        ),
    ];
    for (k, (sc, sa, sb)) in cases.iter().enumerate() {
        let rank = k + 1;
        let c = rand(sc, 2100 + k as u64).map(|x| f64::from(u8::from(x > 0.0)));
        let (a, b) = (rand(sa, 2110 + k as u64), rand(sb, 2120 + k as u64));
        let cond = Tensor::from_i64(
            DType::Bool,
            &c.shape,
            c.data.iter().map(|&x| x as i64).collect(),
        );
        check(
            &format!("where_bcast_r{rank}"),
            vec![("C".to_string(), Arg::Tensor(cond)), t("A", &a), t("B", &b)],
            &[&r::select(&c, &a, &b)],
        );
        // Expand A to the shape of the three broadcast together.
        let out = r::select(&c, &a, &b).shape;
        let mut args = vec![t("X", &a)];
        for (j, &o) in out.iter().enumerate() {
            args.push((format!("O{j}"), Arg::Scalar(Value::Int(o as i64))));
        }
        check(
            &format!("expand_r{rank}"),
            args,
            &[&r::broadcast(&a, &r::tabulate(&out, |_| 0.0), |x, _| x)],
        );
    }
}

// ---------------------------------------------------------------------------
// Layout.

#[test]
fn reshape() {
    // Shapes of 24 elements, by rank.
    let from = [
        vec![24],
        vec![4, 6],
        vec![2, 3, 4],
        vec![2, 3, 2, 2],
        vec![2, 1, 3, 2, 2],
    ];
    let to = [
        vec![24],
        vec![6, 4],
        vec![4, 3, 2],
        vec![3, 2, 2, 2],
        vec![3, 2, 1, 2, 2],
    ];
    for a in 1..=MAX_RANK {
        for b in 1..=MAX_RANK {
            if (a, b) == (1, 1) {
                continue;
            }
            let x = rand(&from[a - 1], 1700 + 10 * a as u64 + b as u64);
            let target = &to[b - 1];
            let mut args = vec![t("X", &x)];
            for (k, &d) in target.iter().enumerate() {
                args.push(int(&format!("O{k}"), d));
            }
            check(
                &format!("reshape_r{a}_r{b}"),
                args,
                &[&r::reshape(&x, target)],
            );
        }
    }
    let x3 = rand(&[2, 3, 5], 1750);
    check(
        "flatten_r3",
        vec![t("X", &x3)],
        &[&r::reshape(&x3, &[2, 15])],
    );
    let x4 = rand(&[2, 3, 4, 5], 1751);
    check(
        "flatten_r4",
        vec![t("X", &x4)],
        &[&r::reshape(&x4, &[2, 60])],
    );
    let x5 = rand(&[2, 3, 2, 4, 3], 1752);
    check(
        "flatten_r5",
        vec![t("X", &x5)],
        &[&r::reshape(&x5, &[2, 72])],
    );
}

#[test]
fn concat_and_split() {
    let base = [3, 2, 4, 3, 2];
    for rank in 1..=MAX_RANK {
        for axis in 0..rank {
            let seed = 1800 + 10 * rank as u64 + axis as u64;
            let mut sa = shape_of_rank(&base, rank);
            let mut sb = sa.clone();
            sa[axis] = 2;
            sb[axis] = 3;
            let (a, b) = (rand(&sa, seed), rand(&sb, seed + 100));
            check(
                &format!("concat_r{rank}_a{axis}"),
                vec![t("A", &a), t("B", &b)],
                &[&r::concat(&a, &b, axis)],
            );
            let mut sx = shape_of_rank(&base, rank);
            sx[axis] = 5;
            let x = rand(&sx, seed + 200);
            let (first, rest) = r::split(&x, axis, 2);
            check(
                &format!("split_r{rank}_a{axis}"),
                vec![t("X", &x), int("s", 2)],
                &[&first, &rest],
            );
        }
    }
}

/// A slice: the input shape and, per axis, (start, end, step).
type SliceCase = (Vec<usize>, Vec<(i64, i64, i64)>);

/// Runs `slice_rK` on each case.
fn check_slices(cases: &[SliceCase], seed: u64) {
    for (k, (shape, axes)) in cases.iter().enumerate() {
        let x = rand(shape, seed + k as u64);
        let mut args = vec![t("X", &x)];
        for (a, &(b, e, s)) in axes.iter().enumerate() {
            args.extend([
                sint(&format!("b{a}"), b),
                sint(&format!("e{a}"), e),
                sint(&format!("s{a}"), s),
            ]);
        }
        let starts: Vec<i64> = axes.iter().map(|x| x.0).collect();
        let ends: Vec<i64> = axes.iter().map(|x| x.1).collect();
        let steps: Vec<i64> = axes.iter().map(|x| x.2).collect();
        check(
            &format!("slice_r{}", shape.len()),
            args,
            &[&r::slice(&x, &starts, &ends, &steps)],
        );
    }
}

#[test]
fn slice() {
    // Positive steps, uneven ones included, and reversals (step -1).
    check_slices(
        &[
            (vec![10], vec![(1, 8, 3)]),
            (vec![10], vec![(9, -1, -1)]),
            (vec![6, 7], vec![(1, 6, 2), (6, -1, -1)]),
            (vec![4, 5, 6], vec![(0, 4, 1), (4, 0, -1), (1, 6, 2)]),
            (
                vec![3, 4, 5, 6],
                vec![(2, -1, -1), (0, 4, 3), (1, 5, 1), (0, 6, 4)],
            ),
            (
                vec![2, 3, 4, 5, 3],
                vec![(1, -1, -1), (0, 3, 2), (3, 0, -2), (1, 5, 1), (0, 3, 1)],
            ),
        ],
        1900,
    );
}

#[test]
fn slice_negative_steps() {
    check_slices(
        &[
            (vec![10], vec![(9, 0, -2)]),
            (vec![10], vec![(8, -1, -3)]),
            (vec![4, 5, 6], vec![(3, 0, -2), (4, 0, -3), (5, -1, -4)]),
            (
                vec![3, 4, 5, 6],
                vec![(2, -1, -2), (3, 0, -2), (4, 0, -3), (5, 0, -2)],
            ),
        ],
        1950,
    );
}

#[test]
fn pad() {
    // (input shape, begin pads, end pads, value); a negative pad crops.
    let cases = [
        (vec![5], vec![2], vec![3], 1.5),
        (vec![3, 4], vec![1, 0], vec![0, 2], -0.5),
        (vec![2, 3, 4], vec![0, 1, 2], vec![1, -1, 0], 0.25),
        (vec![2, 3, 4, 5], vec![0, 0, 1, 2], vec![0, 0, 2, 1], 0.0),
        (
            vec![1, 2, 3, 2, 4],
            vec![0, 1, 0, 1, 2],
            vec![0, 0, 1, 1, -1],
            -1.0,
        ),
    ];
    for (k, (shape, begins, ends, value)) in cases.into_iter().enumerate() {
        let x = rand(&shape, 2000 + k as u64);
        let mut args = vec![t("X", &x), flt("v", value)];
        for a in 0..shape.len() {
            args.push(sint(&format!("pb{a}"), begins[a]));
            args.push(sint(&format!("pe{a}"), ends[a]));
        }
        check(
            &format!("pad_r{}", shape.len()),
            args,
            &[&r::pad(&x, &begins, &ends, value)],
        );
    }
}

// ---------------------------------------------------------------------------
// Reductions.

#[test]
fn reductions() {
    for (op, kind) in REDUCE_OPS {
        for (k, (rank, axes)) in REDUCTIONS.iter().enumerate() {
            let x = rand(&shape_of_rank(&[3, 4, 5, 3, 2], *rank), 2200 + k as u64);
            for keep in [false, true] {
                let want = r::reduce(&x, axes, keep, *kind);
                check(
                    &reduce_name(op, *rank, axes, keep),
                    vec![t("X", &x)],
                    &[&want],
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Band matrix products.

#[test]
fn band_matmuls() {
    // (sequence length, band half-width, dilation): bands that reach past
    // both ends of the sequence, and one wider than the sequence.
    for (k, (m, w, d)) in [(11, 2, 1), (11, 2, 2), (10, 1, 3), (4, 3, 1)]
        .into_iter()
        .enumerate()
    {
        let seed = 2300 + 10 * k as u64;
        let (q, keys) = (rand(&[2, m, 4], seed), rand(&[2, m, 4], seed + 1));
        let args = vec![t("A", &q), t("B", &keys), int("W", w), int("D", d)];
        check("g2bmm", args, &[&r::g2bmm(&q, &keys, w, d)]);
        let (scores, values) = (
            rand(&[2, m, 2 * w + 1], seed + 2),
            rand(&[2, m, 3], seed + 3),
        );
        let args = vec![t("A", &scores), t("B", &values), int("D", d)];
        check("gbmm", args, &[&r::gbmm(&scores, &values, d)]);
    }
}

// ---------------------------------------------------------------------------
// Comparisons, logic and casts to and from bool; reshapes of int64 and bool.

/// `check`, and that every result is of `dtype`.
fn check_as(name: &str, args: Args, expected: &[&Nd], dtype: DType) {
    for (res, got) in check(name, args, expected) {
        assert_eq!(got.dtype(), dtype, "{name}: type of `{res}`");
    }
}

/// A tensor argument of `dtype` holding the integers `x` (rounded).
fn int_arg(name: &str, dtype: DType, x: &Nd) -> (String, Arg) {
    let data = x.data.iter().map(|&v| v.round() as i64).collect();
    (
        name.to_string(),
        Arg::Tensor(Tensor::from_i64(dtype, &x.shape, data)),
    )
}

/// Small integers in -2..=2, so that comparisons see equal operands.
fn small_ints(shape: &[usize], seed: u64) -> Nd {
    rand(shape, seed).map(|v| (2.0 * v).round())
}

/// Operand shapes by rank for the broadcasting comparison and logic tests.
fn bool_op_shapes(rank: usize) -> Vec<(Vec<usize>, Vec<usize>)> {
    let full = elementwise_shape(rank);
    let mut stretched = full.clone();
    stretched[0] = 1;
    let mut other = full.clone();
    other[rank - 1] = 1;
    vec![(full.clone(), full), (stretched, other)]
}

/// A comparison: its name in the prelude and its value on two numbers.
type Comparison = (&'static str, fn(f64, f64) -> bool);

const COMPARISONS: &[Comparison] = &[
    ("equal", |a, b| a == b),
    ("less", |a, b| a < b),
    ("greater", |a, b| a > b),
    ("less_equal", |a, b| a <= b),
    ("greater_equal", |a, b| a >= b),
];

#[test]
fn comparisons_and_logic() {
    let truth = |x: bool| f64::from(u8::from(x));
    for rank in 1..=MAX_RANK {
        for (c, (sa, sb)) in bool_op_shapes(rank).into_iter().enumerate() {
            let seed = 2300 + 10 * rank as u64 + c as u64;
            let (a, b) = (small_ints(&sa, seed), small_ints(&sb, seed + 100));
            for (op, f) in COMPARISONS {
                let want = r::broadcast(&a, &b, |x, y| truth(f(x, y)));
                // Floats off the integers too, so that `less` and `equal` differ.
                let af = a.map(|v| v + 0.25 * v.signum());
                let want_f = r::broadcast(&af, &b, |x, y| truth(f(x, y)));
                check_as(
                    &format!("{op}_f32_bcast_r{rank}"),
                    vec![t("A", &af), t("B", &b)],
                    &[&want_f],
                    DType::Bool,
                );
                check_as(
                    &format!("{op}_i64_bcast_r{rank}"),
                    vec![int_arg("A", DType::I64, &a), int_arg("B", DType::I64, &b)],
                    &[&want],
                    DType::Bool,
                );
            }
            let (pa, pb) = (a.map(|v| truth(v > 0.0)), b.map(|v| truth(v > 0.0)));
            let bools = |name| {
                (
                    int_arg(name, DType::Bool, &pa),
                    int_arg(name, DType::Bool, &pb),
                )
            };
            for (op, f) in [("and", f64::min as fn(f64, f64) -> f64), ("or", f64::max)] {
                let (ia, _) = bools("A");
                let (_, ib) = bools("B");
                check_as(
                    &format!("{op}_bcast_r{rank}"),
                    vec![ia, ib],
                    &[&r::broadcast(&pa, &pb, f)],
                    DType::Bool,
                );
            }
        }
        let shape = elementwise_shape(rank);
        let x = small_ints(&shape, 2400 + rank as u64);
        let nonzero = x.map(|v| truth(v != 0.0));
        let bits = x.map(|v| truth(v > 0.0));
        check_as(
            &format!("not_r{rank}"),
            vec![int_arg("X", DType::Bool, &bits)],
            &[&bits.map(|v| 1.0 - v)],
            DType::Bool,
        );
        check_as(
            &format!("cast_f32_bool_r{rank}"),
            vec![t("X", &x.map(|v| 0.5 * v))],
            &[&nonzero],
            DType::Bool,
        );
        check_as(
            &format!("cast_i64_bool_r{rank}"),
            vec![int_arg("X", DType::I64, &x)],
            &[&nonzero],
            DType::Bool,
        );
        check_as(
            &format!("cast_bool_i64_r{rank}"),
            vec![int_arg("X", DType::Bool, &bits)],
            &[&bits],
            DType::I64,
        );
    }
}

#[test]
fn reshape_int_and_bool() {
    let from = [
        vec![12],
        vec![3, 4],
        vec![2, 3, 2],
        vec![1, 2, 3, 2],
        vec![2, 1, 3, 2, 1],
    ];
    let to = [
        vec![12],
        vec![4, 3],
        vec![2, 2, 3],
        vec![3, 1, 2, 2],
        vec![1, 2, 2, 3, 1],
    ];
    for (dtype, tag) in [(DType::I64, "i64"), (DType::Bool, "bool")] {
        for a in 1..=MAX_RANK {
            for b in 1..=MAX_RANK {
                if (a, b) == (1, 1) {
                    continue;
                }
                let x = small_ints(&from[a - 1], 2500 + 10 * a as u64 + b as u64);
                let x = if dtype == DType::Bool {
                    x.map(|v| f64::from(u8::from(v > 0.0)))
                } else {
                    x
                };
                let mut args = vec![int_arg("X", dtype, &x)];
                for (k, &d) in to[b - 1].iter().enumerate() {
                    args.push(int(&format!("O{k}"), d));
                }
                check_as(
                    &format!("reshape_{tag}_r{a}_r{b}"),
                    args,
                    &[&r::reshape(&x, &to[b - 1])],
                    dtype,
                );
            }
        }
    }
}
