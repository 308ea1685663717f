//! `tessera lower`: lower a def, with its sizes bound, to kernel IR, run a
//! pass pipeline over it, and print it.

use std::fmt::Write;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct LowerArgs {
    /// The TC file.
    pub file: PathBuf,
    /// The def to lower (may be left out when the file has one def).
    #[arg(long)]
    pub def: Option<String>,
    /// Bind a size symbol or integer scalar: `--size N=128` (repeatable).
    /// Kernels are lowered for concrete sizes, so every one must be bound.
    #[arg(long = "size", value_name = "SYM=N")]
    pub sizes: Vec<String>,
    /// A pass pipeline: a shipped one by name (`cpu`, or `cpu-serial`
    /// without partitioning) or a file of pass names, one per line.
    #[arg(long, value_name = "NAME|FILE", conflicts_with = "passes")]
    pub pipeline: Option<String>,
    /// Passes to run, in order, comma separated.
    #[arg(long, value_name = "a,b,c")]
    pub passes: Option<String>,
    /// Print the kernel after lowering and after every pass.
    #[arg(long)]
    pub print_after_all: bool,
    /// Run the kernel verifier after every pass (a broken kernel then names
    /// the pass that broke it); without it the kernel is verified after
    /// lowering and after the last pass.
    #[arg(long)]
    pub verify_passes: bool,
    /// A target file describing the machine to compile for (see `tessera
    /// target`); by default this machine, probed once and cached.
    #[arg(long, value_name = "FILE")]
    pub target: Option<PathBuf>,
}

pub fn run(a: &LowerArgs) -> Result<String, String> {
    let passes = pass_list(a)?;
    let (name, text) = crate::load::read_source(&a.file)?;
    let checked = tc::check_source(&text).map_err(|d| tc::render_diagnostics(&d, &name, &text))?;
    let def = engine::source::pick_def(&checked.program, a.def.as_deref(), &name)
        .map_err(|e| e.to_string())?;
    let given = crate::load::parse_sizes(&a.sizes)?;
    let sizes = interp::bind_sizes(def, &std::collections::HashMap::new(), &given)
        .map_err(|e| format!("error: {}", e.message))?;
    let mut missing: Vec<String> = def
        .size_symbols()
        .into_iter()
        .filter(|s| !sizes.contains_key(s))
        .collect();
    for p in &def.params {
        if let ir::Param::Scalar { name, dtype } = p {
            if dtype.is_int() && !sizes.contains_key(name) && def_uses_in_sizes(def, name) {
                missing.push(name.clone());
            }
        }
    }
    if !missing.is_empty() {
        let list = missing
            .iter()
            .map(|m| format!("`{m}`"))
            .collect::<Vec<_>>()
            .join(", ");
        return Err(format!(
            "error: kernels are lowered for concrete sizes; bind {list} with `--size`"
        ));
    }
    let mut block = kernel::lower_def(&checked.program, &def.name, &sizes)
        .map_err(|e| format!("error: cannot lower `{}`: {e}", def.name))?;
    if let Err(problems) = kernel::verify_block(&block) {
        return Err(internal(
            "the lowered kernel does not verify",
            &problems.join("\n  "),
        ));
    }
    let mut out = String::new();
    if a.print_after_all {
        let _ = writeln!(out, "// after lowering\n{}", kernel::print_block(&block));
    }
    let target = match &a.target {
        Some(f) => {
            let text = std::fs::read_to_string(f)
                .map_err(|e| format!("error: cannot read `{}`: {e}", f.display()))?;
            kernel::Target::from_text(&text)
                .map_err(|e| format!("error: `{}`: {e}", f.display()))?
        }
        // Lowering alone needs no target; probe (and cache) only for passes.
        None if passes.is_empty() => kernel::Target::generic(),
        None => kernel::Target::cached().map_err(|e| format!("error: {e}"))?,
    };
    let verify = if a.verify_passes {
        kernel::Verify::EachPass
    } else {
        kernel::Verify::AtEnd
    };
    kernel::run_pipeline_verifying(&mut block, &passes, &target, verify, &mut |pass, b| {
        if a.print_after_all {
            let _ = writeln!(out, "// after pass {pass}\n{}", kernel::print_block(b));
        }
    })
    .map_err(|e| internal("a pass failed", &e))?;
    if !a.print_after_all {
        out.push_str(&kernel::print_block(&block));
    }
    Ok(out)
}

fn internal(what: &str, detail: &str) -> String {
    format!("error: internal error: {what}:\n  {detail}\n  = help: this is a bug in tessera; please report it with this file")
}

/// The passes `--passes` or `--pipeline` ask for (none by default).
fn pass_list(a: &LowerArgs) -> Result<Vec<String>, String> {
    if let Some(list) = &a.passes {
        let names: Vec<String> = list
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        if let Some(bad) = names.iter().find(|n| kernel::pass_by_name(n).is_none()) {
            return Err(format!(
                "error: unknown pass `{bad}`\n  = help: passes are {}",
                kernel::pass_names().join(", ")
            ));
        }
        return Ok(names);
    }
    match &a.pipeline {
        Some(p) => pipeline_passes(p),
        None => Ok(Vec::new()),
    }
}

/// The passes of pipeline `p`: a shipped one by name, or a file.
pub fn pipeline_passes(p: &str) -> Result<Vec<String>, String> {
    let (source, text) = match kernel::builtin_pipeline(p) {
        Some(t) => (format!("pipeline `{p}`"), t.to_string()),
        None => {
            let text = std::fs::read_to_string(p).map_err(|e| {
                format!(
                    "error: `{p}` is neither a shipped pipeline ({}) nor a readable file: {e}",
                    kernel::BUILTIN_PIPELINES.join(", ")
                )
            })?;
            (format!("`{p}`"), text)
        }
    };
    kernel::parse_pipeline(&text).map_err(|e| format!("error: {source}: {e}"))
}

/// Whether integer scalar `s` appears in a shape or range of `def`.
fn def_uses_in_sizes(def: &ir::Def, s: &str) -> bool {
    let in_shapes = def
        .tensors
        .iter()
        .any(|t| t.shape.iter().any(|d| d.symbols().contains(s)));
    let in_ranges = def.stmts.iter().any(|st| match st {
        ir::Stmt::Comp(c) => c
            .ranges
            .iter()
            .any(|r| r.lo.symbols().contains(s) || r.hi.symbols().contains(s)),
        ir::Stmt::Call(_) => false,
    });
    in_shapes || in_ranges
}
