//! The C emitter: a kernel (a root block after the CPU pipeline) becomes a
//! C program of step functions, one per statement of the root.
//!
//! Every statement of the root must be a child block; step `k` is
//!
//! ```c
//! int32_t PREFIX_k(void *const *buffers, int64_t lo, int64_t hi);
//! ```
//!
//! where `buffers[j]` points at element 0 of root buffer `j` (root
//! refinements in order), with the C type of its dtype (`float` for
//! `float32`, `double`, `int8_t` ... `uint64_t`, and `uint8_t` holding 0 or
//! 1 for `bool`). A step whose block has an index tagged `parallel` runs only
//! the iterations `lo <= index < hi` of it (clamped to its range), so a
//! runtime can split it into partitions; other steps ignore `lo` and `hi`.
//! A step returns 0, or [`ERR_GATHER`] when a gather position is out of
//! bounds and [`ERR_DIV_ZERO`] on an integer division by zero, where the VM
//! fails. An out-of-bounds gather reads element 0 instead and the step runs
//! to its end before it reports the error (no early exit, so gather loops
//! vectorize); its outputs are then meaningless, as the error says. Each program also defines `const char PREFIX_abi[]`, the text
//! [`abi`] gives for it, so a loader can check that an object was compiled
//! from a program with the same buffers and steps.
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
//! buffers given to it, provided each `buffers[j]` holds the length
//! [`BufferInfo`] states.
//! Several programs with distinct prefixes may share one C file: the shared
//! helpers are guarded.

mod func;
mod names;
mod scalar;

use std::fmt;
use std::fmt::Write as _;

use ir::DType;
use kernel::{Block, Dim, RefDir, StmtKind};

use func::{comment_text, Func, RootBuf};

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
    pub source: String,
    /// The root buffers, in root order: `buffers[k]` of every step.
    pub buffers: Vec<BufferInfo>,
    /// The steps, in the order they must run.
    pub steps: Vec<StepInfo>,
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
}

/// One step function.
#[derive(Clone, Debug, PartialEq)]
pub struct StepInfo {
    pub symbol: String,
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

/// The text that identifies a program's interface: its buffers' types and
/// lengths and its number of steps. A program stores it as `PREFIX_abi`.
pub fn abi(buffers: &[BufferInfo], steps: usize) -> String {
    let bufs: Vec<String> = buffers
        .iter()
        .map(|b| format!("{}[{}]", b.dtype, b.len))
        .collect();
    format!("tessera-c 1; buffers {}; steps {steps}", bufs.join(" "))
}

/// Emits `root` as C with symbols `{prefix}_{k}` and `{prefix}_abi`.
pub fn emit_c(root: &Block, prefix: &str) -> Result<CProgram, EmitError> {
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
    if let Err(problems) = kernel::verify_block(root) {
        return Err(root_error(
            None,
            format!(
                "the kernel does not verify, so its accesses cannot be proved in bounds:\n  {}",
                problems.join("\n  ")
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
    for r in &root.refs {
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
        });
        roots.push(RootBuf {
            name: r.into.clone(),
            dtype: r.dtype,
            dims: r.shape.clone(),
            agg: r.agg,
        });
    }

    let mut source = String::new();
    let _ = writeln!(
        source,
        "/* tessera: kernel {} as C (symbols {prefix}_*).",
        comment_text(&root.name)
    );
    let _ = writeln!(source, " * Buffers (buffers[k] of every step):");
    for (k, b) in buffers.iter().enumerate() {
        let _ = writeln!(
            source,
            " *   {k}: {} {}[{}], {}{}",
            comment_text(&b.name),
            b.dtype,
            b.len,
            dir_text(b.dir),
            if b.temp { ", temporary" } else { "" }
        );
    }
    let _ = writeln!(source, " */");
    source.push_str(scalar::PRELUDE);
    let _ = writeln!(
        source,
        "\nconst char {prefix}_abi[] = \"{}\";",
        abi(&buffers, root.stmts.len())
    );

    let mut steps = Vec::new();
    for (k, s) in root.stmts.iter().enumerate() {
        let StmtKind::Block(b) = &s.kind else {
            return Err(root_error(
                Some(k),
                "a statement of the root is not a block; every root statement becomes a \
                 step function"
                    .to_string(),
            ));
        };
        let symbol = format!("{prefix}_{k}");
        let mut f = Func::new(&roots);
        let parallel = f.step(b, &root.name)?;
        source.push('\n');
        source.push_str(&step_header(k, &root.name, b, parallel));
        let _ = writeln!(
            source,
            "int32_t {symbol}(void *const *buffers, int64_t lo, int64_t hi)\n{{"
        );
        // Out-of-bounds gather positions are collected here rather than
        // returned at once, so that loops with gathers stay vectorizable.
        source.push_str("  int32_t tsr_err = 0;\n");
        for (j, used) in f.used_roots.iter().enumerate() {
            if !used {
                continue;
            }
            let ty = scalar::storage_type(roots[j].dtype);
            let cst = if root.refs[j].dir == RefDir::In {
                "const "
            } else {
                ""
            };
            let _ = writeln!(
                source,
                "  {cst}{ty} *restrict {name} = ({cst}{ty} *)buffers[{j}];",
                name = f.root_names[j]
            );
        }
        if parallel.is_none() {
            source.push_str("  (void)lo;\n  (void)hi;\n");
        }
        for line in &f.lines {
            source.push_str(line);
            source.push('\n');
        }
        source.push_str("  return tsr_err ? TSR_ERR_GATHER : 0;\n}\n");
        let (reads, writes) = accesses(root, b);
        steps.push(StepInfo {
            symbol,
            block: b.name.clone(),
            comment: b.comment.clone(),
            parallel,
            reads,
            writes,
        });
    }
    Ok(CProgram {
        prefix: prefix.to_string(),
        source,
        buffers,
        steps,
    })
}

/// The comment above step `k`.
fn step_header(k: usize, root: &str, b: &Block, parallel: Option<u64>) -> String {
    let tags: Vec<String> = b.tags.iter().map(|t| format!(" #{t}")).collect();
    let mut s = format!(
        "/* Step {k} of {}: block {}{}\n",
        comment_text(root),
        comment_text(&b.name),
        comment_text(&tags.join(""))
    );
    if !b.comment.is_empty() {
        let _ = writeln!(s, " * {}", comment_text(&b.comment));
    }
    match (
        parallel,
        b.idxs.iter().find(|i| i.tags.contains("parallel")),
    ) {
        (Some(range), Some(ix)) => {
            let _ = writeln!(
                s,
                " * Runs lo <= {} < hi of its parallel index (range {range}).",
                comment_text(&ix.name)
            );
        }
        _ => s.push_str(" * Runs every point; lo and hi are unused.\n"),
    }
    s.push_str(" */\n");
    s
}

fn dir_text(d: RefDir) -> &'static str {
    match d {
        RefDir::None => "none",
        RefDir::In => "in",
        RefDir::Out => "out",
        RefDir::InOut => "inout",
    }
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
fn accesses(root: &Block, b: &Block) -> (Vec<usize>, Vec<usize>) {
    let (mut reads, mut writes) = (Vec::new(), Vec::new());
    for r in &b.refs {
        let Some(k) = r
            .from
            .as_ref()
            .and_then(|f| root.refs.iter().position(|x| &x.into == f))
        else {
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
