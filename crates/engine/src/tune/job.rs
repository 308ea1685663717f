//! A measurement job: one candidate of a search (a TC program, a def, its
//! sizes, the inputs declared constant and the kernel options to compile
//! it with) to compile, check
//! against the interpreter once and time, and the reply. Jobs and replies
//! are JSON, so that a job can run in another process (`worker.rs`, the
//! `tessera tune-worker` command) or, later, on another machine.
//!
//! The first run, on fresh memory, is not timed; its outputs are checked
//! when the candidate's time beats the best so far (only such a candidate
//! can win): against the untuned kernel's saved outputs when the job
//! names them, which the tuner checks against the interpreter, otherwise
//! against the interpreter. Timing follows TC's pruning rules: a candidate whose first
//! timed run takes at least 100 times the best time so far, or whose
//! warm-up runs take at least 5 times it, is not timed further
//! (`Reply::Pruned`).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::time::{Duration, Instant};

use interp::{Arg, Mode, Tensor};
use ir::Program;
use serde::{Deserialize, Serialize};

use crate::compile;

/// One candidate to measure.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Job {
    /// The TC program, as text (empty for a model).
    pub program: String,
    /// The ONNX model the job imports instead, by path: its weights are
    /// its own, its other inputs random.
    #[serde(default)]
    pub model: Option<String>,
    pub def: String,
    pub sizes: BTreeMap<String, i64>,
    /// The kernel options, in their text form (`kernel::options`).
    pub options: String,
    /// The best time so far, for pruning.
    pub best_ns: Option<u64>,
    /// The seed of the random inputs ([`inputs`]).
    pub seed: u64,
    /// A directory holding the untuned kernel's outputs on those inputs
    /// (saved by its job, `save_outputs`), which a would-be winner is
    /// compared with instead of the interpreter's: the tuner checks them
    /// against the interpreter once, before it keeps a winner. (An
    /// executor on other machines ships the directory or leaves it out.)
    #[serde(default)]
    pub reference: Option<String>,
    /// Save the outputs of the first run into this directory (as
    /// `K.npy`, the def's output `K`) instead of checking them.
    #[serde(default)]
    pub save_outputs: Option<String>,
    /// The inputs declared constant, as `bench --constant` declares them:
    /// what depends on them alone runs once, before the timed runs.
    #[serde(default)]
    pub constants: Vec<String>,
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
    /// The median of the timed runs, and each step's median over a few
    /// profiled runs after them, by the step's name.
    Time {
        median_ns: u64,
        #[serde(default)]
        steps: BTreeMap<String, u64>,
    },
    /// The job did not give a time: why.
    Failed { reason: String },
    /// Timing stopped early: the time that was too slow.
    Pruned { seen_ns: u64 },
}

/// The fewest timed runs after the warm-up; a fast kernel gets more, up
/// to [`TIMED_SECONDS`] of them (a median of ten 40 µs runs is mostly the
/// machine's noise).
const RUNS: u32 = 10;

/// The time a fast kernel's timed runs fill, in seconds.
const TIMED_SECONDS: f64 = 0.05;

/// The most timed runs.
const MOST_RUNS: u32 = 1000;

/// The most profiled runs that time each step after the timed runs.
const PROFILED_RUNS: u32 = 10;

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

/// What a job runs: its program, the def's arguments and the bound sizes.
#[derive(Debug)]
pub struct Setup {
    pub program: Program,
    /// Random tensors drawn from the job's seed ([`inputs`]); a model's
    /// weights are its own.
    pub args: HashMap<String, Arg>,
    pub sizes: HashMap<String, i64>,
}

/// Reads the job's program (or imports its model) and makes its
/// arguments.
pub fn setup(job: &Job) -> Result<Setup, String> {
    let given: HashMap<String, i64> = job.sizes.clone().into_iter().collect();
    let (program, weights) = match &job.model {
        Some(path) => {
            let mut source = crate::Source::load_onnx(
                Path::new(path),
                None,
                &given,
                &HashMap::new(),
                &HashMap::new(),
            )
            .map_err(|e| e.to_string())?;
            let weights = source.take_weights();
            (source.program().clone(), weights)
        }
        None => {
            let checked = tc::check_source(&job.program)
                .map_err(|d| format!("the program does not check: {d:?}"))?;
            (checked.program, HashMap::new())
        }
    };
    let def = program
        .def(&job.def)
        .ok_or_else(|| format!("no def `{}`", job.def))?;
    let sizes = interp::bind_sizes(def, &weights, &given).map_err(|e| e.message)?;
    let mut args = inputs(def, &sizes, job.seed, &weights)?;
    args.extend(weights);
    Ok(Setup {
        program,
        args,
        sizes,
    })
}

fn measure(job: &Job) -> Result<Reply, String> {
    let Setup {
        program,
        args,
        sizes: bound,
    } = setup(job)?;
    let def = program
        .def(&job.def)
        .ok_or_else(|| format!("no def `{}`", job.def))?;
    let kernel_options = kernel::parse_options(&job.options)?;
    // Compiled as `run` and `bench` compile: in their layouts, with the
    // constants' load step hoisted (the options name this program's steps).
    let options = compile::Options {
        tuned: false,
        kernel_options,
        ..compile::Options::default()
    };
    let constants: HashMap<String, Arg> = job
        .constants
        .iter()
        .filter_map(|n| args.get(n).map(|a| (n.clone(), a.clone())))
        .collect();
    let built = crate::constants::compile_constants(&program, def, &bound, &options, constants)
        .map_err(|e| e.to_string())?;
    let compiled = built.compiled;
    if job.compile_only {
        return Ok(Reply::Time {
            median_ns: 0,
            steps: BTreeMap::new(),
        });
    }
    let mut run_args: HashMap<String, Arg> = args
        .iter()
        .filter(|(n, _)| !job.constants.contains(n))
        .map(|(n, a)| (n.clone(), a.clone()))
        .collect();
    run_args.extend(built.fixed);
    let mut state = compiled.prepare(&run_args).map_err(|e| e.to_string())?;
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
    let runs = (TIMED_SECONDS / warm_min.as_secs_f64().max(1e-9))
        .clamp(RUNS as f64, MOST_RUNS as f64) as u32;
    let timing = crate::cost::timing::time_runs(&compiled, &mut state, runs, 0, false)
        .map_err(|e| e.to_string())?;
    let median = nanos(Duration::from_secs_f64(timing.median()));
    let steps = step_times(&compiled, &mut state, runs.min(PROFILED_RUNS))?;
    if let Some(dir) = &job.save_outputs {
        let tensors: Vec<Tensor> = outputs.iter().map(|(_, t)| t.clone()).collect();
        write_outputs(Path::new(dir), &tensors)?;
    } else if job.best_ns.is_none_or(|b| median < b) {
        // Only a candidate that would win is checked (a slower one never
        // wins, and the check can cost more than timing).
        let (want, whose) = match &job.reference {
            Some(dir) => (
                read_outputs(Path::new(dir), outputs.len())?,
                "the untuned kernel's",
            ),
            None => (
                interp::run(&program, &job.def, &args, &bound, Mode::Real)
                    .map_err(|e| format!("the interpreter: {}", e.message))?
                    .into_iter()
                    .map(|(_, t)| t)
                    .collect(),
                "the interpreter's",
            ),
        };
        for ((name, got), w) in outputs.iter().zip(&want) {
            if let Some(i) = differs(got, w) {
                return Err(format!("wrong result: `{name}`[{i}] differs from {whose}"));
            }
        }
    }
    Ok(Reply::Time {
        median_ns: median,
        steps,
    })
}

/// Each step's median time over `runs` profiled runs, by the step's name
/// (a step the runtime runs twice, such as a tail, counts both times).
fn step_times(
    compiled: &compile::Compiled,
    state: &mut runtime::State,
    runs: u32,
) -> Result<BTreeMap<String, u64>, String> {
    let mut seen: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for _ in 0..runs {
        let mut profile = Vec::new();
        compiled.run_state(state, Some(&mut profile))?;
        let mut run: BTreeMap<String, u64> = BTreeMap::new();
        for p in profile {
            *run.entry(p.block).or_default() +=
                u64::try_from(p.time.as_nanos()).unwrap_or(u64::MAX);
        }
        for (name, ns) in run {
            seen.entry(name).or_default().push(ns);
        }
    }
    Ok(seen
        .into_iter()
        .map(|(name, mut ns)| {
            ns.sort_unstable();
            (name, ns[ns.len() / 2])
        })
        .collect())
}

/// The random arguments of a job of `def` at the bound sizes `bound`
/// (tensor `k` drawn with seed `seed + k`), but for those in `given`.
pub fn inputs(
    def: &ir::Def,
    bound: &HashMap<String, i64>,
    seed: u64,
    given: &HashMap<String, Arg>,
) -> Result<HashMap<String, Arg>, String> {
    let mut args: HashMap<String, Arg> = HashMap::new();
    for (k, p) in def.params.iter().enumerate() {
        if given.contains_key(p.name()) {
            continue;
        }
        let ir::Param::Tensor(t) = p else {
            return Err(format!("scalar parameter `{}` has no value", p.name()));
        };
        let shape = interp::param_shape(def, t, bound).map_err(|e| e.message)?;
        let dtype = def.tensor(t).map_or(ir::DType::F32, |x| x.dtype);
        args.insert(
            t.clone(),
            Arg::Tensor(Tensor::random(dtype, &shape, seed + k as u64)),
        );
    }
    Ok(args)
}

/// Writes `outputs` into `dir`, output `k` as `k.npy`.
pub fn write_outputs(dir: &Path, outputs: &[Tensor]) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("`{}`: {e}", dir.display()))?;
    for (k, t) in outputs.iter().enumerate() {
        npy::write(&dir.join(format!("{k}.npy")), t)?;
    }
    Ok(())
}

/// The `outputs` outputs [`write_outputs`] wrote into `dir`.
pub fn read_outputs(dir: &Path, outputs: usize) -> Result<Vec<Tensor>, String> {
    (0..outputs)
        .map(|k| {
            npy::read(&dir.join(format!("{k}.npy"))).map_err(|e| format!("the saved outputs: {e}"))
        })
        .collect()
}

/// The first element where `got` and `want` differ beyond rounding
/// (floats within 1e-3 of their magnitude plus the output's largest,
/// `opt::verify::agree`: the options reorder reductions, and an element
/// that cancels to near zero keeps the rounding of its large terms).
pub fn differs(got: &Tensor, want: &Tensor) -> Option<usize> {
    if got.shape() != want.shape() {
        return Some(0);
    }
    let (g, w) = (got.to_f64_vec(), want.to_f64_vec());
    let scale = w
        .iter()
        .filter(|x| x.is_finite())
        .fold(0.0f64, |m, x| m.max(x.abs()));
    g.iter()
        .zip(&w)
        .position(|(a, b)| !opt::verify::agree(*a, *b, 1e-3, scale))
}
