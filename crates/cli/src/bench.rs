//! `tessera bench`: compile a def, run it on seeded random inputs (after a
//! warm-up), and report the median and minimum time of the runs, GFLOP/s,
//! and the fraction of this machine's measured matmul peak.
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
    #[command(flatten)]
    pub compile: crate::compiled::CompileArgs,
}

pub fn run(a: &BenchArgs) -> Result<String, String> {
    // An ONNX model runs as its imported `model` def, with its weights.
    let onnx = a.file.extension().is_some_and(|e| e == "onnx");
    let (checked, name, want, inputs, preset) = if onnx {
        let m = crate::run::OnnxProgram::load(&a.file, a.def.as_deref(), &a.sizes, &a.inputs)?;
        (
            m.checked,
            m.name,
            Some(onnx::MODEL_DEF),
            m.inputs,
            m.weights,
        )
    } else {
        let (name, text) = crate::load::read_source(&a.file)?;
        let checked =
            tc::check_source(&text).map_err(|d| tc::render_diagnostics(&d, &name, &text))?;
        let inputs = a.inputs.clone();
        (
            checked,
            name,
            a.def.as_deref(),
            inputs,
            std::collections::HashMap::new(),
        )
    };
    let program = &checked.program;
    let def = crate::run::pick_def(program, want, &name)?;
    // An ONNX model's sizes went into its import: its def has no size symbols.
    let given = crate::load::parse_sizes(if onnx { &[] } else { &a.sizes })?;
    let (args, sizes) = crate::run::prepare_args(def, &inputs, &given, 0, preset)?;
    let started = Instant::now();
    let exe = crate::compiled::build(&a.compile, program, def, &sizes)
        .map_err(crate::compiled::Built::message)?;
    let build_secs = started.elapsed().as_secs_f64();
    let mut state = exe.state();
    crate::compiled::set_args(&exe, &mut state, &args)?;
    // Warm up for the runs asked and at least a quarter of a second, so
    // that page faults, thread wake-ups and frequency ramps are over.
    let warm = Instant::now();
    let mut warmups = 0;
    while warmups < a.warmup || warm.elapsed().as_secs_f64() < 0.25 {
        exe.run(&mut state, None)
            .map_err(|e| format!("error: {e}"))?;
        warmups += 1;
    }
    let mut times = Vec::with_capacity(a.runs as usize);
    let mut profiles: Vec<Vec<runtime::StepProfile>> = Vec::new();
    for _ in 0..a.runs {
        let mut steps = Vec::new();
        let t = Instant::now();
        exe.run(&mut state, a.profile.then_some(&mut steps))
            .map_err(|e| format!("error: {e}"))?;
        times.push(t.elapsed().as_secs_f64());
        profiles.push(steps);
    }
    times.sort_by(f64::total_cmp);
    let median = if times.len() % 2 == 1 {
        times[times.len() / 2]
    } else {
        (times[times.len() / 2 - 1] + times[times.len() / 2]) / 2.0
    };
    let min = times[0];
    let flops = exe.flops() as f64;
    let gflops = flops / median / 1e9;
    let peak = peak_gflops(&a.compile)?;
    let fraction = peak.map(|p| gflops / p);
    let mut out = String::new();
    if a.json {
        let num = |x: Option<f64>| x.map_or_else(|| "null".to_string(), |v| format!("{v}"));
        let _ = writeln!(
            out,
            "{{\"def\": \"{}\", \"median_ms\": {}, \"min_ms\": {}, \"gflops\": {}, \"runs\": {}, \"peak_fraction\": {}, \"peak_gflops\": {}, \"build_s\": {}}}",
            def.name.replace('\\', "\\\\").replace('"', "\\\""),
            median * 1e3,
            min * 1e3,
            gflops,
            a.runs,
            num(fraction),
            num(peak),
            build_secs
        );
    } else {
        let _ = writeln!(
            out,
            "{}: {} runs after {warmups} warm-up runs",
            def.name, a.runs
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
        if a.profile {
            out.push_str(&crate::compiled::profile_table(&median_steps(&profiles)));
        }
    }
    Ok(out)
}

/// The target's measured peak in GFLOP/s: from `--target` as given, else
/// from the cached target, measured and stored there the first time.
fn peak_gflops(a: &crate::compiled::CompileArgs) -> Result<Option<f64>, String> {
    let mut target = crate::compiled::target(a)?;
    if target.peak_mflops.is_none() && a.target.is_none() {
        eprintln!("note: measuring this machine's matmul peak once (a few seconds)");
        let peak = runtime::matmul::peak_gflops();
        target.peak_mflops = Some((peak * 1e3) as u64);
        let path = kernel::Target::cache_path().map_err(|e| format!("error: {e}"))?;
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        std::fs::write(&tmp, target.to_text())
            .and_then(|()| std::fs::rename(&tmp, &path))
            .map_err(|e| format!("error: cannot update `{}`: {e}", path.display()))?;
    }
    Ok(target.peak_mflops.map(|p| p as f64 / 1e3))
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
