//! The C emitter: a kernel (a root block after the CPU pipeline) becomes a
//! C program of step functions, one per statement of the root, of which
//! steps with the same code share one.
//!
//! Every statement of the root must be a child block; step `k` calls
//!
//! ```c
//! int32_t PREFIX_fHASH(void *const *args, int64_t lo, int64_t hi);
//! ```
//!
//! with `args[j]` pointing at element 0 of root buffer
//! `steps[k].args[j]`: the buffers the step uses, in the order its code
//! first mentions them, each with the C type of its dtype (`float` for
//! `float32`, `double`, `int8_t` ... `uint64_t`, and `uint8_t` holding 0 or
//! 1 for `bool`). A step whose block has an index tagged `parallel` runs only
//! the iterations `lo <= index < hi` of it (clamped to its range), so a
//! runtime can split it into partitions; other steps ignore `lo` and `hi`.
//! A step returns 0, or [`ERR_GATHER`] when a gather position is out of
//! bounds and [`ERR_DIV_ZERO`] on an integer division by zero, where the VM
//! fails. An out-of-bounds gather reads element 0 instead and the step runs
//! to its end before it reports the error (no early exit, so gather loops
//! vectorize); its outputs are then meaningless, as the error says.
//!
//! A function's text names no kernel buffer, block or step (`dedup.rs`), so
//! steps that compute the same thing on different buffers (the layers of a
//! chain, the repeated blocks of a network) share one function, named
//! after the hash of its text. The distinct functions are grouped into
//! translation units ([`CProgram::units`], `units.rs`), each a C file of
//! its own that defines `const char PREFIX_abi[]`, the text [`abi`] gives
//! for its functions, so a loader can check that an object was compiled
//! from the unit it expects; the units are compiled in parallel and cached
//! one by one. [`CProgram::source`] is the whole program as one readable
//! file (`readable.rs`): the prelude once, every distinct function with
//! comments naming the blocks and buffers of its steps, and `PREFIX_abi`
//! of all its functions, so it compiles into one object a loader accepts
//! too.
//!
//! The C means what the kernel VM (`kernel::vm`) computes: the same points
//! in the same order, the same scalar semantics (see `scalar.rs`), local
//! buffers zeroed at every point. Float builtins may differ from the VM's
//! in the last bits (the C calls `<math.h>` in the operand's type, `expf`
//! for `float32`, where the VM computes in f64 and rounds, and the VM's
//! `erf` is the `libm` crate's); everything else is exact.
//!
//! Requires: nothing; every kernel is accepted or refused with an
//! [`EmitError`] naming the block (its path from the root) and, where one is
//! at fault, the statement. Refused: kernels that do not pass
//! `kernel::verify_block` (that proof is what keeps every generated access
//! in bounds), roots with indices or constraints or with statements that
//! are not blocks, buffer layouts that leave their length, affine forms that
//! might overflow 64-bit arithmetic, steps whose local buffers take over
//! 64 KiB in all (the stack they live on may be a thread's), and scalar
//! operations on operands whose types differ from the statement's (the VM
//! would compute on the mixed values or fail). Guarantees: the C has no
//! undefined behaviour on IEEE floats (C11 Annex F, which gcc and clang
//! follow on x86-64 and AArch64) and touches only elements inside the
//! buffers given to it, provided each `args[j]` holds the element type
//! and length [`CFunction::params`] states, and writes only the arguments
//! its step lists in [`StepInfo::writes`] (the others are `const`).
//! Several programs with distinct prefixes may share one C file: the shared
//! helpers are guarded.

mod dedup;
mod func;
mod names;
mod readable;
mod scalar;
mod units;

use std::collections::HashMap;
use std::fmt;

use ir::DType;
use kernel::{Block, Dim, RefDir, StmtKind};
use rayon::prelude::*;

use func::{Func, RootBuf};
pub use units::FUNCTIONS_PER_UNIT;

/// What a step returns when a gather position is out of bounds.
pub const ERR_GATHER: i32 = 1;
/// What a step returns on an integer division or modulo by zero.
pub const ERR_DIV_ZERO: i32 = 2;

/// What a nonzero return code of a step means.
pub fn describe_code(code: i32) -> String {
    match code {
        ERR_GATHER => "a gather position is out of bounds".to_string(),
        ERR_DIV_ZERO => "integer division or modulo by zero".to_string(),
        other => format!("unknown error code {other}"),
    }
}

/// A kernel as C.
#[derive(Clone, Debug, PartialEq)]
pub struct CProgram {
    /// The prefix of every symbol of the program.
    pub prefix: String,
    /// The whole program as one readable C file (see the module doc).
    pub source: String,
    /// The root buffers, in root order.
    pub buffers: Vec<BufferInfo>,
    /// The steps, in the order they must run.
    pub steps: Vec<StepInfo>,
    /// The distinct step functions, in the order steps first call them.
    pub functions: Vec<CFunction>,
    /// The translation units: every function is in exactly one.
    pub units: Vec<CUnit>,
}

/// A root buffer of a kernel.
#[derive(Clone, Debug, PartialEq)]
pub struct BufferInfo {
    pub name: String,
    pub dtype: DType,
    /// The number of elements.
    pub len: usize,
    /// Its size in bytes (which fits `int64`).
    pub bytes: usize,
    pub dir: RefDir,
    /// Tagged `temp`: a temporary no caller sees.
    pub temp: bool,
    /// Tagged `overwritten` (a temporary whose first step stores every
    /// element before reading any): its memory needs no zeroing first.
    pub overwritten: bool,
}

/// One step: a call of a step function.
#[derive(Clone, Debug, PartialEq)]
pub struct StepInfo {
    /// The function it calls: an index into [`CProgram::functions`].
    pub function: usize,
    /// The function's arguments: its `args[j]` is root buffer `args[j]`
    /// (an index into [`CProgram::buffers`]). Each is in `reads` or
    /// `writes`: the verifier lets a step's code read only through `in`
    /// and `inout` views and write only through `out` and `inout` ones.
    pub args: Vec<usize>,
    /// The name of the root child block it runs.
    pub block: String,
    /// The block's comment (the source comprehension).
    pub comment: String,
    /// The range of the block's index tagged `parallel`: the step then runs
    /// `lo <= index < hi` of it.
    pub parallel: Option<u64>,
    /// The root buffers (indices into [`CProgram::buffers`]) the step reads:
    /// views with direction `in` or `inout`, and written views that
    /// aggregate onto the old values.
    pub reads: Vec<usize>,
    /// The root buffers the step writes.
    pub writes: Vec<usize>,
}

/// A distinct step function.
#[derive(Clone, Debug, PartialEq)]
pub struct CFunction {
    pub symbol: String,
    /// Its arguments, in order: what it may assume of `args[j]`.
    pub params: Vec<Param>,
    /// Whether it has explicit AVX-512 code.
    pub avx512: bool,
    /// Its C, as compiled (without comments).
    pub text: String,
    /// The unit that defines it: an index into [`CProgram::units`].
    pub unit: usize,
}

/// An argument of a step function: a buffer of `len` elements of
/// `dtype`, which the function writes only when `written` (else its
/// pointer is `const`, so the C compiler refuses any store through it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Param {
    pub dtype: DType,
    pub len: usize,
    pub written: bool,
}

impl fmt::Display for Param {
    /// `float32[64]` for a buffer only read, `float32[64] written` else.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}[{}]", self.dtype, self.len)?;
        if self.written {
            f.write_str(" written")?;
        }
        Ok(())
    }
}

/// A translation unit: a C file compiled on its own.
#[derive(Clone, Debug, PartialEq)]
pub struct CUnit {
    pub source: String,
    /// The functions it defines (indices into [`CProgram::functions`]).
    pub functions: Vec<usize>,
}

/// Why a kernel cannot be emitted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EmitError {
    /// The block's path from the root (`main/s1/inner`).
    pub block: String,
    /// The statement at fault (numbered from 0 in the block), if one is.
    pub statement: Option<usize>,
    pub message: String,
}

impl fmt::Display for EmitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot emit C for block `{}`", self.block)?;
        if let Some(s) = self.statement {
            write!(f, ", statement {s}")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for EmitError {}

/// The text that identifies the interface of an object defining
/// `functions`: each one's symbol and parameters. An object stores it as
/// `PREFIX_abi`.
pub fn abi<'a>(functions: impl IntoIterator<Item = &'a CFunction>) -> String {
    let fs: Vec<String> = functions
        .into_iter()
        .map(|f| format!("{}({})", f.symbol, dedup::params_text(&f.params)))
        .collect();
    format!("tessera-c 2; {}", fs.join("; "))
}

/// Emits `root` as C with symbols `{prefix}_*`, its functions grouped into
/// units for the cores this process may use (`units.rs`), after verifying
/// it.
pub fn emit_c(root: &Block, prefix: &str) -> Result<CProgram, EmitError> {
    if let Err(problems) = kernel::verify_block(root) {
        return Err(EmitError {
            block: root.name.clone(),
            statement: None,
            message: format!(
                "the kernel does not verify, so its accesses cannot be proved in bounds:\n  {}",
                problems.join("\n  ")
            ),
        });
    }
    emit_c_verified(root, prefix)
}

/// [`emit_c`] for a kernel the caller has verified. Requires: `root`
/// passes `kernel::verify_block` (it was verified in this process, or it
/// is a copy, read back intact, of one that was); the generated code's
/// bounds guarantee rests on that proof, and verifying a large kernel
/// again costs as much as emitting it.
pub fn emit_c_verified(root: &Block, prefix: &str) -> Result<CProgram, EmitError> {
    let root_error = |statement: Option<usize>, message: String| EmitError {
        block: root.name.clone(),
        statement,
        message,
    };
    if !is_prefix(prefix) {
        return Err(root_error(
            None,
            format!(
                "the symbol prefix `{prefix}` is not a C identifier (or starts with `tsr_`, \
                 which the generated helpers use)"
            ),
        ));
    }
    if !root.idxs.is_empty() || !root.constraints.is_empty() {
        return Err(root_error(
            None,
            "the root block has indices or constraints (the VM ignores them); steps are \
             emitted only for roots without them"
                .to_string(),
        ));
    }
    let mut roots = Vec::new();
    let mut buffers = Vec::new();
    let mut root_index = HashMap::new();
    for (k, r) in root.refs.iter().enumerate() {
        let len = layout_len(&r.shape)
            .and_then(|n| usize::try_from(n).map_err(|_| "too many elements".to_string()))
            .map_err(|m| root_error(None, format!("buffer `{}`: {m}", r.into)))?;
        let bytes = len
            .checked_mul(tensor::element_bytes(r.dtype))
            .filter(|&b| i64::try_from(b).is_ok())
            .ok_or_else(|| {
                root_error(
                    None,
                    format!("buffer `{}`: its size in bytes leaves int64", r.into),
                )
            })?;
        buffers.push(BufferInfo {
            name: r.into.clone(),
            dtype: r.dtype,
            len,
            bytes,
            dir: r.dir,
            temp: r.tags.contains("temp"),
            overwritten: r.tags.contains(kernel::passes::overwrite::TAG),
        });
        roots.push(RootBuf {
            dtype: r.dtype,
            dims: r.shape.clone(),
            agg: r.agg,
        });
        root_index.entry(r.into.clone()).or_insert(k);
    }

    let mut blocks = Vec::new();
    for (k, s) in root.stmts.iter().enumerate() {
        let StmtKind::Block(b) = &s.kind else {
            return Err(root_error(
                Some(k),
                "a statement of the root is not a block; every root statement becomes a \
                 step function"
                    .to_string(),
            ));
        };
        blocks.push(&**b);
    }
    // Each step's function is written on its own, in parallel; only
    // finding the identical ones (below) looks at them all.
    let emitted = blocks
        .par_iter()
        .map(|b| {
            let mut f = Func::new(&roots, &root_index);
            let parallel = f.step(b, &root.name)?;
            Ok((f, parallel, accesses(&root_index, b)))
        })
        .collect::<Vec<Result<_, EmitError>>>()
        .into_iter()
        // The first step's error, as emitting them in turn would report.
        .collect::<Result<Vec<_>, _>>()?;
    let mut functions = dedup::Functions::new(prefix);
    let mut steps = Vec::new();
    for (k, (b, (f, parallel, (reads, writes)))) in blocks.iter().zip(emitted).enumerate() {
        let params = f
            .args
            .iter()
            .map(|&a| Param {
                dtype: buffers[a].dtype,
                len: buffers[a].len,
                written: writes.contains(&a),
            })
            .collect();
        let function = functions.add(k, &f, params, parallel.is_some());
        steps.push(StepInfo {
            function,
            args: f.args,
            block: b.name.clone(),
            comment: b.comment.clone(),
            parallel,
            reads,
            writes,
        });
    }

    let mut distinct = functions.distinct;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let keyed: Vec<(&str, bool)> = distinct
        .iter()
        .map(|d| (d.key.as_str(), d.function.avx512))
        .collect();
    let groups = units::group(&keyed, cores);
    for (u, members) in groups.iter().enumerate() {
        for &f in members {
            distinct[f].function.unit = u;
        }
    }
    let units = groups
        .iter()
        .map(|members| CUnit {
            source: units::source(prefix, &distinct, members),
            functions: members.clone(),
        })
        .collect::<Vec<_>>();
    let source = readable::source(root, &blocks, prefix, &buffers, &steps, &distinct);
    Ok(CProgram {
        prefix: prefix.to_string(),
        source,
        buffers,
        steps,
        functions: distinct.into_iter().map(|d| d.function).collect(),
        units,
    })
}

/// Whether `p` can prefix the program's symbols.
fn is_prefix(p: &str) -> bool {
    let mut chars = p.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !p.starts_with("tsr_")
        && !p.starts_with("TSR_")
}

/// The root buffers step block `b` reads and writes, by index.
fn accesses(root_index: &HashMap<String, usize>, b: &Block) -> (Vec<usize>, Vec<usize>) {
    let (mut reads, mut writes) = (Vec::new(), Vec::new());
    for r in &b.refs {
        let Some(&k) = r.from.as_ref().and_then(|f| root_index.get(f)) else {
            continue;
        };
        if matches!(r.dir, RefDir::In | RefDir::InOut) || r.agg != kernel::Agg::Assign {
            reads.push(k);
        }
        if matches!(r.dir, RefDir::Out | RefDir::InOut) {
            writes.push(k);
        }
    }
    for v in [&mut reads, &mut writes] {
        v.sort_unstable();
        v.dedup();
    }
    (reads, writes)
}

/// The number of elements of a buffer of `shape`, after checking that
/// every element its strides address lies in `0..len`.
pub(crate) fn layout_len(shape: &[Dim]) -> Result<u64, String> {
    let len = shape
        .iter()
        .try_fold(1u64, |a, d| a.checked_mul(d.size))
        .filter(|n| i64::try_from(*n).is_ok())
        .ok_or_else(|| "too many elements".to_string())?;
    if len == 0 {
        return Ok(0);
    }
    let (mut lo, mut hi) = (0i128, 0i128);
    for d in shape {
        let reach = i128::from(d.size - 1) * i128::from(d.stride);
        if reach < 0 {
            lo += reach;
        } else {
            hi += reach;
        }
    }
    if lo < 0 || hi >= i128::from(len) {
        return Err(format!(
            "its strides address offsets {lo}..={hi}, outside its {len} elements"
        ));
    }
    Ok(len)
}
