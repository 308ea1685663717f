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
    let source_a = engine::Source::read_tc(&a.a).map_err(|e| e.to_string())?;
    let source_b = match &a.b {
        Some(path) => Some(engine::Source::read_tc(path).map_err(|e| e.to_string())?),
        None => None,
    };
    if a.trials == Some(0) {
        return Err("error: `--trials` must be at least 1".to_string());
    }
    let options = opt::verify::Options {
        sizes: crate::load::parse_sizes(&a.sizes)?,
        trials: a.trials,
        seed: a.seed,
        progress: crate::progress::Bars::reporter(),
        deadline: None,
        exact_work: None,
    };
    let report = engine::verify::verify(
        &source_a,
        a.def.as_deref(),
        source_b.as_ref(),
        a.def_b.as_deref(),
        &options,
    )
    .map_err(|e| e.to_string())?;
    Ok((opt::verify::print_report(&report), report.equivalent()))
}
