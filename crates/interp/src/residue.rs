//! Arithmetic modulo the Mersenne prime `P = 2^31 - 1`, used by
//! [`crate::Mode::ModP`] and by the equivalence verifier (`opt::verify`).
//!
//! Invariant: every residue is a `u64` in `[0, P)`. Because both operands of
//! a product are below `2^31`, the product is below `2^62` and a plain `u64`
//! multiply followed by one reduction never overflows.

/// The modulus of [`crate::Mode::ModP`]: the Mersenne prime `2^31 - 1`.
pub const P: u64 = 2_147_483_647;

pub fn add(a: u64, b: u64) -> u64 {
    let s = a + b;
    if s >= P {
        s - P
    } else {
        s
    }
}

pub fn sub(a: u64, b: u64) -> u64 {
    if a >= b {
        a - b
    } else {
        a + P - b
    }
}

pub fn mul(a: u64, b: u64) -> u64 {
    (a * b) % P
}

pub fn neg(a: u64) -> u64 {
    if a == 0 {
        0
    } else {
        P - a
    }
}

/// The residue of an integer (`-1` is `P - 1`).
pub fn from_i64(v: i64) -> u64 {
    // `P` fits in an `i64` and `rem_euclid` by a positive modulus is in `[0, P)`.
    v.rem_euclid(P as i64) as u64
}

/// `a^e` mod `P`, by squaring.
pub fn pow(mut a: u64, mut e: u64) -> u64 {
    let mut r = 1;
    while e > 0 {
        if e & 1 == 1 {
            r = mul(r, a);
        }
        a = mul(a, a);
        e >>= 1;
    }
    r
}

/// The inverse of a non-zero residue (Fermat: `a^(P-2)`); `None` for 0.
pub fn inverse(a: u64) -> Option<u64> {
    (a != 0).then(|| pow(a, P - 2))
}

/// The residue of a finite float as the exact rational it is: every finite
/// float is `m / 2^k` for integers `m` and `k >= 0`, which maps to
/// `m * inverse(2)^k`, so real arithmetic on such constants (`0.5 * 2`) is
/// preserved mod `P`. `None` for an infinity or NaN.
pub fn from_dyadic(x: f64) -> Option<u64> {
    if !x.is_finite() {
        return None;
    }
    let (mut m, mut k) = (x, 0u64);
    // At most 1074 doublings make any finite float an integer, exactly.
    while m.fract() != 0.0 {
        m *= 2.0;
        k += 1;
    }
    let half = inverse(2).unwrap_or(1);
    Some(mul(from_f64(m)?, pow(half, k)))
}

/// The residue of an integral float; `None` if `x` is not an integer (a
/// fraction, an infinity or NaN), which no polynomial over Z_p can mean.
pub fn from_f64(x: f64) -> Option<u64> {
    if !x.is_finite() || x.fract() != 0.0 {
        return None;
    }
    // `fmod` is exact, and adding `P` to a negative remainder (an integer
    // of magnitude below 2^31) is exact too, so this is `x mod P` exactly.
    Some(x.rem_euclid(P as f64) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_stay_in_range_and_agree_with_u128() {
        let samples = [0, 1, 2, P - 1, P - 2, 12_345_678, 1 << 30];
        for &a in &samples {
            for &b in &samples {
                let (a128, b128, p) = (a as u128, b as u128, P as u128);
                assert_eq!(add(a, b) as u128, (a128 + b128) % p);
                assert_eq!(sub(a, b) as u128, (a128 + p - b128) % p);
                assert_eq!(mul(a, b) as u128, (a128 * b128) % p);
            }
            assert_eq!(add(a, neg(a)), 0);
        }
    }

    #[test]
    fn inverses_and_dyadic_floats_keep_the_field_arithmetic() {
        for a in [1, 2, 3, 9, P - 1, 123_456_789] {
            assert_eq!(mul(a, inverse(a).unwrap()), 1);
        }
        assert_eq!(inverse(0), None);
        assert_eq!(mul(from_dyadic(0.5).unwrap(), 2), 1);
        assert_eq!(mul(from_dyadic(-0.375).unwrap(), 8), from_i64(-3));
        assert_eq!(from_dyadic(5.0), Some(5));
        assert_eq!(from_dyadic(f64::INFINITY), None);
    }

    #[test]
    fn conversions_take_signed_and_float_integers() {
        assert_eq!(from_i64(-1), P - 1);
        assert_eq!(from_i64(P as i64), 0);
        assert_eq!(
            from_i64(i64::MIN),
            (i64::MIN as i128).rem_euclid(P as i128) as u64
        );
        assert_eq!(from_f64(-2.0), Some(P - 2));
        assert_eq!(from_f64(1e300), Some((1e300f64 % P as f64) as u64));
        assert_eq!(from_f64(0.5), None);
        assert_eq!(from_f64(f64::NAN), None);
    }
}
