//! The extraction's per-node costs from a [`CostModel`]'s analytic
//! estimates: a call node costs the estimated run of its callee at the
//! sizes its operands' shapes bind, asked once per callee and sizes.
//!
//! Requires a model whose estimates take the program's defs. Guarantees:
//! every valid node gets a positive, finite cost; a callee the model
//! cannot estimate (and an opaque statement, which no rule replaces)
//! costs one nanosecond per result element, so that it still counts.

use std::collections::HashMap;

use ir::Program;

use crate::cost::CostModel;
use crate::egraph::analysis::Data;
use crate::egraph::extract::NodeCost;
use crate::egraph::lang::{self, Node};
use crate::signature::{call_sizes, ArgKind};

/// The seconds per result element of a node without an estimate.
const FALLBACK_SECONDS_PER_ELEMENT: f64 = 1e-9;

/// A mutant must be estimated cheaper than the operator it replaces by
/// this factor: on a tie, its extra layout kernels (which an estimate may
/// price at nothing) make it the worse choice.
const MUTANT_MARGIN: f64 = 1.01;

/// Node costs by estimate, cached.
pub struct EstimateCosts<'m, M: CostModel> {
    model: &'m M,
    program: &'m Program,
    cache: HashMap<(String, Vec<ArgKind>), f64>,
}

impl<M: CostModel> std::fmt::Debug for EstimateCosts<'_, M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "EstimateCosts({} estimates cached)", self.cache.len())
    }
}

impl<'m, M: CostModel> EstimateCosts<'m, M> {
    pub fn new(model: &'m M, program: &'m Program) -> Self {
        EstimateCosts {
            model,
            program,
            cache: HashMap::new(),
        }
    }

    /// The estimated seconds of `op` on `args`; `None` when there is none.
    fn estimate(&self, op: &str, args: &[ArgKind]) -> Option<f64> {
        let def = self.program.def(op)?;
        let sizes = call_sizes(def, args).ok()?;
        let e = self.model.estimate(self.program, op, &sizes).ok()?;
        (e.seconds.is_finite() && e.seconds > 0.0).then_some(e.seconds)
    }
}

impl<M: CostModel> NodeCost for EstimateCosts<'_, M> {
    fn cost(&mut self, node: &Node, kids: &[&Data], out: &Data) -> f64 {
        let fallback = match out {
            Data::Tensor(s) => s.iter().product::<i64>().max(1) as f64,
            _ => 1.0,
        } * FALLBACK_SECONDS_PER_ELEMENT;
        let Node::Call(op, _) = node else {
            return 0.0;
        };
        if lang::opaque_index(op).is_some() {
            return fallback;
        }
        let Some(args) = kids.iter().map(|d| d.kind()).collect::<Option<Vec<_>>>() else {
            return fallback;
        };
        let key = (op.as_str().to_string(), args);
        if let Some(&c) = self.cache.get(&key) {
            return c;
        }
        let mut c = self.estimate(&key.0, &key.1).unwrap_or(fallback);
        if key.0.starts_with(crate::mutant::PREFIX) {
            c *= MUTANT_MARGIN;
        }
        self.cache.insert(key, c);
        c
    }
}
