//! Helpers shared by the kernel's integration tests: converting interpreter
//! tensors to VM buffers, and comparing results.

#![allow(dead_code)] // Each test binary uses a different subset.

use interp::{Data, Tensor};
use ir::{DType, Value};

/// A tensor's elements as VM values.
pub fn values(t: &Tensor) -> Vec<Value> {
    match (&t.data, t.dtype) {
        (Data::F(v), _) => v.iter().map(|x| Value::Float(*x)).collect(),
        (Data::I(v), DType::Bool) => v.iter().map(|x| Value::Bool(*x != 0)).collect(),
        (Data::I(v), _) => v.iter().map(|x| Value::Int(*x)).collect(),
    }
}

/// Whether two values agree: integers and booleans exactly, floats within
/// 1e-5 relative (absolute below magnitude 1), equal infinities, or both NaN.
pub fn close(g: &Value, w: &Value) -> bool {
    match (g, w) {
        (Value::Float(a), Value::Float(b)) => {
            a == b || (a - b).abs() <= 1e-5 * b.abs().max(1.0) || (a.is_nan() && b.is_nan())
        }
        _ => g == w,
    }
}

/// Whether two buffers agree element by element (see [`close`]).
pub fn all_close(got: &[Value], want: &[Value]) -> bool {
    got.len() == want.len() && got.iter().zip(want).all(|(g, w)| close(g, w))
}

/// Whether two buffers are identical (NaN equals NaN: the same computation
/// gives the same NaN).
pub fn identical(got: &[Value], want: &[Value]) -> bool {
    got.len() == want.len()
        && got.iter().zip(want).all(|(g, w)| match (g, w) {
            (Value::Float(a), Value::Float(b)) => {
                a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
            }
            _ => g == w,
        })
}
