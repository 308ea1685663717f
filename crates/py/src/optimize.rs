//! `tessera.optimize`: a faster equivalent of a TC def (or of an ONNX
//! model's program) at given sizes, over
//! `engine::optimize::optimize_cached`: the proved rewrite rules and
//! mutants searched, the candidates timed, the result proved equal to the
//! original, and the result of an identical earlier search reused from
//! the cache; the GIL is released while it works. [`options`] is also how
//! `InferenceSession(..., optimize=True)` asks for it.

use std::collections::HashMap;
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors;

/// What the optimizer gave for a def.
#[pyclass(frozen, module = "tessera")]
struct Optimized {
    /// The def's name.
    #[pyo3(get)]
    entry: String,
    /// The optimized def as TC, with the defs it calls that the search
    /// generated before it (at the sizes it was searched for); the
    /// original def's text when unchanged.
    #[pyo3(get)]
    program: String,
    /// Whether the def changed.
    #[pyo3(get)]
    changed: bool,
    /// The original's time and the result's, in seconds: measured, or
    /// estimated (`measured` says which).
    #[pyo3(get)]
    original_time: f64,
    #[pyo3(get)]
    time: f64,
    #[pyo3(get)]
    measured: bool,
    steps: Vec<opt::optimize::Step>,
    /// The verifier's verdict on the result (`None` when unchanged).
    #[pyo3(get)]
    proof: Option<String>,
    /// Whether the result was read from the cache.
    #[pyo3(get)]
    cached: bool,
    /// The search's time in seconds (for a cached result, that of the
    /// search that found it).
    #[pyo3(get)]
    search_time: f64,
    /// The line `tessera run --optimize` prints.
    summary: String,
}

#[pymethods]
impl Optimized {
    /// The steps the result applies, each a dict: `rule`, `at` (where in
    /// the original), `ops` (the operators it applies) and `verdict` (how
    /// it is proved).
    #[getter]
    fn steps<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        self.steps
            .iter()
            .map(|s| {
                let d = PyDict::new(py);
                d.set_item("rule", &s.rule)?;
                d.set_item("at", &s.at)?;
                d.set_item("ops", &s.ops)?;
                d.set_item("verdict", &s.verdict)?;
                Ok(d)
            })
            .collect()
    }

    /// The original's time over the result's.
    #[getter]
    fn speedup(&self) -> f64 {
        self.original_time / self.time.max(1e-12)
    }

    fn __str__(&self) -> String {
        self.summary.clone()
    }

    fn __repr__(&self) -> String {
        let py_bool = |b: bool| if b { "True" } else { "False" };
        format!(
            "tessera.Optimized(entry='{}', changed={}, steps={}, speedup={:.2}, measured={}, cached={})",
            self.entry,
            py_bool(self.changed),
            self.steps.len(),
            self.speedup(),
            py_bool(self.measured),
            py_bool(self.cached)
        )
    }
}

/// The engine's optimizer options: a search of `budget` seconds (default
/// 10) measuring the `top_k` cheapest candidates by estimate (default 5),
/// or deciding by the estimate alone when `measure` is off, deriving the
/// contractions (OLLIE) to `derive_depth` (0: not at all). A budget that
/// is not a number of seconds, or a budget or top-k of 0, is an
/// `InputError`.
pub fn options(
    budget: Option<f64>,
    top_k: Option<usize>,
    measure: bool,
    derive_depth: Option<usize>,
) -> PyResult<engine::optimize::Options> {
    let defaults = opt::optimize::Options::default();
    let budget = match budget {
        None => defaults.budget,
        Some(b) => Duration::try_from_secs_f64(b)
            .map_err(|_| errors::input(format!("`budget` {b} is not a number of seconds")))?,
    };
    let search = opt::optimize::Options {
        budget,
        top_k: top_k.unwrap_or(defaults.top_k),
        measure,
        derive_depth: derive_depth.unwrap_or(defaults.derive_depth),
        ..defaults
    };
    search.check().map_err(errors::input)?;
    Ok(engine::optimize::Options {
        search,
        ..Default::default()
    })
}

/// Optimizes def `entry` (the source's only def when `None`) of
/// `tc_source` (TC text, or an `os.PathLike` to a `.tc` file or an `.onnx`
/// model) at `sizes`: a search of `budget` seconds measuring the `top_k`
/// cheapest candidates by estimate (with `measure=False`, deciding by the
/// estimate alone: nothing is compiled or timed), expression derivation
/// exploring to `derive_depth` (0 leaves it out), or the result of an
/// identical earlier search from the cache. For a model, `sizes` binds its
/// symbolic input dimensions.
// Each argument is a keyword of the Python function, which pyo3 maps one
// to one.
#[allow(clippy::too_many_arguments)]
#[pyfunction]
#[pyo3(signature = (tc_source, entry=None, sizes=None, budget=10.0, top_k=5, measure=true, derive_depth=opt::derive::DEFAULT_DEPTH))]
fn optimize(
    py: Python<'_>,
    tc_source: &Bound<'_, PyAny>,
    entry: Option<String>,
    sizes: Option<HashMap<String, i64>>,
    budget: f64,
    top_k: usize,
    measure: bool,
    derive_depth: usize,
) -> PyResult<Optimized> {
    let options = options(Some(budget), Some(top_k), measure, Some(derive_depth))?;
    let sizes = sizes.unwrap_or_default();
    let (source, sizes) = match onnx_path(tc_source)? {
        Some(path) => {
            let source = engine::Source::load_onnx(
                &path,
                entry.as_deref(),
                &sizes,
                &HashMap::new(),
                &HashMap::new(),
            )
            .map_err(errors::to_py)?;
            // The import bound the sizes: the model def has none.
            (source, HashMap::new())
        }
        None => (crate::function::source_from(tc_source)?, sizes),
    };
    let found = py
        .detach(|| {
            engine::optimize::optimize_cached(
                &source,
                entry.as_deref(),
                &sizes,
                &options,
                &mut |_| {},
            )
        })
        .map_err(errors::to_py)?;
    Ok(Optimized {
        entry: found.def.name.clone(),
        summary: found.summary(),
        program: found.text,
        changed: found.changed,
        original_time: found.original_time.as_secs_f64(),
        time: found.time.as_secs_f64(),
        measured: found.measured,
        steps: found.steps,
        proof: found.proof,
        cached: found.cached,
        search_time: found.elapsed.as_secs_f64(),
    })
}

/// The path of an ONNX model `obj` names (an `os.PathLike` ending in
/// `.onnx`), or `None` for TC source.
fn onnx_path(obj: &Bound<'_, PyAny>) -> PyResult<Option<std::path::PathBuf>> {
    let path_like = obj.py().import("os")?.getattr("PathLike")?;
    if !obj.is_instance(&path_like)? {
        return Ok(None);
    }
    let path: std::path::PathBuf = obj.extract()?;
    Ok(path
        .extension()
        .is_some_and(|e| e == "onnx")
        .then_some(path))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Optimized>()?;
    m.add_function(wrap_pyfunction!(optimize, m)?)?;
    Ok(())
}
