//! tessera's optimizer layer. Today: the multi-linearity of comprehensions
//! ([`linearity`]) and program splitting at non-linear statements
//! ([`split`]), the ground the equivalence verifier and the searches will
//! stand on, and the [`cost::CostModel`] the searches will time candidates
//! through.

pub mod cost;
pub mod derive;
pub mod egraph;
pub mod hoist;
pub mod layout;
pub mod linearity;
pub mod mutant;
pub mod optimize;
pub mod rules;
pub mod signature;
pub mod split;
pub mod verify;

pub use split::{print_split, split, Part, PartKind, Split};
