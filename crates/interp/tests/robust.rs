//! No input panics the interpreter: random, mostly ill-typed and
//! out-of-bounds programs end in a value or a `RunError`, in both modes.

mod common;

use std::collections::HashMap;

use common::*;
use interp::{Arg, Mode, Tensor};
use ir::{BinOp, Builtin, DType, Expr, Reduction, SizeExpr, UnOp, Value};
use proptest::prelude::*;

fn dtype() -> impl Strategy<Value = DType> {
    prop::sample::select(DType::ALL.to_vec())
}

fn leaf() -> impl Strategy<Value = Expr> {
    prop_oneof![
        (-3i64..9, dtype()).prop_map(|(v, t)| Expr::Lit(Value::Int(v), t)),
        (
            prop::sample::select(vec![0.0, 0.5, -1.0, 1e300, f64::NAN]),
            dtype()
        )
            .prop_map(|(x, t)| Expr::Lit(Value::Float(x), t)),
        any::<bool>().prop_map(|b| Expr::Lit(Value::Bool(b), DType::Bool)),
        prop::sample::select(vec!["i", "k", "nope"]).prop_map(it),
        prop::sample::select(vec!["N", "s", "a", "nope"]).prop_map(sym),
        prop::sample::select(vec!["t", "nope"]).prop_map(local),
    ]
}

fn expr() -> impl Strategy<Value = Expr> {
    let ops = BinOp::ALL.to_vec();
    leaf().prop_recursive(4, 24, 3, move |inner| {
        prop_oneof![
            (
                prop::sample::select(vec!["A", "I", "B", "nope"]),
                prop::collection::vec(inner.clone(), 0..3)
            )
                .prop_map(|(t, subs)| read(t, subs)),
            (
                prop::sample::select(vec![UnOp::Neg, UnOp::Not]),
                inner.clone()
            )
                .prop_map(|(op, a)| Expr::Unary(op, Box::new(a))),
            (
                prop::sample::select(ops.clone()),
                inner.clone(),
                inner.clone()
            )
                .prop_map(|(op, a, b)| bin(op, a, b)),
            (inner.clone(), inner.clone(), inner.clone()).prop_map(|(c, a, b)| select(c, a, b)),
            (
                prop::sample::select(Builtin::ALL.to_vec()),
                prop::collection::vec(inner.clone(), 0..4)
            )
                .prop_map(|(f, args)| call(f, args)),
            (dtype(), inner).prop_map(|(t, a)| cast(t, a)),
        ]
    })
}

/// A mostly well-typed expression of type `t`, so that evaluation (not just
/// type checking) is exercised: division by zero, casts of NaN and huge
/// values, indirect and out-of-bounds reads, selects.
fn typed(t: DType, depth: u32) -> BoxedStrategy<Expr> {
    let float_lits = prop::sample::select(vec![
        0.0,
        0.5,
        -1.0,
        3.0,
        1e300,
        -1e300,
        f64::NAN,
        f64::INFINITY,
    ]);
    let leaf = match t {
        DType::Bool => any::<bool>()
            .prop_map(|b| Expr::Lit(Value::Bool(b), DType::Bool))
            .boxed(),
        _ if t.is_float() => prop_oneof![
            float_lits.prop_map(move |x| Expr::Lit(Value::Float(x), t)),
            subscript(0).prop_map(move |s| cast(t, read("A", vec![s]))),
            Just(cast(t, sym("a"))),
        ]
        .boxed(),
        _ => prop_oneof![
            (-3i64..300).prop_map(move |v| Expr::Lit(Value::Int(v), t)),
            prop::sample::select(vec!["i", "k"]).prop_map(move |n| cast(t, it(n))),
            Just(cast(t, sym("s"))),
            subscript(0).prop_map(move |s| cast(t, read("I", vec![s]))),
        ]
        .boxed(),
    };
    if depth == 0 {
        return leaf;
    }
    let sub = move || typed(t, depth - 1);
    let other =
        prop::sample::select(DType::ALL.to_vec()).prop_flat_map(move |u| typed(u, depth - 1));
    let cond = typed(DType::Bool, depth - 1);
    let select_node = (cond, sub(), sub())
        .prop_map(|(c, a, b)| select(c, a, b))
        .boxed();
    let cast_node = other.prop_map(move |e| cast(t, e)).boxed();
    let node = if t == DType::Bool {
        let cmp = prop::sample::select(vec![
            BinOp::Lt,
            BinOp::Le,
            BinOp::Gt,
            BinOp::Ge,
            BinOp::Eq,
            BinOp::Ne,
        ]);
        let operands = prop::sample::select(vec![DType::F32, DType::I8, DType::U64, DType::I64])
            .prop_flat_map(move |u| (typed(u, depth - 1), typed(u, depth - 1)));
        prop_oneof![
            (cmp, operands).prop_map(|(op, (a, b))| bin(op, a, b)),
            (
                prop::sample::select(vec![BinOp::And, BinOp::Or]),
                sub(),
                sub()
            )
                .prop_map(|(op, a, b)| bin(op, a, b)),
            sub().prop_map(|a| Expr::Unary(UnOp::Not, Box::new(a))),
        ]
        .boxed()
    } else {
        let arith = prop::sample::select(vec![
            BinOp::Add,
            BinOp::Sub,
            BinOp::Mul,
            BinOp::Div,
            BinOp::Mod,
        ]);
        let builtins = if t.is_float() {
            Builtin::ALL.to_vec()
        } else {
            vec![
                Builtin::Abs,
                Builtin::Max,
                Builtin::Min,
                Builtin::Fmax,
                Builtin::Fmin,
            ]
        };
        let call_node = prop::sample::select(builtins).prop_flat_map(move |f| {
            prop::collection::vec(typed(t, depth - 1), f.arity())
                .prop_map(move |args| call(f, args))
        });
        prop_oneof![
            (arith, sub(), sub()).prop_map(|(op, a, b)| bin(op, a, b)),
            sub().prop_map(neg),
            call_node,
        ]
        .boxed()
    };
    prop_oneof![2 => leaf, 3 => node, 1 => select_node, 1 => cast_node].boxed()
}

/// An `int64` subscript: affine in the iterators, or indirect through `I`.
fn subscript(depth: u32) -> BoxedStrategy<Expr> {
    let affine = (prop::sample::select(vec!["i", "k"]), -2i64..3)
        .prop_map(|(n, c)| add(it(n), Expr::int(c)));
    if depth > 0 {
        return affine.boxed();
    }
    prop_oneof![
        3 => affine,
        1 => subscript(1).prop_map(|s| cast(DType::I64, read("I", vec![s]))),
        1 => (subscript(1), 1i64..3).prop_map(|(s, d)| bin(BinOp::Div, s, Expr::int(d))),
    ]
    .boxed()
}

fn reduction() -> impl Strategy<Value = Reduction> {
    prop::sample::select(vec![
        Reduction::Assign,
        Reduction::Add,
        Reduction::Mul,
        Reduction::Min,
        Reduction::Max,
    ])
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn random_well_typed_programs_never_panic(
        (out, body) in prop::sample::select(DType::ALL.to_vec()).prop_flat_map(|t| (Just(t), typed(t, 3))),
        (op, init) in (reduction(), any::<bool>()),
        use_k in any::<bool>(),
        s in -2i64..6,
        seed in any::<u64>(),
    ) {
        let (op, init) = if use_k { (if op == Reduction::Assign { Reduction::Add } else { op }, init) } else { (Reduction::Assign, false) };
        let mut ranges = vec![upto("i", "N")];
        if use_k {
            ranges.push(range("k", SizeExpr::constant(-1), SizeExpr::constant(3)));
        }
        let body = if use_k && !body.uses_iter("k") { add(body.clone(), cast(out, it("k"))) } else { body };
        let body = if !use_k && body.uses_iter("k") { Expr::Lit(Value::Int(0), DType::I64) } else { body };
        let body = cast(out, body);
        let def = DefBuilder::new("f")
            .input("A", DType::F32, &["N"])
            .input("I", DType::I32, &["N"])
            .scalar("s", DType::I32)
            .scalar("a", DType::F64)
            .output("O", out, &["N"])
            .comp(comp("O", &["i"], op, init, body, ranges))
            .build();
        let p = ir::Program { defs: vec![def] };
        let idx = Tensor::random(DType::I32, &[5], seed).to_i64_vec();
        let idx = Tensor::from_i64(DType::I32, &[5], idx.iter().map(|x| x - 1).collect());
        let mut args = tensor_args(&[("A", &Tensor::random(DType::F32, &[5], seed)), ("I", &idx)]);
        args.insert("s".into(), Arg::Scalar(Value::Int(s)));
        args.insert("a".into(), Arg::Scalar(Value::Float(-2.5)));
        if let Ok(outs) = interp::run(&p, "f", &args, &HashMap::new(), Mode::Real) {
            prop_assert_eq!(outs[0].1.dtype(), out);
        }
        let mut modp_args = tensor_args(&[("A", &interp::random_residues(&[5], seed)), ("I", &interp::random_residues(&[5], seed ^ 1))]);
        modp_args.insert("s".into(), Arg::Scalar(Value::Int(s)));
        modp_args.insert("a".into(), Arg::Scalar(Value::Int(3)));
        if let Ok(outs) = interp::run(&p, "f", &modp_args, &HashMap::new(), Mode::ModP) {
            prop_assert_eq!(outs[0].1.dtype(), DType::I64, "mod-p results are residues");
            let v = outs[0].1.to_i64_vec();
            prop_assert!(v.iter().all(|&x| (0..interp::P as i64).contains(&x)));
        }
    }

    #[test]
    fn random_programs_never_panic(
        body in expr(),
        let_expr in prop::option::of(expr()),
        (op, init, out) in (reduction(), any::<bool>(), dtype()),
        (lo, hi) in (-3i64..3, -1i64..6),
        s in -2i64..6,
        seed in any::<u64>(),
    ) {
        let mut c = comp(
            "O",
            &["i"],
            op,
            init,
            body,
            vec![upto("i", "N"), range("k", SizeExpr::constant(lo), SizeExpr::constant(hi))],
        );
        c.lets = let_expr.into_iter().map(|e| ("t".to_string(), e)).collect();
        let def = DefBuilder::new("f")
            .input("A", DType::F32, &["N"])
            .input("I", DType::I32, &["N"])
            .scalar("s", DType::I32)
            .scalar("a", DType::F64)
            .output("O", out, &["N"])
            .comp(c)
            .build();
        let p = ir::Program { defs: vec![def] };
        let idx = Tensor::random(DType::I32, &[4], seed).to_i64_vec();
        let idx = Tensor::from_i64(DType::I32, &[4], idx.iter().map(|x| x - 2).collect());
        let mut args = tensor_args(&[("A", &Tensor::random(DType::F32, &[4], seed)), ("I", &idx)]);
        args.insert("s".into(), Arg::Scalar(Value::Int(s)));
        args.insert("a".into(), Arg::Scalar(Value::Float(2.0)));
        let real = interp::run(&p, "f", &args, &HashMap::new(), Mode::Real);
        if let Ok(outs) = &real {
            prop_assert_eq!(outs[0].1.dtype(), out);
        }
        let mut modp_args = tensor_args(&[("A", &interp::random_residues(&[4], seed)), ("I", &interp::random_residues(&[4], seed ^ 1))]);
        modp_args.insert("s".into(), Arg::Scalar(Value::Int(s)));
        modp_args.insert("a".into(), Arg::Scalar(Value::Int(3)));
        let modp = interp::run(&p, "f", &modp_args, &HashMap::new(), Mode::ModP);
        if let Ok(outs) = &modp {
            prop_assert_eq!(outs[0].1.dtype(), DType::I64, "mod-p results are residues");
            let v = outs[0].1.to_i64_vec();
            prop_assert!(v.iter().all(|&x| (0..interp::P as i64).contains(&x)));
        }
    }
}
