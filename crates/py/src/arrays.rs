//! Arrays in and out without copies. An input is a NumPy array, an object
//! with `__dlpack__` (a PyTorch CPU tensor; NumPy's `from_dlpack` views it
//! in place) or anything `numpy.asarray` takes. A C-contiguous array whose
//! data is aligned to `tensor::FOREIGN_ALIGN` becomes a tensor over the
//! array's own memory, which holds a reference to the array until the run
//! lets go of it; any other is copied once (and counted, [`copies`]). An
//! output is a NumPy array over the tensor tessera computed it in, which
//! the array keeps alive: nothing is copied on the way out.
//!
//! This module and its `unsafe` blocks are the package's only way to read
//! or lend raw memory; each block says why it is sound.

#![allow(unsafe_code)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use ir::DType;
use numpy::ndarray::{ArrayViewD, IxDyn, ShapeBuilder};
use numpy::{PyArray, PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use tensor::{Buffer, Foreign, Tensor};

use crate::errors;

/// Input arrays copied since the module was loaded.
static COPIES: AtomicU64 = AtomicU64::new(0);

/// How many input arrays were copied because they were not C-contiguous,
/// not aligned, or not arrays at all.
pub fn copies() -> u64 {
    COPIES.load(Ordering::Relaxed)
}

/// What keeps a caller's array alive while a tensor reads it in place:
/// dropping it releases the reference.
struct Keep {
    _array: Py<PyAny>,
}

/// The element types tessera takes, with NumPy's names.
const TAKEN: &str = "float32, float64, float16, int8, int16, int32, int64, uint8, uint16, uint32, \
     uint64, bool, and ml_dtypes' bfloat16, float8_e4m3fn, float8_e4m3fnuz, float8_e5m2, \
     float8_e5m2fnuz, float4_e2m1fn, int4, uint4, int2 and uint2";

/// `ml_dtypes`' 2- and 4-bit integers: their arrays hold codes (the low
/// bits) where tessera holds values, so they are converted on the way in
/// and out (one copy each way).
const SUB_BYTE: [(DType, &str, &str); 4] = [
    (DType::I4, "int4", "int8"),
    (DType::U4, "uint4", "uint8"),
    (DType::I2, "int2", "int8"),
    (DType::U2, "uint2", "uint8"),
];

/// The narrow floats by their NumPy names: `float16` is NumPy's own, the
/// others are `ml_dtypes`' (which ONNX and JAX install). Their arrays hold
/// the codes tessera stores.
const NARROW: [(DType, &str); 7] = [
    (DType::F16, "float16"),
    (DType::BF16, "bfloat16"),
    (DType::F8E4M3FN, "float8_e4m3fn"),
    (DType::F8E4M3FNUZ, "float8_e4m3fnuz"),
    (DType::F8E5M2, "float8_e5m2"),
    (DType::F8E5M2FNUZ, "float8_e5m2fnuz"),
    (DType::F4E2M1, "float4_e2m1fn"),
];

/// The tensor element type of a NumPy array, if tessera has one.
fn dtype_of(a: &Bound<'_, PyUntypedArray>) -> Option<DType> {
    let py = a.py();
    let d = a.dtype();
    // `bool` is told first: tessera stores it as `u8`, whose NumPy type
    // every other element type's Rust type names exactly.
    if d.is_equiv_to(&numpy::dtype::<bool>(py)) {
        return Some(DType::Bool);
    }
    // A narrow float is told by its name: its codes are stored as unsigned
    // integers of its width, which NumPy's `uint8`/`uint16` would match.
    if let Ok(name) = d.getattr("name").and_then(|n| n.extract::<String>()) {
        if let Some((t, _)) = NARROW.iter().find(|(_, n)| *n == name) {
            return Some(*t);
        }
    }
    // The other types by their Rust element type, among those NumPy names
    // by it (not the narrow floats' or the 2- and 4-bit integers', which
    // share `u8`, `i8` and `u16` with NumPy's own integers).
    DType::ALL
        .into_iter()
        .filter(|&t| {
            t != DType::Bool && t.narrow().is_none() && !SUB_BYTE.iter().any(|(s, _, _)| *s == t)
        })
        .find(|&t| tensor::with_element!(t, T => d.is_equiv_to(&numpy::dtype::<T>(py))))
}

/// `obj` as a NumPy array: itself, a DLPack tensor viewed in place, or a
/// conversion (a copy).
fn as_array<'py>(obj: &Bound<'py, PyAny>, what: &str) -> PyResult<Bound<'py, PyUntypedArray>> {
    if let Ok(a) = obj.cast::<PyUntypedArray>() {
        return Ok(a.clone());
    }
    let numpy = obj.py().import("numpy")?;
    let converted = if obj.hasattr("__dlpack__")? {
        numpy.call_method1("from_dlpack", (obj,)).map_err(|e| {
            errors::input(format!(
                "{what}: its DLPack tensor cannot be read as an array on the CPU: {e}"
            ))
        })?
    } else {
        COPIES.fetch_add(1, Ordering::Relaxed);
        numpy.call_method1("asarray", (obj,)).map_err(|e| {
            errors::input(format!(
                "{what} is a {}, not an array: {e}",
                obj.get_type()
                    .name()
                    .map_or_else(|_| "?".to_string(), |n| n.to_string())
            ))
        })?
    };
    converted
        .cast_into::<PyUntypedArray>()
        .map_err(|_| errors::input(format!("{what} did not convert to a NumPy array")))
}

/// The tensor `obj` holds, read in place when it can be (see the module
/// documentation). `what` names it in errors (`input \`x\``).
pub fn tensor_from(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Tensor> {
    let array = as_array(obj, what)?;
    let name = array
        .dtype()
        .getattr("name")
        .and_then(|n| n.extract::<String>())
        .unwrap_or_default();
    if let Some((t, _, wide)) = SUB_BYTE.iter().find(|(_, n, _)| *n == name) {
        COPIES.fetch_add(1, Ordering::Relaxed);
        let values = array
            .call_method1("astype", (*wide,))?
            .cast_into::<PyUntypedArray>()?;
        let held = tensor_from(values.as_any(), what)?;
        return Tensor::from_buffer(*t, held.shape(), held.buffer().clone())
            .map_err(|e| errors::input(e.0));
    }
    let dtype = dtype_of(&array).ok_or_else(|| {
        errors::input(format!(
            "{what} has element type {}, which tessera does not take (it takes {TAKEN})",
            array.dtype()
        ))
    })?;
    let shape = array.shape().to_vec();
    let count = tensor::element_count(&shape);
    tensor::check_elements(what, Some(&tensor::show_tuple(&shape)), count)
        .map_err(errors::input)?;
    let elements = count.unwrap_or_default();
    let bytes = elements * tensor::element_bytes(dtype);
    let array = if array.is_c_contiguous() {
        array
    } else {
        COPIES.fetch_add(1, Ordering::Relaxed);
        array
            .py()
            .import("numpy")?
            .call_method1("ascontiguousarray", (array,))?
            .cast_into::<PyUntypedArray>()?
    };
    // SAFETY: `as_array_ptr` points at the live array object `array`
    // holds; reading its `data` field reads the address of its elements.
    let data = unsafe { (*array.as_array_ptr()).fields.data }
        .cast::<u8>()
        .cast_const();
    let owner = Box::new(Keep {
        _array: array.clone().into_any().unbind(),
    });
    // SAFETY: the array is C-contiguous with `elements` elements of
    // `dtype`'s size, so `bytes` bytes at `data` are its elements; `owner`
    // holds a reference to the array, so NumPy frees them no earlier than
    // the owner is dropped. tessera only reads them. Writing the array from
    // another thread while a run reads it is the caller's race, as with
    // every library that reads NumPy arrays in place.
    let buffer = match unsafe { Foreign::new(data, bytes, owner) } {
        Some(memory) => Buffer::foreign(memory),
        None => {
            // Misaligned (a view starting at an odd element): one copy.
            COPIES.fetch_add(1, Ordering::Relaxed);
            let mut b = Buffer::zeroed(bytes);
            // SAFETY: as above, `bytes` bytes at `data` are the array's
            // elements, alive while `array` is.
            let from = unsafe { std::slice::from_raw_parts(data, bytes) };
            b.as_bytes_mut()[..bytes].copy_from_slice(from);
            b
        }
    };
    Tensor::from_buffer(dtype, &shape, Arc::new(buffer)).map_err(|e| errors::input(e.0))
}

/// Keeps the tensor a NumPy array returned by tessera lends its memory
/// from.
#[pyclass(frozen, module = "tessera")]
struct Lent {
    _tensor: Tensor,
}

/// A NumPy array over `t`'s memory, keeping `t` alive: with `t`'s
/// strides when its elements are its buffer's first (an output stored in
/// another order of its dimensions, `ssa::layout`), else over a
/// contiguous copy.
pub fn array_from(py: Python<'_>, t: Tensor) -> PyResult<Bound<'_, PyAny>> {
    let t = if t.is_dense() { t } else { t.contiguous() };
    let array = tensor::with_element!(t.dtype(), T => lend::<T>(py, t.clone())?);
    if t.dtype() == DType::Bool {
        // Bools are stored as bytes 0 and 1, which is NumPy's `bool_`.
        let bool_ = py.import("numpy")?.getattr("bool_")?;
        return array.call_method1("view", PyTuple::new(py, [bool_])?);
    }
    if let Some((_, name, _)) = SUB_BYTE.iter().find(|(n, _, _)| *n == t.dtype()) {
        let ty = numpy_type(py, "ml_dtypes", name, t.dtype())?;
        return array.call_method1("astype", PyTuple::new(py, [ty])?);
    }
    if let Some((_, name)) = NARROW.iter().find(|(n, _)| *n == t.dtype()) {
        // The codes, viewed as the type whose codes they are.
        let module = if t.dtype() == DType::F16 {
            "numpy"
        } else {
            "ml_dtypes"
        };
        let ty = numpy_type(py, module, name, t.dtype())?;
        return array.call_method1("view", PyTuple::new(py, [ty])?);
    }
    Ok(array)
}

/// The NumPy type `module.name` of an output of element type `t`, or why
/// it is not available.
fn numpy_type<'py>(
    py: Python<'py>,
    module: &str,
    name: &str,
    t: DType,
) -> PyResult<Bound<'py, PyAny>> {
    py.import(module)
        .and_then(|m| m.getattr(name))
        .map_err(|e| {
            errors::Error::new_err(format!(
                "an output is {t}, whose NumPy type `{module}.{name}` is not available: {e}"
            ))
        })
}

fn lend<T: tensor::Element + numpy::Element>(
    py: Python<'_>,
    t: Tensor,
) -> PyResult<Bound<'_, PyAny>> {
    let slice = t
        .buffer()
        .view::<T>(t.len())
        .ok_or_else(|| errors::Error::new_err("internal error: an output outgrows its buffer"))?;
    let view = ArrayViewD::from_shape(IxDyn(t.shape()).strides(IxDyn(t.strides())), slice)
        .map_err(|e| errors::Error::new_err(format!("internal error: {e}")))?;
    let owner = Bound::new(py, Lent { _tensor: t.clone() })?;
    // SAFETY: `view` covers the elements of `t`'s buffer, which `owner`
    // (the new array's base object) holds through its own `Arc`; a buffer
    // shared by an `Arc` is never moved or freed while the `Arc` lives, and
    // tessera never writes a buffer a caller holds (a run replaces an output
    // slot still held before writing it).
    let array = unsafe { PyArray::<T, IxDyn>::borrow_from_array(&view, owner.into_any()) };
    Ok(array.into_any())
}
