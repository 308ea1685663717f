//! Reading an `.onnx` file: the protobuf decoded, the operator set checked,
//! constant tensors (initializers, `Constant` nodes' values) converted to
//! interpreter tensors, from their typed fields, `raw_data` or an external
//! data file next to the model.
//!
//! Guarantees: never panics on any bytes; every problem is an error that
//! names the file and what is wrong (a truncated file, an unknown opset, a
//! tensor whose data does not match its shape).

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use interp::Tensor;
use ir::DType;
use prost::Message;

use crate::proto::{self, data_type, ModelProto, TensorProto};

/// The default-domain operator sets the importer reads.
pub const OPSETS: std::ops::RangeInclusive<i64> = 11..=21;

/// A decoded model and where it came from (for external data).
#[derive(Debug)]
pub struct Loaded {
    pub model: ModelProto,
    /// The folder external data paths are relative to.
    pub dir: PathBuf,
    /// The default domain's operator set version.
    pub opset: i64,
}

/// Reads and decodes the model at `path` and checks its operator sets.
pub fn load(path: &Path) -> Result<Loaded, String> {
    let shown = path.display();
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read `{shown}`: {e}"))?;
    let model = ModelProto::decode(bytes.as_slice()).map_err(|e| {
        format!("`{shown}` is not a valid ONNX model (truncated or not protobuf): {e}")
    })?;
    if model.graph.is_none() {
        return Err(format!("`{shown}` has no graph"));
    }
    let mut opset = None;
    for o in &model.opset_import {
        let domain = o.domain.as_deref().unwrap_or("");
        let version = o.version.unwrap_or(0);
        match domain {
            "" | "ai.onnx" => opset = Some(version),
            other => {
                return Err(format!(
                    "`{shown}` imports the operator set `{other}` (version {version}), which tessera does not support"
                ))
            }
        }
    }
    let opset = opset.ok_or_else(|| format!("`{shown}` imports no default operator set"))?;
    if !OPSETS.contains(&opset) {
        return Err(format!(
            "`{shown}` uses default operator set version {opset}; tessera reads versions {} to {}",
            OPSETS.start(),
            OPSETS.end()
        ));
    }
    let dir = path.parent().map_or_else(PathBuf::new, Path::to_path_buf);
    Ok(Loaded { model, dir, opset })
}

/// The element type of an ONNX data type code.
pub fn dtype(code: i32) -> Option<DType> {
    Some(match code {
        data_type::FLOAT => DType::F32,
        data_type::DOUBLE => DType::F64,
        data_type::INT64 => DType::I64,
        data_type::INT32 => DType::I32,
        data_type::INT16 => DType::I16,
        data_type::INT8 => DType::I8,
        data_type::UINT8 => DType::U8,
        data_type::UINT16 => DType::U16,
        data_type::UINT32 => DType::U32,
        data_type::UINT64 => DType::U64,
        data_type::BOOL => DType::Bool,
        _ => return None,
    })
}

/// An ONNX tensor as an interpreter tensor; `what` names it in errors.
pub fn tensor(t: &TensorProto, dir: &Path, what: &str) -> Result<Tensor, String> {
    let code = t.data_type.unwrap_or(0);
    let dt = dtype(code).ok_or_else(|| {
        format!("{what} has element type code {code}, which tessera does not support")
    })?;
    let mut shape = Vec::with_capacity(t.dims.len());
    for &d in &t.dims {
        shape.push(usize::try_from(d).map_err(|_| format!("{what} has a negative dimension {d}"))?);
    }
    let n = shape
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .filter(|&n| n <= 1 << 28)
        .ok_or_else(|| format!("{what} is too large: {shape:?}"))?;
    let external;
    let raw: Option<&[u8]> = if t.data_location == Some(proto::EXTERNAL) {
        external = read_external(t, dir, what)?;
        Some(&external)
    } else {
        t.raw_data.as_deref()
    };
    let wrong = |got: usize| format!("{what} has {got} values, but its shape {shape:?} needs {n}");
    if let Some(raw) = raw {
        let width = (dt.bits() as usize).div_ceil(8).max(1);
        if raw.len() != n * width {
            return Err(wrong(raw.len() / width));
        }
        return Ok(from_bytes(dt, &shape, raw, width));
    }
    let t = match dt {
        DType::F32 if t.float_data.len() == n => Tensor::from_f64(
            dt,
            &shape,
            t.float_data.iter().map(|&x| f64::from(x)).collect(),
        ),
        DType::F64 if t.double_data.len() == n => {
            Tensor::from_f64(dt, &shape, t.double_data.clone())
        }
        DType::I64 if t.int64_data.len() == n => Tensor::from_i64(dt, &shape, t.int64_data.clone()),
        DType::U64 if t.uint64_data.len() == n => Tensor::from_i64(
            dt,
            &shape,
            t.uint64_data.iter().map(|&x| x as i64).collect(),
        ),
        // Narrow integers and bool are stored in `int32_data`.
        _ if !dt.is_float() && dt != DType::I64 && dt != DType::U64 && t.int32_data.len() == n => {
            Tensor::from_i64(
                dt,
                &shape,
                t.int32_data.iter().map(|&x| i64::from(x)).collect(),
            )
        }
        _ => {
            let got = [
                t.float_data.len(),
                t.double_data.len(),
                t.int64_data.len(),
                t.uint64_data.len(),
                t.int32_data.len(),
            ]
            .into_iter()
            .max()
            .unwrap_or(0);
            return Err(wrong(got));
        }
    };
    Ok(t)
}

/// Little-endian values of `width` bytes each.
fn from_bytes(dt: DType, shape: &[usize], raw: &[u8], width: usize) -> Tensor {
    let chunks = raw.chunks_exact(width);
    let word = |c: &[u8]| {
        let mut b = [0u8; 8];
        b[..width].copy_from_slice(c);
        u64::from_le_bytes(b)
    };
    match dt {
        DType::F32 => Tensor::from_f64(
            dt,
            shape,
            chunks
                .map(|c| f64::from(f32::from_bits(word(c) as u32)))
                .collect(),
        ),
        DType::F64 => {
            Tensor::from_f64(dt, shape, chunks.map(|c| f64::from_bits(word(c))).collect())
        }
        _ => {
            // Sign-extend signed types from their width.
            let shift = 64 - 8 * width as u32;
            let signed = dt.is_signed();
            Tensor::from_i64(
                dt,
                shape,
                chunks
                    .map(|c| {
                        let w = word(c);
                        if signed {
                            ((w << shift) as i64) >> shift
                        } else {
                            w as i64
                        }
                    })
                    .collect(),
            )
        }
    }
}

/// The bytes of a tensor stored in an external file (`location`, `offset`,
/// `length` as the ONNX external data format says), relative to the model.
fn read_external(t: &TensorProto, dir: &Path, what: &str) -> Result<Vec<u8>, String> {
    let get = |key: &str| {
        t.external_data
            .iter()
            .find(|e| e.key.as_deref() == Some(key))
            .and_then(|e| e.value.clone())
    };
    let location =
        get("location").ok_or_else(|| format!("{what} is external but names no `location`"))?;
    let rel = Path::new(&location);
    if rel.is_absolute()
        || rel
            .components()
            .any(|c| c == std::path::Component::ParentDir)
    {
        return Err(format!(
            "{what} names the external file `{location}`, outside the model's folder"
        ));
    }
    let path = dir.join(rel);
    let cannot = |e: std::io::Error| format!("{what}: cannot read `{}`: {e}", path.display());
    let number = |key: &str| -> Result<Option<u64>, String> {
        get(key)
            .map(|v| {
                v.parse()
                    .map_err(|_| format!("{what}: external `{key}` is `{v}`, not a number"))
            })
            .transpose()
    };
    // Only the tensor's own bytes are read: exporters put every weight in
    // one file, which reading whole per tensor would load once per weight.
    let mut file = std::fs::File::open(&path).map_err(cannot)?;
    let size = file.metadata().map_err(cannot)?.len();
    let offset = number("offset")?.unwrap_or(0);
    let length = number("length")?.unwrap_or(size.saturating_sub(offset));
    if offset.saturating_add(length) > size {
        return Err(format!(
            "{what}: `{}` has {size} bytes, fewer than offset {offset} plus length {length}",
            path.display()
        ));
    }
    let length = usize::try_from(length).map_err(|_| format!("{what}: length {length}"))?;
    let mut bytes = vec![0; length];
    file.seek(SeekFrom::Start(offset)).map_err(cannot)?;
    file.read_exact(&mut bytes).map_err(cannot)?;
    Ok(bytes)
}
