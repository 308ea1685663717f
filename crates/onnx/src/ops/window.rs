//! The window functions `HannWindow`, `HammingWindow` and `BlackmanWindow`:
//! a window of `size` points (an input, so a constant or a graph input
//! whose value the import is specialized on), computed at import in
//! `float64` and converted once to `output_datatype`.
//!
//! Guarantees: the values the ONNX reference gives (`periodic` divides by
//! `size`, otherwise by `size - 1`).

use std::f64::consts::PI;

use super::ints;
use crate::build::{Node, Value};
use crate::import::Importer;
use tensor::Tensor;

pub fn window(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let size = ints(&im.constant(n, 0, "the size")?)
        .first()
        .copied()
        .ok_or_else(|| n.error("the size is empty"))?;
    let len = usize::try_from(size)
        .ok()
        .filter(|&s| s > 0)
        .ok_or_else(|| {
            n.error(format!(
                "size {size}: tessera's tensors have positive dimensions"
            ))
        })?;
    let periodic = n.int("periodic")?.unwrap_or(1) != 0;
    let dtype = match n.int("output_datatype")? {
        None => ir::DType::F32,
        Some(code) => crate::load::dtype(code as i32)
            .ok_or_else(|| n.error(format!("output_datatype {code} is not supported")))?,
    };
    let denominator = if periodic { size } else { size - 1 } as f64;
    let values = (0..len)
        .map(|k| {
            let x = 2.0 * PI * k as f64 / denominator;
            match n.op {
                "HannWindow" => (x / 2.0).sin().powi(2),
                "HammingWindow" => {
                    let alpha = 25.0 / 46.0;
                    alpha - (1.0 - alpha) * x.cos()
                }
                _ => 0.42 - 0.5 * x.cos() + 0.08 * (2.0 * x).cos(),
            }
        })
        .collect();
    im.set(n, 0, Value::Const(Tensor::from_f64(dtype, &[len], values)));
    Ok(())
}
