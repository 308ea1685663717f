//! `RotaryEmbedding` as one comprehension in the model def, as the ONNX
//! reference computes it: the first `rotary_embedding_dim` units of each
//! head (all by default) are rotated in pairs — the unit `j` with `j +
//! dim / 2`, or with `interleaved` the units `2j` and `2j + 1` — by the
//! angle whose cosine and sine the caches hold for the position (the
//! caches indexed by `position_ids`, or given per batch and position);
//! the other units pass. Inputs are 4-D (batch, heads, sequence, head
//! size) or 3-D (heads packed in the last axis, with `num_heads`).

use crate::build::{Node, Value};
use crate::import::Importer;

pub fn rotary(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let (x, cos, sin) = (im.var(n, 0)?, im.var(n, 1)?, im.var(n, 2)?);
    let positions = im.optional_var(n, 3)?;
    let t = x.dtype;
    let rank = x.shape.len();
    let heads = n.int("num_heads")?.unwrap_or(0);
    let d = match rank {
        4 => x.shape[3],
        3 => {
            let h = usize::try_from(heads)
                .ok()
                .filter(|&h| h > 0 && x.shape[2] % h == 0)
                .ok_or_else(|| {
                    n.error(format!(
                        "a 3-D input {:?} needs num_heads dividing its last axis",
                        x.shape
                    ))
                })?;
            x.shape[2] / h
        }
        _ => return Err(n.error(format!("an input of rank {rank} (3 or 4 is needed)"))),
    };
    let dim = match n.int("rotary_embedding_dim")?.unwrap_or(0) {
        0 => d,
        r => usize::try_from(r)
            .ok()
            .filter(|&r| r <= d && r % 2 == 0)
            .ok_or_else(|| n.error(format!("rotary_embedding_dim {r} for heads of {d}")))?,
    };
    let half = dim / 2;
    if !t.is_float() || cos.dtype != t || sin.dtype != t || cos.shape.last() != Some(&half) {
        return Err(n.error(format!(
            "caches {} {:?} for an input {t} rotating {dim} units ({half} per position are needed)",
            cos.dtype, cos.shape
        )));
    }
    // The point: (batch, head, position, unit) of either layout.
    let (bb, h, p, u) = if rank == 4 {
        (
            "_i0".to_string(),
            "_i1".to_string(),
            "_i2".to_string(),
            "_i3".to_string(),
        )
    } else {
        (
            "_i0".to_string(),
            format!("(_i2 / {d})"),
            "_i1".to_string(),
            format!("(_i2 % {d})"),
        )
    };
    let x_at = |unit: &str| {
        let unit = format!("min({unit}, {})", d - 1);
        if rank == 4 {
            format!("{}({bb}, {h}, {p}, {unit})", x.name)
        } else {
            format!("{}({bb}, {p}, {h} * {d} + {unit})", x.name)
        }
    };
    let interleaved = n.int("interleaved")?.unwrap_or(0) != 0;
    let (j, first, second, leading) = if interleaved {
        (
            format!("({u} / 2)"),
            format!("2 * ({u} / 2)"),
            format!("2 * ({u} / 2) + 1"),
            format!("{u} % 2 == 0"),
        )
    } else {
        (
            format!("({u} < {half} ? {u} : {u} - {half})"),
            format!("({u} < {half} ? {u} : {u} - {half})"),
            format!("({u} < {half} ? {u} + {half} : {u})"),
            format!("{u} < {half}"),
        )
    };
    let j = format!("min({j}, {})", half - 1);
    let cache = |c: &crate::build::Var| match &positions {
        Some(pos) => format!("{}({}({bb}, {p}), {j})", c.name, pos.name),
        None => format!("{}({bb}, {p}, {j})", c.name),
    };
    let (c, sn) = (cache(&cos), cache(&sin));
    let (x1, x2) = (x_at(&first), x_at(&second));
    let rotated = format!("{leading} ? {c} * {x1} - {sn} * {x2} : {sn} * {x1} + {c} * {x2}");
    let rhs = format!("{u} < {dim} ? ({rotated}) : {}", x_at(&u));
    let y = im.b.compute("=", &rhs, &[], t, x.shape.clone());
    im.set(n, 0, Value::Var(y));
    Ok(())
}
