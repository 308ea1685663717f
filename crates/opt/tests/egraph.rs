//! The e-graph search on small programs of prelude calls: saturation with
//! the proved rules puts the rewritten forms in the original's classes,
//! extraction by a cost picks the cheapest program (counting a value used
//! twice once), and the def it writes is proved equal to the original by
//! the verifier.

use std::collections::HashMap;
use std::sync::Arc;

mod common;

use common::Flops;
use opt::egraph::extract::extract;
use opt::egraph::lang::Node;
use opt::egraph::{Limits, Search};

/// The prelude with `text` after it, checked.
fn program(text: &str) -> Arc<ir::Program> {
    Arc::new(testkit::with_prelude(text))
}

fn rewrites() -> Vec<egg::Rewrite<Node, opt::egraph::analysis::Shapes>> {
    let rules = opt::rules::load(
        opt::rules::REWRITES,
        "ops/rewrites.rules",
        testkit::prelude(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    opt::egraph::rewrite::rewrites(&rules).unwrap()
}

/// Saturates def `name` of `program` at `sizes`, extracts by `cost`,
/// proves the written def equal to the original and returns its calls'
/// callees in order.
fn optimize(
    program: &Arc<ir::Program>,
    name: &str,
    sizes: &[(&str, i64)],
    cost: &mut Flops,
) -> Vec<String> {
    let sizes: HashMap<String, i64> = sizes.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    let mut search = Search::new(Arc::clone(program), name, &sizes).unwrap();
    search.saturate(&rewrites(), Limits::default());
    let choice = extract(&search, cost);
    let original = program.def(name).unwrap();
    let def = search.to_def(original, &choice, "optimized").unwrap();
    let mut both = (**program).clone();
    both.defs.push(def.clone());
    ir::verify_program(&both).unwrap_or_else(|e| panic!("{e:?}\n{}", ir::print_def(&both, &def)));
    let options = opt::verify::Options {
        sizes: sizes.clone(),
        ..Default::default()
    };
    let report = opt::verify::verify(&both, name, &both, "optimized", &options).unwrap();
    assert!(
        report.equivalent(),
        "{}\n{}",
        ir::print_def(&both, &def),
        opt::verify::print_report(&report)
    );
    def.stmts
        .iter()
        .map(|s| match s {
            ir::Stmt::Call(c) => format!(
                "{}({})",
                c.callee,
                c.args
                    .iter()
                    .map(|a| match a {
                        ir::CallArg::Tensor(t) => t.clone(),
                        ir::CallArg::Scalar(e) => format!("{e:?}"),
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            ir::Stmt::Comp(_) => "comprehension".to_string(),
            ir::Stmt::Loop(_) | ir::Stmt::If(_) => "region".to_string(),
        })
        .collect()
}

#[test]
fn a_matrix_chain_is_reassociated_where_that_is_cheaper() {
    let p = program(
        "def chain(float(M,K) A, float(K,N) B, float(N,P) C) -> (D) {\n  T = matmul(A, B)\n  D = matmul(T, C)\n}\n",
    );
    let flops = || Flops {
        exponent: 1.0,
        per_element: 1.0,
    };
    // (A B) C: 32*32*32 + 32*32*1; A (B C): 32*32*1 + 32*32*1.
    let calls = optimize(
        &p,
        "chain",
        &[("M", 32), ("K", 32), ("N", 32), ("P", 1)],
        &mut flops(),
    );
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert!(calls[0].starts_with("matmul(B, C)"), "{calls:?}");
    // Where the original order is the cheaper one, it stays.
    let calls = optimize(
        &p,
        "chain",
        &[("M", 1), ("K", 32), ("N", 32), ("P", 32)],
        &mut flops(),
    );
    assert!(calls[0].starts_with("matmul(A, B)"), "{calls:?}");
}

#[test]
fn two_products_of_one_operand_merge_when_a_bigger_product_pays() {
    let p = program(
        "def two(float(M,K) X, float(K,N) W1, float(K,N) W2) -> (Y1, Y2) {\n  Y1 = matmul(X, W1)\n  Y2 = matmul(X, W2)\n}\n",
    );
    let sizes = [("M", 8), ("K", 8), ("N", 8)];
    // Products cost the square root of their operations: one product of
    // twice the columns costs less than two, even with the copies.
    let calls = optimize(
        &p,
        "two",
        &sizes,
        &mut Flops {
            exponent: 0.5,
            per_element: 0.01,
        },
    );
    assert_eq!(
        calls.iter().filter(|c| c.starts_with("matmul")).count(),
        1,
        "{calls:?}"
    );
    assert!(
        calls.iter().any(|c| c.starts_with("concat_r2_a1(W1, W2)")),
        "{calls:?}"
    );
    // At a linear cost the copies make the merge dearer: nothing changes.
    let calls = optimize(
        &p,
        "two",
        &sizes,
        &mut Flops {
            exponent: 1.0,
            per_element: 1.0,
        },
    );
    assert_eq!(calls, ["matmul(X, W1)", "matmul(X, W2)"]);
}

#[test]
fn an_output_equal_to_an_input_is_written_as_a_copy() {
    // Negating twice is the input itself: the output's class holds the
    // input's leaf, which the written def copies.
    let p = program("def twice(float(M,N) X) -> (Y) {\n  T = neg_r2(X)\n  Y = neg_r2(T)\n}\n");
    let calls = optimize(
        &p,
        "twice",
        &[("M", 3), ("N", 4)],
        &mut Flops {
            exponent: 1.0,
            per_element: 1.0,
        },
    );
    assert_eq!(calls, ["comprehension"]);
}
