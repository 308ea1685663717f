//! Running a loaded kernel on the VM's buffers, serially: the bridge that
//! lets tests (and callers without a parallel runtime) compare compiled C
//! with `kernel::vm::run` on the same inputs.
//!
//! [`run_serial`] allocates every root buffer (from the inputs given,
//! zeros otherwise, as the VM does), runs the steps in order, and returns
//! every buffer in the VM's representation. A parallel step is split into
//! three partitions of uneven (possibly empty) sizes, run one after another,
//! so that every run exercises the partitioning a parallel runtime relies
//! on. Inputs naming no root buffer are ignored, as the VM ignores them.

use std::collections::HashMap;

use kernel::vm::Buffers;

use crate::emit::CProgram;
use tensor::Tensor;

use crate::load::Kernel;

/// The partitions a parallel index of `range` is split into: `[0, a)`,
/// `[a, b)`, `[b, range)` with `a = range / 4` and `b = 2 * range / 3`.
pub fn partitions(range: u64) -> [(i64, i64); 3] {
    let r = i64::try_from(range).unwrap_or(i64::MAX);
    let a = r / 4;
    let b = (r / 3).saturating_mul(2).max(a);
    [(0, a), (a, b), (b, r)]
}

/// Runs every step of `program`, loaded as `kernel`, on `inputs`.
pub fn run_serial(
    kernel: &Kernel,
    program: &CProgram,
    mut inputs: Buffers,
) -> Result<Buffers, String> {
    if kernel.buffers() != program.buffers.as_slice() || kernel.steps() != program.steps.as_slice()
    {
        return Err(format!(
            "the kernel was not loaded from program `{}`",
            program.prefix
        ));
    }
    let mut buffers = Vec::with_capacity(program.buffers.len());
    for b in &program.buffers {
        let buf = match inputs.remove(&b.name) {
            Some(values) if values.len() == b.len => {
                Tensor::from_values(b.dtype, &[b.len], &values)
            }
            Some(values) => {
                return Err(format!(
                    "buffer `{}` has {} values, expected {}",
                    b.name,
                    values.len(),
                    b.len
                ))
            }
            None => Tensor::zeros(b.dtype, &[b.len]),
        };
        buffers.push(buf);
    }
    for (k, s) in program.steps.iter().enumerate() {
        match s.parallel {
            Some(range) => {
                for (lo, hi) in partitions(range) {
                    kernel.run_step(k, &mut buffers, lo, hi)?;
                }
            }
            None => kernel.run_step(k, &mut buffers, 0, 1)?,
        }
    }
    Ok(program
        .buffers
        .iter()
        .zip(&buffers)
        .map(|(b, data)| (b.name.clone(), data.values()))
        .collect::<HashMap<_, _>>())
}
