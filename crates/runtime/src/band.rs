//! Library band products: recognizing G2BMM blocks (OLLIE's general to
//! band matrix product, `C[b, i, w] += A[b, i, k] · B[b, i + d·w + c, k]`)
//! in a lowered kernel and running them as blocked dense matmuls with the
//! matmul library.
//!
//! **Matching**: a root child block of the product form the library
//! matmuls have ([`crate::matmul::product_views`]): A and C single-element
//! views of root buffers indexed by one index each (coefficient 1), B the
//! same but for one dimension, its band dimension, indexed `i + d·w + c`;
//! the block's constraints, if any, only keep that dimension inside B
//! (points whose B row falls outside B are skipped, as the VM skips them).
//! The block is described as an iterator mapping table and
//! `ir::opmatch::g2bmm` names the roles; a dilation `d > 0` is required.
//!
//! **Execution**: rows `i` of one residue `r` of the dilation and a block
//! of quotients `q` (`i = r + d·q`) need the B rows `r + c + d·p` for `p`
//! from the block's first `q` to its last plus the band's width: one dense
//! product of the block's A rows by those B rows (both strided by `d`
//! rows, so no copy) gives every pair, of which the band keeps a diagonal
//! strip, written into C (or added, when C was not zeroed for it). With a
//! block of [`BLOCK`] rows and a band of `W` the dense product does
//! `(BLOCK + W − 1) / W` times the band's work (1.09 for OLLIE's Longformer
//! band of 513), at the library's speed instead of a dot product per
//! output. Blocks of all batch points and residues run in parallel on the
//! rayon pool, each a single-threaded library call into its thread's
//! scratch.
//!
//! Requires: a spec from [`spec`] (or built by hand; [`run`] checks it).
//! Guarantees: [`run`] never reads or writes outside the slices it is
//! given and never panics; a spec that does not fit them is an error, and
//! C is then untouched. It computes what the VM computes up to the order
//! of the float additions.

#![allow(unsafe_code)]

use faer::{Accum, MatMut, MatRef, Par};
use ir::opmatch::{self, Access, Band};
use ir::DType;
use kernel::{Block, StmtKind};
use rayon::prelude::*;

use crate::matmul::{access, access_with_band, batch_dims, batch_offsets, check_operands};
use crate::matmul::{product_table, product_views};
use crate::matmul::{BatchDim, Dst, Element};
use crate::matmul::{MatmulError, Operand};

/// A batched G2BMM: at every batch point, `C[i, w] += Σ_k A[i, k] ·
/// B[i + dilation·w + offset, k]`, B's rows outside `0..b_rows` skipped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BandSpec {
    /// `F32` or `F64`.
    pub dtype: DType,
    /// The extents of `i`, `w` and `k`.
    pub rows: u64,
    pub width: u64,
    pub k: u64,
    /// Positive.
    pub dilation: i64,
    pub offset: i64,
    /// The extent of B's band dimension.
    pub b_rows: u64,
    pub batch: Vec<BatchDim>,
    /// Rows `i` and columns `k`.
    pub a: Operand,
    /// B's row 0 of the band dimension (`offset` not included) and columns
    /// `k`.
    pub b: Operand,
    /// Rows `i` and columns `w`.
    pub c: Operand,
}

impl BandSpec {
    /// The number of batch points (1 without batch dimensions).
    pub fn batch_points(&self) -> u64 {
        self.batch
            .iter()
            .fold(1u64, |p, d| p.saturating_mul(d.extent))
    }
}

/// Bands narrower than this stay generated code: the dense product's
/// extra work, `(BLOCK + W − 1) / W`, would not pay.
pub const MIN_WIDTH: u64 = 64;

/// Rows of one residue per dense product: the scratch (`BLOCK` by
/// `BLOCK + W − 1`) stays in L2 for the bands OLLIE measures, and the
/// extra work stays under a tenth. Measured on Longformer's G2BMM (8 x
/// 10000 x 513, 64 columns, dilation 4; `tessera bench`, 2 threads, a busy
/// machine): 16 rows 55–58 ms, 32 rows 44–135 ms, 48 rows 42–48 ms, 64 rows
/// 60–63 ms, 128 rows 122–124 ms.
pub const BLOCK: usize = 48;

/// Tags every root child that [`spec`] matches with `library` and `band`;
/// returns how many it tagged.
pub fn mark(root: &mut Block) -> usize {
    let matched: Vec<usize> = root
        .stmts
        .iter()
        .enumerate()
        .filter_map(|(i, s)| match &s.kind {
            StmtKind::Block(b) if !b.is_library() => {
                spec(b, root).filter(|s| s.width >= MIN_WIDTH).map(|_| i)
            }
            _ => None,
        })
        .collect();
    for &i in &matched {
        if let StmtKind::Block(b) = &mut root.stmts[i].kind {
            b.tags.insert("library".to_string());
            b.tags.insert("band".to_string());
        }
    }
    matched.len()
}

/// The band product `block` (a child of `root`) computes, if it is one;
/// see the module doc for what is matched.
pub fn spec(block: &Block, root: &Block) -> Option<BandSpec> {
    let (va, vb, vc, dtype) = product_views(block)?;
    // B is the operand with the band dimension; A and C are plain.
    let (ba, a, bb, b, band_dim) = match (
        access_with_band(block, root, va, dtype, true)?,
        access_with_band(block, root, vb, dtype, true)?,
    ) {
        ((ba, a, None), (bb, b, Some(d))) | ((bb, b, Some(d)), (ba, a, None)) => (ba, a, bb, b, d),
        _ => return None,
    };
    let (bc, c) = access(block, root, vc, dtype)?;
    if bc == ba || bc == bb {
        return None;
    }
    let table = product_table(block, a, b, c);
    let shape = opmatch::g2bmm(&table).ok()?;
    if shape.kind != Band::G2bmm || shape.a_input != 0 || shape.dilation <= 0 {
        return None;
    }
    let [c, a, b] = [&table.output, &table.inputs[0], &table.inputs[1]];
    let b_rows = b.sizes[band_dim];
    let band_stride = b.strides[band_dim];
    // Only B's band dimension may be cut by constraints, at its ends.
    let view = block.refinement(vb)?;
    let form = &view.access[band_dim];
    let last = i64::try_from(b_rows).ok()? - 1;
    let bounds_only = block.constraints.iter().all(|k| {
        let same = k.terms == form.terms && k.constant == form.constant;
        let flipped = k.terms.len() == form.terms.len()
            && k.terms.iter().all(|(n, v)| form.terms.get(n) == Some(&-v))
            && k.constant.checked_add(form.constant) == Some(last);
        same || flipped
    });
    if !bounds_only {
        return None;
    }
    let stride = |acc: &Access, role: &opmatch::Role| acc.flat_stride(&role.iter);
    let b_base = b
        .flat_offset()?
        .checked_sub(shape.offset.checked_mul(band_stride)?)?;
    Some(BandSpec {
        dtype,
        rows: shape.i.extent,
        width: shape.w.extent,
        k: shape.k.extent,
        dilation: shape.dilation,
        offset: shape.offset,
        b_rows,
        batch: shape
            .batch
            .iter()
            .map(|r| {
                Some(BatchDim {
                    extent: r.extent,
                    stride_a: stride(a, r)?,
                    stride_b: stride(b, r)?,
                    stride_c: stride(c, r)?,
                })
            })
            .collect::<Option<Vec<_>>>()?,
        a: Operand::new(
            ba,
            a.flat_offset()?,
            stride(a, &shape.i)?,
            stride(a, &shape.k)?,
        ),
        b: Operand::new(bb, b_base, band_stride, stride(b, &shape.k)?),
        c: Operand::new(
            bc,
            c.flat_offset()?,
            stride(c, &shape.i)?,
            stride(c, &shape.w)?,
        ),
    })
}

/// A checked spec in the library's integer types.
struct Plan {
    rows: usize,
    width: usize,
    k: usize,
    d: isize,
    offset: isize,
    b_rows: isize,
    /// A (rows, k), B (rows, k), C (rows, w) strides.
    strides: [[isize; 2]; 3],
    batch: Vec<(usize, [isize; 3])>,
    base: [isize; 3],
    points: usize,
}

impl Plan {
    fn new(spec: &BandSpec, lens: [usize; 3]) -> Result<Option<Plan>, MatmulError> {
        let fail = |m: &str| Err(MatmulError(m.to_string()));
        if spec.dilation <= 0 {
            return fail("a band's dilation must be positive");
        }
        if spec.batch_points() == 0
            || spec.rows == 0
            || spec.width == 0
            || spec.k == 0
            || spec.b_rows == 0
        {
            return Ok(None);
        }
        if spec.k > lens[0].max(lens[1]) as u64 {
            return fail("K is longer than A and B");
        }
        check_operands(
            [&spec.a, &spec.b, &spec.c],
            [
                [spec.rows, spec.k],
                [spec.b_rows, spec.k],
                [spec.rows, spec.width],
            ],
            &spec.batch,
            lens,
        )?;
        let size =
            |x: u64| usize::try_from(x).map_err(|_| MatmulError("a size is too large".into()));
        let st =
            |x: i64| isize::try_from(x).map_err(|_| MatmulError("a stride is too large".into()));
        let batch = batch_dims(&spec.batch)?;
        let points = batch.iter().map(|d| d.0).product();
        Ok(Some(Plan {
            rows: size(spec.rows)?,
            width: size(spec.width)?,
            k: size(spec.k)?,
            d: st(spec.dilation)?,
            offset: st(spec.offset)?,
            b_rows: st(
                i64::try_from(spec.b_rows).map_err(|_| MatmulError("B is too large".into()))?
            )?,
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
    fn offsets(&self, p: usize) -> [isize; 3] {
        batch_offsets(self.base, &self.batch, p)
    }

    /// Every task: (batch point, residue, first quotient, end quotient).
    fn tasks(&self) -> Vec<(usize, isize, isize, isize)> {
        let mut out = Vec::new();
        for p in 0..self.points {
            for r in 0..self.d.min(self.rows as isize) {
                // Rows r, r + d, ... below `rows`.
                let count = (self.rows as isize - r + self.d - 1) / self.d;
                let mut q0 = 0;
                while q0 < count {
                    let q1 = (q0 + BLOCK as isize).min(count);
                    out.push((p, r, q0, q1));
                    q0 = q1;
                }
            }
        }
        out
    }
}

/// `ceil(a / b)` for `b > 0`.
fn ceil_div(a: isize, b: isize) -> isize {
    -((-a).div_euclid(b))
}

/// One task of `plan`: rows `r + d·q`, `q` in `q0..q1`, of batch point
/// `p`, added into C, or with `accumulate` false written into it (zeros
/// where the band leaves B).
fn band_block<T: Element + std::ops::AddAssign>(
    plan: &Plan,
    a: &[T],
    b: &[T],
    c: &Dst<T>,
    (p, r, q0, q1): (usize, isize, isize, isize),
    accumulate: bool,
    scratch: &mut Vec<T>,
) {
    let [oa, ob, oc] = plan.offsets(p);
    let d = plan.d;
    // The B rows r + offset + d·j this block pairs with, j = q + w, kept
    // inside B.
    let first = (r + plan.offset)
        .checked_neg()
        .map_or(q0, |x| ceil_div(x, d));
    let lo = q0.max(first);
    let hi =
        (q1 - 1 + plan.width as isize - 1).min((plan.b_rows - 1 - r - plan.offset).div_euclid(d));
    let [[ars, acs], [brs, bcs], [crs, ccs]] = plan.strides;
    // Row `q` of C: the strip `strip` (scratch's columns for `w` in
    // `w_lo..w_lo + strip.len()`) added, or written with zeros elsewhere.
    let put = |q: isize, w_lo: isize, strip: &[T]| {
        let first = oc + (r + d * q) * crs;
        let (w_lo, width) = (w_lo as usize, plan.width);
        if ccs == 1 {
            // SAFETY: row `r + d·q < rows`, columns `0..width` of C at this
            // batch point lie inside C's slice (checked by `Plan::new`)
            // and, with a column stride of 1, are `width` consecutive
            // elements; C's layout is injective and the tasks cover
            // distinct (batch point, row) pairs, so no other thread touches
            // them while the slice lives.
            let row = unsafe { std::slice::from_raw_parts_mut(c.0.offset(first), width) };
            let (before, rest) = row.split_at_mut(w_lo);
            let (band, after) = rest.split_at_mut(strip.len());
            if accumulate {
                band.iter_mut().zip(strip).for_each(|(x, y)| *x += *y);
            } else {
                before.fill(T::ZERO);
                band.copy_from_slice(strip);
                after.fill(T::ZERO);
            }
        } else {
            for w in 0..width {
                let s = w
                    .checked_sub(w_lo)
                    .and_then(|j| strip.get(j))
                    .copied()
                    .unwrap_or(T::ZERO);
                // SAFETY: as above, element by element.
                unsafe {
                    let at = &mut *c.0.offset(first + w as isize * ccs);
                    if accumulate {
                        *at += s;
                    } else {
                        *at = s;
                    }
                }
            }
        }
    };
    if lo > hi {
        if !accumulate {
            for q in q0..q1 {
                put(q, 0, &[]);
            }
        }
        return;
    }
    let (m, n) = ((q1 - q0) as usize, (hi - lo + 1) as usize);
    // Every element is overwritten by the product (`Accum::Replace`).
    scratch.resize(m * n, T::ZERO);
    // SAFETY: `Plan::new` checked that every element of A (rows × k), of B
    // (b_rows × k) and of C (rows × width) at every batch point lies inside
    // the slices. The A rows read here are `r + d·q < rows`, the B rows
    // `r + offset + d·j` with `j` in `lo..=hi`, which the bounds above keep
    // in `0..b_rows`, so every address the views form is inside `a` and
    // `b`; the slices' pointers are non-null and aligned, and the views are
    // read-only and live only for this call.
    let (lhs, rhs) = unsafe {
        (
            MatRef::from_raw_parts(
                a.as_ptr().offset(oa + (r + d * q0) * ars),
                m,
                plan.k,
                d * ars,
                acs,
            ),
            MatRef::from_raw_parts(
                b.as_ptr().offset(ob + (r + plan.offset + d * lo) * brs),
                plan.k,
                n,
                bcs,
                d * brs,
            ),
        )
    };
    let dst = MatMut::from_row_major_slice_mut(&mut scratch[..m * n], m, n);
    faer::linalg::matmul::matmul(dst, Accum::Replace, lhs, rhs, T::ONE, Par::Seq);
    for q in q0..q1 {
        // Column `w` pairs with scratch column `q + w - lo` when that is
        // one: `w` from `max(lo - q, 0)` to `min(hi - q, width - 1)`.
        let w_lo = (lo - q).max(0);
        let w_hi = (hi - q).min(plan.width as isize - 1);
        let row = &scratch[(q - q0) as usize * n..][..n];
        let strip = if w_lo <= w_hi {
            &row[(q + w_lo - lo) as usize..=(q + w_hi - lo) as usize]
        } else {
            &[]
        };
        put(q, w_lo.min(plan.width as isize), strip);
    }
}

/// Computes the band product of `spec` into C (adding onto it, or with
/// `accumulate` false overwriting every element the spec reaches), A, B
/// and C being the spec's buffers; with `parallel` the blocks run on the
/// rayon pool. Checks first that the element type is the spec's, that
/// every element the spec reaches lies inside the slices and that no
/// element of C is written twice; an error leaves C untouched.
pub fn run<T: Element + std::ops::AddAssign>(
    spec: &BandSpec,
    a: &[T],
    b: &[T],
    c: &mut [T],
    accumulate: bool,
    parallel: bool,
) -> Result<(), MatmulError> {
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
    let tasks = plan.tasks();
    if parallel {
        tasks.into_par_iter().for_each_init(Vec::new, |scratch, t| {
            band_block(&plan, a, b, &dst, t, accumulate, scratch)
        });
    } else {
        let mut scratch = Vec::new();
        for t in tasks {
            band_block(&plan, a, b, &dst, t, accumulate, &mut scratch);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ceil_div_rounds_up_for_both_signs() {
        assert_eq!(ceil_div(7, 2), 4);
        assert_eq!(ceil_div(-7, 2), -3);
        assert_eq!(ceil_div(6, 3), 2);
        assert_eq!(ceil_div(-6, 3), -2);
    }

    #[test]
    fn a_spec_reaching_outside_c_is_refused_and_c_untouched() {
        let spec = BandSpec {
            dtype: DType::F32,
            rows: 4,
            width: 3,
            k: 2,
            dilation: 1,
            offset: -1,
            b_rows: 4,
            batch: Vec::new(),
            a: Operand::new(0, 0, 2, 1),
            b: Operand::new(1, 0, 2, 1),
            c: Operand::new(2, 0, 3, 1),
        };
        let (a, b) = (vec![1.0f32; 8], vec![1.0f32; 8]);
        let mut c = vec![0.0f32; 11];
        assert!(run(&spec, &a, &b, &mut c, true, false).is_err());
        assert!(c.iter().all(|&x| x == 0.0));
    }

    /// The band product by definition, for comparison.
    fn naive(spec: &BandSpec, a: &[f64], b: &[f64], c: &mut [f64], accumulate: bool) {
        for i in 0..spec.rows as i64 {
            for w in 0..spec.width as i64 {
                let j = i + spec.dilation * w + spec.offset;
                let mut sum = 0.0;
                if (0..spec.b_rows as i64).contains(&j) {
                    for k in 0..spec.k as i64 {
                        let x = a[(spec.a.offset + i * spec.a.row_stride + k * spec.a.col_stride)
                            as usize];
                        let y = b[(spec.b.offset + j * spec.b.row_stride + k * spec.b.col_stride)
                            as usize];
                        sum += x * y;
                    }
                }
                let at = (spec.c.offset + i * spec.c.row_stride + w * spec.c.col_stride) as usize;
                c[at] = if accumulate { c[at] + sum } else { sum };
            }
        }
    }

    #[test]
    fn blocked_products_give_the_band_in_any_layout_of_c() {
        let (rows, width, k, b_rows) = (70u64, 65u64, 3u64, 75u64);
        // C row-major, then column-major (a column stride other than 1).
        for (c_rows, c_cols) in [(width as i64, 1), (1, rows as i64)] {
            for (dilation, offset) in [(1, -32), (2, -64), (3, 5)] {
                for accumulate in [true, false] {
                    let spec = BandSpec {
                        dtype: DType::F64,
                        rows,
                        width,
                        k,
                        dilation,
                        offset,
                        b_rows,
                        batch: Vec::new(),
                        a: Operand::new(0, 0, k as i64, 1),
                        b: Operand::new(1, 0, k as i64, 1),
                        c: Operand::new(2, 0, c_rows, c_cols),
                    };
                    let a: Vec<f64> = (0..rows * k).map(|x| (x % 7) as f64 - 3.0).collect();
                    let b: Vec<f64> = (0..b_rows * k).map(|x| (x % 5) as f64 - 2.0).collect();
                    let start: Vec<f64> = (0..rows * width).map(|x| (x % 3) as f64).collect();
                    let mut got = start.clone();
                    let mut want = start;
                    run(&spec, &a, &b, &mut got, accumulate, false).expect("run");
                    naive(&spec, &a, &b, &mut want, accumulate);
                    assert_eq!(got, want, "C strides {c_rows}, {c_cols}, dilation {dilation}, offset {offset}, accumulate {accumulate}");
                }
            }
        }
    }
}
