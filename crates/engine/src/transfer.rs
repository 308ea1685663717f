//! Moving tensors into and out of a compiled program's memory, without
//! copies: a contiguous caller's tensor becomes its parameter's slot
//! (`runtime::Executable::bind`; any other is copied once), and each output
//! is handed out as a tensor over its slot (`Executable::output`).

use std::collections::HashMap;

use interp::{Arg, Tensor};
use runtime::{Executable, State};

use crate::Error;

/// Binds every argument in `state`.
pub(crate) fn set_args(
    exe: &Executable,
    state: &mut State,
    args: &HashMap<String, Arg>,
) -> Result<(), Error> {
    for (name, a) in args {
        match a {
            Arg::Tensor(t) => exe.bind(state, name, t),
            Arg::Scalar(v) => exe.set_values(state, name, &[*v]),
        }
        .map_err(|e| Error::Input {
            name: name.clone(),
            message: format!("input `{name}`: {e}"),
        })?;
    }
    Ok(())
}

/// The outputs in `state`, as tensors over their slots.
pub(crate) fn outputs(
    exe: &Executable,
    state: &State,
    outputs: &[String],
) -> Result<Vec<(String, Tensor)>, Error> {
    outputs
        .iter()
        .map(|o| {
            let t = exe.output(state, o).map_err(Error::Internal)?;
            Ok((o.clone(), t))
        })
        .collect()
}
