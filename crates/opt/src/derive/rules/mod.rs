//! OLLIE's derivation rules (Table 1), one per file, as data: the
//! explorative set the search applies everywhere, the normalizations it
//! applies after every step, and the instantiation rules that end a
//! statement's derivation.
//!
//! Each rule takes a state and one of its statements and returns every
//! state one application of the rule makes from them, with a line saying
//! what it did. Rules apply to any comprehension whose form they require,
//! never to a named operator.
//!
//! Requires states as [`State::new`] makes them. Guarantees: every state
//! a rule returns computes the same outputs as the state it was given
//! (each rule's `//!` says why; the tests and `--verify-steps` check
//! every application with the equivalence verifier), and its def passes
//! `ir::verify_program`.

use super::state::State;

mod boundary;
mod eoperator;
mod expr_fusion;
mod expr_merge;
mod expr_split;
mod operator;
mod relax;
mod substitute;
mod sum_split;
mod tighten;
mod traversal_merge;
mod winograd;

pub use expr_fusion::expand_lets;
pub use substitute::permute as substitute_permute;

/// One application of a rule.
#[derive(Clone, Debug)]
pub struct Applied {
    pub state: State,
    /// What changed, for the explanation.
    pub what: String,
}

/// A derivation rule.
pub trait Rule: Sync {
    /// The rule's name in OLLIE's Table 1.
    fn name(&self) -> &'static str;
    /// Every application of the rule at statement `at` of `state`.
    fn apply(&self, state: &State, at: usize, out: &mut Vec<Applied>);
}

/// The rules of the explorative stage (OLLIE §5.2, Algorithm 2): the
/// intra-expression rules that open new forms.
pub static EXPLORATIVE: &[&dyn Rule] = &[
    &sum_split::SummationSplitting,
    &substitute::VariableSubstitution,
    &traversal_merge::TraversalMerging,
    &relax::BoundaryRelaxing,
    &winograd::WinogradMinimalFiltering,
];

/// The inter-expression rules that make the search's starting points
/// (OLLIE §5.1, Algorithm 1: applied once to the program's expressions,
/// each result derived as well).
pub static INTER_EXPRESSION: &[&dyn Rule] = &[
    &expr_split::ExpressionSplitting,
    &expr_merge::ExpressionMerging,
];

/// The rules applied after every step, while they apply: forms that are
/// never worse (a copy scope inlined into its readers).
pub static NORMALIZE: &[&dyn Rule] = &[&expr_fusion::ExpressionFusion];

/// The rules guided derivation applies to a statement before it is
/// instantiated: a box tightened to where its values are not the
/// reduction's identity reads no padding, which a library operator cannot.
/// (Applied earlier, it would cut the boxes that a later substitution's
/// copies must cover to be fused.)
pub static PREPARE: &[&dyn Rule] = &[&tighten::BoundaryTightening];

/// The instantiation rules (OLLIE §4.3).
pub static INSTANTIATION: &[&dyn Rule] =
    &[&operator::OperatorMatching, &eoperator::EOperatorGeneration];

/// Every rule, for `tessera derive --explain` and the tests.
pub fn all() -> Vec<&'static dyn Rule> {
    EXPLORATIVE
        .iter()
        .chain(INTER_EXPRESSION)
        .chain(NORMALIZE)
        .chain(PREPARE)
        .chain(INSTANTIATION)
        .copied()
        .collect()
}
