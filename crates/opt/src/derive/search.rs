//! The hybrid derivation search (OLLIE §5.2, Algorithm 2): explorative
//! derivation breadth-first up to a depth, each state reached twice
//! pruned by its fingerprint, and from every state a guided derivation
//! toward the predefined operators that completes it if it can.
//!
//! After every rule application the normalizations run to a fixed point
//! (copies inlined, boxes tightened), so that the explorative depth counts
//! the steps that open new forms. The guided derivation instantiates the
//! state's open statements in order: a statement the iterator mapping
//! table matches exactly becomes its operator; one whose only mismatches
//! are layouts gets them fixed first ([`super::guided`]); a memory-bound
//! one becomes an eOperator; any other leaves the state incomplete.
//!
//! Requires a state of a def at bound sizes. Guarantees: every complete
//! state returned was reached from the start by rule applications alone,
//! each listed in its steps; the search stops at its depth, its state
//! limit or its deadline, whichever comes first, and says which.

use std::collections::{HashSet, VecDeque};
use std::time::Instant;

use super::fingerprint::fingerprint;
use super::guided;
use super::rules::{Applied, Rule, EXPLORATIVE, INTER_EXPRESSION, NORMALIZE};
use super::state::{State, Status};
use super::Step;

/// How far the search goes.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub depth: usize,
    pub max_states: usize,
    pub deadline: Option<Instant>,
}

/// A complete state and how it was reached.
#[derive(Clone, Debug)]
pub struct Found {
    pub state: State,
    pub steps: Vec<Step>,
    /// The explorative state it was completed from, and its steps: where
    /// the next expression's derivation starts when this one is chosen.
    base: (State, Vec<Step>),
}

/// What the search saw.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    /// States expanded, and states pruned as reached before.
    pub states: usize,
    pub pruned: usize,
    /// Whether a limit other than the depth stopped the search.
    pub cut: Option<&'static str>,
}

/// Every complete state the search reaches from `start` in its last
/// expression's derivation, and what it saw. Each expression (an original
/// statement, or a part expression splitting cut off) is derived in
/// turn, from the state its predecessor's cheapest completion (by `rank`)
/// was made from, as OLLIE's Algorithm 1 derives each expression of a
/// program on its own; `progress` is told the states expanded so far and
/// the current depth.
pub fn search(
    start: State,
    limits: Limits,
    rank: &dyn Fn(&State) -> f64,
    progress: &dyn Fn(usize, usize),
) -> (Vec<Found>, Stats) {
    let mut stats = Stats::default();
    let (mut current, mut steps) = normalize(start, Vec::new());
    let mut done: HashSet<usize> = HashSet::new();
    let mut last: Vec<Found> = Vec::new();
    while let Some(root) = current
        .root
        .iter()
        .copied()
        .filter(|r| !done.contains(r))
        .min()
    {
        done.insert(root);
        let found = explore(&current, &steps, root, limits, &mut stats, progress);
        if stats.cut.is_some() && found.is_empty() {
            break;
        }
        let Some(best) = found
            .iter()
            .min_by(|a, b| rank(&a.state).total_cmp(&rank(&b.state)))
        else {
            continue;
        };
        (current, steps) = best.base.clone();
        last = found;
        if stats.cut.is_some() {
            break;
        }
    }
    progress(stats.states, limits.depth);
    (last, stats)
}

/// Algorithm 2 on expression `root` of `start`: breadth-first to the
/// depth, rules applied to that expression's open statements only.
fn explore(
    start: &State,
    steps: &[Step],
    root: usize,
    limits: Limits,
    stats: &mut Stats,
    progress: &dyn Fn(usize, usize),
) -> Vec<Found> {
    let mut found: Vec<Found> = Vec::new();
    let mut complete_seen: HashSet<u64> = HashSet::new();
    let mut seen: HashSet<u64> = HashSet::new();
    let mut queue: VecDeque<(State, Vec<Step>, usize)> = VecDeque::new();
    queue.push_back((start.clone(), steps.to_vec(), 0));
    // Algorithm 1's inter-expression rules, once, on the expression as
    // given: each result is a starting point of its own.
    for at in (0..start.statements()).filter(|&k| start.root[k] == root) {
        for rule in INTER_EXPRESSION {
            let mut out = Vec::new();
            rule.apply(start, at, &mut out);
            for Applied { state: next, what } in out {
                let mut s = steps.to_vec();
                s.push(Step::new(*rule, what, &next));
                let (next, s) = normalize(next, s);
                queue.push_back((next, s, 0));
            }
        }
    }
    while let Some((state, steps, depth)) = queue.pop_front() {
        if !seen.insert(fingerprint(&state)) {
            stats.pruned += 1;
            continue;
        }
        stats.states += 1;
        if stats.states.is_multiple_of(64) {
            progress(stats.states, depth);
        }
        for (done, more) in guided::complete(&state) {
            if complete_seen.insert(fingerprint(&done)) {
                let mut all = steps.clone();
                all.extend(more);
                found.push(Found {
                    state: done,
                    steps: all,
                    base: (state.clone(), steps.clone()),
                });
            }
        }
        if depth >= limits.depth {
            continue;
        }
        if limits.deadline.is_some_and(|d| Instant::now() >= d) {
            stats.cut = Some("time");
            break;
        }
        if stats.states >= limits.max_states {
            stats.cut = Some("states");
            break;
        }
        for at in 0..state.statements() {
            if state.status[at] != Status::Open || state.root[at] != root {
                continue;
            }
            for rule in EXPLORATIVE {
                let mut out = Vec::new();
                rule.apply(&state, at, &mut out);
                for Applied { state: next, what } in out {
                    let mut s = steps.clone();
                    s.push(Step::new(*rule, what, &next));
                    let (next, s) = normalize(next, s);
                    queue.push_back((next, s, depth + 1));
                }
            }
        }
    }
    found
}

/// The normalizations applied until none applies (bounded: each shrinks
/// the program or a box, but a bound keeps a surprise finite).
pub fn normalize(mut state: State, mut steps: Vec<Step>) -> (State, Vec<Step>) {
    for _ in 0..64 {
        let mut applied = None;
        'find: for at in 0..state.statements() {
            for rule in NORMALIZE {
                let mut out = Vec::new();
                rule.apply(&state, at, &mut out);
                if let Some(a) = out.into_iter().next() {
                    applied = Some((*rule, a));
                    break 'find;
                }
            }
        }
        let Some((rule, a)) = applied else { break };
        steps.push(Step::new(rule, a.what, &a.state));
        state = a.state;
    }
    (state, steps)
}

impl Step {
    pub fn new(rule: &dyn Rule, what: String, after: &State) -> Step {
        Step {
            rule: rule.name(),
            what,
            after: std::sync::Arc::new(after.clone()),
        }
    }
}
