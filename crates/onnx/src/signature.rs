//! A model's interface as it declares it, before any import: each graph
//! input (but the initializers listed as inputs too) and output with its
//! element type and its dimensions, fixed or symbolic. `tessera info`
//! prints it and the Python package's `get_inputs()` returns it.
//!
//! Guarantees: reading it never fails on a loaded model; what the model
//! does not declare is `None` (the element type of an unsupported type
//! code, an unknown rank) or [`Dim::Unknown`].

use ir::DType;

use crate::load::{dtype, Loaded};
use crate::proto::ValueInfoProto;

/// A model's declared inputs and outputs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signature {
    pub inputs: Vec<Declared>,
    pub outputs: Vec<Declared>,
}

/// One declared input or output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Declared {
    pub name: String,
    /// The element type, when tessera has one for the model's type code.
    pub dtype: Option<DType>,
    /// ONNX's name of the element type (`float`, `int64`, ...), or the
    /// type code when ONNX has no name tessera knows.
    pub type_name: String,
    /// The dimensions, when the model gives a shape.
    pub dims: Option<Vec<Dim>>,
}

/// One dimension of a declared shape.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Dim {
    Fixed(i64),
    /// A named dimension (`dim_param`), bound when the model is run.
    Symbol(String),
    /// Neither a value nor a name.
    Unknown,
}

impl std::fmt::Display for Dim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Dim::Fixed(v) => write!(f, "{v}"),
            Dim::Symbol(s) => f.write_str(s),
            Dim::Unknown => f.write_str("?"),
        }
    }
}

/// The interface `loaded` declares.
pub fn signature(loaded: &Loaded) -> Signature {
    let Some(g) = loaded.model.graph.as_ref() else {
        return Signature {
            inputs: Vec::new(),
            outputs: Vec::new(),
        };
    };
    let init: std::collections::HashSet<&str> = g
        .initializer
        .iter()
        .filter_map(|t| t.name.as_deref())
        .collect();
    Signature {
        inputs: g
            .input
            .iter()
            .filter(|v| !init.contains(v.name.as_deref().unwrap_or("")))
            .map(declared)
            .collect(),
        outputs: g.output.iter().map(declared).collect(),
    }
}

fn declared(v: &ValueInfoProto) -> Declared {
    let t = v.r#type.as_ref().and_then(|t| t.tensor_type.as_ref());
    let code = t.and_then(|t| t.elem_type);
    let dtype = code.and_then(dtype);
    let type_name = match (dtype, code) {
        (Some(d), _) => onnx_type_name(d).to_string(),
        (None, Some(c)) => format!("type code {c}"),
        (None, None) => "?".to_string(),
    };
    let dims = t.and_then(|t| t.shape.as_ref()).map(|s| {
        s.dim
            .iter()
            .map(|d| match (d.dim_value, d.dim_param.as_deref()) {
                (Some(v), _) => Dim::Fixed(v),
                (None, Some(p)) if !p.is_empty() => Dim::Symbol(p.to_string()),
                _ => Dim::Unknown,
            })
            .collect()
    });
    Declared {
        name: v.name.clone().unwrap_or_default(),
        dtype,
        type_name,
        dims,
    }
}

/// ONNX's name of an element type, as ONNX Runtime shows it inside
/// `tensor(...)`.
pub fn onnx_type_name(d: DType) -> &'static str {
    match d {
        DType::F32 => "float",
        DType::F64 => "double",
        DType::I64 => "int64",
        DType::I32 => "int32",
        DType::I16 => "int16",
        DType::I8 => "int8",
        DType::U8 => "uint8",
        DType::U16 => "uint16",
        DType::U32 => "uint32",
        DType::U64 => "uint64",
        DType::Bool => "bool",
        DType::U2 => "uint2",
        DType::I2 => "int2",
        DType::U4 => "uint4",
        DType::I4 => "int4",
        DType::F16 => "float16",
        DType::BF16 => "bfloat16",
        DType::F8E4M3FN => "float8e4m3fn",
        DType::F8E4M3FNUZ => "float8e4m3fnuz",
        DType::F8E5M2 => "float8e5m2",
        DType::F8E5M2FNUZ => "float8e5m2fnuz",
        DType::F4E2M1 => "float4e2m1",
    }
}
