//! [`Tensor`]: an element type, a shape, strides and an offset over a shared
//! [`Buffer`].
//!
//! Invariants (kept by every constructor and view): every element the shape
//! and strides reach lies inside the buffer; the buffer holds elements of the
//! tensor's own type ([`Element`]); a tensor made by a constructor is
//! contiguous (row-major, offset 0). Views share the buffer; writing
//! ([`Tensor::as_mut_slice`], [`Tensor::set`]) first makes the tensor
//! contiguous and the sole owner of its buffer, so no other tensor changes.

use std::fmt;
use std::sync::Arc;

use ir::{DType, Value};

use crate::buffer::Buffer;
use crate::element::{element_bytes, Element};
use crate::with_element;

/// A tensor value: element type, shape, and elements in typed storage.
#[derive(Clone)]
pub struct Tensor {
    dtype: DType,
    shape: Vec<usize>,
    /// In elements, one per dimension.
    strides: Vec<usize>,
    /// Of element 0, in elements from the start of the buffer.
    offset: usize,
    buffer: Arc<Buffer>,
}

/// Why a tensor could not be made from the given parts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorError(pub String);

impl fmt::Display for TensorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TensorError {}

/// The number of elements of `shape`, or `None` if it overflows `usize`.
pub fn element_count(shape: &[usize]) -> Option<usize> {
    shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d))
}

/// The row-major strides of `shape`, in elements.
///
/// A stride is at most the number of elements unless an earlier dimension
/// is 0; such a tensor has no element to address, and a stride past
/// `usize` is given as 0 rather than wrapped.
pub fn row_major_strides(shape: &[usize]) -> Vec<usize> {
    let mut out = vec![0; shape.len()];
    let mut s = Some(1usize);
    for (o, d) in out.iter_mut().zip(shape).rev() {
        *o = s.unwrap_or(0);
        s = s.and_then(|s| s.checked_mul(*d));
    }
    out
}

/// Formats a shape or an index as `(3, 8)`.
pub fn show_tuple<T: fmt::Display>(xs: &[T]) -> String {
    let parts: Vec<String> = xs.iter().map(ToString::to_string).collect();
    format!("({})", parts.join(", "))
}

impl Tensor {
    /// A tensor of zeros (`false` for `bool`).
    ///
    /// # Panics
    ///
    /// If the element count overflows or the memory cannot be allocated;
    /// [`Tensor::try_zeros`] returns an error for the first instead.
    pub fn zeros(dtype: DType, shape: &[usize]) -> Tensor {
        Tensor::try_zeros(dtype, shape).unwrap_or_else(|e| panic!("{e}"))
    }

    /// A tensor of zeros, or an error if its size in bytes overflows.
    pub fn try_zeros(dtype: DType, shape: &[usize]) -> Result<Tensor, TensorError> {
        let bytes = element_count(shape)
            .and_then(|n| n.checked_mul(element_bytes(dtype)))
            .filter(|&b| b <= isize::MAX as usize)
            .ok_or_else(|| {
                TensorError(format!(
                    "a {dtype} tensor of shape {} does not fit in memory",
                    show_tuple(shape)
                ))
            })?;
        Ok(Tensor::on(dtype, shape, Arc::new(Buffer::zeroed(bytes))))
    }

    /// A contiguous tensor over `buffer`, which is large enough.
    fn on(dtype: DType, shape: &[usize], buffer: Arc<Buffer>) -> Tensor {
        Tensor {
            dtype,
            shape: shape.to_vec(),
            strides: row_major_strides(shape),
            offset: 0,
            buffer,
        }
    }

    /// A contiguous tensor over `buffer` as it is (no copy): the buffer must
    /// hold at least the shape's elements of `dtype`.
    pub fn from_buffer(
        dtype: DType,
        shape: &[usize],
        buffer: Arc<Buffer>,
    ) -> Result<Tensor, TensorError> {
        let need = element_count(shape).and_then(|n| n.checked_mul(element_bytes(dtype)));
        match need {
            Some(b) if b <= buffer.bytes() => Ok(Tensor::on(dtype, shape, buffer)),
            _ => Err(TensorError(format!(
                "a {dtype} tensor of shape {} does not fit a buffer of {} bytes",
                show_tuple(shape),
                buffer.bytes()
            ))),
        }
    }

    /// A tensor holding `values` (one copy into aligned storage), whose
    /// Rust type must store `dtype`; values are taken as they are (a `bool`
    /// tensor's bytes must be 0 or 1).
    ///
    /// # Panics
    ///
    /// If `T` does not store `dtype` or `values` does not have one value per
    /// element of `shape`: both are mistakes of the caller's code, not of
    /// its data.
    pub fn from_slice<T: Element>(dtype: DType, shape: &[usize], values: &[T]) -> Tensor {
        assert!(
            T::DTYPES.contains(&dtype),
            "{dtype} is not stored as this type"
        );
        assert_eq!(
            element_count(shape),
            Some(values.len()),
            "shape {shape:?} and {} values disagree",
            values.len()
        );
        Tensor::on(dtype, shape, Arc::new(Buffer::from_slice(values)))
    }

    /// A tensor from float values, converted to `dtype` as a cast would:
    /// rounded to `float32`, truncated and wrapped to an integer type, or
    /// `!= 0` for `bool`.
    ///
    /// # Panics
    ///
    /// If `values` does not have one value per element of `shape`.
    pub fn from_f64(dtype: DType, shape: &[usize], values: Vec<f64>) -> Tensor {
        Tensor::convert(dtype, shape, values.into_iter().map(Value::Float))
    }

    /// A tensor from integer values, wrapped to the width of `dtype` (or
    /// converted to a float type, or `!= 0` for `bool`).
    ///
    /// # Panics
    ///
    /// If `values` does not have one value per element of `shape`.
    pub fn from_i64(dtype: DType, shape: &[usize], values: Vec<i64>) -> Tensor {
        Tensor::convert(dtype, shape, values.into_iter().map(Value::Int))
    }

    /// A tensor from scalar values, each converted to `dtype` as a cast
    /// would (a `uint64` given as [`Value::Int`] keeps its bit pattern).
    ///
    /// # Panics
    ///
    /// If `values` does not have one value per element of `shape`.
    pub fn from_values(dtype: DType, shape: &[usize], values: &[Value]) -> Tensor {
        Tensor::convert(dtype, shape, values.iter().copied())
    }

    fn convert(
        dtype: DType,
        shape: &[usize],
        values: impl ExactSizeIterator<Item = Value>,
    ) -> Tensor {
        assert_eq!(
            element_count(shape),
            Some(values.len()),
            "shape {shape:?} and {} values disagree",
            values.len()
        );
        let mut t = Tensor::zeros(dtype, shape);
        with_element!(dtype, T => {
            let out = t.as_mut_slice::<T>().expect("a new tensor is contiguous");
            for (o, v) in out.iter_mut().zip(values) {
                *o = T::from_value(dtype, v);
            }
        });
        t
    }

    pub fn dtype(&self) -> DType {
        self.dtype
    }

    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The strides of the dimensions, in elements.
    pub fn strides(&self) -> &[usize] {
        &self.strides
    }

    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        // Constructors checked that the count fits.
        self.shape.iter().product()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the elements are row-major and start at the buffer's start:
    /// the layout compiled code and slices take as they are.
    pub fn is_contiguous(&self) -> bool {
        self.offset == 0 && self.is_row_major()
    }

    /// Whether the elements are the buffer's first `len()` in some order of
    /// the dimensions: a contiguous tensor or a permutation of one, which
    /// a strided array can lend as it is.
    pub fn is_dense(&self) -> bool {
        if self.offset != 0 {
            return false;
        }
        let mut dims: Vec<(usize, usize)> = self
            .shape
            .iter()
            .copied()
            .zip(self.strides.iter().copied())
            .filter(|&(d, _)| d != 1)
            .collect();
        dims.sort_by_key(|&(_, s)| s);
        let mut next = 1usize;
        for (d, s) in dims {
            if s != next {
                return self.is_empty();
            }
            next = next.saturating_mul(d);
        }
        true
    }

    fn is_row_major(&self) -> bool {
        // Strides of dimensions of size 1 (or of an empty tensor) do not
        // matter.
        self.is_empty()
            || self
                .shape
                .iter()
                .zip(&self.strides)
                .zip(row_major_strides(&self.shape))
                .all(|((&d, &s), r)| d == 1 || s == r)
    }

    /// The buffer the tensor's elements live in (shared with its views).
    pub fn buffer(&self) -> &Arc<Buffer> {
        &self.buffer
    }

    /// The tensor with its elements contiguous: itself (sharing the buffer)
    /// when it is, else one copy.
    pub fn contiguous(&self) -> Tensor {
        if self.is_contiguous() {
            return self.clone();
        }
        let mut out = Tensor::zeros(self.dtype, &self.shape);
        let n = element_bytes(self.dtype);
        let src = self.buffer.as_bytes();
        let dst = Arc::get_mut(&mut out.buffer).expect("a new buffer is not shared");
        let dst = dst.as_bytes_mut();
        for (k, off) in self.offsets().enumerate() {
            dst[k * n..(k + 1) * n].copy_from_slice(&src[off * n..(off + 1) * n]);
        }
        out
    }

    /// The buffer offsets of the elements, in row-major order.
    fn offsets(&self) -> impl Iterator<Item = usize> + '_ {
        let n = self.len();
        let mut index = vec![0usize; self.rank()];
        (0..n).map(move |k| {
            let off = self.offset
                + index
                    .iter()
                    .zip(&self.strides)
                    .map(|(i, s)| i * s)
                    .sum::<usize>();
            if k + 1 < n {
                for d in (0..index.len()).rev() {
                    index[d] += 1;
                    if index[d] < self.shape[d] {
                        break;
                    }
                    index[d] = 0;
                }
            }
            off
        })
    }

    /// The elements as a slice, when the tensor is contiguous and `T` is its
    /// element type.
    pub fn as_slice<T: Element>(&self) -> Option<&[T]> {
        if !T::DTYPES.contains(&self.dtype) || !self.is_contiguous() {
            return None;
        }
        self.buffer.view::<T>(self.len())
    }

    /// The elements as a mutable slice, when `T` is the element type. The
    /// tensor is made contiguous and the sole owner of its buffer first
    /// (copying it if it is a view or shared), so no other tensor changes.
    pub fn as_mut_slice<T: Element>(&mut self) -> Option<&mut [T]> {
        if !T::DTYPES.contains(&self.dtype) {
            return None;
        }
        if !self.is_contiguous() {
            *self = self.contiguous();
        }
        let len = self.len();
        Arc::make_mut(&mut self.buffer).view_mut::<T>(len)
    }

    /// The buffer, owned by this tensor alone and contiguous, mutably (for
    /// code that writes a tensor's memory as a whole, such as a compiled
    /// kernel's output).
    pub fn buffer_mut(&mut self) -> &mut Buffer {
        if !self.is_contiguous() {
            *self = self.contiguous();
        }
        Arc::make_mut(&mut self.buffer)
    }

    /// The element at row-major position `flat`, as a scalar.
    ///
    /// # Panics
    ///
    /// If `flat >= self.len()`, like slice indexing.
    pub fn get(&self, flat: usize) -> Value {
        assert!(
            flat < self.len(),
            "element {flat} of {} elements",
            self.len()
        );
        let off = self.offset_of(flat);
        with_element!(self.dtype, T => self.buffer.typed::<T>()[off].to_value(self.dtype))
    }

    /// Sets the element at row-major position `flat` to `v`, converted to
    /// the element type as a cast would.
    ///
    /// # Panics
    ///
    /// If `flat >= self.len()`.
    pub fn set(&mut self, flat: usize, v: Value) {
        let t = self.dtype;
        with_element!(t, T => {
            self.as_mut_slice::<T>().expect("the element type")[flat] = T::from_value(t, v);
        });
    }

    fn offset_of(&self, mut flat: usize) -> usize {
        let mut off = self.offset;
        for (d, s) in self.shape.iter().zip(&self.strides).rev() {
            off += (flat % d) * s;
            flat /= d;
        }
        off
    }

    /// Every element as a scalar value (`bool` as `Value::Bool`), in
    /// row-major order: the form the kernel VM takes.
    pub fn values(&self) -> Vec<Value> {
        with_element!(self.dtype, T => {
            let data = self.buffer.typed::<T>();
            self.offsets().map(|o| data[o].to_value(self.dtype)).collect()
        })
    }

    /// Every element as an `f64` (`uint64` read as unsigned, `bool` as 0/1).
    pub fn to_f64_vec(&self) -> Vec<f64> {
        let t = self.dtype;
        self.values()
            .into_iter()
            .map(|v| match v {
                Value::Float(x) => x,
                Value::Int(i) => ir::arith::int_to_float(t, DType::F64, i),
                Value::Bool(b) => f64::from(u8::from(b)),
            })
            .collect()
    }

    /// Every element as an `i64` (floats truncated toward zero and
    /// saturated, `uint64` as its bit pattern, `bool` as 0/1).
    pub fn to_i64_vec(&self) -> Vec<i64> {
        self.values()
            .into_iter()
            .map(|v| match v {
                Value::Float(x) => x as i64,
                Value::Int(i) => i,
                Value::Bool(b) => i64::from(b),
            })
            .collect()
    }

    /// The same elements under another shape of as many elements (a view
    /// when the tensor is contiguous, else one copy).
    pub fn reshape(&self, shape: &[usize]) -> Result<Tensor, TensorError> {
        if element_count(shape) != Some(self.len()) {
            return Err(TensorError(format!(
                "cannot reshape {} elements of shape {} to {}",
                self.len(),
                show_tuple(&self.shape),
                show_tuple(shape)
            )));
        }
        let base = self.contiguous();
        Ok(Tensor::on(self.dtype, shape, base.buffer))
    }

    /// A view with the dimensions reordered: dimension `k` of the result is
    /// dimension `perm[k]` of this tensor.
    pub fn permute(&self, perm: &[usize]) -> Result<Tensor, TensorError> {
        let mut seen = vec![false; self.rank()];
        let valid = perm.len() == self.rank()
            && perm
                .iter()
                .all(|&p| p < seen.len() && !std::mem::replace(&mut seen[p], true));
        if !valid {
            return Err(TensorError(format!(
                "{perm:?} is not a permutation of the {} dimensions of a tensor of shape {}",
                self.rank(),
                show_tuple(&self.shape)
            )));
        }
        Ok(Tensor {
            shape: perm.iter().map(|&p| self.shape[p]).collect(),
            strides: perm.iter().map(|&p| self.strides[p]).collect(),
            ..self.clone()
        })
    }

    /// A view of the elements `lo..hi` of dimension `axis`.
    pub fn slice(&self, axis: usize, lo: usize, hi: usize) -> Result<Tensor, TensorError> {
        match self.shape.get(axis) {
            Some(&d) if lo <= hi && hi <= d => {
                let mut shape = self.shape.clone();
                shape[axis] = hi - lo;
                let offset = if hi > lo {
                    self.offset + lo * self.strides[axis]
                } else {
                    self.offset
                };
                Ok(Tensor {
                    shape,
                    offset,
                    ..self.clone()
                })
            }
            _ => Err(TensorError(format!(
                "cannot slice {lo}..{hi} of dimension {axis} of a tensor of shape {}",
                show_tuple(&self.shape)
            ))),
        }
    }
}

/// Tensors are equal when their element types, shapes and elements are
/// (whatever their layouts; floats compare as values, so NaN differs from
/// itself).
impl PartialEq for Tensor {
    fn eq(&self, other: &Tensor) -> bool {
        self.dtype == other.dtype && self.shape == other.shape && self.values() == other.values()
    }
}

impl fmt::Debug for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown: Vec<Value> = (0..self.len().min(8)).map(|k| self.get(k)).collect();
        write!(
            f,
            "Tensor({}{}, {:?}{})",
            self.dtype,
            show_tuple(&self.shape),
            shown,
            if self.len() > 8 { " ..." } else { "" }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constructors_convert_to_the_element_type() {
        let t = Tensor::from_i64(DType::I8, &[3], vec![127, 128, -129]);
        assert_eq!(t.as_slice::<i8>(), Some(&[127i8, -128, 127][..]));
        let t = Tensor::from_f64(DType::F32, &[1], vec![0.1]);
        assert_eq!(t.get(0), Value::Float(f64::from(0.1f32)));
        assert_eq!(t.as_slice::<f32>(), Some(&[0.1f32][..]));
        assert_eq!(t.as_slice::<f64>(), None);
        let t = Tensor::from_f64(DType::Bool, &[2], vec![0.0, -2.0]);
        assert_eq!(
            (t.get(0), t.get(1)),
            (Value::Bool(false), Value::Bool(true))
        );
        let t = Tensor::from_i64(DType::U64, &[1], vec![-1]);
        assert_eq!(t.to_f64_vec(), vec![18_446_744_073_709_551_615.0]);
        assert_eq!(row_major_strides(&[2, 3, 4]), vec![12, 4, 1]);
        // An empty tensor whose other dimensions multiply past `usize`.
        assert_eq!(
            row_major_strides(&[0, 1 << 40, 1 << 40]),
            vec![0, 1 << 40, 1]
        );
    }

    #[test]
    fn storage_is_aligned_and_typed() {
        let t = Tensor::zeros(DType::F32, &[3, 5]);
        assert_eq!(t.buffer().as_ptr() as usize % 64, 0);
        assert!(t.buffer().bytes() >= 60);
        assert!(Tensor::try_zeros(DType::F64, &[usize::MAX / 4, 3]).is_err());
    }

    fn iota(shape: &[usize]) -> Tensor {
        let n = element_count(shape).unwrap();
        Tensor::from_i64(DType::I32, shape, (0..n as i64).collect())
    }

    #[test]
    fn views_share_the_buffer_and_read_the_right_elements() {
        let t = iota(&[2, 3, 4]);
        let p = t.permute(&[2, 0, 1]).unwrap();
        assert!(Arc::ptr_eq(p.buffer(), t.buffer()));
        assert_eq!(p.shape(), &[4, 2, 3]);
        assert!(!p.is_contiguous());
        // p[i][a][b] = t[a][b][i] = 12a + 4b + i.
        let want: Vec<i64> = (0..4)
            .flat_map(|i| (0..2).flat_map(move |a| (0..3).map(move |b| 12 * a + 4 * b + i)))
            .collect();
        assert_eq!(p.to_i64_vec(), want);
        assert_eq!(p.contiguous().to_i64_vec(), want);
        assert!(p.contiguous().is_contiguous());
        // A permutation's elements are still the buffer's first; a
        // slice's are not.
        assert!(p.is_dense() && t.is_dense());
        assert!(!t.slice(1, 1, 3).unwrap().is_dense());
        assert!(!t
            .slice(0, 0, 1)
            .unwrap()
            .permute(&[2, 1, 0])
            .unwrap()
            .slice(0, 1, 3)
            .unwrap()
            .is_dense());
        let s = t.slice(1, 1, 3).unwrap();
        assert_eq!(s.shape(), &[2, 2, 4]);
        assert_eq!(s.get(0), Value::Int(4));
        assert_eq!(s.get(8), Value::Int(16));
        assert!(s.as_slice::<i32>().is_none());
        let r = t.reshape(&[6, 4]).unwrap();
        assert!(Arc::ptr_eq(r.buffer(), t.buffer()));
        assert_eq!(r.get(23), Value::Int(23));
        assert!(t.reshape(&[5, 5]).is_err());
        assert!(t.permute(&[0, 0, 1]).is_err());
        assert!(t.slice(3, 0, 1).is_err() && t.slice(0, 2, 1).is_err());
    }

    #[test]
    fn writing_a_shared_tensor_copies_it_first() {
        let a = iota(&[4]);
        let mut b = a.clone();
        b.set(0, Value::Int(9));
        assert_eq!(a.get(0), Value::Int(0));
        assert_eq!(b.get(0), Value::Int(9));
        let mut s = a.slice(0, 2, 4).unwrap();
        s.as_mut_slice::<i32>().unwrap()[0] = 7;
        assert_eq!(s.to_i64_vec(), vec![7, 3]);
        assert_eq!(a.to_i64_vec(), vec![0, 1, 2, 3]);
    }

    #[test]
    fn equality_is_by_value_not_layout() {
        let t = iota(&[2, 3]);
        let twice = t.permute(&[1, 0]).unwrap().permute(&[1, 0]).unwrap();
        assert_eq!(t, twice);
        assert_ne!(t, t.reshape(&[3, 2]).unwrap());
        let from_buffer = Tensor::from_buffer(DType::I32, &[2, 3], t.buffer().clone()).unwrap();
        assert_eq!(from_buffer, t);
        assert!(Tensor::from_buffer(DType::I32, &[100], t.buffer().clone()).is_err());
    }
}
