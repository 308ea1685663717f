//! `Attention` (versions 23 on) as comprehensions in the model def, as
//! the ONNX reference computes it: Q, K and V of rank 4 (batch, heads,
//! sequence, head size) or 3 (heads packed in the last axis, with
//! `q_num_heads` and `kv_num_heads`); the past keys and values joined
//! before the new ones (the `present` outputs); grouped queries reading
//! key head `h / (q_heads / kv_heads)`; `Q K^T` with Q and K each scaled
//! by the square root of `scale` (1 / sqrt(head size) by default), capped
//! by `softcap`, plus the bias: a float mask added, and minus infinity
//! where a boolean mask, the causal frontier (offset by the past's length,
//! or per batch by `nonpad_kv_seqlen`), the sliding window or the padding
//! of `nonpad_kv_seqlen` excludes a key (a mask shorter than the keys
//! excludes the rest); the softmax over the keys (0 for a row the bias
//! excludes entirely); its product with V. `qk_matmul_output_mode` picks
//! what the fourth output holds (the capped product, with the bias, or
//! the softmax).

use ir::DType;
use tensor::Tensor;

use super::point::read;
use crate::build::{float, Node, Value, Var};
use crate::import::Importer;

pub fn attention(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 4)?;
    let (q, k, v) = (im.var(n, 0)?, im.var(n, 1)?, im.var(n, 2)?);
    let mask = im.optional_var(n, 3)?;
    let (past_k, past_v) = (im.optional_var(n, 4)?, im.optional_var(n, 5)?);
    let nonpad = im.optional_var(n, 6)?;
    let t = q.dtype;
    let rank = q.shape.len();
    if !t.is_float()
        || !matches!(rank, 3 | 4)
        || k.shape.len() != rank
        || v.shape.len() != rank
        || k.dtype != t
        || v.dtype != t
    {
        return Err(n.error(format!(
            "Q {:?}, K {:?} and V {:?} of types {}, {} and {} (float tensors of rank 3 or 4 are needed)",
            q.shape, k.shape, v.shape, q.dtype, k.dtype, v.dtype
        )));
    }
    if past_k.is_some() != past_v.is_some() {
        return Err(n.error("past_key and past_value must be given together"));
    }
    let heads = |name: &str| -> Result<Option<usize>, String> {
        Ok(n.int(name)?
            .and_then(|h| usize::try_from(h).ok())
            .filter(|&h| h > 0))
    };
    let (qh_attr, kh_attr) = (heads("q_num_heads")?, heads("kv_num_heads")?);
    let b = q.shape[0];
    // Heads, sequence lengths and head sizes, and how each input is read
    // at (batch, head, position, unit).
    let (hq, hk, s, l, e, ev) = if rank == 4 {
        (
            q.shape[1], k.shape[1], q.shape[2], k.shape[2], q.shape[3], v.shape[3],
        )
    } else {
        let (Some(hq), Some(hk)) = (qh_attr, kh_attr) else {
            return Err(n.error("3-D inputs need q_num_heads and kv_num_heads"));
        };
        if q.shape[2] % hq != 0 || k.shape[2] % hk != 0 || v.shape[2] % hk != 0 {
            return Err(n.error(format!(
                "hidden sizes that {hq} and {hk} heads do not divide"
            )));
        }
        (
            hq,
            hk,
            q.shape[1],
            k.shape[1],
            q.shape[2] / hq,
            v.shape[2] / hk,
        )
    };
    if hk == 0 || hq % hk != 0 {
        return Err(n.error(format!("{hq} query heads for {hk} key heads")));
    }
    let at = |x: &Var, size: usize, [bb, h, p, u]: [&str; 4]| {
        if rank == 4 {
            format!("{}({bb}, {h}, {p}, {u})", x.name)
        } else {
            format!("{}({bb}, {p}, {h} * {size} + {u})", x.name)
        }
    };
    let past = past_k.as_ref().map_or(0, |p| p.shape[2]);
    let total = past + l;
    // The present keys and values: the past ones, then the new.
    let present = |im: &mut Importer, new: &Var, old: &Option<Var>, size: usize| {
        let fresh = at(new, size, ["_i0", "_i1", &format!("_i2 - {past}"), "_i3"]);
        let rhs = match old {
            Some(o) => format!("_i2 < {past} ? {}(_i0, _i1, _i2, _i3) : {fresh}", o.name),
            None => fresh,
        };
        im.b.compute("=", &rhs, &[], t, vec![b, hk, total, size])
    };
    let pk = present(im, &k, &past_k, e);
    let pv = present(im, &v, &past_v, ev);
    let scale = n
        .float("scale")?
        .map_or(1.0 / (e as f64).sqrt(), f64::from)
        .sqrt();
    let group = hq / hk;
    let qk = im.b.compute(
        "+=!",
        &format!(
            "({} * {s}) * ({}(_i0, _i1 / {group}, _i3, _e) * {s})",
            at(&q, e, ["_i0", "_i1", "_i2", "_e"]),
            pk.name,
            s = float(scale)
        ),
        &[format!("_e in 0:{e}")],
        t,
        vec![b, hq, s, total],
    );
    let here = "_i0, _i1, _i2, _i3";
    let softcap = f64::from(n.float("softcap")?.unwrap_or(0.0));
    let capped = if softcap > 0.0 {
        let c = float(softcap);
        im.b.compute(
            "=",
            &format!("{c} * tanh({}({here}) / {c})", qk.name),
            &[],
            t,
            vec![b, hq, s, total],
        )
    } else {
        qk.clone()
    };
    // The bias: 0 or a float mask's value where a key is allowed, minus
    // infinity elsewhere.
    let neg_inf = im.b.weight(
        &format!("-inf{t}#attention"),
        &Tensor::from_f64(t, &[], vec![f64::NEG_INFINITY]),
    );
    let mut allowed: Vec<String> = Vec::new();
    let mut added = "0".to_string();
    if let Some(m) = &mask {
        let mr = m.shape.len();
        if !(1..=4).contains(&mr) {
            return Err(n.error(format!("a mask of shape {:?}", m.shape)));
        }
        let full = [b, hq, s, total];
        let names = ["_i0", "_i1", "_i2", "_i3"];
        let last = m.shape[mr - 1];
        let index: Vec<String> = (0..mr)
            .map(|j| {
                let axis = 4 - mr + j;
                if axis == 3 {
                    format!("min(_i3, {})", last - 1)
                } else if m.shape[j] == 1 && full[axis] != 1 {
                    "0".to_string()
                } else {
                    names[axis].to_string()
                }
            })
            .collect();
        let value = read(m, &index);
        if last < total {
            allowed.push(format!("_i3 < {last}"));
        }
        match m.dtype {
            DType::Bool => allowed.push(value),
            d if d == t => added = value,
            other => return Err(n.error(format!("a mask of type {other}"))),
        }
    }
    // The offset of the causal frontier and the window: the past's
    // length, or per batch the unpadded keys less the queries.
    let offset = match (&nonpad, past) {
        (Some(np), 0) => format!("({}(_i0) - {s})", np.name),
        _ => past.to_string(),
    };
    if n.int("is_causal")?.unwrap_or(0) != 0 {
        allowed.push(format!("_i3 <= _i2 + {offset}"));
    }
    let window = |name: &str| -> Result<i64, String> { Ok(n.int(name)?.unwrap_or(-1)) };
    let (left, right) = (window("left_window_size")?, window("right_window_size")?);
    if left >= 0 {
        allowed.push(format!("_i2 + {offset} - _i3 <= {left}"));
    }
    if right >= 0 {
        allowed.push(format!("_i3 - (_i2 + {offset}) <= {right}"));
    }
    if let Some(np) = &nonpad {
        allowed.push(format!("_i3 < {}(_i0)", np.name));
    }
    let bias_rhs = if allowed.is_empty() {
        format!("{t}({added})", t = t.name())
    } else {
        format!(
            "{} ? {t}({added}) : {}()",
            allowed.join(" && "),
            neg_inf.name,
            t = t.name()
        )
    };
    let bias = im.b.compute("=", &bias_rhs, &[], t, vec![b, hq, s, total]);
    let with_bias = im.b.compute(
        "=",
        &format!("{}({here}) + {}({here})", capped.name, bias.name),
        &[],
        t,
        vec![b, hq, s, total],
    );
    // The softmax over the keys, a row the bias excludes entirely 0.
    let row = [b, hq, s];
    let reduce = |im: &mut Importer, op: &str, x: &Var| {
        im.b.compute(
            op,
            &format!("{}(_i0, _i1, _i2, _r)", x.name),
            &[format!("_r in 0:{total}")],
            t,
            row.to_vec(),
        )
    };
    let max = reduce(im, "max=!", &with_bias);
    let bias_max = reduce(im, "max=!", &bias);
    let ni = format!("{}()", neg_inf.name);
    let safe = format!(
        "({m}(_i0, _i1, _i2) == {ni} ? 0 : {m}(_i0, _i1, _i2))",
        m = max.name
    );
    let exp = im.b.compute(
        "=",
        &format!("exp({}({here}) - {safe})", with_bias.name),
        &[],
        t,
        vec![b, hq, s, total],
    );
    let sum = reduce(im, "+=!", &exp);
    let sm = format!("{}(_i0, _i1, _i2)", sum.name);
    let softmax = im.b.compute(
        "=",
        &format!(
            "{}(_i0, _i1, _i2) == {ni} ? 0 : {}({here}) / ({sm} == 0 ? 1 : {sm})",
            bias_max.name, exp.name
        ),
        &[],
        t,
        vec![b, hq, s, total],
    );
    let y4 = im.b.compute(
        "+=!",
        &format!(
            "{}(_i0, _i1, _i2, _r) * {}(_i0, _i1 / {group}, _r, _i3)",
            softmax.name, pv.name
        ),
        &[format!("_r in 0:{total}")],
        t,
        vec![b, hq, s, ev],
    );
    let y = if rank == 4 {
        y4
    } else {
        im.b.compute(
            "=",
            &format!("{}(_i0, _i2 / {ev}, _i1, _i2 % {ev})", y4.name),
            &[],
            t,
            vec![b, s, hq * ev],
        )
    };
    let _ = n.int("softmax_precision")?;
    let qk_out = match n.int("qk_matmul_output_mode")?.unwrap_or(0) {
        0 | 1 => capped,
        2 => with_bias,
        3 => softmax,
        other => return Err(n.error(format!("qk_matmul_output_mode {other} is not supported"))),
    };
    im.set(n, 0, Value::Var(y));
    im.set(n, 1, Value::Var(pk));
    im.set(n, 2, Value::Var(pv));
    im.set(n, 3, Value::Var(qk_out));
    Ok(())
}
