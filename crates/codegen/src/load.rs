//! Loading compiled kernels into the process, and calling their steps. This
//! is the only module of tessera that uses `unsafe`: opening a shared object
//! runs its initializers, and calling into it trusts its signatures. Each
//! `unsafe` block says why it is sound.
//!
//! [`Kernel::load`] opens an object compiled from a [`CProgram`]'s source
//! ([`Kernel::from_library`] takes one already open, from the cache),
//! checks that the object's `PREFIX_abi` text is the one
//! [`crate::emit::abi`] gives for the program (same buffer types and
//! lengths, same number of steps), and resolves every step symbol.
//! [`Kernel::run_step`] calls one step on [`Tensor`]s after checking that
//! there is one tensor per root buffer with exactly its type and length:
//! the emitter guarantees that a step touches only elements inside those
//! lengths, so this check is what makes the call sound.
//! [`Kernel::run_partitions`] runs a step on shared [`Buffer`]s (the
//! runtime's slots, some of them callers' tensors bound without a copy).

#![allow(unsafe_code)]

use std::ffi::{c_char, c_void, CStr};
use std::path::Path;
use std::sync::Arc;

use tensor::{Buffer, Tensor};

use crate::emit::{abi, describe_code, BufferInfo, CProgram, StepInfo};

/// Opens the shared object at `path`.
pub fn open(path: &Path) -> Result<libloading::Library, String> {
    // SAFETY: the objects tessera opens are ones it generated and compiled
    // itself (C without initializers or global constructors), so loading
    // runs no code of anyone else's.
    unsafe { libloading::Library::new(path) }
        .map_err(|e| format!("cannot load `{}`: {e}", path.display()))
}

/// A step function: `int32_t step(void *const *buffers, int64_t lo, int64_t hi)`.
type StepFn = unsafe extern "C" fn(*const *mut c_void, i64, i64) -> i32;

/// A compiled program, loaded: its steps, callable safely.
pub struct Kernel {
    /// Pointers into `_lib`'s code.
    steps: Vec<StepFn>,
    buffers: Vec<BufferInfo>,
    infos: Vec<StepInfo>,
    /// Keeps the object mapped while `steps` point into it (it is the last
    /// field, so it drops last; the cache may hold it too).
    _lib: Arc<libloading::Library>,
}

impl std::fmt::Debug for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kernel")
            .field("buffers", &self.buffers)
            .field("steps", &self.infos)
            .finish_non_exhaustive()
    }
}

impl Kernel {
    /// Loads the object at `path`, which must have been compiled from
    /// `program.source` (alone or with other programs in one file).
    pub fn load(path: &Path, program: &CProgram) -> Result<Kernel, String> {
        Kernel::from_library(Arc::new(open(path)?), program)
            .map_err(|e| format!("`{}`: {e}", path.display()))
    }

    /// The kernel of `program` in an object already loaded (as the cache,
    /// `crate::cache`, hands them out), after the same checks as
    /// [`Kernel::load`].
    pub fn from_library(
        lib: Arc<libloading::Library>,
        program: &CProgram,
    ) -> Result<Kernel, String> {
        let want = abi(&program.buffers, program.steps.len());
        let symbol = format!("{}_abi", program.prefix);
        // SAFETY: `PREFIX_abi` is declared by the emitter as a
        // NUL-terminated `const char[]`; `Symbol<*const c_char>` yields its
        // address, which stays valid while the object is loaded, and this
        // function holds `lib` (so the object stays loaded) until the
        // string has been copied out.
        let found = unsafe {
            let s = lib
                .get::<*const c_char>(symbol.as_bytes())
                .map_err(|e| format!("the object has no `{symbol}`: {e}"))?;
            CStr::from_ptr(*s).to_string_lossy().into_owned()
        };
        if found != want {
            return Err(format!(
                "the object was not compiled from this program: its interface is `{found}`, expected `{want}`"
            ));
        }
        let mut steps = Vec::new();
        for s in &program.steps {
            // SAFETY: the symbol is a step function the emitter wrote with
            // exactly the signature `StepFn` describes, in an object whose
            // interface text matches this program's. The function pointer
            // is only called while `lib`, kept in the kernel, is loaded.
            let f = unsafe {
                *lib.get::<StepFn>(s.symbol.as_bytes())
                    .map_err(|e| format!("the object has no `{}`: {e}", s.symbol))?
            };
            steps.push(f);
        }
        Ok(Kernel {
            steps,
            buffers: program.buffers.clone(),
            infos: program.steps.clone(),
            _lib: lib,
        })
    }

    /// Step `k`'s function and description, after checking that it exists
    /// and that `buffers` buffers are given for it, one per root buffer.
    fn step(&self, k: usize, buffers: usize) -> Result<(StepFn, &StepInfo), String> {
        let (f, info) = self
            .steps
            .get(k)
            .zip(self.infos.get(k))
            .ok_or_else(|| format!("no step {k}: the kernel has {}", self.steps.len()))?;
        if buffers != self.buffers.len() {
            return Err(format!(
                "step {k} takes {} buffers, got {buffers}",
                self.buffers.len()
            ));
        }
        Ok((*f, info))
    }

    /// The root buffers every step takes, in order.
    pub fn buffers(&self) -> &[BufferInfo] {
        &self.buffers
    }

    /// The steps, in the order they run.
    pub fn steps(&self) -> &[StepInfo] {
        &self.infos
    }

    /// Runs step `k` on `buffers` (one tensor per root buffer, in order,
    /// each made contiguous and the sole owner of its memory first, so the
    /// step writes no tensor a caller still holds). A parallel step runs
    /// the iterations `lo <= index < hi` of its parallel index (which must
    /// lie in `0..=range`); other steps run whole and ignore `lo` and `hi`.
    pub fn run_step(
        &self,
        k: usize,
        buffers: &mut [Tensor],
        lo: i64,
        hi: i64,
    ) -> Result<(), String> {
        let (f, info) = self.step(k, buffers.len())?;
        for (b, want) in buffers.iter().zip(&self.buffers) {
            if b.dtype() != want.dtype || b.len() != want.len {
                return Err(format!(
                    "buffer `{}` must be {}[{}], got {}[{}]",
                    want.name,
                    want.dtype,
                    want.len,
                    b.dtype(),
                    b.len()
                ));
            }
        }
        if let Some(range) = info.parallel {
            let range = i64::try_from(range).unwrap_or(i64::MAX);
            if !(0 <= lo && lo <= hi && hi <= range) {
                return Err(format!(
                    "step {k} ({}): partition {lo}..{hi} is not inside 0..{range}",
                    info.block
                ));
            }
        }
        let ptrs: Vec<*mut c_void> = buffers
            .iter_mut()
            .map(|t| t.buffer_mut().as_mut_ptr().cast())
            .collect();
        // SAFETY: `f` has the signature `StepFn` (checked when loading), and
        // the object it lives in is loaded while `self` exists. `ptrs` has
        // one pointer per root buffer, each to the first element of a live,
        // contiguous buffer of exactly the element type and length the
        // emitted C assumes (checked above); the emitted C touches only
        // elements inside those lengths (the emitter's guarantee) and clamps
        // `lo` and `hi` itself. `buffer_mut` made each tensor the sole owner
        // of its buffer, so the buffers are distinct allocations, which the
        // C's `restrict` pointers assume, and the tensors are borrowed
        // mutably for the call, so no one else reads or writes them.
        let code = unsafe { f(ptrs.as_ptr(), lo, hi) };
        if code == 0 {
            Ok(())
        } else {
            Err(format!(
                "step {k} ({}): {}",
                info.block,
                describe_code(code)
            ))
        }
    }
}

/// The step's buffer pointers, shared by the threads that run its
/// partitions.
struct Pointers(Vec<*mut c_void>);

// SAFETY: the pointers are only dereferenced by the step function, and
// `Kernel::run_partitions` hands them to several threads only for the
// partitions of one `#parallel` step, which write disjoint elements and
// read nothing another partition writes: that is the kernel verifier's
// parallel-partition invariant (`kernel::verify_block`, proved in
// `kernel/src/partition.rs` for every index tagged `parallel`, through
// every child block), and the emitter refuses any kernel that does not
// verify.
unsafe impl Send for Pointers {}
// SAFETY: as for `Send`; the vector itself is never modified while shared.
unsafe impl Sync for Pointers {}

impl Pointers {
    fn as_ptr(&self) -> *const *mut c_void {
        self.0.as_ptr()
    }
}

impl Kernel {
    /// Runs step `k` with root buffer `b` stored at the start of
    /// `slots[map[b]]`, on the partitions `parts` of its parallel index, in
    /// parallel on the rayon pool. A step without a parallel index takes
    /// exactly one partition (its bounds are ignored). A slot the step
    /// writes is made the sole owner of its buffer first (copied if a
    /// caller still holds it), so a step never writes memory anyone else
    /// sees; slots it only reads may share their buffers (a caller's
    /// tensor bound as an input, without a copy).
    ///
    /// Checked before any call: one slot per root buffer, each large
    /// enough for its buffer; the buffers the step touches are in distinct
    /// slots (so the C's `restrict` pointers never alias a written one);
    /// the partitions lie inside the index's range and do not overlap.
    pub fn run_partitions(
        &self,
        k: usize,
        slots: &mut [Arc<Buffer>],
        map: &[usize],
        parts: &[(i64, i64)],
    ) -> Result<(), String> {
        let (f, info) = self.step(k, map.len())?;
        for (b, &s) in self.buffers.iter().zip(map) {
            let need = b.bytes;
            match slots.get(s) {
                Some(slot) if slot.bytes() >= need => {}
                _ => {
                    return Err(format!(
                        "buffer `{}` needs {need} bytes in slot {s}, which is missing or smaller",
                        b.name
                    ))
                }
            }
        }
        let mut used: Vec<usize> = info.reads.iter().chain(&info.writes).copied().collect();
        used.sort_unstable();
        used.dedup();
        let mut touched: Vec<usize> = used.iter().map(|&b| map[b]).collect();
        touched.sort_unstable();
        touched.dedup();
        if touched.len() != used.len() {
            return Err(format!(
                "step {k} ({}): two of the buffers it touches share a slot",
                info.block
            ));
        }
        match info.parallel {
            None if parts.len() != 1 => {
                return Err(format!(
                    "step {k} ({}) is not parallel: it takes one partition, got {}",
                    info.block,
                    parts.len()
                ))
            }
            None => {}
            Some(range) => {
                let range = i64::try_from(range).unwrap_or(i64::MAX);
                let mut sorted = parts.to_vec();
                sorted.sort_unstable();
                let mut end = 0;
                for &(lo, hi) in &sorted {
                    if !(end <= lo && lo <= hi && hi <= range) {
                        return Err(format!(
                            "step {k} ({}): partitions {parts:?} overlap or leave 0..{range}",
                            info.block
                        ));
                    }
                    end = hi;
                }
            }
        }
        // Buffers the step does not touch may share slots with others, so
        // only touched ones get their slot's address; the rest get null,
        // which the step never dereferences. Written slots are made unique
        // first; read ones are only read, through a pointer the C declares
        // non-const but never stores through.
        let mut ptrs = Pointers(vec![std::ptr::null_mut(); map.len()]);
        for &b in &used {
            let slot = &mut slots[map[b]];
            ptrs.0[b] = if info.writes.contains(&b) {
                Arc::make_mut(slot).as_mut_ptr().cast()
            } else {
                slot.as_ptr().cast_mut().cast()
            };
        }
        let call = |&(lo, hi): &(i64, i64)| -> i32 {
            // SAFETY: `f` has the signature `StepFn` (checked when loading)
            // and lives in the object `self` keeps loaded. Every buffer the
            // step touches points at the start of its own slot (distinct
            // slots, checked above), 64-byte aligned and at least as large
            // as the buffer's type and length need; the emitted C touches
            // only elements inside those lengths and only the buffers its
            // block refines (the ones listed in `reads` and `writes`), and
            // writes only those in `writes`, whose slots are the sole owners
            // of their buffers (`make_mut` above), so nothing else can see
            // the writes. `slots` is borrowed mutably for the whole call, so
            // no buffer is dropped or replaced meanwhile; concurrent
            // partitions are sound as `Pointers` explains.
            unsafe { f(ptrs.as_ptr(), lo, hi) }
        };
        let codes: Vec<i32> = if parts.len() > 1 {
            use rayon::prelude::*;
            parts.par_iter().map(call).collect()
        } else {
            parts.iter().map(call).collect()
        };
        match codes.into_iter().find(|&c| c != 0) {
            None => Ok(()),
            Some(code) => Err(format!(
                "step {k} ({}): {}",
                info.block,
                describe_code(code)
            )),
        }
    }
}
