//! Element types of tensors and scalars.

use std::fmt;

use crate::minifloat::{self, Format};

/// The element type of a tensor, a scalar parameter or an expression.
///
/// Iterators, size symbols and subscripts are `I64`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    Bool,
    U2,
    I2,
    U4,
    I4,
    U8,
    I8,
    U16,
    I16,
    U32,
    I32,
    U64,
    I64,
    F4E2M1,
    F8E4M3FN,
    F8E4M3FNUZ,
    F8E5M2,
    F8E5M2FNUZ,
    BF16,
    F16,
    F32,
    F64,
}

impl DType {
    pub const ALL: [DType; 22] = [
        DType::Bool,
        DType::U2,
        DType::I2,
        DType::U4,
        DType::I4,
        DType::U8,
        DType::I8,
        DType::U16,
        DType::I16,
        DType::U32,
        DType::I32,
        DType::U64,
        DType::I64,
        DType::F4E2M1,
        DType::F8E4M3FN,
        DType::F8E4M3FNUZ,
        DType::F8E5M2,
        DType::F8E5M2FNUZ,
        DType::BF16,
        DType::F16,
        DType::F32,
        DType::F64,
    ];

    /// The canonical TC spelling (`float32`, `int64`, `bool`, ...).
    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::U2 => "uint2",
            DType::I2 => "int2",
            DType::U4 => "uint4",
            DType::I4 => "int4",
            DType::U8 => "uint8",
            DType::I8 => "int8",
            DType::U16 => "uint16",
            DType::I16 => "int16",
            DType::U32 => "uint32",
            DType::I32 => "int32",
            DType::U64 => "uint64",
            DType::I64 => "int64",
            DType::F4E2M1 => "float4e2m1",
            DType::F8E4M3FN => "float8e4m3fn",
            DType::F8E4M3FNUZ => "float8e4m3fnuz",
            DType::F8E5M2 => "float8e5m2",
            DType::F8E5M2FNUZ => "float8e5m2fnuz",
            DType::BF16 => "bfloat16",
            DType::F16 => "float16",
            DType::F32 => "float32",
            DType::F64 => "float64",
        }
    }

    /// Parses a TC type name, aliases included (`float`, `double`, `int`, `byte`).
    pub fn from_name(s: &str) -> Option<DType> {
        Some(match s {
            "bool" => DType::Bool,
            "uint2" => DType::U2,
            "int2" => DType::I2,
            "uint4" => DType::U4,
            "int4" => DType::I4,
            "uint8" | "byte" => DType::U8,
            "int8" => DType::I8,
            "uint16" => DType::U16,
            "int16" => DType::I16,
            "uint32" => DType::U32,
            "int32" | "int" => DType::I32,
            "uint64" => DType::U64,
            "int64" | "long" => DType::I64,
            "float4e2m1" => DType::F4E2M1,
            "float8e4m3fn" => DType::F8E4M3FN,
            "float8e4m3fnuz" => DType::F8E4M3FNUZ,
            "float8e5m2" => DType::F8E5M2,
            "float8e5m2fnuz" => DType::F8E5M2FNUZ,
            "bfloat16" => DType::BF16,
            "float16" | "half" => DType::F16,
            "float32" | "float" => DType::F32,
            "float64" | "double" => DType::F64,
            _ => return None,
        })
    }

    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64) || self.narrow().is_some()
    }

    /// Whether `self` is one of the 2- and 4-bit integers (stored a byte
    /// each, as their values).
    pub fn is_sub_byte(self) -> bool {
        matches!(self, DType::U2 | DType::I2 | DType::U4 | DType::I4)
    }

    /// The format of a float narrower than `float32` (stored as its code,
    /// computed in `f64` and rounded to it after every operation).
    pub fn narrow(self) -> Option<Format> {
        Some(match self {
            DType::F4E2M1 => minifloat::F4E2M1,
            DType::F8E4M3FN => minifloat::F8E4M3FN,
            DType::F8E4M3FNUZ => minifloat::F8E4M3FNUZ,
            DType::F8E5M2 => minifloat::F8E5M2,
            DType::F8E5M2FNUZ => minifloat::F8E5M2FNUZ,
            DType::BF16 => minifloat::BF16,
            DType::F16 => minifloat::F16,
            _ => return None,
        })
    }

    pub fn is_int(self) -> bool {
        !self.is_float() && self != DType::Bool
    }

    pub fn is_signed(self) -> bool {
        matches!(
            self,
            DType::I2 | DType::I4 | DType::I8 | DType::I16 | DType::I32 | DType::I64
        ) || self.is_float()
    }

    /// Width in bits as stored (`bool`, `float4e2m1` and the 2- and 4-bit
    /// integers take a byte).
    pub fn bits(self) -> u32 {
        match self {
            DType::Bool | DType::U8 | DType::I8 => 8,
            DType::U2 | DType::I2 | DType::U4 | DType::I4 => 8,
            DType::F4E2M1
            | DType::F8E4M3FN
            | DType::F8E4M3FNUZ
            | DType::F8E5M2
            | DType::F8E5M2FNUZ => 8,
            DType::U16 | DType::I16 | DType::BF16 | DType::F16 => 16,
            DType::U32 | DType::I32 | DType::F32 => 32,
            DType::U64 | DType::I64 | DType::F64 => 64,
        }
    }

    /// The type both operands of a binary operation are converted to.
    ///
    /// Floats win over integers, wider wins over narrower; between integer
    /// types of equal width the signed one wins. The order of the variants
    /// encodes exactly this, but for two different narrow floats, neither
    /// of which holds the other's values: they meet in `float32`.
    pub fn promote(a: DType, b: DType) -> DType {
        if a != b && a.narrow().is_some() && b.narrow().is_some() {
            DType::F32
        } else {
            a.max(b)
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
