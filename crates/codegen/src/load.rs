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
        let (f, info) = self
            .steps
            .get(k)
            .zip(self.infos.get(k))
            .ok_or_else(|| format!("no step {k}: the kernel has {}", self.steps.len()))?;
        if buffers.len() != self.buffers.len() {
            return Err(format!(
                "step {k} takes {} buffers, got {}",
                self.buffers.len(),
                buffers.len()
            ));
        }
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
