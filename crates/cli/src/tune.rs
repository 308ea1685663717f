//! `tessera tune`: tune the kernel options of a TC def or an ONNX model
//! (the genetic search of TC §6, each candidate measured in a worker
//! process of its own; a model's weights are its constants, as `run` and
//! `bench` take them) and keep the winner in the tuning cache; `--show` lists the cache. A kernel the
//! cache holds is answered from it unless `--again`. The first Ctrl-C
//! stops the search and keeps what it found; a second one exits at once.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use engine::tune::cache::TuneCache;
use engine::tune::genetic::Params;
use engine::tune::tuner::{tune, Request};
use engine::tune::worker::LocalWorkers;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

#[derive(clap::Args, Debug)]
pub struct TuneArgs {
    /// The TC file, or an `.onnx` model (its weights are its constants).
    #[arg(required_unless_present = "show")]
    pub file: Option<PathBuf>,
    /// The def to tune (may be left out when the file has one def).
    #[arg(long)]
    pub def: Option<String>,
    /// Bind a size symbol: `--size N=128` (repeatable); every one must be
    /// bound.
    #[arg(long = "size", value_name = "SYM=N")]
    pub sizes: Vec<String>,
    /// An input whose value is the same on every run (weights,
    /// repeatable), as `bench --constant` declares it: what depends on it
    /// alone runs once, and the kernel tuned is the rest.
    #[arg(long = "constant", value_name = "NAME")]
    pub constants: Vec<String>,
    /// Stop after this many seconds (the candidate being measured is
    /// stopped).
    #[arg(long, default_value_t = 60.0)]
    pub budget: f64,
    /// Generations of the search (TC's default: 25).
    #[arg(long, default_value_t = 25)]
    pub generations: usize,
    /// Candidates per generation; by default TC's 100, scaled down to what
    /// the budget can measure in six generations.
    #[arg(long)]
    pub population: Option<usize>,
    /// The seed of the search's random choices.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// How long one candidate may take (compile, check and time) before
    /// its worker is killed and it fails.
    #[arg(long, default_value_t = 30.0, value_name = "SECONDS")]
    pub limit: f64,
    /// Search even when the tuning cache holds the kernel (the search
    /// starts from the cached options).
    #[arg(long)]
    pub again: bool,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// List the tuning cache instead.
    #[arg(long, conflicts_with = "file")]
    pub show: bool,
}

pub fn run(a: &TuneArgs) -> Result<String, String> {
    let message = |e: engine::Error| e.to_string();
    let dir = TuneCache::default_dir().map_err(message)?;
    let cache = TuneCache::open(dir).map_err(message)?;
    if a.show {
        return show(&cache).map_err(message);
    }
    let Some(file) = &a.file else {
        return Err("error: give a TC file to tune, or `--show`".to_string());
    };
    if file.extension().is_some_and(|e| e == "py") {
        return Err(format!(
            "error: `{}`: tuning Python functions is not built yet; tune a TC file or an ONNX model",
            file.display()
        ));
    }
    let is_model = file.extension().is_some_and(|e| e == "onnx");
    if is_model && !a.constants.is_empty() {
        return Err(
            "error: `--constant` is for TC inputs: a model's initializers are its constants"
                .to_string(),
        );
    }
    let seconds = |what: &str, v: f64| {
        Duration::try_from_secs_f64(v)
            .ok()
            .filter(|d| !d.is_zero())
            .ok_or_else(|| format!("error: {what} must be a positive number of seconds, not {v}"))
    };
    let budget = seconds("--budget", a.budget)?;
    let limit = seconds("--limit", a.limit)?;
    if a.generations == 0 || a.population == Some(0) {
        return Err("error: --generations and --population must be at least 1".to_string());
    }
    let given = engine::bind::parse_sizes(&a.sizes).map_err(message)?;
    let mut source = if is_model {
        engine::Source::load_onnx(
            file,
            a.def.as_deref(),
            &given,
            &HashMap::new(),
            &HashMap::new(),
        )
    } else {
        engine::Source::read_tc(file)
    }
    .map_err(|e| crate::optimize::without_inputs(e, "tune"))?;
    // A model's weights are its constants, as `run` and `bench` take them.
    let weights = source.take_weights();
    let constants: BTreeSet<String> = if is_model {
        weights.keys().cloned().collect()
    } else {
        a.constants.iter().cloned().collect()
    };
    let def = source.pick_def(a.def.as_deref()).map_err(message)?;
    let bound =
        interp::bind_sizes(def, &weights, &given).map_err(|e| format!("error: {}", e.message))?;
    drop(weights);
    let sizes: BTreeMap<String, i64> = bound.into_iter().collect();
    let exe = std::env::current_exe().map_err(|e| format!("error: cannot find tessera: {e}"))?;
    let workers = LocalWorkers {
        program: exe,
        args: vec!["tune-worker".to_string()],
        limit,
    };
    let population = a.population.unwrap_or(Params::default().population);
    let params = Params {
        population,
        generations: a.generations,
        elites: (population / 10).max(1),
        seed: a.seed,
        ..Params::default()
    };
    let interrupted = on_ctrl_c();
    let bar =
        ProgressBar::with_draw_target(Some(a.generations as u64), ProgressDrawTarget::stderr());
    if let Ok(style) =
        ProgressStyle::with_template("tuning [{bar:30}] generation {pos}/{len}: {msg}")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    let request = Request {
        program: source.program(),
        def: &def.name,
        sizes: &sizes,
        constants: &constants,
        model: is_model.then_some(file.as_path()),
        params,
        fit_population: a.population.is_none(),
        budget,
        again: a.again,
    };
    let tuned = tune(
        &request,
        &workers,
        &cache,
        &mut |p| {
            bar.set_position(p.generation as u64);
            bar.set_message(format!(
                "best {}, {} measured, {} failed",
                p.best
                    .map_or("none".to_string(), |t| format!("{:.4} ms", t * 1e3)),
                p.measured,
                p.failed
            ));
        },
        &|| interrupted.load(Ordering::Relaxed),
    )
    .map_err(message)?;
    bar.finish_and_clear();
    if a.json {
        return Ok(json(&def.name, &tuned));
    }
    let ms = |ns: u64| ns as f64 / 1e6;
    let mut out = String::new();
    if tuned.from_cache {
        if let Some((options, ns)) = &tuned.best {
            let _ = writeln!(
                out,
                "{}: in the tuning cache (found in {:.1} ms): {:.4} ms tuned ({:.2}x the untuned {:.4} ms); `--again` searches again",
                def.name,
                tuned.seconds * 1e3,
                ms(*ns),
                tuned.default_ns as f64 / *ns as f64,
                ms(tuned.default_ns)
            );
            out.push_str(&kernel::print_options(options));
        }
        return Ok(out);
    }
    if tuned.interrupted {
        out.push_str("stopped by Ctrl-C; what was found so far:\n");
    }
    if let Some(why) = &tuned.damaged {
        let _ = writeln!(
            out,
            "note: the cache's entry was damaged ({why}) and is replaced"
        );
    }
    let _ = writeln!(
        out,
        "{}: untuned {:.4} ms; {} candidates measured ({} per generation) in {:.1} s, {} failed",
        def.name,
        ms(tuned.default_ns),
        tuned.measured,
        tuned.population,
        tuned.seconds,
        tuned.failed.len()
    );
    match &tuned.best {
        Some((options, ns)) => {
            let _ = writeln!(
                out,
                "best {:.4} ms ({:.2}x the untuned kernel){}",
                ms(*ns),
                tuned.default_ns as f64 / *ns as f64,
                if tuned.stored {
                    ", kept in the tuning cache"
                } else {
                    "; not kept: not surely 3% faster than the untuned kernel measured beside it (95% confidence), or the cache's entry already"
                }
            );
            if let Some(secs) = tuned.checked {
                let _ = writeln!(
                    out,
                    "(the untuned kernel's outputs, which every winner matched, agree with the interpreter's: checked in {secs:.1} s)"
                );
            }
            out.push_str(&kernel::print_options(options));
        }
        None => out.push_str("no candidate ran\n"),
    }
    Ok(out)
}

/// A flag the first Ctrl-C sets; the second exits at once, with the
/// status a shell gives a process SIGINT ended. When the handler cannot be
/// installed (another one is), Ctrl-C keeps its default: it ends tessera.
fn on_ctrl_c() -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    let set = Arc::clone(&flag);
    let _ = ctrlc::set_handler(move || {
        if set.swap(true, Ordering::Relaxed) {
            std::process::exit(130);
        }
        eprintln!("stopping: the search keeps what it found (Ctrl-C again exits at once)");
    });
    flag
}

/// What tuning found, as one JSON object (times in nanoseconds; the
/// trajectory's points are `[seconds, best_ns]`).
fn json(def: &str, t: &engine::tune::tuner::Tuned) -> String {
    let value = serde_json::json!({
        "def": def,
        "default_ns": t.default_ns,
        "best_ns": t.best.as_ref().map(|(_, ns)| *ns),
        "options": t.best.as_ref().map(|(o, _)| kernel::print_options(o)),
        "measured": t.measured,
        "failed": t.failed,
        "population": t.population,
        "stored": t.stored,
        "from_cache": t.from_cache,
        "interrupted": t.interrupted,
        "trajectory": t.trajectory,
        "seconds": t.seconds,
        "checked_seconds": t.checked,
    });
    format!("{value}\n")
}

fn show(cache: &TuneCache) -> Result<String, engine::Error> {
    let mut out = String::new();
    for (key, entry) in cache.list()? {
        // A key's start names it (entries are files anyone may rename).
        let key: String = key.chars().take(12).collect();
        match entry {
            Ok(e) => {
                let sizes: Vec<String> = e.sizes.iter().map(|(k, v)| format!("{k}={v}")).collect();
                let _ = writeln!(
                    out,
                    "{} {} [{}]: {:.4} ms tuned, {:.4} ms untuned, {} candidates",
                    key,
                    e.def,
                    sizes.join(" "),
                    e.time_ns as f64 / 1e6,
                    e.default_ns as f64 / 1e6,
                    e.candidates
                );
            }
            Err(why) => {
                let _ = writeln!(out, "{key} damaged: {why}");
            }
        }
    }
    if out.is_empty() {
        out.push_str("the tuning cache is empty\n");
    }
    Ok(out)
}
