//! `tessera cache stats` and `tessera cache clear`: the compiled-kernel
//! cache under tessera's cache directory (`$TESSERA_CACHE_DIR`, else the XDG
//! cache directory).

#[derive(clap::Args, Debug)]
pub struct CacheArgs {
    #[command(subcommand)]
    pub action: CacheAction,
}

#[derive(clap::Subcommand, Debug)]
pub enum CacheAction {
    /// Print the number of cached kernels and their size on disk.
    Stats,
    /// Remove every cached kernel.
    Clear,
}

pub fn run(a: &CacheArgs) -> Result<String, String> {
    let dir = codegen::cache::default_dir().map_err(|e| format!("error: {e}"))?;
    match a.action {
        CacheAction::Stats => {
            let s = codegen::cache::stats(&dir).map_err(|e| format!("error: {e}"))?;
            Ok(format!(
                "{}: {} kernels, {:.1} MB\n",
                dir.display(),
                s.entries,
                s.bytes as f64 / 1e6
            ))
        }
        CacheAction::Clear => {
            let n = codegen::cache::clear(&dir).map_err(|e| format!("error: {e}"))?;
            Ok(format!("{}: removed {n} kernels\n", dir.display()))
        }
    }
}
