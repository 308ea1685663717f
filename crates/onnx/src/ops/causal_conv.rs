//! `CausalConvWithState`: a depthwise 1-D convolution over the time axis
//! of `input` (`B x C x L`), left-padded by `past_state` (`B x C x K-1`,
//! zeros when absent), with an optional bias and SiLU, and the padded
//! input's last `K - 1` steps as `present_state`.
//!
//! The padded input is never built: each result is a sum of the terms
//! reading the state and of those reading the input, two comprehensions
//! whose reads past their tensor's extent are skipped, added after.
//!
//! Guarantees: the ONNX reference's results (float32 and float64; the
//! narrow floats go through `float32`, `widen.rs`).

use super::point::{point, read};
use crate::build::{Node, Value, Var};
use crate::import::Importer;

pub fn causal_conv(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 2)?;
    let x = im.var(n, 0)?;
    let w = im.var(n, 1)?;
    let bias = im.optional_var(n, 2)?;
    let state = im.optional_var(n, 3)?;
    let silu = match n.string("activation")?.as_deref() {
        None | Some("none") => false,
        Some("silu" | "swish") => true,
        Some(other) => return Err(n.error(format!("activation `{other}` is not supported"))),
    };
    let [b, c, l] = x.shape[..] else {
        return Err(n.error(format!("input {:?}: B x C x L is needed", x.shape)));
    };
    let k = match w.shape[..] {
        [wc, 1, k] if wc == c => k,
        _ => {
            return Err(n.error(format!(
                "weight {:?} for input {:?}: C x 1 x K is needed",
                w.shape, x.shape
            )))
        }
    };
    if !x.dtype.is_float() {
        return Err(n.error(format!(
            "CausalConvWithState of {} is not supported",
            x.dtype
        )));
    }
    if let Some(s) = &state {
        if s.shape != [b, c, k - 1] {
            return Err(n.error(format!(
                "past_state {:?}: [{b}, {c}, {}] is needed",
                s.shape,
                k - 1
            )));
        }
    }
    if k == 1 && n.outputs() > 1 {
        return Err(n.error(
            "a kernel of size 1 keeps no state: present_state would be empty, and tessera's tensors have positive dimensions",
        ));
    }
    let t = x.dtype;
    let kernel = [format!("_j in 0:{k}")];
    let weight = read(&w, &["_i1".to_string(), "0".to_string(), "_j".to_string()]);
    // Padded step t + j is the state's step t + j, or the input's
    // t + j - (K - 1).
    let from_input = im.b.compute(
        "+=!",
        &format!(
            "{weight} * {}",
            shifted(&x, &format!("_i2 + _j - {}", k - 1))
        ),
        &kernel,
        t,
        vec![b, c, l],
    );
    let mut sum = vec![here(&from_input)];
    if let Some(s) = &state {
        let from_state = im.b.compute(
            "+=!",
            &format!("{weight} * {}", shifted(s, "_i2 + _j")),
            &kernel,
            t,
            vec![b, c, l],
        );
        sum.push(here(&from_state));
    }
    if let Some(bias) = &bias {
        sum.push(read(bias, &["_i1".to_string()]));
    }
    let conv = sum.join(" + ");
    let rhs = if silu {
        format!("({conv}) / (1 + exp(-({conv})))")
    } else {
        conv
    };
    let y = im.b.compute("=", &rhs, &[], t, vec![b, c, l]);
    im.set(n, 0, Value::Var(y));
    if n.outputs() > 1 {
        // Present step q is padded step L + q.
        let mut parts = vec![];
        let tail = im.b.compute(
            "+=!",
            &shifted(&x, &format!("_i2 + {l} - {}", k - 1)),
            &[],
            t,
            vec![b, c, k - 1],
        );
        parts.push(here(&tail));
        if let Some(s) = &state {
            let kept = im.b.compute(
                "+=!",
                &shifted(s, &format!("_i2 + {l}")),
                &[],
                t,
                vec![b, c, k - 1],
            );
            parts.push(here(&kept));
        }
        let present =
            im.b.compute("=", &parts.join(" + "), &[], t, vec![b, c, k - 1]);
        im.set(n, 1, Value::Var(present));
    }
    Ok(())
}

/// `v` (`B x C x steps`) read at batch `_i0`, channel `_i1` and step
/// `step`.
fn shifted(v: &Var, step: &str) -> String {
    read(v, &["_i0".to_string(), "_i1".to_string(), step.to_string()])
}

/// `v` read at the result's point.
fn here(v: &Var) -> String {
    read(v, &point(v.shape.len()))
}
