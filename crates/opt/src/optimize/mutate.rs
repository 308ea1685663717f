//! The optimizer's mutation phase (PET §4–§5 in the e-graph): each
//! operator application in the saturated e-graph that a mutant template
//! covers gets its shape-valid mutants, the cheapest by the analytic
//! estimate are checked by the verifier (corrected where they differ on
//! small regions), and every accepted mutant joins its application's
//! e-class as a call of its own def, added to the program.
//!
//! Requires a saturated search and a cost model. Guarantees: a node added
//! here calls a def proved equal to the application it joins
//! (`mutant::check`); the work stops at the deadline (if any): a check
//! still running then is left undecided and its mutant out.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use egg::Id;
use ir::Program;

use super::applications::{applications, join, Application};
use crate::cost::CostModel;
use crate::egraph::Search;
use crate::mutant::{self, Arg, Checked, Mutant};

/// What the mutation phase did, for the explanation.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Applications mutated, mutants generated, checked and accepted.
    pub applications: usize,
    pub generated: usize,
    pub checked: usize,
    pub accepted: usize,
    /// Accepted mutants that needed corrections.
    pub corrected: usize,
    /// Whether the deadline stopped the phase early.
    pub out_of_time: bool,
}

/// How many mutants of one application are checked at most.
pub const CHECKS_PER_APPLICATION: usize = 48;

/// Mutants estimated this many times slower than their original are
/// not checked: they would not be extracted.
const MAX_SLOWDOWN: f64 = 4.0;

/// Adds the accepted mutants of `search`'s applications to it, their
/// defs to its program.
pub fn add_mutants<M: CostModel>(
    search: &mut Search,
    model: &M,
    depth: usize,
    deadline: Option<Instant>,
) -> Result<Report, String> {
    let mut report = Report::default();
    let applications = applications(search, &|op| !mutant::family(op).is_empty());
    let mut program: Program = (*search.egraph.analysis.program).clone();
    let mut joins: Vec<(Id, String, Vec<Id>)> = Vec::new();
    // Every application's mutants in a program of their own; the
    // applications estimated slowest are checked first: a deadline may
    // leave the rest unchecked, and their mutants can gain the most.
    let none = HashMap::new();
    let mut prepared: Vec<(f64, Prepared)> = Vec::new();
    for (k, app) in applications.into_iter().enumerate() {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            report.out_of_time = true;
            break;
        }
        report.applications += 1;
        let Some(p) = prepare(&program, app, depth, k)? else {
            continue;
        };
        report.generated += p.specs.len();
        let base = model
            .estimate(&p.local, &p.original, &none)
            .map_or(f64::INFINITY, |e| e.seconds);
        prepared.push((base, p));
    }
    prepared.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut longest = std::time::Duration::ZERO;
    for (base, p) in prepared {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            report.out_of_time = true;
            break;
        }
        let Prepared {
            op,
            args,
            places,
            specs,
            local,
            original,
        } = p;
        let cost = |name: &str| {
            model
                .estimate(&local, name, &none)
                .map_or(f64::INFINITY, |e| e.seconds)
        };
        let mut ranked: Vec<(f64, &mutant::Spec)> = specs
            .iter()
            .map(|s| (cost(&s.name), s))
            .filter(|(c, _)| *c <= base * MAX_SLOWDOWN || !base.is_finite())
            .collect();
        ranked.sort_by(|a, b| a.0.total_cmp(&b.0));
        for (_, spec) in ranked.into_iter().take(CHECKS_PER_APPLICATION) {
            // A check as long as the longest so far must end in time.
            if deadline.is_some_and(|d| Instant::now() + longest >= d) {
                report.out_of_time = true;
                break;
            }
            report.checked += 1;
            let began = Instant::now();
            let checked = mutant::check(&local, &original, &op, &args, spec, deadline)?;
            longest = longest.max(began.elapsed());
            let m = match checked {
                Checked::Accepted(m) => m,
                Checked::Rejected(_) => continue,
                Checked::Unfinished => {
                    report.out_of_time = true;
                    break;
                }
            };
            report.accepted += 1;
            report.corrected += usize::from(!m.corrections.is_empty());
            program.defs.push(m.def.clone());
            for (class, kids) in &places {
                joins.push((*class, spec.name.clone(), kids.clone()));
            }
            search.mutants.push(m);
        }
    }
    search.egraph.analysis.program = Arc::new(program);
    join(search, &joins, "mutant")?;
    Ok(report)
}

/// An application's mutants, with the program that holds their defs
/// beside its original's (named `original`) and the callees of both.
struct Prepared {
    op: String,
    args: Vec<Arg>,
    places: Vec<(Id, Vec<Id>)>,
    specs: Vec<mutant::Spec>,
    local: Program,
    original: String,
}

/// The mutants of application `k` up to `depth`; `None` when it has
/// none.
fn prepare(
    program: &Program,
    (op, args, places): Application,
    depth: usize,
    k: usize,
) -> Result<Option<Prepared>, String> {
    let prefix = format!("{}{}_", mutant::PREFIX, k + 1);
    let specs = mutant::enumerate::mutants(program, &op, &args, depth, &prefix);
    if specs.is_empty() {
        return Ok(None);
    }
    let original = format!("{prefix}original");
    let mut text = mutant::callees_text(program, mutant::family(&op));
    text += &mutant::original_text(&op, &args, &original);
    for s in &specs {
        text += &s.text;
    }
    let local = tc::check_source(&text)
        .map_err(|d| {
            format!(
                "internal error: mutants of `{op}` do not check:\n{}",
                tc::render_diagnostics(&d, "mutants", &text)
            )
        })?
        .program;
    Ok(Some(Prepared {
        op,
        args,
        places,
        specs,
        local,
        original,
    }))
}

/// The accepted mutant behind def `name`, if it is one.
pub fn mutant_named<'s>(search: &'s Search, name: &str) -> Option<&'s Mutant> {
    search.mutants.iter().find(|m| m.def.name == name)
}
