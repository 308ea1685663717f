//! The optimizer's derivation phase (OLLIE in the e-graph): each operator
//! application in the saturated e-graph whose expression sums products
//! (a contraction: matmul, convolution, their kin) is inlined into its
//! comprehensions at its arguments' shapes and derived
//! ([`crate::derive`]); the cheapest derived programs by the derivation's
//! estimate are proved equal to the application by the verifier, and each
//! proved one joins the application's e-class as a call of its own def
//! (`__derivedA_K`), added to the program, so that derived programs
//! compete with the rewrites' and the mutants' forms in one extraction.
//!
//! Requires a saturated search. Guarantees: a node added here calls a def
//! that `verify::verify` proved equal to the application it joins, on
//! its arguments' shapes; the work stops at the deadline (if any): a
//! derivation or proof still running then is cut, and what it had not
//! proved stays out.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use egg::Id;
use ir::{Program, Reduction, Stmt};

use super::applications::{applications, join, Application};
use crate::cost::CostModel;
use crate::derive;
use crate::egraph::extract::constant_classes;
use crate::egraph::lang;
use crate::egraph::Search;
use crate::mutant::{self, Mutant};
use crate::verify;

/// What the derivation phase did, for the explanation.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Contractions derived, derived programs found (other than the
    /// application as it stands), proved and accepted.
    pub applications: usize,
    pub found: usize,
    pub checked: usize,
    pub accepted: usize,
    /// Whether the deadline stopped the phase early.
    pub out_of_time: bool,
}

/// How the defs of derived programs are named:
/// `{PREFIX}{application}_{k}`.
pub const PREFIX: &str = "__derived";

/// How many derived programs of one application are proved and joined
/// at most: the cheapest by the derivation's estimate. More would only
/// lengthen the extraction; the measurements decide among these.
pub const PER_APPLICATION: usize = 3;

/// Adds the proved derivations of `search`'s contractions to it, their
/// defs to its program; `depth` is the explorative depth.
pub fn add_derived<M: CostModel>(
    search: &mut Search,
    model: &M,
    depth: usize,
    deadline: Option<Instant>,
) -> Result<Report, String> {
    let mut report = Report::default();
    let program: Program = (*search.egraph.analysis.program).clone();
    let constant = constant_classes(&search.egraph, &search.constants);
    let none = HashMap::new();
    // The slowest applications first by the model's estimate: a deadline
    // may leave the rest underived, and theirs would gain the least.
    let mut prepared: Vec<(f64, Prepared)> = Vec::new();
    for (k, app) in applications(search, &|_| true).into_iter().enumerate() {
        let Some(p) = prepare(&program, app, k, &constant, search)? else {
            continue;
        };
        let base = model
            .estimate(&p.local, &p.original, &none)
            .map_or(f64::INFINITY, |e| e.seconds);
        prepared.push((base, p));
    }
    prepared.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut program = program;
    let mut joins: Vec<(Id, String, Vec<Id>)> = Vec::new();
    for (_, p) in prepared {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            report.out_of_time = true;
            break;
        }
        report.applications += 1;
        let options = derive::Options {
            depth,
            deadline,
            constants: p.constants.clone(),
            ..Default::default()
        };
        let inlined = p
            .local
            .def(&p.inlined)
            .ok_or_else(|| format!("internal error: no def `{}`", p.inlined))?;
        let outcome = derive::derive(inlined, &options, &|_, _| {})?;
        if outcome.stats.cut.is_some() {
            report.out_of_time = true;
        }
        // The application as it stands (each statement instantiated in
        // place) is already in the class.
        let derived: Vec<&derive::Candidate> = outcome
            .candidates
            .iter()
            .filter(|c| !c.steps.iter().all(|s| instantiates(s.rule)))
            .filter(|c| derive::round_trips(&c.state.def))
            .take(PER_APPLICATION)
            .collect();
        report.found += derived.len();
        let mut local = p.local.clone();
        for (j, c) in derived.into_iter().enumerate() {
            let name = format!("{}{}", p.prefix, j + 1);
            let mut def = c.state.def.clone();
            def.name = name.clone();
            local.defs.push(def.clone());
            report.checked += 1;
            let options = verify::Options {
                deadline,
                ..Default::default()
            };
            let proof = match verify::verify(&local, &p.original, &local, &name, &options) {
                Ok(r) => r,
                Err(e) if e == verify::OUT_OF_TIME => {
                    report.out_of_time = true;
                    break;
                }
                Err(e) => return Err(format!("internal error: derived `{name}`: {e}")),
            };
            // The derivation rules guarantee equality; a difference is a
            // bug the search must not act on.
            if !proof.equivalent() {
                return Err(format!(
                    "internal error: derived `{name}` is not equal to `{}`:\n{}",
                    p.op,
                    verify::print_report(&proof)
                ));
            }
            report.accepted += 1;
            let rules: Vec<&str> = c.steps.iter().map(|s| s.rule).collect();
            program.defs.push(def.clone());
            for (class, kids) in &p.places {
                joins.push((*class, name.clone(), kids.clone()));
            }
            search.mutants.push(Mutant {
                def,
                description: format!("{} derived: {}", p.what, rules.join(", ")),
                corrections: Vec::new(),
                verdict: mutant::verdict_text(&proof),
            });
        }
    }
    search.egraph.analysis.program = Arc::new(program);
    join(search, &joins, "derivation")?;
    Ok(report)
}

/// Whether a step of rule `rule` only instantiates a statement.
fn instantiates(rule: &str) -> bool {
    rule == "operator matching" || rule == "eOperator generation"
}

/// A contraction ready to derive: the application as a def (`original`),
/// its calls inlined (`inlined`), both in `local` with their callees.
struct Prepared {
    op: String,
    /// What is derived, for the explanation.
    what: String,
    places: Vec<(Id, Vec<Id>)>,
    local: Program,
    original: String,
    inlined: String,
    prefix: String,
    /// The parameters whose arguments are known at load.
    constants: Vec<String>,
}

/// Application `k` ready to derive; `None` when its expression sums no
/// products, which leaves derivation nothing to find.
fn prepare(
    program: &Program,
    (op, args, places): Application,
    k: usize,
    constant: &std::collections::HashSet<Id>,
    search: &Search,
) -> Result<Option<Prepared>, String> {
    let prefix = format!("{PREFIX}{}_", k + 1);
    let original = format!("{prefix}original");
    let mut local = match lang::opaque_index(&egg::Symbol::from(op.as_str())) {
        // A comprehension of the def: the statement alone.
        Some(k) => {
            let mut alone = search.egraph.analysis.opaque[k].alone.clone();
            alone.name = original.clone();
            Program { defs: vec![alone] }
        }
        None => {
            let mut text = mutant::callees_text(program, &[op.as_str()]);
            text += &mutant::original_text(&op, &args, &original);
            tc::check_source(&text)
                .map_err(|d| {
                    format!(
                        "internal error: `{op}` applied alone does not check:\n{}",
                        tc::render_diagnostics(&d, "derivation", &text)
                    )
                })?
                .program
        }
    };
    let def = local
        .def(&original)
        .ok_or_else(|| format!("internal error: no def `{original}`"))?;
    let mut inlined = derive::inline::inline_calls(&local, def)
        .map_err(|e| format!("internal error: `{op}` does not inline: {e}"))?;
    let contracts = inlined.stmts.iter().any(|s| {
        matches!(s, Stmt::Comp(c) if c.op == Reduction::Add && c.reduction_iters().next().is_some())
    });
    if !contracts || inlined.stmts.iter().any(|s| !matches!(s, Stmt::Comp(_))) {
        return Ok(None);
    }
    inlined.name = format!("{prefix}inlined");
    // Parameters are `x{k}` by argument position (`original_text`,
    // `Opaque::alone`); the first place's children tell which are known
    // at load.
    let tensors: Vec<usize> = args
        .iter()
        .enumerate()
        .filter(|(_, a)| matches!(a, mutant::Arg::Tensor(_)))
        .map(|(k, _)| k)
        .collect();
    let constants = places
        .first()
        .map(|(_, kids)| {
            kids.iter()
                .zip(&tensors)
                .filter(|(kid, _)| constant.contains(&search.egraph.find(**kid)))
                .map(|(_, k)| format!("x{k}"))
                .collect()
        })
        .unwrap_or_default();
    let inlined_name = inlined.name.clone();
    local.defs.push(inlined);
    let what = match lang::opaque_index(&egg::Symbol::from(op.as_str())) {
        Some(k) => format!("comprehension {}", k + 1),
        None => format!("`{op}`"),
    };
    Ok(Some(Prepared {
        what,
        op,
        places,
        local,
        original,
        inlined: inlined_name,
        prefix,
        constants,
    }))
}
