//! `import tessera`: the Python package, a thin layer over the engine.
//! Each entry point is one module here (`session.rs`: ONNX models as
//! inference sessions; `function.rs`: TC defs compiled as functions;
//! `imperative.rs`: PyTorch-style Python functions, functionalized and
//! compiled; `verify.rs`: the equivalence verifier; `optimize.rs`: the optimizer)
//! that converts arrays
//! (`arrays.rs`) and errors (`errors.rs`) and releases the GIL while the
//! engine works; adding an entry point is adding a module and a line to
//! [`tessera`].

mod arrays;
mod errors;
mod function;
mod imperative;
mod optimize;
mod session;
mod verify;

use pyo3::prelude::*;

/// How many input arrays tessera has copied since it was imported: arrays
/// that were not C-contiguous or not aligned to 16 bytes, and objects
/// that were not arrays. A test of zero-copy reads it before and after.
#[pyfunction]
fn input_copies() -> u64 {
    arrays::copies()
}

/// tessera: a tensor-program optimizer and compiler for the CPU.
#[pymodule]
#[pyo3(name = "tessera")]
fn tessera(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    session::register(m)?;
    function::register(m)?;
    imperative::register(m)?;
    verify::register(m)?;
    optimize::register(m)?;
    m.add_function(wrap_pyfunction!(input_copies, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
