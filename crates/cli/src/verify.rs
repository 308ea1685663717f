//! `tessera verify`: decide whether two defs compute the same outputs
//! (PET §5), and where they do not.

use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct VerifyArgs {
    /// The TC file of the first def.
    pub a: PathBuf,
    /// The TC file of the second def (default: the first file).
    pub b: Option<PathBuf>,
    /// The first def (may be left out when its file has one def).
    #[arg(long)]
    pub def: Option<String>,
    /// The second def (default: the def of the same name in the second
    /// file).
    #[arg(long = "def-b")]
    pub def_b: Option<String>,
    /// Bind a size symbol or integer scalar: `--size N=128` (repeatable).
    #[arg(long = "size", value_name = "SYM=N")]
    pub sizes: Vec<String>,
    /// Random draws (default: enough that a false "equivalent" has
    /// probability below 2^-60; 3 for the floating-point comparison).
    #[arg(long)]
    pub trials: Option<usize>,
    /// Seed of the random inputs.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

/// The report and whether the defs are equivalent.
pub fn run(a: &VerifyArgs) -> Result<(String, bool), String> {
    let (name_a, text_a) = crate::load::read_source(&a.a)?;
    let pa = tc::check_source(&text_a)
        .map_err(|d| tc::render_diagnostics(&d, &name_a, &text_a))?
        .program;
    let (name_b, pb) = match &a.b {
        Some(path) => {
            let (name, text) = crate::load::read_source(path)?;
            let checked =
                tc::check_source(&text).map_err(|d| tc::render_diagnostics(&d, &name, &text))?;
            (name, checked.program)
        }
        None => (name_a.clone(), pa.clone()),
    };
    let da = engine::source::pick_def(&pa, a.def.as_deref(), &name_a).map_err(|e| e.to_string())?;
    let want_b = a.def_b.as_deref().unwrap_or(&da.name);
    let db = engine::source::pick_def(&pb, Some(want_b), &name_b).map_err(|e| e.to_string())?;
    if a.b.is_none() && da.name == db.name {
        return Err(format!(
            "error: both sides are `{}` of `{name_a}`\n  = help: name the second def with `--def-b NAME`, or give a second file",
            da.name
        ));
    }
    if a.trials == Some(0) {
        return Err("error: `--trials` must be at least 1".to_string());
    }
    let options = opt::verify::Options {
        sizes: crate::load::parse_sizes(&a.sizes)?,
        trials: a.trials,
        seed: a.seed,
        progress: crate::progress::Bars::reporter(),
    };
    let report = opt::verify::verify(&pa, &da.name, &pb, &db.name, &options)
        .map_err(|e| format!("error: {e}"))?;
    Ok((opt::verify::print_report(&report), report.equivalent()))
}
