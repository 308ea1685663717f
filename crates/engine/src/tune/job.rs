//! A measurement job: one candidate of a search (a TC program, a def, its
//! sizes and the kernel options to compile it with) to compile, check
//! against the interpreter once and time, and the reply. Jobs and replies
//! are JSON, so that a job can run in another process (`worker.rs`, the
//! `tessera tune-worker` command) or, later, on another machine.
//!
//! The first run, on fresh memory, is not timed; its outputs are checked
//! against the interpreter when the candidate's time beats the best so
//! far (only such a candidate can win). Timing follows TC's pruning rules: a candidate whose first
//! timed run takes at least 100 times the best time so far, or whose
//! warm-up runs take at least 5 times it, is not timed further
//! (`Reply::Pruned`).

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use interp::{Arg, Mode, Tensor};
use serde::{Deserialize, Serialize};

use crate::compile;

/// One candidate to measure.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Job {
    /// The TC program, as text.
    pub program: String,
    pub def: String,
    pub sizes: BTreeMap<String, i64>,
    /// The kernel options, in their text form (`kernel::options`).
    pub options: String,
    /// The best time so far, for pruning.
    pub best_ns: Option<u64>,
    /// The seed of the random inputs.
    pub seed: u64,
    /// Compile only (the kernel cache keeps the result), so that a
    /// generation's candidates compile in parallel before they are timed
    /// one at a time.
    #[serde(default)]
    pub compile_only: bool,
    /// For tests of the tuner's isolation only: make the job crash
    /// (`abort`), never finish (`hang`) or run 1000 times slower (`slow`).
    #[serde(default)]
    pub fault: Option<String>,
}

/// What measuring a job gave.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Reply {
    /// The median of the timed runs.
    Time { median_ns: u64 },
    /// The job did not give a time: why.
    Failed { reason: String },
    /// Timing stopped early: the time that was too slow.
    Pruned { seen_ns: u64 },
}

/// The timed runs after the warm-up.
const RUNS: u32 = 10;

/// Runs the job in `input` (JSON) in this process; the reply as JSON.
pub fn run_json(input: &str) -> Result<String, String> {
    let job: Job = serde_json::from_str(input).map_err(|e| format!("not a tuning job: {e}"))?;
    serde_json::to_string(&run(&job)).map_err(|e| format!("the reply: {e}"))
}

/// Runs `job` in this process.
pub fn run(job: &Job) -> Reply {
    match measure(job) {
        Ok(r) => r,
        Err(reason) => Reply::Failed { reason },
    }
}

fn measure(job: &Job) -> Result<Reply, String> {
    let checked =
        tc::check_source(&job.program).map_err(|d| format!("the program does not check: {d:?}"))?;
    let program = checked.program;
    let def = program
        .def(&job.def)
        .ok_or_else(|| format!("no def `{}`", job.def))?;
    let kernel_options = kernel::parse_options(&job.options)?;
    let given: HashMap<String, i64> = job.sizes.clone().into_iter().collect();
    let mut args: HashMap<String, Arg> = HashMap::new();
    let bound = interp::bind_sizes(def, &args, &given).map_err(|e| e.message)?;
    for (k, p) in def.params.iter().enumerate() {
        let ir::Param::Tensor(t) = p else {
            return Err(format!("scalar parameter `{}` has no value", p.name()));
        };
        let shape = interp::param_shape(def, t, &bound).map_err(|e| e.message)?;
        let dtype = def.tensor(t).map_or(ir::DType::F32, |x| x.dtype);
        args.insert(
            t.clone(),
            Arg::Tensor(Tensor::random(dtype, &shape, job.seed + k as u64)),
        );
    }
    let mut resolved = compile::Options::default()
        .resolve()
        .map_err(|e| e.to_string())?;
    resolved.kernel_options = kernel_options;
    let cache = codegen::cache::KernelCache::open_default().map_err(|e| e.to_string())?;
    // Rewritten into the layouts `run` and `bench` compile (the options
    // name the steps of that program).
    let blocked = compile::layout(&program, def, &bound, &resolved.target);
    let compiled_program = blocked.as_ref().unwrap_or(&program);
    let compiled_def = compiled_program.def(&job.def).unwrap_or(def);
    let compiled = compile::compile_with(
        compiled_program,
        compiled_def,
        &bound,
        &resolved,
        &cache,
        false,
    )
    .map_err(|e| e.to_string())?;
    if job.compile_only {
        return Ok(Reply::Time { median_ns: 0 });
    }
    let mut state = compiled.prepare(&args).map_err(|e| e.to_string())?;
    let slow = job.fault.as_deref() == Some("slow");
    let timed = |state: &mut runtime::State| -> Result<Duration, String> {
        let t = Instant::now();
        compiled.run_state(state, None)?;
        let d = t.elapsed();
        if slow {
            std::thread::sleep(d * 999);
        }
        Ok(d * if slow { 1000 } else { 1 })
    };
    match job.fault.as_deref() {
        Some("abort") => std::process::abort(),
        Some("hang") => loop {
            std::thread::sleep(Duration::from_secs(1));
        },
        _ => {}
    }
    // The first run, on fresh memory, is not timed; its outputs are kept
    // for the check.
    compiled.run_state(&mut state, None)?;
    let outputs = compiled.outputs(&state).map_err(|e| e.to_string())?;
    let first = timed(&mut state)?;
    let nanos = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    let too_slow = |d: Duration, factor: u64| {
        job.best_ns
            .is_some_and(|b| nanos(d) >= b.saturating_mul(factor))
    };
    if too_slow(first, 100) {
        return Ok(Reply::Pruned {
            seen_ns: nanos(first),
        });
    }
    let warm = (0..2)
        .map(|_| timed(&mut state))
        .collect::<Result<Vec<_>, _>>()?;
    let warm_min = warm.iter().min().copied().unwrap_or(first);
    if too_slow(warm_min, 5) {
        return Ok(Reply::Pruned {
            seen_ns: nanos(warm_min),
        });
    }
    // Timed as `tessera bench` times (a warm-up of at least 0.25 s, then
    // the median), so that a tuned time and a benchmark agree.
    let timing = crate::cost::timing::time_runs(&compiled, &mut state, RUNS, 0, false)
        .map_err(|e| e.to_string())?;
    let median = nanos(Duration::from_secs_f64(timing.median()));
    // Only a candidate that would win is checked against the interpreter
    // (a slower one never wins, and the check can cost more than timing).
    if job.best_ns.is_none_or(|b| median < b) {
        let want = interp::run(&program, &job.def, &args, &given, Mode::Real)
            .map_err(|e| format!("the interpreter: {}", e.message))?;
        for ((name, got), (_, w)) in outputs.iter().zip(&want) {
            if let Some(i) = differs(got, w) {
                return Err(format!(
                    "wrong result: `{name}`[{i}] differs from the interpreter's"
                ));
            }
        }
    }
    Ok(Reply::Time { median_ns: median })
}

/// The first element where `got` and `want` differ beyond rounding
/// (floats within 1e-3 of their magnitude, `opt::verify::agree`: the
/// options reorder reductions).
fn differs(got: &Tensor, want: &Tensor) -> Option<usize> {
    if got.shape() != want.shape() {
        return Some(0);
    }
    let (g, w) = (got.to_f64_vec(), want.to_f64_vec());
    g.iter()
        .zip(&w)
        .position(|(a, b)| !opt::verify::agree(*a, *b, 1e-3, 1.0))
}
