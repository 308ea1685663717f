//! Library matmuls: recognizing (batched) matmul blocks in a lowered kernel
//! and running them with the `faer` crate.
//!
//! **Matching**: a root child block as `kernel::lower_def` produces it,
//! before any pass, whose statements are exactly `load a; load b; mul;
//! store c` (float32 or float64, either operand order), with `c` an
//! `out`/`inout` view aggregated by `add`, `a` and `b` `in` views, all
//! single-element views of root buffers inside them at every point, every
//! access dimension an index with coefficient 1 plus a constant (or a
//! constant alone), each index in one dimension of a view at most, no
//! constraints and no passed indices, and `c` written to a buffer that
//! neither `a` nor `b` reads. Those are the kernel block's checks; the
//! block is then described as an iterator mapping table (its indices and
//! ranges, the views' affine accesses over their root buffers' strides)
//! and `ir::opmatch::matmul_as` (the first load as A) groups the indices
//! into M, N, K and batch, merges nesting ones and makes non-nesting M and
//! N groups batch dimensions (OLLIE's iterator mapping table, §4.3.1; see
//! that module).
//! The result is a [`MatmulSpec`]: sizes and strides in elements, root
//! buffer indices for A, B and C.
//!
//! [`mark`] tags matched blocks `library` and `matmul`; the block itself is
//! unchanged, so the VM still gives its meaning, and passes are expected to
//! leave `library` blocks alone.
//!
//! **Execution**: [`run`] computes `C += A·B` at every batch point (the
//! lowered block adds onto C after an init block, so it always accumulates).
//! It takes typed slices and first checks that every element any batch
//! point can touch lies inside them and that no two elements of C written
//! by the spec coincide; only then does it call the library, whose raw
//! pointer interface this makes sound. Many small matmuls run batch points
//! in parallel on the global rayon pool (each matmul single-threaded);
//! otherwise batch points run one after another, each split into chunks of
//! C's columns (or rows, when C has more rows than columns: the operand the
//! chunks share is then the smaller one, and each chunk packs it again),
//! several chunks per thread, which the pool's threads take as they come,
//! each chunk a single-threaded library call.
//!
//! Why not the library's own threads: faer's parallel matmul splits its
//! work evenly and synchronizes many times per product, so on this shared
//! machine, whose two vCPUs are sometimes slowed or slow to wake for
//! seconds at a time, tmm (128×1024×1024) took 1.93–1.98 ms in one run of
//! three, against 1.33 ms otherwise. Chunks on the pool took 1.26–1.40 ms
//! in the same minutes, the slow spells included (12 alternating pairs).
//!
//! **Library choice**: `faer` 0.24 over `gemm` 0.19 with `x86-v4`
//! (AVX-512), measured on this machine (2 vCPUs of an AMD EPYC, family 26,
//! AVX-512) with `cargo run --release -p runtime --example matmul_peak`, in
//! GFLOP/s, each the median of 5–7 timings of at least 0.2 s, the range over
//! four invocations on an otherwise idle machine:
//!
//! | shape (float32)                      | faer (through [`run`]) | gemm, direct |
//! |--------------------------------------|------------------------|--------------|
//! | 1024³, 1 thread                      | 228–258                | 231–256      |
//! | 1024³, 2 threads                     | 417–485                | 453–499      |
//! | tbmm (500, 26, 72, 26), 1 thread     | 114–126                | 78–85        |
//! | tbmm (500, 26, 72, 26), 2 threads    | 227–241                | 153–161      |
//!
//! (The 1024³ 2-thread row was measured when `run` still let faer spread
//! one matmul over the threads, before the chunks described above.)
//! Both reach the machine's peak on large products; faer is half again as
//! fast on the small matmuls of batched kernels (its small-size kernels),
//! so it is the dependency (gemm stays a dev-dependency of the benchmark).
//! On tbmm with 2 threads, running the batch serially and letting faer
//! spread each small matmul over the threads gives only 15–44 GFLOP/s,
//! hence the batch-parallel strategy for small matmuls.
//!
//! Requires: a spec from [`spec`] (or one built by hand; [`run`] checks it
//! either way) and slices of the spec's element type. Guarantees: [`run`]
//! never reads or writes outside the slices it is given and never panics; a
//! spec that does not fit them is an error, and C is then untouched. On a
//! matched block it computes what the VM computes up to the order of the
//! float additions (the library sums in its own order, with fused
//! multiply-adds), not bit for bit.

#![allow(unsafe_code)]

use std::fmt;

use faer::{Accum, MatMut, MatRef, Par};
use ir::opmatch::{self, Access, Combine, Iter, Subscript, Table};
use ir::{BinOp, DType};
use kernel::{Agg, Block, RefDir, StmtKind};
use rayon::prelude::*;

/// Where one operand lives: its root buffer and its layout, in elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Operand {
    /// The index of the buffer in the root block's refinements.
    pub buffer: usize,
    /// The element at row 0, column 0 of batch point 0.
    pub offset: i64,
    /// The distance between consecutive rows.
    pub row_stride: i64,
    /// The distance between consecutive columns.
    pub col_stride: i64,
}

impl Operand {
    pub fn new(buffer: usize, offset: i64, row_stride: i64, col_stride: i64) -> Operand {
        Operand {
            buffer,
            offset,
            row_stride,
            col_stride,
        }
    }
}

/// One batch dimension: the runtime loops over `extent` points, moving each
/// operand by its stride.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchDim {
    pub extent: u64,
    pub stride_a: i64,
    pub stride_b: i64,
    pub stride_c: i64,
}

/// A batched matmul: at every batch point, `C (m×n) += A (m×k) · B (k×n)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MatmulSpec {
    /// `F32` or `F64`.
    pub dtype: DType,
    pub m: u64,
    pub n: u64,
    pub k: u64,
    pub batch: Vec<BatchDim>,
    pub a: Operand,
    pub b: Operand,
    pub c: Operand,
}

/// Whether `points` matmuls of `flops` each run batch points in parallel,
/// each on one thread, rather than one after another, each split into
/// chunks.
fn batch_parallel(points: usize, flops: usize, threads: usize) -> bool {
    threads > 1 && points > 1 && (points >= 4 * threads || flops < SMALL_FLOPS)
}

impl MatmulSpec {
    /// Whether a run on `threads` threads splits its products into chunks
    /// of C, so that their number per thread matters.
    pub fn splits(&self, threads: usize) -> bool {
        let points = usize::try_from(self.batch_points()).unwrap_or(usize::MAX);
        let flops =
            usize::try_from(self.flops() / self.batch_points().max(1)).unwrap_or(usize::MAX);
        let extent = usize::try_from(self.m.max(self.n)).unwrap_or(usize::MAX);
        threads > 1 && !batch_parallel(points, flops, threads) && extent / MIN_CHUNK > 1
    }

    /// The root buffers read: A's and B's (possibly the same).
    pub fn reads(&self) -> [usize; 2] {
        [self.a.buffer, self.b.buffer]
    }

    /// The root buffer written (and read, since C accumulates).
    pub fn writes(&self) -> usize {
        self.c.buffer
    }

    /// The number of batch points (1 without batch dimensions).
    pub fn batch_points(&self) -> u64 {
        self.batch
            .iter()
            .fold(1u64, |p, d| p.saturating_mul(d.extent))
    }

    /// Floating-point operations (a multiply and an add per product),
    /// saturating.
    pub fn flops(&self) -> u64 {
        [self.m, self.n, self.k, self.batch_points()]
            .iter()
            .fold(2u64, |p, x| p.saturating_mul(*x))
    }
}

/// Tags every root child that [`spec`] matches with `library` and
/// `matmul`; returns how many it tagged.
pub fn mark(root: &mut Block) -> usize {
    let matched: Vec<usize> = root
        .stmts
        .iter()
        .enumerate()
        .filter_map(|(i, s)| match &s.kind {
            StmtKind::Block(b) if spec(b, root).is_some() => Some(i),
            _ => None,
        })
        .collect();
    for &i in &matched {
        if let StmtKind::Block(b) = &mut root.stmts[i].kind {
            b.tags.insert("library".to_string());
            b.tags.insert("matmul".to_string());
        }
    }
    matched.len()
}

/// Reads view `name` of `block` as a single-element view of a root buffer
/// addressed by `index + constant` (or a constant) in every dimension, each
/// index in one dimension at most and the view inside the buffer at every
/// point; gives the buffer's index and the view as a table access.
pub(crate) fn access(
    block: &Block,
    root: &Block,
    name: &str,
    dtype: DType,
) -> Option<(usize, Access)> {
    match access_with_band(block, root, name, dtype, false)? {
        (buffer, access, None) => Some((buffer, access)),
        (_, _, Some(_)) => None,
    }
}

/// [`access`], and with `band` also a view with one dimension of two or
/// more indices (a band product's B, which its block's constraints keep
/// inside the buffer, so it is not checked here); gives that dimension
/// too.
pub(crate) fn access_with_band(
    block: &Block,
    root: &Block,
    name: &str,
    dtype: DType,
    band: bool,
) -> Option<(usize, Access, Option<usize>)> {
    let view = block.refinement(name)?;
    let from = view.from.as_deref()?;
    let buffer = root.refs.iter().position(|r| r.into == from)?;
    let base = &root.refs[buffer];
    if view.dtype != dtype || base.dtype != dtype {
        return None;
    }
    if view.access.len() != base.shape.len()
        || view.shape.len() != base.shape.len()
        || view.shape.iter().any(|d| d.size != 1)
    {
        return None;
    }
    let mut seen: Vec<&str> = Vec::new();
    let mut dims = Vec::new();
    let mut band_dim = None;
    for (d, (form, dim)) in view.access.iter().zip(&base.shape).enumerate() {
        let size = i64::try_from(dim.size).ok()?;
        let mut last = form.constant;
        match form.terms.len() {
            0 => {}
            n if n > 1 && band && band_dim.is_none() => {
                band_dim = Some(d);
                let terms = form.terms.iter().map(|(n, c)| (n.clone(), *c));
                dims.push(Subscript::Affine(opmatch::Affine::new(
                    terms,
                    form.constant,
                )?));
                continue;
            }
            1 => {
                let (index, coef) = form.terms.iter().next()?;
                let range = i64::try_from(block.index(index)?.range).ok()?;
                if *coef != 1 || seen.contains(&index.as_str()) {
                    return None;
                }
                seen.push(index);
                last = last.checked_add(range - 1)?;
            }
            _ => return None,
        }
        // The view must stay inside its dimension at every point, as the
        // VM demands; otherwise strides would wrap into the next row.
        if form.constant < 0 || last >= size {
            return None;
        }
        let terms = form.terms.iter().map(|(n, c)| (n.clone(), *c));
        dims.push(Subscript::Affine(opmatch::Affine::new(
            terms,
            form.constant,
        )?));
    }
    Some((
        buffer,
        Access {
            tensor: name.to_string(),
            dims,
            sizes: base.shape.iter().map(|d| d.size).collect(),
            strides: base.shape.iter().map(|d| d.stride).collect(),
            offset: 0,
        },
        band_dim,
    ))
}

/// The views of a product block: `load a; load b; mul; store c` (either
/// operand order) in float32 or float64, `c` an `out`/`inout` view
/// aggregated by `add`, `a` and `b` distinct `in` views, no index affine or
/// empty; gives (a, b, c, element type). Constraints are the caller's to
/// judge.
pub(crate) fn product_views(block: &Block) -> Option<(&String, &String, &String, DType)> {
    if block.refs.len() != 3
        || block.stmts.len() != 4
        || block
            .idxs
            .iter()
            .any(|i| i.affine.is_some() || i.range == 0)
    {
        return None;
    }
    let (va, ta, vb, tb, prod, vc, dtype) = match block
        .stmts
        .iter()
        .map(|s| &s.kind)
        .collect::<Vec<_>>()
        .as_slice()
    {
        [StmtKind::Load { from: va, into: ta }, StmtKind::Load { from: vb, into: tb }, StmtKind::Intrinsic {
            op: kernel::Op::Binary(BinOp::Mul),
            inputs,
            into: prod,
            dtype,
        }, StmtKind::Store {
            from: stored,
            into: vc,
        }] if stored == prod && inputs.len() == 2 => {
            let same = |x: &String, y: &String| inputs[0] == *x && inputs[1] == *y;
            if !(same(ta, tb) || same(tb, ta)) || ta == tb || va == vb {
                return None;
            }
            (va, ta, vb, tb, prod, vc, *dtype)
        }
        _ => return None,
    };
    if !matches!(dtype, DType::F32 | DType::F64) || prod == ta || prod == tb {
        return None;
    }
    let out = block.refinement(vc)?;
    let ins_ok = [va, vb]
        .iter()
        .all(|v| block.refinement(v).is_some_and(|r| r.dir == RefDir::In));
    if !matches!(out.dir, RefDir::Out | RefDir::InOut) || out.agg != Agg::Add || !ins_ok {
        return None;
    }
    Some((va, vb, vc, dtype))
}

/// The iterator mapping table of product block `block` (`c += a · b`
/// over its indices), as `ir::opmatch` reads it.
pub(crate) fn product_table(block: &Block, a: Access, b: Access, c: Access) -> Table {
    Table {
        iters: block
            .idxs
            .iter()
            .map(|i| Iter {
                name: i.name.clone(),
                extent: i.range,
            })
            .collect(),
        output: c,
        inputs: vec![a, b],
        combine: Combine::Binary(BinOp::Mul),
        reduction: true,
        guard: Vec::new(),
    }
}

/// The matmul `block` (a child of `root`) computes, if it is one; see the
/// module doc for what is matched.
pub fn spec(block: &Block, root: &Block) -> Option<MatmulSpec> {
    if !block.constraints.is_empty() {
        return None;
    }
    let (va, vb, vc, dtype) = product_views(block)?;
    let (ba, a) = access(block, root, va, dtype)?;
    let (bb, b) = access(block, root, vb, dtype)?;
    let (bc, c) = access(block, root, vc, dtype)?;
    if bc == ba || bc == bb {
        return None;
    }
    let table = product_table(block, a, b, c);
    // The block's first load is A, as the library calls have always taken
    // it (the spec's layouts, and so its chunks, stay what they were).
    let shape = opmatch::matmul_as(&table, 0).ok()?;
    let operand = |buffer: usize, s: &opmatch::Strided| {
        Operand::new(buffer, s.offset, s.row_stride, s.col_stride)
    };
    Some(MatmulSpec {
        dtype,
        m: shape.m,
        n: shape.n,
        k: shape.k,
        batch: shape
            .batch
            .iter()
            .map(|d| BatchDim {
                extent: d.extent,
                stride_a: d.stride_a,
                stride_b: d.stride_b,
                stride_c: d.stride_c,
            })
            .collect(),
        a: operand(ba, &shape.a),
        b: operand(bb, &shape.b),
        c: operand(bc, &shape.c),
    })
}

/// Why a spec could not be run on the given slices.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MatmulError(pub String);

impl fmt::Display for MatmulError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for MatmulError {}

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// The element types the library multiplies: `f32` and `f64`.
pub trait Element:
    sealed::Sealed + faer::traits::ComplexField + Copy + Send + Sync + 'static
{
    const DTYPE: DType;
    const ONE: Self;
    const ZERO: Self;
}

impl Element for f32 {
    const DTYPE: DType = DType::F32;
    const ONE: f32 = 1.0;
    const ZERO: f32 = 0.0;
}

impl Element for f64 {
    const DTYPE: DType = DType::F64;
    const ONE: f64 = 1.0;
    const ZERO: f64 = 0.0;
}

/// The lowest and highest element an operand can touch: `offset` plus each
/// stride times 0 or its extent − 1. `None` on overflow.
fn span(offset: i64, dims: &[(u64, i64)]) -> Option<(i128, i128)> {
    dims.iter().try_fold(
        (i128::from(offset), i128::from(offset)),
        |(lo, hi), &(e, s)| {
            let reach = i128::from(s).checked_mul(i128::from(e.checked_sub(1)?))?;
            Some((lo.checked_add(reach.min(0))?, hi.checked_add(reach.max(0))?))
        },
    )
}

/// Whether distinct positions of a strided layout are distinct elements:
/// sorted by stride, each stride must step over everything the smaller ones
/// reach. (Sufficient, and exact for every layout of a row-major buffer.)
fn injective(dims: &[(u64, i64)]) -> bool {
    let mut dims: Vec<(u64, i64)> = dims.iter().copied().filter(|d| d.0 > 1).collect();
    dims.sort_by_key(|d| d.1.unsigned_abs());
    let mut reach = 0i128;
    for (e, s) in dims {
        let s = i128::from(s.unsigned_abs());
        if s <= reach {
            return false;
        }
        reach += s * (i128::from(e) - 1);
    }
    true
}

/// Checks operands A, B and C, of `extents` (rows, columns) and the batch
/// dimensions `batch`, against slices of `lens` elements: every element
/// they reach lies inside, and C's layout writes no element twice.
pub(crate) fn check_operands(
    ops: [&Operand; 3],
    extents: [[u64; 2]; 3],
    batch: &[BatchDim],
    lens: [usize; 3],
) -> Result<(), MatmulError> {
    let names = ["A", "B", "C"];
    for t in 0..3 {
        let mut dims = vec![
            (extents[t][0], ops[t].row_stride),
            (extents[t][1], ops[t].col_stride),
        ];
        dims.extend(
            batch
                .iter()
                .map(|d| (d.extent, [d.stride_a, d.stride_b, d.stride_c][t])),
        );
        let Some((lo, hi)) = span(ops[t].offset, &dims) else {
            return Err(MatmulError(format!("the layout of {} overflows", names[t])));
        };
        if lo < 0 || hi >= lens[t] as i128 {
            return Err(MatmulError(format!(
                "{} reaches elements {lo} to {hi}, outside its {} elements",
                names[t], lens[t]
            )));
        }
        if t == 2 && !injective(&dims) {
            return Err(MatmulError("C's layout writes some element twice".into()));
        }
    }
    Ok(())
}

/// Checked batch dimensions in the library's integer types: each extent
/// and its A, B, C strides.
pub(crate) fn batch_dims(batch: &[BatchDim]) -> Result<Vec<(usize, [isize; 3])>, MatmulError> {
    let size = |x: u64| usize::try_from(x).map_err(|_| MatmulError("a size is too large".into()));
    let st = |x: i64| isize::try_from(x).map_err(|_| MatmulError("a stride is too large".into()));
    batch
        .iter()
        .map(|d| {
            Ok((
                size(d.extent)?,
                [st(d.stride_a)?, st(d.stride_b)?, st(d.stride_c)?],
            ))
        })
        .collect()
}

/// The A, B, C offsets of batch point `p` from `base`, row-major over the
/// batch dimensions (the last fastest).
pub(crate) fn batch_offsets(
    base: [isize; 3],
    batch: &[(usize, [isize; 3])],
    mut p: usize,
) -> [isize; 3] {
    let mut at = base;
    for (extent, strides) in batch.iter().rev() {
        let i = (p % extent) as isize;
        p /= extent;
        for t in 0..3 {
            at[t] += i * strides[t];
        }
    }
    at
}

/// A checked spec, in the library's integer types.
#[derive(Clone)]
struct Plan {
    m: usize,
    n: usize,
    k: usize,
    /// Per operand A, B, C: row and column strides.
    strides: [[isize; 2]; 3],
    /// Extents and A, B, C strides of the batch dimensions.
    batch: Vec<(usize, [isize; 3])>,
    /// A, B, C offsets of batch point 0.
    base: [isize; 3],
    points: usize,
}

impl Plan {
    /// Checks `spec` against slice lengths; `Ok(None)` when it touches
    /// nothing (an extent is zero).
    fn new(spec: &MatmulSpec, lens: [usize; 3]) -> Result<Option<Plan>, MatmulError> {
        let fail = |m: &str| Err(MatmulError(m.to_string()));
        if spec.batch_points() == 0 || spec.m == 0 || spec.n == 0 || spec.k == 0 {
            return Ok(None);
        }
        // A K beyond both operands' lengths needs zero strides in both (no
        // matched block has them); refusing it bounds the library's work and
        // scratch space. M, N and the batch are bounded by C's injectivity.
        if spec.k > lens[0].max(lens[1]) as u64 {
            return fail("K is longer than A and B");
        }
        check_operands(
            [&spec.a, &spec.b, &spec.c],
            [[spec.m, spec.k], [spec.k, spec.n], [spec.m, spec.n]],
            &spec.batch,
            lens,
        )?;
        let size =
            |x: u64| usize::try_from(x).map_err(|_| MatmulError("a size is too large".into()));
        // Every stride and offset times its extent stays within a slice, so
        // each converts to `isize` (the check above bounds them by its length,
        // or they are multiplied by zero and left out).
        let st =
            |x: i64| isize::try_from(x).map_err(|_| MatmulError("a stride is too large".into()));
        let batch = batch_dims(&spec.batch)?;
        let points = batch.iter().map(|d| d.0).product();
        Ok(Some(Plan {
            m: size(spec.m)?,
            n: size(spec.n)?,
            k: size(spec.k)?,
            strides: [
                [st(spec.a.row_stride)?, st(spec.a.col_stride)?],
                [st(spec.b.row_stride)?, st(spec.b.col_stride)?],
                [st(spec.c.row_stride)?, st(spec.c.col_stride)?],
            ],
            base: [st(spec.a.offset)?, st(spec.b.offset)?, st(spec.c.offset)?],
            batch,
            points,
        }))
    }

    /// The A, B, C offsets of batch point `p`.
    fn offsets(&self, p: usize) -> [usize; 3] {
        // Plan::new proved every reachable offset lies in `0..len`.
        batch_offsets(self.base, &self.batch, p).map(|x| x as usize)
    }
}

impl Plan {
    /// The plan restricted to C's columns `lo..hi` (`lo < hi <= n`): the
    /// same batch points, B's and C's columns from `lo`. It reaches a subset
    /// of the elements this plan reaches, so `Plan::new`'s checks hold for
    /// it, and chunks of distinct columns write disjoint elements of C.
    fn columns(&self, lo: usize, hi: usize) -> Plan {
        let mut sub = self.clone();
        sub.n = hi - lo;
        sub.base[1] += lo as isize * self.strides[1][1];
        sub.base[2] += lo as isize * self.strides[2][1];
        sub
    }

    /// The plan restricted to C's rows `lo..hi` (`lo < hi <= m`), as
    /// [`Plan::columns`] for rows: A's and C's rows from `lo`.
    fn rows(&self, lo: usize, hi: usize) -> Plan {
        let mut sub = self.clone();
        sub.m = hi - lo;
        sub.base[0] += lo as isize * self.strides[0][0];
        sub.base[2] += lo as isize * self.strides[2][0];
        sub
    }

    /// Batch point `p` of the plan as chunks of C for `threads` threads:
    /// about `per_thread` per thread, none narrower than [`MIN_CHUNK`],
    /// along C's columns unless C has more rows.
    fn chunks(&self, threads: usize, per_thread: usize) -> Vec<Plan> {
        let (along_rows, extent) = if self.m > self.n {
            (true, self.m)
        } else {
            (false, self.n)
        };
        let count = (threads * per_thread.max(1)).min(extent / MIN_CHUNK).max(1);
        (0..count)
            .map(|q| {
                let (lo, hi) = (extent * q / count, extent * (q + 1) / count);
                if along_rows {
                    self.rows(lo, hi)
                } else {
                    self.columns(lo, hi)
                }
            })
            .collect()
    }
}

/// Chunks of one large matmul per thread of the pool, unless the kernel
/// options say otherwise (`partitions`): enough that a thread slowed by
/// the machine leaves its share to the others.
pub const CHUNKS_PER_THREAD: usize = 4;

/// The fewest columns (or rows) of C in a chunk: the library's kernels
/// work on panels of a few dozen, and each chunk packs the shared operand
/// again.
const MIN_CHUNK: usize = 64;

/// C's storage, shared by the threads that write disjoint parts of it.
pub(crate) struct Dst<T>(pub(crate) *mut T);

// SAFETY: `Dst` is only built from a `&mut [T]` held for the whole run, and
// the threads sharing it write pairwise disjoint elements (C's layout is
// injective, checked by `Plan::new`), so sharing the pointer races nowhere.
unsafe impl<T: Send> Send for Dst<T> {}
// SAFETY: as for `Send`: concurrent users touch disjoint elements.
unsafe impl<T: Send> Sync for Dst<T> {}

/// One matmul: batch point `p` of `plan` (a checked plan, or a chunk of
/// one), on the calling thread.
fn matmul_point<T: Element>(plan: &Plan, a: &[T], b: &[T], c: &Dst<T>, p: usize, accum: Accum) {
    let [oa, ob, oc] = plan.offsets(p);
    let [[ars, acs], [brs, bcs], [crs, ccs]] = plan.strides;
    // SAFETY: `Plan::new` checked that, for every batch point, every element
    // `offset + i*row_stride + j*col_stride` of A (m×k), B (k×n) and C (m×n)
    // lies inside the slices `a`, `b` and the `&mut` slice behind `c` (a
    // chunk reaches a subset of its plan's elements), so the
    // offsets taken here and every element the views address are in bounds
    // of one allocation; slice pointers are non-null and aligned. C's
    // elements are pairwise distinct (injectivity, also checked), within
    // this point and across points, so the mutable view does not alias
    // itself and concurrent calls for distinct points or distinct chunks
    // write disjoint elements; A and B are read-only and cannot alias C, which comes from
    // a unique borrow. The views live only for this call.
    let (lhs, rhs, dst) = unsafe {
        (
            MatRef::from_raw_parts(a.as_ptr().add(oa), plan.m, plan.k, ars, acs),
            MatRef::from_raw_parts(b.as_ptr().add(ob), plan.k, plan.n, brs, bcs),
            MatMut::from_raw_parts_mut(c.0.add(oc), plan.m, plan.n, crs, ccs),
        )
    };
    faer::linalg::matmul::matmul(dst, accum, lhs, rhs, T::ONE, Par::Seq);
}

/// Matmuls below this many flops are too small to split into chunks
/// profitably, so their batch points run in parallel instead.
const SMALL_FLOPS: usize = 1 << 22;

/// Computes `C += A·B` at every batch point of `spec`, A, B and C being
/// the spec's buffers `a`, `b`, `c`. Checks first that the element type is
/// the spec's, that every element the spec reaches lies inside the slices,
/// and that no element of C is written twice; an error leaves C untouched.
pub fn run<T: Element>(
    spec: &MatmulSpec,
    a: &[T],
    b: &[T],
    c: &mut [T],
) -> Result<(), MatmulError> {
    run_with(spec, a, b, c, true, true, CHUNKS_PER_THREAD)
}

/// [`run`], or with `accumulate` false `C = A·B`: the elements of C the
/// spec reaches are overwritten, so C's old values there need not be
/// initialized (the runtime skips an identity store before a matmul).
/// With `parallel` false every product runs on the calling thread, which
/// then need not be in (or hand work to) any rayon pool; otherwise a large
/// one is split into about `chunks_per_thread` chunks per thread.
pub fn run_with<T: Element>(
    spec: &MatmulSpec,
    a: &[T],
    b: &[T],
    c: &mut [T],
    accumulate: bool,
    parallel: bool,
    chunks_per_thread: usize,
) -> Result<(), MatmulError> {
    let accum = if accumulate {
        Accum::Add
    } else {
        Accum::Replace
    };
    if spec.dtype != T::DTYPE {
        return Err(MatmulError(format!(
            "the spec multiplies {:?}, the slices hold {:?}",
            spec.dtype,
            T::DTYPE
        )));
    }
    let Some(plan) = Plan::new(spec, [a.len(), b.len(), c.len()])? else {
        return Ok(());
    };
    let dst = Dst(c.as_mut_ptr());
    if !parallel {
        for p in 0..plan.points {
            matmul_point(&plan, a, b, &dst, p, accum);
        }
        return Ok(());
    }
    let threads = rayon::current_num_threads();
    let each = plan
        .m
        .saturating_mul(plan.n)
        .saturating_mul(plan.k)
        .saturating_mul(2);
    if batch_parallel(plan.points, each, threads) {
        (0..plan.points)
            .into_par_iter()
            .for_each(|p| matmul_point(&plan, a, b, &dst, p, accum));
    } else {
        let chunks = plan.chunks(threads, chunks_per_thread);
        for p in 0..plan.points {
            chunks
                .par_iter()
                .for_each(|chunk| matmul_point(chunk, a, b, &dst, p, accum));
        }
    }
    Ok(())
}

/// This machine's float32 matmul rate in GFLOP/s: the best of three
/// 2048³ products with the library on the global rayon pool.
pub fn peak_gflops() -> f64 {
    let s: u64 = 2048;
    let len = (s * s) as usize;
    let a: Vec<f32> = (0..len).map(|i| (i % 7) as f32 * 0.25).collect();
    let b: Vec<f32> = (0..len).map(|i| (i % 5) as f32 * 0.5).collect();
    let mut c = vec![0.0f32; len];
    let si = s as i64;
    let spec = MatmulSpec {
        dtype: DType::F32,
        m: s,
        n: s,
        k: s,
        batch: Vec::new(),
        a: Operand::new(0, 0, si, 1),
        b: Operand::new(1, 0, si, 1),
        c: Operand::new(2, 0, si, 1),
    };
    let mut best = 0.0f64;
    for _ in 0..3 {
        let start = std::time::Instant::now();
        if run(&spec, &a, &b, &mut c).is_err() {
            return 0.0;
        }
        let secs = start.elapsed().as_secs_f64();
        if secs > 0.0 {
            best = best.max(spec.flops() as f64 / secs / 1e9);
        }
    }
    best
}
