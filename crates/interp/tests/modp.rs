//! Mod-p mode: polynomial bodies over residues, compared with `u128`
//! reference computations; everything that is not a polynomial is rejected
//! with its location.

mod common;

use std::collections::HashMap;

use common::*;
use interp::{Mode, Tensor, P};
use ir::{BinOp, Builtin, DType, Expr, Reduction, SizeExpr, Value};

fn run_modp(
    p: &ir::Program,
    ts: &[(&str, &Tensor)],
) -> Result<Vec<(String, Tensor)>, interp::RunError> {
    interp::run(
        p,
        &p.defs[p.defs.len() - 1].name,
        &tensor_args(ts),
        &HashMap::new(),
        Mode::ModP,
    )
}

fn residues(t: &Tensor) -> Vec<u128> {
    assert_eq!(t.dtype(), DType::I64, "mod-p tensors hold residues");
    t.to_i64_vec().iter().map(|&x| x as u128).collect()
}

/// A one-statement def `O(i) op body` over `A(N)`, `B(N)` (float32).
fn unary_def(
    op: Reduction,
    init: bool,
    body: Expr,
    ranges: Vec<ir::IterRange>,
    out: &[&str],
) -> ir::Program {
    program(vec![DefBuilder::new("f")
        .input("A", DType::F32, &["N"])
        .input("B", DType::F32, &["N"])
        .output("O", DType::F32, out)
        .comp(comp(
            "O",
            if out.is_empty() { &[] } else { &["i"] },
            op,
            init,
            body,
            ranges,
        ))
        .build()])
}

#[test]
fn matmul_over_residues_matches_u128() {
    let p = program(vec![DefBuilder::new("matmul")
        .input("A", DType::F32, &["M", "K"])
        .input("B", DType::F32, &["K", "N"])
        .output("C", DType::F32, &["M", "N"])
        .comp(comp(
            "C",
            &["i", "j"],
            Reduction::Add,
            true,
            mul(at("A", &["i", "k"]), at("B", &["k", "j"])),
            vec![upto("i", "M"), upto("j", "N"), upto("k", "K")],
        ))
        .build()]);
    let (m, k, n) = (4, 9, 3);
    let a = interp::random_residues(&[m, k], 11);
    let b = interp::random_residues(&[k, n], 12);
    let c = only_output(run_modp(&p, &[("A", &a), ("B", &b)]));
    assert_eq!((c.dtype(), c.shape()), (DType::I64, &[m, n][..]));
    let (av, bv, pp) = (residues(&a), residues(&b), P as u128);
    let want: Vec<u128> = (0..m)
        .flat_map(|i| (0..n).map(move |j| (i, j)))
        .map(|(i, j)| {
            (0..k)
                .map(|kk| av[i * k + kk] * bv[kk * n + j] % pp)
                .sum::<u128>()
                % pp
        })
        .collect();
    assert_eq!(residues(&c), want);
}

#[test]
fn literals_negation_and_products_are_taken_mod_p() {
    // O(i) = -1.0 * A(i) * 2.0 + B(i) - 3
    let body = sub(
        add(
            mul(
                mul(neg(lit_f(1.0, DType::F32)), at("A", &["i"])),
                lit_f(2.0, DType::F32),
            ),
            at("B", &["i"]),
        ),
        lit_f(3.0, DType::F32),
    );
    let p = unary_def(Reduction::Assign, false, body, vec![upto("i", "N")], &["N"]);
    let a = interp::random_residues(&[6], 1);
    let b = interp::random_residues(&[6], 2);
    let o = only_output(run_modp(&p, &[("A", &a), ("B", &b)]));
    let pp = P as u128;
    let want: Vec<u128> = residues(&a)
        .iter()
        .zip(residues(&b))
        .map(|(&x, y)| ((pp - 1) * x % pp * 2 % pp + y + pp - 3) % pp)
        .collect();
    assert_eq!(residues(&o), want);
}

#[test]
fn product_reduction_and_skipped_points_follow_real_semantics() {
    // O() *=! A(k + 1) over k in 0:N: the last point reads out of bounds
    // and is skipped, as in real mode.
    let body = read("A", vec![add(it("k"), Expr::int(1))]);
    let p = unary_def(Reduction::Mul, true, body, vec![upto("k", "N")], &[]);
    let a = interp::random_residues(&[5], 3);
    let b = interp::random_residues(&[5], 4);
    let o = only_output(run_modp(&p, &[("A", &a), ("B", &b)]));
    let want = residues(&a)[1..]
        .iter()
        .fold(1u128, |acc, &x| acc * x % P as u128);
    assert_eq!(residues(&o), vec![want]);
}

/// Conditions and subscripts use ordinary integers; a let used both as a
/// subscript and as a value is computed both ways.
#[test]
fn conditions_subscripts_and_shared_lets() {
    let mut c = comp(
        "O",
        &["i"],
        Reduction::Assign,
        false,
        select(
            bin(BinOp::Lt, local("t"), sym("N")),
            mul(read("A", vec![local("t")]), cast(DType::F32, local("t"))),
            neg(cast(DType::F32, it("i"))),
        ),
        vec![range("i", SizeExpr::zero(), SizeExpr::sym("N"))],
    );
    c.lets = vec![("t".to_string(), add(it("i"), Expr::int(1)))];
    let p = program(vec![DefBuilder::new("f")
        .input("A", DType::F32, &["N"])
        .output("O", DType::F32, &["N"])
        .comp(c)
        .build()]);
    let a = interp::random_residues(&[4], 5);
    let o = only_output(run_modp(&p, &[("A", &a)]));
    let av = residues(&a);
    let pp = P as u128;
    let want: Vec<u128> = (0..4)
        .map(|i| {
            if i + 1 < 4 {
                av[i + 1] * (i as u128 + 1) % pp
            } else {
                pp - i as u128
            }
        })
        .collect();
    assert_eq!(residues(&o), want);
}

#[test]
fn non_polynomial_constructs_are_rejected_with_their_location() {
    let cases: Vec<(Reduction, Expr, &str)> = vec![
        (
            Reduction::Assign,
            call(Builtin::Exp, vec![at("A", &["i"])]),
            "`exp` is not a polynomial operation (def f, statement 1)",
        ),
        (
            Reduction::Assign,
            bin(BinOp::Div, at("A", &["i"]), at("B", &["i"])),
            "`/` is not a polynomial operation (def f, statement 1)",
        ),
        (
            Reduction::Assign,
            mul(at("A", &["i"]), lit_f(0.5, DType::F32)),
            "not a polynomial: literal 0.5 (def f, statement 1)",
        ),
        (
            Reduction::Max,
            at("A", &["i"]),
            "`max=` is not a polynomial reduction (def f, statement 1)",
        ),
    ];
    for (op, body, want) in cases {
        let p = unary_def(
            op,
            op != Reduction::Assign,
            body,
            vec![upto("i", "N")],
            &["N"],
        );
        let a = interp::random_residues(&[3], 1);
        let e = run_modp(&p, &[("A", &a), ("B", &a)]).unwrap_err();
        assert_eq!(
            (e.def.as_str(), e.stmt, e.message.as_str()),
            ("f", Some(0), want)
        );
    }
    // A condition on tensor values cannot be evaluated on residues.
    let body = select(
        bin(BinOp::Lt, at("A", &["i"]), at("B", &["i"])),
        at("A", &["i"]),
        at("B", &["i"]),
    );
    let p = unary_def(Reduction::Assign, false, body, vec![upto("i", "N")], &["N"]);
    let a = interp::random_residues(&[3], 1);
    let e = run_modp(&p, &[("A", &a), ("B", &a)]).unwrap_err();
    assert!(
        e.message.starts_with(
            "in mod-p mode tensor values can only be added and multiplied, but `A` is read"
        ),
        "{}",
        e.message
    );
}

#[test]
fn arguments_must_be_residues() {
    let p = unary_def(
        Reduction::Assign,
        false,
        at("A", &["i"]),
        vec![upto("i", "N")],
        &["N"],
    );
    let bad = Tensor::from_i64(DType::I64, &[2], vec![1, P as i64]);
    let e = run_modp(&p, &[("A", &bad), ("B", &bad)]).unwrap_err();
    assert_eq!(
        e.message,
        format!("tensor `A` holds {P}, which is no residue in [0, {P})")
    );
    let floats = Tensor::from_f64(DType::F32, &[2], vec![1.0, 2.0]);
    let e = run_modp(&p, &[("A", &floats), ("B", &floats)]).unwrap_err();
    assert_eq!(
        e.message,
        "tensor `A` holds floats, but mod-p mode takes residues"
    );
    // Integral float scalars are residues; fractional ones are no polynomial.
    let q = program(vec![DefBuilder::new("s")
        .input("A", DType::F32, &["N"])
        .scalar("a", DType::F32)
        .output("O", DType::F32, &["N"])
        .comp(comp(
            "O",
            &["i"],
            Reduction::Assign,
            false,
            mul(at("A", &["i"]), sym("a")),
            vec![upto("i", "N")],
        ))
        .build()]);
    let a = interp::random_residues(&[3], 9);
    let mut args = tensor_args(&[("A", &a)]);
    args.insert("a".into(), interp::Arg::Scalar(Value::Float(-1.0)));
    let o = only_output(interp::run(&q, "s", &args, &HashMap::new(), Mode::ModP));
    let want: Vec<u128> = residues(&a)
        .iter()
        .map(|&x| (P as u128 - x) % P as u128)
        .collect();
    assert_eq!(residues(&o), want);
    args.insert("a".into(), interp::Arg::Scalar(Value::Float(0.25)));
    let e = interp::run(&q, "s", &args, &HashMap::new(), Mode::ModP).unwrap_err();
    assert_eq!(
        e.message,
        "not a polynomial: scalar `a` = 0.25 (def s, statement 1)"
    );
}
