//! Element types as Rust types, and the conversions between a stored
//! element and an [`ir::Value`].

use ir::{arith, DType, Value};

/// A Rust type that stores the elements of one or more [`DType`]s.
///
/// `bool` is stored as `u8` (0 or 1) and shares it with `uint8` and the 8-
/// and 4-bit floats (their codes); `float16` and `bfloat16` share `u16`
/// with `uint16`; every other dtype has its own type. [`Element::to_value`] and [`Element::from_value`]
/// convert with the semantics of the dtype (a `uint64` is held in a
/// [`Value::Int`] as its bit pattern, as the kernel VM holds it).
pub trait Element: bytemuck::Pod + Send + Sync + 'static {
    /// The dtypes stored as this type.
    const DTYPES: &'static [DType];

    /// The element as a scalar of type `t` (one of [`Element::DTYPES`]).
    fn to_value(self, t: DType) -> Value;

    /// A scalar as an element of type `t`, converted as a cast would
    /// (rounded to `float32`, wrapped to the width, `!= 0` for `bool`).
    fn from_value(t: DType, v: Value) -> Self;
}

macro_rules! int_element {
    ($t:ty, $($d:expr),+) => {
        impl Element for $t {
            const DTYPES: &'static [DType] = &[$($d),+];

            fn to_value(self, t: DType) -> Value {
                if t == DType::Bool {
                    Value::Bool(self != 0)
                } else if let Some(f) = t.narrow() {
                    Value::Float(f.decode(self as u32))
                } else {
                    // Widening to i64 keeps the value; `u64` keeps its bits.
                    Value::Int(self as i64)
                }
            }

            fn from_value(t: DType, v: Value) -> Self {
                match arith::cast_value(t, v) {
                    Value::Bool(b) => b as $t,
                    // `cast_value` has wrapped the value to `t`'s width.
                    Value::Int(i) => i as $t,
                    Value::Float(x) => match t.narrow() {
                        Some(f) => f.encode(x) as $t,
                        None => x as $t,
                    },
                }
            }
        }
    };
}

// The narrow floats are stored as their codes.
int_element!(
    u8,
    DType::U8,
    DType::Bool,
    DType::F4E2M1,
    DType::F8E4M3FN,
    DType::F8E4M3FNUZ,
    DType::F8E5M2,
    DType::F8E5M2FNUZ,
    DType::U4,
    DType::U2
);
// The 2- and 4-bit integers are stored as their values, a byte each.
int_element!(i8, DType::I8, DType::I4, DType::I2);
int_element!(u16, DType::U16, DType::F16, DType::BF16);
int_element!(i16, DType::I16);
int_element!(u32, DType::U32);
int_element!(i32, DType::I32);
int_element!(u64, DType::U64);
int_element!(i64, DType::I64);

impl Element for f32 {
    const DTYPES: &'static [DType] = &[DType::F32];

    fn to_value(self, _: DType) -> Value {
        Value::Float(f64::from(self))
    }

    fn from_value(t: DType, v: Value) -> Self {
        match arith::cast_value(t, v) {
            // Already rounded to float32 by the cast.
            Value::Float(x) => x as f32,
            Value::Int(i) => i as f32,
            Value::Bool(b) => f32::from(u8::from(b)),
        }
    }
}

impl Element for f64 {
    const DTYPES: &'static [DType] = &[DType::F64];

    fn to_value(self, _: DType) -> Value {
        Value::Float(self)
    }

    fn from_value(t: DType, v: Value) -> Self {
        match arith::cast_value(t, v) {
            Value::Float(x) => x,
            Value::Int(i) => i as f64,
            Value::Bool(b) => f64::from(u8::from(b)),
        }
    }
}

/// The bytes of one element of `t` (`bool` is one byte).
pub fn element_bytes(t: DType) -> usize {
    (t.bits() / 8).max(1) as usize
}

/// Runs `$body` with `$T` bound to the Rust element type of dtype `$t`
/// (the integer types through [`with_int_element!`], so the table of them
/// is written once).
#[macro_export]
macro_rules! with_element {
    ($t:expr, $T:ident => $body:expr) => {
        match $t {
            ir::DType::Bool
            | ir::DType::F4E2M1
            | ir::DType::F8E4M3FN
            | ir::DType::F8E4M3FNUZ
            | ir::DType::F8E5M2
            | ir::DType::F8E5M2FNUZ => {
                type $T = u8;
                $body
            }
            ir::DType::F16 | ir::DType::BF16 => {
                type $T = u16;
                $body
            }
            ir::DType::F32 => {
                type $T = f32;
                $body
            }
            ir::DType::F64 => {
                type $T = f64;
                $body
            }
            int => $crate::with_int_element!(int, $T => $body, unreachable!("{int} is an integer type")),
        }
    };
}

/// Runs `$body` with `$T` bound to the Rust element type of the integer
/// dtype `$t`, or evaluates `$other` when `$t` is `bool` or a float.
#[macro_export]
macro_rules! with_int_element {
    ($t:expr, $T:ident => $body:expr, $other:expr) => {
        match $t {
            ir::DType::U8 | ir::DType::U4 | ir::DType::U2 => {
                type $T = u8;
                $body
            }
            ir::DType::I8 | ir::DType::I4 | ir::DType::I2 => {
                type $T = i8;
                $body
            }
            ir::DType::U16 => {
                type $T = u16;
                $body
            }
            ir::DType::I16 => {
                type $T = i16;
                $body
            }
            ir::DType::U32 => {
                type $T = u32;
                $body
            }
            ir::DType::I32 => {
                type $T = i32;
                $body
            }
            ir::DType::U64 => {
                type $T = u64;
                $body
            }
            ir::DType::I64 => {
                type $T = i64;
                $body
            }
            _ => $other,
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_dtype_has_one_element_type_of_its_width() {
        for t in DType::ALL {
            let size = with_element!(t, T => size_of::<T>());
            assert_eq!(size, element_bytes(t), "{t}");
            let listed = with_element!(t, T => T::DTYPES.contains(&t));
            assert!(listed, "{t}");
        }
    }

    #[test]
    fn conversions_follow_the_dtype() {
        assert_eq!(u8::from_value(DType::Bool, Value::Int(7)), 1);
        assert_eq!(1u8.to_value(DType::Bool), Value::Bool(true));
        assert_eq!(1u8.to_value(DType::U8), Value::Int(1));
        assert_eq!(i8::from_value(DType::I8, Value::Int(200)), -56);
        assert_eq!(u64::MAX.to_value(DType::U64), Value::Int(-1));
        assert_eq!(u64::from_value(DType::U64, Value::Int(-1)), u64::MAX);
        assert_eq!(f32::from_value(DType::F32, Value::Float(0.1)), 0.1f32);
        assert_eq!(0.5f32.to_value(DType::F32), Value::Float(0.5));
        assert_eq!(u16::from_value(DType::F16, Value::Float(-2.0)), 0xc000);
        assert_eq!(0x3f80u16.to_value(DType::BF16), Value::Float(1.0));
        assert_eq!(u8::from_value(DType::F8E4M3FN, Value::Int(1000)), 0x7f);
    }
}
