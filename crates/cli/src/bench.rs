//! `tessera bench`: compile a def, run it on seeded random inputs (after a
//! warm-up), and report the median and minimum time of the runs, GFLOP/s,
//! and the fraction of this machine's measured matmul peak.
//!
//! With `--optimize`, the optimizer's result for the bound sizes is
//! measured instead of the def as written (searched now, or reused from
//! the cache); the line saying so goes to stderr, so `--json` output stays
//! one object.
//!
//! The peak is measured once per machine (float32 matmul with the matmul
//! library on all cores, at a large size) and stored in the cached target
//! description; a target given with `--target` is used as it is.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;

#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    /// The TC file, or an `.onnx` model.
    pub file: PathBuf,
    /// The def to measure (may be left out when the file has one def).
    #[arg(long)]
    pub def: Option<String>,
    /// Bind a size symbol: `--size N=128` (repeatable).
    #[arg(long = "size", value_name = "SYM=N")]
    pub sizes: Vec<String>,
    /// `NAME=FILE.npy` or `NAME=NUMBER` (scalars must be given; tensors
    /// not given are seeded random values).
    #[arg(long = "input", value_name = "NAME=VALUE")]
    pub inputs: Vec<String>,
    /// A TC input whose value is the same on every run (weights,
    /// repeatable): what depends on it alone, such as packing it into a
    /// kernel's layout, runs once, before the runs (a model's weights are
    /// constant already).
    #[arg(long = "constant", value_name = "NAME")]
    pub constants: Vec<String>,
    /// Timed runs (after the warm-up).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..))]
    pub runs: u32,
    /// Untimed runs first (at least this many, and at least 0.25 s).
    #[arg(long, default_value_t = 2)]
    pub warmup: u32,
    /// Print one JSON object instead of text.
    #[arg(long, conflicts_with = "profile")]
    pub json: bool,
    /// Also print, per step, its median time over the runs, GFLOP/s, bytes
    /// moved and share.
    #[arg(long)]
    pub profile: bool,
    /// First search for a faster equivalent of the def at the bound sizes
    /// (as `tessera optimize` does; the result of an identical earlier
    /// search is reused from the cache), and measure that.
    #[arg(long)]
    pub optimize: bool,
    #[command(flatten)]
    pub search: crate::optimize::SearchArgs,
    #[command(flatten)]
    pub compile: crate::compiled::CompileArgs,
}

pub fn run(a: &BenchArgs) -> Result<String, String> {
    measure(a).map_err(|e| e.to_string())
}

/// Compiles and times the def the arguments name; returns what to print. Timing always runs fresh (the cost service's
/// cache of measured times is for searches, which time candidates on the
/// service's own inputs and options; a benchmark's inputs and options are
/// the caller's).
fn measure(a: &BenchArgs) -> Result<String, engine::Error> {
    let search = a.search.requested(a.optimize, &a.compile)?;
    let options = a.compile.options();
    let setup = engine::Setup {
        compiled: Some(options.clone()),
        pool: None,
    };
    let (mut source, bound, weights) =
        crate::run::load_and_bind(&a.file, a.def.as_deref(), &a.sizes, &a.inputs, 0, &setup)?;
    if source.model.is_some() && !a.constants.is_empty() {
        return Err(engine::Error::Usage(
            "`--constant` is for TC inputs: a model's initializers are its constants".to_string(),
        ));
    }
    let mut args = bound.args.clone();
    let mut constants = std::collections::HashMap::new();
    // An optimized def has the def's parameters: they are checked here.
    let written = source.pick_def(a.def.as_deref())?;
    let def_name = written.name.clone();
    if written.has_regions() && (!a.constants.is_empty() || a.profile) {
        return Err(engine::Error::Usage(format!(
            "`{def_name}` has loop or branch regions: `--constant` and `--profile` take defs without them"
        )));
    }
    for name in &a.constants {
        engine::bind::param(written, name)?;
        let arg = args.remove(name).ok_or_else(|| engine::Error::Input {
            name: name.clone(),
            message: format!("`--constant {name}` is given twice"),
        })?;
        constants.insert(name.clone(), arg);
    }
    // A model's weights are its constants: what reads only them (the
    // optimizer's unpacked weights) runs once, at load, as a session's
    // does.
    for name in &weights {
        if let Some(arg) = args.remove(name) {
            constants.insert(name.clone(), arg);
        }
    }
    for n in &bound.notes {
        eprintln!("{n}");
    }
    if let Some(o) = &search {
        crate::optimize::apply(&mut source, a.def.as_deref(), &bound, o)?;
    }
    let def = engine::source::pick_def(source.program(), Some(&def_name), &source.name)?;
    if def.has_regions() {
        return bench_staged(a, source.program(), def, &bound, &options, &args);
    }
    let started = Instant::now();
    let built = engine::constants::compile_constants(
        source.program(),
        def,
        &bound.sizes,
        &options,
        constants,
    )?;
    let build_secs = started.elapsed().as_secs_f64();
    let compiled = built.compiled;
    args.extend(built.fixed);
    let mut state = compiled.prepare(&args)?;
    let timing =
        engine::cost::timing::time_runs(&compiled, &mut state, a.runs, a.warmup, a.profile)?;
    let (median, min) = (timing.median(), timing.min());
    let flops = compiled.flops() as f64;
    let gflops = flops / median / 1e9;
    if engine::target::peak_unmeasured(options.target.as_deref())? {
        eprintln!("note: measuring this machine's matmul peak once (a few seconds)");
    }
    let peak = engine::target::peak_gflops(options.target.as_deref())?;
    let fraction = peak.map(|p| gflops / p);
    let mut out = String::new();
    if a.json {
        let num = |x: Option<f64>| x.map_or_else(|| "null".to_string(), |v| format!("{v}"));
        let _ = writeln!(
            out,
            "{{\"def\": \"{}\", \"median_ms\": {}, \"min_ms\": {}, \"gflops\": {}, \"runs\": {}, \"peak_fraction\": {}, \"peak_gflops\": {}, \"kernels\": {}, \"build_s\": {}}}",
            def.name.replace('\\', "\\\\").replace('"', "\\\""),
            median * 1e3,
            min * 1e3,
            gflops,
            a.runs,
            num(fraction),
            num(peak),
            compiled.steps(),
            build_secs
        );
    } else {
        let _ = writeln!(
            out,
            "{}: {} runs after {} warm-up runs",
            def.name, a.runs, timing.warmups
        );
        let _ = writeln!(
            out,
            "  median {:.4} ms, min {:.4} ms",
            median * 1e3,
            min * 1e3
        );
        let _ = writeln!(
            out,
            "  {:.3} GFLOP ({gflops:.2} GFLOP/s at the median)",
            flops / 1e9
        );
        if let (Some(p), Some(f)) = (peak, fraction) {
            let _ = writeln!(
                out,
                "  {:.1}% of this machine's measured peak ({p:.1} GFLOP/s)",
                f * 100.0
            );
        }
        let _ = writeln!(
            out,
            "  build (lower, passes, compile or cache) {:.3} s",
            build_secs
        );
        if let Some(ns) = compiled.tuned_ns() {
            let _ = writeln!(
                out,
                "  kernel options from the tuning cache (`tessera tune` measured {:.4} ms)",
                ns as f64 / 1e6
            );
        }
        let p = source.model.as_ref().map_or(built.packing, |m| m.packing);
        if a.profile && p.tensors > 0 {
            let _ = writeln!(
                out,
                "  weights packed into kernel layouts once, at load: {} tensor{}, {:.1} MiB, {:.1} ms",
                p.tensors,
                if p.tensors == 1 { "" } else { "s" },
                p.bytes as f64 / f64::from(1 << 20),
                p.seconds * 1e3
            );
        }
        if a.profile {
            out.push_str(&crate::compiled::profile_table(&median_steps(
                &timing.profiles,
            )));
        }
    }
    Ok(out)
}

/// Times a def with regions: its stages compiled, the regions run around
/// them; reports the compiled steps (kernels and library calls) one run
/// executes.
fn bench_staged(
    a: &BenchArgs,
    program: &ir::Program,
    def: &ir::Def,
    bound: &engine::Bound,
    options: &engine::Options,
    args: &std::collections::HashMap<String, interp::Arg>,
) -> Result<String, engine::Error> {
    if a.runs == 0 {
        return Err(engine::Error::Usage(
            "at least one timed run is needed".to_string(),
        ));
    }
    let started = Instant::now();
    let staged = engine::regions::compile(program, def, &bound.sizes, options)?;
    let build_secs = started.elapsed().as_secs_f64();
    let (_, steps) = staged.run_counting(args)?;
    for _ in 0..a.warmup {
        staged.run(args)?;
    }
    let mut seconds = Vec::with_capacity(a.runs as usize);
    for _ in 0..a.runs {
        let t = Instant::now();
        staged.run(args)?;
        seconds.push(t.elapsed().as_secs_f64());
    }
    seconds.sort_by(f64::total_cmp);
    let (median, min) = (seconds[seconds.len() / 2], seconds[0]);
    let mut out = String::new();
    if a.json {
        let _ = writeln!(
            out,
            "{{\"def\": \"{}\", \"median_ms\": {}, \"min_ms\": {}, \"runs\": {}, \"kernels\": {steps}, \"build_s\": {build_secs}}}",
            def.name.replace('\\', "\\\\").replace('"', "\\\""),
            median * 1e3,
            min * 1e3,
            a.runs
        );
    } else {
        let _ = writeln!(
            out,
            "{}: {} runs after {} warm-up runs",
            def.name,
            a.runs,
            a.warmup + 1
        );
        let _ = writeln!(
            out,
            "  median {:.4} ms, min {:.4} ms",
            median * 1e3,
            min * 1e3
        );
        let _ = writeln!(
            out,
            "  {steps} compiled steps per run (stages run around the loops and branches)"
        );
        let _ = writeln!(
            out,
            "  build (lower, passes, compile or cache) {build_secs:.3} s"
        );
    }
    Ok(out)
}

/// Each step's profile with its median time over the runs.
fn median_steps(runs: &[Vec<runtime::StepProfile>]) -> Vec<runtime::StepProfile> {
    let Some(first) = runs.first() else {
        return Vec::new();
    };
    first
        .iter()
        .enumerate()
        .map(|(k, step)| {
            let mut times: Vec<_> = runs
                .iter()
                .filter_map(|r| r.get(k))
                .map(|s| s.time)
                .collect();
            times.sort();
            runtime::StepProfile {
                time: times[times.len() / 2],
                ..step.clone()
            }
        })
        .collect()
}
