//! PET's partially equivalent mutants (§4) with their corrections (§5):
//! for one operator application at concrete sizes, the mutant generator
//! ([`enumerate`]) lists shape-valid programs over layouts and the
//! operator's family, and [`check`] asks the equivalence verifier about
//! each: an equivalent mutant is accepted as it is; one that differs on a
//! few small regions gets correction kernels ([`correct`]) recomputing
//! the original there, and is accepted only once the verifier proves the
//! corrected mutant equivalent to the original.
//!
//! Requires the program whose defs the operator and its family name.
//! Guarantees: an accepted [`Mutant`]'s def takes the original's tensor
//! arguments in order, has its output's shape, and was proved equal to
//! the original application by `verify::verify` (exact over Z_p for these
//! multi-linear programs).

pub mod correct;
pub mod enumerate;
pub mod layout;

use std::collections::{BTreeSet, HashMap};

use ir::{Def, Program, Stmt};

use crate::signature::ArgKind;
use crate::verify::{self, Region, Verdict};

/// An argument of the mutated application at concrete values.
#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    Tensor(Vec<i64>),
    Int(i64),
    Float(f64),
}

impl Arg {
    pub fn kind(&self) -> ArgKind {
        match self {
            Arg::Tensor(s) => ArgKind::Tensor(s.clone()),
            Arg::Int(v) => ArgKind::Int(*v),
            Arg::Float(_) => ArgKind::Float,
        }
    }

    /// The argument as TC text (attributes only).
    fn text(&self) -> String {
        match self {
            Arg::Int(v) => v.to_string(),
            Arg::Float(v) if v.fract() == 0.0 && v.is_finite() => format!("{v:.1}"),
            Arg::Float(v) => format!("{v:?}"),
            Arg::Tensor(_) => String::new(),
        }
    }
}

/// A generated mutant, before it is checked.
#[derive(Clone, Debug)]
pub struct Spec {
    pub name: String,
    /// Its def's text (calls of the operator's family only).
    pub text: String,
    /// What it does, for the explanation.
    pub description: String,
}

/// An accepted mutant.
#[derive(Clone, Debug)]
pub struct Mutant {
    /// Its def (corrections included), named as its spec.
    pub def: Def,
    pub description: String,
    /// The regions of the output the corrections recompute (empty when
    /// the mutant is equivalent as generated).
    pub corrections: Vec<Region>,
    /// The verifier's verdict on the (corrected) mutant.
    pub verdict: String,
}

/// How the defs of mutants are named: `{PREFIX}{application}_{k}`.
pub const PREFIX: &str = "__mutant";

/// How much of the output corrections may recompute: more, and the
/// mutant does the original's work twice.
pub const MAX_CORRECTED: f64 = 0.25;

/// The program of `op`'s def and the defs it calls, printed: what a
/// mutant's text is checked against.
pub fn callees_text(program: &Program, ops: &[&str]) -> String {
    let mut seen = BTreeSet::new();
    let mut stack: Vec<String> = ops.iter().map(|s| s.to_string()).collect();
    let mut out = String::new();
    while let Some(op) = stack.pop() {
        if !seen.insert(op.clone()) {
            continue;
        }
        let Some(def) = program.def(&op) else {
            continue;
        };
        for s in &def.stmts {
            if let Stmt::Call(c) = s {
                stack.push(c.callee.clone());
            }
        }
        out = ir::print_def(program, def) + "\n" + &out;
    }
    out
}

/// The original application `op(args)` as a def named `name` over the
/// tensor arguments `x0, x1, ...`.
pub fn original_text(op: &str, args: &[Arg], name: &str) -> String {
    let mut params = Vec::new();
    let mut call = Vec::new();
    for (k, a) in args.iter().enumerate() {
        match a {
            Arg::Tensor(s) => {
                let dims: Vec<String> = s.iter().map(ToString::to_string).collect();
                params.push(format!("float({}) x{k}", dims.join(", ")));
                call.push(format!("x{k}"));
            }
            _ => call.push(a.text()),
        }
    }
    format!(
        "def {name}({}) -> (y) {{\n  y = {op}({})\n}}\n",
        params.join(", "),
        call.join(", ")
    )
}

/// The verdict of checking one mutant.
#[derive(Clone, Debug)]
pub enum Checked {
    Accepted(Mutant),
    /// Not equivalent, and not corrected: why.
    Rejected(String),
    /// The verifier ran past the deadline before it decided.
    Unfinished,
}

/// Checks mutant `spec` of `op(args)` in `program` (which holds the
/// original as def `original` and the spec's def): accepted as it is
/// when equivalent, corrected when it differs on at most
/// [`MAX_CORRECTED`] of the output, rejected otherwise; unfinished when
/// the verifier runs past `deadline`.
pub fn check(
    program: &Program,
    original: &str,
    op: &str,
    args: &[Arg],
    spec: &Spec,
    deadline: Option<std::time::Instant>,
) -> Result<Checked, String> {
    let verify = |p: &Program, options: &verify::Options| {
        verify::verify(p, original, p, &spec.name, options).map_err(|e| {
            if e == verify::OUT_OF_TIME {
                None
            } else {
                Some(e)
            }
        })
    };
    let run = || -> Result<Checked, Option<String>> {
        // One draw first: a difference it finds is real (values that
        // differ over Z_p differ), and most mutants differ almost
        // everywhere, so they are rejected at a third of the cost. What
        // it does not reject is decided at the full number of draws.
        let quick = verify::Options {
            trials: Some(1),
            deadline,
            ..Default::default()
        };
        let first = verify(program, &quick)?;
        if let Some(why) = too_different(&first) {
            return Ok(Checked::Rejected(why));
        }
        let options = verify::Options {
            deadline,
            ..Default::default()
        };
        let report = verify(program, &options)?;
        decide(program, op, args, spec, report, &|p| verify(p, &options))
    };
    match run() {
        Ok(checked) => Ok(checked),
        Err(None) => Ok(Checked::Unfinished),
        Err(Some(e)) => Err(e),
    }
}

/// What a mutant whose first full `report` is in is: accepted as it is,
/// corrected (and proved again by `verify`) or rejected.
fn decide(
    program: &Program,
    op: &str,
    args: &[Arg],
    spec: &Spec,
    report: verify::Report,
    verify: &dyn Fn(&Program) -> Result<verify::Report, Option<String>>,
) -> Result<Checked, Option<String>> {
    let def = program
        .def(&spec.name)
        .ok_or_else(|| Some(format!("no def `{}`", spec.name)))?;
    let boxes = match &report.verdict {
        Verdict::Equivalent { .. } => {
            return Ok(Checked::Accepted(Mutant {
                def: def.clone(),
                description: spec.description.clone(),
                corrections: Vec::new(),
                verdict: verdict_text(&report),
            }))
        }
        Verdict::NotEquivalent { boxes } => boxes.clone(),
    };
    if let Some(why) = too_different(&report) {
        return Ok(Checked::Rejected(why));
    }
    let Some(fixed) = correct::corrected(program, def, op, args, &boxes).map_err(Some)? else {
        return Ok(Checked::Rejected(format!(
            "`{op}` is not one comprehension a correction can restrict"
        )));
    };
    let mut with = program.clone();
    if let Some(slot) = with.defs.iter_mut().find(|d| d.name == spec.name) {
        *slot = fixed.clone();
    }
    ir::verify_program(&with).map_err(|e| Some(format!("a corrected mutant: {e:?}")))?;
    let report = verify(&with)?;
    if !report.equivalent() {
        return Ok(Checked::Rejected(format!(
            "still differs after its corrections:\n{}",
            verify::print_report(&report)
        )));
    }
    Ok(Checked::Accepted(Mutant {
        def: fixed,
        description: spec.description.clone(),
        corrections: boxes,
        verdict: verdict_text(&report),
    }))
}

/// Why a report's differences are too many to correct (more than
/// [`MAX_CORRECTED`] of the output), if they are.
fn too_different(report: &verify::Report) -> Option<String> {
    let Verdict::NotEquivalent { boxes } = &report.verdict else {
        return None;
    };
    let total: usize = report
        .outputs
        .iter()
        .map(|(_, s)| s.iter().product::<usize>())
        .sum();
    let corrected: usize = boxes.iter().map(Region::len).sum();
    (corrected as f64 > MAX_CORRECTED * total as f64)
        .then(|| format!("differs on {corrected} of {total} elements"))
}

/// The verdict in a line.
pub(crate) fn verdict_text(report: &verify::Report) -> String {
    match &report.verdict {
        Verdict::Equivalent {
            trials,
            error_bound: Some(b),
        } => format!("equivalent over Z_p ({trials} trials, error <= {b:.1e})"),
        Verdict::Equivalent { trials, .. } => {
            format!("equivalent in floating point ({trials} trials)")
        }
        Verdict::NotEquivalent { boxes } => format!("differs on {} regions", boxes.len()),
    }
}

/// The integer values of `def`'s size symbols and scalars when called on
/// `args`.
pub fn call_values(def: &Def, args: &[Arg]) -> Result<HashMap<String, i64>, String> {
    let kinds: Vec<ArgKind> = args.iter().map(Arg::kind).collect();
    crate::signature::call_sizes(def, &kinds)
}

/// The operators mutants of `op` may call (its template's family), or
/// none when no template covers `op`.
pub fn family(op: &str) -> &'static [&'static str] {
    enumerate::template(op).map_or(&[], |t| t.ops)
}
