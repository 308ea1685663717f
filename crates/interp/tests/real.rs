//! Real-mode semantics: each test compares the interpreter with an
//! independent plain-Rust computation of what the program means.

mod common;

use common::*;
use interp::{Arg, Tensor};
use ir::{BinOp, Builtin, DType, Expr, Reduction, SizeExpr, Value};

fn matmul(t: DType) -> ir::Program {
    program(vec![DefBuilder::new("matmul")
        .input("A", t, &["M", "K"])
        .input("B", t, &["K", "N"])
        .output("C", t, &["M", "N"])
        .comp(comp(
            "C",
            &["i", "j"],
            Reduction::Add,
            true,
            mul(at("A", &["i", "k"]), at("B", &["k", "j"])),
            vec![upto("i", "M"), upto("j", "N"), upto("k", "K")],
        ))
        .build()])
}

#[test]
fn f32_matmul_matches_a_plain_loop_bit_for_bit() {
    let (m, k, n) = (5, 7, 3);
    let a = Tensor::random(DType::F32, &[m, k], 1);
    let b = Tensor::random(DType::F32, &[k, n], 2);
    let c = only_output(run_real(
        &matmul(DType::F32),
        &tensor_args(&[("A", &a), ("B", &b)]),
    ));
    assert_eq!(c.shape(), vec![m, n]);
    let (av, bv) = (a.to_f64_vec(), b.to_f64_vec());
    let mut want = vec![0.0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut acc = 0.0f32;
            for kk in 0..k {
                acc += av[i * k + kk] as f32 * bv[kk * n + j] as f32;
            }
            want[i * n + j] = acc;
        }
    }
    let want: Vec<f64> = want.into_iter().map(f64::from).collect();
    assert_eq!(c.to_f64_vec(), (want));
}

#[test]
fn f64_matmul_matches_a_plain_loop() {
    let a = Tensor::random(DType::F64, &[4, 6], 3);
    let b = Tensor::random(DType::F64, &[6, 2], 4);
    let c = only_output(run_real(
        &matmul(DType::F64),
        &tensor_args(&[("A", &a), ("B", &b)]),
    ));
    let (av, bv) = (a.to_f64_vec(), b.to_f64_vec());
    let want: Vec<f64> = (0..4)
        .flat_map(|i| {
            let (av, bv) = (&av, &bv);
            (0..2).map(move |j| (0..6).fold(0.0, |acc, k| acc + av[i * 6 + k] * bv[k * 2 + j]))
        })
        .collect();
    assert_eq!(c.to_f64_vec(), (want));
}

/// `O(n) +=! I(n + r - 1) * W(r) where n in 0:N`: conv1d with zero padding 1.
#[test]
fn conv1d_padding_comes_from_skipped_points() {
    let p = program(vec![DefBuilder::new("conv1d")
        .input("I", DType::F64, &["N"])
        .input("W", DType::F64, &["3"])
        .output("O", DType::F64, &["N"])
        .comp(comp(
            "O",
            &["n"],
            Reduction::Add,
            true,
            mul(
                read("I", vec![sub(add(it("n"), it("r")), Expr::int(1))]),
                at("W", &["r"]),
            ),
            vec![upto("n", "N"), upto("r", "3")],
        ))
        .build()]);
    let x = Tensor::random(DType::F64, &[9], 5);
    let w = Tensor::random(DType::F64, &[3], 6);
    let o = only_output(run_real(&p, &tensor_args(&[("I", &x), ("W", &w)])));
    let (xv, wv) = (x.to_f64_vec(), w.to_f64_vec());
    let padded: Vec<f64> = std::iter::once(0.0)
        .chain(xv.iter().copied())
        .chain(std::iter::once(0.0))
        .collect();
    let want: Vec<f64> = (0..9)
        .map(|n| (0..3).map(|r| padded[n + r] * wv[r]).sum::<f64>())
        .collect();
    let got = o.to_f64_vec();
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() < 1e-12, "{got:?} vs {want:?}");
    }
}

/// Max pooling with padding: a skipped point is not a zero, so with all
/// inputs negative the border outputs are still negative.
#[test]
fn max_pool_padding_skips_instead_of_reading_zero() {
    let p = program(vec![DefBuilder::new("pool")
        .input("I", DType::F32, &["N"])
        .output("O", DType::F32, &["N"])
        .comp(comp(
            "O",
            &["n"],
            Reduction::Max,
            true,
            read("I", vec![sub(add(it("n"), it("r")), Expr::int(1))]),
            vec![upto("n", "N"), upto("r", "3")],
        ))
        .build()]);
    let x = Tensor::from_f64(DType::F32, &[5], vec![-5.0, -1.0, -4.0, -3.0, -2.0]);
    let o = only_output(run_real(&p, &tensor_args(&[("I", &x)])));
    assert_eq!(o.to_f64_vec(), vec![-1.0, -1.0, -1.0, -2.0, -2.0]);
}

/// In a reduction, a read under a taken `?:` branch that falls outside its
/// tensor skips the point as any other read does: `S +=! (k >= 0 ? A(k + 1)
/// : 0)` over k in 0:3 adds A(1) + A(2) = 2 + 3 and skips k = 2.
#[test]
fn out_of_bounds_read_under_a_taken_branch_of_a_reduction_skips() {
    let p = program(vec![DefBuilder::new("sum")
        .input("A", DType::I32, &["N"])
        .output("S", DType::I32, &[])
        .comp(comp(
            "S",
            &[],
            Reduction::Add,
            true,
            select(
                bin(BinOp::Ge, it("k"), Expr::int(0)),
                read("A", vec![add(it("k"), Expr::int(1))]),
                lit_i(100, DType::I32),
            ),
            vec![upto("k", "N")],
        ))
        .build()]);
    let a = Tensor::from_i64(DType::I32, &[3], vec![1, 2, 3]);
    let s = only_output(run_real(&p, &tensor_args(&[("A", &a)])));
    assert_eq!(s.to_f64_vec(), vec![5.0]);
}

/// A read guarded by `?:` is only evaluated on its branch: concatenation.
#[test]
fn ternary_guarded_concat() {
    let n_plus_m = SizeExpr::sym("N").add(&SizeExpr::sym("M"));
    let p = program(vec![DefBuilder::new("concat")
        .input("A", DType::I32, &["N"])
        .input("B", DType::I32, &["M"])
        .output_shaped("O", DType::I32, vec![n_plus_m.clone()])
        .comp(comp(
            "O",
            &["i"],
            Reduction::Assign,
            false,
            select(
                bin(BinOp::Lt, it("i"), sym("N")),
                at("A", &["i"]),
                read("B", vec![sub(it("i"), sym("N"))]),
            ),
            vec![range("i", SizeExpr::zero(), n_plus_m)],
        ))
        .build()]);
    let a = Tensor::from_i64(DType::I32, &[2], vec![10, 11]);
    let b = Tensor::from_i64(DType::I32, &[3], vec![20, 21, 22]);
    let o = only_output(run_real(&p, &tensor_args(&[("A", &a), ("B", &b)])));
    assert_eq!(o.to_i64_vec(), (vec![10, 11, 20, 21, 22]));
}

/// `O(i, d) = X(I(i), d)`: an indirect gather.
#[test]
fn indirect_gather() {
    let p = program(vec![DefBuilder::new("gather")
        .input("X", DType::F32, &["V", "D"])
        .input("I", DType::I64, &["N"])
        .output("O", DType::F32, &["N", "D"])
        .comp(comp(
            "O",
            &["i", "d"],
            Reduction::Assign,
            false,
            read("X", vec![at("I", &["i"]), it("d")]),
            vec![upto("i", "N"), upto("d", "D")],
        ))
        .build()]);
    let x = Tensor::random(DType::F32, &[4, 2], 8);
    let idx = Tensor::from_i64(DType::I64, &[3], vec![3, 0, 3]);
    let o = only_output(run_real(&p, &tensor_args(&[("X", &x), ("I", &idx)])));
    let xv = x.to_f64_vec();
    assert_eq!(
        o.to_f64_vec(),
        vec![xv[6], xv[7], xv[0], xv[1], xv[6], xv[7]]
    );

    let bad = Tensor::from_i64(DType::I64, &[3], vec![0, 4, 1]);
    let (stmt, msg) = failure(run_real(&p, &tensor_args(&[("X", &x), ("I", &bad)])));
    assert_eq!(stmt, Some(0));
    assert_eq!(
        msg,
        "read of `X` at (4, 0) is out of bounds for shape (4, 2)"
    );
}

/// `b(i,j) = b(j,i)` reads all of the old `b` before writing.
#[test]
fn in_place_transpose() {
    let p = program(vec![DefBuilder::new("transpose")
        .inout("b", DType::I64, &["N", "N"])
        .comp(comp(
            "b",
            &["i", "j"],
            Reduction::Assign,
            false,
            at("b", &["j", "i"]),
            vec![upto("i", "N"), upto("j", "N")],
        ))
        .build()]);
    let b = Tensor::from_i64(DType::I64, &[3, 3], (0..9).collect());
    let args = tensor_args(&[("b", &b)]);
    let o = only_output(run_real(&p, &args));
    assert_eq!(o.to_i64_vec(), (vec![0, 3, 6, 1, 4, 7, 2, 5, 8]));
    // The caller's tensor is not modified.
    assert_eq!(args["b"], Arg::Tensor(b));
}

/// `C(i) = 1` then `C(i) += A(i, k)` accumulates onto the earlier values;
/// `+=` onto an in/out argument starts from the caller's values.
#[test]
fn non_initializing_reductions_accumulate() {
    let p = program(vec![DefBuilder::new("acc")
        .input("A", DType::I32, &["N", "K"])
        .output("C", DType::I32, &["N"])
        .comp(comp(
            "C",
            &["i"],
            Reduction::Assign,
            false,
            lit_i(100, DType::I32),
            vec![upto("i", "N")],
        ))
        .comp(comp(
            "C",
            &["i"],
            Reduction::Add,
            false,
            at("A", &["i", "k"]),
            vec![upto("i", "N"), upto("k", "K")],
        ))
        .build()]);
    let a = Tensor::from_i64(DType::I32, &[2, 3], vec![1, 2, 3, 4, 5, 6]);
    let o = only_output(run_real(&p, &tensor_args(&[("A", &a)])));
    assert_eq!(o.to_i64_vec(), (vec![106, 115]));

    let q = program(vec![DefBuilder::new("scale")
        .inout("C", DType::F64, &["N"])
        .comp(comp(
            "C",
            &["i"],
            Reduction::Mul,
            false,
            lit_f(3.0, DType::F64),
            vec![upto("i", "N")],
        ))
        .build()]);
    let c = Tensor::from_f64(DType::F64, &[2], vec![2.0, -1.5]);
    let o = only_output(run_real(&q, &tensor_args(&[("C", &c)])));
    assert_eq!(o.to_f64_vec(), vec![6.0, -4.5]);
}

/// A range that covers part of a new tensor leaves the rest at zero.
#[test]
fn new_tensors_start_as_zeros() {
    let p = program(vec![DefBuilder::new("part")
        .input("A", DType::F32, &["N"])
        .output("O", DType::F32, &["N"])
        .comp(comp(
            "O",
            &["i"],
            Reduction::Assign,
            false,
            at("A", &["i"]),
            vec![range(
                "i",
                SizeExpr::constant(1),
                SizeExpr::sym("N").add_const(-1),
            )],
        ))
        .build()]);
    let a = Tensor::from_f64(DType::F32, &[4], vec![1.0, 2.0, 3.0, 4.0]);
    let o = only_output(run_real(&p, &tensor_args(&[("A", &a)])));
    assert_eq!(o.to_f64_vec(), vec![0.0, 2.0, 3.0, 0.0]);
}

fn plus_one(t: DType) -> ir::Program {
    program(vec![DefBuilder::new("inc")
        .input("A", t, &[])
        .output("C", t, &[])
        .comp(comp(
            "C",
            &[],
            Reduction::Assign,
            false,
            add(read("A", vec![]), lit_f(1.0, t)),
            vec![],
        ))
        .build()])
}

#[test]
fn float32_rounds_after_every_operation() {
    let a = Tensor::from_f64(DType::F32, &[], vec![16_777_216.0]);
    let c = only_output(run_real(&plus_one(DType::F32), &tensor_args(&[("A", &a)])));
    assert_eq!(c.to_f64_vec(), vec![16_777_216.0]);
    let a = Tensor::from_f64(DType::F64, &[], vec![16_777_216.0]);
    let c = only_output(run_real(&plus_one(DType::F64), &tensor_args(&[("A", &a)])));
    assert_eq!(c.to_f64_vec(), vec![16_777_217.0]);
}

fn elementwise(op: BinOp, t: DType) -> ir::Program {
    program(vec![DefBuilder::new("ew")
        .input("A", t, &["N"])
        .input("B", t, &["N"])
        .output("C", t, &["N"])
        .comp(comp(
            "C",
            &["i"],
            Reduction::Assign,
            false,
            bin(op, at("A", &["i"]), at("B", &["i"])),
            vec![upto("i", "N")],
        ))
        .build()])
}

fn run_ew(
    op: BinOp,
    t: DType,
    a: Vec<i64>,
    b: Vec<i64>,
) -> Result<Vec<(String, Tensor)>, interp::RunError> {
    let n = a.len();
    let (a, b) = (Tensor::from_i64(t, &[n], a), Tensor::from_i64(t, &[n], b));
    run_real(&elementwise(op, t), &tensor_args(&[("A", &a), ("B", &b)]))
}

#[test]
fn int8_arithmetic_wraps() {
    let c = only_output(run_ew(
        BinOp::Add,
        DType::I8,
        vec![100, -100, 127],
        vec![100, -100, 1],
    ));
    assert_eq!(c.to_i64_vec(), (vec![-56, 56, -128]));
    let c = only_output(run_ew(BinOp::Mul, DType::U8, vec![16, 255], vec![16, 255]));
    assert_eq!(c.to_i64_vec(), (vec![0, 1]));
}

#[test]
fn integer_division_and_modulo_are_floored() {
    let a = vec![-7, 7, -7, 7, 6];
    let b = vec![2, -2, -2, 2, -3];
    let q = only_output(run_ew(BinOp::Div, DType::I32, a.clone(), b.clone()));
    assert_eq!(q.to_i64_vec(), (vec![-4, -4, 3, 3, -2]));
    let r = only_output(run_ew(BinOp::Mod, DType::I32, a, b));
    assert_eq!(r.to_i64_vec(), (vec![1, -1, -1, 1, 0]));
}

#[test]
fn float_modulo_is_floored_and_division_is_true() {
    let p = elementwise(BinOp::Mod, DType::F64);
    let a = Tensor::from_f64(DType::F64, &[3], vec![-7.0, 7.0, 7.5]);
    let b = Tensor::from_f64(DType::F64, &[3], vec![2.0, -2.0, 2.0]);
    let c = only_output(run_real(&p, &tensor_args(&[("A", &a), ("B", &b)])));
    assert_eq!(c.to_f64_vec(), vec![1.0, -1.0, 1.5]);
    let c = only_output(run_real(
        &elementwise(BinOp::Div, DType::F64),
        &tensor_args(&[("A", &a), ("B", &b)]),
    ));
    assert_eq!(c.to_f64_vec(), vec![-3.5, -3.5, 3.75]);
}

#[test]
fn integer_division_by_zero_is_an_error() {
    let (stmt, msg) = failure(run_ew(BinOp::Div, DType::I32, vec![1, 2], vec![1, 0]));
    assert_eq!(stmt, Some(0));
    assert!(msg.contains("division by zero"), "{msg}");
    let (_, msg) = failure(run_ew(BinOp::Mod, DType::I64, vec![5], vec![0]));
    assert!(msg.contains("integer modulo by zero (5 % 0"), "{msg}");
}

#[test]
fn uint64_compares_as_unsigned() {
    let p = program(vec![DefBuilder::new("lt")
        .input("A", DType::U64, &["N"])
        .input("B", DType::U64, &["N"])
        .output("C", DType::Bool, &["N"])
        .comp(comp(
            "C",
            &["i"],
            Reduction::Assign,
            false,
            bin(BinOp::Lt, at("A", &["i"]), at("B", &["i"])),
            vec![upto("i", "N")],
        ))
        .build()]);
    // -1 is the bit pattern of u64::MAX.
    let a = Tensor::from_i64(DType::U64, &[2], vec![1, -1]);
    let b = Tensor::from_i64(DType::U64, &[2], vec![-1, 1]);
    let c = only_output(run_real(&p, &tensor_args(&[("A", &a), ("B", &b)])));
    assert_eq!(
        (c.get(0), c.get(1)),
        (Value::Bool(true), Value::Bool(false))
    );
}

/// Casts: float to int truncates toward zero then wraps; int to float
/// rounds to the float type; bool to number is 0/1.
#[test]
fn casts_truncate_wrap_and_round() {
    let p = program(vec![DefBuilder::new("casts")
        .input("A", DType::F64, &["N"])
        .output("I", DType::I8, &["N"])
        .output("F", DType::F32, &["N"])
        .output("B", DType::I32, &["N"])
        .comp(comp(
            "I",
            &["i"],
            Reduction::Assign,
            false,
            cast(DType::I8, at("A", &["i"])),
            vec![upto("i", "N")],
        ))
        .comp(comp(
            "F",
            &["i"],
            Reduction::Assign,
            false,
            cast(DType::F32, cast(DType::I64, at("A", &["i"]))),
            vec![upto("i", "N")],
        ))
        .comp(comp(
            "B",
            &["i"],
            Reduction::Assign,
            false,
            cast(
                DType::I32,
                bin(BinOp::Gt, at("A", &["i"]), lit_f(0.0, DType::F64)),
            ),
            vec![upto("i", "N")],
        ))
        .build()]);
    let a = Tensor::from_f64(DType::F64, &[3], vec![-2.9, 300.5, 16_777_217.0]);
    let outs = run_real(&p, &tensor_args(&[("A", &a)])).unwrap();
    assert_eq!(outs[0].1.to_i64_vec(), (vec![-2, 44, 1]));
    assert_eq!(outs[1].1.to_f64_vec(), vec![-2.0, 300.0, 16_777_216.0]);
    assert_eq!(outs[2].1.to_i64_vec(), (vec![0, 1, 1]));
}

#[test]
fn builtins_compute_in_f64_and_round_to_the_type() {
    let p = program(vec![DefBuilder::new("fns")
        .input("A", DType::F32, &["N"])
        .output("S", DType::F32, &["N"])
        .output("M", DType::F32, &["N"])
        .output("E", DType::F32, &["N"])
        .output("X", DType::F32, &["N"])
        .comp(comp(
            "S",
            &["i"],
            Reduction::Assign,
            false,
            call(Builtin::Sigmoid, vec![at("A", &["i"])]),
            vec![upto("i", "N")],
        ))
        .comp(comp(
            "M",
            &["i"],
            Reduction::Assign,
            false,
            call(
                Builtin::Fmax,
                vec![at("A", &["i"]), lit_f(f64::NAN, DType::F32)],
            ),
            vec![upto("i", "N")],
        ))
        .comp(comp(
            "X",
            &["i"],
            Reduction::Assign,
            false,
            call(
                Builtin::Max,
                vec![at("A", &["i"]), lit_f(f64::NAN, DType::F32)],
            ),
            vec![upto("i", "N")],
        ))
        .comp(comp(
            "E",
            &["i"],
            Reduction::Assign,
            false,
            call(Builtin::Erf, vec![at("A", &["i"])]),
            vec![upto("i", "N")],
        ))
        .build()]);
    let xs = vec![-1.5, 0.0, 0.25];
    let a = Tensor::from_f64(DType::F32, &[3], xs.clone());
    let outs = run_real(&p, &tensor_args(&[("A", &a)])).unwrap();
    let sig: Vec<f64> = xs
        .iter()
        .map(|&x: &f64| (1.0 / (1.0 + (-x).exp())) as f32 as f64)
        .collect();
    assert_eq!(outs[0].1.to_f64_vec(), sig);
    // fmax ignores a NaN operand; max gives NaN.
    assert_eq!(outs[1].1.to_f64_vec(), xs);
    assert!(outs[3].1.to_f64_vec().iter().all(|x| x.is_nan()));
    let erf: Vec<f64> = xs.iter().map(|&x| libm::erf(x) as f32 as f64).collect();
    assert_eq!(outs[2].1.to_f64_vec(), erf);
}

/// Lets are evaluated before the body at each point, in order, and may use
/// earlier lets; a skippable read in a let skips the point.
#[test]
fn lets_feed_the_body_and_can_skip() {
    let mut c = comp(
        "O",
        &["i"],
        Reduction::Add,
        true,
        mul(local("y"), local("y")),
        vec![
            upto("i", "N"),
            range("r", SizeExpr::constant(-1), SizeExpr::constant(2)),
        ],
    );
    c.lets = vec![
        ("x".to_string(), read("A", vec![add(it("i"), it("r"))])),
        ("y".to_string(), add(local("x"), lit_i(1, DType::I64))),
    ];
    let p = program(vec![DefBuilder::new("lets")
        .input("A", DType::I64, &["N"])
        .output("O", DType::I64, &["N"])
        .comp(c)
        .build()]);
    let a = Tensor::from_i64(DType::I64, &[4], vec![1, 2, 3, 4]);
    let o = only_output(run_real(&p, &tensor_args(&[("A", &a)])));
    let sq = |v: i64| (v + 1) * (v + 1);
    assert_eq!(
        o.to_i64_vec(),
        (vec![
            sq(1) + sq(2),
            sq(1) + sq(2) + sq(3),
            sq(2) + sq(3) + sq(4),
            sq(3) + sq(4)
        ])
    );
}

/// An integer scalar is a size symbol too: it can bound a range and
/// appear in subscripts and values.
#[test]
fn integer_scalars_act_as_sizes() {
    let p = program(vec![DefBuilder::new("shift")
        .input("A", DType::I32, &["N"])
        .scalar("s", DType::I32)
        .output("O", DType::I32, &["s"])
        .comp(comp(
            "O",
            &["i"],
            Reduction::Assign,
            false,
            add(at("A", &["i"]), sym("s")),
            vec![upto("i", "s")],
        ))
        .build()]);
    let a = Tensor::from_i64(DType::I32, &[5], vec![1, 2, 3, 4, 5]);
    let mut args = tensor_args(&[("A", &a)]);
    args.insert("s".into(), Arg::Scalar(Value::Int(2)));
    let o = only_output(run_real(&p, &args));
    assert_eq!(o.shape(), vec![2]);
    assert_eq!(o.to_i64_vec(), (vec![3, 4]));
}

/// `&&` short-circuits, so its right operand's out-of-bounds read in an
/// assignment is never made.
#[test]
fn logical_operators_short_circuit() {
    let p = program(vec![DefBuilder::new("guard")
        .input("A", DType::I32, &["N"])
        .output("O", DType::Bool, &["N"])
        .comp(comp(
            "O",
            &["i"],
            Reduction::Assign,
            false,
            bin(
                BinOp::And,
                bin(BinOp::Lt, add(it("i"), Expr::int(1)), sym("N")),
                bin(
                    BinOp::Gt,
                    read("A", vec![add(it("i"), Expr::int(1))]),
                    at("A", &["i"]),
                ),
            ),
            vec![upto("i", "N")],
        ))
        .build()]);
    let a = Tensor::from_i64(DType::I32, &[4], vec![1, 3, 2, 5]);
    let o = only_output(run_real(&p, &tensor_args(&[("A", &a)])));
    assert_eq!(o.to_i64_vec(), (vec![1, 0, 1, 0]));
}

/// A 3x3 convolution with zero padding 1 (by skipped points), bit for bit
/// against plain loops folding in the same order in `f32`.
#[test]
fn conv2d_with_padding_matches_plain_loops() {
    let shifted = |i: &str, r: &str| sub(add(it(i), it(r)), Expr::int(1));
    let p = program(vec![DefBuilder::new("conv")
        .input("I", DType::F32, &["N", "C", "H", "W"])
        .input("K", DType::F32, &["F", "C", "3", "3"])
        .output("O", DType::F32, &["N", "F", "H", "W"])
        .comp(comp(
            "O",
            &["n", "f", "h", "w"],
            Reduction::Add,
            true,
            mul(
                read(
                    "I",
                    vec![it("n"), it("c"), shifted("h", "r"), shifted("w", "s")],
                ),
                at("K", &["f", "c", "r", "s"]),
            ),
            vec![
                upto("n", "N"),
                upto("f", "F"),
                upto("h", "H"),
                upto("w", "W"),
                upto("c", "C"),
                upto("r", "3"),
                upto("s", "3"),
            ],
        ))
        .build()]);
    let (n, c, h, w, f) = (2, 16, 32, 32, 16);
    let x = Tensor::random(DType::F32, &[n, c, h, w], 1);
    let k = Tensor::random(DType::F32, &[f, c, 3, 3], 2);
    let o = only_output(run_real(&p, &tensor_args(&[("I", &x), ("K", &k)])));
    let (xv, kv) = (x.to_f64_vec(), k.to_f64_vec());
    let mut want = Vec::with_capacity(n * f * h * w);
    for ni in 0..n {
        for fi in 0..f {
            for hi in 0..h {
                for wi in 0..w {
                    let mut acc = 0.0f32;
                    for ci in 0..c {
                        for r in 0..3 {
                            for s in 0..3 {
                                let (y, z) = ((hi + r) as i64 - 1, (wi + s) as i64 - 1);
                                if y < 0 || z < 0 || y >= h as i64 || z >= w as i64 {
                                    continue;
                                }
                                let xe =
                                    xv[((ni * c + ci) * h + y as usize) * w + z as usize] as f32;
                                acc += xe * kv[((fi * c + ci) * 3 + r) * 3 + s] as f32;
                            }
                        }
                    }
                    want.push(f64::from(acc));
                }
            }
        }
    }
    assert_eq!(o.to_f64_vec(), (want));
}
