//! The analytic estimate of a run: a roofline per step of the lowered
//! kernel. A step takes the longer of its floating-point operations at the
//! target's measured peak and its memory traffic at the target's measured
//! bandwidth.
//!
//! Operations are `runtime::cost::flops` (the figure the profiles use).
//! Traffic is Stripe's cache-line model (`kernel::passes::autotile::
//! tile_cost` with the whole index box as one tile): the cache lines every
//! refinement's accesses touch, times the line size of the target's
//! innermost cache. A line holds `line_bytes / w` elements for the step's
//! widest element size w, so the lines of narrower tensors are overcounted,
//! never undercounted. [`estimate`] takes a def and lowers it;
//! [`estimate_kernel`] takes a kernel (lowered, before or after passes).
//!
//! With library timing on, a step the runtime runs with the matmul library
//! takes the longer of its roofline and the library's timed call
//! (`library.rs`): the library's speed depends on a product's orientation,
//! which a roofline does not see.
//!
//! Requires: sizes binding every size symbol and integer scalar of the
//! def, and a target with a measured peak and bandwidth
//! (`engine::target::peak_gflops` and `bandwidth_gbps` measure them once).

use std::collections::HashMap;

use kernel::{Block, StmtKind, Target};
use opt::cost::Estimate;

use crate::Error;

/// The line size used when the target lists no cache.
const DEFAULT_LINE_BYTES: u64 = 64;

/// Estimates a run of def `def` of `program` for `sizes` on `target`;
/// with `library`, steps the matmul library runs take at least its timed
/// call ([`super::library`]).
pub fn estimate(
    program: &ir::Program,
    def: &str,
    sizes: &HashMap<String, i64>,
    target: &Target,
    library: bool,
) -> Result<Estimate, Error> {
    let mut root = kernel::lower_def(program, def, sizes)
        .map_err(|e| Error::Build(runtime::BuildError::Lower(e)))?;
    if library {
        // As the runtime does before it marks library matmuls: a matmul
        // inside a called def becomes a root step.
        kernel::run_pipeline_verifying(
            &mut root,
            &["inline".to_string()],
            target,
            kernel::Verify::ByCaller,
            &mut |_, _| {},
        )
        .map_err(|e| Error::Build(runtime::BuildError::Internal(e)))?;
    }
    estimate_steps(&root, target, library)
}

/// Estimates a run of the kernel `root` (a lowered def, before or after
/// passes) on `target`, which must carry its measured peak and bandwidth:
/// the roofline alone.
pub fn estimate_kernel(root: &Block, target: &Target) -> Result<Estimate, Error> {
    estimate_steps(root, target, false)
}

/// [`estimate_kernel`], with `library` as in [`estimate`].
fn estimate_steps(root: &Block, target: &Target, library: bool) -> Result<Estimate, Error> {
    let unmeasured = |what: &str| {
        Error::Environment(format!(
            "target `{}` has no measured {what}; the cost service measures this machine's once",
            target.name
        ))
    };
    let peak = target.peak_mflops.ok_or_else(|| unmeasured("peak"))?.max(1) as f64 * 1e6;
    let bandwidth = target
        .bandwidth_mbps
        .ok_or_else(|| unmeasured("bandwidth"))?
        .max(1) as f64
        * 1e6;
    let line_bytes = target
        .caches
        .first()
        .map_or(DEFAULT_LINE_BYTES, |c| c.line_bytes.max(1));
    let mut total = Estimate {
        flops: 0,
        bytes: 0,
        seconds: 0.0,
    };
    for s in &root.stmts {
        let StmtKind::Block(b) = &s.kind else {
            continue;
        };
        let flops = runtime::cost::flops(b);
        let bytes = traffic(b, line_bytes);
        total.flops = total.flops.saturating_add(flops);
        total.bytes = total.bytes.saturating_add(bytes);
        let roofline = (flops as f64 / peak).max(bytes as f64 / bandwidth);
        let timed = library
            .then(|| runtime::matmul::spec(b, root))
            .flatten()
            .and_then(|spec| super::library::seconds(&spec, root));
        total.seconds += timed.map_or(roofline, |t| t.max(roofline));
    }
    Ok(total)
}

/// The bytes of the cache lines one run of step `b` touches.
fn traffic(b: &Block, line_bytes: u64) -> u64 {
    let widest = b
        .refs
        .iter()
        .map(|r| tensor::element_bytes(r.dtype) as u64)
        .max()
        .unwrap_or(1)
        .max(1);
    let line_elems = (line_bytes / widest).max(1);
    let whole: Vec<u64> = b.idxs.iter().map(|i| i.range).collect();
    let per_point =
        kernel::passes::autotile::tile_cost(b, &whole, line_elems, u64::MAX).unwrap_or(0.0);
    let lines = (per_point * b.points().max(1) as f64).round() as u64;
    lines.saturating_mul(line_bytes)
}
