//! Scalar semantics of real arithmetic (the interpreter's `Mode::Real` and
//! the kernel VM): how each element type is stored,
//! rounded and wrapped, and what every operator, cast and builtin computes.
//!
//! Representation (the invariant every tensor and every compiled closure
//! keeps): `float32` and `float64` values are `f64`s, a `float32` value being
//! exactly representable in `f32`; every integer type and `bool` is an `i64`
//! holding the value sign- or zero-extended from its width (`uint64` as its
//! bit pattern, `bool` as 0 or 1). Every operation computes in the wide type
//! and then rounds (`f32`) or wraps (narrow integers), so results equal those
//! of the narrow machine types.

use std::cmp::Ordering;

use crate::{Builtin, DType, Value};

/// Rounds a float to the precision of `t` (only `float32` loses anything).
///
/// Computing `+ - * /` and `sqrt` in `f64` and rounding once to `f32` gives
/// exactly the IEEE `f32` result, because `f64` has more than twice the
/// precision of `f32` plus two bits.
pub fn round(t: DType, x: f64) -> f64 {
    if t == DType::F32 {
        x as f32 as f64
    } else {
        x
    }
}

/// Wraps an integer to the width and signedness of `t` (`bool`: non-zero is 1).
pub fn wrap(t: DType, v: i64) -> i64 {
    match t {
        DType::Bool => i64::from(v != 0),
        DType::U8 => v as u8 as i64,
        DType::I8 => v as i8 as i64,
        DType::U16 => v as u16 as i64,
        DType::I16 => v as i16 as i64,
        DType::U32 => v as u32 as i64,
        DType::I32 => v as i32 as i64,
        DType::U64 | DType::I64 | DType::F32 | DType::F64 => v,
    }
}

/// Orders two integers of type `t` (`uint64` compares its bit patterns as
/// unsigned; every other type is stored with its true value).
pub fn int_cmp(t: DType, a: i64, b: i64) -> Ordering {
    if t == DType::U64 {
        (a as u64).cmp(&(b as u64))
    } else {
        a.cmp(&b)
    }
}

/// Whether an ordering satisfies a comparison operator (`None`: unordered,
/// a NaN operand, for which only `!=` holds).
pub fn compares(op: crate::BinOp, o: Option<Ordering>) -> bool {
    use crate::BinOp;
    match op {
        BinOp::Lt => o == Some(Ordering::Less),
        BinOp::Le => matches!(o, Some(Ordering::Less | Ordering::Equal)),
        BinOp::Gt => o == Some(Ordering::Greater),
        BinOp::Ge => matches!(o, Some(Ordering::Greater | Ordering::Equal)),
        BinOp::Eq => o == Some(Ordering::Equal),
        _ => o != Some(Ordering::Equal),
    }
}

/// Floor division (Python's `//`) in type `t`; `None` when dividing by zero.
pub fn floor_div(t: DType, a: i64, b: i64) -> Option<i64> {
    if b == 0 {
        return None;
    }
    if t == DType::U64 {
        return Some(((a as u64) / (b as u64)) as i64);
    }
    // Truncating division rounds toward zero; when the operands have
    // opposite signs and the division is inexact, floor is one lower.
    // `wrapping_div` only wraps for `i64::MIN / -1`, whose true quotient 2^63
    // wraps to `i64::MIN` like every other overflow.
    let q = a.wrapping_div(b);
    let inexact = a.wrapping_rem(b) != 0;
    let q = if inexact && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    };
    Some(wrap(t, q))
}

/// Floor modulo (Python's `%`, the sign of the divisor) in type `t`; `None`
/// when dividing by zero.
pub fn floor_mod(t: DType, a: i64, b: i64) -> Option<i64> {
    if b == 0 {
        return None;
    }
    if t == DType::U64 {
        return Some(((a as u64) % (b as u64)) as i64);
    }
    let r = a.wrapping_rem(b);
    // |r| < |b| and the signs differ, so `r + b` cannot overflow.
    Some(if r != 0 && ((r < 0) != (b < 0)) {
        r + b
    } else {
        r
    })
}

/// Floor modulo on floats, computed as Python does: the exact `fmod`, moved
/// into the divisor's sign by adding the divisor once. (The textbook
/// `a - b*floor(a/b)` is not used: its rounded quotient can be off by one,
/// giving e.g. 0 instead of 0.09999... for `5.5 % 0.1`.)
pub fn float_mod(a: f64, b: f64) -> f64 {
    let r = a % b;
    if r == 0.0 {
        0.0f64.copysign(b)
    } else if (r < 0.0) != (b < 0.0) {
        r + b
    } else {
        r
    }
}

/// Converts an integer of type `from` to the float type `to`, rounding once.
pub fn int_to_float(from: DType, to: DType, v: i64) -> f64 {
    match (from == DType::U64, to == DType::F32) {
        (true, true) => (v as u64) as f32 as f64,
        (true, false) => (v as u64) as f64,
        (false, true) => v as f32 as f64,
        (false, false) => v as f64,
    }
}

/// Converts a float to the integer type `to`: truncation toward zero,
/// saturating at the ends of `i64` (or, for `uint64`, of `u64`), NaN to 0,
/// then wrapping to the width of `to`.
pub fn float_to_int(to: DType, x: f64) -> i64 {
    if to == DType::U64 && x >= 0.0 {
        (x as u64) as i64
    } else {
        wrap(to, x as i64)
    }
}

/// Absolute value of an integer of type `t`, wrapped (`abs(-128i8)` is -128).
pub fn int_abs(t: DType, v: i64) -> i64 {
    if t.is_signed() {
        wrap(t, v.wrapping_abs())
    } else {
        v
    }
}

/// A one-argument float builtin, computed in `f64` (rounding to `f32` is the
/// caller's job); `None` for builtins of other arities.
pub fn float_unary(b: Builtin) -> Option<fn(f64) -> f64> {
    Some(match b {
        Builtin::Exp => f64::exp,
        Builtin::Log => f64::ln,
        Builtin::Tanh => f64::tanh,
        Builtin::Sqrt => f64::sqrt,
        Builtin::Rsqrt => |x| 1.0 / x.sqrt(),
        Builtin::Abs => f64::abs,
        Builtin::Erf => libm::erf,
        Builtin::Sin => f64::sin,
        Builtin::Cos => f64::cos,
        Builtin::Floor => f64::floor,
        Builtin::Ceil => f64::ceil,
        Builtin::Sigmoid => |x| 1.0 / (1.0 + (-x).exp()),
        Builtin::Max | Builtin::Min | Builtin::Pow | Builtin::Fma => return None,
    })
}

/// A two-argument float builtin. `fmax`/`fmin` follow C: a NaN operand is
/// ignored (as `f64::max` does).
pub fn float_binary(b: Builtin) -> Option<fn(f64, f64) -> f64> {
    Some(match b {
        Builtin::Max => f64::max,
        Builtin::Min => f64::min,
        Builtin::Pow => f64::powf,
        _ => return None,
    })
}

/// Converts a value to type `t` as a cast does (used for literals, whose
/// kind the verifier matches to their type, but which stay total here).
pub fn cast_value(t: DType, v: Value) -> Value {
    match (v, t) {
        (Value::Bool(b), DType::Bool) => Value::Bool(b),
        (Value::Int(i), DType::Bool) => Value::Bool(i != 0),
        (Value::Float(x), DType::Bool) => Value::Bool(x != 0.0),
        (Value::Bool(b), _) if t.is_float() => Value::Float(f64::from(u8::from(b))),
        (Value::Int(i), _) if t.is_float() => Value::Float(int_to_float(DType::I64, t, i)),
        (Value::Float(x), _) if t.is_float() => Value::Float(round(t, x)),
        (Value::Bool(b), _) => Value::Int(i64::from(b)),
        (Value::Int(i), _) => Value::Int(wrap(t, i)),
        (Value::Float(x), _) => Value::Int(float_to_int(t, x)),
    }
}

/// Converts a scalar argument to the declared type of its parameter.
///
/// Integers must fit the integer type exactly (no silent wrapping of a
/// caller's value); floats take integers and floats (rounded to `float32`
/// when `round_floats`); `bool` takes only booleans. In mod-p mode floats are
/// not rounded, because an integer argument there is a residue that must
/// survive intact.
pub fn convert_scalar(name: &str, t: DType, v: Value, round_floats: bool) -> Result<Value, String> {
    let bad = || {
        format!(
            "scalar `{name}` is {t}, but the argument is {}",
            show_value(v)
        )
    };
    match (v, t) {
        (Value::Bool(_), DType::Bool) => Ok(v),
        (Value::Int(i), _) if t.is_int() => {
            if wrap(t, i) == i {
                Ok(v)
            } else {
                Err(format!(
                    "scalar `{name}` is {t}, but {i} does not fit in it"
                ))
            }
        }
        (Value::Int(i), _) if t.is_float() => Ok(if round_floats {
            Value::Float(int_to_float(DType::I64, t, i))
        } else {
            v
        }),
        (Value::Float(x), _) if t.is_float() => {
            Ok(Value::Float(if round_floats { round(t, x) } else { x }))
        }
        _ => Err(bad()),
    }
}

/// A value as the messages print it.
pub fn show_value(v: Value) -> String {
    match v {
        Value::Int(i) => i.to_string(),
        Value::Float(x) => format!("{x:?}"),
        Value::Bool(b) => b.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floor_division_and_modulo_follow_python() {
        let t = DType::I32;
        assert_eq!(floor_div(t, -7, 2), Some(-4));
        assert_eq!(floor_mod(t, -7, 2), Some(1));
        assert_eq!(floor_div(t, 7, -2), Some(-4));
        assert_eq!(floor_mod(t, 7, -2), Some(-1));
        assert_eq!(floor_div(t, -7, -2), Some(3));
        assert_eq!(floor_mod(t, -7, -2), Some(-1));
        assert_eq!(floor_div(t, 6, -2), Some(-3));
        assert_eq!(floor_mod(t, 6, -2), Some(0));
        assert_eq!(floor_div(t, 1, 0), None);
        assert_eq!(floor_mod(t, 1, 0), None);
        // The one overflowing quotient wraps instead of panicking.
        assert_eq!(floor_div(DType::I64, i64::MIN, -1), Some(i64::MIN));
        assert_eq!(floor_mod(DType::I64, i64::MIN, -1), Some(0));
        assert_eq!(floor_div(DType::I8, -128, -1), Some(-128));
        // uint64 divides its bit patterns as unsigned.
        assert_eq!(floor_div(DType::U64, -2, 2), Some(i64::MAX));
        assert_eq!(floor_mod(DType::U64, -1, 10), Some(5));
    }

    #[test]
    fn float_modulo_has_the_sign_of_the_divisor_and_is_exact() {
        assert_eq!(float_mod(-7.0, 2.0), 1.0);
        assert_eq!(float_mod(7.0, -2.0), -1.0);
        assert_eq!(float_mod(7.5, 2.0), 1.5);
        assert!(float_mod(1.0, 0.0).is_nan());
        // fmod is exact: 5.5 is 54 tenths (as the double 0.1 is slightly
        // more than a tenth) plus a remainder just below 0.1.
        let r = float_mod(5.5, 0.1);
        assert!((r - 0.1).abs() < 1e-15, "{r}");
    }

    #[test]
    fn wrapping_and_casts_follow_the_narrow_types() {
        assert_eq!(wrap(DType::I8, 127 + 1), -128);
        assert_eq!(wrap(DType::U8, -1), 255);
        assert_eq!(wrap(DType::U32, 1 << 32), 0);
        assert_eq!(float_to_int(DType::I32, -2.9), -2);
        assert_eq!(float_to_int(DType::I32, f64::NAN), 0);
        assert_eq!(float_to_int(DType::I64, 1e300), i64::MAX);
        assert_eq!(float_to_int(DType::U8, 300.7), 44);
        assert_eq!(
            float_to_int(DType::U64, 1.5e19) as u64,
            15_000_000_000_000_000_000
        );
        assert_eq!(
            int_to_float(DType::U64, DType::F64, -1),
            18_446_744_073_709_551_615.0
        );
        assert_eq!(
            int_to_float(DType::I64, DType::F32, 16_777_217),
            16_777_216.0
        );
        assert_eq!(int_abs(DType::I8, -128), -128);
        assert_eq!(int_cmp(DType::U64, -1, 1), Ordering::Greater);
        assert_eq!(int_cmp(DType::I64, -1, 1), Ordering::Less);
    }

    #[test]
    fn literal_values_convert_like_casts() {
        assert_eq!(
            cast_value(DType::F32, Value::Float(0.1)),
            Value::Float(0.1f32 as f64)
        );
        assert_eq!(
            cast_value(DType::F32, Value::Int(16_777_217)),
            Value::Float(16_777_216.0)
        );
        assert_eq!(cast_value(DType::I8, Value::Int(200)), Value::Int(-56));
        assert_eq!(cast_value(DType::I32, Value::Float(-2.5)), Value::Int(-2));
        assert_eq!(
            cast_value(DType::Bool, Value::Float(0.5)),
            Value::Bool(true)
        );
        assert_eq!(cast_value(DType::F64, Value::Bool(true)), Value::Float(1.0));
    }

    #[test]
    fn scalars_must_fit_their_declared_type() {
        assert_eq!(
            convert_scalar("s", DType::U8, Value::Int(255), true),
            Ok(Value::Int(255))
        );
        assert!(convert_scalar("s", DType::U8, Value::Int(256), true).is_err());
        assert_eq!(
            convert_scalar("a", DType::F32, Value::Float(0.1), true),
            Ok(Value::Float(0.1f32 as f64))
        );
        assert_eq!(
            convert_scalar("a", DType::F32, Value::Float(0.1), false),
            Ok(Value::Float(0.1))
        );
        assert!(convert_scalar("s", DType::I32, Value::Float(1.0), true).is_err());
        assert!(convert_scalar("b", DType::Bool, Value::Int(1), true).is_err());
    }
}
