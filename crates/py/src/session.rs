//! `tessera.InferenceSession`: an ONNX model run as ONNX Runtime's
//! `InferenceSession` is (`get_inputs`, `get_outputs`, `run(output_names,
//! input_feed)`), over `engine::Model`: compiled once per set of input
//! shapes, run with the GIL released, from any number of threads.

use std::collections::HashMap;
use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use crate::{arrays, errors};

/// One input or output of a model, as ONNX Runtime's `NodeArg`.
#[pyclass(frozen, module = "tessera", name = "NodeArg")]
struct NodeArg {
    /// The name in the model.
    #[pyo3(get)]
    name: String,
    /// ONNX's type, as ONNX Runtime writes it: `tensor(float)`.
    #[pyo3(get, name = "type")]
    type_: String,
    dims: Option<Vec<onnx::Dim>>,
}

#[pymethods]
impl NodeArg {
    /// The dimensions: an int when fixed, the symbol's name when symbolic,
    /// `None` when unknown; `None` for a shape the model does not give.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyList>>> {
        let Some(dims) = &self.dims else {
            return Ok(None);
        };
        let items: Vec<Bound<'py, PyAny>> = dims
            .iter()
            .map(|d| -> PyResult<Bound<'py, PyAny>> {
                Ok(match d {
                    onnx::Dim::Fixed(v) => v.into_pyobject(py)?.into_any(),
                    onnx::Dim::Symbol(s) => s.into_pyobject(py)?.into_any(),
                    onnx::Dim::Unknown => py.None().into_bound(py),
                })
            })
            .collect::<PyResult<_>>()?;
        PyList::new(py, items).map(Some)
    }

    fn __repr__(&self) -> String {
        let dims = self.dims.as_ref().map_or_else(
            || "None".to_string(),
            |d| {
                let shown: Vec<String> = d
                    .iter()
                    .map(|d| match d {
                        onnx::Dim::Fixed(v) => v.to_string(),
                        onnx::Dim::Symbol(s) => format!("'{s}'"),
                        onnx::Dim::Unknown => "None".to_string(),
                    })
                    .collect();
                format!("[{}]", shown.join(", "))
            },
        );
        format!(
            "NodeArg(name='{}', type='{}', shape={dims})",
            self.name, self.type_
        )
    }
}

impl NodeArg {
    fn all(declared: &[onnx::Declared]) -> Vec<NodeArg> {
        declared
            .iter()
            .map(|d| NodeArg {
                name: d.name.clone(),
                type_: format!("tensor({})", d.type_name),
                dims: d.dims.clone(),
            })
            .collect()
    }
}

/// An ONNX model compiled for this machine, run like ONNX Runtime's
/// `InferenceSession`.
///
/// `path` is the model file. `sizes` binds symbolic input dimensions by
/// name (`{"batch": 1}`); a model whose input shapes are all known is
/// compiled when the session is made, else once per set of input shapes,
/// on first use (and once per value of an input an operator takes as a
/// constant, such as a reduction's axes). `threads` is the number of threads a run uses (default:
/// all cores).
///
/// For scripts written for ONNX Runtime, `InferenceSession(path,
/// sess_options, providers)` works too: an ONNX Runtime `SessionOptions`
/// (positional or `sess_options=`) gives its `intra_op_num_threads` (0:
/// all cores; its other settings are optimization switches tessera does
/// not need); `providers` may only name `CPUExecutionProvider`, and
/// `provider_options` may only be empty.
///
/// With `optimize=True`, each set of input shapes runs the optimizer's
/// result for the model's program (as `tessera.optimize` finds it: a
/// search of `budget` seconds, default 10, or the result of an identical
/// earlier search from the cache) instead of the program as imported.
#[pyclass(frozen, module = "tessera")]
struct InferenceSession {
    model: engine::Model,
    path: String,
    threads: Option<usize>,
}

#[pymethods]
impl InferenceSession {
    #[new]
    #[pyo3(signature = (path, sizes=None, threads=None, providers=None, sess_options=None, provider_options=None, *, optimize=false, budget=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        path: &Bound<'_, PyAny>,
        sizes: Option<&Bound<'_, PyAny>>,
        threads: Option<&Bound<'_, PyAny>>,
        providers: Option<&Bound<'_, PyAny>>,
        sess_options: Option<&Bound<'_, PyAny>>,
        provider_options: Option<&Bound<'_, PyAny>>,
        optimize: bool,
        budget: Option<f64>,
    ) -> PyResult<InferenceSession> {
        let optimize =
            match (optimize, budget) {
                (true, b) => Some(crate::optimize::options(b, None, true, None)?),
                (false, Some(_)) => return Err(errors::input(
                    "`budget` is the optimizer's search time, which runs only with `optimize=True`",
                )),
                (false, None) => None,
            };
        let path = model_path(path)?;
        // ONNX Runtime's positional order is (path, sess_options,
        // providers): told apart from (path, sizes, threads) by type.
        let (sizes, sess_options) = match sizes {
            Some(s) if is_session_options(s)? => {
                if sess_options.is_some() {
                    return Err(errors::input(
                        "session options are given twice (positionally and as `sess_options`)",
                    ));
                }
                (None, Some(s))
            }
            s => (s, sess_options),
        };
        let (threads, providers) = match threads {
            Some(t) if is_sequence(t) => {
                if providers.is_some() {
                    return Err(errors::input(
                        "providers are given twice (positionally and as `providers`)",
                    ));
                }
                (None, Some(t))
            }
            t => (t, providers),
        };
        if let Some(p) = providers {
            check_providers(p)?;
        }
        if let Some(o) = provider_options {
            check_provider_options(o)?;
        }
        let sizes: HashMap<String, i64> = match sizes {
            None => HashMap::new(),
            Some(s) => s.extract().map_err(|_| {
                errors::input(format!(
                    "`sizes` must map symbolic dimension names to ints (`{{\"batch\": 1}}`), not a {}",
                    type_name(s)
                ))
            })?,
        };
        let threads = match (threads, sess_options) {
            (Some(t), _) => Some(t.extract::<usize>().map_err(|_| {
                errors::input(format!(
                    "`threads` must be a positive int, not {}",
                    t.repr()
                        .map_or_else(|_| "that".to_string(), |r| r.to_string())
                ))
            })?),
            (None, Some(o)) => intra_op_threads(o)?,
            (None, None) => None,
        };
        let setup = crate::function::setup(threads)?;
        let mut notes = Vec::new();
        let shown = path.display().to_string();
        let model = py
            .detach(|| engine::Model::open(&path, sizes, setup, optimize, &mut notes))
            .map_err(errors::to_py)?;
        crate::function::warn_notes(py, &notes)?;
        Ok(InferenceSession {
            model,
            path: shown,
            threads,
        })
    }

    /// The threads a run uses; `None` for all cores.
    #[getter]
    fn threads(&self) -> Option<usize> {
        self.threads
    }

    /// The model's inputs (its initializers left out), in its order.
    fn get_inputs(&self) -> Vec<NodeArg> {
        NodeArg::all(&self.model.signature.inputs)
    }

    /// The model's outputs, in its order.
    fn get_outputs(&self) -> Vec<NodeArg> {
        NodeArg::all(&self.model.signature.outputs)
    }

    /// `["CPUExecutionProvider"]`, as ONNX Runtime names where a session runs.
    fn get_providers(&self) -> Vec<&'static str> {
        vec!["CPUExecutionProvider"]
    }

    /// How many programs the model is compiled into: one per set of input
    /// shapes and values of the inputs taken as constants.
    #[getter]
    fn specializations(&self) -> usize {
        self.model.specializations()
    }

    /// Runs the model: `input_feed` maps input names to arrays (NumPy
    /// arrays, DLPack tensors such as PyTorch CPU tensors); returns the
    /// outputs named in `output_names` (all, in the model's order, when it
    /// is `None`) as NumPy arrays. The GIL is released while the model runs.
    #[pyo3(signature = (output_names, input_feed, run_options=None))]
    fn run<'py>(
        &self,
        py: Python<'py>,
        output_names: Option<Vec<String>>,
        input_feed: &Bound<'py, PyDict>,
        run_options: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Vec<Bound<'py, PyAny>>> {
        if run_options.is_some_and(|o| !o.is_none()) {
            return Err(errors::input(
                "`run_options` are ONNX Runtime's; tessera takes none (pass None)",
            ));
        }
        let mut feed = Vec::with_capacity(input_feed.len());
        for (k, v) in input_feed.iter() {
            let name: String = k
                .extract()
                .map_err(|_| errors::input(format!("input_feed key {k} is not a string")))?;
            let t = arrays::tensor_from(&v, &format!("input `{name}`"))?;
            feed.push((name, t));
        }
        let mut notes = Vec::new();
        let outputs = py
            .detach(|| self.model.run(feed, output_names.as_deref(), &mut notes))
            .map_err(errors::to_py)?;
        crate::function::warn_notes(py, &notes)?;
        outputs
            .into_iter()
            .map(|(_, t)| arrays::array_from(py, t))
            .collect()
    }

    fn __repr__(&self) -> String {
        format!("tessera.InferenceSession('{}')", self.path)
    }
}

/// The model file a session is made from: a path (`str` or
/// `os.PathLike`). A file object is refused with what to pass instead.
fn model_path(path: &Bound<'_, PyAny>) -> PyResult<PathBuf> {
    if let Ok(p) = path.extract::<PathBuf>() {
        return Ok(p);
    }
    if path.hasattr("read")? {
        let closed = path
            .getattr("closed")
            .and_then(|c| c.extract::<bool>())
            .unwrap_or(false);
        let why = if closed {
            "a closed file object"
        } else {
            "a file object"
        };
        return Err(errors::input(format!(
            "the model is given as {why}; pass the model's path instead"
        )));
    }
    Err(errors::input(format!(
        "the model must be given by its path (str or os.PathLike), not a {}",
        path.get_type().name()?
    )))
}

/// Whether `o` is ONNX Runtime's `SessionOptions` (or looks like it): not
/// a mapping, with an `intra_op_num_threads`.
fn is_session_options(o: &Bound<'_, PyAny>) -> PyResult<bool> {
    Ok(!o.is_instance_of::<PyDict>() && o.hasattr("intra_op_num_threads")?)
}

/// Whether `o` is a list or tuple (ONNX Runtime's providers, positionally).
fn is_sequence(o: &Bound<'_, PyAny>) -> bool {
    o.is_instance_of::<PyList>() || o.is_instance_of::<PyTuple>()
}

/// The threads ONNX Runtime session options ask for: their
/// `intra_op_num_threads`, 0 meaning all cores.
fn intra_op_threads(o: &Bound<'_, PyAny>) -> PyResult<Option<usize>> {
    let n: i64 = o
        .getattr("intra_op_num_threads")?
        .extract()
        .map_err(|_| errors::input("`sess_options.intra_op_num_threads` is not an int"))?;
    match n {
        0 => Ok(None),
        n => usize::try_from(n).map(Some).map_err(|_| {
            errors::input(format!(
                "`sess_options.intra_op_num_threads` is {n}; it must be positive (or 0 for all cores)"
            ))
        }),
    }
}

/// `provider_options` as ONNX Runtime takes them (one mapping per
/// provider): tessera's CPU provider has none, so each must be empty.
fn check_provider_options(options: &Bound<'_, PyAny>) -> PyResult<()> {
    if options.is_none() {
        return Ok(());
    }
    for o in options.try_iter()? {
        let o = o?;
        if o.len().map_err(|_| {
            errors::input(format!(
                "`provider_options` holds a {}, not a mapping of options",
                type_name(&o)
            ))
        })? > 0
        {
            return Err(errors::input(format!(
                "provider options {}: tessera's CPU provider takes none",
                o.repr()?
            )));
        }
    }
    Ok(())
}

/// The name of `o`'s type, for messages.
fn type_name(o: &Bound<'_, PyAny>) -> String {
    o.get_type()
        .name()
        .map_or_else(|_| "value".to_string(), |n| n.to_string())
}

/// `providers` as ONNX Runtime takes them (names, or `(name, options)`
/// pairs): only the CPU's may be asked for.
fn check_providers(providers: &Bound<'_, PyAny>) -> PyResult<()> {
    for p in providers.try_iter()? {
        let p = p?;
        let name: String = match p.extract::<String>() {
            Ok(n) => n,
            Err(_) => p.get_item(0)?.extract()?,
        };
        if name != "CPUExecutionProvider" {
            return Err(errors::input(format!(
                "provider `{name}`: tessera runs on the CPU only (`CPUExecutionProvider`)"
            )));
        }
    }
    Ok(())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<InferenceSession>()?;
    m.add_class::<NodeArg>()?;
    Ok(())
}
