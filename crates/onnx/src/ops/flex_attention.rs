//! `FlexAttention` (domain `ai.onnx.preview`) without its graph
//! attributes: `softmax(Q K^T scale) V` over rank-4 `B x H x L x E`
//! operands, each of `Q` and `K` scaled by `sqrt(scale)` (as the ONNX
//! reference scales them), key and value heads repeated for grouped
//! queries. A `score_mod` or `prob_mod` subgraph is refused by name.
//! Narrow floats go through `float32` (`widen.rs`).

use super::point::{point, read};
use crate::build::{float, Node, Value};
use crate::import::Importer;

pub fn flex_attention(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    for graph in ["score_mod", "prob_mod"] {
        if n.proto
            .attribute
            .iter()
            .any(|a| a.name.as_deref() == Some(graph))
        {
            return Err(n.error(format!("attribute `{graph}` (a graph) is not supported")));
        }
    }
    let _ = n.int("softmax_precision")?; // float32 already, or float64 for float64.
    let (q, k, v) = (im.var(n, 0)?, im.var(n, 1)?, im.var(n, 2)?);
    let ([b, hq, l, e], [kb, hkv, s, ke], [vb, vh, vs, ev]) = (
        <[usize; 4]>::try_from(q.shape.clone()).map_err(|_| n.error("Q must be of rank 4"))?,
        <[usize; 4]>::try_from(k.shape.clone()).map_err(|_| n.error("K must be of rank 4"))?,
        <[usize; 4]>::try_from(v.shape.clone()).map_err(|_| n.error("V must be of rank 4"))?,
    );
    if kb != b || vb != b || vh != hkv || vs != s || ke != e || hq % hkv != 0 {
        return Err(n.error(format!(
            "Q {:?}, K {:?} and V {:?} do not make attention",
            q.shape, k.shape, v.shape
        )));
    }
    if !q.dtype.is_float() || k.dtype != q.dtype || v.dtype != q.dtype {
        return Err(n.error("Q, K and V must be floats of one type"));
    }
    let t = q.dtype;
    let group = hq / hkv;
    let scale = n
        .float("scale")?
        .map_or_else(|| 1.0 / (e as f64).sqrt(), f64::from);
    // The reference's sqrt(scale), rounded to float32 first.
    let root = float(f64::from((scale as f32).sqrt()));
    let kv = |var: &crate::build::Var, last: &str, pos: &str| {
        read(
            var,
            &[
                "_i0".into(),
                format!("_i1 / {group}"),
                pos.into(),
                last.into(),
            ],
        )
    };
    let scores = im.b.compute(
        "+=!",
        &format!(
            "({} * {root}) * ({} * {root})",
            read(&q, &["_i0".into(), "_i1".into(), "_i2".into(), "_e".into()]),
            kv(&k, "_e", "_i3")
        ),
        &[format!("_e in 0:{e}")],
        t,
        vec![b, hq, l, s],
    );
    let row = |var: &crate::build::Var| {
        read(
            var,
            &["_i0".into(), "_i1".into(), "_i2".into(), "_s".into()],
        )
    };
    let top = im.b.compute(
        "max=!",
        &row(&scores),
        &[format!("_s in 0:{s}")],
        t,
        vec![b, hq, l],
    );
    let here3 = point(3);
    let exp = im.b.compute(
        "=",
        &format!("exp({} - {})", read(&scores, &point(4)), read(&top, &here3)),
        &[],
        t,
        vec![b, hq, l, s],
    );
    let total = im.b.compute(
        "+=!",
        &row(&exp),
        &[format!("_s in 0:{s}")],
        t,
        vec![b, hq, l],
    );
    let y = im.b.compute(
        "+=!",
        &format!(
            "{} / {} * {}",
            row(&exp),
            read(&total, &here3),
            kv(&v, "_i3", "_s")
        ),
        &[format!("_s in 0:{s}")],
        t,
        vec![b, hq, l, ev],
    );
    im.set(n, 0, Value::Var(y));
    Ok(())
}
