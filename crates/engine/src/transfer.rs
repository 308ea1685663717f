//! Moving tensors into and out of a compiled program's memory: the one
//! place that converts between the interpreter's tensors and the runtime's
//! buffers (kept apart so that binding callers' tensors without copies
//! replaces this module alone).

use std::collections::HashMap;

use interp::{Arg, Tensor};
use ir::Value;
use runtime::{Executable, State};

use crate::compile::Output;
use crate::Error;

/// Sets every argument in `state`.
pub(crate) fn set_args(
    exe: &Executable,
    state: &mut State,
    args: &HashMap<String, Arg>,
) -> Result<(), Error> {
    for (name, a) in args {
        let v = match a {
            Arg::Tensor(t) => t.values(),
            Arg::Scalar(v) => vec![*v],
        };
        exe.set_values(state, name, &v).map_err(|e| Error::Input {
            name: name.clone(),
            message: format!("input `{name}`: {e}"),
        })?;
    }
    Ok(())
}

/// The outputs in `state`, as tensors of their declared types and shapes.
pub(crate) fn outputs(
    exe: &Executable,
    state: &State,
    outputs: &[Output],
) -> Result<Vec<(String, Tensor)>, Error> {
    let mut out = Vec::new();
    for o in outputs {
        let vals = exe.values(state, &o.name).map_err(Error::Internal)?;
        let t = if o.dtype.is_float() {
            Tensor::from_f64(
                o.dtype,
                &o.shape,
                vals.iter()
                    .map(|v| match v {
                        Value::Float(x) => *x,
                        _ => f64::NAN,
                    })
                    .collect(),
            )
        } else {
            Tensor::from_i64(
                o.dtype,
                &o.shape,
                vals.iter()
                    .map(|v| match v {
                        Value::Int(i) => *i,
                        Value::Bool(b) => i64::from(*b),
                        Value::Float(x) => *x as i64,
                    })
                    .collect(),
            )
        };
        out.push((o.name.clone(), t));
    }
    Ok(out)
}
