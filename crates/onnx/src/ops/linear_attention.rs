//! `LinearAttention`: causal linear attention as a recurrence over time,
//! unrolled step by step (at most [`MAX_STEPS`]), with the update rules
//! `linear`, `gated` (the state decays by `exp(decay)`), `delta` (the
//! value is corrected by what the state already retrieves for the key,
//! times `beta`) and `gated_delta`, grouped query heads, and a past and a
//! present state (`B x H_kv x d_k x d_v`).
//!
//! Each step is a few comprehensions over the state; the outputs of the
//! steps are gathered into `B x T x (H_q d_v)` by one selection over the
//! time index. Narrow floats go through `float32` (`widen.rs`), as the
//! ONNX reference computes them.

use super::point::{point, read};
use crate::build::{float, Node, Value, Var};
use crate::import::Importer;

/// The most time steps unrolled.
const MAX_STEPS: usize = 256;

pub fn linear_attention(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 2)?;
    let (q, k, v) = (im.var(n, 0)?, im.var(n, 1)?, im.var(n, 2)?);
    let past = im.optional_var(n, 3)?;
    let decay = im.optional_var(n, 4)?;
    let beta = im.optional_var(n, 5)?;
    let _ = n.int("chunk_size")?; // A tuning hint; the results do not depend on it.
    let rule = n
        .string("update_rule")?
        .unwrap_or_else(|| "gated_delta".to_string());
    let (gating, delta) = match rule.as_str() {
        "linear" => (false, false),
        "gated" => (true, false),
        "delta" => (false, true),
        "gated_delta" => (true, true),
        other => return Err(n.error(format!("update_rule `{other}` is not supported"))),
    };
    let heads = |name: &str| -> Result<usize, String> {
        n.int(name)?
            .and_then(|h| usize::try_from(h).ok())
            .filter(|&h| h > 0)
            .ok_or_else(|| n.error(format!("attribute `{name}` (positive) is required")))
    };
    let (hq, hkv) = (heads("q_num_heads")?, heads("kv_num_heads")?);
    if hq % hkv != 0 {
        return Err(n.error(format!(
            "q_num_heads {hq} is not a multiple of kv_num_heads {hkv}"
        )));
    }
    if gating != decay.is_some() || delta != beta.is_some() {
        return Err(n.error(format!(
            "update_rule `{rule}` takes {} decay and {} beta",
            if gating { "a" } else { "no" },
            if delta { "a" } else { "no" }
        )));
    }
    let [b, t, qw] = q.shape[..] else {
        return Err(n.error(format!("query {:?}: B x T x (H d) is needed", q.shape)));
    };
    let (kw, vw) = (
        k.shape.get(2).copied().unwrap_or(0),
        v.shape.get(2).copied().unwrap_or(0),
    );
    if qw % hq != 0 || kw % hkv != 0 || vw % hkv != 0 || qw / hq != kw / hkv {
        return Err(n.error(format!(
            "query {:?}, key {:?} and value {:?} do not split into {hq} and {hkv} heads of one key width",
            q.shape, k.shape, v.shape
        )));
    }
    if !q.dtype.is_float() || k.dtype != q.dtype || v.dtype != q.dtype {
        return Err(n.error("query, key and value must be floats of one type"));
    }
    if t > MAX_STEPS {
        return Err(n.error(format!("{t} steps: at most {MAX_STEPS} are unrolled")));
    }
    let (dk, dv, group) = (qw / hq, vw / hkv, hq / hkv);
    let ty = q.dtype;
    if let Some(p) = &past {
        if p.shape != [b, hkv, dk, dv] {
            return Err(n.error(format!(
                "past_state {:?}: [{b}, {hkv}, {dk}, {dv}] is needed",
                p.shape
            )));
        }
    }
    let scale = match n.float("scale")? {
        Some(s) if s != 0.0 => f64::from(s),
        _ => 1.0 / (dk as f64).sqrt(),
    };
    let state_shape = vec![b, hkv, dk, dv];
    let mut state: Option<Var> = past.clone();
    let mut outputs = Vec::with_capacity(t);
    for i in 0..t {
        // The key at step i, head _i1, component _i2 (or `_d`).
        let key = |d: &str| {
            read(
                &k,
                &["_i0".into(), i.to_string(), format!("_i1 * {dk} + {d}")],
            )
        };
        let decayed = match (&state, &decay) {
            (Some(s), Some(g)) => {
                let width = g.shape.get(2).copied().unwrap_or(0);
                let at = if width == hkv {
                    "_i1".to_string()
                } else if width == hkv * dk {
                    format!("_i1 * {dk} + _i2")
                } else {
                    return Err(n.error(format!(
                        "decay {:?}: its last dimension must be {hkv} or {}",
                        g.shape,
                        hkv * dk
                    )));
                };
                let gate = read(g, &["_i0".into(), i.to_string(), at]);
                Some(im.b.compute(
                    "=",
                    &format!("{} * exp({gate})", read(s, &point(4))),
                    &[],
                    ty,
                    state_shape.clone(),
                ))
            }
            (s, _) => s.clone(),
        };
        // The value written at step i, head _i1, component _i3 (or `_i2`).
        let value = |m: &str| {
            read(
                &v,
                &["_i0".into(), i.to_string(), format!("_i1 * {dv} + {m}")],
            )
        };
        let written = if let (true, Some(bt)) = (delta, &beta) {
            let width = bt.shape.get(2).copied().unwrap_or(0);
            let at = match width {
                1 => "0".to_string(),
                w if w == hkv => "_i1".to_string(),
                _ => {
                    return Err(n.error(format!(
                        "beta {:?}: its last dimension must be {hkv} or 1",
                        bt.shape
                    )))
                }
            };
            let weight = read(bt, &["_i0".into(), i.to_string(), at]);
            let retrieved = match &decayed {
                Some(s) => Some(im.b.compute(
                    "+=!",
                    &format!(
                        "{} * {}",
                        read(s, &["_i0".into(), "_i1".into(), "_d".into(), "_i2".into()]),
                        key("_d")
                    ),
                    &[format!("_d in 0:{dk}")],
                    ty,
                    vec![b, hkv, dv],
                )),
                None => None,
            };
            let correction =
                retrieved.map_or_else(String::new, |r| format!(" - {}", read(&r, &point(3))));
            let w = im.b.compute(
                "=",
                &format!("{weight} * ({}{correction})", value("_i2")),
                &[],
                ty,
                vec![b, hkv, dv],
            );
            read(&w, &["_i0".into(), "_i1".into(), "_i3".into()])
        } else {
            value("_i3")
        };
        let update = format!("{} * {written}", key("_i2"));
        let rhs = match &decayed {
            Some(s) => format!("{} + {update}", read(s, &point(4))),
            None => update,
        };
        let next = im.b.compute("=", &rhs, &[], ty, state_shape.clone());
        let query = read(
            &q,
            &["_i0".into(), i.to_string(), format!("_i1 * {dk} + _d")],
        );
        let out = im.b.compute(
            "+=!",
            &format!(
                "{} * {query} * {}",
                float(scale),
                read(
                    &next,
                    &[
                        "_i0".into(),
                        format!("_i1 / {group}"),
                        "_d".into(),
                        "_i2".into()
                    ]
                )
            ),
            &[format!("_d in 0:{dk}")],
            ty,
            vec![b, hq, dv],
        );
        outputs.push(out);
        state = Some(next);
    }
    // Step _i1's output at head _i2 / d_v, component _i2 % d_v.
    let mut rhs = String::new();
    for (i, o) in outputs.iter().enumerate().rev() {
        let at = read(
            o,
            &["_i0".into(), format!("_i2 / {dv}"), format!("_i2 % {dv}")],
        );
        rhs = if rhs.is_empty() {
            at
        } else {
            format!("_i1 == {i} ? {at} : ({rhs})")
        };
    }
    let y = im.b.compute("=", &rhs, &[], ty, vec![b, t, hq * dv]);
    im.set(n, 0, Value::Var(y));
    if n.outputs() > 1 {
        let last = state.ok_or_else(|| n.error("no steps"))?;
        im.set(n, 1, Value::Var(last));
    }
    Ok(())
}
