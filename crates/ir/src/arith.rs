//! Scalar semantics of real arithmetic: how each element type is stored,
//! rounded and wrapped, and what every operator, cast and builtin computes.
//! This is the one definition: the interpreter's `Mode::Real` (through the
//! typed forms `float_arith`, `int_arith`, `float_builtin`, ...), the kernel
//! VM, the equivalence verifier's float path and the ONNX importer's
//! constant folding (through `unary`, `binary`, `builtin` on values) all
//! call these functions, and the C backend is tested against them.
//!
//! Representation (the invariant every tensor and every compiled closure
//! keeps): float values are `f64`s, a `float32` value being exactly
//! representable in `f32` and a narrow float's (`float16`, `bfloat16`, the
//! 8- and 4-bit floats) in its format (`minifloat`); every integer type and
//! `bool` is an `i64` holding the value sign- or zero-extended from its
//! width (`uint64` as its bit pattern, `bool` as 0 or 1). Every operation
//! computes in the wide type and then rounds (`f32`, the narrow floats) or
//! wraps (narrow integers), so results equal those of the narrow machine
//! types.

use std::cmp::Ordering;

use crate::{special, BinOp, Builtin, DType, UnOp, Value};

/// Rounds a float to the precision of `t` (`float64` loses nothing).
///
/// Computing `+ - * /` and `sqrt` in `f64` and rounding once to `f32` gives
/// exactly the IEEE `f32` result, because `f64` has more than twice the
/// precision of `f32` plus two bits; the narrow floats (at most 11
/// significant bits) have the same margin.
pub fn round(t: DType, x: f64) -> f64 {
    if t == DType::F32 {
        x as f32 as f64
    } else if let Some(f) = t.narrow() {
        f.round(x)
    } else {
        x
    }
}

/// Wraps an integer to the width and signedness of `t` (`bool`: non-zero is 1).
pub fn wrap(t: DType, v: i64) -> i64 {
    match t {
        DType::Bool => i64::from(v != 0),
        DType::U2 => v & 0x3,
        DType::I2 => (v << 62) >> 62,
        DType::U4 => v & 0xf,
        DType::I4 => (v << 60) >> 60,
        DType::U8 => v as u8 as i64,
        DType::I8 => v as i8 as i64,
        DType::U16 => v as u16 as i64,
        DType::I16 => v as i16 as i64,
        DType::U32 => v as u32 as i64,
        DType::I32 => v as i32 as i64,
        DType::U64 | DType::I64 => v,
        // Floats are never wrapped.
        _ => v,
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
pub fn compares(op: BinOp, o: Option<Ordering>) -> bool {
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

/// TC's `max` on floats (and the step of a `max=` reduction, as
/// `maximum(accumulator, value)`): IEEE 754-2019 `maximum`, NaN when either
/// operand is NaN, else the larger. Of two equal operands it gives the
/// first, so `+0` and `-0` count as equal rather than `-0 < +0` (as ONNX
/// Runtime's `Max`, `Relu` and `ReduceMax` treat them, and cheaper in C).
pub fn maximum(x: f64, y: f64) -> f64 {
    if x >= y || x.is_nan() {
        x
    } else {
        y
    }
}

/// TC's `min` on floats: [`maximum`]'s rule with the order reversed.
pub fn minimum(x: f64, y: f64) -> f64 {
    if x <= y || x.is_nan() {
        x
    } else {
        y
    }
}

/// C's `fmax`: a NaN operand is passed over (NaN only when both are), else
/// the larger; of two equal operands the first, as [`maximum`].
pub fn fmax(x: f64, y: f64) -> f64 {
    if x >= y || y.is_nan() {
        x
    } else {
        y
    }
}

/// C's `fmin`: [`fmax`]'s rule with the order reversed.
pub fn fmin(x: f64, y: f64) -> f64 {
    if x <= y || y.is_nan() {
        x
    } else {
        y
    }
}

/// Converts an integer of type `from` to the float type `to`, rounding once.
pub fn int_to_float(from: DType, to: DType, v: i64) -> f64 {
    match (from == DType::U64, to == DType::F32) {
        (true, true) => (v as u64) as f32 as f64,
        (false, true) => v as f32 as f64,
        // An integer beyond 2^53 rounds twice on its way to a narrow float;
        // every narrow format overflows long before that.
        (true, false) => round(to, (v as u64) as f64),
        (false, false) => round(to, v as f64),
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

/// Why a scalar operation has no value.
#[derive(Clone, Debug, PartialEq)]
pub enum ArithError {
    /// An integer `/` or `%` whose divisor is 0.
    DivisionByZero { op: BinOp, t: DType, a: i64, b: i64 },
    /// Operands the operation is not defined on (ill-typed IR), described.
    Operands(String),
}

impl std::fmt::Display for ArithError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ArithError::DivisionByZero { op, t, a, b } => write!(
                f,
                "integer {} by zero ({a} {} {b} in {t})",
                if *op == BinOp::Mod {
                    "modulo"
                } else {
                    "division"
                },
                op.symbol()
            ),
            ArithError::Operands(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for ArithError {}

/// `-x` in the float type `t`.
pub fn float_neg(t: DType, x: f64) -> f64 {
    round(t, -x)
}

/// `-x` in the integer type `t`, wrapped (`-(-128i8)` is -128).
pub fn int_neg(t: DType, x: i64) -> i64 {
    wrap(t, x.wrapping_neg())
}

/// A unary operator on a value of type `t`.
pub fn unary(op: UnOp, t: DType, a: Value) -> Result<Value, ArithError> {
    Ok(match (op, a) {
        (UnOp::Not, Value::Bool(b)) => Value::Bool(!b),
        (UnOp::Neg, Value::Float(x)) => Value::Float(float_neg(t, x)),
        (UnOp::Neg, Value::Int(i)) => Value::Int(int_neg(t, i)),
        (op, v) => return Err(ArithError::Operands(format!("{op:?} of {v:?}"))),
    })
}

/// `+ - * / %` on floats of type `t`, rounded once to `t`; `None` for
/// other operators. `%` is [`float_mod`].
pub fn float_arith(op: BinOp, t: DType, x: f64, y: f64) -> Option<f64> {
    let r = match op {
        BinOp::Add => x + y,
        BinOp::Sub => x - y,
        BinOp::Mul => x * y,
        BinOp::Div => x / y,
        BinOp::Mod => float_mod(x, y),
        _ => return None,
    };
    Some(round(t, r))
}

/// `+ - * / %` on integers of type `t`, wrapped to `t`; `/` and `%` are
/// [`floor_div`] and [`floor_mod`], failing on a zero divisor.
pub fn int_arith(op: BinOp, t: DType, x: i64, y: i64) -> Result<i64, ArithError> {
    let zero = || ArithError::DivisionByZero { op, t, a: x, b: y };
    let r = match op {
        BinOp::Add => x.wrapping_add(y),
        BinOp::Sub => x.wrapping_sub(y),
        BinOp::Mul => x.wrapping_mul(y),
        BinOp::Div => floor_div(t, x, y).ok_or_else(zero)?,
        BinOp::Mod => floor_mod(t, x, y).ok_or_else(zero)?,
        _ => {
            return Err(ArithError::Operands(format!(
                "`{}` on integers",
                op.symbol()
            )))
        }
    };
    Ok(wrap(t, r))
}

/// A comparison of two floats (NaN is unordered: only `!=` holds).
pub fn float_compare(op: BinOp, x: f64, y: f64) -> bool {
    compares(op, x.partial_cmp(&y))
}

/// A comparison of two integers of type `t`.
pub fn int_compare(op: BinOp, t: DType, x: i64, y: i64) -> bool {
    compares(op, Some(int_cmp(t, x, y)))
}

/// A comparison or `&&`, `||` of two booleans (`false < true`).
pub fn bool_binary(op: BinOp, x: bool, y: bool) -> Result<bool, ArithError> {
    Ok(match op {
        BinOp::And => x && y,
        BinOp::Or => x || y,
        _ if op.is_comparison() => compares(op, Some(x.cmp(&y))),
        _ => {
            return Err(ArithError::Operands(format!(
                "`{}` on bool values",
                op.symbol()
            )))
        }
    })
}

/// A binary operator on two values of type `t` (for comparisons, the
/// operands' type): the one definition every executor applies.
pub fn binary(op: BinOp, t: DType, a: Value, b: Value) -> Result<Value, ArithError> {
    Ok(match (a, b) {
        (Value::Bool(x), Value::Bool(y)) => Value::Bool(bool_binary(op, x, y)?),
        (Value::Float(x), Value::Float(y)) if op.is_comparison() => {
            Value::Bool(float_compare(op, x, y))
        }
        (Value::Float(x), Value::Float(y)) => Value::Float(
            float_arith(op, t, x, y)
                .ok_or_else(|| ArithError::Operands(format!("`{}` on floats", op.symbol())))?,
        ),
        (Value::Int(x), Value::Int(y)) if op.is_comparison() => {
            Value::Bool(int_compare(op, t, x, y))
        }
        (Value::Int(x), Value::Int(y)) => Value::Int(int_arith(op, t, x, y)?),
        (a, b) => {
            return Err(ArithError::Operands(format!(
                "`{}` on mismatched values {a:?} and {b:?}",
                op.symbol()
            )))
        }
    })
}

/// A float builtin on arguments of the float type `t`: computed in `f64`
/// and rounded once to `t` (`nextafter`, a property of the type, in `t`
/// itself). `None` when the number of arguments is not the arity.
pub fn float_builtin(b: Builtin, t: DType, args: &[f64]) -> Option<f64> {
    use Builtin as B;
    if args.len() != b.arity() {
        return None;
    }
    let r = match (b, args) {
        (B::Nextafter, &[x, y]) => {
            return Some(if t == DType::F32 {
                f64::from(libm::nextafterf(x as f32, y as f32))
            } else if let Some(f) = t.narrow() {
                f.next_after(x, y)
            } else {
                libm::nextafter(x, y)
            })
        }
        (_, &[x]) => unary_builtin(b, x)?,
        (_, &[x, y]) => match b {
            B::Max => maximum(x, y),
            B::Min => minimum(x, y),
            B::Fmax => fmax(x, y),
            B::Fmin => fmin(x, y),
            B::Pow => x.powf(y),
            B::Atan2 => x.atan2(y),
            B::Copysign => x.copysign(y),
            B::Fdim => libm::fdim(x, y),
            B::Fdivide => x / y,
            B::Fmod => x % y,
            B::Hypot => x.hypot(y),
            B::Remainder => libm::remainder(x, y),
            B::Rhypot => 1.0 / x.hypot(y),
            _ => return None,
        },
        (B::Fma, &[x, y, z]) => x.mul_add(y, z),
        (B::Norm3d | B::Norm4d, xs) => special::norm(xs),
        (B::Rnorm3d | B::Rnorm4d, xs) => 1.0 / special::norm(xs),
        _ => return None,
    };
    Some(round(t, r))
}

/// A one-argument float builtin in `f64`; `None` for other arities.
/// Functions `std` has call it (on Linux, the C library's, as the C
/// backend does); the others `libm` or [`special`].
fn unary_builtin(b: Builtin, x: f64) -> Option<f64> {
    use Builtin as B;
    Some(match b {
        B::Exp => x.exp(),
        B::Log => x.ln(),
        B::Tanh => x.tanh(),
        B::Sqrt => x.sqrt(),
        B::Rsqrt => 1.0 / x.sqrt(),
        B::Abs => x.abs(),
        B::Erf => libm::erf(x),
        B::Sin => x.sin(),
        B::Cos => x.cos(),
        B::Floor => x.floor(),
        B::Ceil => x.ceil(),
        B::Sigmoid => 1.0 / (1.0 + (-x).exp()),
        B::Acos => x.acos(),
        B::Acosh => libm::acosh(x),
        B::Asin => x.asin(),
        B::Asinh => libm::asinh(x),
        B::Atan => x.atan(),
        B::Atanh => libm::atanh(x),
        B::Cbrt => x.cbrt(),
        B::Cosh => x.cosh(),
        B::Cospi => special::cospi(x),
        B::CylBesselI0 => special::bessel_i(0, x),
        B::CylBesselI1 => special::bessel_i(1, x),
        B::Erfc => libm::erfc(x),
        B::Erfcinv => special::erfcinv(x),
        B::Erfcx => special::erfcx(x),
        B::Erfinv => special::erfinv(x),
        B::Exp10 => 10f64.powf(x),
        B::Exp2 => x.exp2(),
        B::Expm1 => x.exp_m1(),
        B::J0 => libm::j0(x),
        B::J1 => libm::j1(x),
        B::Lgamma => libm::lgamma_r(x).0,
        B::Log10 => x.log10(),
        B::Log1p => x.ln_1p(),
        B::Log2 => x.log2(),
        B::Logb => special::logb(x),
        B::Normcdf => special::normcdf(x),
        B::Normcdfinv => special::normcdfinv(x),
        B::Rcbrt => 1.0 / x.cbrt(),
        B::Round => x.round(),
        B::Sinh => x.sinh(),
        B::Sinpi => special::sinpi(x),
        B::Tan => x.tan(),
        B::Tgamma => libm::tgamma(x),
        B::Trunc => x.trunc(),
        B::Y0 => libm::y0(x),
        B::Y1 => libm::y1(x),
        _ => return None,
    })
}

/// An integer builtin (`fabs`, `max`, `min`, `fmax`, `fmin`) on arguments
/// of type `t`, wrapped; `None` for the float-only builtins. `max` and
/// `fmax` take the first operand unless it is less, `min` and `fmin` unless
/// it is greater.
pub fn int_builtin(b: Builtin, t: DType, args: &[i64]) -> Option<i64> {
    Some(match (b, args) {
        (Builtin::Abs, &[x]) => int_abs(t, x),
        (Builtin::Max | Builtin::Fmax, &[x, y]) => {
            if int_cmp(t, x, y) == Ordering::Less {
                y
            } else {
                x
            }
        }
        (Builtin::Min | Builtin::Fmin, &[x, y]) => {
            if int_cmp(t, x, y) == Ordering::Greater {
                y
            } else {
                x
            }
        }
        _ => return None,
    })
}

/// A builtin on values of type `t`.
pub fn builtin(b: Builtin, t: DType, args: &[Value]) -> Result<Value, ArithError> {
    let bad = || ArithError::Operands(format!("`{}` of {args:?}", b.name()));
    if t.is_float() {
        let xs = args
            .iter()
            .map(|a| match a {
                Value::Float(x) => Some(*x),
                _ => None,
            })
            .collect::<Option<Vec<f64>>>()
            .ok_or_else(bad)?;
        return float_builtin(b, t, &xs).map(Value::Float).ok_or_else(bad);
    }
    let xs = args
        .iter()
        .map(|a| match a {
            Value::Int(x) => Some(*x),
            _ => None,
        })
        .collect::<Option<Vec<i64>>>()
        .ok_or_else(bad)?;
    int_builtin(b, t, &xs).map(Value::Int).ok_or_else(bad)
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

    /// `max`/`min` propagate NaN from either operand, `fmax`/`fmin` pass
    /// over it; infinities order as numbers; of two equal operands (`-0`
    /// and `+0` too) each gives the first.
    #[test]
    fn maximum_and_minimum_propagate_nan_and_fmax_fmin_pass_over_it() {
        let (nan, inf) = (f64::NAN, f64::INFINITY);
        for (x, y) in [(nan, 1.0), (1.0, nan), (nan, nan), (nan, inf), (-inf, nan)] {
            assert!(maximum(x, y).is_nan(), "maximum({x}, {y})");
            assert!(minimum(x, y).is_nan(), "minimum({x}, {y})");
        }
        assert_eq!(fmax(nan, 1.0), 1.0);
        assert_eq!(fmax(1.0, nan), 1.0);
        assert_eq!(fmin(nan, -inf), -inf);
        assert_eq!(fmin(-inf, nan), -inf);
        assert!(fmax(nan, nan).is_nan() && fmin(nan, nan).is_nan());
        for f in [maximum, fmax] {
            assert_eq!(f(-inf, 2.0), 2.0);
            assert_eq!(f(inf, 2.0), inf);
            assert_eq!(f(-inf, inf), inf);
            assert_eq!(f(-3.0, -2.0), -2.0);
        }
        for f in [minimum, fmin] {
            assert_eq!(f(inf, 2.0), 2.0);
            assert_eq!(f(2.0, -inf), -inf);
            assert_eq!(f(inf, -inf), -inf);
            assert_eq!(f(-3.0, -2.0), -3.0);
        }
        for f in [maximum, minimum, fmax, fmin] {
            assert!(f(-0.0, 0.0).is_sign_negative());
            assert!(f(0.0, -0.0).is_sign_positive());
        }
        // The builtins on values are these functions, and integers keep
        // their order.
        let max = |b, x, y| float_builtin(b, DType::F32, &[x, y]).unwrap();
        assert!(max(Builtin::Max, 1.0, nan).is_nan());
        assert_eq!(max(Builtin::Fmax, 1.0, nan), 1.0);
        assert_eq!(int_builtin(Builtin::Max, DType::I8, &[-3, 2]), Some(2));
        assert_eq!(int_builtin(Builtin::Min, DType::U64, &[-1, 2]), Some(2));
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
