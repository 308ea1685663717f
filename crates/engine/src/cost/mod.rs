//! The cost service: given a def and its sizes, an analytic estimate
//! ([`estimate`]) and a measured time (the median of repeated runs after a
//! warm-up, [`timing`]), the measured times cached on disk ([`store`])
//! keyed by the canonical program text (the def and every def it calls, as
//! `ir`'s printer prints them), the sizes, the target, the compiler's
//! identity and the compile options.
//!
//! [`CostService`] implements `opt::cost::CostModel`, which is how `opt`
//! times candidates without depending on the runtime. A measurement runs
//! on seeded random inputs (seed 0, as `tessera bench` uses), so its time
//! stands for the program and sizes, not for particular values. Inputs the
//! service is told are constants (a model's weights) are treated as a
//! loaded model treats them: what reads only them is hoisted into a load
//! step (`opt::hoist`) that is neither estimated nor timed, as it runs
//! once per load, not per run.

pub mod estimate;
pub mod library;
pub mod store;
pub mod timing;

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use codegen::cache::KernelCache;
use ir::{Program, Stmt};
use opt::cost::{CostModel, Estimate};

use crate::{bind, compile, Error};
use store::Store;

/// Versions the key and the entry format: changing either changes this,
/// so old entries are simply never found again.
const KEY_VERSION: &str = "tessera measured-time cache 1";

/// Timed runs per measurement.
pub const RUNS: u32 = 10;

/// Warm-up runs per measurement (and at least a quarter of a second).
pub const WARMUP: u32 = 2;

/// Rounds of a side-by-side comparison; each round times every def
/// [`RUNS`] times, one def after the other.
pub const COMPARE_ROUNDS: u32 = 5;

/// Costs of defs compiled with one set of options on one target.
#[derive(Debug)]
pub struct CostService {
    store: Store,
    options: runtime::Options,
    kernels: KernelCache,
    /// Measurements this service made (requests the store answered are not
    /// counted).
    measured: AtomicU64,
    /// Whether estimates time the library's matmuls (`library.rs`): off,
    /// an estimate is the same on every run.
    library: bool,
    /// The inputs known at load, by parameter name.
    constants: HashSet<String>,
    /// Whether defs are rewritten into channel-blocked layouts before they
    /// are estimated or timed, as `compile::compile` does for every run a
    /// user makes: a direct convolution is timed in the layout it runs in,
    /// its weights' packing at load with the other load-time statements.
    layout: bool,
}

impl CostService {
    /// A service storing times in `store`, compiling with `options` through
    /// `kernels`.
    pub fn new(store: Store, options: runtime::Options, kernels: KernelCache) -> CostService {
        CostService {
            store,
            options,
            kernels,
            measured: AtomicU64::new(0),
            library: false,
            constants: HashSet::new(),
            layout: false,
        }
    }

    /// The service with the inputs named `constants` known at load: what
    /// reads only them is left out of estimates and times.
    pub fn with_constants(mut self, constants: impl IntoIterator<Item = String>) -> CostService {
        self.constants = constants.into_iter().collect();
        self
    }

    /// The service rewriting defs into channel-blocked layouts (`on`)
    /// before it estimates or times them, as every compile with
    /// `compile::Options::layout` does.
    pub fn with_layout(mut self, on: bool) -> CostService {
        self.layout = on;
        self
    }

    /// `def` of `program` as it runs once its constants are loaded: the
    /// program with the def's load-time statements hoisted out (the def
    /// keeps its name and takes their results as inputs) and the sizes
    /// extended to their shapes; the program as it is when nothing is
    /// hoisted.
    fn per_run<'p>(
        &self,
        program: &'p Program,
        def: &str,
        sizes: &HashMap<String, i64>,
    ) -> Result<(Cow<'p, Program>, HashMap<String, i64>), Error> {
        let given = crate::source::pick_def(program, Some(def), "the program")?;
        // Blocked first, then split, as `constants::compile_constants`
        // does: the weights' packing the layout adds is a load-time
        // statement too.
        let program = match self
            .layout
            .then(|| compile::layout(program, given, sizes, &self.options.target))
            .flatten()
        {
            Some(blocked) => Cow::Owned(blocked),
            None => Cow::Borrowed(program),
        };
        let d = crate::source::pick_def(&program, Some(def), "the program")?;
        let Some(hoisted) = (!self.constants.is_empty())
            .then(|| opt::hoist::hoist_constants(d, &self.constants, &format!("{def}__load")))
            .flatten()
        else {
            return Ok((program, sizes.clone()));
        };
        let mut sizes = sizes.clone();
        for (sym, value) in &hoisted.sizes {
            let v = value
                .eval_map(&sizes)
                .map_err(|e| Error::Internal(format!("internal error: a hoisted size: {e:?}")))?;
            sizes.insert(sym.clone(), v);
        }
        let mut split = program.into_owned();
        if let Some(slot) = split.defs.iter_mut().find(|x| x.name == def) {
            *slot = hoisted.run;
        }
        Ok((Cow::Owned(split), sizes))
    }

    /// The service with its estimates timing library matmuls (`on`) or
    /// not (estimates then the same on every run).
    pub fn timing_library(mut self, on: bool) -> CostService {
        self.library = on;
        self
    }

    /// The per-user service: times in [`Store::default_dir`], kernels in
    /// the kernel cache, compiled with `options`. This machine's matmul
    /// peak and memory bandwidth are measured first when its cached target
    /// has none (once per machine, a few seconds), since estimates need
    /// them.
    pub fn open_default(options: &compile::Options) -> Result<CostService, Error> {
        if options.target.is_none() {
            crate::target::peak_gflops(None)?;
            crate::target::bandwidth_gbps(None)?;
        }
        let kernels = KernelCache::open_default().map_err(Error::cache)?;
        let service = CostService::new(
            Store::open(Store::default_dir()?)?,
            options.resolve()?,
            kernels,
        );
        Ok(service.with_layout(options.layout))
    }

    /// How many measurements this service made (not answered from disk).
    pub fn measurements(&self) -> u64 {
        self.measured.load(Ordering::Relaxed)
    }

    /// The disk cache key of a measurement of `def` for `sizes`.
    pub fn key(
        &self,
        program: &Program,
        def: &str,
        sizes: &HashMap<String, i64>,
    ) -> Result<String, Error> {
        let text = canonical_text(program, def)?;
        let mut bound: Vec<String> = sizes.iter().map(|(k, v)| format!("{k}={v}")).collect();
        bound.sort();
        let mut constants: Vec<&str> = self.constants.iter().map(String::as_str).collect();
        constants.sort_unstable();
        let options = format!(
            "passes {}\nlibrary {}\nlayout {}\nruns {RUNS}\nwarmup {WARMUP}\nconstants {}",
            self.options.passes.join(","),
            self.options.library,
            self.layout,
            constants.join(",")
        );
        Ok(codegen::cache::hash_parts(&[
            KEY_VERSION,
            &text,
            &bound.join("\n"),
            &self.options.target.codegen_text(),
            self.kernels.compiler_id(),
            &options,
        ]))
    }

    /// What this service's estimates and measurements depend on besides
    /// the program and the sizes: the target (with the peak and bandwidth
    /// the estimates use), the compiler and the compile options. A cache
    /// of results decided on its costs keys on it.
    pub fn identity(&self) -> String {
        format!(
            "{}compiler {}\npasses {}\nlibrary {}\nlayout {}\nruns {RUNS}\nwarmup {WARMUP}\ncompare {COMPARE_ROUNDS}",
            self.options.target.to_text(),
            self.kernels.compiler_id(),
            self.options.passes.join(","),
            self.options.library,
            self.layout
        )
    }

    /// Compiles `def` for `sizes` and prepares a run state on seeded
    /// random tensors.
    fn prepare(
        &self,
        program: &Program,
        def: &str,
        sizes: &HashMap<String, i64>,
    ) -> Result<(crate::Compiled, runtime::State), Error> {
        let (program, sizes) = self.per_run(program, def, sizes)?;
        let d = crate::source::pick_def(&program, Some(def), "the program")?;
        let args = bind::int_scalars(d, &sizes);
        let bound = bind::bind(d, args, sizes, 0)?;
        let compiled = compile::compile_with(
            &program,
            d,
            &bound.sizes,
            &self.options,
            &self.kernels,
            false,
        )?;
        let state = compiled.prepare(&bound.args)?;
        Ok((compiled, state))
    }

    /// Compiles and times `def` now: the median of [`RUNS`] runs after
    /// [`WARMUP`] warm-up runs, on seeded random tensors.
    fn measure_now(
        &self,
        program: &Program,
        def: &str,
        sizes: &HashMap<String, i64>,
    ) -> Result<Duration, Error> {
        let (compiled, mut state) = self.prepare(program, def, sizes)?;
        let timing = timing::time_runs(&compiled, &mut state, RUNS, WARMUP, false)?;
        self.measured.fetch_add(1, Ordering::Relaxed);
        Ok(Duration::from_secs_f64(timing.median()))
    }
}

impl CostModel for CostService {
    type Error = Error;

    fn estimate(
        &self,
        program: &Program,
        def: &str,
        sizes: &HashMap<String, i64>,
    ) -> Result<Estimate, Error> {
        let (program, sizes) = self.per_run(program, def, sizes)?;
        estimate::estimate(&program, def, &sizes, &self.options.target, self.library)
    }

    /// The stored time of `def` for `sizes`, else measured now and stored.
    fn measure(
        &self,
        program: &Program,
        def: &str,
        sizes: &HashMap<String, i64>,
    ) -> Result<Duration, Error> {
        let key = self.key(program, def, sizes)?;
        self.store
            .get_or_measure(&key, || self.measure_now(program, def, sizes))
    }

    /// Each def compiled and warmed up, then [`COMPARE_ROUNDS`] rounds of
    /// up to [`RUNS`] runs of each in turn (as many as fit in `within`, at
    /// least one), each round starting with the next def; each def's
    /// median over its runs. Never cached: a
    /// comparison is about now.
    fn compare(
        &self,
        program: &Program,
        defs: &[&str],
        sizes: &HashMap<String, i64>,
        within: Duration,
    ) -> Result<Vec<Duration>, Error> {
        let mut prepared = Vec::new();
        let mut one_of_each = 0.0;
        for d in defs {
            let (compiled, mut state) = self.prepare(program, d, sizes)?;
            let warm = timing::time_runs(&compiled, &mut state, 1, WARMUP, false)?;
            one_of_each += warm.median();
            prepared.push((compiled, state, Vec::new()));
        }
        let per_round = within.as_secs_f64() / f64::from(COMPARE_ROUNDS);
        let runs = ((per_round / one_of_each.max(1e-9)) as u32).clamp(1, RUNS);
        // Each round starts with another def, so that none always runs
        // right after the same other one (whose data the caches hold).
        let n = prepared.len();
        for round in 0..COMPARE_ROUNDS as usize {
            for k in 0..n {
                let (compiled, state, seconds) = &mut prepared[(round + k) % n];
                seconds.extend(timing::time_batch(compiled, state, runs)?);
            }
        }
        self.measured
            .fetch_add(defs.len() as u64, Ordering::Relaxed);
        Ok(prepared
            .into_iter()
            .map(|(_, _, mut s)| {
                s.sort_by(f64::total_cmp);
                Duration::from_secs_f64(timing::median(&s))
            })
            .collect())
    }
}

/// `def` and every def it calls, directly or not, printed by `ir`'s
/// printer in name order: two programs that print the same compute the
/// same.
fn canonical_text(program: &Program, def: &str) -> Result<String, Error> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![def.to_string()];
    while let Some(name) = todo.pop() {
        if !seen.insert(name.clone()) {
            continue;
        }
        let d = crate::source::pick_def(program, Some(&name), "the program")?;
        for s in &d.stmts {
            if let Stmt::Call(c) = s {
                todo.push(c.callee.clone());
            }
        }
    }
    let mut out = String::new();
    for name in &seen {
        if let Some(d) = program.def(name) {
            out.push_str(&ir::print_def(program, d));
            out.push('\n');
        }
    }
    Ok(out)
}
