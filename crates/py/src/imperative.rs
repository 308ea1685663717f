//! `@tessera.function`: a PyTorch-style Python function (views, in-place
//! updates, loops, branches) run compiled. The function's source, and the
//! sources of the module-level functions it calls, go through the
//! imperative frontend and TensorSSA's conversion once per set of argument
//! shapes, types and integer/boolean values (the specialization key); each
//! specialization is compiled once (its regions run around compiled
//! stages) and kept. Arguments are NumPy arrays or PyTorch CPU tensors
//! (read through `.numpy()`, without a copy), integers, booleans and
//! floats; results are NumPy arrays, or PyTorch tensors when a tensor
//! argument was one. The undecorated function stays available as
//! `.python`, so the same code runs under plain PyTorch for comparison.

use std::collections::HashMap;
use std::sync::Mutex;

use interp::Arg;
use ir::{DType, Value};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::{arrays, errors};

/// One argument's part of the specialization key.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum KeyPart {
    Tensor(DType, Vec<usize>),
    Int(i64),
    Bool(bool),
    Float,
}

/// A converted and compiled specialization.
struct Entry {
    runnable: engine::regions::Runnable,
    /// The converted def's parameters, in order: each a Python parameter's
    /// name.
    params: Vec<String>,
}

/// A Python function compiled per specialization; call it like the
/// function.
#[pyclass(frozen, module = "tessera")]
struct ImperativeFunction {
    /// The undecorated function.
    python: Py<PyAny>,
    name: String,
    /// The file name messages show, and the text the frontend reads.
    file: String,
    text: String,
    params: Vec<String>,
    entries: Mutex<HashMap<Vec<KeyPart>, std::sync::Arc<Entry>>>,
    setup: engine::Setup,
}

#[pymethods]
impl ImperativeFunction {
    #[pyo3(signature = (*args, **kwargs))]
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if args.len() > self.params.len() {
            return Err(errors::input(format!(
                "`{}` takes {} arguments, got {}",
                self.name,
                self.params.len(),
                args.len()
            )));
        }
        let mut given: Vec<Option<Bound<'py, PyAny>>> = vec![None; self.params.len()];
        for (k, a) in args.iter().enumerate() {
            given[k] = Some(a);
        }
        for (k, v) in kwargs.into_iter().flatten() {
            let name: String = k.extract()?;
            let Some(i) = self.params.iter().position(|p| *p == name) else {
                return Err(errors::input(format!(
                    "`{}` has no parameter `{name}`",
                    self.name
                )));
            };
            if given[i].is_some() {
                return Err(errors::input(format!(
                    "argument `{name}` is given twice (by position and by name)"
                )));
            }
            given[i] = Some(v);
        }
        let torch_out = given.iter().flatten().any(|a| is_torch(a));
        let mut key = Vec::new();
        let mut values: HashMap<String, Arg> = HashMap::new();
        let mut frontend_args = Vec::new();
        for (p, a) in self.params.iter().zip(&given) {
            let a = a
                .as_ref()
                .ok_or_else(|| errors::input(format!("missing argument `{p}`")))?;
            let (part, arg, value) = classify(p, a)?;
            key.push(part);
            frontend_args.push(arg);
            if let Some(v) = value {
                values.insert(p.clone(), v);
            }
        }
        let entry = self.entry(py, key, &frontend_args)?;
        let args: HashMap<String, Arg> = entry
            .params
            .iter()
            .filter_map(|p| values.remove(p).map(|v| (p.clone(), v)))
            .collect();
        let runnable = &entry.runnable;
        let pool = self.setup.pool.clone();
        let outputs = py
            .detach(|| match &pool {
                Some(pool) => pool.install(|| runnable.run(&args)),
                None => runnable.run(&args),
            })
            .map_err(errors::to_py)?;
        let mut results: Vec<Bound<'py, PyAny>> = Vec::new();
        for (_, t) in outputs {
            let a = arrays::array_from(py, t)?;
            results.push(if torch_out {
                py.import("torch")?.call_method1("from_numpy", (a,))?
            } else {
                a
            });
        }
        if results.len() == 1 {
            return Ok(results.remove(0));
        }
        Ok(PyTuple::new(py, results)?.into_any())
    }

    /// The function as written, run by Python (and PyTorch).
    #[getter]
    fn python(&self, py: Python<'_>) -> Py<PyAny> {
        self.python.clone_ref(py)
    }

    /// The converted program (TC with loop and branch regions) for the
    /// given arguments, and the mutations the conversion removed.
    #[pyo3(signature = (*args))]
    fn functionalize(&self, args: &Bound<'_, PyTuple>) -> PyResult<String> {
        let mut frontend_args = Vec::new();
        for (p, a) in self.params.iter().zip(args.iter()) {
            frontend_args.push(classify(p, &a)?.1);
        }
        if frontend_args.len() != self.params.len() {
            return Err(errors::input(format!(
                "`{}` takes {} arguments",
                self.name,
                self.params.len()
            )));
        }
        let module = ssa::Module::parse(&self.text)
            .map_err(|e| errors::to_py(engine::Error::Source(e.render(&self.file, &self.text))))?;
        let (source, removed) = engine::python::convert(
            &self.file,
            &self.text,
            &module,
            &self.name,
            &frontend_args,
            false,
        )
        .map_err(errors::to_py)?;
        let mut out = source.text.clone();
        out.push_str(&format!("\n# {} mutations removed\n", removed.len()));
        for r in removed {
            out.push_str(&format!("#   {r}\n"));
        }
        Ok(out)
    }

    /// How many specializations are compiled.
    #[getter]
    fn specializations(&self) -> usize {
        self.entries.lock().map(|e| e.len()).unwrap_or(0)
    }

    fn __repr__(&self) -> String {
        format!("tessera.function({})", self.name)
    }
}

impl ImperativeFunction {
    /// The specialization for `key`, converted and compiled the first time.
    fn entry(
        &self,
        py: Python<'_>,
        key: Vec<KeyPart>,
        args: &[ssa::Arg],
    ) -> PyResult<std::sync::Arc<Entry>> {
        if let Some(e) = self.entries.lock().ok().and_then(|m| m.get(&key).cloned()) {
            return Ok(e);
        }
        let (file, text, name) = (&self.file, &self.text, &self.name);
        let options = self.setup.compiled.clone().unwrap_or_default();
        let built = py.detach(|| -> Result<Entry, engine::Error> {
            let module = ssa::Module::parse(text)
                .map_err(|e| engine::Error::Source(e.render(file, text)))?;
            let (source, _) = engine::python::convert(file, text, &module, name, args, true)?;
            let def = source.program().defs[0].clone();
            let runnable = engine::regions::Runnable::compile(
                source.program(),
                &def,
                &HashMap::new(),
                &options,
            )?;
            Ok(Entry {
                runnable,
                params: def.params.iter().map(|p| p.name().to_string()).collect(),
            })
        });
        let entry = std::sync::Arc::new(built.map_err(errors::to_py)?);
        if let Ok(mut m) = self.entries.lock() {
            m.insert(key, entry.clone());
        }
        Ok(entry)
    }
}

fn is_torch(a: &Bound<'_, PyAny>) -> bool {
    a.get_type()
        .module()
        .is_ok_and(|m| m.to_string().starts_with("torch"))
}

/// An argument's key part, what the frontend traces it as, and its value
/// for the converted def (tensors and floats; integers and booleans are
/// specialized on, so they are no parameters).
fn classify(name: &str, a: &Bound<'_, PyAny>) -> PyResult<(KeyPart, ssa::Arg, Option<Arg>)> {
    if a.is_instance_of::<pyo3::types::PyBool>() {
        let b: bool = a.extract()?;
        return Ok((KeyPart::Bool(b), ssa::Arg::Bool(b), None));
    }
    if a.is_instance_of::<pyo3::types::PyInt>() {
        let i: i64 = a.extract()?;
        return Ok((KeyPart::Int(i), ssa::Arg::Int(i), None));
    }
    if a.is_instance_of::<pyo3::types::PyFloat>() {
        let x: f64 = a.extract()?;
        return Ok((
            KeyPart::Float,
            ssa::Arg::Float,
            Some(Arg::Scalar(Value::Float(f64::from(x as f32)))),
        ));
    }
    let array = if is_torch(a) {
        // A CPU tensor's memory, as an array (no copy); a tensor that
        // needs grad is detached first, as reading it does.
        a.call_method0("detach")?.call_method0("numpy")?
    } else {
        a.clone()
    };
    let t = arrays::tensor_from(&array, &format!("argument `{name}`"))?;
    let shape = t.shape().to_vec();
    let dtype = t.dtype();
    Ok((
        KeyPart::Tensor(dtype, shape.clone()),
        ssa::Arg::Tensor {
            dtype,
            shape: shape.iter().map(|&d| d as i64).collect(),
        },
        Some(Arg::Tensor(t)),
    ))
}

/// The source the frontend reads for `f`: its own def and those of the
/// module-level functions it calls (transitively), dedented, decorators
/// dropped; and the file name messages show.
fn source_of(py: Python<'_>, f: &Bound<'_, PyAny>) -> PyResult<(String, String, String)> {
    let inspect = py.import("inspect")?;
    let textwrap = py.import("textwrap")?;
    let name: String = f.getattr("__name__")?.extract()?;
    let file: String = inspect
        .call_method1("getsourcefile", (f,))?
        .extract::<Option<String>>()?
        .unwrap_or_else(|| "<source>".to_string());
    let mut seen = vec![name.clone()];
    let mut pending = vec![f.clone()];
    let mut parts = Vec::new();
    while let Some(g) = pending.pop() {
        let src: String = textwrap
            .call_method1("dedent", (inspect.call_method1("getsource", (&g,))?,))?
            .extract()?;
        // The decorator lines (this one among them) are Python's, not the
        // subset's.
        let body: String = src
            .lines()
            .skip_while(|l| l.trim_start().starts_with('@'))
            .map(|l| format!("{l}\n"))
            .collect();
        parts.push(body);
        let globals = g.getattr("__globals__")?;
        let names: Vec<String> = g.getattr("__code__")?.getattr("co_names")?.extract()?;
        for n in names {
            if seen.contains(&n) {
                continue;
            }
            if let Ok(callee) = globals.get_item(&n) {
                let is_function = inspect
                    .call_method1("isfunction", (&callee,))?
                    .extract::<bool>()?;
                if is_function {
                    seen.push(n);
                    pending.push(callee);
                }
            }
        }
    }
    Ok((file, parts.join("\n"), name))
}

/// Decorates a PyTorch-style function: `@tessera.function` or
/// `tessera.function(f, threads=2)`.
#[pyfunction]
#[pyo3(signature = (f, threads=None))]
fn function(
    py: Python<'_>,
    f: &Bound<'_, PyAny>,
    threads: Option<usize>,
) -> PyResult<ImperativeFunction> {
    let (file, text, name) = source_of(py, f)?;
    let module = ssa::Module::parse(&text)
        .map_err(|e| errors::to_py(engine::Error::Source(e.render(&file, &text))))?;
    let params = module
        .signature(&name)
        .map_err(|e| errors::to_py(engine::Error::Source(e.render(&file, &text))))?
        .into_iter()
        .map(|(p, _)| p)
        .collect();
    Ok(ImperativeFunction {
        python: f.clone().unbind(),
        name,
        file,
        text,
        params,
        entries: Mutex::new(HashMap::new()),
        setup: crate::function::setup(threads)?,
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<ImperativeFunction>()?;
    m.add_function(wrap_pyfunction!(function, m)?)?;
    Ok(())
}
