//! Loop and branch regions: the text `ir::print` writes for them parses and
//! checks back to the same IR (and prints to the same text), at any nesting
//! depth; the checker's errors on them are located; and broken region text
//! never panics the parser or the checker.

use ir::{
    CallArg, Carried, DType, Def, Expr, IfStmt, IterRange, LoopStmt, Param, Program, Reduction,
    SizeExpr, Stmt, TensorDecl, TensorRole, Value,
};

/// Checks `src`, prints the IR, checks the printed text: the same IR, and
/// printing that gives the same text. Returns the printed text.
fn round_trip(src: &str) -> String {
    let first = tc::check_source(src)
        .unwrap_or_else(|d| panic!("{}", tc::render_diagnostics(&d, "source.tc", src)));
    let printed = ir::print_program(&first.program);
    let second = tc::check_source(&printed).unwrap_or_else(|d| {
        panic!(
            "the printed program does not check:\n{printed}\n{}",
            tc::render_diagnostics(&d, "printed.tc", &printed)
        )
    });
    assert_eq!(
        first.program, second.program,
        "the round trip changed the IR; printed:\n{printed}"
    );
    assert_eq!(
        printed,
        ir::print_program(&second.program),
        "printing is not stable"
    );
    printed
}

/// The rendered errors of a program the checker must reject.
fn rejected(src: &str) -> String {
    match tc::check_source(src) {
        Ok(c) => panic!("accepted:\n{src}\nas:\n{}", ir::print_program(&c.program)),
        Err(d) => tc::render_diagnostics(&d, "t.tc", src),
    }
}

/// Asserts that `src` is rejected with `fragment` at `line:col`.
fn rejects(src: &str, fragment: &str, at: &str) {
    let out = rejected(src);
    assert!(out.contains(fragment), "expected `{fragment}` in:\n{out}");
    assert!(
        out.contains(&format!("t.tc:{at}")),
        "expected the error at {at}:\n{out}"
    );
}

#[test]
fn a_loop_over_rows_round_trips() {
    let printed = round_trip(
        "def rows(float(N, M) b1) -> (b4) {
  b4 = for k in 0:N carry (float32(N, M) b3 = b1) {
    t(j) = b3(k, j) + 1.0 where j in 0:M
    b2(i, j) = i == k ? t(j) : b3(i, j) where i in 0:N, j in 0:M
    yield b2
  }
}
",
    );
    assert!(printed.contains("  b4 = for k in 0:N carry (float32(N, M) b3 = b1) {\n"));
    assert!(printed.contains("\n    yield b2\n  }\n"));
}

#[test]
fn the_loop_index_is_an_int64_symbol() {
    let checked = tc::check_source(
        "def f(float(N) A) -> (r) {
  r = for k in 0:N carry (float32(N) a = A) {
    b(i) = a(i) + float32(k) where i in 0:N
    yield b
  }
}
",
    )
    .unwrap_or_else(|d| panic!("{d:?}"));
    let Stmt::Loop(l) = &checked.program.defs[0].stmts[0] else {
        panic!("expected a loop")
    };
    assert_eq!(l.count, Some(Expr::Sym("N".into())));
    let Stmt::Comp(c) = &l.body[0] else {
        panic!("expected a comprehension")
    };
    let mut syms = Vec::new();
    c.body.walk(&mut |e| {
        if let Expr::Sym(s) = e {
            syms.push(s.clone());
        }
    });
    assert_eq!(syms, ["k"]);
}

#[test]
fn nested_loops_round_trip() {
    // The inner count and a range use the outer index.
    round_trip(
        "def tri(float(N, N) A) -> (S) {
  S = for k in 0:N carry (float32(N, N) s0 = A) {
    s3 = for l in 0:k + 1 carry (float32(N, N) s1 = s0) {
      s2(i, j) = i == k && j == l ? s1(i, j) * 2.0 : s1(i, j) where i in 0:N, j in 0:N
      yield s2
    }
    w(j) = float32(j) where j in 0:k + 1
    s4(i, j) = s3(i, j) + (i == k && j < k + 1 ? w(j) : 0.0) where i in 0:N, j in 0:N
    yield s4
  }
}
",
    );
}

#[test]
fn a_loop_inside_a_branch_inside_a_loop_round_trips() {
    round_trip(
        "def f(float(N) x, float(N) y) -> (out) {
  out = for k in 0:4 carry (float32(N) a = x) {
    half(i) = a(i) * 0.5 where i in 0:N
    b = if k % 2 == 0 {
      c = for m in 0:k carry (float32(N) p = half) {
        q(i) = p(i) + y(i)
        yield q
      }
      yield c
    } else {
      yield half
    }
    yield b
  }
}
",
    );
}

#[test]
fn while_loops_carry_0d_int_and_bool_tensors() {
    round_trip(
        "def decode(int64(B, L) out0, int64 L0) -> (out2, t2, c2) {
  t0 = int64(0)
  c0 = true
  (out2, t2, c2) = for s while c1() && t1() < L carry (int64(B, L) out1 = out0, int64() t1 = t0, bool() c1 = c0) {
    out3(b, l) = l == t1() ? out1(b, l) + 1 : out1(b, l) where b in 0:B, l in 0:L
    t3 = t1() + 1
    c3 = t3() < int64(L0)
    yield (out3, t3, c3)
  }
}
",
    );
    // A loop with both a count and a condition.
    round_trip(
        "def f(float(N) A, float lim) -> (p, q) {
  s = 0.0
  z = 0
  (p, q) = for s2 in 0:N while c() < lim carry (float32() c = s, int32() n = z) {
    d = c() + A(s2)
    m = n() + 1
    yield (d, m)
  }
}
",
    );
}

#[test]
fn a_branch_on_a_size_comparison_round_trips() {
    round_trip(
        "def f(float(N) x) -> (r, s) {
  (r, s) = if N > 2 {
    y(i) = x(i) * 2.0 where i in 0:N
    z(i) = y(i) + 1.0 where i in 0:N
    yield (y, z)
  } else {
    yield (x, x)
  }
}
",
    );
}

#[test]
fn a_branch_on_a_0d_tensor_round_trips() {
    round_trip(
        "def f(float() s, float(N) x) -> (r) {
  r = if s() > 0.0 {
    y(i) = x(i) * 2.0 where i in 0:N
    yield y
  } else {
    yield x
  }
}
",
    );
    // Bare reads of 0-d tensors and float64 literals keep their types.
    round_trip(
        "def f(float64() s, float64(N) x) -> (r) {
  r = if s > 0.1 || !(s < -1.0) {
    y(i) = x(i) * 0.1 where i in 0:N
    yield y
  } else {
    yield x
  }
}
",
    );
}

#[test]
fn a_count_may_be_an_integer_scalar_parameter() {
    let printed = round_trip(
        "def f(float(N) x, int32 n, int64 m) -> (r, s) {
  r = for k in 0:n carry (float32(N) a = x) {
    b(i) = a(i) + 1.0
    yield b
  }
  s = for k in 0:m * 2 - 1 carry (float32(N) c = x) {
    d(i) = c(i) * 2.0
    yield d
  }
}
",
    );
    assert!(printed.contains("for k in 0:int64(n) carry"), "{printed}");
    assert!(printed.contains("for k in 0:m * 2 - 1 carry"), "{printed}");
}

#[test]
fn regions_without_results_or_carried_tensors_round_trip() {
    round_trip(
        "def f(float(N) x) -> (y) {
  () = for k in 0:3 carry () {
    t(i) = x(i) where i in 0:N
    yield ()
  }
  () = if N > 1 {
    yield ()
  } else {
    yield ()
  }
  y(i) = x(i)
}
",
    );
}

#[test]
fn typed_and_existing_results_take_the_regions_types() {
    round_trip(
        "def f(float(N) x) -> (float32(N) r, a) {
  a(i) = x(i)
  r = for k in 0:2 carry (float32(N) p = a) {
    q(i) = p(i) * 3.0
    yield q
  }
  a = if N > 3 {
    yield r
  } else {
    yield x
  }
}
",
    );
}

#[test]
fn body_statements_get_the_checkers_usual_treatment() {
    // Range inference from reads, a weak first definition typed by the next
    // writer, a reduction, a rank-0 statement, a let and a `T.d` bound, a
    // call with the index as a scalar argument.
    round_trip(
        "def scale(float(N) X, int64 s) -> (Y) {
  Y(i) = X(i) * float32(s)
}

def f(float(N, M) A, float(M) v) -> (r) {
  w0(i) = 0.0 where i in 0:N
  r = for k in 0:3 carry (float32(N) acc = w0) {
    t(i) = 0
    t(i) += A(i, j) * v(j)
    tot +=! t(i)
    u = scale(t, k)
    w(i) = acc(i) + u(i) / tot where e = 1.0, i in 0:t.0
    yield w
  }
}
",
    );
}

#[test]
fn a_shape_inferred_after_the_region_serves_it() {
    // `C`'s shape is fixed by the statement after the loop that reads it;
    // the body's `t`, and so the yield's agreement, wait for it.
    round_trip(
        "def f(float(M, K) A, float(K) x) -> (r, C) {
  C(i) = 0
  z(i) = 0.0 where i in 0:M
  r = for k in 0:2 carry (float32(M) a = z) {
    t(i) = C(i) + a(i)
    yield t
  }
  C(i) += A(i, j) * x(j)
}
",
    );
}

/// `depth` loops nested in one another, each carrying a vector.
fn nested(depth: usize) -> String {
    let mut src = String::from("def f(float(N) x) -> (r) {\n");
    for k in 0..depth {
        let pad = "  ".repeat(k + 1);
        src.push_str(&format!(
            "{pad}r{k} = for i{k} in 0:2 carry (float32(N) a{k} = {}) {{\n",
            if k == 0 {
                "x".to_string()
            } else {
                format!("a{}", k - 1)
            }
        ));
    }
    let pad = "  ".repeat(depth + 1);
    src.push_str(&format!("{pad}b(j) = a{}(j) + 1.0\n", depth - 1));
    src.push_str(&format!("{pad}yield b\n"));
    for k in (0..depth).rev() {
        let pad = "  ".repeat(k + 1);
        if k == 0 {
            src.push_str(&format!("{pad}}}\n  r(j) = r0(j)\n"));
        } else {
            src.push_str(&format!("{pad}}}\n{pad}yield r{k}\n"));
        }
    }
    src.push_str("}\n");
    src
}

#[test]
fn deep_nesting_round_trips() {
    round_trip(&nested(60));
    // Near the limit, where expressions inside have little room left.
    tc::check_source(&nested(250)).unwrap_or_else(|d| panic!("{d:?}"));
}

/// Regions nested past the parser's limit are an error, not a stack
/// overflow, and so are regions with deep expressions inside.
#[test]
fn nesting_beyond_the_limit_is_an_error() {
    let depth = 300;
    let mut src = String::from("def f(float(N) x) -> (r) {\n");
    for k in 0..depth {
        src.push_str(&format!(
            "r{k} = for i{k} in 0:2 carry (float32(N) a{k} = x) {{\n"
        ));
    }
    src.push_str("yield x\n");
    for k in (0..depth).rev() {
        src.push_str(&format!("}}\n{}", if k > 0 { "yield x\n" } else { "" }));
    }
    src.push_str("}\n");
    let out = rejected(&src);
    assert!(
        out.contains("regions nested more than 255 levels deep"),
        "{out}"
    );

    let mut src = String::from("def f(float(N) x) -> (r) {\n");
    for k in 0..200 {
        src.push_str(&format!("r{k} = if N > {k} {{\n"));
    }
    src.push_str(&format!(
        "y(i) = {}x(i){}\nyield y\n",
        "(".repeat(100),
        ")".repeat(100)
    ));
    for k in (0..200).rev() {
        src.push_str(&format!(
            "}} else {{\nyield x\n}}\n{}",
            if k > 0 { "yield x\n" } else { "" }
        ));
    }
    src.push_str("}\n");
    let out = rejected(&src);
    assert!(out.contains("nested more than 256 levels deep"), "{out}");
}

/// A program as another producer of IR (an imperative frontend) would build
/// it: verified, printed, and checked back to the same IR.
#[test]
fn a_built_program_prints_and_checks_back() {
    let sym = |s: &str| SizeExpr::sym(s);
    let decl = |name: &str, dtype: DType, shape: Vec<SizeExpr>, role: TensorRole| TensorDecl {
        name: name.into(),
        dtype,
        shape,
        role,
    };
    let range = |name: &str, hi: SizeExpr| IterRange {
        name: name.into(),
        lo: SizeExpr::zero(),
        hi,
    };
    let iter = |n: &str| Expr::Iter(n.into());
    let read0 = |t: &str| Expr::Read(t.into(), Vec::new());
    let body = vec![
        Stmt::Comp(ir::Comprehension {
            tensor: "x2".into(),
            indices: vec!["i".into()],
            op: Reduction::Assign,
            init: false,
            body: Expr::binary(
                ir::BinOp::Add,
                Expr::Read("x1".into(), vec![iter("i")]),
                Expr::Cast(DType::F32, Box::new(Expr::Sym("k".into()))),
            ),
            ranges: vec![range("i", sym("N"))],
            lets: Vec::new(),
            exists: Vec::new(),
        }),
        Stmt::Comp(ir::Comprehension {
            tensor: "n2".into(),
            indices: Vec::new(),
            op: Reduction::Assign,
            init: false,
            body: Expr::binary(
                ir::BinOp::Add,
                read0("n1"),
                Expr::Lit(Value::Int(1), DType::I64),
            ),
            ranges: Vec::new(),
            lets: Vec::new(),
            exists: Vec::new(),
        }),
    ];
    let then_body = vec![Stmt::Call(ir::CallStmt {
        callee: "g".into(),
        args: vec![
            CallArg::Tensor("x3".into()),
            CallArg::Scalar(Expr::Lit(Value::Int(2), DType::I32)),
        ],
        results: vec!["y1".into()],
    })];
    let f = Def {
        name: "f".into(),
        params: vec![
            Param::Tensor("x0".into()),
            Param::Scalar {
                name: "lim".into(),
                dtype: DType::I64,
            },
        ],
        outputs: vec!["out".into()],
        tensors: vec![
            decl("x0", DType::F32, vec![sym("N")], TensorRole::Input),
            decl("n0", DType::I64, Vec::new(), TensorRole::Temp),
            decl("x1", DType::F32, vec![sym("N")], TensorRole::Temp),
            decl("n1", DType::I64, Vec::new(), TensorRole::Temp),
            decl("x2", DType::F32, vec![sym("N")], TensorRole::Temp),
            decl("n2", DType::I64, Vec::new(), TensorRole::Temp),
            decl("x3", DType::F32, vec![sym("N")], TensorRole::Temp),
            decl("n3", DType::I64, Vec::new(), TensorRole::Temp),
            decl("y1", DType::F32, vec![sym("N")], TensorRole::Temp),
            decl("out", DType::F32, vec![sym("N")], TensorRole::Output),
        ],
        stmts: vec![
            Stmt::Comp(ir::Comprehension {
                tensor: "n0".into(),
                indices: Vec::new(),
                op: Reduction::Assign,
                init: false,
                body: Expr::Lit(Value::Int(0), DType::I64),
                ranges: Vec::new(),
                lets: Vec::new(),
                exists: Vec::new(),
            }),
            Stmt::Loop(LoopStmt {
                index: "k".into(),
                count: Some(Expr::Sym("N".into())),
                cond: Some(Expr::binary(
                    ir::BinOp::Lt,
                    read0("n1"),
                    Expr::Sym("lim".into()),
                )),
                carried: vec![
                    Carried {
                        param: "x1".into(),
                        init: "x0".into(),
                    },
                    Carried {
                        param: "n1".into(),
                        init: "n0".into(),
                    },
                ],
                body,
                yields: vec!["x2".into(), "n2".into()],
                results: vec!["x3".into(), "n3".into()],
            }),
            Stmt::If(IfStmt {
                cond: Expr::binary(
                    ir::BinOp::Gt,
                    read0("n3"),
                    Expr::Lit(Value::Int(2), DType::I64),
                ),
                then_body,
                then_yields: vec!["y1".into()],
                else_body: Vec::new(),
                else_yields: vec!["x3".into()],
                results: vec!["out".into()],
            }),
        ],
    };
    let g =
        tc::check_source("def g(float(N) X, int32 a) -> (Y) {\n  Y(i) = X(i) * float32(a)\n}\n")
            .unwrap_or_else(|d| panic!("{d:?}"))
            .program
            .defs
            .remove(0);
    let program = Program { defs: vec![g, f] };
    ir::verify_program(&program).unwrap_or_else(|e| panic!("the built program: {e:?}"));
    let printed = ir::print_program(&program);
    let checked = tc::check_source(&printed).unwrap_or_else(|d| {
        panic!(
            "{printed}\n{}",
            tc::render_diagnostics(&d, "printed.tc", &printed)
        )
    });
    assert_eq!(checked.program, program, "printed:\n{printed}");
}

#[test]
fn region_errors_are_located() {
    rejects(
        "def f(float(N) x) -> (r) {\n  r = for k in 0:N carry (float32(N) a = x) {\n    b(i) = a(i)\n  }\n}\n",
        "the body of this `for` does not end with `yield`",
        "4:3",
    );
    rejects(
        "def f(float(N) x) -> (r) {\n  r = for k in 0:N carry (float32(N) a = x) {\n    yield (a, a)\n  }\n}\n",
        "this block yields 2 tensors, but the loop carries 1 tensor",
        "3:5",
    );
    rejects(
        "def f(float(N) x) -> (r) {\n  r = for k in 0:N carry (float32(N) a = x) {\n    b(i, j) = a(i) where j in 0:2\n    yield b\n  }\n}\n",
        "the body yields `b`, which is float32(N, 2), for carried `a`, which is float32(N)",
        "4:11",
    );
    rejects(
        "def f(float(N) x) -> (r) {\n  r = for k in 0:N carry (float32(N) a = y) {\n    yield a\n  }\n}\n",
        "carried `a` starts from `y`, which is not defined before the loop",
        "2:42",
    );
    rejects(
        "def f(float(N) x) -> (r) {\n  r = for k while N carry (float32(N) a = x) {\n    yield a\n  }\n}\n",
        "the loop's condition must be bool, found int64",
        "2:19",
    );
    rejects(
        "def f(float(N) x) -> (r) {\n  r = for k in 0:1.5 carry (float32(N) a = x) {\n    yield a\n  }\n}\n",
        "the loop count must be an integer, found float32",
        "2:18",
    );
    rejects(
        "def f(float(N) x) -> (r) {\n  r = if x(0) > 0.0 {\n    yield x\n  } else {\n    yield x\n  }\n}\n",
        "a condition reads only 0-d tensors, but `x` has 1 dimension",
        "2:10",
    );
    rejects(
        "def f(float(N) x) -> (r) {\n  r = for N in 0:3 carry (float32(N) a = x) {\n    yield a\n  }\n}\n",
        "loop index `N` shadows a size symbol",
        "2:11",
    );
    rejects(
        "def f(float(N) x) -> (r) {\n  r = for k in 0:3 carry (float32(N) a = x) {\n    b = for k in 0:2 carry (float32(N) c = a) {\n      yield c\n    }\n    yield b\n  }\n}\n",
        "loop index `k` shadows the index of an enclosing loop",
        "3:13",
    );
    rejects(
        "def f(float(N) x) -> (r) {\n  s = for k in 0:3 carry (float32(N) a = x) {\n    b(i) = a(i) * 2.0\n    yield b\n  }\n  r(i) = b(i)\n}\n",
        "`b` is defined inside the body of a region and is not visible outside it",
        "6:10",
    );
    rejects(
        "def f(float(N) x) -> (r) {\n  r = if N > 1 {\n    y(i) = x(i)\n    yield y\n  } else {\n    y(i) = x(i) * 2.0\n    yield y\n  }\n}\n",
        "`y` is already defined in another block",
        "6:5",
    );
    rejects(
        "def f(float(N) x) -> (r) {\n  t(i) = x(i)\n  r = for k in 0:3 carry (float32(N) a = x) {\n    t(i) = a(i)\n    yield a\n  }\n}\n",
        "`t` is defined outside this region",
        "4:5",
    );
    rejects(
        "def f(float(N) x, float(M) z) -> (r) {\n  r = if N > 1 {\n    yield x\n  } else {\n    yield z\n  }\n}\n",
        "the blocks of this `if` disagree on result `r`: the `then` block yields `x`, which is float32(N), the `else` block `z`, which is float32(M)",
        "5:11",
    );
}

/// Region programs with random edits (a word left out, repeated or moved)
/// are checked without a panic, and every rejection renders as located
/// errors.
mod mutations {
    use proptest::prelude::*;
    use proptest::test_runner::Config;

    const SOURCES: [&str; 3] = [
        "def f(float(N) x, int64 n) -> (r, c) {\n  t0 = int64(0)\n  (r, c) = for k in 0:n while t() < 3 carry (float32(N) a = x, int64() t = t0) {\n    b = if k > 1 {\n      y(i) = a(i) * 2.0 where i in 0:N\n      yield y\n    } else {\n      yield a\n    }\n    t2 = t() + 1\n    yield (b, t2)\n  }\n}\n",
        "def g(float(N, M) A) -> (B) {\n  B = for k in 0:N carry (float32(N, M) b = A) {\n    s = for l in 0:k + 1 carry (float32(N, M) c = b) {\n      d(i, j) = i == l ? c(i, j) + 1.0 : c(i, j) where i in 0:N, j in 0:M\n      yield d\n    }\n    yield s\n  }\n}\n",
        "def h(float() s, float(N) x) -> (p, q) {\n  (p, q) = if s() > 0.0 && N > 2 {\n    yield (x, x)\n  } else {\n    () = for k while false carry () {\n      yield ()\n    }\n    z(i) = -x(i)\n    yield (z, x)\n  }\n}\n",
    ];

    #[test]
    fn the_sources_round_trip() {
        for src in SOURCES {
            super::round_trip(src);
        }
    }

    proptest! {
        #![proptest_config(Config { cases: 512, failure_persistence: None, ..Config::default() })]

        #[test]
        fn edited_region_programs_never_panic(
            which in 0..SOURCES.len(),
            edits in prop::collection::vec((0..3u8, any::<prop::sample::Index>(), any::<prop::sample::Index>()), 1..4),
        ) {
            let mut words: Vec<String> = SOURCES[which]
                .split_inclusive(|c: char| !c.is_alphanumeric())
                .map(str::to_string)
                .collect();
            for (op, a, b) in edits {
                let (i, j) = (a.index(words.len()), b.index(words.len()));
                match op {
                    0 => {
                        words.remove(i);
                    }
                    1 => {
                        let w = words[i].clone();
                        words.insert(j, w);
                    }
                    _ => words.swap(i, j),
                }
                if words.is_empty() {
                    break;
                }
            }
            let text: String = words.concat();
            if let Err(d) = tc::check_source(&text) {
                prop_assert!(!d.is_empty());
                let out = tc::render_diagnostics(&d, "edited.tc", &text);
                prop_assert!(out.starts_with("error: "), "{}", out);
            }
        }
    }
}

/// Every prefix of a region program, and the program with any one token
/// left out, is checked without a panic.
#[test]
fn broken_region_text_never_panics() {
    let src = "def g(float(N) X) -> (Y) {\n  Y(i) = X(i)\n}\n\ndef f(float(N) x, int64 n) -> (r, c) {\n  t0 = int64(0)\n  (r, c) = for k in 0:n while t() < 3 carry (float32(N) a = x, int64() t = t0) {\n    b = if k > 1 {\n      y(i) = a(i) * 2.0 where i in 0:N\n      yield y\n    } else {\n      yield a\n    }\n    z = g(b)\n    t2 = t() + 1\n    yield (z, t2)\n  }\n}\n";
    round_trip(src);
    let cuts: Vec<usize> = src
        .char_indices()
        .map(|(i, _)| i)
        .chain(std::iter::once(src.len()))
        .collect();
    for &k in &cuts {
        let _ = tc::check_source(&src[..k]);
    }
    let words: Vec<&str> = src
        .split_inclusive(|c: char| !c.is_alphanumeric())
        .collect();
    for k in 0..words.len() {
        let text: String = words
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != k)
            .map(|(_, w)| *w)
            .collect();
        let _ = tc::check_source(&text);
    }
}
