//! The program optimizer as the engine offers it: `opt::optimize` on a
//! loaded source, with the cost service timing candidates, the shipped
//! rules and any rules file the caller adds (each of its rules proved by
//! the verifier at its sample sizes before it is used), and its results
//! kept in the disk cache ([`crate::optimize_cache`]).
//!
//! [`optimize`] always searches (`tessera optimize`: its whole
//! [`Outcome`], candidates and e-graph included, is for explaining) and
//! stores the result; [`optimize_cached`] reuses a stored result of an
//! identical request and searches only when there is none (`run
//! --optimize`, the Python package), giving an [`Optimized`] either way.
//!
//! Requires a loaded [`Source`] and sizes binding the def's size symbols.
//! Guarantees: what `opt::optimize` guarantees (the result is never
//! measured slower than the original and is proved equal to it); a cached
//! result is one such result, for the same request; a caller's rule that
//! is malformed or not proved is an error naming it.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use interp::Arg;
use ir::{Def, Program, Value};
use opt::optimize::{Event, Outcome, Step};
use opt::rules::Rule;

use crate::bind::{Bound, Sizes};
use crate::cost::CostService;
use crate::optimize_cache::{self, Cache, KeyParts};
use crate::source::{read_text, Source};
use crate::{compile, Error};

/// How to optimize.
#[derive(Clone, Debug, Default)]
pub struct Options {
    pub search: opt::optimize::Options,
    pub compile: compile::Options,
    /// Rules files to use beside the shipped rules.
    pub rules: Vec<PathBuf>,
    /// Time the caller already spent on the request (loading the model,
    /// say), taken off the search's budget, down to half of it: so that
    /// the whole request takes about the budget. Not part of the cache
    /// key: the same request loaded faster is the same request.
    pub spent: Duration,
}

/// What optimizing a def gave: searched now, or an earlier identical
/// search's result read from the cache.
#[derive(Clone, Debug)]
pub struct Optimized {
    /// The optimized def (the original when unchanged).
    pub def: Def,
    /// The whole program with the def replaced by [`Optimized::def`], and
    /// the defs it calls that the search generated (mutants) before it.
    pub program: Program,
    /// As TC text, the generated defs and the optimized def at the sizes
    /// (the original def's text when unchanged), which check after the
    /// program's other defs (for a result read from the cache, always).
    pub text: String,
    /// Whether the def changed.
    pub changed: bool,
    /// The original's time and the result's: measured, or estimated when
    /// the search does not measure ([`Optimized::measured`]).
    pub original_time: Duration,
    pub time: Duration,
    pub measured: bool,
    /// The steps the result applies.
    pub steps: Vec<Step>,
    /// The verifier's verdict on the result (`None` when unchanged).
    pub proof: Option<String>,
    /// Why the def was not searched (the result is then the original).
    pub not_searched: Option<String>,
    /// The search's time (for a cached result, that of the search that
    /// found it).
    pub elapsed: Duration,
    /// Whether the result was read from the cache.
    pub cached: bool,
    /// Whether [`Optimized::text`] checks back into the program (always
    /// so for a cached result); a result whose text does not is used but
    /// not stored.
    pub(crate) text_checks: bool,
}

impl Optimized {
    /// The original's time over the result's.
    pub fn speedup(&self) -> f64 {
        self.original_time.as_secs_f64() / self.time.as_secs_f64().max(1e-12)
    }

    /// One line saying what happened: `optimized `f`: 2 steps, 3.06x
    /// (measured), search 4.1 s`, or `..., cached`.
    pub fn summary(&self) -> String {
        let name = &self.def.name;
        let how = if self.measured {
            "measured"
        } else {
            "estimated"
        };
        let head = match &self.not_searched {
            Some(why) => format!("`{name}` not optimized: {why}"),
            None if self.changed => format!(
                "optimized `{name}`: {} step{}, {:.2}x ({how})",
                self.steps.len(),
                if self.steps.len() == 1 { "" } else { "s" },
                self.speedup()
            ),
            None => format!("`{name}` kept: no faster equivalent found ({how})"),
        };
        // Without measurements the line is the same on every run (as
        // `tessera optimize --explain`'s is), so the search's time is left
        // out.
        if self.cached {
            format!("{head}, cached")
        } else if self.measured {
            format!("{head}, search {:.1} s", self.elapsed.as_secs_f64())
        } else {
            head
        }
    }
}

/// Optimizes def `def` (the only one when `None`) of `source` at `sizes`,
/// searching now, and stores the result in the per-user cache; a changed
/// def comes back written at the sizes.
pub fn optimize(
    source: &Source,
    def: Option<&str>,
    sizes: &HashMap<String, i64>,
    options: &Options,
    progress: &mut dyn FnMut(Event),
) -> Result<Outcome, Error> {
    options.search.check().map_err(Error::Usage)?;
    let service = CostService::open_default(&options.compile)?
        .timing_library(options.search.measure)
        .with_constants(source.weight_names());
    let request = Request::new(source, def, sizes, options, &service)?;
    let mut outcome = request.search(&service, progress)?;
    Cache::open_default()?.put(&request.key, &request.result(&outcome))?;
    // A changed def is for the sizes it was searched at (its mutants'
    // defs declare them), so it is returned written at them: its text
    // then checks.
    if outcome.changed {
        let name = request.def().name.clone();
        if let Some(d) = outcome.program.defs.iter_mut().find(|d| d.name == name) {
            *d = ir::at_sizes(d, &request.sizes);
        }
    }
    Ok(outcome)
}

/// Optimizes def `def` (the only one when `None`) of `source` at `sizes`:
/// the per-user cache's result for this request, else searched now and
/// stored.
pub fn optimize_cached(
    source: &Source,
    def: Option<&str>,
    sizes: &HashMap<String, i64>,
    options: &Options,
    progress: &mut dyn FnMut(Event),
) -> Result<Optimized, Error> {
    options.search.check().map_err(Error::Usage)?;
    let service = CostService::open_default(&options.compile)?
        .timing_library(options.search.measure)
        .with_constants(source.weight_names());
    optimize_in(
        &Cache::open_default()?,
        &service,
        source,
        def,
        sizes,
        options,
        progress,
    )
}

/// [`optimize_cached`] with a given cache and cost service (whose
/// identity, not `options.compile`, is what the key records).
pub fn optimize_in(
    cache: &Cache,
    service: &CostService,
    source: &Source,
    def: Option<&str>,
    sizes: &HashMap<String, i64>,
    options: &Options,
    progress: &mut dyn FnMut(Event),
) -> Result<Optimized, Error> {
    options.search.check().map_err(Error::Usage)?;
    let request = Request::new(source, def, sizes, options, service)?;
    cache.get_or_search(
        &request.key,
        &request.program,
        request.def(),
        &request.sizes,
        || Ok(request.result(&request.search(service, progress)?)),
    )
}

/// The sizes a search for a run of `def` on `bound` binds: the bound
/// sizes and the integer scalar arguments (a search specializes the def
/// to both).
pub fn run_sizes(def: &Def, bound: &Bound) -> Sizes {
    let mut sizes = bound.sizes.clone();
    for p in &def.params {
        if let Some(Arg::Scalar(Value::Int(v))) = bound.args.get(p.name()) {
            sizes.insert(p.name().to_string(), *v);
        }
    }
    sizes
}

/// One request: what to search, and its cache key.
struct Request<'s> {
    /// The program searched ([`searched_program`]).
    program: Cow<'s, Program>,
    /// The def's index in it.
    index: usize,
    sizes: Sizes,
    /// The caller's rules files: their names and texts.
    rules: Vec<(String, String)>,
    options: &'s Options,
    /// The search's options, with the source's weights as its constants.
    search: opt::optimize::Options,
    key: String,
}

impl<'s> Request<'s> {
    fn new(
        source: &'s Source,
        def: Option<&str>,
        sizes: &HashMap<String, i64>,
        options: &'s Options,
        service: &CostService,
    ) -> Result<Request<'s>, Error> {
        let name = &source.pick_def(def)?.name;
        let program = searched_program(source);
        let index = program
            .defs
            .iter()
            .position(|d| d.name == *name)
            .ok_or_else(|| Error::Internal(format!("no def `{name}` to search")))?;
        let sizes = bound_sizes(&program.defs[index], sizes)?;
        let rules = options
            .rules
            .iter()
            .map(|p| read_text(p))
            .collect::<Result<Vec<_>, Error>>()?;
        let texts: Vec<String> = std::iter::once(opt::rules::REWRITES.to_string())
            .chain(rules.iter().map(|(_, t)| t.clone()))
            .collect();
        let search = opt::optimize::Options {
            constants: source.weight_names(),
            ..options.search.clone()
        };
        let key = optimize_cache::key(&KeyParts {
            program: &program,
            def: name,
            sizes: &sizes,
            rules: &texts,
            search: &search,
            service: &service.identity(),
        });
        Ok(Request {
            program,
            index,
            sizes,
            rules,
            options,
            search,
            key,
        })
    }

    /// The def searched.
    fn def(&self) -> &Def {
        &self.program.defs[self.index]
    }

    /// Searches now (the caller's rules proved first).
    fn search(
        &self,
        service: &CostService,
        progress: &mut dyn FnMut(Event),
    ) -> Result<Outcome, Error> {
        let rules = rules(&self.program, &self.rules)?;
        let mut search = self.search.clone();
        search.budget = search
            .budget
            .saturating_sub(self.options.spent)
            .max(search.budget / 2);
        opt::optimize::optimize(
            &self.program,
            &self.def().name,
            &self.sizes,
            &rules,
            service,
            &search,
            progress,
        )
        .map_err(|e| match e {
            opt::optimize::Error::Usage(m) => Error::Usage(m),
            opt::optimize::Error::Cost(e) => e,
            opt::optimize::Error::Internal(m) => Error::Internal(m),
        })
    }

    /// The search's `outcome` as a result, checked back into the program
    /// from its text, so that a fresh result and a cached one are the
    /// same program.
    fn result(&self, outcome: &Outcome) -> Optimized {
        let def = self.def();
        let text = result_text(&self.program, &outcome.program, def, &self.sizes);
        let rebuilt = if outcome.changed {
            optimize_cache::rebuild(&self.program, def, &text, &self.sizes).ok()
        } else {
            Some(self.program.clone().into_owned())
        };
        let text_checks = rebuilt.is_some();
        let program = rebuilt.unwrap_or_else(|| outcome.program.clone());
        Optimized {
            def: program.def(&def.name).unwrap_or(def).clone(),
            program,
            text,
            changed: outcome.changed,
            original_time: outcome.original_time,
            time: outcome.time,
            measured: outcome.measured,
            steps: outcome.steps.clone(),
            proof: outcome.proof.clone(),
            not_searched: outcome.not_searched.clone(),
            elapsed: outcome.elapsed,
            cached: false,
            text_checks,
        }
    }
}

/// The defs of `result` that `original` lacks and def `def`'s result, as
/// TC, in `result`'s order. The def is printed at `sizes`
/// ([`ir::at_sizes`]): the defs the search generates are for the
/// sizes, and the checker cannot match their shapes against symbolic ones.
fn result_text(original: &Program, result: &Program, def: &Def, sizes: &Sizes) -> String {
    result
        .defs
        .iter()
        .filter(|d| d.name == def.name || original.def(&d.name).is_none())
        .map(|d| {
            if d.name == def.name {
                ir::print_def(result, &ir::at_sizes(d, sizes))
            } else {
                ir::print_def(result, d)
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The program a search of `source` works on: its own, or, for a TC file
/// checked without the operator prelude (it calls none of its
/// operators), the prelude's defs and the file's, since the shipped rules
/// and the mutants are written over the prelude's operators. A file that
/// defines a def of a prelude operator's name keeps its own program.
fn searched_program(source: &Source) -> Cow<'_, Program> {
    if source.model.is_some() || source.prelude_defs > 0 {
        return Cow::Borrowed(source.program());
    }
    match tc::check_source(&format!("{}\n{}", onnx::PRELUDE, source.text)) {
        Ok(checked) => Cow::Owned(checked.program),
        Err(_) => Cow::Borrowed(source.program()),
    }
}

/// Every size symbol and integer scalar of `d`, from `given`.
fn bound_sizes(d: &Def, given: &HashMap<String, i64>) -> Result<HashMap<String, i64>, Error> {
    let args = crate::bind::int_scalars(d, given);
    let mut sizes =
        interp::bind_sizes(d, &args, given).map_err(|e| Error::Sizes(e.message.clone()))?;
    for (name, arg) in args {
        if let Arg::Scalar(Value::Int(v)) = arg {
            sizes.insert(name, v);
        }
    }
    // A search runs the def at these sizes: each must have a value.
    if let Some(unbound) = d
        .size_symbols()
        .into_iter()
        .find(|s| !sizes.contains_key(s))
    {
        return Err(Error::Sizes(format!(
            "size `{unbound}` of def `{}` has no value; a search is for concrete sizes\n  = help: bind it with `--size {unbound}=N`",
            d.name
        )));
    }
    Ok(sizes)
}

/// The shipped rules and those of `files` (names and texts), each of the
/// latter proved.
fn rules(program: &Program, files: &[(String, String)]) -> Result<Vec<Rule>, Error> {
    let mut rules = opt::optimize::shipped_rules(program)
        .map_err(|e| Error::Internal(format!("the shipped rules: {e}")))?;
    for (name, text) in files {
        let more = opt::rules::load(text, name, program).map_err(Error::Usage)?;
        opt::rules::prove::prove_all(&more, name, onnx::PRELUDE).map_err(Error::Usage)?;
        rules.extend(more);
    }
    Ok(rules)
}
