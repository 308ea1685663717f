//! `.npy` files to and from tensors.
//!
//! Reading checks the element type against what numpy writes (`<f4`, `<i8`,
//! `|b1`, ...), copies the elements once into the tensor's aligned storage,
//! and gives Fortran-ordered arrays their C order. Every failure is an
//! `error:` message naming the file.
//!
//! `float16` is numpy's `<f2`. The types numpy lacks (`bfloat16`, the 8-
//! and 4-bit floats and the 2- and 4-bit integers, which `ml_dtypes` adds
//! to numpy) are written as their raw codes, `|V2` or `|V1`, as
//! `ml_dtypes` arrays save (a 2- or 4-bit integer's code is its low bits);
//! such a file names no type, so [`read_as`] reads it only as the type
//! the reader expects.

use std::path::Path;

use ir::DType;
use tensor::Tensor;

fn npy_err(path: &Path, e: impl std::fmt::Display) -> String {
    format!("error: cannot read `{}` as .npy: {e}", path.display())
}

/// The regular file at `path`, open, with its length.
fn open(path: &Path) -> Result<(std::fs::File, u64), String> {
    tensor::file::open_regular(path)
        .map_err(|e| format!("error: cannot read `{}`: {e}", path.display()))
}

/// The shape a `.npy` file declares, from its header alone.
pub fn shape(path: &Path) -> Result<Vec<usize>, String> {
    let (file, _) = open(path)?;
    let file = npyz::NpyFile::new(std::io::BufReader::new(file)).map_err(|e| npy_err(path, e))?;
    dims(file.shape(), path)
}

fn dims(shape: &[u64], path: &Path) -> Result<Vec<usize>, String> {
    shape
        .iter()
        .map(|d| usize::try_from(*d).map_err(|_| npy_err(path, "dimension too large")))
        .collect()
}

/// The element type and shape a `.npy` file declares, from its header
/// alone.
pub fn header(path: &Path) -> Result<(DType, Vec<usize>), String> {
    let (file, _) = open(path)?;
    let file = npyz::NpyFile::new(std::io::BufReader::new(file)).map_err(|e| npy_err(path, e))?;
    let descr = match file.dtype() {
        npyz::DType::Plain(ts) => ts.to_string(),
        other => return Err(npy_err(path, format!("unsupported element type {other:?}"))),
    };
    let kind = descr.trim_start_matches(['<', '>', '|', '=']);
    let dtype = element_type(kind)
        .ok_or_else(|| npy_err(path, format!("unsupported element type `{kind}`")))?;
    Ok((dtype, dims(file.shape(), path)?))
}

/// The element type of numpy's type code (`f4`, `i8`, `b1`, ...).
fn element_type(kind: &str) -> Option<DType> {
    Some(match kind {
        "f4" => DType::F32,
        "f8" => DType::F64,
        "i1" => DType::I8,
        "i2" => DType::I16,
        "i4" => DType::I32,
        "i8" => DType::I64,
        "u1" => DType::U8,
        "u2" => DType::U16,
        "u4" => DType::U32,
        "u8" => DType::U64,
        "b1" => DType::Bool,
        "f2" => DType::F16,
        _ => return None,
    })
}

/// Reads a `.npy` file into a tensor of the element type the file declares.
pub fn read(path: &Path) -> Result<Tensor, String> {
    read_as(path, None)
}

/// Reads a `.npy` file as [`read`] does, but a file of raw codes (`|V1`,
/// `|V2`) as the narrow float `want` of that width.
pub fn read_as(path: &Path, want: Option<DType>) -> Result<Tensor, String> {
    let (file, len) = open(path)?;
    let mut reader = std::io::BufReader::new(file);
    let header = npyz::NpyHeader::from_reader(&mut reader).map_err(|e| npy_err(path, e))?;
    // The header's fields, read through a file whose data is not read.
    let file = npyz::NpyFile::with_header(header.clone(), std::io::empty());
    let shape = dims(file.shape(), path)?;
    let count = tensor::element_count(&shape).ok_or_else(|| npy_err(path, "too many elements"))?;
    // The elements are allocated before they are read: a header must not
    // declare more of them than the file can hold.
    let needed = u64::try_from(count)
        .ok()
        .and_then(|c| c.checked_mul(file.dtype().num_bytes().unwrap_or(1) as u64));
    if needed.is_none_or(|n| n > len) {
        return Err(npy_err(
            path,
            format!("its header declares shape {shape:?}, more elements than its {len} bytes hold"),
        ));
    }
    let fortran = file.order() == npyz::Order::Fortran;
    let descr = match file.dtype() {
        npyz::DType::Plain(ts) => ts.to_string(),
        other => return Err(npy_err(path, format!("unsupported element type {other:?}"))),
    };
    // Fortran-ordered elements are the C-ordered elements of the reversed
    // shape; reversing the dimensions of that tensor gives the array.
    let stored: Vec<usize> = if fortran {
        shape.iter().rev().copied().collect()
    } else {
        shape.clone()
    };
    // A file that ends early is truncated: say so, not only that a read
    // came up short.
    let short = |e: std::io::Error| {
        match e.kind() {
        std::io::ErrorKind::UnexpectedEof => npy_err(
            path,
            format!("the file ends before the {count} elements of shape {shape:?} its header declares (truncated?)"),
        ),
        _ => npy_err(path, e),
    }
    };
    if let Some(t) = coded(&descr, want).map_err(|m| npy_err(path, m))? {
        let mut bytes = vec![0u8; count * tensor::element_bytes(t)];
        std::io::Read::read_exact(&mut reader, &mut bytes).map_err(short)?;
        let t = if t.bits() == 16 {
            let codes: Vec<u16> = bytes
                .chunks_exact(2)
                .map(|c| u16::from_le_bytes([c[0], c[1]]))
                .collect();
            Tensor::from_slice(t, &stored, &codes)
        } else if t.is_int() {
            // A code's low bits, wrapped to the type, are the value.
            let values = bytes.iter().map(|&b| i64::from(b)).collect();
            Tensor::from_i64(t, &stored, values)
        } else {
            Tensor::from_slice(t, &stored, &bytes)
        };
        return fortran_order(t, &shape, fortran, path);
    }
    let file = npyz::NpyFile::with_header(header, reader);
    macro_rules! typed {
        ($ty:ty, $dtype:expr) => {{
            let v = file.into_vec::<$ty>().map_err(short)?;
            if v.len() != count {
                return Err(npy_err(
                    path,
                    format!("expected {count} elements, found {}", v.len()),
                ));
            }
            Tensor::from_slice($dtype, &stored, &v)
        }};
    }
    let kind = descr.trim_start_matches(['<', '>', '|', '=']);
    let dtype = element_type(kind)
        .ok_or_else(|| npy_err(path, format!("unsupported element type `{kind}`")))?;
    let t = match dtype {
        DType::F32 => typed!(f32, dtype),
        DType::F64 => typed!(f64, dtype),
        DType::I8 => typed!(i8, dtype),
        DType::I16 => typed!(i16, dtype),
        DType::I32 => typed!(i32, dtype),
        DType::I64 => typed!(i64, dtype),
        DType::U8 => typed!(u8, dtype),
        DType::U16 => typed!(u16, dtype),
        DType::U32 => typed!(u32, dtype),
        DType::U64 => typed!(u64, dtype),
        _ => {
            let v = file.into_vec::<bool>().map_err(short)?;
            if v.len() != count {
                return Err(npy_err(
                    path,
                    format!("expected {count} elements, found {}", v.len()),
                ));
            }
            Tensor::from_i64(DType::Bool, &stored, v.into_iter().map(i64::from).collect())
        }
    };
    fortran_order(t, &shape, fortran, path)
}

/// The array of `shape` whose elements `t` holds, in Fortran order if
/// `fortran` (then `t` has the reversed shape).
fn fortran_order(t: Tensor, shape: &[usize], fortran: bool, path: &Path) -> Result<Tensor, String> {
    if fortran && shape.len() > 1 {
        let reversed: Vec<usize> = (0..shape.len()).rev().collect();
        let view = t.permute(&reversed).map_err(|e| npy_err(path, e))?;
        return Ok(view.contiguous());
    }
    Ok(t)
}

/// The narrow float whose codes a file of element type `descr` holds,
/// if it holds codes: `float16` for `<f2`, and `want` for raw elements of
/// its width.
fn coded(descr: &str, want: Option<DType>) -> Result<Option<DType>, String> {
    let kind = descr.trim_start_matches(['<', '|', '=']);
    if descr.starts_with('>') && (kind == "f2" || kind.starts_with('V')) {
        return Err(format!("big-endian `{descr}` elements are not supported"));
    }
    let Some(width) = kind.strip_prefix('V') else {
        return Ok((kind == "f2").then_some(DType::F16));
    };
    match want {
        Some(t) if coded_type(t) && width == (t.bits() / 8).to_string() => Ok(Some(t)),
        Some(t) => Err(format!(
            "it holds raw {width}-byte elements (`{descr}`), which are not {t}"
        )),
        None => Err(format!(
            "it holds raw {width}-byte elements (`{descr}`) of no named type; only an input \
             declared as bfloat16, an 8- or 4-bit float or a 2- or 4-bit integer is read from raw codes"
        )),
    }
}

/// Writes a tensor as `.npy` in its element type (C order).
pub fn write(path: &Path, t: &Tensor) -> Result<(), String> {
    use npyz::WriterBuilder;
    let fail = |e: std::io::Error| format!("error: cannot write `{}`: {e}", path.display());
    let file = std::fs::File::create(path).map_err(fail)?;
    let shape: Vec<u64> = t.shape().iter().map(|d| *d as u64).collect();
    let w = std::io::BufWriter::new(file);
    let t = t.contiguous();
    macro_rules! put {
        ($ty:ty, $iter:expr) => {{
            let mut writer = npyz::WriteOptions::<$ty>::new()
                .default_dtype()
                .shape(&shape)
                .writer(w)
                .begin_nd()
                .map_err(fail)?;
            writer.extend($iter).map_err(fail)?;
            writer.finish().map_err(fail)?;
        }};
    }
    macro_rules! slice {
        ($ty:ty) => {
            t.as_slice::<$ty>()
                .expect("a contiguous tensor of its own element type")
                .iter()
                .copied()
        };
    }
    match t.dtype() {
        DType::F32 => put!(f32, slice!(f32)),
        DType::F64 => put!(f64, slice!(f64)),
        DType::I8 => put!(i8, slice!(i8)),
        DType::I16 => put!(i16, slice!(i16)),
        DType::I32 => put!(i32, slice!(i32)),
        DType::I64 => put!(i64, slice!(i64)),
        DType::U8 => put!(u8, slice!(u8)),
        DType::U16 => put!(u16, slice!(u16)),
        DType::U32 => put!(u32, slice!(u32)),
        DType::U64 => put!(u64, slice!(u64)),
        DType::Bool => put!(bool, slice!(u8).map(|x| x != 0)),
        narrow => return write_codes(path, &t, narrow),
    }
    Ok(())
}

/// Whether numpy stores `t` as raw codes (`ml_dtypes`' types).
fn coded_type(t: DType) -> bool {
    t.narrow().is_some() || t.is_sub_byte()
}

/// Writes a tensor of a narrow float as its codes: numpy's `<f2` for
/// `float16`, raw `|V2` or `|V1` for the types numpy lacks.
fn write_codes(path: &Path, t: &Tensor, dtype: DType) -> Result<(), String> {
    let fail = |e: std::io::Error| format!("error: cannot write `{}`: {e}", path.display());
    let descr = match dtype {
        DType::F16 => "<f2".to_string(),
        _ => format!("|V{}", dtype.bits() / 8),
    };
    let shape: Vec<String> = t.shape().iter().map(|d| format!("{d},")).collect();
    let mut dict = format!(
        "{{'descr': '{descr}', 'fortran_order': False, 'shape': ({}), }}",
        shape.join(" ")
    );
    // Format 1.0: magic, version, a 2-byte header length, and the header
    // padded with spaces so that the data starts at a multiple of 64.
    while (10 + dict.len() + 1) % 64 != 0 {
        dict.push(' ');
    }
    dict.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    bytes.extend_from_slice(dict.as_bytes());
    if dtype.bits() == 16 {
        for c in t
            .as_slice::<u16>()
            .expect("a contiguous tensor of its own element type")
        {
            bytes.extend_from_slice(&c.to_le_bytes());
        }
    } else if dtype.is_int() {
        // A 2- or 4-bit integer's code is its low bits.
        let width = if matches!(dtype, DType::U2 | DType::I2) {
            2
        } else {
            4
        };
        let mask = (1i64 << width) - 1;
        bytes.extend(t.to_i64_vec().iter().map(|&v| (v & mask) as u8));
    } else {
        bytes.extend_from_slice(
            t.as_slice::<u8>()
                .expect("a contiguous tensor of its own element type"),
        );
    }
    std::fs::write(path, bytes).map_err(fail)
}
