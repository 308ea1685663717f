//! The program optimizer (PET §6 over Tensat's e-graph): a def at concrete
//! sizes saturated by the proved rewrite rules, the cheapest candidates
//! by analytic estimate extracted as a beam of `top_k`, each measured, and
//! the fastest of them and the original kept, proved equal to the
//! original by the verifier before it is returned (region by region,
//! [`prove`]).
//!
//! Requires a program holding the prelude and the def, sizes binding
//! every size symbol and integer scalar of the def, rules loaded against
//! the program and a [`CostModel`]. Guarantees: the original def is always
//! a candidate, so the result is never measured slower than it; a result
//! other than the original has passed `verify::verify` against it (when
//! [`Options::verify`] is on, the default), and a failed proof is an
//! internal error, never a returned program; the budget bounds the search
//! (saturation takes at most 20% of it, derivations end at 30%, mutants
//! at 40%, no candidate is measured after 60%, the comparison side by
//! side fits in what is left up to 70% or a tenth of it; a candidate's measurement that
//! started in time, the original's measurement and the final proof are
//! not cut).

pub mod applications;
pub mod costs;
pub mod derivation;
pub mod explain;
pub mod mutate;
pub mod prove;

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ir::{Def, Program};

use crate::cost::CostModel;
use crate::egraph::extract::{extract_top, Choice};
use crate::egraph::{rewrite, Limits, Search};
use crate::rules::Rule;

pub use explain::{print_explanation, Step};

/// How the optimizer searches.
#[derive(Clone, Debug)]
pub struct Options {
    /// The whole search's time.
    pub budget: Duration,
    /// How many candidates the extraction hands to measurement.
    pub top_k: usize,
    /// Saturation's limits (its time is also capped at 20% of the budget).
    pub limits: Limits,
    /// Prove the result equal to the original before returning it.
    pub verify: bool,
    /// Decide among the candidates by measured times; off, by the
    /// analytic estimate alone (no compiling, same answer on every run).
    pub measure: bool,
    /// The mutation depth (PET §4: operators per mutant, layouts of
    /// weights not counted); 0 turns mutants off.
    pub depth: usize,
    /// The explorative depth of expression derivation (OLLIE) on the
    /// contractions; 0 turns derivation off.
    pub derive_depth: usize,
    /// The def's inputs known when it is loaded (a model's weights): what
    /// reads only them runs once, at load, so the extraction counts it as
    /// free. The cost model is expected to time candidates the same way.
    pub constants: BTreeSet<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            budget: Duration::from_secs(10),
            top_k: 5,
            limits: Limits::default(),
            verify: true,
            measure: true,
            depth: 3,
            derive_depth: crate::derive::DEFAULT_DEPTH,
            constants: BTreeSet::new(),
        }
    }
}

impl Options {
    /// Whether the options leave the search something to do.
    pub fn check(&self) -> Result<(), String> {
        if self.budget.is_zero() {
            return Err("a search budget of 0 seconds leaves no time to search".to_string());
        }
        if self.top_k == 0 {
            return Err("a top-k of 0 keeps no candidate to decide on".to_string());
        }
        Ok(())
    }
}

/// What the search reports while it runs.
#[derive(Clone, Debug)]
pub enum Event {
    /// Saturation ended with this many classes and nodes.
    Saturated {
        classes: usize,
        nodes: usize,
        stopped: String,
    },
    /// Candidate `index` (0 is the original) of `count` was measured.
    Measured {
        index: usize,
        count: usize,
        time: Duration,
        best: Duration,
    },
    /// The result is being proved equal to the original.
    Verifying,
}

/// A candidate the search decided on.
#[derive(Clone, Debug)]
pub struct Candidate {
    /// Its def's name in [`Outcome::candidates_program`].
    pub name: String,
    /// The analytic estimate of its run.
    pub estimate: Duration,
    /// Its measured time (`None` when the search does not measure).
    pub measured: Option<Duration>,
}

/// What the optimizer found.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The program with the def replaced by the fastest candidate (the
    /// original when nothing was faster).
    pub program: Program,
    /// Whether the def changed.
    pub changed: bool,
    /// The original's time and the result's: measured, or estimated when
    /// the search does not measure.
    pub original_time: Duration,
    pub time: Duration,
    /// The other forms the search found for each original statement (see
    /// [`explain::found`]).
    pub found: Vec<(String, Vec<String>)>,
    /// The steps the result applies, in the order of its statements.
    pub steps: Vec<Step>,
    /// Whether the times are measured.
    pub measured: bool,
    /// The times that decide, measured side by side: the original's, and
    /// those of the fastest candidates of the separate measurements (empty
    /// when none came close, or not measuring).
    pub side_by_side: Vec<(String, Duration)>,
    /// Every candidate decided on, the original first.
    pub candidates: Vec<Candidate>,
    /// The program with every candidate def beside the original.
    pub candidates_program: Program,
    /// Why saturation stopped, and the e-graph's size then (mutants
    /// added).
    pub stopped: String,
    /// What the mutation phase did.
    pub mutation: mutate::Report,
    /// What the derivation phase did.
    pub derivation: derivation::Report,
    pub classes: usize,
    pub nodes: usize,
    /// The verifier's verdict on the result (`None` when unchanged or not
    /// verified).
    pub proof: Option<String>,
    /// Why the def was not searched (a statement the e-graph does not
    /// take); the result is then the original.
    pub not_searched: Option<String>,
    /// The whole search's time.
    pub elapsed: Duration,
    /// Where it went: each phase's name and time, in order.
    pub phases: Vec<(&'static str, Duration)>,
    /// Candidates left out because their proof would take too long, and
    /// why.
    pub unprovable: Vec<(String, String)>,
}

/// Why the optimizer gave no result.
#[derive(Clone, Debug, PartialEq)]
pub enum Error<E> {
    /// The options leave nothing to do (a budget or a top-k of 0), or the
    /// def is not in the program.
    Usage(String),
    /// The cost model failed to measure a candidate.
    Cost(E),
    /// A bug: a candidate that could not be written, or a result the
    /// verifier did not prove.
    Internal(String),
}

/// The rules tessera ships, loaded against `program`.
pub fn shipped_rules(program: &Program) -> Result<Vec<Rule>, String> {
    crate::rules::load(crate::rules::REWRITES, "ops/rewrites.rules", program)
}

/// Optimizes def `name` of `program` at `sizes` with `rules`, timing
/// candidates by `model`; `progress` hears the search's events.
pub fn optimize<M: CostModel>(
    program: &Program,
    name: &str,
    sizes: &HashMap<String, i64>,
    rules: &[Rule],
    model: &M,
    options: &Options,
    progress: &mut dyn FnMut(Event),
) -> Result<Outcome, Error<M::Error>> {
    let start = Instant::now();
    options.check().map_err(Error::Usage)?;
    let original = program
        .def(name)
        .ok_or_else(|| Error::Usage(format!("no def named `{name}`")))?;
    let estimate = |p: &Program, d: &str| {
        let e = model.estimate(p, d, sizes).map_err(Error::Cost)?;
        Ok(Duration::from_secs_f64(e.seconds.max(0.0)))
    };
    let time_of = |p: &Program, d: &str| -> Result<(Duration, Option<Duration>), Error<M::Error>> {
        let e = estimate(p, d)?;
        if !options.measure {
            return Ok((e, None));
        }
        Ok((e, Some(model.measure(p, d, sizes).map_err(Error::Cost)?)))
    };
    let mut phase = Phases::new();
    let (original_estimate, original_measured) = time_of(program, name)?;
    phase.end("measuring the original");
    let original_time = original_measured.unwrap_or(original_estimate);
    let mut outcome = Outcome {
        program: program.clone(),
        changed: false,
        original_time,
        time: original_time,
        found: Vec::new(),
        steps: Vec::new(),
        measured: options.measure,
        side_by_side: Vec::new(),
        candidates: vec![Candidate {
            name: name.to_string(),
            estimate: original_estimate,
            measured: original_measured,
        }],
        candidates_program: program.clone(),
        stopped: String::new(),
        mutation: mutate::Report::default(),
        derivation: derivation::Report::default(),
        classes: 0,
        nodes: 0,
        proof: None,
        not_searched: None,
        elapsed: Duration::ZERO,
        phases: Vec::new(),
        unprovable: Vec::new(),
    };
    progress(Event::Measured {
        index: 0,
        count: 1,
        time: original_time,
        best: original_time,
    });
    let mut search = match Search::new(Arc::new(program.clone()), name, sizes) {
        Ok(s) => s,
        Err(why) => {
            outcome.not_searched = Some(why);
            outcome.elapsed = start.elapsed();
            return Ok(outcome);
        }
    };
    search.constants = options.constants.iter().cloned().collect();
    let rewrites = rewrite::rewrites(rules).map_err(Error::Internal)?;
    let limits = Limits {
        time: options.limits.time.min(options.budget / 5),
        ..options.limits
    };
    search.saturate(&rewrites, limits);
    phase.end("saturation");
    if options.derive_depth > 0 {
        // As for mutants: deciding by estimates is the same on every run.
        let deadline = options
            .measure
            .then(|| start + options.budget.mul_f64(DERIVATION_END));
        outcome.derivation =
            derivation::add_derived(&mut search, model, options.derive_depth, deadline)
                .map_err(Error::Internal)?;
        phase.end("derivation");
    }
    if options.depth > 0 {
        // Deciding by estimates gives the same answer on every run, so
        // the clock does not cut its mutants either.
        let deadline = options
            .measure
            .then(|| start + options.budget.mul_f64(MUTANTS_END));
        outcome.mutation = mutate::add_mutants(&mut search, model, options.depth, deadline)
            .map_err(Error::Internal)?;
        phase.end("mutants");
    }
    let searched = Arc::clone(&search.egraph.analysis.program);
    outcome.stopped = search.stopped.clone().unwrap_or_default();
    outcome.classes = search.egraph.number_of_classes();
    outcome.nodes = search.egraph.total_number_of_nodes();
    outcome.found = explain::found(&search);
    progress(Event::Saturated {
        classes: outcome.classes,
        nodes: outcome.nodes,
        stopped: outcome.stopped.clone(),
    });

    let mut costs = costs::EstimateCosts::new(model, &searched);
    let choices = extract_top(&search, &mut costs, options.top_k);
    let mut work = (*searched).clone();
    // A choice that writes the original back is the original, already
    // a candidate; one of some of its nodes only (a statement found to
    // be redundant) is not.
    let mut seen = vec![body_text(program, original)];
    let mut written = Vec::new();
    for (k, choice) in choices.iter().enumerate() {
        let cand = format!("{name}__candidate{}", k + 1);
        let def = search
            .to_def(original, choice, &cand)
            .map_err(Error::Internal)?;
        let text = body_text(&work, &def);
        if seen.contains(&text) {
            continue;
        }
        seen.push(text);
        // The original under other tensor names is the original too.
        let plan = prove::plan(&search, original, choice).map_err(Error::Internal)?;
        if plan.same {
            continue;
        }
        let method = prove::Method::from(prove::write(
            &search, &searched, original, choice, &plan, sizes,
        ));
        work.defs.push(def);
        // A candidate the verifier could not prove in reasonable time
        // could not be returned: it is not measured either.
        if options.verify {
            let (flops, why) = method
                .float_work(model, &work, original, &cand, sizes)
                .map_err(Error::Cost)?;
            if flops > FLOAT_PROOF_FLOPS {
                outcome.unprovable.push((
                    cand,
                    format!(
                        "its proof would interpret {:.2} GFLOP in floating point (at most {:.2}); {why}",
                        flops as f64 / 1e9,
                        FLOAT_PROOF_FLOPS as f64 / 1e9
                    ),
                ));
                continue;
            }
        }
        written.push((cand, choice, method));
    }
    phase.end("extraction");
    let mut decided: Vec<Decided> = Vec::new();
    let mut best_time = original_time;
    // The longest measurement so far (compiling included): one that would
    // not end by the phase's end is not started.
    let mut longest = Duration::ZERO;
    for (k, (cand, choice, method)) in written.iter().enumerate() {
        // Estimates are cheap and decide alone without measurements;
        // only measuring is bounded by the budget.
        if options.measure && start.elapsed() + longest >= options.budget.mul_f64(MEASURING_END) {
            break;
        }
        let began = Instant::now();
        let (estimate, measured) = time_of(&work, cand)?;
        longest = longest.max(began.elapsed());
        outcome.candidates.push(Candidate {
            name: cand.clone(),
            estimate,
            measured,
        });
        let time = measured.unwrap_or(estimate);
        decided.push(Decided {
            name: cand.clone(),
            time,
            estimate,
            choice,
            method,
        });
        best_time = best_time.min(time);
        progress(Event::Measured {
            index: k + 1,
            count: written.len() + 1,
            time,
            best: best_time,
        });
    }
    phase.end("measuring candidates");
    let best = if options.measure {
        // Each candidate was measured alone (or read from the cost model's
        // cache), as the original was, and a spell of a busy machine can
        // fall on any of them: the fastest few meet the original side by
        // side now, and only a win there counts.
        let window = comparing(options.budget, start);
        let mut contenders = contenders(original_time, &decided);
        // Each def is built and warmed up before the comparison's rounds,
        // about as long as its measurement took: a second contender only
        // when all of them fit in the comparison's time.
        while contenders.len() > 1 && longest * (contenders.len() as u32 + 1) > window {
            contenders.pop();
        }
        if contenders.is_empty() {
            None
        } else {
            let mut names = vec![name];
            names.extend(contenders.iter().map(|c| c.name.as_str()));
            let times = model
                .compare(&work, &names, sizes, window)
                .map_err(Error::Cost)?;
            phase.end("side by side");
            outcome.side_by_side = names
                .iter()
                .map(|n| n.to_string())
                .zip(times.iter().copied())
                .collect();
            let before = times.first().copied().unwrap_or(original_time);
            outcome.original_time = before;
            outcome.time = before;
            contenders
                .into_iter()
                .zip(times.into_iter().skip(1))
                .filter(|(_, t)| t.as_secs_f64() < before.as_secs_f64() * (1.0 - NOISE))
                .min_by_key(|(_, t)| *t)
                .map(|(c, t)| Decided { time: t, ..c })
        }
    } else {
        winner(original_time, &decided)
    };
    if let Some(w) = best {
        if options.verify {
            progress(Event::Verifying);
            let proof = w
                .method
                .prove(&work, original, &w.name, sizes)
                .map_err(Error::Internal)?;
            outcome.proof = Some(proof);
            phase.end("proof");
        }
        let Decided {
            name: winner,
            time,
            choice,
            ..
        } = w;
        let mut def = work
            .def(&winner)
            .cloned()
            .ok_or_else(|| Error::Internal(format!("no candidate `{winner}`")))?;
        def.name = name.to_string();
        // The mutants the result calls join the program, before it.
        for m in &search.mutants {
            let called = def
                .stmts
                .iter()
                .any(|s| matches!(s, ir::Stmt::Call(c) if c.callee == m.def.name));
            if called {
                let at = outcome.program.defs.len().min(
                    outcome
                        .program
                        .defs
                        .iter()
                        .position(|d| d.name == name)
                        .unwrap_or(usize::MAX),
                );
                outcome.program.defs.insert(at, m.def.clone());
            }
        }
        if let Some(slot) = outcome.program.defs.iter_mut().find(|d| d.name == name) {
            *slot = def;
        }
        outcome.changed = true;
        outcome.time = time;
        outcome.steps = explain::steps(&search, choice);
    }
    outcome.candidates_program = work;
    outcome.elapsed = start.elapsed();
    outcome.phases = phase.done;
    Ok(outcome)
}

/// The times of a search's phases, each from the end of the one before.
struct Phases {
    since: Instant,
    done: Vec<(&'static str, Duration)>,
}

impl Phases {
    fn new() -> Phases {
        Phases {
            since: Instant::now(),
            done: Vec::new(),
        }
    }

    fn end(&mut self, name: &'static str) {
        let now = Instant::now();
        self.done.push((name, now - self.since));
        self.since = now;
    }
}

/// Where the budget ends each phase, as fractions of it: derivations are
/// searched and proved until 30% of it, mutants checked until 40%,
/// candidates measured until 60% (none starts
/// that would not end by then, as long as the longest so far took), and
/// the comparison side by side takes what is left up to 70%,
/// at least a tenth of it; the proof comes last, and the rest is for the
/// work that started in time and runs over.
const DERIVATION_END: f64 = 0.3;
const MUTANTS_END: f64 = 0.4;
const MEASURING_END: f64 = 0.6;
const COMPARING_END: f64 = 0.7;

/// The time the comparison side by side may take.
fn comparing(budget: Duration, start: Instant) -> Duration {
    budget
        .mul_f64(COMPARING_END)
        .saturating_sub(start.elapsed())
        .max(budget / 10)
}

/// The most floating-point work a candidate's proof may interpret (both
/// sides, every draw): the reference interpreter does some 10^7
/// operations a second (a 64-channel 3x3 convolution of a 32 x 32 image
/// takes it 6 s), so this is a few seconds. Exact tests are lazy and not
/// bounded by it; only regions with a non-linear statement count.
const FLOAT_PROOF_FLOPS: u64 = 50_000_000;

/// Times closer than this fraction are one time: measurements of one
/// program vary by about that much from run to run.
const NOISE: f64 = 0.03;

/// A candidate with its time (measured, or estimated) and estimate.
#[derive(Clone, Debug)]
struct Decided<'c> {
    name: String,
    time: Duration,
    estimate: Duration,
    choice: &'c Choice,
    method: &'c prove::Method,
}

/// The candidate that replaces the original: one faster than it by more
/// than the noise, and among those within the noise of the fastest, the
/// one the estimate calls cheapest (measurements this close do not tell
/// them apart; the estimate does not vary). `None` keeps the original.
fn winner<'c>(original: Duration, decided: &[Decided<'c>]) -> Option<Decided<'c>> {
    let fastest = decided.iter().map(|m| m.time).min()?.as_secs_f64();
    let original = original.as_secs_f64();
    decided
        .iter()
        .filter(|m| m.time.as_secs_f64() <= fastest * (1.0 + NOISE))
        .filter(|m| m.time.as_secs_f64() < original * (1.0 - NOISE))
        .min_by(|a, b| a.estimate.cmp(&b.estimate))
        .cloned()
}

/// How many candidates meet the original side by side at most.
const CONTENDERS: usize = 2;

/// Candidates measured alone this much slower than the original do not
/// meet it side by side, but for the fastest: no spell of the machine
/// makes up that much, unless it fell on the original's measurement.
const CONTENDER_SLACK: f64 = 0.15;

/// The measured candidates that meet the original side by side: the
/// fastest (the lower estimate first among equal times), and the next
/// if it measured at most [`CONTENDER_SLACK`] slower than `original`;
/// [`CONTENDERS`] at most.
fn contenders<'c>(original: Duration, decided: &[Decided<'c>]) -> Vec<Decided<'c>> {
    let mut by_time: Vec<&Decided> = decided.iter().collect();
    by_time.sort_by(|a, b| a.time.cmp(&b.time).then(a.estimate.cmp(&b.estimate)));
    by_time
        .into_iter()
        .enumerate()
        .filter(|(k, d)| {
            *k == 0 || d.time.as_secs_f64() <= original.as_secs_f64() * (1.0 + CONTENDER_SLACK)
        })
        .map(|(_, d)| d.clone())
        .take(CONTENDERS)
        .collect()
}

/// A def's statements as text, the name left out: two candidates that
/// print the same are one.
fn body_text(program: &Program, def: &Def) -> String {
    let mut d = def.clone();
    d.name = String::new();
    ir::print_def(program, &d)
}
