//! What a step costs, for profiles and GFLOP/s figures: floating-point
//! operations and the bytes of the buffers it touches.
//!
//! A block runs the product of its free indices' ranges points (passed
//! indices run once; constraints are ignored, so a padded convolution's
//! skipped points count: the figure is an upper bound there), except that
//! an index the constraints pin to a quotient of the others (the helper
//! index of a `/` or `%` in a subscript, `a q <= e <= a q + a - 1`) counts
//! once. Each point counts one operation per arithmetic intrinsic on
//! floats and one per store that aggregates (`add`, `mul`, `min`, `max`)
//! into a float view.

use kernel::{Affine, Agg, Block, Op, StmtKind};

/// The floating-point operations of one run of `b`.
pub fn flops(b: &Block) -> u64 {
    let points: u64 = b
        .idxs
        .iter()
        .filter(|i| i.affine.is_none() && !pinned(&i.name, &b.constraints))
        .fold(1u64, |a, i| a.saturating_mul(i.range));
    let mut per_point = 0u64;
    for s in &b.stmts {
        match &s.kind {
            StmtKind::Intrinsic { op, dtype, .. }
                if dtype.is_float() && !matches!(op, Op::Select | Op::Cast) =>
            {
                per_point += 1;
            }
            StmtKind::Store { into, .. }
                if b.refinement(into)
                    .is_some_and(|r| r.agg != Agg::Assign && r.dtype.is_float()) =>
            {
                per_point += 1;
            }
            StmtKind::Block(c) => per_point = per_point.saturating_add(flops(c)),
            _ => {}
        }
    }
    points.saturating_mul(per_point)
}

/// Whether two of `constraints` say `a q <= e <= a q + a - 1` for index
/// `q`, some a > 0 and an expression e of other indices: `q` is then
/// `floor(e / a)`, one value per point of the others.
fn pinned(q: &str, constraints: &[Affine]) -> bool {
    constraints.iter().any(|lo| {
        let a = -lo.terms.get(q).copied().unwrap_or(0);
        a > 0
            && constraints.iter().any(|hi| {
                hi.terms.get(q) == Some(&a)
                    && hi.constant + lo.constant == a - 1
                    && hi.terms.len() == lo.terms.len()
                    && lo.terms.iter().all(|(k, &v)| hi.terms.get(k) == Some(&-v))
            })
    })
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    /// The flops of def `name` of `src` lowered with `sizes`, summed over
    /// its steps.
    fn total(src: &str, name: &str, sizes: &[(&str, i64)]) -> u64 {
        let p = tc::check_source(src).unwrap().program;
        let sizes: HashMap<String, i64> = sizes.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        let b = kernel::lower_def(&p, name, &sizes).unwrap();
        b.stmts
            .iter()
            .map(|s| match &s.kind {
                kernel::StmtKind::Block(c) => super::flops(c),
                _ => 0,
            })
            .sum()
    }

    #[test]
    fn a_matmul_costs_two_operations_per_multiply_accumulate() {
        let src = "def mm(float(M,K) A, float(K,N) B) -> (C) {\n  C(m,n) +=! A(m,k) * B(k,n)\n}\n";
        assert_eq!(
            total(src, "mm", &[("M", 3), ("K", 5), ("N", 7)]),
            2 * 3 * 5 * 7
        );
    }

    /// A `/` and a `%` in a subscript bring helper indices the constraints
    /// pin; a point of the comprehension still costs one addition.
    #[test]
    fn helper_indices_of_divisions_count_once() {
        let src = "def d(float(N) X) -> (Y) {\n  Y(i, j) +=! X(i / 3 + j % 2) where i in 0:6, j in 0:4\n}\n";
        assert_eq!(total(src, "d", &[("N", 8)]), 6 * 4);
    }
}
