//! The explanation of an optimized def: each step it applies (a rule, and
//! later a mutant), where in the original program, and how it is proved.
//!
//! Requires the search the result was extracted from and its choice.
//! Guarantees: every chosen call that is not one of the original's
//! statements appears in exactly one step, under the rule that added it
//! to the e-graph first.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::egraph::extract::Choice;
use crate::egraph::lang::{self, Node};
use crate::egraph::Search;

use super::Outcome;

/// One applied step.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    /// The rule (`NAME`, or `NAME<=` applied right to left).
    pub rule: String,
    /// Where: the original statement whose value the step computes anew,
    /// or a new tensor.
    pub at: String,
    /// The operators the step's nodes apply.
    pub ops: Vec<String>,
    /// How the step is proved.
    pub verdict: String,
}

/// The steps of `choice`, in the order of the original statements they
/// replace (new tensors last).
pub fn steps(search: &Search, choice: &Choice) -> Vec<Step> {
    let original = search.original_nodes();
    let origins = origins(search);
    // Keyed by (statement index or MAX, rule) so the steps come in order.
    let mut grouped: BTreeMap<(usize, String), Step> = BTreeMap::new();
    for (id, node) in choice.iter() {
        let Node::Call(op, _) = node else { continue };
        let node = search.canonical(node);
        if original.contains(&node) {
            continue;
        }
        let mutant = super::mutate::mutant_named(search, op.as_str());
        let rule = match mutant {
            Some(m) => generated(m),
            None => origins
                .iter()
                .find(|(n, _)| *n == node)
                .map_or_else(|| "(unrecorded)".to_string(), |(_, r)| r.clone()),
        };
        let place = search
            .statements
            .iter()
            .find(|s| search.egraph.find(s.class) == search.egraph.find(id));
        let (key, at) = match place {
            Some(s) => (
                s.index,
                format!("statement {} (`{}` = {})", s.index + 1, s.result, s.op),
            ),
            None => (usize::MAX, "a new tensor".to_string()),
        };
        let op = match lang::opaque_index(op) {
            Some(k) => format!("statement {}", k + 1),
            None => op.as_str().to_string(),
        };
        let step = grouped.entry((key, rule.clone())).or_insert_with(|| Step {
            rule: rule.clone(),
            at,
            ops: Vec::new(),
            verdict: match mutant {
                Some(m) => mutant_verdict(m),
                None => format!(
                    "rule proved by the verifier at {} sizes",
                    crate::rules::SAMPLES
                ),
            },
        });
        if !step.ops.contains(&op) {
            step.ops.push(op);
        }
    }
    // An original statement whose node the result does not compute is
    // gone: the rules that rewrote its users (or proved its value equal
    // to another) made it unneeded.
    let chosen: Vec<Node> = choice.iter().map(|(_, n)| search.canonical(n)).collect();
    for s in &search.statements {
        if !chosen.contains(&search.canonical(&s.node)) && !grouped.keys().any(|k| k.0 == s.index) {
            grouped.insert(
                (s.index, String::new()),
                Step {
                    rule: "(not computed: the result no longer needs it)".to_string(),
                    at: format!("statement {} (`{}` = {})", s.index + 1, s.result, s.op),
                    ops: Vec::new(),
                    verdict: format!(
                        "rules proved by the verifier at {} sizes",
                        crate::rules::SAMPLES
                    ),
                },
            );
        }
    }
    // The choice is a map: the operators of a step in name order, so
    // that the explanation is the same on every run.
    for step in grouped.values_mut() {
        step.ops.sort();
    }
    grouped.into_values().collect()
}

/// What made a generated def: a derivation or a mutant.
fn generated(m: &crate::mutant::Mutant) -> String {
    if m.def.name.starts_with(super::derivation::PREFIX) {
        format!("derivation: {}", m.description)
    } else {
        format!("mutant: {}", m.description)
    }
}

/// How a mutant is proved: its corrections, and the verdict on it.
fn mutant_verdict(m: &crate::mutant::Mutant) -> String {
    if m.corrections.is_empty() {
        return m.verdict.clone();
    }
    let regions: Vec<String> = m.corrections.iter().map(|r| r.show()).collect();
    format!("corrected on {}; then {}", regions.join(" "), m.verdict)
}

/// Each node a rewrite added, its children canonical now, and the rule
/// that added it.
fn origins(search: &Search) -> Vec<(Node, String)> {
    search
        .egraph
        .analysis
        .origins
        .iter()
        .map(|(n, r)| (search.canonical(n), r.as_str().to_string()))
        .collect()
}

/// The most alternative forms the explanation lists per statement.
const MAX_FORMS: usize = 8;

/// What the search found for each original statement: the other forms
/// of its value in the e-graph (`op`, and the rule that added it), for the
/// statements that have any.
pub fn found(search: &Search) -> Vec<(String, Vec<String>)> {
    let origins = origins(search);
    let mut out = Vec::new();
    for s in &search.statements {
        let mine = search.canonical(&s.node);
        let mut forms: Vec<String> = Vec::new();
        for n in &search.egraph[search.egraph.find(s.class)].nodes {
            let n = search.canonical(n);
            let Node::Call(op, _) = &n else { continue };
            if n == mine {
                continue;
            }
            let form = match super::mutate::mutant_named(search, op.as_str()) {
                Some(m) => format!("{} ({})", generated(m), mutant_verdict(m)),
                None => {
                    let rule = origins
                        .iter()
                        .find(|(o, _)| *o == n)
                        .map_or("", |(_, r)| r.as_str());
                    format!("{op} ({rule})")
                }
            };
            if !forms.contains(&form) {
                forms.push(form);
            }
        }
        if forms.is_empty() {
            continue;
        }
        forms.sort();
        let more = forms.len().saturating_sub(MAX_FORMS);
        forms.truncate(MAX_FORMS);
        if more > 0 {
            forms.push(format!("and {more} more"));
        }
        out.push((
            format!("statement {} (`{}` = {})", s.index + 1, s.result, s.op),
            forms,
        ));
    }
    out
}

/// The explanation as a table: the steps, the candidates measured, the
/// times before and after, and the proof.
pub fn print_explanation(outcome: &Outcome) -> String {
    let ms = |d: Duration| format!("{:.3} ms", d.as_secs_f64() * 1e3);
    let mut out = String::new();
    if let Some(why) = &outcome.not_searched {
        out.push_str(&format!("not searched: {why}\n"));
    } else {
        out.push_str(&format!(
            "e-graph: {} classes, {} nodes (saturation stopped: {})\n",
            outcome.classes, outcome.nodes, outcome.stopped
        ));
    }
    let d = &outcome.derivation;
    if d.applications > 0 {
        out.push_str(&format!(
            "derivations: {} contractions derived, {} derived programs found, {} proved and added{}\n",
            d.applications,
            d.found,
            d.accepted,
            if d.out_of_time {
                "; stopped at the budget"
            } else {
                ""
            }
        ));
    }
    let m = &outcome.mutation;
    if m.applications > 0 {
        out.push_str(&format!(
            "mutants: {} generated for {} applications, {} checked, {} accepted ({} corrected){}\n",
            m.generated,
            m.applications,
            m.checked,
            m.accepted,
            m.corrected,
            if m.out_of_time {
                "; stopped at the budget"
            } else {
                ""
            }
        ));
    }
    for (statement, forms) in &outcome.found {
        out.push_str(&format!("found for {statement}:\n"));
        for f in forms {
            out.push_str(&format!("  {f}\n"));
        }
    }
    if outcome.steps.is_empty() {
        out.push_str("steps: none (the original is the fastest candidate)\n");
    } else {
        let rows: Vec<[String; 4]> = outcome
            .steps
            .iter()
            .enumerate()
            .map(|(k, s)| {
                [
                    format!("{}", k + 1),
                    s.rule.clone(),
                    format!("{} -> {}", s.at, s.ops.join(", ")),
                    s.verdict.clone(),
                ]
            })
            .collect();
        out.push_str(&table(&["step", "rule", "where", "verdict"], &rows));
    }
    let speedup_over = |base: Duration, d: Duration| {
        format!("{:.2}x", base.as_secs_f64() / d.as_secs_f64().max(1e-12))
    };
    let speedup = |d: Duration| speedup_over(outcome.original_time, d);
    // The table's speedups are over the original's time as the table has
    // it, measured (or estimated) like the candidates.
    let base = outcome
        .candidates
        .first()
        .map_or(outcome.original_time, |c| c.measured.unwrap_or(c.estimate));
    let rows: Vec<[String; 4]> = outcome
        .candidates
        .iter()
        .map(|c| {
            let time = c.measured.unwrap_or(c.estimate);
            [
                c.name.clone(),
                ms(c.estimate),
                c.measured.map_or_else(|| "-".to_string(), ms),
                speedup_over(base, time),
            ]
        })
        .collect();
    out.push_str(&table(
        &["candidate", "estimate", "measured", "speedup"],
        &rows,
    ));
    for (name, why) in &outcome.unprovable {
        out.push_str(&format!("not a candidate: {name}: {why}\n"));
    }
    if !outcome.side_by_side.is_empty() {
        let times: Vec<String> = outcome
            .side_by_side
            .iter()
            .map(|(name, t)| format!("{name} {}", ms(*t)))
            .collect();
        out.push_str(&format!(
            "side by side: {}{}\n",
            times.join(", "),
            if outcome.changed {
                ""
            } else {
                " (none faster beyond the noise: the original stays)"
            }
        ));
    }
    if outcome.measured {
        out.push_str(&format!(
            "time: {} before, {} after ({}), measured; search {:.2} s\n",
            ms(outcome.original_time),
            ms(outcome.time),
            speedup(outcome.time),
            outcome.elapsed.as_secs_f64()
        ));
        let phases: Vec<String> = outcome
            .phases
            .iter()
            .map(|(name, t)| format!("{name} {:.2} s", t.as_secs_f64()))
            .collect();
        out.push_str(&format!("search phases: {}\n", phases.join(", ")));
    } else {
        // Without measurements the output is the same on every run, and
        // the search's time is left out to keep it so.
        out.push_str(&format!(
            "time: {} before, {} after ({}), estimated\n",
            ms(outcome.original_time),
            ms(outcome.time),
            speedup(outcome.time)
        ));
    }
    if let Some(proof) = &outcome.proof {
        out.push_str(&format!("proof of the result: {}\n", proof.trim_end()));
    }
    out
}

/// Rows under a header, columns padded to their widest cell.
fn table<const N: usize>(header: &[&str; N], rows: &[[String; N]]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for r in rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.len());
        }
    }
    let line = |cells: Vec<&str>| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        format!("{}\n", padded.join("  ").trim_end())
    };
    let mut out = line(header.to_vec());
    for r in rows {
        out.push_str(&line(r.iter().map(|c| c.as_str()).collect()));
    }
    out
}
