//! Operator matching by OLLIE's iterator mapping table (§4.3.1, Table 2):
//! which statements are a matmul, a batched matmul, a convolution, a
//! transposed convolution, a G2BMM or GBMM, or an elementwise operator, and
//! in which layout.
//!
//! A statement is first described neutrally as a [`Table`] (`table.rs`):
//! its iterators with their extents, the output's and inputs' accesses as
//! affine subscripts over strided layouts, how the inputs combine, whether
//! it sums. Comprehensions at concrete sizes produce one
//! (`comprehension.rs`, [`table`]), and so does the runtime from a lowered
//! kernel block (its library matmuls). Each operator is one matcher, one
//! file: it fills the table's iterators into the operator's groups by the
//! tensors they appear in (OLLIE's step 1), checks each group's count
//! (step 2) and each iterator's coefficients and places (step 3), and
//! returns the operator's shape or the list of [`Mismatch`]es, precise
//! enough for a derivation search to pick its next rewrite ([`distance`]).
//!
//! Requires nothing beyond each function's doc. Guarantees: no function
//! here panics on any input; every refusal is a mismatch list.

mod comprehension;
mod conv;
mod conv_transpose;
mod elementwise;
mod g2bmm;
mod matmul;
mod mismatch;
mod table;

use std::collections::HashMap;

pub use comprehension::{table, table_with};
pub use conv::{conv, ConvLayout, ConvShape, Role};
pub use conv_transpose::conv_transpose;
pub use elementwise::{elementwise, ElementwiseShape};
pub use g2bmm::{g2bmm, gbmm, Band, BandLayout, BandShape};
pub use matmul::{matmul, matmul_as, BatchDim, MatmulShape, Strided};
pub use mismatch::{distance, Mismatch};
pub use table::{row_major, Access, Affine, Combine, Condition, Group, Iter, Subscript, Table};

use crate::{Comprehension, Def};

/// The operators a table is matched against.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operator {
    Matmul,
    Conv,
    ConvTranspose,
    G2bmm,
    Gbmm,
    Elementwise,
}

impl Operator {
    pub const ALL: [Operator; 6] = [
        Operator::Matmul,
        Operator::Conv,
        Operator::ConvTranspose,
        Operator::G2bmm,
        Operator::Gbmm,
        Operator::Elementwise,
    ];
}

/// What a matcher found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Shape {
    Matmul(MatmulShape),
    Conv(ConvShape),
    ConvTranspose(ConvShape),
    Band(BandShape),
    Elementwise(ElementwiseShape),
}

/// One operator's match of a table: its shape or its mismatches.
pub type Match = (Operator, Result<Shape, Vec<Mismatch>>);

/// `t` matched against `op`.
pub fn match_operator(t: &Table, op: Operator) -> Result<Shape, Vec<Mismatch>> {
    match op {
        Operator::Matmul => matmul(t).map(Shape::Matmul),
        Operator::Conv => conv(t).map(Shape::Conv),
        Operator::ConvTranspose => conv_transpose(t).map(Shape::ConvTranspose),
        Operator::G2bmm => g2bmm(t).map(Shape::Band),
        Operator::Gbmm => gbmm(t).map(Shape::Band),
        Operator::Elementwise => elementwise(t).map(Shape::Elementwise),
    }
}

/// `t` matched against every operator, in [`Operator::ALL`]'s order.
pub fn match_table(t: &Table) -> Vec<Match> {
    Operator::ALL
        .iter()
        .map(|&op| (op, match_operator(t, op)))
        .collect()
}

/// Comprehension `c` of `def` (at concrete sizes, integer scalars bound by
/// `scalars`) matched against every operator: when no table can be built,
/// every operator gets the builder's mismatches.
pub fn match_comprehension(
    def: &Def,
    c: &Comprehension,
    scalars: &HashMap<String, i64>,
) -> Vec<Match> {
    match table_with(def, c, scalars) {
        Ok(t) => match_table(&t),
        Err(m) => Operator::ALL
            .iter()
            .map(|&op| (op, Err(m.clone())))
            .collect(),
    }
}
