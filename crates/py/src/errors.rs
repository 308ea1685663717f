//! The package's exceptions: `tessera.Error` and one subclass per kind of
//! problem, chosen on the engine's error variant (never on its text). The
//! message is the located diagnostic the command-line tool prints.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

create_exception!(
    tessera,
    Error,
    PyException,
    "Every error tessera raises; its message is the located diagnostic the `tessera` command prints."
);
create_exception!(
    tessera,
    ParseError,
    Error,
    "TC source with errors (located by file, line and column), or a file that is not a valid ONNX model."
);
create_exception!(
    tessera,
    UnsupportedOperatorError,
    Error,
    "A valid ONNX model using an operator, operator domain or operator set version tessera does not implement."
);
create_exception!(
    tessera,
    InputError,
    Error,
    "An input or output that is unknown or missing, of the wrong element type, or not an array."
);
create_exception!(
    tessera,
    ShapeError,
    InputError,
    "An input whose rank or dimensions do not fit what the program declares, or sizes that do not bind."
);
create_exception!(
    tessera,
    RunError,
    Error,
    "The program failed while running (an index out of bounds, a division by zero), located at its statement or node."
);

/// The exception for an engine error.
pub fn to_py(e: engine::Error) -> PyErr {
    use engine::Error as E;
    let message = e.to_string();
    match e {
        E::Source(_) | E::Model(_) => ParseError::new_err(message),
        E::Unsupported(_) => UnsupportedOperatorError::new_err(message),
        E::Input { .. } | E::Npy { .. } | E::Usage(_) | E::NeedsValue(_) => {
            InputError::new_err(message)
        }
        E::Shape { .. } | E::Sizes(_) => ShapeError::new_err(message),
        E::Run { .. } | E::Compiled(_) => RunError::new_err(message),
        E::Interrupted(_) => pyo3::exceptions::PyKeyboardInterrupt::new_err(message),
        E::Read { .. }
        | E::NeedsComputed { .. }
        | E::NotLowered { .. }
        | E::Build(_)
        | E::Environment(_)
        | E::Internal(_) => Error::new_err(message),
    }
}

/// An input error with `message` (`error: ` and the message, as the
/// engine's errors read).
pub fn input(message: impl std::fmt::Display) -> PyErr {
    InputError::new_err(format!("error: {message}"))
}

/// Registers the exception classes in module `m`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("Error", py.get_type::<Error>())?;
    m.add("ParseError", py.get_type::<ParseError>())?;
    m.add(
        "UnsupportedOperatorError",
        py.get_type::<UnsupportedOperatorError>(),
    )?;
    m.add("InputError", py.get_type::<InputError>())?;
    m.add("ShapeError", py.get_type::<ShapeError>())?;
    m.add("RunError", py.get_type::<RunError>())?;
    Ok(())
}
