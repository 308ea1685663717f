//! The training losses ONNX defines as operators, as comprehensions in the
//! model def: `NegativeLogLikelihoodLoss` and `SoftmaxCrossEntropyLoss`
//! (the same loss of the scores' log-softmax over the class axis, which
//! its optional second output is).
//!
//! For an input N x C (x d1 x ... ) and targets N (x d1 x ...), each
//! point's loss is `-input[n, target, d...] * weight[target]` (weight 1
//! without weights), 0 where the target is `ignore_index`; `reduction`
//! `none` gives the losses, `sum` their sum, `mean` their sum over the
//! sum of the weights of the targets not ignored. A target is read as an
//! index clamped into the classes, so an ignored one out of range reads
//! nothing outside the input.

use super::point::{point, read};
use crate::build::{Node, Value};
use crate::import::Importer;

/// `NegativeLogLikelihoodLoss` and `SoftmaxCrossEntropyLoss`.
pub fn loss(im: &mut Importer, n: &Node) -> Result<(), String> {
    let softmax = n.op == "SoftmaxCrossEntropyLoss";
    im.outputs(n, if softmax { 2 } else { 1 })?;
    let x = im.var(n, 0)?;
    let target = im.var(n, 1)?;
    let weight = im.optional_var(n, 2)?;
    if !x.dtype.is_float() {
        return Err(n.error(format!("{} of {} is not supported", n.op, x.dtype)));
    }
    let r = x.shape.len();
    let mut want = x.shape.clone();
    if r >= 2 {
        want.remove(1);
    }
    if r < 2 || target.shape != want || !target.dtype.is_int() {
        return Err(n.error(format!(
            "an input {:?} and targets {} {:?} (N x C x ... and integer targets N x ... are needed)",
            x.shape, target.dtype, target.shape
        )));
    }
    let c = x.shape[1];
    if let Some(w) = &weight {
        if w.shape != [c] || w.dtype != x.dtype {
            return Err(n.error(format!(
                "weights {} {:?}, not {} [{c}]",
                w.dtype, w.shape, x.dtype
            )));
        }
    }
    let reduction = n.string("reduction")?.unwrap_or_else(|| "mean".to_string());
    if !matches!(reduction.as_str(), "none" | "sum" | "mean") {
        return Err(n.error(format!("reduction `{reduction}` is not supported")));
    }
    let ignore = n.int("ignore_index")?;
    let input = if softmax {
        let log_prob = super::along::softmax_of(im, &x, &[1], true);
        im.set(n, 1, Value::Var(log_prob.clone()));
        log_prob
    } else {
        x
    };
    // At a point of the targets (iterators `at`): the class read, its
    // weight, and the value `value` (of the class) where the target is
    // not ignored, else 0.
    let terms = |at: &[String], value: &dyn Fn(&str) -> String| -> String {
        let t = read(&target, at);
        let class = format!("max(0, min({t}, {}))", c - 1);
        let w = match &weight {
            Some(w) => format!(" * {}({class})", w.name),
            None => String::new(),
        };
        let v = format!("{}{w}", value(&class));
        match ignore {
            Some(i) => format!("{t} != {i} ? {v} : 0"),
            None => v,
        }
    };
    let here = point(r - 1);
    let losses = terms(&here, &|class| {
        let mut at = here.clone();
        at.insert(1, class.to_string());
        format!("-{}", read(&input, &at))
    });
    let losses =
        im.b.compute("=", &losses, &[], input.dtype, target.shape.clone());
    let y = if reduction == "none" {
        losses
    } else {
        let all: Vec<String> = (0..r - 1).map(|k| format!("_s{k}")).collect();
        let ranges: Vec<String> = target
            .shape
            .iter()
            .enumerate()
            .map(|(k, d)| format!("_s{k} in 0:{d}"))
            .collect();
        let sum =
            im.b.compute("+=!", &read(&losses, &all), &ranges, input.dtype, vec![]);
        if reduction == "sum" {
            sum
        } else if weight.is_none() && ignore.is_none() {
            let count: usize = target.shape.iter().product();
            let rhs = format!("{}() / {count}", sum.name);
            im.b.compute("=", &rhs, &[], input.dtype, vec![])
        } else {
            // The weights of the targets not ignored.
            let one = format!("{}(1)", input.dtype.name());
            let weights = terms(&all, &|_| one.clone());
            let total = im.b.compute("+=!", &weights, &ranges, input.dtype, vec![]);
            let rhs = format!("{}() / {}()", sum.name, total.name);
            im.b.compute("=", &rhs, &[], input.dtype, vec![])
        }
    };
    im.set(n, 0, Value::Var(y));
    Ok(())
}
