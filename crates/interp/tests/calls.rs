//! Call statements: callees run with sizes bound from their arguments,
//! results bind to the caller's tensors, errors keep their location.

mod common;

use std::collections::HashMap;

use common::*;
use interp::{Arg, Mode, Tensor};
use ir::{CallArg, CallStmt, DType, Expr, Reduction, Stmt, Value};

/// `def lin(float(M,K) A, float(K) x) -> (y) { y(i) +=! A(i,k) * x(k) }`
fn lin() -> ir::Def {
    DefBuilder::new("lin")
        .input("A", DType::F64, &["M", "K"])
        .input("x", DType::F64, &["K"])
        .output("y", DType::F64, &["M"])
        .comp(comp(
            "y",
            &["i"],
            Reduction::Add,
            true,
            mul(at("A", &["i", "k"]), at("x", &["k"])),
            vec![upto("i", "M"), upto("k", "K")],
        ))
        .build()
}

/// `def scale(float(N) X, float a) -> (Y) { Y(i) = X(i) * a }`
fn scale() -> ir::Def {
    DefBuilder::new("scale")
        .input("X", DType::F64, &["N"])
        .scalar("a", DType::F64)
        .output("Y", DType::F64, &["N"])
        .comp(comp(
            "Y",
            &["i"],
            Reduction::Assign,
            false,
            mul(at("X", &["i"]), sym("a")),
            vec![upto("i", "N")],
        ))
        .build()
}

fn call_stmt(callee: &str, args: Vec<CallArg>, results: &[&str]) -> Stmt {
    Stmt::Call(CallStmt {
        callee: callee.to_string(),
        args,
        results: results.iter().map(|r| r.to_string()).collect(),
    })
}

/// `def two(float(M,K) W, float(K) x, float b) -> (z)`:
/// `h = lin(W, x); z = scale(h, b * 2.0)`.
fn two_layer() -> ir::Program {
    let main = DefBuilder::new("two")
        .input("W", DType::F64, &["M", "K"])
        .input("x", DType::F64, &["K"])
        .scalar("b", DType::F64)
        .temp("h", DType::F64, &["M"])
        .output("z", DType::F64, &["M"])
        .stmt(call_stmt(
            "lin",
            vec![CallArg::Tensor("W".into()), CallArg::Tensor("x".into())],
            &["h"],
        ))
        .stmt(call_stmt(
            "scale",
            vec![
                CallArg::Tensor("h".into()),
                CallArg::Scalar(mul(sym("b"), lit_f(2.0, DType::F64))),
            ],
            &["z"],
        ))
        .build();
    program(vec![lin(), scale(), main])
}

#[test]
fn calls_compose_like_the_inlined_computation() {
    let p = two_layer();
    let w = Tensor::random(DType::F64, &[3, 4], 1);
    let x = Tensor::random(DType::F64, &[4], 2);
    let mut args = tensor_args(&[("W", &w), ("x", &x)]);
    args.insert("b".into(), Arg::Scalar(Value::Float(1.5)));
    let z = only_output(interp::run(&p, "two", &args, &HashMap::new(), Mode::Real));
    let (wv, xv) = (w.to_f64_vec(), x.to_f64_vec());
    let want: Vec<f64> = (0..3)
        .map(|i| (0..4).fold(0.0, |acc, k| acc + wv[i * 4 + k] * xv[k]) * 3.0)
        .collect();
    assert_eq!(z.to_f64_vec(), (want));
}

#[test]
fn calls_run_over_residues_in_mod_p_mode() {
    let p = two_layer();
    let w = interp::random_residues(&[2, 3], 1);
    let x = interp::random_residues(&[3], 2);
    let mut args = tensor_args(&[("W", &w), ("x", &x)]);
    args.insert("b".into(), Arg::Scalar(Value::Int(5)));
    let z = only_output(interp::run(&p, "two", &args, &HashMap::new(), Mode::ModP));
    let (wv, xv) = (w.to_i64_vec(), x.to_i64_vec());
    let pp = interp::P as i128;
    let want: Vec<i64> = (0..2)
        .map(|i| {
            let dot = (0..3).fold(0i128, |acc, k| {
                (acc + wv[i * 3 + k] as i128 * xv[k] as i128) % pp
            });
            (dot * 10 % pp) as i64
        })
        .collect();
    assert_eq!(z.to_i64_vec(), want);
}

/// A def with two results, called with both bound.
#[test]
fn several_results_bind_in_order() {
    let split = DefBuilder::new("split")
        .input("X", DType::I32, &["N"])
        .output("Lo", DType::I32, &["N"])
        .output("Hi", DType::I32, &["N"])
        .comp(comp(
            "Lo",
            &["i"],
            Reduction::Assign,
            false,
            bin(ir::BinOp::Mod, at("X", &["i"]), lit_i(10, DType::I32)),
            vec![upto("i", "N")],
        ))
        .comp(comp(
            "Hi",
            &["i"],
            Reduction::Assign,
            false,
            bin(ir::BinOp::Div, at("X", &["i"]), lit_i(10, DType::I32)),
            vec![upto("i", "N")],
        ))
        .build();
    let main = DefBuilder::new("main")
        .input("X", DType::I32, &["N"])
        .output("A", DType::I32, &["N"])
        .output("B", DType::I32, &["N"])
        .stmt(call_stmt(
            "split",
            vec![CallArg::Tensor("X".into())],
            &["B", "A"],
        ))
        .build();
    let p = program(vec![split, main]);
    let x = Tensor::from_i64(DType::I32, &[3], vec![42, -7, 105]);
    let outs = interp::run(
        &p,
        "main",
        &tensor_args(&[("X", &x)]),
        &HashMap::new(),
        Mode::Real,
    )
    .unwrap();
    assert_eq!(
        outs[0],
        (
            "A".to_string(),
            Tensor::from_i64(DType::I32, &[3], vec![4, -1, 10])
        )
    );
    assert_eq!(
        outs[1],
        (
            "B".to_string(),
            Tensor::from_i64(DType::I32, &[3], vec![2, 3, 5])
        )
    );
}

/// An error inside the callee names the callee's def and statement; an
/// argument problem is reported at the call.
#[test]
fn errors_in_callees_keep_their_location() {
    let shifted = DefBuilder::new("shifted")
        .input("X", DType::F64, &["N"])
        .output("Y", DType::F64, &["N"])
        .comp(comp(
            "Y",
            &["i"],
            Reduction::Assign,
            false,
            read("X", vec![add(it("i"), Expr::int(1))]),
            vec![upto("i", "N")],
        ))
        .build();
    let main = DefBuilder::new("main")
        .input("X", DType::F64, &["N"])
        .output("Y", DType::F64, &["N"])
        .stmt(call_stmt(
            "shifted",
            vec![CallArg::Tensor("X".into())],
            &["Y"],
        ))
        .build();
    let p = program(vec![shifted, main]);
    let x = Tensor::random(DType::F64, &[2], 1);
    let e = interp::run(
        &p,
        "main",
        &tensor_args(&[("X", &x)]),
        &HashMap::new(),
        Mode::Real,
    )
    .unwrap_err();
    assert_eq!((e.def.as_str(), e.stmt), ("shifted", Some(0)));
    assert_eq!(
        e.message,
        "read of `X` at (2) is out of bounds for shape (2)"
    );

    // The callee declares its result with a constant size the caller's
    // tensor does not have.
    let fixed = DefBuilder::new("fixed")
        .input("X", DType::F64, &["3"])
        .output("Y", DType::F64, &["3"])
        .comp(comp(
            "Y",
            &["i"],
            Reduction::Assign,
            false,
            at("X", &["i"]),
            vec![upto("i", "3")],
        ))
        .build();
    let main = DefBuilder::new("main")
        .input("X", DType::F64, &["N"])
        .output("Y", DType::F64, &["3"])
        .stmt(call_stmt(
            "fixed",
            vec![CallArg::Tensor("X".into())],
            &["Y"],
        ))
        .build();
    let p = program(vec![fixed, main]);
    let e = interp::run(
        &p,
        "main",
        &tensor_args(&[("X", &x)]),
        &HashMap::new(),
        Mode::Real,
    )
    .unwrap_err();
    assert_eq!((e.def.as_str(), e.stmt), ("main", Some(0)));
    assert_eq!(
        e.message,
        "in the call of `fixed`: tensor `X` dimension 0 is 2, but the signature says 3"
    );
}

/// Unverified recursion is cut off instead of overflowing the stack.
#[test]
fn recursion_is_bounded() {
    let f = DefBuilder::new("f")
        .input("X", DType::F64, &["N"])
        .output("Y", DType::F64, &["N"])
        .stmt(call_stmt("f", vec![CallArg::Tensor("X".into())], &["Y"]))
        .build();
    let p = ir::Program { defs: vec![f] };
    let x = Tensor::random(DType::F64, &[2], 1);
    let e = interp::run(
        &p,
        "f",
        &tensor_args(&[("X", &x)]),
        &HashMap::new(),
        Mode::Real,
    )
    .unwrap_err();
    assert!(
        e.message.contains("nested more than 64 deep"),
        "{}",
        e.message
    );
}
