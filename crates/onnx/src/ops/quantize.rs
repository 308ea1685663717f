//! Quantization as comprehensions in the model def: `DequantizeLinear`
//! (`(x - zero_point) * scale`), `QuantizeLinear` (`x / scale` rounded
//! half to even, plus the zero point, saturated to the output type),
//! `DynamicQuantizeLinear` (uint8, its scale and zero point from the
//! input's range), `MatMulInteger` and `QLinearMatMul`, `ConvInteger`
//! and `QLinearConv` (the products or convolutions of the operands less
//! their zero points, accumulated in int32; the `QLinear` forms
//! requantized by the product of the operands' scales over the output's).
//!
//! A scale or zero point is per tensor (one element), per axis (`[D]`
//! along `axis`) or per block (the input's rank, `block_size` elements of
//! `axis` sharing one). The quantized types are the 8-, 16- and 32-bit
//! integers tessera has; float8, int4 and int2 are refused by type.

use ir::DType;

use super::point::{point, read};
use crate::build::{Node, Value, Var};
use crate::import::Importer;

/// The one element of `v`, read at zeros.
fn first(v: &Var) -> String {
    format!("{}({})", v.name, vec!["0"; v.shape.len()].join(", "))
}

/// `v`, `what` of `n`, which must have one element, read as [`first`].
fn one(n: &Node, v: &Var, what: &str) -> Result<String, String> {
    if v.shape.iter().product::<usize>() != 1 {
        return Err(n.error(format!(
            "{what} of shape {:?} (one element is supported)",
            v.shape
        )));
    }
    Ok(first(v))
}

/// Sets `n`'s output of `shape`: `sum` (a float64 expression at the
/// point) times `factor`, requantized to the type and zero point of `zy`.
fn requantized_output(
    im: &mut Importer,
    n: &Node,
    shape: Vec<usize>,
    sum: &str,
    factor: &str,
    zy: &Var,
) -> Result<(), String> {
    let v = format!("({sum} * {factor})");
    let rhs = requantized(n, &v, &first(zy), zy.dtype, true)?;
    let y = im.b.compute("=", &rhs, &[], zy.dtype, shape);
    im.set(n, 0, Value::Var(y));
    Ok(())
}

/// How `p`, a scale or zero point of `x`, is read at `x`'s point.
fn param(n: &Node, what: &str, p: &Var, x: &Var, a: usize, block: usize) -> Result<String, String> {
    let count: usize = p.shape.iter().product();
    if count == 1 {
        return Ok(first(p));
    }
    if a >= x.shape.len() {
        return Err(n.error(format!(
            "axis {a} is out of range for rank {}",
            x.shape.len()
        )));
    }
    if p.shape.len() == 1 && block == 0 && p.shape[0] == x.shape[a] {
        return Ok(format!("{}(_i{a})", p.name));
    }
    if block > 0 && p.shape.len() == x.shape.len() && p.shape[a] == x.shape[a].div_ceil(block) {
        let mut index = point(x.shape.len());
        index[a] = format!("_i{a} / {block}");
        return Ok(read(p, &index));
    }
    Err(n.error(format!(
        "{what} of shape {:?} for an input {:?} along axis {a} (one element, one per element of the axis, or one per block is needed)",
        p.shape, x.shape
    )))
}

/// The optional zero point (input `k`) of `x`'s quantization, read at the
/// point; "0" when absent.
fn zero_point(
    im: &mut Importer,
    n: &Node,
    k: usize,
    x: &Var,
    a: usize,
    block: usize,
) -> Result<(String, Option<DType>), String> {
    match n.input(k) {
        Some(_) => {
            let z = im.var(n, k)?;
            Ok((param(n, "the zero point", &z, x, a, block)?, Some(z.dtype)))
        }
        None => Ok(("0".to_string(), None)),
    }
}

/// The quantization axis and block size of `n`. The axis matters only
/// for a scale per axis or per block ([`param`] checks it then), so an
/// axis past a per-tensor input's rank (the default 1 of a vector) is no
/// error.
fn axis_block(n: &Node, x: &Var) -> Result<(usize, usize), String> {
    let r = x.shape.len() as i64;
    let given = n.int("axis")?.unwrap_or(1);
    let a = if given < 0 { given + r } else { given };
    let block = usize::try_from(n.int("block_size")?.unwrap_or(0))
        .map_err(|_| n.error("a negative block_size"))?;
    Ok((usize::try_from(a).unwrap_or(usize::MAX), block))
}

/// The range of an integer quantized type, for saturation.
fn range(n: &Node, t: DType) -> Result<(i64, i64), String> {
    Ok(match t {
        DType::U2 => (0, 3),
        DType::I2 => (-2, 1),
        DType::U4 => (0, 15),
        DType::I4 => (-8, 7),
        DType::U8 => (0, 255),
        DType::I8 => (-128, 127),
        DType::U16 => (0, 65_535),
        DType::I16 => (-32_768, 32_767),
        DType::I32 => (i64::from(i32::MIN), i64::from(i32::MAX)),
        other => return Err(n.error(format!("quantizing to {other} is not supported"))),
    })
}

/// `v` (a float expression) rounded half to even, plus `zero`,
/// saturated to `t` and converted to it; for a narrow float `t`, `v` plus
/// `zero` converted to it, clamped to its largest finite value first when
/// `saturate` (as `Cast` saturates).
fn requantized(n: &Node, v: &str, zero: &str, t: DType, saturate: bool) -> Result<String, String> {
    if let Some(format) = t.narrow() {
        let sum = format!("{v} + float64({zero})");
        return Ok(if saturate {
            let m = format.max();
            format!("{}(max(-{m:?}, min({m:?}, {sum})))", t.name())
        } else {
            format!("{}({sum})", t.name())
        });
    }
    let (lo, hi) = range(n, t)?;
    let rounded = format!("({v} - floor({v}) == 0.5 ? 2 * round({v} / 2) : round({v}))");
    Ok(format!(
        "{}(max({lo}.0, min({hi}.0, {rounded} + float64({zero}))))",
        t.name()
    ))
}

pub fn dequantize(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let x = im.var(n, 0)?;
    let scale = im.var(n, 1)?;
    let (a, block) = axis_block(n, &x)?;
    if !(x.dtype.is_int() || x.dtype.narrow().is_some()) || !scale.dtype.is_float() {
        return Err(n.error(format!(
            "dequantizing {} by a {} scale is not supported",
            x.dtype, scale.dtype
        )));
    }
    let out = match n.int("output_dtype")? {
        Some(0) | None => scale.dtype,
        Some(code) => crate::load::dtype(code as i32)
            .filter(|t| t.is_float())
            .ok_or_else(|| n.error(format!("output_dtype {code} is not supported")))?,
    };
    let s = param(n, "the scale", &scale, &x, a, block)?;
    let (z, _) = zero_point(im, n, 2, &x, a, block)?;
    let here = read(&x, &point(x.shape.len()));
    let rhs = format!(
        "{}((float64({here}) - float64({z})) * float64({s}))",
        out.name()
    );
    let y = im.b.compute("=", &rhs, &[], out, x.shape.clone());
    im.set(n, 0, Value::Var(y));
    Ok(())
}

pub fn quantize(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let x = im.var(n, 0)?;
    let scale = im.var(n, 1)?;
    let (a, block) = axis_block(n, &x)?;
    if !x.dtype.is_float() && x.dtype != DType::I32 {
        return Err(n.error(format!("quantizing {} is not supported", x.dtype)));
    }
    let saturate = n.int("saturate")?.unwrap_or(1) != 0;
    if n.int("precision")?.is_some_and(|p| p != 0) {
        return Err(n.error("precision is not supported"));
    }
    let s = param(n, "the scale", &scale, &x, a, block)?;
    let (z, zt) = zero_point(im, n, 2, &x, a, block)?;
    let out = match (n.int("output_dtype")?, zt) {
        (Some(code), _) if code != 0 => crate::load::dtype(code as i32)
            .ok_or_else(|| n.error(format!("output_dtype {code} is not supported")))?,
        (_, Some(t)) => t,
        _ => DType::U8,
    };
    // The quotient in the input's float type, as the ONNX reference
    // divides (an int32 input in float64).
    let here = read(&x, &point(x.shape.len()));
    let t = if x.dtype.is_float() {
        x.dtype
    } else {
        DType::F64
    };
    let v = format!("({}({here}) / {}({s}))", t.name(), t.name());
    let rhs = requantized(n, &v, &z, out, saturate)?;
    let y = im.b.compute("=", &rhs, &[], out, x.shape.clone());
    im.set(n, 0, Value::Var(y));
    Ok(())
}

/// `DynamicQuantizeLinear`: uint8 `y`, with the scale `(max - min) / 255`
/// of the range of `x` and 0, and the zero point that maps 0 exactly.
pub fn dynamic_quantize(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 3)?;
    let x = im.var(n, 0)?;
    if x.dtype != DType::F32 {
        return Err(n.error(format!("quantizing {} is not supported", x.dtype)));
    }
    let r = x.shape.len();
    let all: Vec<String> = (0..r).map(|k| format!("_s{k}")).collect();
    let ranges: Vec<String> = (0..r)
        .map(|k| format!("_s{k} in 0:{}", x.shape[k]))
        .collect();
    let element = read(&x, &all);
    let hi = im.b.compute(
        "max=!",
        &format!("max({element}, 0)"),
        &ranges,
        DType::F32,
        vec![],
    );
    let lo = im.b.compute(
        "min=!",
        &format!("min({element}, 0)"),
        &ranges,
        DType::F32,
        vec![],
    );
    let (hi, lo) = (format!("{}()", hi.name), format!("{}()", lo.name));
    let scale = im.b.compute(
        "=",
        &format!("({hi} - {lo}) / 255"),
        &[],
        DType::F32,
        vec![],
    );
    let s = format!("{}()", scale.name);
    let zero = requantized(n, &format!("(0 - {lo} / {s})"), "0", DType::U8, true)?;
    let zero = im.b.compute("=", &zero, &[], DType::U8, vec![]);
    // As the ONNX function does, in float32.
    let here = read(&x, &point(r));
    let v = format!("({here} / {s})");
    let rhs = requantized(n, &v, &format!("{}()", zero.name), DType::U8, true)?;
    let y = im.b.compute("=", &rhs, &[], DType::U8, x.shape.clone());
    im.set(n, 0, Value::Var(y));
    im.set(n, 1, Value::Var(scale));
    im.set(n, 2, Value::Var(zero));
    Ok(())
}

/// The int32 product of `a` and `b` (matrices, or batches of the same
/// batch shape) less their zero points: a per-tensor one, or one per row
/// of `a` / per column of `b`.
fn integer_product(
    im: &mut Importer,
    n: &Node,
    a: &Var,
    b: &Var,
    zero: [Option<Var>; 2],
) -> Result<Var, String> {
    let (ra, rb) = (a.shape.len(), b.shape.len());
    let fits = ra >= 2
        && ra == rb
        && a.shape[..ra - 2] == b.shape[..rb - 2]
        && a.shape[ra - 1] == b.shape[rb - 2];
    if !fits || !a.dtype.is_int() || !b.dtype.is_int() {
        return Err(n.error(format!(
            "{} {:?} and {} {:?} do not multiply (integer matrices or batches of one batch shape are needed)",
            a.dtype, a.shape, b.dtype, b.shape
        )));
    }
    let r = ra;
    let (m, k, nn) = (a.shape[r - 2], a.shape[r - 1], b.shape[r - 1]);
    let batch: Vec<String> = point(r - 2);
    let zero_read = |z: &Option<Var>, along: &str, size: usize| -> Result<String, String> {
        match z {
            None => Ok("0".to_string()),
            Some(z) if z.shape.iter().product::<usize>() == 1 => Ok(first(z)),
            Some(z) if z.shape == [size] => Ok(format!("{}({along})", z.name)),
            Some(z) => Err(n.error(format!("a zero point of shape {:?}", z.shape))),
        }
    };
    let za = zero_read(&zero[0], &format!("_i{}", r - 2), m)?;
    let zb = zero_read(&zero[1], &format!("_i{}", r - 1), nn)?;
    let mut ia = batch.clone();
    ia.extend([format!("_i{}", r - 2), "_k".to_string()]);
    let mut ib = batch.clone();
    ib.extend(["_k".to_string(), format!("_i{}", r - 1)]);
    let rhs = format!(
        "(int32({}) - int32({za})) * (int32({}) - int32({zb}))",
        read(a, &ia),
        read(b, &ib)
    );
    let mut shape = a.shape[..r - 2].to_vec();
    shape.extend([m, nn]);
    Ok(im
        .b
        .compute("+=!", &rhs, &[format!("_k in 0:{k}")], DType::I32, shape))
}

pub fn matmul_integer(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let (a, b) = (im.var(n, 0)?, im.var(n, 1)?);
    let zero = [im.optional_var(n, 2)?, im.optional_var(n, 3)?];
    let y = integer_product(im, n, &a, &b, zero)?;
    im.set(n, 0, Value::Var(y));
    Ok(())
}

pub fn qlinear_matmul(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let (a, sa, za) = (im.var(n, 0)?, im.var(n, 1)?, im.var(n, 2)?);
    let (b, sb, zb) = (im.var(n, 3)?, im.var(n, 4)?, im.var(n, 5)?);
    let (sy, zy) = (im.var(n, 6)?, im.var(n, 7)?);
    let factor = format!(
        "float64({}) * float64({}) / float64({})",
        one(n, &sa, "a_scale")?,
        one(n, &sb, "b_scale")?,
        one(n, &sy, "y_scale")?
    );
    let product = integer_product(im, n, &a, &b, [Some(za), Some(zb)])?;
    let here = read(&product, &point(product.shape.len()));
    let sum = format!("float64({here})");
    requantized_output(im, n, product.shape, &sum, &factor, &zy)
}

/// The int32 convolution of `x` by `w` (inputs 0 and 1 of convolution
/// `n`, integers) less their zero points `zero`: one for the tensor, or for
/// the weight one per output channel. The operands less their zero points
/// are convolved, so that the padding reads as zero, as in the reference.
fn integer_conv(
    im: &mut Importer,
    n: &Node,
    x: &Var,
    w: &Var,
    zero: [Option<Var>; 2],
) -> Result<Var, String> {
    if !x.dtype.is_int() || !w.dtype.is_int() {
        return Err(n.error(format!(
            "a convolution of {} by {} (integers are needed)",
            x.dtype, w.dtype
        )));
    }
    let (group, win) = super::conv::geometry(n, &x.shape, &w.shape)?;
    let [zx, zw] = zero;
    let mut less = |v: &Var, z: Option<Var>, what: &str| -> Result<Var, String> {
        let z = match &z {
            Some(z) => param(n, what, z, v, 0, 0)?,
            None => "0".to_string(),
        };
        let here = read(v, &point(v.shape.len()));
        let rhs = format!("int32({here}) - int32({z})");
        Ok(im.b.compute("=", &rhs, &[], DType::I32, v.shape.clone()))
    };
    if zx
        .as_ref()
        .is_some_and(|z| z.shape.iter().product::<usize>() != 1)
    {
        return Err(n.error(format!(
            "the input's zero point of shape {:?} (one element is needed)",
            zx.as_ref().map(|z| z.shape.clone()).unwrap_or_default()
        )));
    }
    let x32 = less(x, zx, "the input's zero point")?;
    let w32 = less(w, zw, "the weight's zero point")?;
    Ok(super::conv::direct(
        im,
        &[&x32, &w32],
        "_int",
        &win,
        group,
        DType::I32,
    ))
}

pub fn conv_integer(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let (x, w) = (im.var(n, 0)?, im.var(n, 1)?);
    let zero = [im.optional_var(n, 2)?, im.optional_var(n, 3)?];
    let y = integer_conv(im, n, &x, &w, zero)?;
    im.set(n, 0, Value::Var(y));
    Ok(())
}

/// `QLinearConv`: the int32 convolution plus the int32 bias, scaled by
/// `x_scale * w_scale / y_scale` (the scales' product and quotient in
/// `float32`, as the reference computes them; the weight's scale per
/// tensor or per output channel), requantized to `y_zero_point`'s type.
pub fn qlinear_conv(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let (x, sx, zx) = (im.var(n, 0)?, im.var(n, 1)?, im.var(n, 2)?);
    let (w, sw, zw) = (im.var(n, 3)?, im.var(n, 4)?, im.var(n, 5)?);
    let (sy, zy) = (im.var(n, 6)?, im.var(n, 7)?);
    let bias = im.optional_var(n, 8)?;
    let product = integer_conv(im, n, &x, &w, [Some(zx), Some(zw)])?;
    let at = point(product.shape.len());
    let here = read(&product, &at);
    let f = product.shape[1];
    let mut sum = format!("float64({here})");
    if let Some(b) = &bias {
        if b.shape != [f] || !b.dtype.is_int() {
            return Err(n.error(format!(
                "bias {} {:?} (int32 [{f}] is needed)",
                b.dtype, b.shape
            )));
        }
        sum = format!("float64({here} + int32({}(_i1)))", b.name);
    }
    let ws = if sw.shape == [f] {
        format!("{}(_i1)", sw.name)
    } else {
        one(n, &sw, "w_scale (or one per output channel)")?
    };
    let factor = format!(
        "float64({} * {ws} / {})",
        one(n, &sx, "x_scale")?,
        one(n, &sy, "y_scale")?
    );
    requantized_output(im, n, product.shape, &sum, &factor, &zy)
}
