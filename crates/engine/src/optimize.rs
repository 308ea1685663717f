//! The program optimizer as the engine offers it: `opt::optimize` on a
//! loaded source, with the cost service timing candidates, the shipped
//! rules and any rules file the caller adds (each of its rules proved by
//! the verifier at its sample sizes before it is used).
//!
//! Requires a loaded [`Source`] and sizes binding the def's size symbols.
//! Guarantees: what `opt::optimize` guarantees (the result is never
//! measured slower than the original and is proved equal to it); a
//! caller's rule that is malformed or not proved is an error naming it.

use std::collections::HashMap;
use std::path::PathBuf;

use interp::Arg;
use ir::Value;
use opt::optimize::{Event, Outcome};
use opt::rules::Rule;

use crate::cost::CostService;
use crate::source::{read_text, Source};
use crate::{compile, Error};

/// How to optimize.
#[derive(Clone, Debug, Default)]
pub struct Options {
    pub search: opt::optimize::Options,
    pub compile: compile::Options,
    /// Rules files to use beside the shipped rules.
    pub rules: Vec<PathBuf>,
}

/// Optimizes def `def` (the only one when `None`) of `source` at `sizes`.
pub fn optimize(
    source: &Source,
    def: Option<&str>,
    sizes: &HashMap<String, i64>,
    options: &Options,
    progress: &mut dyn FnMut(Event),
) -> Result<Outcome, Error> {
    options.search.check().map_err(Error::Usage)?;
    let d = source.pick_def(def)?;
    let program = source.program();
    let sizes = bound_sizes(d, sizes)?;
    let rules = rules(program, &options.rules)?;
    let service = CostService::open_default(&options.compile)?;
    opt::optimize::optimize(
        program,
        &d.name,
        &sizes,
        &rules,
        &service,
        &options.search,
        progress,
    )
    .map_err(|e| match e {
        opt::optimize::Error::Usage(m) => Error::Usage(m),
        opt::optimize::Error::Cost(e) => e,
        opt::optimize::Error::Internal(m) => Error::Internal(m),
    })
}

/// Every size symbol and integer scalar of `d`, from `given`.
fn bound_sizes(d: &ir::Def, given: &HashMap<String, i64>) -> Result<HashMap<String, i64>, Error> {
    let args = crate::bind::int_scalars(d, given);
    let mut sizes =
        interp::bind_sizes(d, &args, given).map_err(|e| Error::Sizes(e.message.clone()))?;
    for (name, arg) in args {
        if let Arg::Scalar(Value::Int(v)) = arg {
            sizes.insert(name, v);
        }
    }
    Ok(sizes)
}

/// The shipped rules and those of `files`, each of the latter proved.
fn rules(program: &ir::Program, files: &[PathBuf]) -> Result<Vec<Rule>, Error> {
    let mut rules = opt::optimize::shipped_rules(program)
        .map_err(|e| Error::Internal(format!("the shipped rules: {e}")))?;
    for path in files {
        let (name, text) = read_text(path)?;
        let more = opt::rules::load(&text, &name, program).map_err(Error::Usage)?;
        opt::rules::prove::prove_all(&more, &name, onnx::PRELUDE).map_err(Error::Usage)?;
        rules.extend(more);
    }
    Ok(rules)
}
