//! Tuning one kernel: the genetic search (`genetic.rs`) over its space
//! (`space.rs`), every candidate measured as a job through an executor
//! (`worker.rs`), the untuned default measured the same way first, and
//! the winner kept in the tuning cache (`cache.rs`) when it beats both the
//! default and what the cache held.
//!
//! Generation zero starts from the cost models' record and the cached
//! one. The search stops at its last generation, at the budget, or when
//! `interrupted` says so (Ctrl-C), and keeps what it found either way,
//! when it is at least 3% faster than the default and the cached entry.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use ir::Program;

use super::cache::{self, Entry, Lookup, TuneCache};
use super::genetic::{self, Outcome, Params, Progress};
use super::job::{Job, Reply};
use super::space::Space;
use super::worker::Executor;
use crate::{compile, Error};

/// A winner is kept only when it takes at most this fraction of the
/// default's time (and of the cached entry's): closer than that is within
/// the noise of two medians on a busy machine.
const KEEP: f64 = 0.97;

/// What to tune.
#[derive(Clone, Debug)]
pub struct Request<'a> {
    pub program: &'a Program,
    pub def: &'a str,
    pub sizes: &'a BTreeMap<String, i64>,
    pub params: Params,
    pub budget: Duration,
}

/// What tuning found.
#[derive(Clone, Debug, PartialEq)]
pub struct Tuned {
    /// The untuned default's time.
    pub default_ns: u64,
    /// The fastest candidate timed: its options and time.
    pub best: Option<(kernel::Options, u64)>,
    /// Candidates measured, and the reasons of those that failed.
    pub measured: usize,
    pub failed: Vec<String>,
    /// Whether the cache now holds the winner (it beat the default and the
    /// cache's entry).
    pub stored: bool,
    /// The cache entry before tuning, if it held a usable one.
    pub cached: Option<u64>,
    /// A damaged cache entry found, and why.
    pub damaged: Option<String>,
}

/// The tuning cache's key for `def` of `program` at `sizes` on this
/// machine and compiler.
pub fn cache_key(
    program: &Program,
    def: &str,
    sizes: &BTreeMap<String, i64>,
) -> Result<String, Error> {
    let resolved = compile::Options::default().resolve()?;
    let kernels = codegen::cache::KernelCache::open_default().map_err(Error::cache)?;
    Ok(cache::key(
        &ir::print_program(program),
        def,
        sizes,
        &resolved.target.codegen_text(),
        kernels.compiler_id(),
    ))
}

/// The options the tuning cache holds for `def` of `program` at `sizes`
/// on `target` with the compiler of `kernels`, and their tuned time; `None`
/// when it holds none, or a damaged entry, or cannot be read (compiling
/// never fails for the tuning cache).
pub fn cached(
    program: &Program,
    def: &ir::Def,
    sizes: &HashMap<String, i64>,
    target: &kernel::Target,
    kernels: &codegen::cache::KernelCache,
) -> Option<(kernel::Options, u64)> {
    // Every compile asks: a cache without entries answers before the
    // program is printed and hashed.
    let dir = TuneCache::default_dir().ok()?;
    let tuned_any = std::fs::read_dir(&dir)
        .ok()?
        .filter_map(Result::ok)
        .any(|e| e.path().extension().is_some_and(|x| x == "json"));
    if !tuned_any {
        return None;
    }
    let sorted: BTreeMap<String, i64> = sizes.clone().into_iter().collect();
    let key = cache::key(
        &ir::print_program(program),
        &def.name,
        &sorted,
        &target.codegen_text(),
        kernels.compiler_id(),
    );
    let cache = TuneCache::open(dir).ok()?;
    match cache.get(&key).ok()? {
        Lookup::Hit(e, o) => Some((o, e.time_ns)),
        Lookup::Miss | Lookup::Damaged(_) => None,
    }
}

/// Tunes `req` with `executor`, keeping the winner in `cache`.
pub fn tune(
    req: &Request,
    executor: &dyn Executor,
    cache: &TuneCache,
    progress: &mut dyn FnMut(&Progress),
    interrupted: &dyn Fn() -> bool,
) -> Result<Tuned, Error> {
    let text = ir::print_program(req.program);
    let key = cache_key(req.program, req.def, req.sizes)?;
    let (held, damaged) = match cache.get(&key)? {
        Lookup::Hit(e, o) => (Some((e, o)), None),
        Lookup::Miss => (None, None),
        Lookup::Damaged(why) => (None, Some(why)),
    };
    let resolved = compile::Options::default().resolve()?;
    let sizes: HashMap<String, i64> = req.sizes.clone().into_iter().collect();
    let def = req
        .program
        .def(req.def)
        .ok_or_else(|| Error::Usage(format!("no def `{}`", req.def)))?;
    // The program `run` and `bench` compile: in their layouts.
    let blocked = compile::layout(req.program, def, &sizes, &resolved.target);
    let compiled = blocked.as_ref().unwrap_or(req.program);
    let (taken, indices) =
        runtime::options_taken(compiled, req.def, &sizes, &resolved).map_err(Error::Build)?;
    let space = Space::new(&taken, &indices);
    if space.sizes().is_empty() {
        return Err(Error::Usage(format!(
            "`{}` has nothing to tune at these sizes: no step has a choice of tiles, vectors, jam, parallel index or unrolling (matrix products run in the matmul library)",
            req.def
        )));
    }
    let job = |options: &kernel::Options, best_ns: Option<u64>| Job {
        program: text.clone(),
        def: req.def.to_string(),
        sizes: req.sizes.clone(),
        options: kernel::print_options(options),
        best_ns,
        seed: 7,
        compile_only: false,
        fault: None,
    };
    let default_ns = match executor
        .measure(&[job(&kernel::Options::default(), None)])
        .pop()
    {
        Some(Reply::Time { median_ns }) => median_ns,
        Some(Reply::Failed { reason }) => {
            return Err(Error::Usage(format!(
                "`{}` cannot be tuned: its untuned kernel failed to run: {reason}",
                req.def
            )))
        }
        other => {
            return Err(Error::Internal(format!(
                "internal error: the untuned kernel gave no time: {other:?}"
            )))
        }
    };
    let mut seeds = vec![space.encode(&taken)];
    if let Some((_, o)) = &held {
        seeds.push(space.encode(o));
    }
    let started = Instant::now();
    let mut failed = Vec::new();
    let report = genetic::search(
        &space.sizes(),
        &req.params,
        &seeds,
        &mut |genomes, best| {
            let best_ns = best
                .map_or(default_ns, |t| (t * 1e9) as u64)
                .min(default_ns);
            let jobs: Vec<Job> = genomes
                .iter()
                .map(|g| job(&space.decode(g), Some(best_ns)))
                .collect();
            executor
                .measure(&jobs)
                .into_iter()
                .map(|r| match r {
                    Reply::Time { median_ns } => Outcome::Time(median_ns as f64 / 1e9),
                    Reply::Pruned { .. } => Outcome::Pruned,
                    Reply::Failed { reason } => {
                        failed.push(reason.clone());
                        Outcome::Failed(reason)
                    }
                })
                .collect()
        },
        progress,
        &|| interrupted() || started.elapsed() >= req.budget,
    );
    let best = report
        .best
        .map(|(g, t)| (space.decode(&g), (t * 1e9) as u64));
    let cached = held.as_ref().map(|(e, _)| e.time_ns);
    let mut stored = false;
    if let Some((options, ns)) = &best {
        let beats = |other: u64| (*ns as f64) < KEEP * other as f64;
        if beats(default_ns) && cached.is_none_or(beats) {
            stored = cache.put(
                &key,
                &Entry {
                    format: cache::FORMAT.to_string(),
                    def: req.def.to_string(),
                    sizes: req.sizes.clone(),
                    options: kernel::print_options(options),
                    time_ns: *ns,
                    default_ns,
                    candidates: report.measured.len() as u64,
                },
            )?;
        }
    }
    Ok(Tuned {
        default_ns,
        best,
        measured: report.measured.len(),
        failed,
        stored,
        cached,
        damaged,
    })
}
