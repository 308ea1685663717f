//! Tuning one kernel: the genetic search (`genetic.rs`) over its space
//! (`space.rs`), every candidate measured as a job through an executor
//! (`worker.rs`), the untuned default measured the same way first, and
//! the winner kept in the tuning cache (`cache.rs`) when it beats both the
//! default and what the cache held.
//!
//! A kernel the cache holds is answered from it, without measuring,
//! unless the caller asks to search again. Generation zero starts from the
//! cost models' record, the cached one, and the record with one choice
//! changed in the stages that take most of the untuned kernel's time. The
//! search stops at its last generation, at the budget, or when
//! `interrupted` says so (Ctrl-C), stopping the candidate being measured. Unless stopped, its fastest
//! candidates and the cached record are measured again beside the
//! default, in turns ([`confirm`]); the winner is kept when it is 3%
//! faster than the default with 95% confidence, after the default's
//! outputs, which every would-be winner matched, are checked against the
//! interpreter.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::time::{Duration, Instant};

use ir::Program;

use super::cache::{self, Entry, Lookup, TuneCache};
use super::genetic::{self, Genome, Outcome, Params, Progress};
use super::job::{Job, Reply};
use super::space::{self, Space};
use super::worker::Executor;
use crate::{compile, Error};

/// A winner is kept only when it takes less than this fraction of the
/// default's time, with 95% confidence: closer than that is within the
/// noise of two medians on a busy machine.
const KEEP: f64 = 0.97;

/// What to tune.
#[derive(Clone, Debug)]
pub struct Request<'a> {
    pub program: &'a Program,
    pub def: &'a str,
    pub sizes: &'a BTreeMap<String, i64>,
    /// The inputs declared constant (`bench --constant`): the kernel tuned
    /// is the def without what depends on them alone.
    pub constants: &'a BTreeSet<String>,
    /// The ONNX model `program` was imported from: the jobs import it
    /// again, and run with its weights (`constants` names them).
    pub model: Option<&'a std::path::Path>,
    pub params: Params,
    /// When set, the population is scaled down to what the budget can
    /// measure in [`GENERATIONS_IN_BUDGET`] generations (by the untuned
    /// kernel's measuring time), from `params.population` at most.
    pub fit_population: bool,
    pub budget: Duration,
    /// Search even when the cache holds an entry (seeded by it); otherwise
    /// a cached entry is the answer, found without measuring anything.
    pub again: bool,
}

/// The generations a budget-scaled population leaves room for: a genetic
/// search needs several to breed from its measurements.
pub const GENERATIONS_IN_BUDGET: f64 = 6.0;

/// The smallest budget-scaled population.
const MIN_POPULATION: usize = 8;

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
    /// The population each generation had.
    pub population: usize,
    /// Whether the cache now holds the winner (it beat the default and the
    /// cache's entry).
    pub stored: bool,
    /// The cache entry before tuning, if it held a usable one.
    pub cached: Option<u64>,
    /// Whether the answer is the cache's entry, found without a search.
    pub from_cache: bool,
    /// Whether `interrupted` stopped the search (it kept what it found).
    pub interrupted: bool,
    /// A damaged cache entry found, and why.
    pub damaged: Option<String>,
    /// When the best time so far improved: seconds since tuning began, and
    /// the new best (the untuned kernel's time first).
    pub trajectory: Vec<(f64, u64)>,
    /// How long tuning took, in seconds (for an answer from the cache: the
    /// lookup, the key's making included).
    pub seconds: f64,
    /// How long checking the untuned kernel's outputs against the
    /// interpreter took, in seconds, when a winner was to be kept (the
    /// check follows the search; `seconds` includes it).
    pub checked: Option<f64>,
}

/// The options the tuning cache holds for `def` of `program` at `sizes`
/// with the tensors `constants` declared constant, on `target` with the
/// compiler of `kernels`, and their tuned time; `None` when it holds none,
/// or a damaged entry, or cannot be read (compiling never fails for the
/// tuning cache).
pub fn cached(
    program: &Program,
    def: &ir::Def,
    sizes: &HashMap<String, i64>,
    constants: &HashSet<String>,
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
        &constants.iter().cloned().collect(),
        &target.codegen_text(),
        kernels.compiler_id(),
    );
    let cache = TuneCache::open(dir).ok()?;
    match cache.get(&key).ok()? {
        Lookup::Hit(e, o) => Some((o, e.time_ns)),
        Lookup::Miss | Lookup::Damaged(_) => None,
    }
}

/// Tunes `req` with `executor`, keeping the winner in `cache`; a cached
/// entry is the answer unless `req.again`. `interrupted` (Ctrl-C) stops
/// the search, which keeps what it found; an error when it stops the
/// untuned kernel's measurement.
pub fn tune(
    req: &Request,
    executor: &dyn Executor,
    cache: &TuneCache,
    progress: &mut dyn FnMut(&Progress),
    interrupted: &dyn Fn() -> bool,
) -> Result<Tuned, Error> {
    let started = Instant::now();
    let resolved = compile::Options::default().resolve()?;
    let kernels = codegen::cache::KernelCache::open_default().map_err(Error::cache)?;
    let text = ir::print_program(req.program);
    let key = cache::key(
        &text,
        req.def,
        req.sizes,
        req.constants,
        &resolved.target.codegen_text(),
        kernels.compiler_id(),
    );
    let (held, damaged) = match cache.get(&key)? {
        Lookup::Hit(e, o) => (Some((e, o)), None),
        Lookup::Miss => (None, None),
        Lookup::Damaged(why) => (None, Some(why)),
    };
    if let (Some((entry, options)), false) = (&held, req.again) {
        return Ok(Tuned {
            default_ns: entry.default_ns,
            best: Some((options.clone(), entry.time_ns)),
            measured: 0,
            failed: Vec::new(),
            population: 0,
            stored: false,
            cached: Some(entry.time_ns),
            from_cache: true,
            interrupted: false,
            damaged: None,
            trajectory: Vec::new(),
            seconds: started.elapsed().as_secs_f64(),
            checked: None,
        });
    }
    let sizes: HashMap<String, i64> = req.sizes.clone().into_iter().collect();
    let def = req
        .program
        .def(req.def)
        .ok_or_else(|| Error::Usage(format!("no def `{}`", req.def)))?;
    for name in req.constants {
        crate::bind::param(def, name)?;
    }
    // A job's inputs are random tensors: a scalar has no value to take.
    if let Some(p) = def
        .params
        .iter()
        .find(|p| !matches!(p, ir::Param::Tensor(_)))
    {
        return Err(Error::Usage(format!(
            "`{}` cannot be tuned: scalar parameter `{}` has no value",
            req.def,
            p.name()
        )));
    }
    // The program `run` and `bench` compile: in their layouts.
    let blocked = compile::layout(req.program, def, &sizes, &resolved.target);
    let compiled = blocked.as_ref().unwrap_or(req.program);
    let compiled_def = compiled.def(req.def).unwrap_or(def);
    let names: HashSet<String> = req.constants.iter().cloned().collect();
    let split = crate::constants::split(compiled, compiled_def, &sizes, &names)?;
    let (taken, indices) = match &split {
        Some(s) => runtime::options_taken(&s.program, &s.run.name, &s.run_sizes, &resolved),
        None => runtime::options_taken(compiled, req.def, &sizes, &resolved),
    }
    .map_err(Error::Build)?;
    let space = Space::new(&taken, &indices);
    if space.sizes().is_empty() {
        return Err(Error::Usage(format!(
            "`{}` has nothing to tune at these sizes: no step has a choice of tiles, loop order, vectors, jam, parallel index, unrolling, fusion, forwarding or partitions (the matmul library runs products too small to split whole)",
            req.def
        )));
    }
    // The untuned kernel's outputs, saved by its job: every would-be
    // winner is compared with them, and they are checked against the
    // interpreter once, before a winner is kept.
    let reference = Reference(
        cache
            .dir()
            .join(format!("reference-{key}-{}", std::process::id())),
    );
    let job = |options: &kernel::Options, best_ns: Option<u64>| Job {
        program: if req.model.is_some() {
            String::new()
        } else {
            text.clone()
        },
        model: req.model.map(|p| p.to_string_lossy().into_owned()),
        def: req.def.to_string(),
        sizes: req.sizes.clone(),
        options: kernel::print_options(options),
        best_ns,
        seed: SEED,
        reference: Some(reference.0.to_string_lossy().into_owned()),
        save_outputs: None,
        constants: req.constants.iter().cloned().collect(),
        compile_only: false,
        fault: None,
    };
    let default_started = Instant::now();
    let untuned = Job {
        reference: None,
        save_outputs: Some(reference.0.to_string_lossy().into_owned()),
        ..job(&kernel::Options::default(), None)
    };
    let (default_ns, default_steps) = match executor.measure(&[untuned], interrupted).pop() {
        Some(Reply::Time { median_ns, steps }) => (median_ns, steps),
        Some(Reply::Failed { reason }) => {
            return Err(Error::Usage(format!(
                "`{}` cannot be tuned: its untuned kernel failed to run: {reason}",
                req.def
            )))
        }
        None => {
            return Err(Error::Interrupted(
                "stopped before the untuned kernel was measured; the tuning cache is as it was"
                    .to_string(),
            ))
        }
        other => {
            return Err(Error::Internal(format!(
                "internal error: the untuned kernel gave no time: {other:?}"
            )))
        }
    };
    // The untuned kernel's measurement (a worker's start, the compile, the
    // warm-up and the timed runs) stands for every candidate's.
    let each = default_started.elapsed().as_secs_f64().max(1e-3);
    // The time the finalists' second measurement takes is kept from the
    // search's budget (a third of it at most). Their kernels are compiled
    // then: a job is a worker's start, the inputs, the warm-up and the
    // runs.
    let timing_job = TIMING_JOB_S + 20.0 * default_ns as f64 / 1e9;
    let reserve = Duration::from_secs_f64(
        (timing_job * ((FINALISTS + 2) * ROUNDS) as f64).min(req.budget.as_secs_f64() / 3.0),
    );
    let mut params = req.params.clone();
    if req.fit_population {
        let search = (req.budget - reserve).as_secs_f64();
        let fits = (search / (GENERATIONS_IN_BUDGET * each)) as usize;
        params.population = fits.clamp(MIN_POPULATION, req.params.population.max(1));
        params.elites = (params.population / 10).max(1);
    }
    let mut trajectory = vec![(started.elapsed().as_secs_f64(), default_ns)];
    let default_genome = space.encode(&taken);
    let mut seeds = vec![default_genome.clone()];
    if let Some((_, o)) = &held {
        seeds.push(space.encode(o));
    }
    // Half of the rest of generation zero: the default with one choice
    // changed in the stages that take most of its time, so that a single
    // change that pays (a convolution's reduction in another order, a
    // copy forwarded) is measured at once, not left to the luck of random
    // candidates; random ones fill the other half, as TC's do.
    let heavy = heavy_stages(&default_steps);
    let heavy: Vec<&str> = heavy.iter().map(String::as_str).collect();
    let near = params.population.saturating_sub(seeds.len()) / 2;
    seeds.extend(
        space
            .neighbours(&default_genome, &heavy)
            .into_iter()
            .take(near),
    );
    // The budget counts from the start: the untuned kernel's measurement
    // is part of it, and so is the finalists'.
    let stop = || interrupted() || started.elapsed() + reserve >= req.budget;
    let mut failed = Vec::new();
    // The genes grouped by stage, and a candidate's time in each stage
    // from its steps' times: the search composes the fastest stages.
    let stages = space.stages();
    let mut names: Vec<&String> = stages.iter().collect();
    names.sort();
    names.dedup();
    let groups: Vec<usize> = stages
        .iter()
        .map(|s| names.binary_search(&s).unwrap_or(0))
        .collect();
    let parts = |steps: &BTreeMap<String, u64>| -> genetic::Parts {
        names
            .iter()
            .map(|stage| {
                let ns: Vec<u64> = steps
                    .iter()
                    .filter(|(step, _)| space::stage(step) == stage.as_str())
                    .map(|(_, &ns)| ns)
                    .collect();
                (!ns.is_empty()).then(|| ns.iter().sum::<u64>() as f64 / 1e9)
            })
            .collect()
    };
    let report = genetic::search(
        &space.sizes(),
        &groups,
        &params,
        &seeds,
        &mut |genomes, best| {
            let best_ns = best
                .map_or(default_ns, |t| (t * 1e9) as u64)
                .min(default_ns);
            let jobs: Vec<Job> = genomes
                .iter()
                .map(|g| job(&space.decode(g), Some(best_ns)))
                .collect();
            let outcomes: Vec<(Outcome, genetic::Parts)> = executor
                .measure(&jobs, &stop)
                .into_iter()
                .map(|r| match r {
                    Reply::Time { median_ns, steps } => {
                        (Outcome::Time(median_ns as f64 / 1e9), parts(&steps))
                    }
                    Reply::Pruned { .. } => (Outcome::Pruned, Vec::new()),
                    Reply::Failed { reason } => {
                        failed.push(reason.clone());
                        (Outcome::Failed(reason), Vec::new())
                    }
                })
                .collect();
            let fastest = outcomes
                .iter()
                .filter_map(|(o, _)| match o {
                    Outcome::Time(t) => Some((t * 1e9) as u64),
                    _ => None,
                })
                .min();
            if let Some(ns) = fastest.filter(|&ns| ns < trajectory.last().map_or(u64::MAX, |p| p.1))
            {
                trajectory.push((started.elapsed().as_secs_f64(), ns));
            }
            outcomes
        },
        progress,
        &stop,
    );
    // The search's times are single measurements on a machine whose
    // speed drifts: its best is partly luck. Unless stopped, the finalists
    // (the fastest few and the cached options) are measured again beside
    // the untuned kernel, in turns, and the medians decide.
    let mut finalists: Vec<(Genome, f64)> = report
        .measured
        .iter()
        .filter_map(|(g, o)| match o {
            Outcome::Time(t) => Some((g.clone(), *t)),
            _ => None,
        })
        .collect();
    finalists.sort_by(|a, b| a.1.total_cmp(&b.1));
    finalists.truncate(FINALISTS);
    let mut candidates: Vec<Genome> = finalists.iter().map(|(g, _)| g.clone()).collect();
    if let Some((_, o)) = &held {
        let g = space.encode(o);
        if !candidates.contains(&g) {
            candidates.push(g);
        }
    }
    let confirmed = if interrupted() || candidates.is_empty() {
        None
    } else {
        confirm(executor, &job, &space, &candidates, interrupted)
    };
    // The best and its time over the untuned kernel's.
    let (default_ns, best) = match confirmed {
        Some((default_ns, best)) => (default_ns, best),
        None => (
            default_ns,
            report.best.map(|(g, t)| {
                let ns = (t * 1e9) as u64;
                (space.decode(&g), ns, ns as f64 / default_ns as f64)
            }),
        ),
    };
    let cached = held.as_ref().map(|(e, _)| e.time_ns);
    let mut stored = false;
    let mut checked = None;
    if let Some((options, ns, ratio)) = &best {
        let is_cached = held.as_ref().is_some_and(|(_, o)| o == options);
        if *ratio < KEEP && !is_cached {
            let checking = Instant::now();
            check_reference(&job(&kernel::Options::default(), None), &reference.0)?;
            checked = Some(checking.elapsed().as_secs_f64());
            stored = cache.put(
                &key,
                &Entry {
                    format: cache::FORMAT.to_string(),
                    def: req.def.to_string(),
                    sizes: req.sizes.clone(),
                    constants: req.constants.iter().cloned().collect(),
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
        best: best.map(|(o, ns, _)| (o, ns)),
        measured: report.measured.len(),
        failed,
        population: params.population,
        stored,
        cached,
        from_cache: false,
        interrupted: interrupted(),
        damaged,
        trajectory,
        seconds: started.elapsed().as_secs_f64(),
        checked,
    })
}

/// The seed of the jobs' random inputs.
const SEED: u64 = 7;

/// Checks the untuned kernel's outputs saved in `dir` by `job` against
/// the interpreter's on the same inputs: an error names the first element
/// that differs (a bug in tessera: nothing is kept).
fn check_reference(job: &Job, dir: &std::path::Path) -> Result<(), Error> {
    let failed = |m: String| Error::Internal(format!("internal error: {m}; nothing was kept"));
    let setup = super::job::setup(job).map_err(failed)?;
    let want = interp::run(
        &setup.program,
        &job.def,
        &setup.args,
        &setup.sizes,
        interp::Mode::Real,
    )
    .map_err(|e| failed(format!("the interpreter: {}", e.message)))?;
    let got = super::job::read_outputs(dir, want.len()).map_err(failed)?;
    for ((name, w), g) in want.iter().zip(&got) {
        if let Some(i) = super::job::differs(g, w) {
            return Err(failed(format!(
                "the untuned kernel's `{name}`[{i}] differs from the interpreter's"
            )));
        }
    }
    Ok(())
}

/// The share of the default's time the stages whose single changes seed
/// generation zero take together, at least.
const HEAVY_SHARE: f64 = 0.8;

/// The stages of the default's step times `steps`, slowest first, up to
/// the first that brings their share to [`HEAVY_SHARE`].
fn heavy_stages(steps: &BTreeMap<String, u64>) -> Vec<String> {
    let mut stages: BTreeMap<&str, u64> = BTreeMap::new();
    for (step, ns) in steps {
        *stages.entry(space::stage(step)).or_default() += ns;
    }
    let total: u64 = stages.values().sum();
    let mut slowest: Vec<(&str, u64)> = stages.into_iter().collect();
    slowest.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let mut out = Vec::new();
    let mut sum = 0;
    for (stage, ns) in slowest {
        if total > 0 && sum as f64 >= HEAVY_SHARE * total as f64 {
            break;
        }
        sum += ns;
        out.push(stage.to_string());
    }
    out
}

/// A directory of the untuned kernel's outputs, removed when tuning ends.
struct Reference(std::path::PathBuf);

impl Drop for Reference {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A timing job's cost besides its runs, in seconds: a worker's start,
/// its inputs and the warm-up (`cost::timing`: at least 0.25 s).
const TIMING_JOB_S: f64 = 0.4;

/// A search's winner: its options, its time and its time over the
/// untuned kernel's (at most: [`confirm`]'s bound).
type Winner = (kernel::Options, u64, f64);

/// The fastest candidates of a search measured again.
const FINALISTS: usize = 3;

/// The rounds in which the finalists and the untuned kernel are measured
/// again, in turns.
const ROUNDS: usize = 5;

/// Measures the untuned kernel and `candidates` again, in turns, for
/// [`ROUNDS`] rounds: the untuned kernel's median time over the rounds,
/// and the candidate most surely faster than it, with its median time and
/// the upper end of a one-sided 95% confidence interval of its time over
/// the untuned kernel's (a paired t-test of the rounds' log ratios).
/// Pairing a candidate with the untuned kernel measured beside it cancels
/// a slow spell of the machine that spans a round; the interval is wide
/// where the rounds disagree, so a kernel of a few microseconds, whose
/// times this machine's noise moves by a third, is kept only for a large
/// gain. The times are the jobs' medians, as `bench` reports them. `None`
/// when stopped or nothing ran.
fn confirm(
    executor: &dyn Executor,
    job: &dyn Fn(&kernel::Options, Option<u64>) -> Job,
    space: &Space,
    candidates: &[Genome],
    interrupted: &dyn Fn() -> bool,
) -> Option<(u64, Option<Winner>)> {
    let mut jobs = vec![job(&kernel::Options::default(), None)];
    jobs.extend(candidates.iter().map(|g| job(&space.decode(g), None)));
    // times[j][r]: job j's time in round r, when it gave one.
    let mut times: Vec<Vec<Option<u64>>> = vec![Vec::new(); jobs.len()];
    for _ in 0..ROUNDS {
        let replies = executor.measure(&jobs, interrupted);
        if replies.len() < jobs.len() {
            return None;
        }
        for (t, r) in times.iter_mut().zip(replies) {
            t.push(match r {
                Reply::Time { median_ns, .. } => Some(median_ns.max(1)),
                _ => None,
            });
        }
    }
    let median = |t: &[Option<u64>]| -> Option<u64> {
        let mut v: Vec<u64> = t.iter().flatten().copied().collect();
        v.sort_unstable();
        (v.len() == ROUNDS).then(|| v[v.len() / 2])
    };
    let default_ns = median(&times[0])?;
    let best = candidates
        .iter()
        .zip(&times[1..])
        .filter_map(|(g, t)| {
            let logs: Vec<f64> = t
                .iter()
                .zip(&times[0])
                .filter_map(|(c, d)| Some(((*c)? as f64 / (*d)? as f64).ln()))
                .collect();
            if logs.len() < ROUNDS {
                return None;
            }
            let n = ROUNDS as f64;
            let mean = logs.iter().sum::<f64>() / n;
            let var = logs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
            let upper = (mean + T_95 * (var / n).sqrt()).exp();
            Some((g, upper, median(t)?))
        })
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(g, upper, ns)| (space.decode(g), ns, upper));
    Some((default_ns, best))
}

/// Student's t at 95%, one-sided, with [`ROUNDS`] - 1 = 4 degrees of
/// freedom.
const T_95: f64 = 2.132;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_heavy_stages_are_the_slowest_up_to_four_fifths_of_the_time() {
        let steps: BTreeMap<String, u64> = [
            ("s1_copy_vec", 230),
            ("s2_conv_fused_vec", 600),
            ("s3_copy_vec", 150),
            ("s3_copy_tail_vec", 20),
        ]
        .map(|(s, ns)| (s.to_string(), ns))
        .into();
        // s2 alone is 60%; with s1, 83%.
        assert_eq!(heavy_stages(&steps), vec!["s2", "s1"]);
        assert!(heavy_stages(&BTreeMap::new()).is_empty());
    }
}
