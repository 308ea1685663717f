//! 2-D convolution by OLLIE's iterator mapping table:
//! `Y[n, f, oh, ow] += X[n, c, oh*sh + kh*dh - ph, ow*sw + kw*dw - pw] ·
//! W[f, c, kh, kw]`, each tensor's dimensions in any order.
//!
//! The groups (Table 2): output and input only is `n oh ow`, output and
//! weight only is `f`, input and weight only is `c kh kw`, and no iterator
//! is in all three; a group with other counts is a `Group` mismatch. Then
//! the iterators are placed (OLLIE's step 3): in the input, `n` and `c`
//! each alone in a dimension, and each of `oh`, `ow` sharing a dimension
//! with one of `kh`, `kw`, both coefficients positive (a stride and a
//! dilation), the constant minus the begin padding; everything else alone
//! with coefficient 1 and no constant. Of the two spatial dimensions the
//! earlier one in the input is the height. Either input may be the
//! weight. A guard may only restate the input's spatial bounds. Grouped convolutions are refused: their channel subscript is a
//! floor quotient (`f * G / F * CG + c`), not affine.
//!
//! The same placement with a floor-divided spatial subscript and a
//! negative kernel coefficient is the transposed convolution
//! (`conv_transpose.rs`), which shares [`place`].
//!
//! Requires a table with strides in elements. Guarantees: an accepted shape
//! names every iterator's role, the strides, dilations and paddings, and
//! each tensor's dimension order; out-of-bounds reads are the padding (the
//! reduction skips them). Never panics.

use super::mismatch::Mismatch;
use super::table::{Access, Affine, Combine, Condition, Group, Table};
use crate::BinOp;

/// An iterator of the table in an operator role, with its extent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Role {
    pub iter: String,
    pub extent: u64,
}

/// Each tensor's dimension order: letters `N` (batch), `C` (channel: the
/// output's are its out-channels), `H`, `W` for the output and input; `F`
/// (out-channel), `C` (in-channel), `H`, `W` for the weight. `NCHW`,
/// `NCHW`, `FCHW` is the ONNX layout of a convolution.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConvLayout {
    pub output: String,
    pub input: String,
    pub weight: String,
}

/// A matched 2-D convolution (or transposed convolution).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConvShape {
    /// Which of the table's inputs is the input (the other is the weight).
    pub input: usize,
    pub weight: usize,
    pub n: Role,
    pub f: Role,
    pub c: Role,
    pub oh: Role,
    pub ow: Role,
    pub kh: Role,
    pub kw: Role,
    /// Height, width.
    pub stride: [i64; 2],
    pub dilation: [i64; 2],
    /// The begin paddings (height, width).
    pub pad: [i64; 2],
    /// The end paddings: for a convolution how far the last window reaches
    /// past the input (negative when it stops short); for a transposed
    /// convolution the end padding minus the output padding.
    pub pad_end: [i64; 2],
    pub layout: ConvLayout,
}

/// One spatial dimension of the input as a placement found it.
#[derive(Clone, Debug)]
pub(crate) struct Spatial {
    /// The input's dimension.
    pub dim: usize,
    /// The output iterator and the kernel iterator sharing it.
    pub out: String,
    pub kernel: String,
    /// Their coefficients, the constant and the divisor of the subscript.
    pub out_coeff: i64,
    pub kernel_coeff: i64,
    pub constant: i64,
    pub divisor: i64,
    /// The form under the division.
    pub inner: Affine,
}

/// The roles of a convolution-like table with input `x` and weight `w`.
#[derive(Clone, Debug)]
pub(crate) struct Placement {
    pub n: String,
    pub f: String,
    pub c: String,
    /// Height, width.
    pub spatial: [Spatial; 2],
    pub layout: ConvLayout,
}

/// A dimension of `acc` that must be `iter` alone, coefficient 1, no
/// constant: the mismatch when it is not.
fn alone(acc: &Access, d: usize, iter: &str) -> Option<Mismatch> {
    let sub = &acc.dims[d];
    match (sub.affine(), sub.inner().single()) {
        (Some(a), Some((_, 1))) if a.constant == 0 => None,
        (Some(_), Some((_, c))) if c != 1 => Some(Mismatch::Stride {
            tensor: acc.tensor.clone(),
            iter: iter.to_string(),
            found: c,
            want: "1".into(),
        }),
        _ => Some(Mismatch::Unsupported(format!(
            "dimension {d} of {} is {sub}, not {iter} alone",
            acc.tensor
        ))),
    }
}

/// Places the iterators of `t` as a convolution with input `x` and weight
/// `1 - x` (see the module doc); the spatial subscripts' coefficients and
/// divisors are left for the caller to check.
pub(crate) fn place(t: &Table, x: usize) -> Result<Placement, Vec<Mismatch>> {
    let w = 1 - x;
    if t.inputs.len() != 2 || t.combine != Combine::Binary(BinOp::Mul) || !t.reduction {
        return Err(vec![Mismatch::NotAProduct]);
    }
    if let Some(i) = t.iters.iter().find(|i| i.extent == 0) {
        return Err(vec![Mismatch::Unsupported(format!(
            "iterator {} has an empty range",
            i.name
        ))]);
    }
    let (ax, aw, ay) = (&t.inputs[x], &t.inputs[w], &t.output);
    let mut errs = Vec::new();
    for acc in [ay, ax, aw] {
        if acc.dims.len() != 4 {
            errs.push(Mismatch::Unsupported(format!(
                "{} has {} dimensions, a 2-D convolution's tensors 4",
                acc.tensor,
                acc.dims.len()
            )));
        }
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    let gnhw = Group::of(true, &[x], 2);
    let gf = Group::of(true, &[w], 2);
    let gcrs = Group::of(false, &[x, w], 2);
    let found = t.fill(vec![gnhw.clone(), gf.clone(), gcrs.clone()]);
    for (k, (group, iters)) in found.iter().enumerate() {
        let want = [3, 1, 3].get(k).copied().unwrap_or(0);
        if iters.len() != want {
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
    let (nhw, fs, crs) = (&found[0].1, &found[1].1, &found[2].1);
    let f = fs[0].clone();

    // The output: each dimension one iterator alone.
    for d in 0..4 {
        let Some((v, _)) = ay.dims[d].inner().single() else {
            errs.push(Mismatch::Unsupported(format!(
                "dimension {d} of {} is {}, not one iterator",
                ay.tensor, ay.dims[d]
            )));
            continue;
        };
        errs.extend(alone(ay, d, v));
    }
    // The input: n and c alone, the spatial dimensions shared.
    let (mut n, mut c) = (None, None);
    let mut spatial = Vec::new();
    let mut in_layout = String::new();
    for (d, sub) in ax.dims.iter().enumerate() {
        let inner = sub.inner();
        let outs: Vec<&(String, i64)> = inner
            .terms
            .iter()
            .filter(|(v, _)| nhw.contains(v))
            .collect();
        let kers: Vec<&(String, i64)> = inner
            .terms
            .iter()
            .filter(|(v, _)| crs.contains(v))
            .collect();
        match (outs.as_slice(), kers.as_slice(), inner.terms.len()) {
            ([(v, _)], [], 1) if n.is_none() => {
                errs.extend(alone(ax, d, v));
                n = Some(v.clone());
                in_layout.push('N');
            }
            ([], [(v, _)], 1) if c.is_none() => {
                errs.extend(alone(ax, d, v));
                c = Some(v.clone());
                in_layout.push('C');
            }
            ([(o, oc)], [(k, kc)], 2) => {
                in_layout.push(if spatial.is_empty() { 'H' } else { 'W' });
                spatial.push(Spatial {
                    dim: d,
                    out: o.clone(),
                    kernel: k.clone(),
                    out_coeff: *oc,
                    kernel_coeff: *kc,
                    constant: inner.constant,
                    divisor: sub.divisor(),
                    inner: inner.clone(),
                });
            }
            _ => {
                // Name the iterators that share the dimension against the
                // pattern, so a search knows which to separate.
                for (v, coeff) in &inner.terms {
                    errs.push(Mismatch::Stride {
                        tensor: ax.tensor.clone(),
                        iter: v.clone(),
                        found: *coeff,
                        want: format!(
                            "dimension {d} of {} to be n or c alone, or one output and one kernel iterator",
                            ax.tensor
                        ),
                    });
                }
                if inner.terms.is_empty() {
                    errs.push(Mismatch::Unsupported(format!(
                        "dimension {d} of {} is the constant {}",
                        ax.tensor, inner.constant
                    )));
                }
            }
        }
    }
    let (Some(n), Some(c), Ok(spatial)) = (n, c, <[Spatial; 2]>::try_from(spatial)) else {
        if errs.is_empty() {
            errs.push(Mismatch::Unsupported(format!(
                "{} does not have a batch, a channel and two spatial dimensions",
                ax.tensor
            )));
        }
        return Err(errs);
    };
    if spatial[0].out == spatial[1].out || spatial[0].kernel == spatial[1].kernel {
        errs.push(Mismatch::Unsupported(format!(
            "the spatial dimensions of {} repeat an iterator",
            ax.tensor
        )));
    }
    let letter = |v: &str| {
        if v == n {
            'N'
        } else if v == f {
            'C'
        } else if v == spatial[0].out {
            'H'
        } else if v == spatial[1].out {
            'W'
        } else {
            '?'
        }
    };
    let out_layout: String = (0..4)
        .map(|d| ay.dims[d].inner().single().map_or('?', |(v, _)| letter(v)))
        .collect();
    // The weight: f, c, kh, kw alone.
    let mut w_layout = String::new();
    for d in 0..4 {
        let Some((v, _)) = aw.dims[d].inner().single() else {
            for (v, coeff) in &aw.dims[d].inner().terms {
                errs.push(Mismatch::Stride {
                    tensor: aw.tensor.clone(),
                    iter: v.clone(),
                    found: *coeff,
                    want: format!("{v} alone in a dimension of {}", aw.tensor),
                });
            }
            continue;
        };
        errs.extend(alone(aw, d, v));
        w_layout.push(if v == f {
            'F'
        } else if v == c {
            'C'
        } else if v == spatial[0].kernel {
            'H'
        } else if v == spatial[1].kernel {
            'W'
        } else {
            '?'
        });
    }
    if out_layout.contains('?') || w_layout.contains('?') || w_layout.len() != 4 {
        errs.push(Mismatch::Unsupported(format!(
            "{} and {} do not each hold every role once",
            ay.tensor, aw.tensor
        )));
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    Ok(Placement {
        n,
        f,
        c,
        spatial,
        layout: ConvLayout {
            output: out_layout,
            input: in_layout,
            weight: w_layout,
        },
    })
}

/// The role of `iter` in `t`.
pub(crate) fn role(t: &Table, iter: &str) -> Role {
    Role {
        iter: iter.to_string(),
        extent: t.extent(iter).unwrap_or(0),
    }
}

/// The better of two attempts (the two operand orders): the first
/// success, else the attempt whose operand order fits the operator's
/// groups better (fewer `Group` mismatches: its other mismatches are about
/// the right iterators), then the one of smaller [`super::distance`], then
/// the first.
pub(crate) fn either<T>(
    first: Result<T, Vec<Mismatch>>,
    second: impl FnOnce() -> Result<T, Vec<Mismatch>>,
) -> Result<T, Vec<Mismatch>> {
    let rank = |e: &[Mismatch]| {
        let groups = e
            .iter()
            .filter(|m| matches!(m, Mismatch::Group { .. }))
            .count();
        (groups, super::distance(e))
    };
    match first {
        Ok(s) => Ok(s),
        Err(e1) => match second() {
            Ok(s) => Ok(s),
            Err(e2) if rank(&e2) < rank(&e1) => Err(e2),
            Err(_) => Err(e1),
        },
    }
}

/// The extent of the input's dimension `d`, as an `i64`.
pub(crate) fn size(acc: &Access, d: usize) -> Option<i64> {
    i64::try_from(*acc.sizes.get(d)?).ok()
}

/// Matches `t` as a 2-D convolution; see the module doc.
pub fn conv(t: &Table) -> Result<ConvShape, Vec<Mismatch>> {
    either(conv_as(t, 0), || conv_as(t, 1))
}

/// The convolution with input `x`.
fn conv_as(t: &Table, x: usize) -> Result<ConvShape, Vec<Mismatch>> {
    let p = place(t, x)?;
    let ax = &t.inputs[x];
    let mut errs = Vec::new();
    // A guard may only restate the input's bounds in the spatial
    // dimensions, which the reduction's skipping of out-of-bounds reads
    // implies anyway.
    let mut bounds = Vec::new();
    for s in &p.spatial {
        bounds.push(Condition::NonNegative(s.inner.clone()));
        if let Some(below) = size(ax, s.dim)
            .and_then(|h| h.checked_sub(1))
            .and_then(|top| Affine::constant(top).add_scaled(&s.inner, -1))
        {
            bounds.push(Condition::NonNegative(below));
        }
    }
    for cond in t.guard.iter().filter(|c| !bounds.contains(c)) {
        errs.push(Mismatch::Unsupported(format!(
            "the guard condition {cond} is not a convolution's"
        )));
    }
    let mut pad_end = [0i64; 2];
    for (s, end) in p.spatial.iter().zip(&mut pad_end) {
        if s.divisor != 1 {
            errs.push(Mismatch::Unsupported(format!(
                "dimension {} of {} is a floor quotient",
                s.dim, ax.tensor
            )));
        }
        for (iter, coeff) in [(&s.out, s.out_coeff), (&s.kernel, s.kernel_coeff)] {
            if coeff <= 0 {
                errs.push(Mismatch::Stride {
                    tensor: ax.tensor.clone(),
                    iter: iter.clone(),
                    found: coeff,
                    want: "a positive coefficient".into(),
                });
            }
        }
        // The last element the windows read, past the input's last.
        let last = (|| {
            let reach = |v: &str, c: i64| {
                i64::try_from(t.extent(v)?.checked_sub(1)?)
                    .ok()?
                    .checked_mul(c)
            };
            reach(&s.out, s.out_coeff)?
                .checked_add(reach(&s.kernel, s.kernel_coeff)?)?
                .checked_add(s.constant)?
                .checked_sub(size(ax, s.dim)?.checked_sub(1)?)
        })();
        match last {
            Some(v) => *end = v,
            None => errs.push(Mismatch::Unsupported("a padding overflows".into())),
        }
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    let [h, w] = &p.spatial;
    Ok(ConvShape {
        input: x,
        weight: 1 - x,
        n: role(t, &p.n),
        f: role(t, &p.f),
        c: role(t, &p.c),
        oh: role(t, &h.out),
        ow: role(t, &w.out),
        kh: role(t, &h.kernel),
        kw: role(t, &w.kernel),
        stride: [h.out_coeff, w.out_coeff],
        dilation: [h.kernel_coeff, w.kernel_coeff],
        pad: [-h.constant, -w.constant],
        pad_end,
        layout: p.layout,
    })
}
