//! `tessera lower`: lower a def, with its sizes bound, to kernel IR and
//! print it.

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
    /// A pass pipeline by name (kernel passes are not implemented yet).
    #[arg(long, value_name = "NAME")]
    pub pipeline: Option<String>,
    /// Passes to run, in order (kernel passes are not implemented yet).
    #[arg(long, value_name = "a,b,c")]
    pub passes: Option<String>,
}

pub fn run(a: &LowerArgs) -> Result<String, String> {
    if a.pipeline.is_some() || a.passes.is_some() {
        return Err("error: kernel passes are not implemented yet; `tessera lower` without `--pipeline` or `--passes` prints the lowered kernel".to_string());
    }
    let (name, text) = crate::load::read_source(&a.file)?;
    let checked = tc::check_source(&text).map_err(|d| tc::render_diagnostics(&d, &name, &text))?;
    let def = crate::run::pick_def(&checked.program, a.def.as_deref(), &name)?;
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
    let block = kernel::lower_def(&checked.program, &def.name, &sizes)
        .map_err(|e| format!("error: cannot lower `{}`: {e}", def.name))?;
    if let Err(problems) = kernel::verify_block(&block) {
        return Err(format!(
            "error: internal error: the lowered kernel does not verify:\n  {}\n  = help: this is a bug in tessera; please report it with this file",
            problems.join("\n  ")
        ));
    }
    Ok(kernel::print_block(&block))
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
