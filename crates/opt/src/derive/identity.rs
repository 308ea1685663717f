//! Identity eOperators eliminated (OLLIE §4.3.2): a complete program
//! whose statement copies a temporary whole, unchanged, into a tensor,
//! `X(z) = T(z)`, has `T`'s statement write `X` instead and the copy
//! dropped — the expression fusion of a copy with its producer, the
//! direction [`super::rules`]' expression fusion (a copy into its reader)
//! does not take.
//!
//! Requires a state. Guarantees: a copy is eliminated only when `T` is a
//! temporary of `X`'s shape and element type, written by one statement
//! whose left-hand iterators cover all of it and read by the copy alone,
//! the copy's subscripts are its own iterators in order over all of `X`,
//! and `X` is written by the copy alone and read by no statement before
//! it: `X` then holds what `T` held, computed where `T` was.

use std::sync::Arc;

use ir::{Expr, Reduction};

use super::state::{range, State};
use super::Step;

/// `state` with its identity copies eliminated, and a step for each.
pub fn eliminate(state: &State) -> (State, Vec<Step>) {
    let mut s = state.clone();
    let mut steps = Vec::new();
    while let Some((copy, writer)) = (0..s.statements()).find_map(|k| identity(&s, k)) {
        let x = s.comp(copy).tensor.clone();
        let t = s.comp(writer).tensor.clone();
        s.comp_mut(writer).tensor = x.clone();
        s.remove(copy);
        s.prune();
        steps.push(Step {
            rule: "expression fusion",
            what: format!(
                "the identity eOperator `{x}` = `{t}` eliminated: `{t}` written as `{x}`"
            ),
            after: Arc::new(s.clone()),
        });
    }
    (s, steps)
}

/// When statement `k` is an identity copy of a temporary, `k` and the
/// temporary's one writer.
fn identity(s: &State, k: usize) -> Option<(usize, usize)> {
    let c = s.comp(k);
    let Expr::Read(t, ix) = &c.body else {
        return None;
    };
    let x = &c.tensor;
    let shape = s.shape(x)?;
    let whole = |comp: &ir::Comprehension, shape: &[i64]| {
        comp.indices.len() == shape.len()
            && comp
                .indices
                .iter()
                .zip(shape)
                .all(|(i, &n)| range(comp, i) == Some((0, n)))
    };
    let in_order = ix.len() == c.indices.len()
        && ix
            .iter()
            .zip(&c.indices)
            .all(|(e, i)| matches!(e, Expr::Iter(n) if n == i));
    if c.op != Reduction::Assign
        || !c.lets.is_empty()
        || !in_order
        || !whole(c, &shape)
        || !s.is_temp(t)
        || s.shape(t)? != shape
        || s.dtype(t)? != s.dtype(x)?
        || s.writers(x) != [k]
        || s.readers(t) != [k]
        || s.readers(x).iter().any(|&r| r <= k)
    {
        return None;
    }
    let [w] = s.writers(t)[..] else {
        return None;
    };
    (w < k && whole(s.comp(w), &shape)).then_some((k, w))
}
