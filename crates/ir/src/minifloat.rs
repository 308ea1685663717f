//! Narrow float formats: `float16`, `bfloat16`, the four 8-bit floats and
//! `float4e2m1`, as bit patterns of at most 16 bits.
//!
//! Each format is one [`Format`]: its exponent and mantissa widths, its
//! exponent bias and which codes are special (IEEE infinities and NaNs, a
//! NaN but no infinity, one NaN in place of negative zero, or no special
//! codes at all). Rounding is to nearest, ties to even, as `ml_dtypes` and
//! the ONNX reference round; a value beyond the largest finite one after
//! rounding becomes what the format has for it: infinity, NaN, or (for
//! `float4e2m1`, which has neither) the largest finite value.
//!
//! Guarantees: [`Format::round`] of any `f64` is exactly a value of the
//! format, and the one its code holds (`decode(encode(x))`, bit for bit:
//! every NaN is `f64::NAN`, and a format without negative zero makes
//! none), so a value stored and read back is the value; and
//! `encode(decode(b)) == b` for every code `b` but the NaNs and, where a
//! format has none, negative zero. The C backend's prelude repeats
//! `round`, `encode` and `decode` operation for operation; the codegen
//! semantics test compares the two over every code and many values.

/// Which codes of a format are special.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Special {
    /// IEEE 754: the top exponent is infinity (mantissa 0) or NaN.
    Ieee,
    /// No infinities; only the all-ones code (of either sign) is NaN
    /// (`fn` in the format's name).
    FiniteNan,
    /// No infinities and no negative zero; its code (sign bit alone) is
    /// the one NaN (`fnuz`).
    UnsignedZero,
    /// No infinities and no NaN: every code is a number.
    Finite,
}

/// A float format of `1 + exponent + mantissa` bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Format {
    pub exponent: u32,
    pub mantissa: u32,
    pub bias: i32,
    pub special: Special,
}

pub const F16: Format = Format {
    exponent: 5,
    mantissa: 10,
    bias: 15,
    special: Special::Ieee,
};
pub const BF16: Format = Format {
    exponent: 8,
    mantissa: 7,
    bias: 127,
    special: Special::Ieee,
};
pub const F8E4M3FN: Format = Format {
    exponent: 4,
    mantissa: 3,
    bias: 7,
    special: Special::FiniteNan,
};
pub const F8E4M3FNUZ: Format = Format {
    exponent: 4,
    mantissa: 3,
    bias: 8,
    special: Special::UnsignedZero,
};
pub const F8E5M2: Format = Format {
    exponent: 5,
    mantissa: 2,
    bias: 15,
    special: Special::Ieee,
};
pub const F8E5M2FNUZ: Format = Format {
    exponent: 5,
    mantissa: 2,
    bias: 16,
    special: Special::UnsignedZero,
};
pub const F4E2M1: Format = Format {
    exponent: 2,
    mantissa: 1,
    bias: 1,
    special: Special::Finite,
};

impl Format {
    /// The sign bit.
    pub fn sign_bit(self) -> u32 {
        1 << (self.exponent + self.mantissa)
    }

    fn top_exponent(self) -> u32 {
        (1 << self.exponent) - 1
    }

    fn mantissa_mask(self) -> u32 {
        (1 << self.mantissa) - 1
    }

    /// The exponent of the smallest normal number.
    pub fn min_exponent(self) -> i32 {
        1 - self.bias
    }

    /// The largest finite value.
    pub fn max(self) -> f64 {
        let m = f64::from(1u32 << self.mantissa);
        let (field, top_mantissa) = match self.special {
            // The top exponent is all special.
            Special::Ieee => (self.top_exponent() - 1, m - 1.0),
            // The top exponent's all-ones mantissa is NaN.
            Special::FiniteNan => (self.top_exponent(), m - 2.0),
            Special::UnsignedZero | Special::Finite => (self.top_exponent(), m - 1.0),
        };
        (m + top_mantissa) * pow2(field as i32 - self.bias - self.mantissa as i32)
    }

    /// What a value too large for the format becomes.
    fn overflow(self) -> f64 {
        match self.special {
            Special::Ieee => f64::INFINITY,
            Special::FiniteNan | Special::UnsignedZero => f64::NAN,
            Special::Finite => self.max(),
        }
    }

    /// `x` rounded to the format, to nearest with ties to even.
    pub fn round(self, x: f64) -> f64 {
        if x.is_nan() {
            return if self.special == Special::Finite {
                // `float4e2m1` has no NaN; `ml_dtypes` makes it negative zero.
                -0.0
            } else {
                f64::NAN
            };
        }
        let a = x.abs();
        // The exponent of `a` (f64 subnormals, far below every format's
        // smallest subnormal, count as that format's minimum exponent).
        let e = ((a.to_bits() >> 52) as i32 - 1023).max(self.min_exponent());
        let quantum = pow2(e - self.mantissa as i32);
        // `a / quantum` and the product are exact: quantum is a power of two
        // well inside f64's range.
        let r = (a / quantum).round_ties_even() * quantum;
        let r = if r > self.max() { self.overflow() } else { r };
        if r.is_nan() || (r == 0.0 && self.special == Special::UnsignedZero) {
            r
        } else {
            r.copysign(x)
        }
    }

    /// The code of `x` rounded to the format.
    pub fn encode(self, x: f64) -> u32 {
        let r = self.round(x);
        let sign = if r.is_sign_negative() {
            self.sign_bit()
        } else {
            0
        };
        if r.is_nan() {
            return match self.special {
                Special::Ieee => {
                    (self.top_exponent() << self.mantissa) | (1 << (self.mantissa - 1))
                }
                Special::FiniteNan => (self.top_exponent() << self.mantissa) | self.mantissa_mask(),
                Special::UnsignedZero => self.sign_bit(),
                Special::Finite => unreachable!("round never gives NaN for a format without one"),
            };
        }
        if r.is_infinite() {
            return sign | (self.top_exponent() << self.mantissa);
        }
        let a = r.abs();
        if a == 0.0 {
            return if self.special == Special::UnsignedZero {
                0
            } else {
                sign
            };
        }
        let e = (a.to_bits() >> 52) as i32 - 1023;
        if e < self.min_exponent() {
            let m = a / pow2(self.min_exponent() - self.mantissa as i32);
            sign | m as u32
        } else {
            let m = a / pow2(e - self.mantissa as i32) - f64::from(1u32 << self.mantissa);
            sign | (((e + self.bias) as u32) << self.mantissa) | m as u32
        }
    }

    /// The value of code `bits` (the bits above the format's width ignored).
    pub fn decode(self, bits: u32) -> f64 {
        let negative = bits & self.sign_bit() != 0;
        let field = (bits >> self.mantissa) & self.top_exponent();
        let m = bits & self.mantissa_mask();
        let nan = match self.special {
            Special::Ieee => field == self.top_exponent() && m != 0,
            Special::FiniteNan => field == self.top_exponent() && m == self.mantissa_mask(),
            Special::UnsignedZero => negative && field == 0 && m == 0,
            Special::Finite => false,
        };
        if nan {
            return f64::NAN;
        }
        let a = if self.special == Special::Ieee && field == self.top_exponent() {
            f64::INFINITY
        } else if field == 0 {
            f64::from(m) * pow2(self.min_exponent() - self.mantissa as i32)
        } else {
            f64::from(m | (1 << self.mantissa))
                * pow2(field as i32 - self.bias - self.mantissa as i32)
        };
        if negative {
            -a
        } else {
            a
        }
    }
}

impl Format {
    /// The value of the format next to `x` (a value of it) toward `y`, as
    /// C's `nextafter` steps in a machine type.
    pub fn next_after(self, x: f64, y: f64) -> f64 {
        if x.is_nan() || y.is_nan() {
            return f64::NAN;
        }
        if x == y {
            return y;
        }
        if x == 0.0 {
            return pow2(self.min_exponent() - self.mantissa as i32).copysign(y - x);
        }
        let bits = self.encode(x);
        let magnitude = bits & !self.sign_bit();
        let away_from_zero = (y > x) == (x > 0.0);
        let stepped = if away_from_zero {
            magnitude + 1
        } else {
            magnitude - 1
        };
        self.decode((bits & self.sign_bit()) | stepped)
    }
}

/// 2^e for the exponents the formats reach (well inside f64's normal range).
fn pow2(e: i32) -> f64 {
    f64::from_bits(((e + 1023) as u64) << 52)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Format; 7] = [F16, BF16, F8E4M3FN, F8E4M3FNUZ, F8E5M2, F8E5M2FNUZ, F4E2M1];

    #[test]
    fn the_largest_values_are_the_formats_documented_ones() {
        let max: Vec<f64> = ALL.iter().map(|f| f.max()).collect();
        assert_eq!(
            max,
            [
                65504.0,
                3.3895313892515355e38,
                448.0,
                240.0,
                57344.0,
                57344.0,
                6.0
            ]
        );
    }

    #[test]
    fn every_code_decodes_and_encodes_back() {
        for f in ALL {
            for bits in 0..(f.sign_bit() << 1) {
                let x = f.decode(bits);
                if x.is_nan() {
                    assert!(f.decode(f.encode(x)).is_nan(), "{f:?} {bits:#x}");
                    continue;
                }
                assert_eq!(f.round(x).to_bits(), x.to_bits(), "{f:?} {bits:#x}");
                assert_eq!(f.encode(x), bits, "{f:?} {bits:#x} = {x}");
            }
        }
    }

    #[test]
    fn rounding_is_to_nearest_even_and_overflow_is_the_formats() {
        // float16 has 10 mantissa bits: 1 + 2^-11 is halfway, ties to 1.
        assert_eq!(F16.round(1.0 + 2f64.powi(-11)), 1.0);
        assert_eq!(F16.round(1.0 + 3.0 * 2f64.powi(-11)), 1.0 + 2f64.powi(-9));
        assert_eq!(F16.round(65519.0), 65504.0);
        assert_eq!(F16.round(65520.0), f64::INFINITY);
        // The smallest subnormal is 2^-24; half of it ties to zero.
        assert_eq!(F16.round(2f64.powi(-25)), 0.0);
        assert_eq!(F16.round(1.5 * 2f64.powi(-25)), 2f64.powi(-24));
        // 464 is halfway between 448 and the NaN code of float8e4m3fn.
        assert_eq!(F8E4M3FN.round(464.0), 448.0);
        assert!(F8E4M3FN.round(470.0).is_nan());
        assert!(F8E4M3FN.round(f64::INFINITY).is_nan());
        assert_eq!(F8E5M2.round(-1e9), f64::NEG_INFINITY);
        assert_eq!(F4E2M1.round(2.5), 2.0);
        assert_eq!(F4E2M1.round(1e9), 6.0);
        assert_eq!(F8E4M3FNUZ.encode(-0.0), 0);
        assert_eq!(F8E4M3FNUZ.round(-1e-9).to_bits(), 0);
        assert_eq!(F8E4M3FN.round(-1e9).to_bits(), f64::NAN.to_bits());
        assert_eq!(BF16.encode(1.0), 0x3f80);
        assert_eq!(F16.encode(-2.0), 0xc000);
    }
}
