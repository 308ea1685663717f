//! The optimizer's final proof, region by region (`opt::optimize::prove`):
//! a candidate that is the original under other names has nothing to
//! prove and is recognized as the original; a rewritten part is one
//! region proved apart, from the tensors around it; and a class the
//! e-graph merged wrongly is caught, since the proof trusts nothing the
//! e-graph claims; a region that is no polynomial and too large to
//! interpret whole is proved at sampled points, at no floating-point work
//! charged to the candidate.

use std::collections::HashMap;
use std::sync::Arc;

mod common;

use common::Flops;
use opt::egraph::analysis::Data;
use opt::egraph::extract::{extract, NodeCost};
use opt::egraph::lang::Node;
use opt::egraph::{Limits, Search};
use opt::optimize::prove;

const CHAIN: &str = "def chain(float(M,K) A, float(K,N) B, float(N,P) C, float(M,P) R) -> (D) {
  T = matmul(A, B)
  U = matmul(T, C)
  D = add_r2(U, R)
}";

fn sizes() -> HashMap<String, i64> {
    [("M", 16), ("K", 16), ("N", 16), ("P", 2)]
        .map(|(k, v)| (k.to_string(), v))
        .into()
}

/// Costs by multiply-adds, so that the narrow end of the chain goes
/// first.
fn flops() -> Flops {
    Flops {
        exponent: 1.0,
        per_element: 1.0,
    }
}

/// Prefers one node over every other.
struct Prefer(Node);

impl NodeCost for Prefer {
    fn cost(&mut self, node: &Node, _: &[&Data], _: &Data) -> f64 {
        if *node == self.0 {
            0.0
        } else {
            1.0
        }
    }
}

fn search(program: &Arc<ir::Program>) -> Search {
    Search::new(Arc::clone(program), "chain", &sizes()).unwrap()
}

#[test]
fn the_original_extracted_again_is_the_original() {
    let program = Arc::new(testkit::with_prelude(CHAIN));
    let search = search(&program);
    let choice = extract(&search, &mut flops());
    let plan = prove::plan(&search, program.def("chain").unwrap(), &choice).unwrap();
    assert!(plan.same, "{plan:?}");
    assert!(plan.regions.is_empty());
}

#[test]
fn a_reassociated_chain_is_one_region_proved_from_its_inputs() {
    let program = Arc::new(testkit::with_prelude(CHAIN));
    let mut search = search(&program);
    let rules = opt::optimize::shipped_rules(&program).unwrap();
    search.saturate(
        &opt::egraph::rewrite::rewrites(&rules).unwrap(),
        Limits::default(),
    );
    let choice = extract(&search, &mut flops());
    let original = program.def("chain").unwrap();
    let plan = prove::plan(&search, original, &choice).unwrap();
    assert!(!plan.same);
    // U is computed as A (B C): its region is proved from A, B and C
    // alone. (D may add the same two tensors in either order.)
    let region = plan
        .regions
        .iter()
        .find(|r| r.tensor == "U")
        .unwrap_or_else(|| panic!("no region of U: {plan:?}"));
    let mut leaves: Vec<&str> = region.leaves.iter().map(|(_, t)| t.as_str()).collect();
    leaves.sort_unstable();
    assert_eq!(leaves, ["A", "B", "C"]);
    assert!(plan
        .regions
        .iter()
        .all(|r| r.tensor == "U" || r.tensor == "D"));
    let written = prove::write(&search, &program, original, &choice, &plan, &sizes()).unwrap();
    assert!(written.pairs.iter().all(|p| p.exact.is_ok()));
    let proof = prove::prove(&written).unwrap();
    assert!(proof.equivalent(), "{}", proof.show());
    assert!(
        proof.show().contains("exact test over Z_p"),
        "{}",
        proof.show()
    );
}

#[test]
fn a_class_merged_wrongly_is_caught() {
    let program = Arc::new(testkit::with_prelude(CHAIN));
    let mut search = search(&program);
    // Claim that A B is B A (false for these matrices) by uniting them.
    let t = search.statements[0].class;
    let Node::Call(op, kids) = search.statements[0].node.clone() else {
        panic!("a call expected");
    };
    let swapped = Node::Call(op, vec![kids[1], kids[0]]);
    let id = search.egraph.add(swapped.clone());
    search.egraph.union(t, id);
    search.egraph.rebuild();
    search.canonicalize();
    let choice = extract(&search, &mut Prefer(swapped));
    let original = program.def("chain").unwrap();
    let plan = prove::plan(&search, original, &choice).unwrap();
    assert_eq!(
        plan.regions
            .iter()
            .map(|r| r.tensor.as_str())
            .collect::<Vec<_>>(),
        ["T"]
    );
    let written = prove::write(&search, &program, original, &choice, &plan, &sizes()).unwrap();
    assert!(written.pairs.iter().all(|p| p.exact.is_ok()));
    let proof = prove::prove(&written).unwrap();
    assert!(!proof.equivalent(), "{}", proof.show());
}

#[test]
fn a_repeated_statement_computed_once_is_proved_apart() {
    // T3 repeats T2 (the same product of the same tensors), so the
    // e-graph holds them in one class and a candidate adds T2 to itself;
    // the region of D must read T3 as T2, not recompute it from the
    // inputs while T2 is a free leaf (found by tests/optimize_random.rs).
    const TWICE: &str = "def twice(float(M,K) A, float(K,N) B) -> (D) {
  T1 = add_r2(A, A)
  T2 = matmul(T1, B)
  T3 = matmul(T1, B)
  D = add_r2(T2, T3)
}";
    let program = Arc::new(testkit::with_prelude(TWICE));
    let sizes: HashMap<String, i64> = [("M", 4), ("K", 3), ("N", 5)]
        .map(|(k, v)| (k.to_string(), v))
        .into();
    let search = Search::new(Arc::clone(&program), "twice", &sizes).unwrap();
    let choice = extract(&search, &mut flops());
    let original = program.def("twice").unwrap();
    let plan = prove::plan(&search, original, &choice).unwrap();
    assert_eq!(plan.alias.get("T3").map(String::as_str), Some("T2"));
    // Computing T3 once is a change, with nothing to prove apart: D adds
    // T2 to T2, which the original's D does once T3 reads as T2.
    assert!(!plan.same);
    let written = prove::write(&search, &program, original, &choice, &plan, &sizes).unwrap();
    let proof = prove::prove(&written).unwrap();
    assert!(proof.equivalent(), "{}", proof.show());
}

/// Charges a call of one operator more than anything else.
struct Avoid(&'static str);

impl NodeCost for Avoid {
    fn cost(&mut self, node: &Node, _: &[&Data], _: &Data) -> f64 {
        match node {
            Node::Call(op, _) if op.as_str() == self.0 => 100.0,
            _ => 1.0,
        }
    }
}

#[test]
fn a_relu_fused_into_a_large_convolution_is_proved_at_sampled_points() {
    // 16 channels of 40x40, a 3x3 window: 3.7 million multiply-adds per
    // side, which the whole floating-point comparison would interpret for
    // every draw; the lazy test evaluates only the sampled points.
    const BLOCK: &str =
        "def block(float(1,2,40,40,8) X, float(2,2,3,3,8,8) Wt, float(2,8) B) -> (Y) {
  Z = conv2d_nchwc(X, Wt, B, 1, 1, 1, 1, 1, 1, 1, 1)
  Y = relu_r5(Z)
}";
    let program = Arc::new(testkit::with_prelude(BLOCK));
    let sizes = HashMap::new();
    let mut search = Search::new(Arc::clone(&program), "block", &sizes).unwrap();
    let rules = opt::optimize::shipped_rules(&program).unwrap();
    search.saturate(
        &opt::egraph::rewrite::rewrites(&rules).unwrap(),
        Limits::default(),
    );
    let choice = extract(&search, &mut Avoid("relu_r5"));
    let original = program.def("block").unwrap();
    let plan = prove::plan(&search, original, &choice).unwrap();
    let written = prove::write(&search, &program, original, &choice, &plan, &sizes).unwrap();
    assert!(
        written.pairs.iter().any(|p| p.exact.is_err() && p.sampled),
        "{:?}",
        written.pairs
    );
    // Every def would cost a GFLOP to interpret, but the sampled proof
    // interprets none.
    let method = prove::Method::from(Ok(written.clone()));
    let (work, _) = method
        .float_work(&Gflop, &written.program, original, "block", &sizes)
        .unwrap();
    assert_eq!(work, 0);
    let proof = prove::prove(&written).unwrap();
    assert!(proof.equivalent(), "{}", proof.show());
    assert!(proof.show().contains("over all draws"), "{}", proof.show());
}

/// Estimates every def at a billion floating-point operations.
struct Gflop;

impl opt::cost::CostModel for Gflop {
    type Error = String;

    fn estimate(
        &self,
        _: &ir::Program,
        _: &str,
        _: &HashMap<String, i64>,
    ) -> Result<opt::cost::Estimate, String> {
        Ok(opt::cost::Estimate {
            flops: 1_000_000_000,
            bytes: 0,
            seconds: 1.0,
        })
    }

    fn measure(
        &self,
        _: &ir::Program,
        _: &str,
        _: &HashMap<String, i64>,
    ) -> Result<std::time::Duration, String> {
        Err("not measured".to_string())
    }
}
