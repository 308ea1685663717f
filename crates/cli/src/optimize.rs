//! `tessera optimize`: search for a faster equivalent of a def (the
//! proved rewrite rules saturated in an e-graph, the cheapest candidates
//! by estimate measured), prove the fastest equal to the original, and
//! print it as TC, with `--explain` the steps it applies and the times.
//! The search's options ([`SearchArgs`]) are shared with `run --optimize`
//! and `bench --optimize`, which run the result ([`apply`]), reusing a
//! cached one.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use crate::progress::Searching;

/// The options of a search, shared by `optimize`, `run` and `bench`.
#[derive(clap::Args, Debug)]
pub struct SearchArgs {
    /// The search's time in seconds (saturation, extraction and the
    /// candidates' measurements) [default: 10].
    #[arg(long, value_name = "SECONDS")]
    pub budget: Option<f64>,
    /// How many of the cheapest candidates by estimate are measured
    /// [default: 5].
    #[arg(long, value_name = "K")]
    pub top_k: Option<usize>,
    /// A rules file to use beside the shipped rules (repeatable); each
    /// rule is proved by the verifier before it is used.
    #[arg(long = "rules", value_name = "FILE")]
    pub rules: Vec<PathBuf>,
    /// Decide among the candidates by the analytic estimate alone: no
    /// candidate is compiled or measured, and the answer is the same on
    /// every run.
    #[arg(long)]
    pub estimate_only: bool,
    /// Leave expression derivation (OLLIE: convolutions and other
    /// contractions rewritten into matmuls and generated kernels) out of
    /// the search.
    #[arg(long, conflicts_with = "derive_depth")]
    pub no_derive: bool,
    /// The explorative depth of expression derivation (rule applications
    /// per expression before the guided completion) [default: 4].
    #[arg(long, value_name = "D")]
    pub derive_depth: Option<usize>,
}

impl SearchArgs {
    /// The engine's options these arguments give, checked (a budget that
    /// is not a number of seconds, a budget or top-k of 0, are errors).
    pub fn options(
        &self,
        compile: &crate::compiled::CompileArgs,
    ) -> Result<engine::optimize::Options, engine::Error> {
        let defaults = opt::optimize::Options::default();
        let budget = match self.budget {
            None => defaults.budget,
            Some(b) => Duration::try_from_secs_f64(b).map_err(|_| {
                engine::Error::Usage(format!("`--budget {b}` is not a number of seconds"))
            })?,
        };
        let search = opt::optimize::Options {
            budget,
            top_k: self.top_k.unwrap_or(defaults.top_k),
            measure: !self.estimate_only,
            derive_depth: match (self.no_derive, self.derive_depth) {
                (true, _) => 0,
                (false, Some(0)) => {
                    return Err(engine::Error::Usage(
                        "a derivation depth of 0 derives nothing: ask for 1 or more, or give `--no-derive`".to_string(),
                    ))
                }
                (false, d) => d.unwrap_or(defaults.derive_depth),
            },
            ..defaults
        };
        search.check().map_err(engine::Error::Usage)?;
        Ok(engine::optimize::Options {
            search,
            compile: compile.options(),
            rules: self.rules.clone(),
            spent: Duration::ZERO,
        })
    }

    /// The options given, as they were spelled: all of them need
    /// `--optimize` on `run` and `bench`.
    fn given(&self) -> Vec<&'static str> {
        let mut given = Vec::new();
        if self.budget.is_some() {
            given.push("--budget");
        }
        if self.top_k.is_some() {
            given.push("--top-k");
        }
        if !self.rules.is_empty() {
            given.push("--rules");
        }
        if self.estimate_only {
            given.push("--estimate-only");
        }
        if self.no_derive {
            given.push("--no-derive");
        }
        if self.derive_depth.is_some() {
            given.push("--derive-depth");
        }
        given
    }

    /// For `run` and `bench`: the engine's options when `optimize` is on,
    /// `None` when it is off, and a usage error when a search option is
    /// given without it.
    pub fn requested(
        &self,
        optimize: bool,
        compile: &crate::compiled::CompileArgs,
    ) -> Result<Option<engine::optimize::Options>, engine::Error> {
        if optimize {
            return self.options(compile).map(Some);
        }
        match self.given().first() {
            Some(flag) => Err(engine::Error::Usage(format!(
                "`{flag}` is an option of the optimizer's search, which runs only with `--optimize`\n  = help: add `--optimize` to search for a faster equivalent of the def first"
            ))),
            None => Ok(None),
        }
    }
}

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
    #[command(flatten)]
    pub search: SearchArgs,
    /// Write the optimized program to this file instead of printing it.
    #[arg(short = 'o', value_name = "OUT.tc")]
    pub out: Option<PathBuf>,
    /// Also print the applied steps, the candidates and the proof.
    #[arg(long)]
    pub explain: bool,
    #[command(flatten)]
    pub compile: crate::compiled::CompileArgs,
}

/// For `run` and `bench --optimize`: replaces def `def` of `source` by the
/// optimizer's result at the sizes of `bound` (cached, or searched now
/// with a spinner), and says what happened on stderr in one line. The
/// program then holds the defs the result calls beside the file's: the
/// caller finds the def by its name.
pub fn apply(
    source: &mut engine::Source,
    def: Option<&str>,
    bound: &engine::Bound,
    options: &engine::optimize::Options,
) -> Result<(), engine::Error> {
    let d = source.pick_def(def)?;
    let sizes = engine::optimize::run_sizes(d, bound);
    let spinner = Searching::start();
    let found =
        engine::optimize::optimize_cached(source, def, &sizes, options, &mut |e| spinner.report(e));
    spinner.finish();
    let found = found?;
    eprintln!("{}", found.summary());
    let name = found.def.name.clone();
    source.replace_program(found.program, &name);
    Ok(())
}

/// Error `e` of a command that loads a model without its inputs
/// (`command`), with what to do when the model's shapes depend on the
/// values it computes from them.
pub fn without_inputs(e: engine::Error, command: &str) -> String {
    match e {
        engine::Error::NeedsComputed { .. } => format!(
            "{e}\n  = help: `tessera {command}` takes no inputs; `tessera run --optimize` with the inputs searches the program they give"
        ),
        e => e.to_string(),
    }
}

pub fn run(a: &OptimizeArgs) -> Result<String, String> {
    let started = std::time::Instant::now();
    let mut options = a.search.options(&a.compile).map_err(|e| e.to_string())?;
    let onnx = a.file.extension().is_some_and(|e| e == "onnx");
    let given = engine::bind::parse_sizes(&a.sizes).map_err(|e| e.to_string())?;
    let source = if onnx {
        engine::Source::load_onnx(
            &a.file,
            a.def.as_deref(),
            &given,
            &HashMap::new(),
            &HashMap::new(),
        )
    } else {
        engine::Source::read_tc(&a.file)
    }
    .map_err(|e| without_inputs(e, "optimize"))?;
    // The budget is the command's: loading the model counts.
    options.spent = started.elapsed();
    let spinner = Searching::start();
    let ms = |d: Duration| format!("{:.3} ms", d.as_secs_f64() * 1e3);
    let given = if onnx { HashMap::new() } else { given };
    let outcome =
        engine::optimize::optimize(&source, a.def.as_deref(), &given, &options, &mut |e| {
            spinner.report(e)
        });
    spinner.finish();
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
