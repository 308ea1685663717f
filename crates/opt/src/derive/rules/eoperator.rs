//! eOperator generation (OLLIE §4.3.2): a scope no predefined operator
//! matches, instantiated as generated code — tessera's kernel lowering
//! compiles any comprehension, so the statement itself is the eOperator's
//! definition.
//!
//! As in OLLIE, only memory-bound scopes become eOperators, since a
//! compute-bound one is better matched to a predefined operator: a
//! statement without reduction iterators, or one whose body reads a
//! single tensor (a reduction of one tensor, such as Figure 6's
//! OffsetAdd). Requires an open statement of that form. Guarantees: the
//! state's program is unchanged (only the statement's status changes).

use ir::Reduction;

use super::{Applied, Rule};
use crate::derive::state::{State, Status};

pub struct EOperatorGeneration;

/// Whether statement `at` is memory-bound enough to be an eOperator.
pub fn memory_bound(state: &State, at: usize) -> bool {
    let c = state.comp(at);
    c.op == Reduction::Assign || c.reduction_iters().next().is_none() || c.body.reads().len() <= 1
}

impl Rule for EOperatorGeneration {
    fn name(&self) -> &'static str {
        "eOperator generation"
    }

    fn apply(&self, state: &State, at: usize, out: &mut Vec<Applied>) {
        if state.status[at] != Status::Open || !memory_bound(state, at) {
            return;
        }
        let mut next = state.clone();
        next.status[at] = Status::EOperator;
        out.push(Applied {
            state: next,
            what: format!("`{}` as an eOperator", state.comp(at).tensor),
        });
    }
}
