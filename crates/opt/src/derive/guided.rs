//! Guided derivation (OLLIE §5.2): from a state, toward the predefined
//! operators, until every statement is instantiated.
//!
//! The open statements are taken in order. A statement gets every option
//! it has: each operator it matches exactly; each layout fix the matching
//! proposes for a mismatch of layouts only (a scope's dimensions
//! permuted, or an input read through a copy in the layout the operator
//! wants — an eOperator, computed at load when the input is a weight),
//! then matched; and, when memory-bound, an eOperator. At most
//! [`MAX_COMPLETIONS`] partial completions are kept at a time.
//!
//! Requires a state. Guarantees: every returned state is complete and
//! reached from the given one by the listed rule applications.

use std::sync::Arc;

use super::matching;
use super::rules::{Applied, INSTANTIATION, PREPARE};
use super::state::{State, Status};
use super::Step;

/// How many ways to complete one state are followed at once.
pub const MAX_COMPLETIONS: usize = 8;

/// The completions of `state`, each with the steps that made it.
pub fn complete(state: &Arc<State>) -> Vec<(Arc<State>, Vec<Step>)> {
    let mut partial: Vec<(Arc<State>, Vec<Step>)> = vec![(Arc::clone(state), Vec::new())];
    let mut done = Vec::new();
    // Each round instantiates one statement of every partial completion,
    // so the rounds are bounded by the statements (fixes add at most one
    // statement each, already instantiated).
    for _ in 0..4 * state.statements() + 8 {
        let mut next = Vec::new();
        for (s, steps) in partial {
            let Some(k) = (0..s.statements()).find(|&k| s.status[k] == Status::Open) else {
                done.push((s, steps));
                continue;
            };
            // The options of a partial completion that would find no room
            // are not worth computing.
            if next.len() >= MAX_COMPLETIONS {
                continue;
            }
            for (o, more) in options(&s, k) {
                if next.len() < MAX_COMPLETIONS {
                    let mut all = steps.clone();
                    all.extend(more);
                    next.push((o, all));
                }
            }
        }
        if next.is_empty() {
            break;
        }
        partial = next;
    }
    done
}

/// The ways to instantiate open statement `k` of `s`: as it is, and as
/// the preparing rules leave it.
fn options(s: &State, k: usize) -> Vec<(Arc<State>, Vec<Step>)> {
    let mut out = instantiations(s, k);
    for rule in PREPARE {
        let mut prepared = Vec::new();
        rule.apply(s, k, &mut prepared);
        for a in prepared {
            let prepared = Arc::new(a.state);
            let first = Step::new(*rule, a.what, &prepared);
            for (o, mut steps) in instantiations(&prepared, k) {
                steps.insert(0, first.clone());
                out.push((o, steps));
            }
        }
    }
    out
}

/// The ways to instantiate open statement `k` of `s` as it is.
fn instantiations(s: &State, k: usize) -> Vec<(Arc<State>, Vec<Step>)> {
    let mut out = Vec::new();
    for rule in INSTANTIATION {
        let mut applied = Vec::new();
        rule.apply(s, k, &mut applied);
        out.extend(applied.into_iter().map(|a| {
            let state = Arc::new(a.state);
            let step = Step::new(*rule, a.what, &state);
            (state, vec![step])
        }));
    }
    let fixes = matching::fixes(s, k)
        .into_iter()
        .chain(matching::split_fixes(s, k));
    for (fixed, steps) in fixes {
        // The fixed statement keeps its place: fixes insert before it only
        // what they instantiate themselves.
        let Some(at) = (0..fixed.statements()).find(|&j| fixed.status[j] == Status::Open) else {
            continue;
        };
        let mut applied: Vec<Applied> = Vec::new();
        INSTANTIATION[0].apply(&fixed, at, &mut applied);
        for a in applied {
            let state = Arc::new(a.state);
            let mut all = steps.clone();
            all.push(Step::new(INSTANTIATION[0], a.what, &state));
            out.push((state, all));
        }
    }
    out
}
