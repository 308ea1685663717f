//! The one random-program generator of the property tests.
//!
//! [`program`] is the description of a generated def (affine reads,
//! literals, operators, statements, sizes) and its rendering as TC text;
//! [`generate`] draws descriptions by a [`Profile`] (element types,
//! operators, sizes, families of programs). A property test renders the
//! description for the code under test and checks what it claims: the
//! interpreter against a direct evaluation, the verifier against the
//! interpreter on rewritten and perturbed copies, the compiled path
//! against the interpreter, the printer and parser against each other.

pub mod calls;
pub mod comprehension;
pub mod eval;
pub mod generate;
pub mod kernels;
pub mod program;

pub use calls::{calls, Calls};
pub use comprehension::comprehension;
pub use eval::{eval, random_inputs, Evaluation, Failure, Output};
pub use generate::{generate, Family, Gen, Generated, It, Profile, FAMILIES};
pub use program::{
    add, mul, sel, sub, Aff, Agg, Bound, Cond, Dim, Expr, Input, Iv, Op, Prog, Ranges, Sizes, St,
};
