//! Band matrix products by OLLIE's iterator mapping table: G2BMM (general
//! to band) `O[b, i, w] += A[b, i, k] · B[b, i + d*w + c, k]` and GBMM
//! (band to general) `O[b, i, j] += A[b, i, w] · B[b, i + d*w + c, j]`, as
//! the prelude's `g2bmm` and `gbmm` write them, each tensor's dimensions in
//! any order and any number of batch iterators.
//!
//! The groups (Table 2): all three tensors `b... i`, output and B only one
//! iterator (G2BMM's `w`, GBMM's `j`), A and B only one (G2BMM's `k`,
//! GBMM's `w`), output and A only none. The band iterator `w` shares one
//! dimension of B with `i` (`i` with coefficient 1, `w` with the dilation
//! `d`, the constant the offset `c`); every other dimension holds one
//! iterator alone with coefficient 1 and no constant. Either input may be
//! A (B is the one with the band dimension).
//!
//! Requires a table with strides in elements. Guarantees: an accepted shape
//! names every iterator's role, the dilation, the offset and each tensor's
//! dimension order; reads outside B are skipped by the reduction, as the
//! band's ends are. Never panics.

use super::conv::{either, role, Role};
use super::mismatch::Mismatch;
use super::table::{Access, Combine, Group, Table};
use crate::BinOp;

/// Which band product.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Band {
    /// General to band: the output holds the band (`w`), `k` is summed.
    G2bmm,
    /// Band to general: A holds the band (`w`, summed), the output `j`.
    Gbmm,
}

/// Each tensor's dimension order: `B` a batch iterator, `I` the row
/// iterator (in B, the band dimension `i + d*w + c`), `W` the band
/// iterator, `K` the third iterator (G2BMM's `k`, GBMM's `j`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BandLayout {
    pub output: String,
    pub a: String,
    pub b: String,
}

/// A matched G2BMM or GBMM.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BandShape {
    pub kind: Band,
    /// Which of the table's inputs is A (the other is B).
    pub a_input: usize,
    pub batch: Vec<Role>,
    pub i: Role,
    /// The band iterator.
    pub w: Role,
    /// G2BMM's reduction iterator `k`; GBMM's output column `j`.
    pub k: Role,
    pub dilation: i64,
    pub offset: i64,
    pub layout: BandLayout,
}

/// Matches `t` as a G2BMM; see the module doc.
pub fn g2bmm(t: &Table) -> Result<BandShape, Vec<Mismatch>> {
    either(band_as(t, 0, Band::G2bmm), || band_as(t, 1, Band::G2bmm))
}

/// Matches `t` as a GBMM; see the module doc.
pub fn gbmm(t: &Table) -> Result<BandShape, Vec<Mismatch>> {
    either(band_as(t, 0, Band::Gbmm), || band_as(t, 1, Band::Gbmm))
}

/// The band product `kind` with input `a` as A.
fn band_as(t: &Table, a: usize, kind: Band) -> Result<BandShape, Vec<Mismatch>> {
    let b = 1 - a;
    if t.inputs.len() != 2 || t.combine != Combine::Binary(BinOp::Mul) || !t.reduction {
        return Err(vec![Mismatch::NotAProduct]);
    }
    let (ao, aa, ab) = (&t.output, &t.inputs[a], &t.inputs[b]);
    let mut errs = Vec::new();
    if !t.guard.is_empty() {
        errs.push(Mismatch::Unsupported(
            "a guarded sum is no band product".into(),
        ));
    }
    errs.extend(t.non_affine());
    if !errs.is_empty() {
        return Err(errs);
    }
    let all = Group::of(true, &[0, 1], 2);
    let ob = Group::of(true, &[b], 2);
    let abg = Group::of(false, &[0, 1], 2);
    let oa = Group::of(true, &[a], 2);
    let found = t.fill(vec![all.clone(), ob.clone(), abg.clone(), oa.clone()]);
    for (k, (group, iters)) in found.iter().enumerate() {
        // The first three groups want one iterator each (the all-three
        // group at least one: `i` and any batch), the others none.
        let want = usize::from(k < 3);
        let bad = if k == 0 {
            iters.is_empty()
        } else {
            iters.len() != want
        };
        if bad {
            errs.push(Mismatch::Group {
                group: group.clone(),
                want,
                found: iters.clone(),
            });
        }
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    let (band, third) = match kind {
        Band::G2bmm => (found[1].1[0].clone(), found[2].1[0].clone()),
        Band::Gbmm => (found[2].1[0].clone(), found[1].1[0].clone()),
    };
    // B's band dimension: the only one holding two iterators.
    let shared: Vec<usize> = (0..ab.dims.len())
        .filter(|&d| ab.dims[d].inner().terms.len() > 1)
        .collect();
    let [bd] = shared.as_slice() else {
        return Err(vec![Mismatch::Unsupported(format!(
            "{} has {} dimensions of several iterators, a band product one",
            ab.tensor,
            shared.len()
        ))]);
    };
    let form = ab.dims[*bd].inner();
    let rows: Vec<&(String, i64)> = form
        .terms
        .iter()
        .filter(|(v, _)| *v != band && found[0].1.contains(v))
        .collect();
    let dilation = form.coeff(&band);
    let i = match rows.as_slice() {
        [(i, 1)] if form.terms.len() == 2 && dilation != 0 => i.clone(),
        _ => {
            for (v, c) in &form.terms {
                errs.push(Mismatch::Stride {
                    tensor: ab.tensor.clone(),
                    iter: v.clone(),
                    found: *c,
                    want: format!(
                        "dimension {bd} of {} to be a row iterator (coefficient 1) plus the band iterator {band}",
                        ab.tensor
                    ),
                });
            }
            return Err(errs);
        }
    };
    let letter = |v: &str| {
        if v == i {
            'I'
        } else if v == band {
            'W'
        } else if v == third {
            'K'
        } else {
            'B'
        }
    };
    let mut layouts = Vec::new();
    for acc in [ao, aa, ab] {
        let mut l = String::new();
        for (d, sub) in acc.dims.iter().enumerate() {
            if std::ptr::eq(acc, ab) && d == *bd {
                l.push('I');
                continue;
            }
            errs.extend(check_alone(acc, d));
            if let Some((v, _)) = sub.inner().single() {
                l.push(letter(v));
            }
        }
        layouts.push(l);
    }
    // Every iterator in exactly one dimension of each tensor that has it.
    for it in &t.iters {
        for acc in [ao, aa, ab] {
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
    if !errs.is_empty() {
        return Err(errs);
    }
    let batch = found[0]
        .1
        .iter()
        .filter(|v| **v != i)
        .map(|v| role(t, v))
        .collect();
    let [lo, la, lb]: [String; 3] = layouts
        .try_into()
        .unwrap_or_else(|_| [String::new(), String::new(), String::new()]);
    Ok(BandShape {
        kind,
        a_input: a,
        batch,
        i: role(t, &i),
        w: role(t, &band),
        k: role(t, &third),
        dilation,
        offset: form.constant,
        layout: BandLayout {
            output: lo,
            a: la,
            b: lb,
        },
    })
}

/// The mismatch of dimension `d` of `acc` if it is not one iterator alone
/// with coefficient 1 and no constant.
fn check_alone(acc: &Access, d: usize) -> Option<Mismatch> {
    let form = acc.dims[d].inner();
    match form.single() {
        Some((_, 1)) if form.constant == 0 => None,
        Some((v, c)) if c != 1 => Some(Mismatch::Stride {
            tensor: acc.tensor.clone(),
            iter: v.to_string(),
            found: c,
            want: "1".into(),
        }),
        _ => Some(Mismatch::Unsupported(format!(
            "dimension {d} of {} is {form}, not one iterator alone",
            acc.tensor
        ))),
    }
}
