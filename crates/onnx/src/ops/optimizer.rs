//! The training domain's optimizers (`ai.onnx.preview.training`):
//! `Adagrad`, `Momentum` (standard and Nesterov) and `Adam`, each one step
//! of updates to one or more tensors, as elementwise maps over the
//! tensor, its gradient and its accumulators with the learning rate `R`
//! and the step count `T` (scalars) broadcast. Inputs come as `R, T`,
//! then every tensor, then every gradient, then each accumulator in turn;
//! outputs as every new tensor, then each new accumulator in turn.
//!
//! Guarantees: the ONNX reference's formulas, computed in the tensors'
//! float type.

use super::map::map;
use crate::build::{float, Node, Value, Var};
use crate::import::Importer;

pub fn optimizer(im: &mut Importer, n: &Node) -> Result<(), String> {
    let accumulators = if n.op == "Adam" { 2 } else { 1 };
    let inputs = n.proto.input.len();
    let groups = inputs.saturating_sub(2) / (2 + accumulators);
    if inputs < 2 || groups == 0 || 2 + groups * (2 + accumulators) != inputs {
        return Err(n.error(format!(
            "{inputs} inputs: {} takes R, T and, for each tensor, the tensor, its gradient and {accumulators} accumulator(s)",
            n.op
        )));
    }
    im.outputs(n, groups * (1 + accumulators))?;
    let attr = |name: &str, default: f32| -> Result<String, String> {
        Ok(float(f64::from(n.float(name)?.unwrap_or(default))))
    };
    let norm = attr("norm_coefficient", 0.0)?;
    let (r, t) = (im.var(n, 0)?, im.var(n, 1)?);
    for g in 0..groups {
        let x = im.var(n, 2 + g)?;
        if !x.dtype.is_float() {
            return Err(n.error(format!("{} of {} is not supported", n.op, x.dtype)));
        }
        let grad = im.var(n, 2 + groups + g)?;
        let acc: Vec<Var> = (0..accumulators)
            .map(|a| im.var(n, 2 + groups * (2 + a) + g))
            .collect::<Result<_, _>>()?;
        let ty = x.dtype;
        // _a = R, _b = T, _c = X, _d = G, _e and _f the accumulators.
        let steps = format!("{}(_b)", ty.name());
        let regularized = format!("({norm} * _c + _d)");
        let mut operands = vec![r.clone(), t.clone(), x.clone(), grad];
        operands.extend(acc);
        let (new_x, new_acc): (String, Vec<String>) = match n.op {
            "Adagrad" => {
                let (decay, eps) = (attr("decay_factor", 0.0)?, attr("epsilon", 0.0)?);
                let h = format!("(_e + {regularized} * {regularized})");
                let rate = format!("(_a / (1 + {steps} * {decay}))");
                (
                    format!("_c - {rate} * {regularized} / (sqrt({h}) + {eps})"),
                    vec![h],
                )
            }
            "Momentum" => {
                let (alpha, beta) = (attr("alpha", 0.0)?, attr("beta", 0.0)?);
                let v = format!("({alpha} * _e + (_b > 0 ? {beta} : 1) * {regularized})");
                let x = match n.string("mode")?.as_deref() {
                    Some("standard") => format!("_c - _a * {v}"),
                    Some("nesterov") => format!("_c - _a * ({regularized} + {alpha} * {v})"),
                    other => {
                        return Err(n.error(format!(
                            "mode {other:?} is not supported (standard or nesterov)"
                        )))
                    }
                };
                (x, vec![v])
            }
            _ => {
                let (alpha, beta) = (attr("alpha", 0.9)?, attr("beta", 0.999)?);
                let (eps, post) = (attr("epsilon", 0.0)?, attr("norm_coefficient_post", 0.0)?);
                let v = format!("({alpha} * _e + (1 - {alpha}) * {regularized})");
                let h = format!("({beta} * _f + (1 - {beta}) * {regularized} * {regularized})");
                let rate = format!(
                    "(_b > 0 ? _a * sqrt(1 - pow({beta}, {steps})) / (1 - pow({alpha}, {steps})) : _a)"
                );
                (
                    format!("(1 - {post}) * (_c - {rate} * ({v} / (sqrt({h}) + {eps})))"),
                    vec![v, h],
                )
            }
        };
        let y = map(im, n, &new_x, &operands, ty)?;
        im.set(n, g, Value::Var(y));
        for (a, expr) in new_acc.iter().enumerate() {
            let y = map(im, n, expr, &operands, ty)?;
            im.set(n, groups * (1 + a) + g, Value::Var(y));
        }
    }
    Ok(())
}
