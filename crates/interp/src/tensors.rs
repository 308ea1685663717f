//! The interpreter's use of [`tensor::Tensor`]: the limit on sizes, the
//! zeros a statement starts from, residue tensors for mod-p mode, and the
//! checks on tensors callers pass.
//!
//! In real mode a tensor holds elements of its own type (typed storage
//! makes every stored value one of the type's values). In mod-p mode every
//! tensor is an `int64` tensor of residues in `[0, P)`, whatever the element
//! type its declaration gives; the interpreter takes types from the
//! declarations there.

use ir::DType;
pub(crate) use tensor::{element_count, show_tuple};
use tensor::{SplitMix64, Tensor};

use crate::residue::P;
use crate::Mode;

/// The zeros the interpreter starts a new tensor from: residues in mod-p
/// mode.
pub(crate) fn zeros_in(mode: Mode, dtype: DType, shape: &[usize]) -> Tensor {
    match mode {
        Mode::Real => Tensor::zeros(dtype, shape),
        Mode::ModP => Tensor::zeros(DType::I64, shape),
    }
}

/// Seeded random residues, uniform in `[0, P)`, for mod-p mode: an `int64`
/// tensor, which [`crate::run`] in mod-p mode takes for a parameter of any
/// element type.
///
/// # Panics
///
/// As [`Tensor::zeros`], if the shape is too large to allocate.
pub fn random_residues(shape: &[usize], seed: u64) -> Tensor {
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
    Tensor::from_i64(DType::I64, shape, (0..n).map(|_| draw()).collect())
}

/// The tensor a caller passed as `name`, as the interpreter keeps it:
/// contiguous (a view is copied once), and in mod-p mode as `int64`
/// residues (integers of any type are taken if they are residues; floats
/// are refused). The message says what is wrong.
pub(crate) fn admit(t: &Tensor, name: &str, mode: Mode) -> Result<Tensor, String> {
    match mode {
        Mode::Real => Ok(t.contiguous()),
        Mode::ModP if t.dtype().is_float() => Err(format!(
            "tensor `{name}` holds floats, but mod-p mode takes residues"
        )),
        Mode::ModP => {
            let v = t.to_i64_vec();
            // `uint64` values above `i64::MAX` read back negative here, and
            // are refused with the rest.
            match v.iter().find(|&&x| x < 0 || x >= P as i64) {
                Some(x) => Err(format!(
                    "tensor `{name}` holds {x}, which is no residue in [0, {P})"
                )),
                None if t.dtype() == DType::I64 => Ok(t.contiguous()),
                None => Ok(Tensor::from_i64(DType::I64, t.shape(), v)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_residues_are_below_p() {
        let t = random_residues(&[2, 500], 3);
        assert_eq!(admit(&t, "t", Mode::ModP), Ok(t.clone()));
        let v = t.to_i64_vec();
        assert!(v.iter().all(|&x| (0..P as i64).contains(&x)));
        assert!(v.iter().any(|&x| x > P as i64 / 2));
    }

    #[test]
    fn admit_refuses_what_mod_p_mode_cannot_take() {
        let t = Tensor::from_i64(DType::I64, &[1], vec![-1]);
        assert!(admit(&t, "A", Mode::ModP)
            .unwrap_err()
            .contains("no residue"));
        let f = Tensor::zeros(DType::F32, &[1]);
        assert!(admit(&f, "A", Mode::ModP)
            .unwrap_err()
            .contains("holds floats"));
        let small = Tensor::from_i64(DType::I8, &[2], vec![3, 4]);
        let admitted = admit(&small, "A", Mode::ModP).unwrap();
        assert_eq!(admitted.dtype(), DType::I64);
        assert_eq!(admitted.to_i64_vec(), vec![3, 4]);
    }
}
