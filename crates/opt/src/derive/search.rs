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

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

use rayon::prelude::*;

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
    pub state: Arc<State>,
    pub steps: Vec<Step>,
    /// The explorative state it was completed from, and its steps: where
    /// the next expression's derivation starts when this one is chosen.
    base: Path,
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
    let mut current = normalize(Arc::new(start), Trail::default());
    let mut done: HashSet<usize> = HashSet::new();
    let mut last: Vec<Found> = Vec::new();
    while let Some(root) = current
        .0
        .root
        .iter()
        .copied()
        .filter(|r| !done.contains(r))
        .min()
    {
        done.insert(root);
        let found = explore(&current, root, limits, &mut stats, progress);
        if stats.cut.is_some() && found.is_empty() {
            break;
        }
        let Some(best) = found
            .iter()
            .min_by(|a, b| rank(&a.state).total_cmp(&rank(&b.state)))
        else {
            continue;
        };
        current = best.base.clone();
        last = found;
        if stats.cut.is_some() {
            break;
        }
    }
    progress(stats.states, limits.depth);
    (last, stats)
}

/// Algorithm 2 on expression `root` of `start`: breadth-first to the
/// depth, rules applied to that expression's open statements only. Each
/// level's states are completed and expanded in parallel (they are
/// independent); fingerprints are checked and results merged in the
/// level's order, so the outcome does not depend on the threads.
fn explore(
    start: &Path,
    root: usize,
    limits: Limits,
    stats: &mut Stats,
    progress: &dyn Fn(usize, usize),
) -> Vec<Found> {
    let mut found: Vec<Found> = Vec::new();
    let mut complete_seen: HashSet<u64> = HashSet::new();
    let mut seen: HashSet<u64> = HashSet::new();
    let mut level: Vec<Path> = vec![start.clone()];
    // Algorithm 1's inter-expression rules, once, on the expression as
    // given: each result is a starting point of its own.
    let first = &start.0;
    for at in (0..first.statements()).filter(|&k| first.root[k] == root) {
        level.extend(successors(start, at, INTER_EXPRESSION));
    }
    for depth in 0..=limits.depth {
        let prints: Vec<u64> = level.par_iter().map(|(s, _)| fingerprint(s)).collect();
        let mut fresh: Vec<Path> = Vec::with_capacity(level.len());
        for (path, print) in level.into_iter().zip(prints) {
            if seen.insert(print) {
                fresh.push(path);
            } else {
                stats.pruned += 1;
            }
        }
        let room = limits.max_states.saturating_sub(stats.states);
        if fresh.len() > room {
            fresh.truncate(room);
            stats.cut = Some("states");
        }
        stats.states += fresh.len();
        progress(stats.states, depth);
        let expand = depth < limits.depth && stats.cut.is_none();
        let late = || limits.deadline.is_some_and(|d| Instant::now() >= d);
        type Completion = (Arc<State>, Vec<Step>, u64);
        let results: Vec<(Vec<Completion>, Option<Vec<Path>>)> = fresh
            .par_iter()
            .map(|path| {
                let state = &path.0;
                let completions = guided::complete(state)
                    .into_iter()
                    .map(|(done, more)| {
                        let print = fingerprint(&done);
                        (done, more, print)
                    })
                    .collect();
                let children = (expand && !late()).then(|| {
                    (0..state.statements())
                        .filter(|&at| state.status[at] == Status::Open && state.root[at] == root)
                        .flat_map(|at| successors(path, at, EXPLORATIVE))
                        .collect()
                });
                (completions, children)
            })
            .collect();
        let mut next: Vec<Path> = Vec::new();
        for (path, (completions, children)) in fresh.iter().zip(results) {
            for (done, more, print) in completions {
                if complete_seen.insert(print) {
                    let mut steps = path.1.to_vec();
                    steps.extend(more);
                    found.push(Found {
                        state: done,
                        steps,
                        base: path.clone(),
                    });
                }
            }
            match children {
                Some(children) => next.extend(children),
                None if expand => stats.cut = Some("time"),
                None => {}
            }
        }
        if stats.cut.is_some() || next.is_empty() {
            break;
        }
        level = next;
    }
    found
}

/// A state and the steps that reached it.
type Path = (Arc<State>, Trail);

/// The steps of a path, shared with the paths it branched from: a
/// breadth-first search holds many paths with long common prefixes, and
/// extending one copies nothing.
#[derive(Clone, Debug, Default)]
struct Trail(Option<Arc<(Step, Trail)>>);

impl Trail {
    fn push(&self, step: Step) -> Trail {
        Trail(Some(Arc::new((step, self.clone()))))
    }

    fn to_vec(&self) -> Vec<Step> {
        let mut steps = Vec::new();
        let mut at = &self.0;
        while let Some(link) = at {
            steps.push(link.0.clone());
            at = &link.1 .0;
        }
        steps.reverse();
        steps
    }
}

/// Every state one application of one of `rules` at statement `at` of
/// the path's state makes, normalized, with its steps.
fn successors((state, steps): &Path, at: usize, rules: &[&dyn Rule]) -> Vec<Path> {
    let mut paths = Vec::new();
    for rule in rules {
        let mut out = Vec::new();
        rule.apply(state, at, &mut out);
        for Applied { state: next, what } in out {
            let next = Arc::new(next);
            let trail = steps.push(Step::new(*rule, what, &next));
            paths.push(normalize(next, trail));
        }
    }
    paths
}

/// The normalizations applied until none applies (bounded: each shrinks
/// the program or a box, but a bound keeps a surprise finite).
fn normalize(mut state: Arc<State>, mut steps: Trail) -> Path {
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
        state = Arc::new(a.state);
        steps = steps.push(Step::new(rule, a.what, &state));
    }
    (state, steps)
}

impl Step {
    /// The step by `rule` to `after`, which it shares.
    pub fn new(rule: &dyn Rule, what: String, after: &Arc<State>) -> Step {
        Step {
            rule: rule.name(),
            what,
            after: Arc::clone(after),
        }
    }
}
