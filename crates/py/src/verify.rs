//! `tessera.verify`: whether two TC defs compute the same outputs (PET's
//! randomized test, exact over Z_p where the defs are multi-linear), and
//! the output regions where they differ.

use std::collections::HashMap;

use pyo3::prelude::*;
use pyo3::types::{PySlice, PyTuple};

use crate::errors;

/// A region of one output where the two defs differ.
#[pyclass(frozen, module = "tessera")]
struct Region {
    /// The output's name (in the first def).
    #[pyo3(get)]
    output: String,
    /// Per dimension, `(start, stop)`.
    #[pyo3(get)]
    ranges: Vec<(usize, usize)>,
}

#[pymethods]
impl Region {
    /// The region as a NumPy index: a tuple of slices.
    #[getter]
    fn index<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let slices: Vec<Bound<'py, PySlice>> = self
            .ranges
            .iter()
            .map(|&(lo, hi)| PySlice::new(py, lo as isize, hi as isize, 1))
            .collect();
        PyTuple::new(py, slices)
    }

    fn __repr__(&self) -> String {
        let parts: Vec<String> = self
            .ranges
            .iter()
            .map(|(lo, hi)| format!("{lo}:{hi}"))
            .collect();
        format!("Region({}[{}])", self.output, parts.join(", "))
    }
}

/// The verdict: truthy when the defs are equivalent.
#[pyclass(frozen, module = "tessera")]
struct Verdict {
    /// Whether every output agrees everywhere tested.
    #[pyo3(get)]
    equivalent: bool,
    /// Where the outputs differ (empty when equivalent).
    regions: Vec<Py<Region>>,
    /// `exact` (over Z_p) or `float` (the defs are not polynomials).
    #[pyo3(get)]
    method: &'static str,
    /// The probability that "equivalent" is wrong, when the test bounds it.
    #[pyo3(get)]
    error_bound: Option<f64>,
    /// The report `tessera verify` prints.
    report: String,
}

#[pymethods]
impl Verdict {
    #[getter]
    fn regions(&self, py: Python<'_>) -> Vec<Py<Region>> {
        self.regions.iter().map(|r| r.clone_ref(py)).collect()
    }

    fn __bool__(&self) -> bool {
        self.equivalent
    }

    fn __str__(&self) -> String {
        self.report.clone()
    }

    fn __repr__(&self) -> String {
        format!(
            "Verdict(equivalent={}, regions={})",
            if self.equivalent { "True" } else { "False" },
            self.regions.len()
        )
    }
}

/// Verifies def `entry` of `a_source` against def `entry_b` (default: the
/// same name) of `b_source` (`None`: `a_source` again), each TC text or a
/// `pathlib.Path`. `sizes` binds size symbols; `trials` random draws
/// (default: enough for a false "equivalent" below 2^-60); `seed` seeds
/// them. The GIL is released while it works.
#[pyfunction]
#[pyo3(signature = (a_source, b_source, entry, sizes=None, entry_b=None, trials=None, seed=0))]
#[allow(clippy::too_many_arguments)]
fn verify(
    py: Python<'_>,
    a_source: &Bound<'_, PyAny>,
    b_source: Option<&Bound<'_, PyAny>>,
    entry: String,
    sizes: Option<HashMap<String, i64>>,
    entry_b: Option<String>,
    trials: Option<usize>,
    seed: u64,
) -> PyResult<Verdict> {
    let a = crate::function::source_from(a_source)?;
    let b = b_source.map(crate::function::source_from).transpose()?;
    let options = opt::verify::Options {
        sizes: sizes.unwrap_or_default(),
        trials,
        seed,
        progress: interp::Reporter::default(),
        deadline: None,
        exact_work: None,
    };
    let report = py
        .detach(|| {
            engine::verify::verify(&a, Some(&entry), b.as_ref(), entry_b.as_deref(), &options)
        })
        .map_err(errors::to_py)?;
    let names = &report.outputs;
    let regions = match &report.verdict {
        opt::verify::Verdict::Equivalent { .. } => Vec::new(),
        opt::verify::Verdict::NotEquivalent { boxes } => boxes
            .iter()
            .map(|b| {
                Py::new(
                    py,
                    Region {
                        output: names[b.output].0.clone(),
                        ranges: b.ranges.clone(),
                    },
                )
            })
            .collect::<PyResult<_>>()?,
    };
    let error_bound = match &report.verdict {
        opt::verify::Verdict::Equivalent { error_bound, .. } => *error_bound,
        opt::verify::Verdict::NotEquivalent { .. } => None,
    };
    Ok(Verdict {
        equivalent: report.equivalent(),
        regions,
        method: match report.method {
            opt::verify::Method::Exact { .. } => "exact",
            opt::verify::Method::Float { .. } => "float",
            opt::verify::Method::Sampled { .. } => "sampled",
        },
        error_bound,
        report: opt::verify::print_report(&report),
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Verdict>()?;
    m.add_class::<Region>()?;
    m.add_function(wrap_pyfunction!(verify, m)?)?;
    Ok(())
}
