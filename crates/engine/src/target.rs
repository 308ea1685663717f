//! The machine to compile for: a target file, or this machine's target,
//! probed once and cached (`kernel::Target::cached`), with its measured
//! matmul peak and memory bandwidth stored in the cached file the first
//! time each is needed.

use std::path::Path;

use kernel::Target;

use crate::Error;

/// The target in the file `path`, or this machine's cached one.
pub fn load(path: Option<&Path>) -> Result<Target, Error> {
    match path {
        Some(f) => {
            let (_, text) = crate::source::read_text(f)?;
            Target::from_text(&text).map_err(|e| Error::Usage(format!("`{}`: {e}", f.display())))
        }
        None => Target::cached().map_err(Error::cache),
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
        store(&target)?;
    }
    Ok(target.peak_mflops.map(|p| p as f64 / 1e3))
}

/// The target's measured memory read bandwidth in GB/s: from the file
/// `path` as it is (`None` when it has none), else from the cached target,
/// measured and stored there the first time ([`measure_bandwidth`]).
pub fn bandwidth_gbps(path: Option<&Path>) -> Result<Option<f64>, Error> {
    let mut target = load(path)?;
    if target.bandwidth_mbps.is_none() && path.is_none() {
        let bytes_per_second = measure_bandwidth();
        target.bandwidth_mbps = Some((bytes_per_second / 1e6) as u64);
        store(&target)?;
    }
    Ok(target.bandwidth_mbps.map(|b| b as f64 / 1e3))
}

/// Replaces this machine's cached target (a temporary file, then a rename,
/// so a reader sees the old text or the new one).
fn store(target: &Target) -> Result<(), Error> {
    let cache = Target::cache_path().map_err(Error::cache)?;
    let tmp = cache.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, target.to_text())
        .and_then(|()| std::fs::rename(&tmp, &cache))
        .map_err(|e| Error::cache(format!("cannot update `{}`: {e}", cache.display())))
}

/// The bytes per second all threads of the pool read from memory: the
/// best of five sums of a 256 MiB float32 buffer (eight times a large
/// last-level cache, so the reads come from DRAM), each thread summing its
/// own chunks. The best run is the machine's figure; the others lost time
/// to whatever else was running.
pub fn measure_bandwidth() -> f64 {
    use rayon::prelude::*;
    const BYTES: usize = 256 << 20;
    let mut buffer = tensor::Buffer::zeroed(BYTES);
    buffer.typed_mut::<f32>().fill(1.0);
    let values = buffer.typed::<f32>();
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let start = std::time::Instant::now();
        let sum: f32 = values
            .par_chunks(1 << 16)
            .map(|c| c.iter().sum::<f32>())
            .sum();
        let secs = start.elapsed().as_secs_f64();
        // Using the sum keeps the reads from being optimized away.
        if sum.is_finite() {
            best = best.min(secs);
        }
    }
    BYTES as f64 / best.max(1e-9)
}
