//! Why a table is not an operator: the mismatches a matcher reports.
//!
//! A guided derivation search reads these to choose its next rewrite, so
//! each names the iterators and the tensor at fault: an iterator group with
//! the wrong iterators (OLLIE's step 2), a coefficient that breaks the
//! operator's pattern (step 3), or a group whose iterators do not nest in a
//! tensor's layout (a layout change would fix it).
//!
//! Requires nothing. Guarantees: [`distance`] is 0 exactly for an empty
//! list and never overflows.

use std::fmt;

use super::table::Group;

/// One reason a table does not match an operator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mismatch {
    /// The body is not what the operator computes: not a product of two
    /// reads, the wrong number of inputs, or not a sum.
    NotAProduct,
    /// The iterators of `group` are `found`; the operator has `want` there.
    Group {
        group: Group,
        want: usize,
        found: Vec<String>,
    },
    /// `iter`'s coefficient (or place) in `tensor` is `found`, the
    /// operator's pattern wants `want`.
    Stride {
        tensor: String,
        iter: String,
        found: i64,
        want: String,
    },
    /// The iterators `iters` of `group` do not nest in `tensor`'s layout,
    /// so they are not one dimension of the operator; a layout change of
    /// `tensor` would make them one.
    Layout {
        tensor: String,
        group: Group,
        iters: Vec<String>,
    },
    /// Something the table cannot express or the matcher does not handle.
    Unsupported(String),
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mismatch::NotAProduct => f.write_str("the body is not a sum of products of two reads"),
            Mismatch::Group { group, want, found } => write!(
                f,
                "group {group} has {} iterator(s) ({}), the operator has {want}",
                found.len(),
                found.join(" ")
            ),
            Mismatch::Stride {
                tensor,
                iter,
                found,
                want,
            } => write!(
                f,
                "{iter} has coefficient {found} in {tensor}, the operator wants {want}"
            ),
            Mismatch::Layout {
                tensor,
                group,
                iters,
            } => write!(
                f,
                "iterators {} of group {group} do not nest in the layout of {tensor}",
                iters.join(" ")
            ),
            Mismatch::Unsupported(why) => write!(f, "unsupported: {why}"),
        }
    }
}

/// How many derivation steps a guided search would need to turn the
/// statement into the operator: one per `Group`, `Stride` or `Layout`
/// mismatch (each is fixed by one rewrite: splitting or merging a group's
/// iterators, separating two iterators sharing a dimension, or one layout
/// change), and `usize::MAX` when a `NotAProduct` or `Unsupported`
/// mismatch says no such rewrite is known.
pub fn distance(mismatches: &[Mismatch]) -> usize {
    if mismatches
        .iter()
        .any(|m| matches!(m, Mismatch::NotAProduct | Mismatch::Unsupported(_)))
    {
        return usize::MAX;
    }
    mismatches.len()
}
