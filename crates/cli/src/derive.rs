//! `tessera derive`: OLLIE's expression derivation on a def — the
//! derivation rules searched (explorative to a depth, guided toward the
//! predefined operators), the cheapest candidates measured beside the
//! original, the fastest proved equal to it, printed as TC; with
//! `--explain`, the rule sequence that produced it, each step with the
//! verifier's verdict.

use std::fmt::Write;
use std::path::PathBuf;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

#[derive(clap::Args, Debug)]
pub struct DeriveArgs {
    /// The TC file.
    pub file: PathBuf,
    /// The def to derive (may be left out when the file has one def).
    #[arg(long)]
    pub def: Option<String>,
    /// Bind a size symbol or integer scalar: `--size N=128` (repeatable;
    /// every size must be bound).
    #[arg(long = "size", value_name = "SYM=N")]
    pub sizes: Vec<String>,
    /// The explorative depth [default: 4].
    #[arg(long)]
    pub depth: Option<usize>,
    /// An input known at load (a weight): what only such inputs feed is
    /// computed once, at load, and costs nothing (repeatable).
    #[arg(long = "constant", value_name = "NAME")]
    pub constants: Vec<String>,
    /// How many of the cheapest candidates by estimate are measured
    /// beside the original [default: 3], with the cheapest of each
    /// derivation using a rule none before it uses; 0 decides by the
    /// estimate alone.
    #[arg(long, value_name = "K")]
    pub top_k: Option<usize>,
    /// Print the rule sequence of the chosen program, each step proved
    /// equal to the one before it by the verifier, and the search's
    /// statistics.
    #[arg(long)]
    pub explain: bool,
    /// Prove every step of the chosen derivation by the verifier (as
    /// `--explain` does), and fail if one is not proved equal.
    #[arg(long)]
    pub verify_steps: bool,
    /// Print candidate N (1 for the cheapest by estimate) with its
    /// derivation instead of the fastest (nothing is measured).
    #[arg(long, value_name = "N")]
    pub candidate: Option<usize>,
    /// Instead of searching, apply one rule (by its name in OLLIE's Table
    /// 1, such as `summation-splitting`) at every statement and print
    /// each application with the verifier's verdict.
    #[arg(long, value_name = "RULE")]
    pub apply: Option<String>,
    #[command(flatten)]
    pub compile: crate::compiled::CompileArgs,
}

pub fn run(a: &DeriveArgs) -> Result<String, String> {
    let source = engine::Source::read_tc(&a.file).map_err(|e| e.to_string())?;
    let sizes = engine::bind::parse_sizes(&a.sizes).map_err(|e| e.to_string())?;
    if let Some(rule) = &a.apply {
        let applications = engine::derive::apply_rule(&source, a.def.as_deref(), &sizes, rule)
            .map_err(|e| e.to_string())?;
        return Ok(print_applications(rule, &applications));
    }
    let defaults = opt::derive::Options::default();
    let options = engine::derive::Options {
        search: opt::derive::Options {
            depth: a.depth.unwrap_or(defaults.depth),
            constants: a.constants.clone(),
            ..defaults
        },
        compile: a.compile.options(),
        measure: if a.candidate.is_some() {
            0
        } else {
            a.top_k.unwrap_or(3)
        },
        verify_steps: a.explain || a.verify_steps,
        pick: match a.candidate {
            Some(0) => return Err("error: `--candidate` counts from 1".to_string()),
            Some(n) => Some(n - 1),
            None => None,
        },
    };
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template("{spinner} deriving: {msg} ({elapsed})") {
        bar.set_style(style);
    }
    bar.enable_steady_tick(Duration::from_millis(200));
    let derived = engine::derive::derive(
        &source,
        a.def.as_deref(),
        &sizes,
        &options,
        &|states, depth| bar.set_message(format!("{states} states, depth {depth}")),
    );
    bar.finish_and_clear();
    let d = derived.map_err(|e| e.to_string())?;
    if a.verify_steps {
        let steps = d.chosen.as_ref().map_or(&[][..], |c| &c.steps[..]);
        for (k, proof) in d.step_proofs.iter().enumerate() {
            let failed = match proof {
                Ok(r) if r.equivalent() => None,
                Ok(r) => Some(opt::verify::print_report(r)),
                Err(e) => Some(e.clone()),
            };
            if let Some(why) = failed {
                let step = steps
                    .get(k)
                    .map_or(String::new(), |s| format!("{}: {}", s.rule, s.what));
                return Err(format!(
                    "error: step {} ({step}) is not proved equal:\n{why}",
                    k + 1
                ));
            }
        }
    }
    let program = ir::Program {
        defs: vec![d.def.clone()],
    };
    let mut out = ir::print_program(&program);
    // One line on standard error about what was measured (times vary, so
    // an estimate-only run prints none).
    if let Some(t0) = d.original_time {
        let ms = |t: Duration| format!("{:.3} ms", t.as_secs_f64() * 1e3);
        let best = d
            .measured
            .iter()
            .map(|(_, t)| *t)
            .min()
            .filter(|_| d.chosen.is_some())
            .unwrap_or(t0);
        eprintln!(
            "derived `{}`: {} states, search {:.3} s, request {:.3} s; {} ({} against the original's {})",
            d.def.name,
            d.outcome.stats.states,
            d.outcome.elapsed.as_secs_f64(),
            d.elapsed.as_secs_f64(),
            if d.chosen.is_some() { "a derived program is faster" } else { "the original is kept" },
            ms(best),
            ms(t0)
        );
    }
    if a.explain {
        out.push_str(&explain(&d));
    }
    Ok(out)
}

fn explain(d: &engine::derive::Derived) -> String {
    let ms = |t: Duration| format!("{:.3} ms", t.as_secs_f64() * 1e3);
    let mut out = String::new();
    let s = &d.outcome.stats;
    let _ = writeln!(
        out,
        "# search: {} states expanded, {} pruned by fingerprint, {} complete candidates{}",
        s.states,
        s.pruned,
        d.outcome.candidates.len(),
        s.cut
            .map(|c| format!(" (stopped by its {c} limit)"))
            .unwrap_or_default()
    );
    // Times only when something was measured: an estimate-only run's
    // output is the same on every run.
    if let Some(t) = d.original_time {
        let _ = writeln!(
            out,
            "# search time {:.3} s, request {:.3} s; original: {}",
            d.outcome.elapsed.as_secs_f64(),
            d.elapsed.as_secs_f64(),
            ms(t)
        );
    }
    if d.measured.is_empty() {
        for (k, c) in d.outcome.candidates.iter().enumerate().take(5) {
            let rules: Vec<&str> = c.steps.iter().map(|s| s.rule).collect();
            let _ = writeln!(
                out,
                "# candidate {}: {:.3} ms estimated, steps: {}",
                k + 1,
                c.estimate * 1e3,
                rules.join(", ")
            );
        }
    }
    for (k, t) in &d.measured {
        let c = &d.outcome.candidates[*k];
        let _ = writeln!(
            out,
            "# candidate {}: {} measured, {:.3} ms estimated, {} steps",
            k + 1,
            ms(*t),
            c.estimate * 1e3,
            c.steps.len()
        );
    }
    match &d.chosen {
        None => {
            let _ = writeln!(out, "# kept the original: no derived program was faster");
        }
        Some(c) => {
            let _ = writeln!(out, "# steps:");
            for (k, step) in c.steps.iter().enumerate() {
                let verdict = match d.step_proofs.get(k) {
                    Some(Ok(r)) if r.equivalent() => "proved".to_string(),
                    Some(Ok(_)) => "NOT EQUIVALENT".to_string(),
                    Some(Err(e)) => format!("not proved: {e}"),
                    None => "not checked".to_string(),
                };
                let _ = writeln!(
                    out,
                    "#   {}. {}: {} [{verdict}]",
                    k + 1,
                    step.rule,
                    step.what
                );
            }
            if let Some(p) = &d.proof {
                let _ = writeln!(out, "# the result against the original: {}", summary(p));
            }
        }
    }
    out
}

fn print_applications(rule: &str, applications: &[engine::derive::Application]) -> String {
    let mut out = String::new();
    if applications.is_empty() {
        let _ = writeln!(out, "# {rule} does not apply");
    }
    for (k, a) in applications.iter().enumerate() {
        let verdict = match &a.proof {
            Ok(r) => summary(r),
            Err(e) => format!("not proved: {e}"),
        };
        let _ = writeln!(out, "# application {}: {}", k + 1, a.what);
        let _ = writeln!(out, "# {verdict}");
        out.push_str(&ir::print_program(&ir::Program {
            defs: vec![a.def.clone()],
        }));
    }
    out
}

fn summary(r: &opt::verify::Report) -> String {
    opt::verify::print_report(r)
        .lines()
        .next()
        .unwrap_or_default()
        .to_string()
}
