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
//! [`Kernel::run_step`] calls one step on [`HostBuffer`]s after checking
//! that there is one buffer per root buffer with exactly its type and
//! length: the emitter guarantees that a step touches only elements inside
//! those lengths, so this check is what makes the call sound.

#![allow(unsafe_code)]

use std::ffi::{c_char, c_void, CStr};
use std::path::Path;
use std::sync::Arc;

use ir::{arith, DType, Value};

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

/// A buffer owned by the host, typed as a step reads it.
#[derive(Clone, Debug, PartialEq)]
pub enum HostBuffer {
    /// `bool`, one byte per element holding 0 or 1.
    Bool(Vec<u8>),
    U8(Vec<u8>),
    I8(Vec<i8>),
    U16(Vec<u16>),
    I16(Vec<i16>),
    U32(Vec<u32>),
    I32(Vec<i32>),
    U64(Vec<u64>),
    I64(Vec<i64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
}

impl HostBuffer {
    /// `len` zeros of type `t`.
    pub fn zeros(t: DType, len: usize) -> HostBuffer {
        match t {
            DType::Bool => HostBuffer::Bool(vec![0; len]),
            DType::U8 => HostBuffer::U8(vec![0; len]),
            DType::I8 => HostBuffer::I8(vec![0; len]),
            DType::U16 => HostBuffer::U16(vec![0; len]),
            DType::I16 => HostBuffer::I16(vec![0; len]),
            DType::U32 => HostBuffer::U32(vec![0; len]),
            DType::I32 => HostBuffer::I32(vec![0; len]),
            DType::U64 => HostBuffer::U64(vec![0; len]),
            DType::I64 => HostBuffer::I64(vec![0; len]),
            DType::F32 => HostBuffer::F32(vec![0.0; len]),
            DType::F64 => HostBuffer::F64(vec![0.0; len]),
        }
    }

    /// Values in the VM's representation (`kernel::vm::Buffers`) as a
    /// buffer of type `t`: floats for float types (rounded to `float32`),
    /// integers that fit `t` for integer types (`uint64` as its bit
    /// pattern, as the VM holds it), booleans for `bool`.
    pub fn from_values(t: DType, values: &[Value]) -> Result<HostBuffer, String> {
        let mut out = HostBuffer::zeros(t, values.len());
        for (k, v) in values.iter().enumerate() {
            let bad = || format!("element {k} is {v:?}, not a {t} value");
            let int = || match v {
                Value::Int(i) if t == DType::U64 || arith::wrap(t, *i) == *i => Ok(*i),
                _ => Err(bad()),
            };
            match (&mut out, v) {
                (HostBuffer::Bool(b), Value::Bool(x)) => b[k] = u8::from(*x),
                (HostBuffer::F32(b), Value::Float(x)) => b[k] = *x as f32,
                (HostBuffer::F64(b), Value::Float(x)) => b[k] = *x,
                // `int()` has checked that the value fits, so the casts keep it.
                (HostBuffer::U8(b), _) => b[k] = int()? as u8,
                (HostBuffer::I8(b), _) => b[k] = int()? as i8,
                (HostBuffer::U16(b), _) => b[k] = int()? as u16,
                (HostBuffer::I16(b), _) => b[k] = int()? as i16,
                (HostBuffer::U32(b), _) => b[k] = int()? as u32,
                (HostBuffer::I32(b), _) => b[k] = int()? as i32,
                (HostBuffer::U64(b), _) => b[k] = int()? as u64,
                (HostBuffer::I64(b), _) => b[k] = int()?,
                _ => return Err(bad()),
            }
        }
        Ok(out)
    }

    /// The elements in the VM's representation.
    pub fn to_values(&self) -> Vec<Value> {
        fn ints<T: Copy + Into<i64>>(v: &[T]) -> Vec<Value> {
            v.iter().map(|x| Value::Int((*x).into())).collect()
        }
        match self {
            HostBuffer::Bool(v) => v.iter().map(|x| Value::Bool(*x != 0)).collect(),
            HostBuffer::U8(v) => ints(v),
            HostBuffer::I8(v) => ints(v),
            HostBuffer::U16(v) => ints(v),
            HostBuffer::I16(v) => ints(v),
            HostBuffer::U32(v) => ints(v),
            HostBuffer::I32(v) => ints(v),
            HostBuffer::U64(v) => v.iter().map(|x| Value::Int(*x as i64)).collect(),
            HostBuffer::I64(v) => ints(v),
            HostBuffer::F32(v) => v.iter().map(|x| Value::Float(f64::from(*x))).collect(),
            HostBuffer::F64(v) => v.iter().map(|x| Value::Float(*x)).collect(),
        }
    }

    pub fn dtype(&self) -> DType {
        match self {
            HostBuffer::Bool(_) => DType::Bool,
            HostBuffer::U8(_) => DType::U8,
            HostBuffer::I8(_) => DType::I8,
            HostBuffer::U16(_) => DType::U16,
            HostBuffer::I16(_) => DType::I16,
            HostBuffer::U32(_) => DType::U32,
            HostBuffer::I32(_) => DType::I32,
            HostBuffer::U64(_) => DType::U64,
            HostBuffer::I64(_) => DType::I64,
            HostBuffer::F32(_) => DType::F32,
            HostBuffer::F64(_) => DType::F64,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            HostBuffer::Bool(v) | HostBuffer::U8(v) => v.len(),
            HostBuffer::I8(v) => v.len(),
            HostBuffer::U16(v) => v.len(),
            HostBuffer::I16(v) => v.len(),
            HostBuffer::U32(v) => v.len(),
            HostBuffer::I32(v) => v.len(),
            HostBuffer::U64(v) => v.len(),
            HostBuffer::I64(v) => v.len(),
            HostBuffer::F32(v) => v.len(),
            HostBuffer::F64(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The address of element 0, for a step's `buffers` array.
    fn as_mut_ptr(&mut self) -> *mut c_void {
        match self {
            HostBuffer::Bool(v) | HostBuffer::U8(v) => v.as_mut_ptr().cast(),
            HostBuffer::I8(v) => v.as_mut_ptr().cast(),
            HostBuffer::U16(v) => v.as_mut_ptr().cast(),
            HostBuffer::I16(v) => v.as_mut_ptr().cast(),
            HostBuffer::U32(v) => v.as_mut_ptr().cast(),
            HostBuffer::I32(v) => v.as_mut_ptr().cast(),
            HostBuffer::U64(v) => v.as_mut_ptr().cast(),
            HostBuffer::I64(v) => v.as_mut_ptr().cast(),
            HostBuffer::F32(v) => v.as_mut_ptr().cast(),
            HostBuffer::F64(v) => v.as_mut_ptr().cast(),
        }
    }
}

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

    /// Runs step `k` on `buffers` (one per root buffer, in order). A
    /// parallel step runs the iterations `lo <= index < hi` of its parallel
    /// index (which must lie in `0..=range`); other steps run whole and
    /// ignore `lo` and `hi`.
    pub fn run_step(
        &self,
        k: usize,
        buffers: &mut [HostBuffer],
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
        let ptrs: Vec<*mut c_void> = buffers.iter_mut().map(HostBuffer::as_mut_ptr).collect();
        // SAFETY: `f` has the signature `StepFn` (checked when loading), and
        // the object it lives in is loaded while `self` exists. `ptrs` has
        // one pointer per root buffer, each to the first element of a live
        // vector of exactly the element type and length the emitted C
        // assumes (checked above); the emitted C touches only elements
        // inside those lengths (the emitter's guarantee) and clamps `lo` and
        // `hi` itself. The vectors are borrowed mutably for the call, so no
        // one else reads or writes them meanwhile, and they are distinct
        // allocations, which the C's `restrict` pointers assume.
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

/// 64 bytes aligned to 64: the unit of [`Slot`] storage, so every buffer
/// starts on a cache line (and an AVX-512 vector).
#[derive(Clone, Copy, bytemuck::Zeroable, bytemuck::Pod)]
#[repr(C, align(64))]
struct Line([u8; 64]);

/// An element type a [`Slot`] can be viewed as.
pub trait Element: bytemuck::Pod {
    /// The dtypes stored as this Rust type (`bool` is one byte, 0 or 1).
    const DTYPES: &'static [DType];
}

macro_rules! element {
    ($t:ty, $($d:expr),+) => {
        impl Element for $t {
            const DTYPES: &'static [DType] = &[$($d),+];
        }
    };
}
element!(u8, DType::U8, DType::Bool);
element!(i8, DType::I8);
element!(u16, DType::U16);
element!(i16, DType::I16);
element!(u32, DType::U32);
element!(i32, DType::I32);
element!(u64, DType::U64);
element!(i64, DType::I64);
element!(f32, DType::F32);
element!(f64, DType::F64);

/// The bytes of one element of `t`.
pub fn element_bytes(t: DType) -> usize {
    usize::try_from(t.bits().div_ceil(8)).unwrap_or(1).max(1)
}

/// Zeroed, 64-byte-aligned memory that holds one or more buffers over time
/// (the runtime's plan lets buffers whose lifetimes do not overlap share a
/// slot).
#[derive(Clone, Debug, Default)]
pub struct Slot {
    lines: Vec<Line>,
}

impl std::fmt::Debug for Line {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Line")
    }
}

impl Slot {
    /// At least `bytes` zeroed bytes.
    pub fn new(bytes: usize) -> Slot {
        let count = bytes.div_ceil(64);
        let mut lines: Vec<Line> = Vec::with_capacity(count);
        if count * 64 >= HUGE_PAGE_SLOT {
            advise_huge_pages(lines.as_mut_ptr().cast(), count * 64);
        }
        // The zeros are written after the advice, so the pages they fault
        // in are already huge ones.
        lines.resize(count, Line([0; 64]));
        Slot { lines }
    }

    pub fn bytes(&self) -> usize {
        self.lines.len() * 64
    }

    /// The first `len` elements as `T`, if they fit.
    pub fn view<T: Element>(&self, len: usize) -> Option<&[T]> {
        bytemuck::cast_slice::<Line, T>(&self.lines).get(..len)
    }

    /// The first `len` elements as `T`, mutably, if they fit.
    pub fn view_mut<T: Element>(&mut self, len: usize) -> Option<&mut [T]> {
        bytemuck::cast_slice_mut::<Line, T>(&mut self.lines).get_mut(..len)
    }

    fn as_mut_ptr(&mut self) -> *mut c_void {
        self.lines.as_mut_ptr().cast()
    }
}

/// Slots of at least this many bytes ask the kernel for transparent huge
/// pages. A kernel that reads a large tensor at random places (an
/// embedding table's rows) otherwise misses the TLB on nearly every read:
/// 4 KiB pages cover only a few MiB of it, 2 MiB pages cover gigabytes.
/// Below this size a slot spans too few huge pages to matter.
const HUGE_PAGE_SLOT: usize = 4 << 20;

/// Advises the kernel to back the whole pages inside `len` bytes from `ptr`
/// with transparent huge pages, as numpy does for large arrays. Where the
/// system has them only on request (`madvise` mode) this is the request;
/// where it has none the advice fails, and the slot simply keeps small
/// pages, so the result is ignored.
#[cfg(target_os = "linux")]
fn advise_huge_pages(ptr: *mut c_void, len: usize) {
    const PAGE: usize = 4096;
    let start = (ptr as usize).next_multiple_of(PAGE);
    let end = (ptr as usize).saturating_add(len) / PAGE * PAGE;
    if end > start {
        // SAFETY: `start..end` lies inside the allocation of `len` bytes
        // at `ptr`, which the caller owns and has not yet initialized;
        // MADV_HUGEPAGE changes only how the kernel backs those pages, not
        // their contents or who may access them.
        let _ = unsafe { libc::madvise(start as *mut c_void, end - start, libc::MADV_HUGEPAGE) };
    }
}

/// Without Linux's transparent huge pages there is nothing to ask for.
#[cfg(not(target_os = "linux"))]
fn advise_huge_pages(_ptr: *mut c_void, _len: usize) {}

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
    /// exactly one partition (its bounds are ignored).
    ///
    /// Checked before any call: one slot per root buffer, each large
    /// enough for its buffer; the buffers the step touches are in distinct
    /// slots (so the C's `restrict` pointers never alias); the partitions
    /// lie inside the index's range and do not overlap.
    pub fn run_partitions(
        &self,
        k: usize,
        slots: &mut [Slot],
        map: &[usize],
        parts: &[(i64, i64)],
    ) -> Result<(), String> {
        let (f, info) = self.step(k, map.len())?;
        for (b, &s) in self.buffers.iter().zip(map) {
            let need = b.len.saturating_mul(element_bytes(b.dtype));
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
        // which the step never dereferences.
        let mut ptrs = Pointers(vec![std::ptr::null_mut(); map.len()]);
        let bases: Vec<*mut c_void> = slots.iter_mut().map(Slot::as_mut_ptr).collect();
        for &b in &used {
            ptrs.0[b] = bases[map[b]];
        }
        let call = |&(lo, hi): &(i64, i64)| -> i32 {
            // SAFETY: `f` has the signature `StepFn` (checked when loading)
            // and lives in the object `self` keeps loaded. Every buffer the
            // step touches points at the start of its own slot (distinct
            // slots, checked above), 64-byte aligned and at least as large
            // as the buffer's type and length need; the emitted C touches
            // only elements inside those lengths and only the buffers its
            // block refines (the ones listed in `reads` and `writes`).
            // `slots` is borrowed mutably for the whole call, so nothing
            // else accesses it; concurrent partitions are sound as
            // `Pointers` explains.
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

impl HostBuffer {
    /// Copies the buffer to the start of `slot` (which must be large
    /// enough; otherwise nothing is copied and `false` returned).
    pub fn write_into(&self, slot: &mut Slot) -> bool {
        fn put<T: Element>(slot: &mut Slot, v: &[T]) -> bool {
            slot.view_mut::<T>(v.len())
                .map(|dst| dst.copy_from_slice(v))
                .is_some()
        }
        match self {
            HostBuffer::Bool(v) | HostBuffer::U8(v) => put(slot, v),
            HostBuffer::I8(v) => put(slot, v),
            HostBuffer::U16(v) => put(slot, v),
            HostBuffer::I16(v) => put(slot, v),
            HostBuffer::U32(v) => put(slot, v),
            HostBuffer::I32(v) => put(slot, v),
            HostBuffer::U64(v) => put(slot, v),
            HostBuffer::I64(v) => put(slot, v),
            HostBuffer::F32(v) => put(slot, v),
            HostBuffer::F64(v) => put(slot, v),
        }
    }

    /// The first `len` elements of `slot` as a buffer of type `t`.
    pub fn read_from(slot: &Slot, t: DType, len: usize) -> Result<HostBuffer, String> {
        fn get<T: Element>(slot: &Slot, len: usize) -> Result<Vec<T>, String> {
            slot.view::<T>(len).map(<[T]>::to_vec).ok_or_else(|| {
                format!("{len} elements do not fit a slot of {} bytes", slot.bytes())
            })
        }
        Ok(match t {
            DType::Bool => HostBuffer::Bool(get(slot, len)?),
            DType::U8 => HostBuffer::U8(get(slot, len)?),
            DType::I8 => HostBuffer::I8(get(slot, len)?),
            DType::U16 => HostBuffer::U16(get(slot, len)?),
            DType::I16 => HostBuffer::I16(get(slot, len)?),
            DType::U32 => HostBuffer::U32(get(slot, len)?),
            DType::I32 => HostBuffer::I32(get(slot, len)?),
            DType::U64 => HostBuffer::U64(get(slot, len)?),
            DType::I64 => HostBuffer::I64(get(slot, len)?),
            DType::F32 => HostBuffer::F32(get(slot, len)?),
            DType::F64 => HostBuffer::F64(get(slot, len)?),
        })
    }
}
