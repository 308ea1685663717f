//! Library matmul times for the estimate: a step the runtime will run with
//! the matmul library (`runtime::matmul::spec` matches it) is timed as
//! that library call, at its shapes and strides, on scratch buffers.
//!
//! A roofline prices every product of the same size alike, but the
//! library's speed depends on the shape's orientation far beyond that: a
//! 64 x 1024 by 1024 x 6272 product (InfoGAN's first layer, B transposed)
//! ran at 110 GFLOP/s, and its transpose, 6272 x 1024 by 1024 x 64, at 200
//! (`tessera bench` of the two, 2 threads). The optimizer's mutants that
//! swap a product's operands are exactly that choice, and only an estimate
//! that sees it ranks them where they belong.
//!
//! Each distinct call (its sizes, and which way each operand is
//! contiguous) is timed once per process: one warm-up run, then the
//! fastest of at least [`MIN_RUNS`] runs and as many more as fit in
//! [`TIMING`] seconds (the fastest, because this machine's slow spells
//! only ever add time).
//!
//! Requires: a spec that `runtime::matmul::spec` gave for a child of
//! `root`. Guarantees: `None` (and the caller keeps its roofline) when a
//! buffer would exceed [`MAX_ELEMENTS`] or the library refuses the spec;
//! never panics.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use ir::DType;
use kernel::Block;
use runtime::matmul::{self, Element, MatmulSpec};

/// Timed runs per call, after one warm-up: at least [`MIN_RUNS`], and
/// more while they fit in [`TIMING`].
const MIN_RUNS: usize = 3;
const MAX_RUNS: usize = 20;
const TIMING: f64 = 0.03;

/// The largest scratch buffer allocated for a timing, in elements (a GiB
/// of float32).
const MAX_ELEMENTS: usize = 1 << 28;

/// Seconds per call, by the call's description.
static TIMES: Mutex<Option<HashMap<String, f64>>> = Mutex::new(None);

/// The seconds the library takes for `spec` (a step of `root`).
pub fn seconds(spec: &MatmulSpec, root: &Block) -> Option<f64> {
    let len = |buffer: usize| -> Option<usize> {
        let r = root.refs.get(buffer)?;
        let last = r.shape.iter().try_fold(0u64, |acc, d| {
            acc.checked_add(
                d.size
                    .checked_sub(1)?
                    .checked_mul(d.stride.unsigned_abs())?,
            )
        })?;
        usize::try_from(last.checked_add(1)?).ok()
    };
    let lens = [
        len(spec.a.buffer)?,
        len(spec.b.buffer)?,
        len(spec.c.buffer)?,
    ];
    if lens.iter().any(|&n| n > MAX_ELEMENTS) {
        return None;
    }
    // Offsets and the exact strides do not change the speed; the sizes
    // and which way each operand is contiguous do.
    let way = |o: &matmul::Operand| o.col_stride.unsigned_abs() <= o.row_stride.unsigned_abs();
    let batch: Vec<u64> = spec.batch.iter().map(|b| b.extent).collect();
    let key = format!(
        "{:?} {} {} {} {batch:?} {} {} {}",
        spec.dtype,
        spec.m,
        spec.n,
        spec.k,
        way(&spec.a),
        way(&spec.b),
        way(&spec.c)
    );
    if let Some(t) = TIMES.lock().ok()?.as_ref().and_then(|m| m.get(&key)) {
        return Some(*t);
    }
    let t = match spec.dtype {
        DType::F32 => time::<f32>(spec, lens)?,
        DType::F64 => time::<f64>(spec, lens)?,
        _ => return None,
    };
    TIMES
        .lock()
        .ok()?
        .get_or_insert_with(HashMap::new)
        .insert(key, t);
    Some(t)
}

/// The fastest of the timed calls after a warm-up, on buffers of `lens`
/// elements (A and B may share one: the spec then reads it twice).
fn time<T: Element>(spec: &MatmulSpec, lens: [usize; 3]) -> Option<f64> {
    let a = vec![T::ONE; lens[0]];
    let b = if spec.b.buffer == spec.a.buffer {
        None
    } else {
        Some(vec![T::ONE; lens[1]])
    };
    let mut c = vec![T::ONE; lens[2]];
    let b = b.as_deref().unwrap_or(&a);
    matmul::run_with(spec, &a, b, &mut c, false, true, matmul::CHUNKS_PER_THREAD).ok()?;
    let (mut best, mut spent) = (f64::INFINITY, 0.0);
    for run in 0..MAX_RUNS {
        if run >= MIN_RUNS && spent >= TIMING {
            break;
        }
        let start = Instant::now();
        matmul::run_with(spec, &a, b, &mut c, false, true, matmul::CHUNKS_PER_THREAD).ok()?;
        let t = start.elapsed().as_secs_f64();
        best = best.min(t);
        spent += t;
    }
    Some(best)
}
