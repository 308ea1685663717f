//! `tessera split`: cut a def at its non-linear statements into maximal
//! multi-linear subprograms (PET §6.1) and print them.

use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct SplitArgs {
    /// The TC file.
    pub file: PathBuf,
    /// The def to split (may be left out when the file has one def).
    #[arg(long)]
    pub def: Option<String>,
}

pub fn run(a: &SplitArgs) -> Result<String, String> {
    let (name, text) = crate::load::read_source(&a.file)?;
    let checked = tc::check_source(&text).map_err(|d| tc::render_diagnostics(&d, &name, &text))?;
    let def = engine::source::pick_def(&checked.program, a.def.as_deref(), &name)
        .map_err(|e| e.to_string())?;
    let split = opt::split(&checked.program, &def.name).map_err(|e| format!("error: {e}"))?;
    Ok(opt::print_split(&checked.program, &split))
}
