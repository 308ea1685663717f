//! Reading an `.onnx` file: the file memory-mapped and the protobuf
//! decoded over the map (`raw_data` fields stay slices of it, not copies),
//! the operator set checked, and constant tensors (initializers,
//! `Constant` nodes' values) converted once into their final aligned
//! tensors, from their typed fields, `raw_data` or an external data file
//! next to the model (mapped too). The pages of a converted `raw_data` or
//! external range are given back at once, so a model's bytes and its
//! tensors are not resident together.
//!
//! Guarantees: never panics on any bytes; every problem is an error that
//! names the file and what is wrong (a truncated file, an unknown opset, a
//! tensor whose data does not match its shape).

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ir::DType;
use prost::bytes::Bytes;
use prost::Message;
use tensor::{with_element, MappedFile, Tensor};

use crate::proto::{self, data_type, ModelProto, TensorProto};
use crate::Error;

/// The default-domain operator sets the importer reads.
pub const OPSETS: std::ops::RangeInclusive<i64> = crate::versions::OLDEST..=crate::versions::NEWEST;

/// A decoded model and where it came from (for external data).
#[derive(Debug)]
pub struct Loaded {
    pub model: ModelProto,
    /// The mapped files constant tensors are read from.
    pub files: Files,
    /// The default domain's operator set version.
    pub opset: i64,
}

/// The memory-mapped files of a model: the model itself, whose `raw_data`
/// slices the decoded protobuf holds, and the external data files its
/// tensors name (relative to its folder), each mapped once.
#[derive(Debug)]
pub struct Files {
    dir: PathBuf,
    model: Arc<MappedFile>,
    external: RefCell<HashMap<PathBuf, Arc<MappedFile>>>,
}

/// A mapped model as the owner of the `Bytes` the decoder slices.
struct Owner(Arc<MappedFile>);

impl AsRef<[u8]> for Owner {
    fn as_ref(&self) -> &[u8] {
        self.0.bytes()
    }
}

/// Maps and decodes the model at `path` and checks its operator sets.
pub fn load(path: &Path) -> Result<Loaded, Error> {
    let shown = path.display();
    let cannot = |e: std::io::Error| Error::invalid(format!("cannot read `{shown}`: {e}"));
    let map = Arc::new(MappedFile::open(path).map_err(cannot)?);
    let model = ModelProto::decode(Bytes::from_owner(Owner(map.clone()))).map_err(|e| {
        Error::invalid(format!(
            "`{shown}` is not a valid ONNX model (truncated or not protobuf): {e}"
        ))
    })?;
    if model.graph.is_none() {
        return Err(Error::invalid(format!("`{shown}` has no graph")));
    }
    let mut opset = None;
    for o in &model.opset_import {
        let domain = o.domain.as_deref().unwrap_or("");
        let version = o.version.unwrap_or(0);
        // Another domain's nodes are refused where they are met, by name
        // (`ops::unsupported`): a model that imports a domain but uses
        // only the default one's operators (an expanded function) reads.
        if matches!(domain, "" | "ai.onnx") {
            opset = Some(version);
        }
    }
    // A model of other domains' operators alone needs no default set.
    let default_nodes = model.graph.as_ref().is_some_and(|g| {
        g.node
            .iter()
            .any(|n| matches!(n.domain.as_deref().unwrap_or(""), "" | "ai.onnx"))
    });
    let opset = match opset {
        Some(v) => v,
        None if !default_nodes => crate::versions::NEWEST,
        None => {
            return Err(Error::invalid(format!(
                "`{shown}` imports no default operator set"
            )))
        }
    };
    if !OPSETS.contains(&opset) {
        return Err(Error::unsupported(format!(
            "`{shown}` uses default operator set version {opset}; tessera reads versions {} to {}",
            OPSETS.start(),
            OPSETS.end()
        )));
    }
    let files = Files {
        dir: path.parent().map_or_else(PathBuf::new, Path::to_path_buf),
        model: map,
        external: RefCell::default(),
    };
    Ok(Loaded {
        model,
        files,
        opset,
    })
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
        data_type::FLOAT16 => DType::F16,
        data_type::BFLOAT16 => DType::BF16,
        data_type::FLOAT8E4M3FN => DType::F8E4M3FN,
        data_type::FLOAT8E4M3FNUZ => DType::F8E4M3FNUZ,
        data_type::FLOAT8E5M2 => DType::F8E5M2,
        data_type::FLOAT8E5M2FNUZ => DType::F8E5M2FNUZ,
        data_type::FLOAT4E2M1 => DType::F4E2M1,
        data_type::UINT4 => DType::U4,
        data_type::INT4 => DType::I4,
        data_type::UINT2 => DType::U2,
        data_type::INT2 => DType::I2,
        _ => return None,
    })
}

/// An ONNX tensor as a tensor (one conversion into aligned storage);
/// `what` names it in errors.
pub fn tensor(t: &TensorProto, files: &Files, what: &str) -> Result<Tensor, String> {
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
    let (raw, map): (Option<&[u8]>, &MappedFile) = if t.data_location == Some(proto::EXTERNAL) {
        external = files.external(t, what)?;
        (Some(&external.0.bytes()[external.1.clone()]), &external.0)
    } else {
        (t.raw_data.as_deref(), &files.model)
    };
    let wrong = |got: usize| format!("{what} has {got} values, but its shape {shape:?} needs {n}");
    if let Some(raw) = raw {
        let t = if let Some(per) = packed(dt) {
            if raw.len() != n.div_ceil(per) {
                return Err(wrong(raw.len() * per));
            }
            unpacked(dt, &shape, raw.iter().map(|&b| i32::from(b)))
        } else {
            let width = tensor::element_bytes(dt);
            if raw.len() != n * width {
                return Err(wrong(raw.len() / width));
            }
            from_bytes(dt, &shape, raw)
        };
        // The bytes are converted: their pages can go (a later read of
        // them, should one come, maps them in again).
        map.release(raw);
        return Ok(t);
    }
    let t = match dt {
        DType::F32 if t.float_data.len() == n => Tensor::from_slice(dt, &shape, &t.float_data),
        DType::F64 if t.double_data.len() == n => Tensor::from_slice(dt, &shape, &t.double_data),
        DType::I64 if t.int64_data.len() == n => Tensor::from_i64(dt, &shape, t.int64_data.clone()),
        DType::U64 if t.uint64_data.len() == n => Tensor::from_slice(dt, &shape, &t.uint64_data),
        // The narrow floats' codes are stored in `int32_data`, the 4- and
        // 2-bit types' packed as in `raw_data`.
        _ if packed(dt).is_some_and(|per| t.int32_data.len() == n.div_ceil(per)) => {
            unpacked(dt, &shape, t.int32_data.iter().copied())
        }
        _ if dt.narrow().is_some() && packed(dt).is_none() && t.int32_data.len() == n => {
            let mut codes = Tensor::zeros(dt, &shape);
            with_element!(dt, T => {
                let out = codes.as_mut_slice::<T>().expect("a new tensor is contiguous");
                for (o, &c) in out.iter_mut().zip(&t.int32_data) {
                    *o = c as T;
                }
            });
            codes
        }
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

/// Little-endian elements of `dt`, converted into a new tensor (the bytes
/// may lie at any alignment).
fn from_bytes(dt: DType, shape: &[usize], raw: &[u8]) -> Tensor {
    let mut t = Tensor::zeros(dt, shape);
    with_element!(dt, T => {
        let out = t.as_mut_slice::<T>().expect("a new tensor is contiguous");
        let width = size_of::<T>();
        for (o, c) in out.iter_mut().zip(raw.chunks_exact(width)) {
            *o = bytemuck::pod_read_unaligned::<T>(c);
        }
    });
    if dt == DType::Bool {
        // A bool tensor holds 0 or 1; ONNX's bytes may be any nonzero.
        let bytes = t.as_mut_slice::<u8>().expect("bool is stored as u8");
        bytes.iter_mut().for_each(|b| *b = u8::from(*b != 0));
    }
    t
}

/// How many elements of `dt` ONNX packs into a byte: two of the 4-bit
/// types, four of the 2-bit ones; `None` for the others.
fn packed(dt: DType) -> Option<usize> {
    match dt {
        DType::F4E2M1 | DType::U4 | DType::I4 => Some(2),
        DType::U2 | DType::I2 => Some(4),
        _ => None,
    }
}

/// A tensor of 4- or 2-bit elements, packed into the bytes of `bytes`
/// from the low bits up: `float4e2m1`'s codes, and the integers' values
/// (their codes' low bits, sign-extended when signed).
fn unpacked(dt: DType, shape: &[usize], bytes: impl Iterator<Item = i32>) -> Tensor {
    let per = packed(dt).unwrap_or(1);
    let bits = 8 / per;
    let n = tensor::element_count(shape).unwrap_or(0);
    let codes: Vec<i64> = bytes
        .flat_map(|b| (0..per).map(move |k| i64::from((b >> (k * bits)) & ((1 << bits) - 1))))
        .take(n)
        .collect();
    if dt.is_int() {
        return Tensor::from_i64(dt, shape, codes);
    }
    let mut t = Tensor::zeros(dt, shape);
    let out = t
        .as_mut_slice::<u8>()
        .expect("4-bit codes are stored as bytes");
    for (o, c) in out.iter_mut().zip(codes) {
        *o = c as u8;
    }
    t
}

// `from_bytes` reads the elements in the machine's byte order, which is
// ONNX's (little-endian) on every target tessera builds for.
#[cfg(target_endian = "big")]
compile_error!("the ONNX loader reads little-endian data as native");

impl Files {
    /// Where the bytes of a tensor stored in an external file lie
    /// (`location`, `offset`, `length` as the ONNX external data format
    /// says, relative to the model): the mapped file and the byte range.
    fn external(
        &self,
        t: &TensorProto,
        what: &str,
    ) -> Result<(Arc<MappedFile>, std::ops::Range<usize>), String> {
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
        let path = self.dir.join(rel);
        let number = |key: &str| -> Result<Option<u64>, String> {
            get(key)
                .map(|v| {
                    v.parse()
                        .map_err(|_| format!("{what}: external `{key}` is `{v}`, not a number"))
                })
                .transpose()
        };
        let map = self.map_external(&path, &location, what)?;
        let size = map.bytes().len() as u64;
        let offset = number("offset")?.unwrap_or(0);
        let length = number("length")?.unwrap_or(size.saturating_sub(offset));
        if offset.saturating_add(length) > size {
            return Err(format!(
                "{what}: `{}` has {size} bytes, fewer than offset {offset} plus length {length}",
                path.display()
            ));
        }
        // Both fit the mapped size, which fits a `usize`.
        let (offset, length) = (offset as usize, length as usize);
        Ok((map, offset..offset + length))
    }

    /// The external file at `path`, mapped the first time a tensor names it:
    /// exporters put every weight in one file, which is mapped once and read
    /// tensor by tensor (and checked then, once). A link inside the model's
    /// folder may lead out of it, so the file's real path must lie inside
    /// the folder's real path (`location`, as the model names the file, is
    /// for the error).
    fn map_external(
        &self,
        path: &Path,
        location: &str,
        what: &str,
    ) -> Result<Arc<MappedFile>, String> {
        if let Some(m) = self.external.borrow().get(path) {
            return Ok(m.clone());
        }
        let cannot = |e: std::io::Error| format!("{what}: cannot read `{}`: {e}", path.display());
        let real = std::fs::canonicalize(path).map_err(cannot)?;
        let dir = match self.dir.as_os_str().is_empty() {
            true => Path::new("."),
            false => self.dir.as_path(),
        };
        let folder = std::fs::canonicalize(dir).map_err(cannot)?;
        if !real.starts_with(&folder) {
            return Err(format!(
                "{what} names the external file `{location}`, which leads to `{}`, outside the model's folder",
                real.display()
            ));
        }
        let m = Arc::new(MappedFile::open(path).map_err(cannot)?);
        self.external
            .borrow_mut()
            .insert(path.to_path_buf(), m.clone());
        Ok(m)
    }
}
