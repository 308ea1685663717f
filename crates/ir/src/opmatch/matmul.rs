//! (Batched) matmul by OLLIE's iterator mapping table, in any strided
//! layout: `C[batch, m, n] += A[batch, m, k] · B[batch, k, n]`, where each
//! role may be several iterators and every tensor any strided layout.
//!
//! Each iterator is put in a group by the tensors it appears in: the output
//! and input A only is M, the output and B only is N, A and B only is K
//! (the reduction), all three is a batch iterator. An iterator in any other
//! group (one tensor only, or none) is a `Group` mismatch, and so is a
//! table without a K iterator (an elementwise or outer product). Two
//! iterators sharing one dimension of a tensor (a convolution's `h + r`)
//! are a `Stride` mismatch, and so is an M, N or K iterator in two
//! dimensions of one tensor (a diagonal); a batch iterator may be in
//! several dimensions (OLLIE's Expression (2), `D[b-1, b, k, n]`), its
//! stride the flattened one. Iterators of extent 1 are dropped after
//! grouping (and one outside every group is no mismatch): they only ever
//! contribute offset 0. Several M (or N, or K)
//! iterators become one dimension when their strides nest
//! (`stride_outer = stride_inner * extent_inner` in both tensors that have
//! them). M and N iterators that do not nest become batch dimensions (the
//! caller loops over them), each such group also reported in
//! [`MatmulShape::layout`] as a `Layout` mismatch, since a layout change
//! would make one matmul of it; K iterators that do not nest are refused
//! with a `Layout` mismatch, since batch points must write disjoint parts
//! of C.
//!
//! For [`matmul`], input 0 is A unless taking input 1 as A makes C
//! row-major (its rows' stride at least its columns') where input 0 does
//! not; both are the same product, transposed. [`matmul_as`] takes the
//! caller's choice.
//!
//! Requires a table whose dimension strides and offsets are in elements.
//! Guarantees: an accepted shape computes what the table computes, up to
//! the order of the float additions, at every batch point; whether C's
//! layout writes an element twice, and whether every element lies in its
//! buffer, is the caller's to check (the runtime checks both before a run).
//! Never panics; overflow is an `Unsupported` mismatch.

use super::mismatch::Mismatch;
use super::table::{Combine, Group, Table};
use crate::BinOp;

/// An operand's layout as a matrix, in elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Strided {
    /// The element at row 0, column 0 of batch point 0.
    pub offset: i64,
    pub row_stride: i64,
    pub col_stride: i64,
}

/// One batch dimension: the caller loops over `extent` points, moving each
/// operand by its stride.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchDim {
    pub extent: u64,
    pub stride_a: i64,
    pub stride_b: i64,
    pub stride_c: i64,
    /// The table's iterators this dimension stands for, outermost first.
    pub iters: Vec<String>,
}

/// A batched matmul: at every batch point, `C (m×n) += A (m×k) · B (k×n)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MatmulShape {
    pub m: u64,
    pub n: u64,
    pub k: u64,
    /// The iterators merged into M, N and K, outermost first (empty for an
    /// extent of 1).
    pub m_iters: Vec<String>,
    pub n_iters: Vec<String>,
    pub k_iters: Vec<String>,
    pub batch: Vec<BatchDim>,
    pub a: Strided,
    pub b: Strided,
    pub c: Strided,
    /// Which input of the table is A (the other is B).
    pub a_input: usize,
    /// The M or N groups that became batch loops because their iterators
    /// do not nest: `Layout` mismatches, not refusals.
    pub layout: Vec<Mismatch>,
}

/// An iterator with its extent and its strides in a group's two tensors.
#[derive(Clone, Debug)]
struct Entry {
    name: String,
    extent: u64,
    strides: [i64; 2],
}

/// A run of a group's iterators that nest in both tensors: its extent, its
/// innermost strides, its iterators outermost first.
#[derive(Clone, Debug)]
struct Run {
    extent: u64,
    strides: [i64; 2],
    iters: Vec<String>,
}

impl Run {
    fn one() -> Run {
        Run {
            extent: 1,
            strides: [0, 0],
            iters: Vec::new(),
        }
    }
}

/// Splits `entries` into runs that nest contiguously in the tensors
/// `which` selects (both, or one), innermost first. `None` on overflow.
fn chains(mut entries: Vec<Entry>, which: &[usize]) -> Option<Vec<Run>> {
    entries.sort_by_key(|e| (e.strides[0].unsigned_abs(), e.strides[1].unsigned_abs()));
    if which == [1] {
        entries.sort_by_key(|e| e.strides[1].unsigned_abs());
    }
    let mut out: Vec<Run> = Vec::new();
    let mut last: Option<(u64, [i64; 2])> = None;
    for e in entries {
        let nests = last.is_some_and(|(r, ls)| {
            let r = i64::try_from(r).unwrap_or(i64::MAX);
            which
                .iter()
                .all(|&t| ls[t].checked_mul(r) == Some(e.strides[t]))
        });
        match out.last_mut() {
            Some(run) if nests => {
                run.extent = run.extent.checked_mul(e.extent)?;
                run.iters.insert(0, e.name.clone());
            }
            _ => out.push(Run {
                extent: e.extent,
                strides: e.strides,
                iters: vec![e.name.clone()],
            }),
        }
        last = Some((e.extent, e.strides));
    }
    Some(out)
}

/// The `Layout` mismatches of a group whose iterators do not nest in both
/// of `tensors` at once: each tensor in which they do not nest alone, or
/// `tensors[0]` when each alone nests (in different orders).
fn layout(entries: &[Entry], tensors: [&str; 2], group: &Group) -> Vec<Mismatch> {
    let iters: Vec<String> = entries.iter().map(|e| e.name.clone()).collect();
    let mut out: Vec<Mismatch> = (0..2)
        .filter(|&t| chains(entries.to_vec(), &[t]).is_none_or(|runs| runs.len() > 1))
        .map(|t| Mismatch::Layout {
            tensor: tensors[t].to_string(),
            group: group.clone(),
            iters: iters.clone(),
        })
        .collect();
    if out.is_empty() {
        out.push(Mismatch::Layout {
            tensor: tensors[0].to_string(),
            group: group.clone(),
            iters,
        });
    }
    out
}

/// Matches `t` as a batched matmul, A chosen as the module doc says.
pub fn matmul(t: &Table) -> Result<MatmulShape, Vec<Mismatch>> {
    let first = matmul_as(t, 0)?;
    let row_major =
        |s: &MatmulShape| s.c.col_stride.unsigned_abs() <= s.c.row_stride.unsigned_abs();
    if !row_major(&first) && first.m > 1 && first.n > 1 {
        if let Ok(swapped) = matmul_as(t, 1) {
            if row_major(&swapped) {
                return Ok(swapped);
            }
        }
    }
    Ok(first)
}

/// Matches `t` as a batched matmul with input `a` (0 or 1) as A, the
/// other as B: the runtime's form, which keeps its blocks' operand order.
pub fn matmul_as(t: &Table, a: usize) -> Result<MatmulShape, Vec<Mismatch>> {
    if t.inputs.len() != 2 || a > 1 || t.combine != Combine::Binary(BinOp::Mul) || !t.reduction {
        return Err(vec![Mismatch::NotAProduct]);
    }
    let b = 1 - a;
    let overflow = || vec![Mismatch::Unsupported("a stride or offset overflows".into())];
    if !t.guard.is_empty() {
        return Err(vec![Mismatch::Unsupported(
            "a guarded sum is no matmul".into(),
        )]);
    }
    let mut errs = t.non_affine();
    if !errs.is_empty() {
        return Err(errs);
    }
    if let Some(i) = t.iters.iter().find(|i| i.extent == 0) {
        return Err(vec![Mismatch::Unsupported(format!(
            "iterator {} has an empty range",
            i.name
        ))]);
    }
    let (ca, cb, cc) = (&t.inputs[a], &t.inputs[b], &t.output);
    // Two iterators in one dimension: the pattern has each alone.
    for acc in [cc, ca, cb] {
        for (d, sub) in acc.dims.iter().enumerate() {
            let terms = &sub.inner().terms;
            if terms.len() > 1 {
                for (n, c) in terms {
                    let others: Vec<&str> = terms
                        .iter()
                        .filter(|(m, _)| m != n)
                        .map(|(m, _)| m.as_str())
                        .collect();
                    errs.push(Mismatch::Stride {
                        tensor: acc.tensor.clone(),
                        iter: n.clone(),
                        found: *c,
                        want: format!(
                            "{n} alone in dimension {d} of {}, which also holds {}",
                            acc.tensor,
                            others.join(" ")
                        ),
                    });
                }
            }
        }
    }
    let gm = Group::of(true, &[a], 2);
    let gn = Group::of(true, &[b], 2);
    let gk = Group::of(false, &[a, b], 2);
    let gb = Group::of(true, &[0, 1], 2);
    let (mut ms, mut ns, mut ks, mut batch) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut others: Vec<(Group, Vec<String>)> = Vec::new();
    for it in &t.iters {
        let g = t.group(&it.name);
        let stride = |acc: &super::table::Access| acc.flat_stride(&it.name).ok_or_else(overflow);
        let entry = |x: &super::table::Access, y: &super::table::Access| {
            Ok::<_, Vec<Mismatch>>(Entry {
                name: it.name.clone(),
                extent: it.extent,
                strides: [stride(x)?, stride(y)?],
            })
        };
        if g != gb {
            // A matrix dimension's iterator has one place in each tensor.
            for acc in [cc, ca, cb] {
                if acc.dims_of(&it.name).len() > 1 {
                    errs.push(Mismatch::Stride {
                        tensor: acc.tensor.clone(),
                        iter: it.name.clone(),
                        found: acc.flat_stride(&it.name).unwrap_or(0),
                        want: format!("{} in one dimension of {}", it.name, acc.tensor),
                    });
                }
            }
        }
        if g == gm {
            ms.push(entry(cc, ca)?);
        } else if g == gn {
            ns.push(entry(cc, cb)?);
        } else if g == gk {
            ks.push(entry(ca, cb)?);
        } else if g == gb {
            batch.push(BatchDim {
                extent: it.extent,
                stride_a: stride(ca)?,
                stride_b: stride(cb)?,
                stride_c: stride(cc)?,
                iters: vec![it.name.clone()],
            });
        } else if it.extent > 1 {
            // An iterator of extent 1 only ever contributes offset 0,
            // whichever tensors it appears in (a scope's dimension of size
            // 1 that only the output has); any other is no matmul's.
            match others.iter_mut().find(|(h, _)| *h == g) {
                Some((_, v)) => v.push(it.name.clone()),
                None => others.push((g, vec![it.name.clone()])),
            }
        }
    }
    for (group, found) in others {
        errs.push(Mismatch::Group {
            group,
            want: 0,
            found,
        });
    }
    if ks.is_empty() {
        errs.push(Mismatch::Group {
            group: gk.clone(),
            want: 1,
            found: Vec::new(),
        });
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    for group in [&mut ms, &mut ns, &mut ks] {
        group.retain(|e| e.extent > 1);
    }
    batch.retain(|d| d.extent > 1);

    let krun = chains(ks.clone(), &[0, 1]).ok_or_else(overflow)?;
    if krun.len() > 1 {
        return Err(layout(&ks, [&ca.tensor, &cb.tensor], &gk));
    }
    let kk = krun.into_iter().next().unwrap_or_else(Run::one);
    let mut notes = Vec::new();
    // The longest nesting run of M (and N) iterators is the matrix
    // dimension; the others become batch dimensions.
    let mut pick = |group: Vec<Entry>,
                    g: &Group,
                    tensors: [&str; 2],
                    to_batch: &dyn Fn(Run) -> BatchDim|
     -> Result<Run, Vec<Mismatch>> {
        let mut runs = chains(group.clone(), &[0, 1]).ok_or_else(overflow)?;
        if runs.len() > 1 {
            notes.extend(layout(&group, tensors, g));
        }
        let best = (0..runs.len()).max_by_key(|&i| runs[i].extent);
        let chosen = best.map_or_else(Run::one, |i| runs.remove(i));
        batch.extend(runs.into_iter().map(to_batch));
        Ok(chosen)
    };
    let mm = pick(ms, &gm, [&cc.tensor, &ca.tensor], &|r| BatchDim {
        extent: r.extent,
        stride_a: r.strides[1],
        stride_b: 0,
        stride_c: r.strides[0],
        iters: r.iters,
    })?;
    let nn = pick(ns, &gn, [&cc.tensor, &cb.tensor], &|r| BatchDim {
        extent: r.extent,
        stride_a: 0,
        stride_b: r.strides[1],
        stride_c: r.strides[0],
        iters: r.iters,
    })?;
    let offset = |acc: &super::table::Access| acc.flat_offset().ok_or_else(overflow);
    Ok(MatmulShape {
        m: mm.extent,
        n: nn.extent,
        k: kk.extent,
        a: Strided {
            offset: offset(ca)?,
            row_stride: mm.strides[1],
            col_stride: kk.strides[0],
        },
        b: Strided {
            offset: offset(cb)?,
            row_stride: kk.strides[1],
            col_stride: nn.strides[1],
        },
        c: Strided {
            offset: offset(cc)?,
            row_stride: mm.strides[0],
            col_stride: nn.strides[0],
        },
        m_iters: mm.iters,
        n_iters: nn.iters,
        k_iters: kk.iters,
        batch,
        a_input: a,
        layout: notes,
    })
}
