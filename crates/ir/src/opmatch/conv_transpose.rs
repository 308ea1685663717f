//! The transposed 2-D convolution as the prelude writes it
//! (`ops/prelude.tc`, `conv_transpose2d`):
//! `Y[n, f, oh, ow] += (th % sh == 0 && 0 <= th < sh*H && ...) ?
//! X[n, c, th / sh, tw / sw] · W[c, f, kh, kw] : 0` with
//! `th = oh + ph - kh*dh` (and `tw` likewise).
//!
//! The iterators are grouped and placed as a convolution's
//! (`conv.rs`, [`super::conv::place`]: output and input only `n oh ow`,
//! output and weight only `f`, input and weight only `c kh kw`); each
//! spatial subscript of the input is then `floor((oh - kh*dh + ph) / sh)`
//! (plain `oh - kh*dh + ph` for stride 1), the output iterator's
//! coefficient 1 and the kernel iterator's negative. The guard may hold
//! only, per spatial dimension, `th % sh == 0` (required for a stride
//! above 1: without it every output point would read), `th >= 0` and
//! `th < sh*H` (which the reduction's skipping of out-of-bounds reads
//! implies anyway); anything else is refused.
//!
//! Requires a table with strides in elements. Guarantees: an accepted shape
//! names every iterator's role, the strides (the divisors), dilations and
//! begin paddings, and each tensor's dimension order. Never panics.

use super::conv::{either, place, role, size, ConvShape};
use super::mismatch::Mismatch;
use super::table::{Affine, Condition, Table};

/// Matches `t` as a transposed 2-D convolution; see the module doc.
pub fn conv_transpose(t: &Table) -> Result<ConvShape, Vec<Mismatch>> {
    either(transpose_as(t, 0), || transpose_as(t, 1))
}

/// The transposed convolution with input `x`.
fn transpose_as(t: &Table, x: usize) -> Result<ConvShape, Vec<Mismatch>> {
    let p = place(t, x)?;
    let ax = &t.inputs[x];
    let mut errs = Vec::new();
    let mut allowed: Vec<Condition> = Vec::new();
    let mut required: Vec<Condition> = Vec::new();
    let mut pad_end = [0i64; 2];
    for (s, end) in p.spatial.iter().zip(&mut pad_end) {
        if s.out_coeff != 1 {
            errs.push(Mismatch::Stride {
                tensor: ax.tensor.clone(),
                iter: s.out.clone(),
                found: s.out_coeff,
                want: "1".into(),
            });
        }
        if s.kernel_coeff >= 0 {
            errs.push(Mismatch::Stride {
                tensor: ax.tensor.clone(),
                iter: s.kernel.clone(),
                found: s.kernel_coeff,
                want: "a negative coefficient".into(),
            });
        }
        if s.divisor > 1 {
            required.push(Condition::Divides(s.inner.clone(), s.divisor));
        }
        // `th < sh*H`, written as `sh*H - 1 - th >= 0`.
        let below = (|| {
            let top = s.divisor.checked_mul(size(ax, s.dim)?)?.checked_sub(1)?;
            Affine::constant(top).add_scaled(&s.inner, -1)
        })();
        let (Some(below), Some(h)) = (below, size(ax, s.dim)) else {
            errs.push(Mismatch::Unsupported("a bound overflows".into()));
            continue;
        };
        allowed.push(Condition::NonNegative(s.inner.clone()));
        allowed.push(Condition::NonNegative(below));
        // OH = sh (H - 1) + dh (KH - 1) + 1 - ph - (the end padding less
        // the output padding).
        let spans = (|| {
            let oh = i64::try_from(t.extent(&s.out)?).ok()?;
            let kh = i64::try_from(t.extent(&s.kernel)?).ok()?;
            s.divisor
                .checked_mul(h.checked_sub(1)?)?
                .checked_add(
                    s.kernel_coeff
                        .checked_neg()?
                        .checked_mul(kh.checked_sub(1)?)?,
                )?
                .checked_add(1)?
                .checked_sub(s.constant)?
                .checked_sub(oh)
        })();
        match spans {
            Some(v) => *end = v,
            None => errs.push(Mismatch::Unsupported("a padding overflows".into())),
        }
    }
    for cond in &t.guard {
        if !required.contains(cond) && !allowed.contains(cond) {
            errs.push(Mismatch::Unsupported(format!(
                "the guard condition {cond} is not a transposed convolution's"
            )));
        }
    }
    for cond in &required {
        if !t.guard.contains(cond) {
            errs.push(Mismatch::Unsupported(format!(
                "the floor-divided subscript needs the guard {cond}"
            )));
        }
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    let [h, w] = &p.spatial;
    let neg = |v: i64| v.checked_neg().unwrap_or(i64::MAX);
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
        stride: [h.divisor, w.divisor],
        dilation: [neg(h.kernel_coeff), neg(w.kernel_coeff)],
        pad: [h.constant, w.constant],
        pad_end,
        layout: p.layout,
    })
}
