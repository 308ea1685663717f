//! `tessera target`: print the target machine description in its text form.
//!
//! By default the description comes from the per-user cache file (probed
//! once, then read back; see `kernel::Target::cached`). `--probe` probes the
//! machine again and rewrites the cache; `--file` reads a description of
//! another machine and prints it, normalized. The output is always text that
//! `--file` accepts.

use std::path::PathBuf;

use kernel::Target;

#[derive(clap::Args, Debug)]
pub struct TargetArgs {
    /// Read a target file (describing another machine) instead of this one.
    #[arg(long, value_name = "PATH", conflicts_with = "probe")]
    pub file: Option<PathBuf>,
    /// Probe this machine again and refresh the cache file.
    #[arg(long)]
    pub probe: bool,
}

pub fn run(a: &TargetArgs) -> Result<String, String> {
    let target = if let Some(path) = &a.file {
        let (name, text) = crate::load::read_source(path)?;
        Target::from_text(&text).map_err(|e| format!("error: `{name}`: {e}"))?
    } else {
        let cache = Target::cache_path().map_err(|e| format!("error: {e}"))?;
        let got = if a.probe {
            Target::refresh_at(&cache)
        } else {
            Target::cached_at(&cache)
        };
        got.map_err(|e| format!("error: target: {e}"))?
    };
    Ok(target.to_text())
}
