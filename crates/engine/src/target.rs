//! The machine to compile for: a target file, or this machine's target,
//! probed once and cached (`kernel::Target::cached`), with its measured
//! matmul peak stored in the cached file the first time it is needed.

use std::path::Path;

use kernel::Target;

use crate::Error;

/// The target in the file `path`, or this machine's cached one.
pub fn load(path: Option<&Path>) -> Result<Target, Error> {
    match path {
        Some(f) => {
            let text = std::fs::read_to_string(f).map_err(|e| Error::Read {
                path: f.display().to_string(),
                message: format!("cannot read `{}`: {e}", f.display()),
            })?;
            Target::from_text(&text).map_err(|e| Error::Usage(format!("`{}`: {e}", f.display())))
        }
        None => Target::cached().map_err(Error::Environment),
    }
}

/// Whether [`peak_gflops`] would measure the peak (a few seconds): only for
/// this machine's cached target, and only when it holds no peak yet.
pub fn peak_unmeasured(path: Option<&Path>) -> Result<bool, Error> {
    Ok(path.is_none() && load(None)?.peak_mflops.is_none())
}

/// The target's measured peak in GFLOP/s: from the file `path` as it is
/// (`None` when it has none), else from the cached target, measured and
/// stored there the first time (float32 matmul with the matmul library on
/// all cores, at a large size).
pub fn peak_gflops(path: Option<&Path>) -> Result<Option<f64>, Error> {
    let mut target = load(path)?;
    if target.peak_mflops.is_none() && path.is_none() {
        let peak = runtime::matmul::peak_gflops();
        target.peak_mflops = Some((peak * 1e3) as u64);
        let cache = Target::cache_path().map_err(Error::Environment)?;
        let tmp = cache.with_extension(format!("tmp{}", std::process::id()));
        std::fs::write(&tmp, target.to_text())
            .and_then(|()| std::fs::rename(&tmp, &cache))
            .map_err(|e| Error::Environment(format!("cannot update `{}`: {e}", cache.display())))?;
    }
    Ok(target.peak_mflops.map(|p| p as f64 / 1e3))
}
