//! `.npy` files to and from interpreter tensors.
//!
//! Reading checks the element type against what numpy writes (`<f4`, `<i8`,
//! `|b1`, ...) and reorders Fortran-ordered arrays to C order. Every failure
//! is an `error:` message naming the file.

use std::path::Path;

use interp::{Data, Tensor};
use ir::DType;

fn npy_err(path: &Path, e: impl std::fmt::Display) -> String {
    format!("error: cannot read `{}` as .npy: {e}", path.display())
}

/// The shape a `.npy` file declares, from its header alone.
pub fn shape(path: &Path) -> Result<Vec<usize>, String> {
    let file = std::fs::File::open(path)
        .map_err(|e| format!("error: cannot read `{}`: {e}", path.display()))?;
    let file = npyz::NpyFile::new(std::io::BufReader::new(file)).map_err(|e| npy_err(path, e))?;
    file.shape()
        .iter()
        .map(|d| usize::try_from(*d).map_err(|_| npy_err(path, "dimension too large")))
        .collect()
}

/// Reads a `.npy` file into a tensor of the element type the file declares.
pub fn read(path: &Path) -> Result<Tensor, String> {
    let bytes =
        std::fs::read(path).map_err(|e| format!("error: cannot read `{}`: {e}", path.display()))?;
    let file = npyz::NpyFile::new(&bytes[..]).map_err(|e| npy_err(path, e))?;
    let shape: Vec<usize> = file
        .shape()
        .iter()
        .map(|d| usize::try_from(*d).map_err(|_| npy_err(path, "dimension too large")))
        .collect::<Result<_, _>>()?;
    let count = shape
        .iter()
        .try_fold(1usize, |a, d| a.checked_mul(*d))
        .ok_or_else(|| npy_err(path, "too many elements"))?;
    let fortran = file.order() == npyz::Order::Fortran;
    let descr = match file.dtype() {
        npyz::DType::Plain(ts) => ts.to_string(),
        other => return Err(npy_err(path, format!("unsupported element type {other:?}"))),
    };
    let kind = descr.trim_start_matches(['<', '>', '|', '=']).to_string();
    let (dtype, data) = match kind.as_str() {
        "f4" => (
            DType::F32,
            Data::F(
                file.into_vec::<f32>()
                    .map_err(|e| npy_err(path, e))?
                    .into_iter()
                    .map(f64::from)
                    .collect(),
            ),
        ),
        "f8" => (
            DType::F64,
            Data::F(file.into_vec::<f64>().map_err(|e| npy_err(path, e))?),
        ),
        "i1" => (DType::I8, ints(file.into_vec::<i8>(), path)?),
        "i2" => (DType::I16, ints(file.into_vec::<i16>(), path)?),
        "i4" => (DType::I32, ints(file.into_vec::<i32>(), path)?),
        "i8" => (DType::I64, ints(file.into_vec::<i64>(), path)?),
        "u1" => (DType::U8, ints(file.into_vec::<u8>(), path)?),
        "u2" => (DType::U16, ints(file.into_vec::<u16>(), path)?),
        "u4" => (DType::U32, ints(file.into_vec::<u32>(), path)?),
        "u8" => (
            DType::U64,
            Data::I(
                file.into_vec::<u64>()
                    .map_err(|e| npy_err(path, e))?
                    .into_iter()
                    .map(|v| v as i64)
                    .collect(),
            ),
        ),
        "b1" => (
            DType::Bool,
            Data::I(
                file.into_vec::<u8>()
                    .map_err(|e| npy_err(path, e))?
                    .into_iter()
                    .map(|v| i64::from(v != 0))
                    .collect(),
            ),
        ),
        other => return Err(npy_err(path, format!("unsupported element type `{other}`"))),
    };
    let len = match &data {
        Data::F(v) => v.len(),
        Data::I(v) => v.len(),
    };
    if len != count {
        return Err(npy_err(
            path,
            format!("expected {count} elements, found {len}"),
        ));
    }
    let mut t = Tensor { dtype, shape, data };
    if fortran && t.shape.len() > 1 {
        t = to_c_order(&t);
    }
    Ok(t)
}

fn ints<T: Into<i64>>(v: std::io::Result<Vec<T>>, path: &Path) -> Result<Data, String> {
    Ok(Data::I(
        v.map_err(|e| npy_err(path, e))?
            .into_iter()
            .map(Into::into)
            .collect(),
    ))
}

/// Reorders a tensor whose data is in Fortran (column-major) order.
fn to_c_order(t: &Tensor) -> Tensor {
    let n = t.shape.len();
    let count: usize = t.shape.iter().product();
    let mut order = vec![0usize; count];
    let mut idx = vec![0usize; n];
    for slot in order.iter_mut() {
        // idx is the C-order multi-index of this slot; find its Fortran offset.
        let mut off = 0;
        let mut stride = 1;
        for (i, dim) in idx.iter().zip(&t.shape) {
            off += i * stride;
            stride *= dim;
        }
        *slot = off;
        for d in (0..n).rev() {
            idx[d] += 1;
            if idx[d] < t.shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    let data = match &t.data {
        Data::F(v) => Data::F(order.iter().map(|&o| v[o]).collect()),
        Data::I(v) => Data::I(order.iter().map(|&o| v[o]).collect()),
    };
    Tensor {
        dtype: t.dtype,
        shape: t.shape.clone(),
        data,
    }
}

/// Writes a tensor as `.npy` in its element type (C order).
pub fn write(path: &Path, t: &Tensor) -> Result<(), String> {
    use npyz::WriterBuilder;
    let fail = |e: std::io::Error| format!("error: cannot write `{}`: {e}", path.display());
    let file = std::fs::File::create(path).map_err(fail)?;
    let shape: Vec<u64> = t.shape.iter().map(|d| *d as u64).collect();
    let w = std::io::BufWriter::new(file);
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
    match (&t.data, t.dtype) {
        (Data::F(v), DType::F32) => put!(f32, v.iter().map(|x| *x as f32)),
        (Data::F(v), _) => put!(f64, v.iter().copied()),
        (Data::I(v), DType::I8) => put!(i8, v.iter().map(|x| *x as i8)),
        (Data::I(v), DType::I16) => put!(i16, v.iter().map(|x| *x as i16)),
        (Data::I(v), DType::I32) => put!(i32, v.iter().map(|x| *x as i32)),
        (Data::I(v), DType::U8) => put!(u8, v.iter().map(|x| *x as u8)),
        (Data::I(v), DType::U16) => put!(u16, v.iter().map(|x| *x as u16)),
        (Data::I(v), DType::U32) => put!(u32, v.iter().map(|x| *x as u32)),
        (Data::I(v), DType::U64) => put!(u64, v.iter().map(|x| *x as u64)),
        (Data::I(v), DType::Bool) => put!(bool, v.iter().map(|x| *x != 0)),
        (Data::I(v), _) => put!(i64, v.iter().copied()),
    }
    Ok(())
}
