//! Expression derivation as the engine offers it (`tessera derive`):
//! `opt::derive` on a def of a loaded source at bound sizes, the cheapest
//! candidates by estimate (and the cheapest of each derivation family)
//! measured by the cost service beside the original, the fastest proved equal to the original by the verifier —
//! and, when asked, every step of its derivation proved too.
//!
//! Requires a loaded [`Source`] and sizes binding every size symbol and
//! integer scalar of the def. Guarantees: the returned program is never
//! measured slower than the original (the original wins ties and is the
//! answer when nothing beats it) and is proved equal to it; a proof that
//! fails is an error, never a result.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use ir::{Def, Program};
use opt::cost::CostModel;
use opt::derive::{Candidate, Outcome};
use opt::verify::Report;

use crate::cost::CostService;
use crate::{compile, Error, Source};

/// About how long the side-by-side comparison of the original and the
/// shortlist takes.
const COMPARE_WITHIN: Duration = Duration::from_secs(3);

/// How much faster than the original a candidate must measure to replace
/// it: the side-by-side comparison's noise on this machine class.
const NOISE: f64 = 0.03;

/// How to derive.
#[derive(Clone, Debug, Default)]
pub struct Options {
    pub search: opt::derive::Options,
    pub compile: compile::Options,
    /// How many of the cheapest candidates are measured, besides the
    /// cheapest of each derivation family ([`shortlist`]); 0: decide by
    /// the estimate alone.
    pub measure: usize,
    /// Prove every step of the chosen derivation, not only its result.
    pub verify_steps: bool,
    /// Choose this candidate (by index, cheapest estimate first) instead
    /// of the fastest: how a derivation the search found is shown whole.
    pub pick: Option<usize>,
}

/// A derivation's result.
#[derive(Debug)]
pub struct Derived {
    /// The original def at the sizes.
    pub original: Def,
    /// The chosen candidate (`None`: the original is kept).
    pub chosen: Option<Candidate>,
    /// The chosen def, named as the original, at the sizes.
    pub def: Def,
    pub outcome: Outcome,
    /// Measured times: the original's, then each measured candidate's
    /// (by index into `outcome.candidates`).
    pub original_time: Option<Duration>,
    pub measured: Vec<(usize, Duration)>,
    /// The proof that the chosen def equals the original.
    pub proof: Option<Report>,
    /// Each step's proof, when asked.
    pub step_proofs: Vec<Result<Report, String>>,
    /// The whole request's time.
    pub elapsed: Duration,
}

/// Derives def `def` (the only one when `None`) of `source` at `sizes`.
pub fn derive(
    source: &Source,
    def: Option<&str>,
    sizes: &HashMap<String, i64>,
    options: &Options,
    progress: &dyn Fn(usize, usize),
) -> Result<Derived, Error> {
    let start = Instant::now();
    crate::bind::check_positive(sizes)?;
    let original = source.pick_def(def)?;
    let given = opt::derive::at_sizes(original, sizes);
    let at = opt::derive::inline::inline_calls(source.program(), &given).map_err(Error::Usage)?;
    let mut search = options.search.clone();
    search.constants.extend(source.weight_names());
    let mut outcome = opt::derive::derive(&at, &search, progress).map_err(Error::Usage)?;
    // A result is printed as TC: a candidate whose text would not read
    // back as the same program is no answer.
    outcome
        .candidates
        .retain(|c| opt::derive::round_trips(&c.state.def));
    let mut program = source.program().clone();
    let name = |k: usize| format!("__derived{k}");
    let shortlist = shortlist(&outcome.candidates, options.measure);
    let add = |program: &mut Program, k: usize| {
        let mut d = outcome.candidates[k].state.def.clone();
        d.name = name(k);
        program.defs.push(d);
    };
    let mut chosen: Option<usize> = None;
    let mut original_time = None;
    let mut measured = Vec::new();
    if let Some(k) = options.pick {
        if k >= outcome.candidates.len() {
            return Err(Error::Usage(format!(
                "candidate {} was asked for, but the search found {}",
                k + 1,
                outcome.candidates.len()
            )));
        }
        add(&mut program, k);
        chosen = Some(k);
    } else if !shortlist.is_empty() {
        for &k in &shortlist {
            add(&mut program, k);
        }
        let service = CostService::open_default(&options.compile)?
            .timing_library(true)
            .with_constants(search.constants.iter().cloned());
        // The original at the sizes beside the candidates, all timed side
        // by side (interleaved, never from the cache), so that a drift of
        // the machine touches all alike.
        let mut original_at = at.clone();
        original_at.name = "__original".to_string();
        program.defs.push(original_at);
        let mut names = vec!["__original".to_string()];
        names.extend(shortlist.iter().map(|&k| name(k)));
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let concrete = at_sizes_options(&at, sizes).sizes;
        let times = service.compare(&program, &refs, &concrete, COMPARE_WITHIN)?;
        let t0 = times[0];
        original_time = Some(t0);
        // A candidate must beat the original beyond the noise of a side by
        // side run to be chosen.
        let mut best = t0.mul_f64(1.0 - NOISE);
        for (&k, &t) in shortlist.iter().zip(&times[1..]) {
            measured.push((k, t));
            if t < best {
                best = t;
                chosen = Some(k);
            }
        }
    } else if let Some(first) = outcome.candidates.first() {
        // By estimate alone: the cheapest candidate, unless it is the
        // original as it stands (every statement instantiated in place).
        if !first
            .steps
            .iter()
            .all(|s| s.rule == "operator matching" || s.rule == "eOperator generation")
        {
            add(&mut program, 0);
            chosen = Some(0);
        }
    }
    let mut result_def = given;
    let mut proof = None;
    let mut step_proofs = Vec::new();
    if let Some(k) = chosen {
        let c = &outcome.candidates[k];
        let report = prove(&program, &original.name, &name(k), sizes)?;
        if !report.equivalent() {
            return Err(Error::Usage(format!(
                "internal error: the derived program is not equal to `{}`:\n{}",
                original.name,
                opt::verify::print_report(&report)
            )));
        }
        proof = Some(report);
        result_def = c.state.def.clone();
        result_def.name = original.name.clone();
        if options.verify_steps {
            step_proofs = steps(&at, c, sizes);
        }
    }
    Ok(Derived {
        original: at,
        chosen: chosen.map(|k| outcome.candidates[k].clone()),
        def: result_def,
        outcome,
        original_time,
        measured,
        proof,
        step_proofs,
        elapsed: start.elapsed(),
    })
}

/// The candidates measured (by index): the `k` cheapest by estimate, then
/// the cheapest derivation using a rule that none measured before it
/// uses, for each such rule. The estimate ranks the forms of one family
/// well but can be off several times between families (conv3x3's direct
/// convolution runs at about half the rate the estimate gives it, a
/// Winograd program's matmul at its estimate), so each family's best is
/// measured too.
fn shortlist(candidates: &[Candidate], k: usize) -> Vec<usize> {
    let mut out: Vec<usize> = (0..k.min(candidates.len())).collect();
    if out.is_empty() {
        return out;
    }
    let mut rules: std::collections::HashSet<&str> = out
        .iter()
        .flat_map(|&i| candidates[i].steps.iter().map(|s| s.rule))
        .collect();
    for (i, c) in candidates.iter().enumerate().skip(out.len()) {
        if c.steps.iter().any(|s| !rules.contains(s.rule)) {
            rules.extend(c.steps.iter().map(|s| s.rule));
            out.push(i);
        }
    }
    out
}

fn prove(
    program: &Program,
    a: &str,
    b: &str,
    sizes: &HashMap<String, i64>,
) -> Result<Report, Error> {
    let options = opt::verify::Options {
        sizes: sizes.clone(),
        ..Default::default()
    };
    opt::verify::verify(program, a, program, b, &options).map_err(Error::Usage)
}

/// The verifier's options for two defs at sizes: only their integer
/// scalars remain to bind.
fn at_sizes_options(def: &Def, sizes: &HashMap<String, i64>) -> opt::verify::Options {
    opt::verify::Options {
        sizes: sizes
            .iter()
            .filter(|(n, _)| def.scalar(n).is_some())
            .map(|(n, v)| (n.clone(), *v))
            .collect(),
        ..Default::default()
    }
}

/// Each step of `c` proved against the state before it.
fn steps(start: &Def, c: &Candidate, sizes: &HashMap<String, i64>) -> Vec<Result<Report, String>> {
    let mut before = start.clone();
    let mut out = Vec::new();
    for s in &c.steps {
        let mut after = s.after.def.clone();
        before.name = "__before".to_string();
        after.name = "__after".to_string();
        let program = Program {
            defs: vec![before.clone(), after.clone()],
        };
        let options = at_sizes_options(start, sizes);
        out.push(opt::verify::verify(
            &program, "__before", &program, "__after", &options,
        ));
        before = after;
    }
    out
}

/// One application of a rule, proved.
#[derive(Debug)]
pub struct Application {
    pub what: String,
    /// The def after it, named as the original, at the sizes.
    pub def: Def,
    pub proof: Result<Report, String>,
}

/// Every application of the rule named `rule` (OLLIE's Table 1 name,
/// spaces or hyphens between its words) to
/// every statement of def `def` of `source` at `sizes`, each proved
/// against the def: how each rule is tested alone.
pub fn apply_rule(
    source: &Source,
    def: Option<&str>,
    sizes: &HashMap<String, i64>,
    rule: &str,
) -> Result<Vec<Application>, Error> {
    crate::bind::check_positive(sizes)?;
    let original = source.pick_def(def)?;
    let at = opt::derive::at_sizes(original, sizes);
    let rules = opt::derive::rules::all();
    // Names are written with hyphens on a command line: both spellings.
    let spelled = |n: &str| n.replace(' ', "-").to_lowercase();
    let Some(r) = rules.iter().find(|r| spelled(r.name()) == spelled(rule)) else {
        let names: Vec<&str> = rules.iter().map(|r| r.name()).collect();
        return Err(Error::Usage(format!(
            "no derivation rule named `{rule}`; the rules: {}",
            names.join(", ")
        )));
    };
    let state = opt::derive::State::new(at.clone()).map_err(Error::Usage)?;
    let mut out = Vec::new();
    for k in 0..state.statements() {
        let mut applied = Vec::new();
        r.apply(&state, k, &mut applied);
        for a in applied {
            let mut before = at.clone();
            before.name = "__before".to_string();
            let mut after = a.state.def.clone();
            after.name = "__after".to_string();
            let program = Program {
                defs: vec![before, after.clone()],
            };
            let options = at_sizes_options(&at, sizes);
            let proof = opt::verify::verify(&program, "__before", &program, "__after", &options);
            after.name = original.name.clone();
            out.push(Application {
                what: a.what,
                def: after,
                proof,
            });
        }
    }
    Ok(out)
}
