//! The one seeded generator of the tests.
//!
//! It is `tensor::SplitMix64`, the generator behind
//! `interp::Tensor::random`, so a seed gives the same stream here as there
//! (tested against the interpreter's tensors). Tests draw every random
//! choice from it: a failure names its seed and comes back on every run and
//! every platform.

/// A seeded SplitMix64 stream with the helpers tests need.
#[derive(Clone, Debug)]
pub struct Rng {
    /// The generator behind `Tensor::random`, so that a test's stream and a
    /// random tensor's elements are one sequence.
    inner: tensor::SplitMix64,
}

impl Rng {
    /// The stream seeded by `seed` (any value, zero included).
    pub fn new(seed: u64) -> Rng {
        Rng {
            inner: tensor::SplitMix64::new(seed),
        }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.inner.next_u64()
    }

    /// A number in `0..n` (the remainder of one draw, so very slightly
    /// biased for large `n`, which no test cares about).
    ///
    /// # Panics
    ///
    /// If `n` is 0: there is nothing to choose from, a bug in the caller.
    pub fn below(&mut self, n: usize) -> usize {
        assert!(n > 0, "Rng::below(0): an empty range");
        (self.next_u64() % n as u64) as usize
    }

    /// A number in `lo..=hi`.
    ///
    /// # Panics
    ///
    /// If `hi < lo`.
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        assert!(lo <= hi, "Rng::range({lo}, {hi}): an empty range");
        let width = hi.abs_diff(lo).wrapping_add(1);
        // The full 64-bit range wraps `width` to 0; every draw is in it.
        let offset = if width == 0 {
            self.next_u64()
        } else {
            self.next_u64() % width
        };
        lo.wrapping_add_unsigned(offset)
    }

    /// True with about `percent` percent probability.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next_u64() % 100 < percent
    }

    /// A fair coin.
    pub fn coin(&mut self) -> bool {
        self.next_u64() >> 63 == 1
    }

    /// One of `xs`, uniformly.
    ///
    /// # Panics
    ///
    /// If `xs` is empty.
    pub fn pick<T: Clone>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len())].clone()
    }

    /// `xs` in a uniformly random order (Fisher–Yates).
    pub fn shuffle<T>(&mut self, xs: &mut [T]) {
        for k in (1..xs.len()).rev() {
            xs.swap(k, self.below(k + 1));
        }
    }

    /// A value uniform in `[-1, 1)` on the grid of 2^-23, so exact in
    /// float32: what `Tensor::random` gives a `float32` element.
    pub fn unit_f32(&mut self) -> f64 {
        ((self.next_u64() >> 40) as f64).mul_add(2.0 / (1u64 << 24) as f64, -1.0)
    }

    /// A value uniform in `[-1, 1)` on the grid of 2^-52: what
    /// `Tensor::random` gives a `float64` element.
    pub fn unit_f64(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64).mul_add(2.0 / (1u64 << 53) as f64, -1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_reference_sequence() {
        // The first outputs of Vigna's splitmix64.c seeded with 0.
        let mut g = Rng::new(0);
        assert_eq!(g.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(g.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        assert_eq!(g.next_u64(), 0x06C4_5D18_8009_454F);
    }

    #[test]
    fn ranges_hold_their_bounds() {
        let mut g = Rng::new(3);
        let mut seen = [false; 5];
        for _ in 0..1000 {
            let v = g.range(-2, 2);
            assert!((-2..=2).contains(&v));
            seen[(v + 2) as usize] = true;
            let u = g.unit_f32();
            assert!((-1.0..1.0).contains(&u) && u == u as f32 as f64);
            assert!((-1.0..1.0).contains(&g.unit_f64()));
        }
        assert!(seen.iter().all(|s| *s), "every value of -2..=2 comes up");
        // The widest ranges neither overflow nor panic.
        g.range(i64::MIN, i64::MAX);
        assert_eq!(g.range(i64::MAX, i64::MAX), i64::MAX);
    }

    #[test]
    fn shuffling_permutes() {
        let mut g = Rng::new(9);
        let mut xs: Vec<u32> = (0..50).collect();
        g.shuffle(&mut xs);
        assert_ne!(xs, (0..50).collect::<Vec<_>>());
        xs.sort_unstable();
        assert_eq!(xs, (0..50).collect::<Vec<_>>());
    }
}
