//! Operator matching (OLLIE §4.3.1): a scope that the iterator mapping
//! table (`ir::opmatch`) matches to a predefined operator, exactly, is
//! instantiated as that operator: a (batched) matmul runs as the matmul
//! library, a convolution as tessera's channel-blocked convolution.
//!
//! Requires an open statement. Guarantees: the state's program is
//! unchanged (only the statement's status changes); a statement is
//! instantiated only when its matcher reports no mismatch, so it runs as
//! the operator.

use super::{Applied, Rule};
use crate::derive::matching::exact;
use crate::derive::state::{operator_name, State, Status};

pub struct OperatorMatching;

impl Rule for OperatorMatching {
    fn name(&self) -> &'static str {
        "operator matching"
    }

    fn apply(&self, state: &State, at: usize, out: &mut Vec<Applied>) {
        if state.status[at] != Status::Open {
            return;
        }
        for op in exact(state, at) {
            let mut next = state.clone();
            next.status[at] = Status::Operator(op);
            out.push(Applied {
                state: next,
                what: format!("`{}` as {}", state.comp(at).tensor, operator_name(op)),
            });
        }
    }
}
