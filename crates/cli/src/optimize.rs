//! `tessera optimize`: search for a faster equivalent of a def (the
//! proved rewrite rules saturated in an e-graph, the cheapest candidates
//! by estimate measured), prove the fastest equal to the original, and
//! print it as TC, with `--explain` the steps it applies and the times.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use opt::optimize::Event;

#[derive(clap::Args, Debug)]
pub struct OptimizeArgs {
    /// The TC file, or an `.onnx` model.
    pub file: PathBuf,
    /// The def to optimize (may be left out when the file has one def).
    #[arg(long)]
    pub def: Option<String>,
    /// Bind a size symbol: `--size N=128` (repeatable); the optimized def
    /// is for these sizes.
    #[arg(long = "size", value_name = "SYM=N")]
    pub sizes: Vec<String>,
    /// The search's time in seconds (saturation, extraction and the
    /// candidates' measurements).
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0)]
    pub budget: f64,
    /// How many of the cheapest candidates by estimate are measured.
    #[arg(long, value_name = "K", default_value_t = 5)]
    pub top_k: usize,
    /// A rules file to use beside the shipped rules (repeatable); each
    /// rule is proved by the verifier before it is used.
    #[arg(long = "rules", value_name = "FILE")]
    pub rules: Vec<PathBuf>,
    /// Write the optimized program to this file instead of printing it.
    #[arg(short = 'o', value_name = "OUT.tc")]
    pub out: Option<PathBuf>,
    /// Also print the applied steps, the candidates and the proof.
    #[arg(long)]
    pub explain: bool,
    /// Decide among the candidates by the analytic estimate alone: no
    /// candidate is compiled or measured, and the answer is the same on
    /// every run.
    #[arg(long)]
    pub estimate_only: bool,
    #[command(flatten)]
    pub compile: crate::compiled::CompileArgs,
}

pub fn run(a: &OptimizeArgs) -> Result<String, String> {
    if !(a.budget.is_finite() && a.budget >= 0.0) {
        return Err(format!(
            "error: `--budget {}` is not a number of seconds",
            a.budget
        ));
    }
    let onnx = a.file.extension().is_some_and(|e| e == "onnx");
    let given = engine::bind::parse_sizes(&a.sizes).map_err(|e| e.to_string())?;
    let source = if onnx {
        engine::Source::load_onnx(&a.file, a.def.as_deref(), &given, &HashMap::new())
    } else {
        engine::Source::read_tc(&a.file)
    }
    .map_err(|e| e.to_string())?;
    let options = engine::optimize::Options {
        search: opt::optimize::Options {
            budget: Duration::from_secs_f64(a.budget),
            top_k: a.top_k,
            measure: !a.estimate_only,
            ..Default::default()
        },
        compile: a.compile.options(),
        rules: a.rules.clone(),
    };
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template("{spinner} optimizing: {msg} ({elapsed})") {
        bar.set_style(style);
    }
    bar.enable_steady_tick(Duration::from_millis(200));
    let ms = |d: Duration| format!("{:.3} ms", d.as_secs_f64() * 1e3);
    let mut report = |e: Event| match e {
        Event::Saturated { classes, nodes, .. } => {
            bar.set_message(format!("e-graph of {classes} classes, {nodes} nodes"))
        }
        Event::Measured {
            index, count, best, ..
        } => bar.set_message(format!(
            "measured {} of {count} candidates, best {}",
            index + 1,
            ms(best)
        )),
        Event::Verifying => bar.set_message("proving the result equal to the original"),
    };
    let given = if onnx { HashMap::new() } else { given };
    let outcome =
        engine::optimize::optimize(&source, a.def.as_deref(), &given, &options, &mut report);
    bar.finish_and_clear();
    let outcome = outcome.map_err(|e| e.to_string())?;
    let program = own_defs(&outcome.program);
    let mut out = String::new();
    match &a.out {
        Some(path) => std::fs::write(path, &program)
            .map_err(|e| format!("error: cannot write `{}`: {e}", path.display()))?,
        None => out.push_str(&program),
    }
    if a.explain {
        out.push_str(&opt::optimize::print_explanation(&outcome));
    } else {
        eprintln!(
            "{} -> {} ({:.2}x, {}), {} steps, search {:.2} s",
            ms(outcome.original_time),
            ms(outcome.time),
            outcome.original_time.as_secs_f64() / outcome.time.as_secs_f64().max(1e-12),
            if outcome.measured {
                "measured"
            } else {
                "estimated"
            },
            outcome.steps.len(),
            outcome.elapsed.as_secs_f64()
        );
    }
    Ok(out)
}

/// The program's defs that the operator prelude does not define, printed:
/// the file's own (and, for a model, those its import generated).
fn own_defs(program: &ir::Program) -> String {
    program
        .defs
        .iter()
        .filter(|d| !onnx::PRELUDE.contains(&format!("def {}(", d.name)))
        .map(|d| ir::print_def(program, d))
        .collect::<Vec<_>>()
        .join("\n")
}
