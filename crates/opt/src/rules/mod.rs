//! Fully equivalent rewrite rules as data (`ops/rewrites.rules`, the
//! TASO/Tensat class): their syntax ([`parse`]), their instances at
//! concrete sizes ([`instance`]), and the checks a rules file passes when
//! it is loaded.
//!
//! Requires the program (the prelude, at least) whose defs the rules'
//! operators name. Guarantees: a loaded rule names only defs of that
//! program, with arguments of the kinds and arity their signatures want;
//! every right-side variable and size symbol is bound by the left side
//! (by both sides, for a rule that applies both ways); and both sides have
//! the same number of terms and the same shapes at every sample size.
//! That the sides compute the same values is not checked here: [`prove`]
//! proves a rule by the equivalence verifier, every shipped rule in
//! `crates/opt/tests/rules.rs` and a user's rules file when it is given.

pub mod instance;
pub mod parse;
pub mod prove;

use std::collections::BTreeSet;

use ir::Program;

pub use parse::{Pos, Rule, Term, Var, VarKind};

use crate::signature::ArgKind;

/// The rules tessera ships.
pub const REWRITES: &str = include_str!("../../../../ops/rewrites.rules");

/// How many sizes a rule's shapes are checked at when loaded (and proved
/// at, in the tests).
pub const SAMPLES: usize = 4;

/// Parses and checks a rules file (`file` names it in errors) against
/// `program`; an error is `file:line:col: message`.
pub fn load(text: &str, file: &str, program: &Program) -> Result<Vec<Rule>, String> {
    let rules = parse::parse(text).map_err(|e| format!("{file}:{e}"))?;
    let mut names = BTreeSet::new();
    for r in &rules {
        let at =
            |p: Pos, msg: String| format!("{file}:{}:{}: rule `{}`: {msg}", p.line, p.col, r.name);
        if !names.insert(r.name.clone()) {
            return Err(at(r.at, "a second rule of this name".to_string()));
        }
        check(r, program).map_err(|(p, msg)| at(p, msg))?;
    }
    Ok(rules)
}

/// The checks of one rule; an error says where in it.
fn check(r: &Rule, program: &Program) -> Result<(), (Pos, String)> {
    if r.lhs.len() != r.rhs.len() {
        return Err((
            r.at,
            format!(
                "the left side has {} terms but the right side {}",
                r.lhs.len(),
                r.rhs.len()
            ),
        ));
    }
    for t in r.lhs.iter().chain(&r.rhs) {
        operators(t, program)?;
    }
    if let Some(t) = r.lhs.iter().find(|t| !matches!(t, Term::Call { .. })) {
        return Err((
            t.at(),
            "a left-side term must be an operator application".to_string(),
        ));
    }
    bound_by(r, &r.lhs, &r.rhs, "left")?;
    if r.both_ways {
        if let Some(t) = r.rhs.iter().find(|t| !matches!(t, Term::Call { .. })) {
            return Err((
                t.at(),
                "a rule that applies both ways needs operator applications on the right too (use `=>`)"
                    .to_string(),
            ));
        }
        bound_by(r, &r.rhs, &r.lhs, "right")?;
    }
    for sizes in instance::samples(r, SAMPLES) {
        let show = sizes
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(", ");
        for (k, (a, b)) in r.lhs.iter().zip(&r.rhs).enumerate() {
            let shape = |t: &Term| {
                instance::kind(r, program, t, &sizes)
                    .map_err(|e| (t.at(), format!("at {show}: {e}")))
            };
            let (x, y) = (shape(a)?, shape(b)?);
            if !matches!(x, ArgKind::Tensor(_)) {
                return Err((a.at(), format!("term {} is not a tensor", k + 1)));
            }
            if x != y {
                return Err((
                    b.at(),
                    format!(
                        "the two sides have different shapes: term {} is {} on the left but {} on the right at {show}",
                        k + 1,
                        show_kind(&x),
                        show_kind(&y)
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Every operator of `t` is a def of `program`.
fn operators(t: &Term, program: &Program) -> Result<(), (Pos, String)> {
    if let Term::Call { op, args, at } = t {
        if program.def(op).is_none() {
            return Err((*at, format!("unknown operator `{op}`")));
        }
        for a in args {
            operators(a, program)?;
        }
    }
    Ok(())
}

/// Every variable and size symbol of `to` occurs in `from` (the side
/// named `side`) or in the shape of a variable `from` binds.
fn bound_by(r: &Rule, from: &[Term], to: &[Term], side: &str) -> Result<(), (Pos, String)> {
    let mut vars = BTreeSet::new();
    let mut symbols = BTreeSet::new();
    for t in from {
        collect(t, &mut vars, &mut symbols, &mut Vec::new());
    }
    for v in &r.vars {
        if let (true, VarKind::Tensor(dims)) = (vars.contains(&v.name), &v.kind) {
            for d in dims {
                symbols.extend(d.symbols());
            }
        }
    }
    let mut uses = Vec::new();
    for t in to {
        collect(t, &mut BTreeSet::new(), &mut BTreeSet::new(), &mut uses);
    }
    for (name, at, is_var) in uses {
        let known = if is_var {
            vars.contains(&name)
        } else {
            symbols.contains(&name)
        };
        if !known {
            let what = if is_var { "variable" } else { "size symbol" };
            return Err((
                at,
                format!("{what} `{name}` is not bound by the {side} side"),
            ));
        }
    }
    Ok(())
}

/// The variables and size symbols of `t`, as sets and as located uses
/// (`true` for a variable).
fn collect(
    t: &Term,
    vars: &mut BTreeSet<String>,
    symbols: &mut BTreeSet<String>,
    uses: &mut Vec<(String, Pos, bool)>,
) {
    match t {
        Term::Call { args, .. } => args.iter().for_each(|a| collect(a, vars, symbols, uses)),
        Term::Var { name, at } => {
            vars.insert(name.clone());
            uses.push((name.clone(), *at, true));
        }
        Term::Int { expr, at } => {
            for s in expr.symbols() {
                symbols.insert(s.clone());
                uses.push((s, *at, false));
            }
        }
        Term::Float { .. } => {}
    }
}

fn show_kind(k: &ArgKind) -> String {
    match k {
        ArgKind::Tensor(s) => format!("{s:?}"),
        ArgKind::Int(v) => format!("the integer {v}"),
        ArgKind::Float => "a float".to_string(),
    }
}
