//! `tessera.compile`: a TC def compiled as a function, as TC's PyTorch
//! binding does: called with arrays by position or by parameter name,
//! specialized and cached per set of sizes (over `engine::Function`), run
//! with the GIL released.

use std::collections::HashMap;

use interp::Arg;
use ir::{DType, Param, Value};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::{arrays, errors};

/// A TC def compiled for this machine; call it with arrays.
#[pyclass(frozen, module = "tessera")]
struct Function {
    function: engine::Function,
}

#[pymethods]
impl Function {
    /// Calls the def: arguments by position (the def's parameter order) or
    /// by name; tensors as arrays, scalars as numbers. Returns the output
    /// as a NumPy array, or a tuple of them when the def has several.
    #[pyo3(signature = (*args, **kwargs))]
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let def = self.function.def();
        let params = self.inputs();
        if args.len() > params.len() {
            return Err(errors::input(format!(
                "def `{}` takes {} arguments, got {}",
                def.name,
                params.len(),
                args.len()
            )));
        }
        let mut given: HashMap<String, Arg> = HashMap::new();
        for (p, a) in params.iter().zip(args.iter()) {
            given.insert(p.clone(), argument(def, p, &a)?);
        }
        for (k, v) in kwargs.into_iter().flatten() {
            let name: String = k.extract()?;
            if given.contains_key(&name) {
                return Err(errors::input(format!(
                    "argument `{name}` is given twice (by position and by name)"
                )));
            }
            let a = argument(def, &name, &v)?;
            given.insert(name, a);
        }
        let mut notes = Vec::new();
        let outputs = py
            .detach(|| self.function.call(given, &mut notes))
            .map_err(errors::to_py)?;
        warn_notes(py, &notes)?;
        let mut arrays: Vec<Bound<'py, PyAny>> = outputs
            .into_iter()
            .map(|(_, t)| arrays::array_from(py, t))
            .collect::<PyResult<_>>()?;
        if arrays.len() == 1 {
            return Ok(arrays.remove(0));
        }
        Ok(PyTuple::new(py, arrays)?.into_any())
    }

    /// The def's name.
    #[getter]
    fn entry(&self) -> String {
        self.function.def().name.clone()
    }

    /// The def's parameters a call takes (those not declared constant),
    /// in order.
    #[getter]
    fn inputs(&self) -> Vec<String> {
        let constants: Vec<&str> = self.function.constants().collect();
        let def = self.function.def();
        def.params
            .iter()
            .map(|p| p.name().to_string())
            .filter(|p| !constants.contains(&p.as_str()))
            .collect()
    }

    /// The def's outputs, in order.
    #[getter]
    fn outputs(&self) -> Vec<String> {
        self.function.def().outputs.clone()
    }

    /// How many sets of sizes the def is compiled for.
    #[getter]
    fn specializations(&self) -> usize {
        self.function.specializations()
    }

    fn __repr__(&self) -> String {
        format!("tessera.Function('{}')", self.function.def().name)
    }
}

/// The argument `obj` gives parameter `name` of `def`: a number for a
/// scalar, a tensor for anything else (the engine checks that it fits).
fn argument(def: &ir::Def, name: &str, obj: &Bound<'_, PyAny>) -> PyResult<Arg> {
    let scalar = def.params.iter().find_map(|p| match p {
        Param::Scalar { name: n, dtype } if n == name => Some(*dtype),
        _ => None,
    });
    let Some(dtype) = scalar else {
        return Ok(Arg::Tensor(arrays::tensor_from(
            obj,
            &format!("argument `{name}`"),
        )?));
    };
    let bad = |what: &str| {
        errors::input(format!(
            "argument `{name}` is {what}, but `{name}` is a {dtype} scalar"
        ))
    };
    let value = if dtype == DType::Bool {
        Value::Bool(obj.extract::<bool>().map_err(|_| bad("not a bool"))?)
    } else if dtype.is_float() {
        let x: f64 = obj.extract().map_err(|_| bad("not a number"))?;
        Value::Float(if dtype == DType::F32 {
            f64::from(x as f32)
        } else {
            x
        })
    } else {
        let x: i64 = obj.extract().map_err(|_| bad("not an integer"))?;
        let fits = ir::arith::cast_value(dtype, Value::Int(x)) == Value::Int(x);
        if !fits {
            return Err(bad(&format!("{x}, which does not fit")));
        }
        Value::Int(x)
    };
    Ok(Arg::Scalar(value))
}

/// Compiles def `entry` of the TC source `tc_source` (text, or a
/// `pathlib.Path` to a `.tc` file) into a callable. `sizes` binds size
/// symbols for every call (others are read off the arguments' shapes);
/// `threads` is the number of threads a call uses (default: all cores);
/// `constants` gives arguments (weights) that are the same on every call,
/// which calls then leave out: they are copied now, and what depends on
/// them alone (their packing into a kernel's layout) runs once.
#[pyfunction]
#[pyo3(signature = (tc_source, entry=None, sizes=None, threads=None, constants=None))]
fn compile(
    tc_source: &Bound<'_, PyAny>,
    entry: Option<String>,
    sizes: Option<HashMap<String, i64>>,
    threads: Option<usize>,
    constants: Option<&Bound<'_, PyDict>>,
) -> PyResult<Function> {
    let source = source_from(tc_source)?;
    let sizes = sizes.unwrap_or_default();
    let mut function = engine::Function::new(source, entry.as_deref(), sizes, setup(threads)?)
        .map_err(errors::to_py)?;
    if let Some(constants) = constants {
        let def = function.def().clone();
        let mut given = HashMap::new();
        for (k, v) in constants {
            let name: String = k.extract()?;
            given.insert(name.clone(), argument(&def, &name, &v)?);
        }
        function = function.with_constants(given).map_err(errors::to_py)?;
    }
    Ok(Function { function })
}

/// TC source given as text (named `<string>` in messages) or as a path.
pub fn source_from(obj: &Bound<'_, PyAny>) -> PyResult<engine::Source> {
    let path_like = obj.py().import("os")?.getattr("PathLike")?;
    if obj.is_instance(&path_like)? {
        let path: std::path::PathBuf = obj.extract()?;
        return engine::Source::read_tc(&path).map_err(errors::to_py);
    }
    let text: String = obj.extract().map_err(|_| {
        errors::input("TC source must be a str (the text) or an os.PathLike (a file)")
    })?;
    engine::Source::tc("<string>".to_string(), text).map_err(errors::to_py)
}

/// Compiled runs on `threads` threads (rayon's global pool when `None`).
pub fn setup(threads: Option<usize>) -> PyResult<engine::Setup> {
    let pool = threads
        .map(engine::thread_pool)
        .transpose()
        .map_err(errors::to_py)?;
    Ok(engine::Setup {
        compiled: Some(engine::Options::default()),
        pool,
    })
}

/// Tells the engine's notes (a def run on the interpreter because lowering
/// does not handle it yet) as Python warnings.
pub fn warn_notes(py: Python<'_>, notes: &[engine::Note]) -> PyResult<()> {
    if notes.is_empty() {
        return Ok(());
    }
    let warnings = py.import("warnings")?;
    for n in notes {
        warnings.call_method1("warn", (n.to_string(),))?;
    }
    Ok(())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Function>()?;
    m.add_function(wrap_pyfunction!(compile, m)?)?;
    Ok(())
}
