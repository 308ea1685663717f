//! Literal typing: literal-only expressions stay exact until their context
//! gives them a type, then round once.

use ir::{DType, Expr, Stmt, Value};

/// The body of the only statement of the only def of `src`.
fn body(src: &str) -> Expr {
    let checked = tc::check_source(src)
        .unwrap_or_else(|d| panic!("{}", tc::render_diagnostics(&d, "t.tc", src)));
    match &checked.program.defs[0].stmts[0] {
        Stmt::Comp(c) => c.body.clone(),
        _ => panic!("expected a comprehension"),
    }
}

#[test]
fn literal_arithmetic_rounds_once_to_the_context_type() {
    let b = body("def f(float(N) A) -> (float64(N) B) {\n  B(i) = 0.1 + 0.0 where i in 0:N\n}\n");
    assert_eq!(b, Expr::Lit(Value::Float(0.1), DType::F64));
    let b = body("def f(float(N) A) -> (float32(N) B) {\n  B(i) = 0.1 * 3 where i in 0:N\n}\n");
    assert_eq!(b, Expr::Lit(Value::Float(f64::from(0.3f32)), DType::F32));
}

#[test]
fn integer_literals_wrap_only_in_their_final_type() {
    // 2^31 overflows int32 but not the int64 of a subscript.
    let src = "def f(float(N) A) -> (B) {\n  B(i) = A(i + (2147483647 + 1) - 2147483648)\n}\n";
    let Expr::Read(_, subs) = body(src) else {
        panic!("expected a read")
    };
    let Expr::Binary(_, sum, _) = &subs[0] else {
        panic!("expected a difference")
    };
    let Expr::Binary(_, _, folded) = &**sum else {
        panic!("expected a sum")
    };
    assert_eq!(**folded, Expr::Lit(Value::Int(2147483648), DType::I64));
}
