//! Deciding whether two defs compute the same outputs (PET §5, through
//! `opt::verify`), from checked sources: what `tessera verify` and the
//! Python package's `tessera.verify` call.
//!
//! Guarantees: the two sides are distinct defs; a problem with the request
//! (a def that is not there, signatures that do not correspond, sizes that
//! do not bind) is an [`Error`], never a verdict.

use crate::{Error, Source};

/// Verifies def `def_a` of `a` (its only def when `None`) against def
/// `def_b` of `b` (default: the def of the same name; `b` defaults to
/// `a`).
pub fn verify(
    a: &Source,
    def_a: Option<&str>,
    b: Option<&Source>,
    def_b: Option<&str>,
    options: &opt::verify::Options,
) -> Result<opt::verify::Report, Error> {
    crate::bind::check_positive(&options.sizes)?;
    let da = a.pick_def(def_a)?;
    let b_source = b.unwrap_or(a);
    let db = b_source.pick_def(Some(def_b.unwrap_or(&da.name)))?;
    if b.is_none() && da.name == db.name {
        return Err(Error::Usage(format!(
            "both sides are `{}` of `{}`\n  = help: name the second def, or give a second source",
            da.name, a.name
        )));
    }
    if options.trials == Some(0) {
        return Err(Error::Usage("`trials` must be at least 1".to_string()));
    }
    opt::verify::verify(a.program(), &da.name, b_source.program(), &db.name, options)
        .map_err(Error::Usage)
}
