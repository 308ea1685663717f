//! Every problem with a program or its arguments is a `RunError` with a
//! precise message, never a panic.

mod common;

use std::collections::HashMap;

use common::*;
use interp::{Arg, Mode, Tensor};
use ir::{DType, Expr, Reduction, SizeExpr, Value};

fn copy_def() -> ir::Program {
    program(vec![DefBuilder::new("copy")
        .input("A", DType::F32, &["M", "N"])
        .output("B", DType::F32, &["M", "N"])
        .comp(comp(
            "B",
            &["i", "j"],
            Reduction::Assign,
            false,
            at("A", &["i", "j"]),
            vec![upto("i", "M"), upto("j", "N")],
        ))
        .build()])
}

/// `B(i, j) = A(i + 1, j + 5)` over A's whole shape: the first read out of
/// bounds is reported with its indices and the shape.
#[test]
fn out_of_bounds_read_in_an_assignment_is_an_error() {
    let p = program(vec![DefBuilder::new("shift")
        .input("A", DType::F32, &["M", "N"])
        .output("B", DType::F32, &["M", "N"])
        .comp(comp(
            "B",
            &["i", "j"],
            Reduction::Assign,
            false,
            read(
                "A",
                vec![add(it("i"), Expr::int(1)), add(it("j"), Expr::int(5))],
            ),
            vec![upto("i", "M"), upto("j", "N")],
        ))
        .build()]);
    let a = Tensor::random(DType::F32, &[3, 8], 1);
    let (stmt, msg) = failure(run_real(&p, &tensor_args(&[("A", &a)])));
    assert_eq!(stmt, Some(0));
    assert_eq!(
        msg,
        "read of `A` at (1, 8) is out of bounds for shape (3, 8)"
    );
}

/// In a reduction, an indirect read out of bounds is an error, not a skip.
#[test]
fn out_of_bounds_indirect_read_in_a_reduction_is_an_error() {
    let p = program(vec![DefBuilder::new("bag")
        .input("X", DType::F64, &["V"])
        .input("I", DType::I32, &["N"])
        .output("S", DType::F64, &[])
        .comp(comp(
            "S",
            &[],
            Reduction::Add,
            true,
            read("X", vec![cast(DType::I64, at("I", &["k"]))]),
            vec![upto("k", "N")],
        ))
        .build()]);
    let x = Tensor::from_f64(DType::F64, &[2], vec![1.0, 2.0]);
    let ok = Tensor::from_i64(DType::I32, &[3], vec![1, 1, 0]);
    let s = only_output(run_real(&p, &tensor_args(&[("X", &x), ("I", &ok)])));
    assert_eq!(s.to_f64_vec(), vec![5.0]);
    let bad = Tensor::from_i64(DType::I32, &[3], vec![1, -1, 0]);
    let (_, msg) = failure(run_real(&p, &tensor_args(&[("X", &x), ("I", &bad)])));
    assert_eq!(msg, "read of `X` at (-1) is out of bounds for shape (2)");
}

#[test]
fn writing_outside_the_left_tensor_is_an_error() {
    let p = program(vec![DefBuilder::new("over")
        .input("A", DType::F32, &["N"])
        .output("B", DType::F32, &["3"])
        .comp(comp(
            "B",
            &["i"],
            Reduction::Assign,
            false,
            at("A", &["i"]),
            vec![upto("i", "N")],
        ))
        .build()]);
    let a = Tensor::random(DType::F32, &[4], 1);
    let (stmt, msg) = failure(run_real(&p, &tensor_args(&[("A", &a)])));
    assert_eq!(stmt, Some(0));
    assert_eq!(
        msg,
        "writing `B`: iterator `i` ranges over 0:4, outside dimension 0 of size 3"
    );
}

#[test]
fn an_empty_range_is_an_error() {
    let p = program(vec![DefBuilder::new("empty")
        .input("A", DType::F32, &["N"])
        .output("S", DType::F32, &[])
        .comp(comp(
            "S",
            &[],
            Reduction::Add,
            true,
            at("A", &["k"]),
            vec![range("k", SizeExpr::constant(2), SizeExpr::sym("N"))],
        ))
        .build()]);
    let a = Tensor::random(DType::F32, &[2], 1);
    let (_, msg) = failure(run_real(&p, &tensor_args(&[("A", &a)])));
    assert_eq!(msg, "iterator `k` has the empty range 2:2");
}

#[test]
fn arguments_are_checked_against_the_signature() {
    let p = copy_def();
    let run =
        |args: &HashMap<String, Arg>| interp::run(&p, "copy", args, &HashMap::new(), Mode::Real);
    let e = run(&HashMap::new()).unwrap_err();
    assert_eq!(
        (e.def.as_str(), e.stmt, e.message.as_str()),
        ("copy", None, "missing argument `A`")
    );

    let a64 = Tensor::random(DType::F64, &[2, 2], 1);
    assert_eq!(
        run(&tensor_args(&[("A", &a64)])).unwrap_err().message,
        "tensor `A` is float64, but `copy` declares float32"
    );

    let a1 = Tensor::random(DType::F32, &[4], 1);
    assert_eq!(
        run(&tensor_args(&[("A", &a1)])).unwrap_err().message,
        "tensor `A` has rank 1, but `copy` declares rank 2"
    );

    let a = Tensor::random(DType::F32, &[2, 2], 1);
    let mut args = tensor_args(&[("A", &a)]);
    args.insert("Z".into(), Arg::Scalar(Value::Int(1)));
    assert_eq!(
        run(&args).unwrap_err().message,
        "`Z` is not a parameter of `copy`"
    );

    let mut args = HashMap::new();
    args.insert("A".to_string(), Arg::Scalar(Value::Float(1.0)));
    assert_eq!(
        run(&args).unwrap_err().message,
        "`A` is a tensor parameter, but a scalar was passed"
    );

    let e = interp::run(&p, "nope", &HashMap::new(), &HashMap::new(), Mode::Real).unwrap_err();
    assert_eq!(e.message, "no def named `nope`");
}

#[test]
fn bind_sizes_reports_disagreeing_dimensions() {
    let p = program(vec![DefBuilder::new("mm")
        .input("A", DType::F32, &["M", "K"])
        .input("B", DType::F32, &["K", "N"])
        .input("c", DType::F32, &["2"])
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
    let def = &p.defs[0];
    let a = Tensor::random(DType::F32, &[3, 5], 1);
    let b = Tensor::random(DType::F32, &[4, 2], 2);
    let c = Tensor::random(DType::F32, &[2], 3);
    let none = HashMap::new();
    let e = interp::bind_sizes(def, &tensor_args(&[("A", &a), ("B", &b)]), &none).unwrap_err();
    assert_eq!(
        e.message,
        "tensor `B` dimension 0 (`K`) is 4, but `K` = 5 from `A`"
    );

    let given: HashMap<String, i64> = [("K".to_string(), 4)].into();
    let e = interp::bind_sizes(def, &tensor_args(&[("A", &a)]), &given).unwrap_err();
    assert_eq!(
        e.message,
        "tensor `A` dimension 1 (`K`) is 5, but `K` = 4 as given"
    );

    let c3 = Tensor::random(DType::F32, &[3], 3);
    let e = interp::bind_sizes(def, &tensor_args(&[("c", &c3)]), &none).unwrap_err();
    assert_eq!(
        e.message,
        "tensor `c` dimension 0 is 3, but the signature says 2"
    );

    let given: HashMap<String, i64> = [("Q".to_string(), 4)].into();
    let e = interp::bind_sizes(def, &HashMap::new(), &given).unwrap_err();
    assert_eq!(
        e.message,
        "`Q` is given a size, but `mm` has no size symbol or integer scalar of that name"
    );

    // Missing arguments are fine: what can be bound is.
    let sizes = interp::bind_sizes(def, &tensor_args(&[("A", &a), ("c", &c)]), &none).unwrap();
    assert_eq!(sizes, [("M".to_string(), 3), ("K".to_string(), 5)].into());
    assert_eq!(interp::param_shape(def, "A", &sizes).unwrap(), vec![3, 5]);
    let e = interp::param_shape(def, "B", &sizes).unwrap_err();
    assert_eq!(e.message, "the shape of `B` needs `N`, which has no value");

    // run reports a size that nothing binds.
    let e = interp::run(
        &p,
        "mm",
        &tensor_args(&[("A", &a), ("c", &c)]),
        &none,
        Mode::Real,
    )
    .unwrap_err();
    assert_eq!(e.message, "missing argument `B`");
}

#[test]
fn huge_shapes_are_refused_before_allocation() {
    let p = program(vec![DefBuilder::new("big")
        .input("A", DType::F32, &["N"])
        .output("B", DType::F32, &["N", "N", "N"])
        .comp(comp(
            "B",
            &["i", "j", "k"],
            Reduction::Assign,
            false,
            at("A", &["i"]),
            vec![upto("i", "N"), upto("j", "N"), upto("k", "N")],
        ))
        .build()]);
    let a = Tensor::random(DType::F32, &[2000], 1);
    let (stmt, msg) = failure(run_real(&p, &tensor_args(&[("A", &a)])));
    assert_eq!(stmt, Some(0));
    assert_eq!(
        msg,
        "tensor `B` is too large: shape (2000, 2000, 2000) has 8000000000 elements, more than the limit of 268435456 (TESSERA_MAX_ELEMENTS sets it)"
    );
    let sizes = [("N".to_string(), 1i64 << 40)].into();
    let e = interp::param_shape(&p.defs[0], "B", &sizes).unwrap_err();
    assert!(e.message.contains("too large"), "{}", e.message);
    let sizes = [("N".to_string(), -3i64)].into();
    let e = interp::param_shape(&p.defs[0], "A", &sizes).unwrap_err();
    assert_eq!(e.message, "tensor `A` dimension 0 (`N`) is negative: -3");
}

/// The interpreter does not trust its input to be verified: broken IR is
/// an error too.
#[test]
fn unverified_ir_fails_cleanly() {
    let mut def = DefBuilder::new("bad")
        .input("A", DType::F32, &["N"])
        .output("B", DType::F32, &["N"])
        .comp(comp(
            "B",
            &["i"],
            Reduction::Assign,
            false,
            add(at("A", &["i"]), lit_i(1, DType::I32)),
            vec![upto("i", "N")],
        ))
        .build();
    let a = Tensor::random(DType::F32, &[2], 1);
    let args = tensor_args(&[("A", &a)]);
    let run = |d: &ir::Def| {
        let p = ir::Program {
            defs: vec![d.clone()],
        };
        interp::run(&p, "bad", &args, &HashMap::new(), Mode::Real)
            .unwrap_err()
            .message
    };
    assert_eq!(
        run(&def),
        "ill-typed IR: operands of `+` have types float32 and int32"
    );
    let with = |def: &mut ir::Def, edit: &dyn Fn(&mut ir::Comprehension)| {
        if let ir::Stmt::Comp(c) = &mut def.stmts[0] {
            edit(c);
        }
    };
    with(&mut def, &|c| c.body = at("T", &["i"]));
    assert_eq!(run(&def), "`T` is read before it is defined");
    with(&mut def, &|c| c.body = at("A", &["i", "i"]));
    assert_eq!(
        run(&def),
        "`A` has 1 dimensions but is read with 2 subscripts"
    );
    with(&mut def, &|c| c.body = at("A", &["q"]));
    assert_eq!(run(&def), "subscript of `A`: iterator `q` has no range");
    with(&mut def, &|c| {
        c.body = at("A", &["i"]);
        c.ranges.push(upto("i", "N"));
    });
    assert_eq!(run(&def), "iterator `i` has two ranges");
    with(&mut def, &|c| {
        c.ranges.pop();
        c.indices.push("i".into());
    });
    assert_eq!(run(&def), "iterator `i` appears twice on the left");
    with(&mut def, &|c| {
        c.indices[1] = "j".into();
        c.ranges.push(upto("j", "N"));
    });
    assert_eq!(
        run(&def),
        "`B` has 1 dimensions but is written with 2 indices"
    );
}
