//! Loading compiled kernels into the process, and calling their steps. This
//! is the only module of tessera that uses `unsafe`: opening a shared object
//! runs its initializers, and calling into it trusts its signatures. Each
//! `unsafe` block says why it is sound.
//!
//! A [`Kernel`] is a [`CProgram`] whose step functions are resolved in
//! loaded objects: [`Kernel::from_units`] takes one object per translation
//! unit (as the kernel cache hands them out), [`Kernel::load`] and
//! [`Kernel::from_library`] one object compiled from the program's whole
//! source. Each object's `PREFIX_abi` text must be the one
//! [`crate::emit::abi`] gives for the functions it should define (their
//! symbols, and each argument's type, length and whether it is written),
//! and each step's arguments must be distinct root buffers of exactly its
//! function's parameters' types and lengths.
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

/// A step function: `int32_t f(void *const *args, int64_t lo, int64_t hi)`.
type StepFn = unsafe extern "C" fn(*const *mut c_void, i64, i64) -> i32;

/// A compiled program, loaded: its steps, callable safely.
pub struct Kernel {
    /// Each step's function: pointers into the code of `_libs`.
    steps: Vec<StepFn>,
    buffers: Vec<BufferInfo>,
    infos: Vec<StepInfo>,
    /// Which of each step's arguments its function writes.
    written: Vec<Vec<bool>>,
    /// Keeps the objects mapped while `steps` point into them (it is the
    /// last field, so it drops last; the cache may hold them too).
    _libs: Vec<Arc<libloading::Library>>,
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

    /// The kernel of `program` in one object already loaded, compiled
    /// from `program.source`, after the same checks as [`Kernel::load`].
    pub fn from_library(
        lib: Arc<libloading::Library>,
        program: &CProgram,
    ) -> Result<Kernel, String> {
        let all: Vec<usize> = (0..program.functions.len()).collect();
        Kernel::resolve(vec![(lib, all.as_slice())], program)
    }

    /// The kernel of `program` in the objects of its translation units:
    /// `libs[u]` compiled from `program.units[u].source`.
    pub fn from_units(
        libs: Vec<Arc<libloading::Library>>,
        program: &CProgram,
    ) -> Result<Kernel, String> {
        if libs.len() != program.units.len() {
            return Err(format!(
                "the program has {} units, got {} objects",
                program.units.len(),
                libs.len()
            ));
        }
        let objects = libs
            .into_iter()
            .zip(&program.units)
            .map(|(lib, u)| (lib, u.functions.as_slice()))
            .collect();
        Kernel::resolve(objects, program).map_err(|e| format!("a unit of the program: {e}"))
    }

    /// Resolves every function of `program` in the object that should
    /// define it, after checking each object's interface text, and checks
    /// each step's arguments against its function's parameters.
    fn resolve(
        objects: Vec<(Arc<libloading::Library>, &[usize])>,
        program: &CProgram,
    ) -> Result<Kernel, String> {
        let mut functions: Vec<Option<StepFn>> = vec![None; program.functions.len()];
        let symbol = format!("{}_abi", program.prefix);
        for (lib, members) in &objects {
            let defined = members
                .iter()
                .map(|&f| {
                    program
                        .functions
                        .get(f)
                        .ok_or_else(|| format!("no function {f}"))
                })
                .collect::<Result<Vec<_>, _>>()?;
            let want = abi(defined.iter().copied());
            // SAFETY: `PREFIX_abi` is declared by the emitter as a
            // NUL-terminated `const char[]`; `Symbol<*const c_char>` yields
            // its address, which stays valid while the object is loaded, and
            // `objects` holds `lib` (so the object stays loaded) until the
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
            for (&f, function) in members.iter().zip(defined) {
                // SAFETY: the symbol is a step function the emitter wrote
                // with exactly the signature `StepFn` describes, in an
                // object whose interface text lists it with these
                // parameters. The function pointer is only called while
                // the object, kept in the kernel, is loaded.
                let pointer = unsafe {
                    *lib.get::<StepFn>(function.symbol.as_bytes())
                        .map_err(|e| format!("the object has no `{}`: {e}", function.symbol))?
                };
                functions[f] = Some(pointer);
            }
        }
        let mut steps = Vec::with_capacity(program.steps.len());
        let mut written = Vec::with_capacity(program.steps.len());
        for (k, s) in program.steps.iter().enumerate() {
            let f = functions
                .get(s.function)
                .copied()
                .flatten()
                .ok_or_else(|| {
                    format!(
                        "step {k} calls function {}, which no object defines",
                        s.function
                    )
                })?;
            let params = &program.functions[s.function].params;
            let fits = s.args.len() == params.len()
                && s.args
                    .iter()
                    .enumerate()
                    .all(|(j, a)| !s.args[..j].contains(a))
                && s.args.iter().zip(params).all(|(&a, p)| {
                    program.buffers.get(a).is_some_and(|b| {
                        b.dtype == p.dtype && b.len == p.len && p.written == s.writes.contains(&a)
                    })
                });
            if !fits {
                return Err(format!(
                    "step {k} ({}): its arguments are not distinct buffers of its function's parameters",
                    s.block
                ));
            }
            steps.push(f);
            written.push(params.iter().map(|p| p.written).collect());
        }
        Ok(Kernel {
            steps,
            buffers: program.buffers.clone(),
            infos: program.steps.clone(),
            written,
            _libs: objects.into_iter().map(|(lib, _)| lib).collect(),
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

    /// The root buffers, in order.
    pub fn buffers(&self) -> &[BufferInfo] {
        &self.buffers
    }

    /// The steps, in the order they run.
    pub fn steps(&self) -> &[StepInfo] {
        &self.infos
    }

    /// Runs step `k` on `buffers` (one tensor per root buffer, in order;
    /// those the step uses are made contiguous and the sole owners of their
    /// memory first, so the step writes no tensor a caller still holds). A
    /// parallel step runs the iterations `lo <= index < hi` of its parallel
    /// index (which must lie in `0..=range`); other steps run whole and
    /// ignore `lo` and `hi`.
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
        let ptrs: Vec<*mut c_void> = info
            .args
            .iter()
            .map(|&a| buffers[a].buffer_mut().as_mut_ptr().cast())
            .collect();
        // SAFETY: `f` has the signature `StepFn` (checked when loading), and
        // the object it lives in is loaded while `self` exists. `ptrs` has
        // one pointer per argument of the function, each to the first
        // element of a live, contiguous buffer of exactly the element type
        // and length the function assumes (the arguments' root buffers
        // match its parameters, checked when loading, and the tensors match
        // the root buffers, checked above); the emitted C touches only
        // elements inside those lengths (the emitter's guarantee) and clamps
        // `lo` and `hi` itself. The arguments are distinct root buffers
        // (checked when loading) and `buffer_mut` made each tensor the sole
        // owner of its buffer, so the buffers are distinct allocations,
        // which the C's `restrict` pointers assume, and the tensors are
        // borrowed mutably for the call, so no one else reads or writes
        // them.
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
    /// Checked before any call: one slot per root buffer; each argument's
    /// slot large enough for its buffer; the arguments in distinct slots
    /// (so the C's `restrict` pointers never alias); the partitions inside
    /// the index's range and not overlapping. Only the step's arguments are
    /// looked at, so a step costs the same in a program of any size.
    pub fn run_partitions(
        &self,
        k: usize,
        slots: &mut [Arc<Buffer>],
        map: &[usize],
        parts: &[(i64, i64)],
    ) -> Result<(), String> {
        let (f, info) = self.step(k, map.len())?;
        for &a in &info.args {
            let b = &self.buffers[a];
            let s = map[a];
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
        let arg_slots: Vec<usize> = info.args.iter().map(|&a| map[a]).collect();
        // Buffers that are views of one memory share a slot; a step may
        // read several of them, but never write a slot another argument
        // names.
        let written = &self.written[k];
        let clash = (1..arg_slots.len())
            .any(|j| (0..j).any(|i| arg_slots[i] == arg_slots[j] && (written[i] || written[j])));
        if clash {
            return Err(format!(
                "step {k} ({}): a buffer it writes shares a slot with another it touches",
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
        // Written slots are made unique first; read ones are only read,
        // through a pointer the C declares `const`.
        let ptrs = Pointers(
            arg_slots
                .iter()
                .zip(&self.written[k])
                .map(|(&s, &written)| {
                    let slot = &mut slots[s];
                    if written {
                        Arc::make_mut(slot).as_mut_ptr().cast()
                    } else {
                        slot.as_ptr().cast_mut().cast()
                    }
                })
                .collect(),
        );
        let call = |&(lo, hi): &(i64, i64)| -> i32 {
            // SAFETY: `f` has the signature `StepFn` (checked when loading)
            // and lives in an object `self` keeps loaded. Each argument
            // points at the start of its slot (a written argument's slot is no
            // other argument's, checked above), aligned to every element type (tessera's memory to 64
            // bytes, a caller's read in place to `tensor::FOREIGN_ALIGN`;
            // the C assumes no more than its element type's) and at least as
            // large as its buffer's type and length need, which are the
            // function's parameters'
            // (checked when loading); the emitted C touches only elements
            // inside those lengths, and writes only the arguments its
            // parameters mark written (the others are `const` pointers,
            // through which the C compiler refuses to store), whose slots
            // are the sole owners of their buffers (`make_mut` above), so
            // nothing else can see the writes. `slots` is borrowed mutably
            // for the whole call, so no buffer is dropped or replaced
            // meanwhile; concurrent partitions are sound as `Pointers`
            // explains.
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
