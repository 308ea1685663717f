//! Narrow floats through operators tessera computes in `float32` only.
//!
//! A node of one of [`WIDENED`] whose float inputs are `float16`,
//! `bfloat16` or an 8-bit float is imported as the same node on those
//! inputs cast to `float32`, its float outputs cast back: the CPU has no
//! arithmetic of those types, and these operators' forms (the prelude's
//! convolutions, attention, matrix products) are written for `float32`. The node keeps its
//! name in messages, and its attributes are checked as the inner import
//! reads them.
//!
//! Requires: the operator's importer reads its inputs by position and
//! binds its outputs by position (every importer does). Guarantees: the
//! outputs have the types the model declares for them, each rounded once
//! from the `float32` result.

use ir::DType;

use super::{Importer, Value};
use crate::build::Node;

/// The operators imported through `float32` when their inputs are narrow.
pub(crate) const WIDENED: &[&str] = &[
    "Conv",
    "ConvTranspose",
    "Attention",
    "MatMul",
    "Gemm",
    "CausalConvWithState",
    "LinearAttention",
    "FlexAttention",
];

/// The narrow float type of `n`'s float inputs, if they have one.
pub(crate) fn narrow_input(im: &Importer, n: &Node) -> Option<DType> {
    (0..n.proto.input.len())
        .filter_map(|k| n.input(k).and_then(|name| im.values.get(name)))
        .map(Value::dtype)
        .find(|t| t.narrow().is_some())
}

/// Imports `n`, whose float inputs are of the narrow type `t`, with
/// `inner` on them widened to `float32`.
pub(crate) fn import(
    im: &mut Importer,
    n: &Node,
    t: DType,
    inner: fn(&mut Importer, &Node) -> Result<(), String>,
) -> Result<(), String> {
    if t == DType::BF16 && n.op == "Attention" {
        // Computed in float32 and rounded once, attention's results lie up
        // to two units in bfloat16's last place from those of the ONNX
        // reference, which rounds every step to bfloat16; neither way
        // passes its conformance cases, so tessera does not claim it.
        return Err(n.error("Attention on bfloat16 is not supported (float16 and float32 are)"));
    }
    let mut proto = n.proto.clone();
    for (k, name) in proto.input.iter_mut().enumerate() {
        if name.is_empty() {
            continue;
        }
        let v = im.value(n, k)?;
        if v.dtype() != t {
            continue;
        }
        let wide = cast(im, n, v, DType::F32)?;
        // `#` is in no name a graph gives its values (ONNX names are
        // arbitrary strings, so the suffix also names which input it is).
        *name = format!("{name}#{k}f32");
        im.values.insert(name.clone(), wide);
    }
    for (k, name) in proto.output.iter_mut().enumerate() {
        if !name.is_empty() {
            *name = format!("{name}#{k}f32");
        }
    }
    let mut wide = Node::new(&proto, 0);
    wide.label = n.label.clone();
    inner(im, &wide)?;
    wide.finish()?;
    n.mark_read(&wide);
    for (k, name) in proto.output.iter().enumerate() {
        let Some(v) = im.values.remove(name) else {
            continue;
        };
        let v = if v.dtype() == DType::F32 {
            cast(im, n, v, t)?
        } else {
            v
        };
        im.set(n, k, v);
    }
    Ok(())
}

/// `v` converted to the float type `to`, rounded once.
fn cast(im: &mut Importer, n: &Node, v: Value, to: DType) -> Result<Value, String> {
    Ok(match v {
        Value::Const(t) => Value::Const(super::fold::convert(&t, to, None)),
        Value::Var(v) => {
            let expr = format!("{}(_a)", to.name());
            Value::Var(super::map::map(im, n, &expr, &[v], to)?)
        }
    })
}
