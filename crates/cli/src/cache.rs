//! `tessera cache stats` and `tessera cache clear`: the caches under
//! tessera's cache directory (`$TESSERA_CACHE_DIR`, else the XDG cache
//! directory): compiled kernels, the optimizer's search results and the
//! cost service's measured times.

use std::fmt::Write;

#[derive(clap::Args, Debug)]
pub struct CacheArgs {
    #[command(subcommand)]
    pub action: CacheAction,
}

#[derive(clap::Subcommand, Debug)]
pub enum CacheAction {
    /// Print how many kernels, search results and measured times are
    /// cached, and their size on disk.
    Stats,
    /// Remove every cached kernel, search result and measured time.
    Clear,
}

/// The caches: their directory under the cache directory, the extension
/// of an entry's file, and what an entry is.
const CACHES: [(&str, &str, &str); 3] = [
    ("kernels", "so", "kernels"),
    ("optimize", "json", "search results"),
    ("costs", "time", "measured times"),
];

pub fn run(a: &CacheArgs) -> Result<String, String> {
    let root = kernel::cache_dir().map_err(|e| format!("error: {e}"))?;
    let mut out = String::new();
    for (dir, ext, what) in CACHES {
        let dir = root.join(dir);
        let line = match a.action {
            CacheAction::Stats => {
                let s = codegen::cache::stats_of(&dir, ext).map_err(|e| format!("error: {e}"))?;
                format!(
                    "{}: {} {what}, {:.1} MB",
                    dir.display(),
                    s.entries,
                    s.bytes as f64 / 1e6
                )
            }
            CacheAction::Clear => {
                let n = codegen::cache::clear_of(&dir, ext).map_err(|e| format!("error: {e}"))?;
                format!("{}: removed {n} {what}", dir.display())
            }
        };
        let _ = writeln!(out, "{line}");
    }
    Ok(out)
}
