//! Tensors as the interpreter stores them: an element type, a row-major
//! shape and a flat vector of values.
//!
//! Invariants (kept by every constructor here and checked by
//! [`Tensor::check`] for tensors callers pass in): the data holds exactly
//! `shape.iter().product()` values; floats (`float32`, `float64`) are
//! [`Data::F`], a `float32` value being exactly representable in `f32`;
//! integers and `bool` are [`Data::I`], each value sign- or zero-extended
//! from its type's width (`uint64` as its bit pattern, `bool` as 0 or 1).
//! In mod-p mode every tensor is [`Data::I`] holding residues in `[0, P)`,
//! whatever its element type.

use ir::{DType, Value};

use crate::residue::P;
use crate::rng::SplitMix64;
use crate::Mode;
use ir::arith;

/// The most elements the interpreter allocates for one tensor (2^28, 2 GiB
/// as f64): a few such tensors still fit in the memory of a small machine.
pub(crate) const MAX_ELEMENTS: usize = 1 << 28;

/// The values of a tensor, flat and row-major.
#[derive(Clone, Debug, PartialEq)]
pub enum Data {
    /// `float32` and `float64` values.
    F(Vec<f64>),
    /// Integer and `bool` values, and residues in mod-p mode.
    I(Vec<i64>),
}

impl Data {
    fn len(&self) -> usize {
        match self {
            Data::F(v) => v.len(),
            Data::I(v) => v.len(),
        }
    }
}

/// A tensor value: element type, shape and data.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    pub dtype: DType,
    pub shape: Vec<usize>,
    pub data: Data,
}

/// The number of elements of `shape`, or `None` if it overflows `usize`.
pub(crate) fn element_count(shape: &[usize]) -> Option<usize> {
    shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d))
}

/// The row-major strides of `shape`, in elements.
pub fn strides(shape: &[usize]) -> Vec<usize> {
    let mut out = vec![0; shape.len()];
    let mut s = 1usize;
    for (o, d) in out.iter_mut().zip(shape).rev() {
        *o = s;
        s = s.wrapping_mul(*d);
    }
    out
}

/// Formats a shape or an index as `(3, 8)`.
pub(crate) fn show_tuple<T: std::fmt::Display>(xs: &[T]) -> String {
    let parts: Vec<String> = xs.iter().map(ToString::to_string).collect();
    format!("({})", parts.join(", "))
}

impl Tensor {
    /// A tensor of zeros (`false` for `bool`).
    ///
    /// # Panics
    ///
    /// Like `vec!`, if the element count overflows or cannot be allocated;
    /// the interpreter itself checks shapes against a limit of 2^28 elements
    /// before it calls this.
    pub fn zeros(dtype: DType, shape: &[usize]) -> Tensor {
        let n = element_count(shape).unwrap_or(usize::MAX);
        let data = if dtype.is_float() {
            Data::F(vec![0.0; n])
        } else {
            Data::I(vec![0; n])
        };
        Tensor {
            dtype,
            shape: shape.to_vec(),
            data,
        }
    }

    /// The zeros the interpreter starts a new tensor from: residues in mod-p
    /// mode, so that the tensor is [`Data::I`] whatever its element type.
    pub(crate) fn zeros_in(mode: Mode, dtype: DType, shape: &[usize]) -> Tensor {
        match mode {
            Mode::Real => Tensor::zeros(dtype, shape),
            Mode::ModP => Tensor {
                dtype,
                ..Tensor::zeros(DType::I64, shape)
            },
        }
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A tensor from float values, converted to `dtype` as a cast would:
    /// rounded to `float32`, truncated and wrapped to an integer type, or
    /// `!= 0` for `bool`. `values` must have one value per element of `shape`
    /// (checked in debug builds; [`crate::run`] rejects a mismatched tensor).
    pub fn from_f64(dtype: DType, shape: &[usize], values: Vec<f64>) -> Tensor {
        debug_assert_eq!(
            element_count(shape),
            Some(values.len()),
            "shape and data disagree"
        );
        let data = if dtype.is_float() {
            Data::F(values.into_iter().map(|x| arith::round(dtype, x)).collect())
        } else if dtype == DType::Bool {
            Data::I(values.into_iter().map(|x| i64::from(x != 0.0)).collect())
        } else {
            Data::I(
                values
                    .into_iter()
                    .map(|x| arith::float_to_int(dtype, x))
                    .collect(),
            )
        };
        Tensor {
            dtype,
            shape: shape.to_vec(),
            data,
        }
    }

    /// A tensor from integer values, wrapped to the width of `dtype` (or
    /// rounded to a float type, or `!= 0` for `bool`). `values` must have one
    /// value per element of `shape` (checked in debug builds).
    pub fn from_i64(dtype: DType, shape: &[usize], values: Vec<i64>) -> Tensor {
        debug_assert_eq!(
            element_count(shape),
            Some(values.len()),
            "shape and data disagree"
        );
        let data = if dtype.is_float() {
            Data::F(
                values
                    .into_iter()
                    .map(|v| arith::int_to_float(DType::I64, dtype, v))
                    .collect(),
            )
        } else {
            Data::I(values.into_iter().map(|v| arith::wrap(dtype, v)).collect())
        };
        Tensor {
            dtype,
            shape: shape.to_vec(),
            data,
        }
    }

    /// The element at flat (row-major) position `flat`.
    ///
    /// # Panics
    ///
    /// If `flat >= self.len()`, like slice indexing.
    pub fn get(&self, flat: usize) -> Value {
        match &self.data {
            Data::F(v) => Value::Float(v[flat]),
            Data::I(v) if self.dtype == DType::Bool => Value::Bool(v[flat] != 0),
            Data::I(v) => Value::Int(v[flat]),
        }
    }

    /// Every element as a scalar value (`bool` as `Value::Bool`), in
    /// row-major order: the form the kernel VM and the runtime take.
    pub fn values(&self) -> Vec<Value> {
        match (&self.data, self.dtype) {
            (Data::F(v), _) => v.iter().map(|x| Value::Float(*x)).collect(),
            (Data::I(v), DType::Bool) => v.iter().map(|x| Value::Bool(*x != 0)).collect(),
            (Data::I(v), _) => v.iter().map(|x| Value::Int(*x)).collect(),
        }
    }

    /// Every element as an `f64` (`uint64` read as unsigned, `bool` as 0/1).
    pub fn to_f64_vec(&self) -> Vec<f64> {
        match &self.data {
            Data::F(v) => v.clone(),
            Data::I(v) => v
                .iter()
                .map(|&x| arith::int_to_float(self.dtype, DType::F64, x))
                .collect(),
        }
    }

    /// A seeded random tensor (SplitMix64, one draw per element in row-major
    /// order, the same on every platform and version): floats uniform in
    /// `[-1, 1)` (on a grid of 2^-23 for `float32`, 2^-52 for `float64`, so no
    /// rounding is involved), integers uniform in `[0, 8)`, `bool` a fair coin.
    ///
    /// # Panics
    ///
    /// As [`Tensor::zeros`], if the shape is too large to allocate.
    pub fn random(dtype: DType, shape: &[usize], seed: u64) -> Tensor {
        let n = element_count(shape).unwrap_or(usize::MAX);
        let mut g = SplitMix64::new(seed);
        let data = match dtype {
            DType::F32 => Data::F(
                (0..n)
                    .map(|_| ((g.next_u64() >> 40) as f64).mul_add(2.0 / (1u64 << 24) as f64, -1.0))
                    .collect(),
            ),
            DType::F64 => Data::F(
                (0..n)
                    .map(|_| ((g.next_u64() >> 11) as f64).mul_add(2.0 / (1u64 << 53) as f64, -1.0))
                    .collect(),
            ),
            DType::Bool => Data::I((0..n).map(|_| (g.next_u64() >> 63) as i64).collect()),
            _ => Data::I((0..n).map(|_| (g.next_u64() >> 61) as i64).collect()),
        };
        Tensor {
            dtype,
            shape: shape.to_vec(),
            data,
        }
    }

    /// An argument for tests and sweeps that must run any def: floats as
    /// [`Tensor::random`], integers alternating 0 and 1 (indices valid for
    /// any table, and divisors that are not all zero).
    ///
    /// # Panics
    ///
    /// As [`Tensor::zeros`], if the shape is too large to allocate.
    pub fn sample(dtype: DType, shape: &[usize], seed: u64) -> Tensor {
        if dtype.is_int() {
            let n = element_count(shape).unwrap_or(usize::MAX);
            Tensor::from_i64(dtype, shape, (0..n).map(|i| (i % 2) as i64).collect())
        } else {
            Tensor::random(dtype, shape, seed)
        }
    }

    /// Seeded random residues, uniform in `[0, P)`, for mod-p mode. The
    /// element type is `int64`; [`crate::run`] in mod-p mode takes residue
    /// tensors of any element type and gives them the parameter's type.
    ///
    /// # Panics
    ///
    /// As [`Tensor::zeros`], if the shape is too large to allocate.
    pub fn random_mod_p(shape: &[usize], seed: u64) -> Tensor {
        let n = element_count(shape).unwrap_or(usize::MAX);
        let mut g = SplitMix64::new(seed);
        // 31 random bits are uniform in [0, 2^31) = [0, P]; rejecting the one
        // value P leaves a uniform residue.
        let mut draw = || loop {
            let x = g.next_u64() >> 33;
            if x < P {
                return x as i64;
            }
        };
        let data = Data::I((0..n).map(|_| draw()).collect());
        Tensor {
            dtype: DType::I64,
            shape: shape.to_vec(),
            data,
        }
    }

    /// Checks the invariants of the module docs for a tensor a caller passed
    /// as `name`; the message says what is wrong.
    pub(crate) fn check(&self, name: &str, mode: Mode) -> Result<(), String> {
        if element_count(&self.shape) != Some(self.len()) {
            return Err(format!(
                "tensor `{name}` has {} values, but its shape {} needs {}",
                self.len(),
                show_tuple(&self.shape),
                element_count(&self.shape)
                    .map_or("more than fit in memory".to_string(), |n| n.to_string())
            ));
        }
        let t = self.dtype;
        match (&self.data, mode) {
            (Data::I(v), Mode::ModP) => match v.iter().find(|&&x| x < 0 || x >= P as i64) {
                Some(x) => Err(format!(
                    "tensor `{name}` holds {x}, which is no residue in [0, {P})"
                )),
                None => Ok(()),
            },
            (Data::F(_), Mode::ModP) => Err(format!(
                "tensor `{name}` holds floats, but mod-p mode takes residues"
            )),
            (Data::F(v), Mode::Real) if t.is_float() => {
                match v
                    .iter()
                    .find(|&&x| arith::round(t, x).to_bits() != x.to_bits() && !x.is_nan())
                {
                    Some(x) => Err(format!(
                        "tensor `{name}` holds {x:?}, which is no {t} value"
                    )),
                    None => Ok(()),
                }
            }
            (Data::I(v), Mode::Real) if !t.is_float() => {
                match v.iter().find(|&&x| arith::wrap(t, x) != x) {
                    Some(x) => Err(format!("tensor `{name}` holds {x}, which is no {t} value")),
                    None => Ok(()),
                }
            }
            (Data::F(_), Mode::Real) => Err(format!("tensor `{name}` is {t} but holds floats")),
            (Data::I(_), Mode::Real) => Err(format!("tensor `{name}` is {t} but holds integers")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_floats_are_in_range_and_exact_in_their_type() {
        let t = Tensor::random(DType::F32, &[1000], 7);
        assert!(t.check("t", Mode::Real).is_ok());
        let v = t.to_f64_vec();
        assert!(v.iter().all(|&x| (-1.0..1.0).contains(&x)));
        assert!(v.iter().any(|&x| x < -0.5) && v.iter().any(|&x| x > 0.5));
        let d = Tensor::random(DType::F64, &[1000], 7).to_f64_vec();
        assert!(d.iter().all(|&x| (-1.0..1.0).contains(&x)));
        assert_eq!(
            Tensor::random(DType::F64, &[3], 9),
            Tensor::random(DType::F64, &[3], 9)
        );
        assert_ne!(
            Tensor::random(DType::F64, &[3], 9),
            Tensor::random(DType::F64, &[3], 10)
        );
    }

    #[test]
    fn random_integers_cover_zero_to_seven() {
        let Data::I(v) = Tensor::random(DType::I8, &[400], 1).data else {
            panic!("ints")
        };
        for k in 0..8 {
            assert!(v.contains(&k), "{k} never drawn");
        }
        assert!(v.iter().all(|x| (0..8).contains(x)));
        let Data::I(b) = Tensor::random(DType::Bool, &[100], 1).data else {
            panic!("ints")
        };
        assert!(b.contains(&0) && b.contains(&1) && b.iter().all(|x| (0..2).contains(x)));
    }

    #[test]
    fn random_residues_are_below_p() {
        let t = Tensor::random_mod_p(&[2, 500], 3);
        assert!(t.check("t", Mode::ModP).is_ok());
        let Data::I(v) = &t.data else {
            panic!("residues are integers")
        };
        assert!(v.iter().any(|&x| x > P as i64 / 2));
    }

    #[test]
    fn constructors_convert_to_the_element_type() {
        let t = Tensor::from_i64(DType::I8, &[3], vec![127, 128, -129]);
        assert_eq!(t.data, Data::I(vec![127, -128, 127]));
        let t = Tensor::from_f64(DType::F32, &[1], vec![0.1]);
        assert_eq!(t.get(0), Value::Float(0.1f32 as f64));
        let t = Tensor::from_f64(DType::Bool, &[2], vec![0.0, -2.0]);
        assert_eq!(
            (t.get(0), t.get(1)),
            (Value::Bool(false), Value::Bool(true))
        );
        let t = Tensor::from_i64(DType::U64, &[1], vec![-1]);
        assert_eq!(t.to_f64_vec(), vec![18_446_744_073_709_551_615.0]);
        assert_eq!(strides(&[2, 3, 4]), vec![12, 4, 1]);
    }

    #[test]
    fn check_rejects_broken_tensors() {
        let mut t = Tensor::zeros(DType::F32, &[2, 2]);
        t.data = Data::F(vec![0.0; 3]);
        assert!(t.check("A", Mode::Real).unwrap_err().contains("3 values"));
        t.data = Data::F(vec![0.0, 0.0, 0.0, 0.1]);
        assert!(t
            .check("A", Mode::Real)
            .unwrap_err()
            .contains("no float32 value"));
        let t = Tensor {
            dtype: DType::I8,
            shape: vec![1],
            data: Data::I(vec![300]),
        };
        assert!(t.check("A", Mode::Real).unwrap_err().contains("300"));
        let t = Tensor {
            dtype: DType::F32,
            shape: vec![1],
            data: Data::I(vec![-1]),
        };
        assert!(t.check("A", Mode::ModP).unwrap_err().contains("no residue"));
        assert!(t
            .check("A", Mode::Real)
            .unwrap_err()
            .contains("holds integers"));
    }
}
