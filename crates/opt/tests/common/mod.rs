//! What the opt tests share: a cost of e-graph nodes by their arithmetic.

use opt::egraph::analysis::Data;
use opt::egraph::extract::NodeCost;
use opt::egraph::lang::Node;

/// Costs by multiply-adds: a matrix product M K N of them, anything else
/// `per_element` times its result's elements; `exponent` bends the
/// products' cost (below 1: a bigger product is cheaper per operation, as
/// a GEMM library's is).
pub struct Flops {
    pub exponent: f64,
    pub per_element: f64,
}

impl NodeCost for Flops {
    fn cost(&mut self, node: &Node, kids: &[&Data], out: &Data) -> f64 {
        let elements = |d: &Data| match d {
            Data::Tensor(s) => s.iter().product::<i64>() as f64,
            _ => 0.0,
        };
        match (node, kids) {
            (Node::Call(op, _), [Data::Tensor(a), ..]) if op.as_str() == "matmul" => {
                (elements(out) * a[1] as f64).powf(self.exponent)
            }
            _ => self.per_element * elements(out),
        }
    }
}
