//! SplitMix64, the generator behind [`crate::Tensor::random`], and seeded
//! random tensors.
//!
//! It is written out here (rather than taken from a crate) so that a seed
//! produces the same tensor on every platform and in every version of
//! tessera: test expectations and verifier trials depend on that.

use ir::DType;

use crate::tensor::{element_count, Tensor};

/// Steele, Lea and Flood's SplitMix64: a 64-bit state advanced by the golden
/// gamma and finalized by the `mix64` variant 13 mixer.
#[derive(Clone, Debug)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

impl Tensor {
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
        match dtype {
            DType::F32 => {
                let v: Vec<f32> = (0..n)
                    .map(|_| {
                        ((g.next_u64() >> 40) as f64).mul_add(2.0 / (1u64 << 24) as f64, -1.0)
                            as f32
                    })
                    .collect();
                Tensor::from_slice(dtype, shape, &v)
            }
            DType::F64 => {
                let v: Vec<f64> = (0..n)
                    .map(|_| ((g.next_u64() >> 11) as f64).mul_add(2.0 / (1u64 << 53) as f64, -1.0))
                    .collect();
                Tensor::from_slice(dtype, shape, &v)
            }
            DType::Bool => Tensor::from_i64(
                dtype,
                shape,
                (0..n).map(|_| (g.next_u64() >> 63) as i64).collect(),
            ),
            _ => Tensor::from_i64(
                dtype,
                shape,
                (0..n).map(|_| (g.next_u64() >> 61) as i64).collect(),
            ),
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_reference_sequence() {
        // The first outputs of the reference implementation (Vigna's
        // splitmix64.c) seeded with 0.
        let mut g = SplitMix64::new(0);
        assert_eq!(g.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(g.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        assert_eq!(g.next_u64(), 0x06C4_5D18_8009_454F);
    }

    #[test]
    fn random_floats_are_in_range_and_deterministic() {
        let v = Tensor::random(DType::F32, &[1000], 7).to_f64_vec();
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
        let v = Tensor::random(DType::I8, &[400], 1).to_i64_vec();
        for k in 0..8 {
            assert!(v.contains(&k), "{k} never drawn");
        }
        assert!(v.iter().all(|x| (0..8).contains(x)));
        let b = Tensor::random(DType::Bool, &[100], 1).to_i64_vec();
        assert!(b.contains(&0) && b.contains(&1) && b.iter().all(|x| (0..2).contains(x)));
    }
}
