//! A rule proved at concrete sizes: each side written as a TC def over
//! the prelude's operators, and the equivalence verifier asked whether
//! they compute the same (exactly over Z_p where both are multi-linear,
//! else in floating point).
//!
//! Requires a rule that [`super::load`] accepted and the text of the
//! prelude its operators come from. Guarantees: `Ok` only when the
//! verifier calls the two sides equivalent at these sizes; an error shows
//! both sides and the verifier's report.

use super::instance::{self, Sizes};
use super::Rule;

/// Proves `rule`'s two sides equal at `sizes`.
pub fn prove(rule: &Rule, sizes: &Sizes, prelude: &str) -> Result<(), String> {
    let lhs = instance::side_def(rule, &rule.lhs, "rule_lhs", sizes)?;
    let rhs = instance::side_def(rule, &rule.rhs, "rule_rhs", sizes)?;
    let text = format!("{prelude}\n{lhs}\n{rhs}");
    let program = tc::check_source(&text)
        .map_err(|d| {
            format!(
                "the sides do not check:\n{lhs}{rhs}{}",
                tc::render_diagnostics(&d, "rule", &text)
            )
        })?
        .program;
    let report = crate::verify::verify(
        &program,
        "rule_lhs",
        &program,
        "rule_rhs",
        &crate::verify::Options::default(),
    )?;
    if report.equivalent() {
        Ok(())
    } else {
        Err(format!(
            "not equivalent:\n{lhs}{rhs}{}",
            crate::verify::print_report(&report)
        ))
    }
}

/// Proves every rule of `rules` (read from `file`) at each of its
/// [`super::SAMPLES`] sample sizes; the error names the first rule that
/// fails, where it is (`file:line:col`) and its sizes.
pub fn prove_all(rules: &[Rule], file: &str, prelude: &str) -> Result<(), String> {
    for rule in rules {
        for sizes in instance::samples(rule, super::SAMPLES) {
            prove(rule, &sizes, prelude).map_err(|e| {
                format!(
                    "{file}:{}:{}: rule `{}` at {sizes:?}: {e}",
                    rule.at.line, rule.at.col, rule.name
                )
            })?;
        }
    }
    Ok(())
}
