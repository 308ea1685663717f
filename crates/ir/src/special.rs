//! The float builtins of TC's list that neither Rust's `std` nor `libm`
//! provides (they are CUDA functions), defined here in `f64` by formulas
//! the C backend's prelude (`codegen/src/emit/scalar.rs`, the `tsr_`
//! helpers) repeats operation for operation, so that both compute the same
//! `f64` wherever the library functions they call agree.
//!
//! Each is accurate to a few `f64` ulps (far below the `float32` rounding
//! that follows for `float32` operands); none is correctly rounded.

use std::f64::consts::{FRAC_1_SQRT_2, PI, SQRT_2};

/// `cos(pi * x)`, exact at multiples of 1/2: the argument is reduced
/// exactly to `r = |x mod 2|` in `[0, 1]` (by `2 - r` above 1), and
/// `cos(pi * r) = sin(pi * (1/2 - r))`, which is 0 at `r = 1/2`.
pub(crate) fn cospi(x: f64) -> f64 {
    let mut r = (x % 2.0).abs();
    if r > 1.0 {
        r = 2.0 - r;
    }
    (PI * (0.5 - r)).sin()
}

/// `sin(pi * x)`, exact at integers: `x mod 2` is moved into `[-1, 1]`,
/// then into `[-1/2, 1/2]` by `sin(pi * s) = sin(pi * (±1 - s))` (each
/// step exact in floating point).
pub(crate) fn sinpi(x: f64) -> f64 {
    let mut s = x % 2.0;
    if s > 1.0 {
        s -= 2.0;
    } else if s < -1.0 {
        s += 2.0;
    }
    if s > 0.5 {
        s = 1.0 - s;
    } else if s < -0.5 {
        s = -1.0 - s;
    }
    (PI * s).sin()
}

/// The modified Bessel function of the first kind of order 0 or 1, by its
/// power series `sum (x/2)^(2k+n) / (k! (k+n)!)`, whose terms are all
/// positive (so the sum is accurate): stopped when a term no longer
/// changes the sum, or after 1000 terms (the series of `|x|` up to the
/// largest finite result needs fewer than 800).
pub(crate) fn bessel_i(n: u32, x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    let q = (x / 2.0) * (x / 2.0);
    let mut term = if n == 0 { 1.0 } else { x / 2.0 };
    let mut sum = term;
    let mut k = 1.0f64;
    while k <= 1000.0 {
        term *= q / (k * (k + f64::from(n)));
        let next = sum + term;
        if next == sum {
            break;
        }
        sum = next;
        k += 1.0;
    }
    sum
}

/// `exp(x^2) * erfc(x)`, directly below 26 (where `exp(x^2)` is finite
/// and `erfc(x)` not yet zero), else by its asymptotic series
/// `(1 - 1/(2x^2) + 3/(4x^4) - 15/(8x^6)) / (x sqrt(pi))`, whose next
/// term is below 1e-10 there.
pub(crate) fn erfcx(x: f64) -> f64 {
    if x < 26.0 {
        return (x * x).exp() * libm::erfc(x);
    }
    let v = 1.0 / (x * x);
    let series = 1.0 - v * (0.5 - v * (0.75 - v * 1.875));
    series / (x * PI.sqrt())
}

/// `x >= 0` with `erf(x) = y` (`erfc` false, `y` in `(0, 1/2]`) or
/// `erfc(x) = y` (`erfc` true, `y` in `(0, 1]`): Newton's method kept
/// inside a bracket `[0, 28]` that shrinks with each step (a step leaving
/// it bisects instead), until the iterate stops moving or after 100 steps.
fn solve_erf(y: f64, erfc: bool) -> f64 {
    let (mut lo, mut hi) = (0.0f64, 28.0f64);
    // A first guess near the root: erf(x) ~ 2x/sqrt(pi) for small x,
    // erfc(x) ~ exp(-x^2) for large x.
    let mut x = if erfc {
        (-y.ln()).max(0.0).sqrt()
    } else {
        y * PI.sqrt() / 2.0
    };
    x = x.clamp(lo, hi);
    for _ in 0..100 {
        let f = if erfc {
            libm::erfc(x) - y
        } else {
            libm::erf(x) - y
        };
        if f == 0.0 {
            return x;
        }
        // erf increases and erfc decreases in x.
        if (f < 0.0) != erfc {
            lo = x;
        } else {
            hi = x;
        }
        let slope = 2.0 / PI.sqrt() * (-x * x).exp();
        let mut next = if erfc { x + f / slope } else { x - f / slope };
        if !(next > lo && next < hi) {
            next = (lo + hi) / 2.0;
        }
        if next == x {
            return x;
        }
        x = next;
    }
    x
}

/// The inverse of `erf` on `[-1, 1]` (NaN outside, ±infinity at ±1).
pub(crate) fn erfinv(y: f64) -> f64 {
    let a = y.abs();
    if y.is_nan() || a > 1.0 {
        return f64::NAN;
    }
    if a == 1.0 {
        return f64::INFINITY.copysign(y);
    }
    if a == 0.0 {
        return y;
    }
    // Near 1, erfc(x) = 1 - |y| is solved instead, exactly representable
    // there, so that the tail keeps its precision.
    let x = if a <= 0.5 {
        solve_erf(a, false)
    } else {
        solve_erf(1.0 - a, true)
    };
    x.copysign(y)
}

/// The inverse of `erfc` on `[0, 2]` (NaN outside, +infinity at 0,
/// -infinity at 2).
pub(crate) fn erfcinv(y: f64) -> f64 {
    if y.is_nan() || !(0.0..=2.0).contains(&y) {
        return f64::NAN;
    }
    if y == 0.0 {
        return f64::INFINITY;
    }
    if y == 2.0 {
        return f64::NEG_INFINITY;
    }
    if y == 1.0 {
        return 0.0;
    }
    if y > 1.0 {
        // erfc(-x) = 2 - erfc(x); 2 - y is exact for y in [1, 2].
        return -erfcinv(2.0 - y);
    }
    if y >= 0.5 {
        solve_erf(1.0 - y, false)
    } else {
        solve_erf(y, true)
    }
}

/// The standard normal distribution function, `erfc(-x / sqrt(2)) / 2`.
pub(crate) fn normcdf(x: f64) -> f64 {
    0.5 * libm::erfc(-x * FRAC_1_SQRT_2)
}

/// The inverse of [`normcdf`]: `-sqrt(2) * erfcinv(2p)`.
pub(crate) fn normcdfinv(p: f64) -> f64 {
    -SQRT_2 * erfcinv(2.0 * p)
}

/// The Euclidean norm of three or four values, as the plain formula
/// (squares summed left to right, then the square root).
pub(crate) fn norm(xs: &[f64]) -> f64 {
    xs.iter().fold(0.0, |acc, x| acc + x * x).sqrt()
}

/// The exponent of `x` as a float (C's `logb`): -infinity for zero,
/// `|x|` for infinities and NaN.
pub(crate) fn logb(x: f64) -> f64 {
    if x == 0.0 {
        f64::NEG_INFINITY
    } else if !x.is_finite() {
        x.abs()
    } else {
        f64::from(libm::ilogb(x))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pi_functions_are_exact_at_their_zeros_and_extremes() {
        assert_eq!(cospi(0.5), 0.0);
        assert_eq!(cospi(1.0), -1.0);
        assert_eq!(cospi(-3.0), -1.0);
        assert_eq!(cospi(2.0), 1.0);
        assert_eq!(sinpi(1.0), 0.0);
        assert_eq!(sinpi(-7.0), 0.0);
        assert_eq!(sinpi(0.5), 1.0);
        assert_eq!(sinpi(1.5), -1.0);
        assert!((sinpi(0.25) - FRAC_1_SQRT_2).abs() < 1e-15);
        assert!((cospi(1.0 / 3.0) - 0.5).abs() < 1e-15);
    }

    #[test]
    fn bessel_series_match_known_values() {
        // Abramowitz and Stegun, Table 9.8: I0(1) = 1.266065878,
        // I1(1) = 0.565159104, I0(5) = 27.23987182.
        assert!((bessel_i(0, 1.0) - 1.266_065_877_752_008_4).abs() < 1e-14);
        assert!((bessel_i(1, 1.0) - 0.565_159_103_992_485).abs() < 1e-14);
        assert!((bessel_i(0, 5.0) / 27.239_871_823_604_44 - 1.0).abs() < 1e-14);
        assert_eq!(bessel_i(1, -1.0), -bessel_i(1, 1.0));
        assert_eq!(bessel_i(0, 0.0), 1.0);
        assert_eq!(bessel_i(0, f64::INFINITY), f64::INFINITY);
        assert!(bessel_i(0, f64::NAN).is_nan());
    }

    #[test]
    fn inverses_invert() {
        for y in [
            -0.999_999,
            -0.7,
            -0.3,
            1e-300,
            1e-8,
            0.2,
            0.5,
            0.51,
            0.9,
            0.999_999_9,
        ] {
            let x = erfinv(y);
            assert!(
                (libm::erf(x) - y).abs() <= 4e-16 * y.abs().max(1e-300),
                "{y}"
            );
        }
        for y in [1e-300, 1e-20, 0.01, 0.4, 0.6, 1.3, 1.999] {
            let x = erfcinv(y);
            assert!((libm::erfc(x) / y - 1.0).abs() < 1e-13, "{y}: {x}");
        }
        assert_eq!(erfinv(1.0), f64::INFINITY);
        assert!(erfinv(1.5).is_nan());
        assert_eq!(erfcinv(0.0), f64::INFINITY);
        assert_eq!(erfcinv(1.0), 0.0);
        // normcdfinv(0.975) is the familiar 1.959963985.
        assert!((normcdfinv(0.975) - 1.959_963_984_540_054).abs() < 1e-12);
        assert!((normcdf(1.959_963_984_540_054) - 0.975).abs() < 1e-15);
    }

    #[test]
    fn erfcx_is_continuous_where_its_formula_changes() {
        let below = erfcx(25.999_999_999);
        let above = erfcx(26.0);
        assert!((below / above - 1.0).abs() < 1e-9, "{below} {above}");
        assert_eq!(erfcx(0.0), 1.0);
        assert_eq!(erfcx(f64::INFINITY), 0.0);
        assert_eq!(erfcx(-30.0), f64::INFINITY);
    }
}
