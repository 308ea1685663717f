//! `DFT`: the discrete Fourier transform along one axis, forward or
//! inverse, full or one-sided (`rfft`, and `irfft` from the one-sided half
//! of a Hermitian spectrum), of real (last dimension 1) or complex (last
//! dimension 2, real and imaginary parts) signals.
//!
//! Each output part is a sum over the signal's points of the real and
//! imaginary inputs times tables of `cos` and `sin` computed at import in
//! `float64` (with the inverse's `1 / N`, and `irfft`'s doubling of the
//! terms whose conjugates the one-sided half leaves out), accumulated in
//! `float64` and converted once to the input's type. A signal longer than
//! `dft_length` is truncated, a shorter one padded with zeros, as numpy's
//! `fft` does.

use std::f64::consts::PI;

use ir::DType;
use tensor::Tensor;

use super::point::{point, read};
use super::{axis, ints};
use crate::build::{Node, Value, Var};
use crate::import::Importer;

/// One output part: sums over the signal of the real input times `re`
/// and the imaginary one times `im` (each `[out, used]`).
struct Part {
    re: Vec<f64>,
    im: Vec<f64>,
}

pub fn dft(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let x = im.var(n, 0)?;
    let r = x.shape.len();
    let c = x.shape.last().copied().unwrap_or(0);
    if r < 2 || !(c == 1 || c == 2) || !x.dtype.is_float() {
        return Err(n.error(format!(
            "input {} {:?}: DFT takes floats whose last dimension is 1 (real) or 2 (complex)",
            x.dtype, x.shape
        )));
    }
    let given_axis = if im.version(n) >= 20 {
        match n.input(2) {
            Some(_) => ints(&im.constant(n, 2, "the axis")?)
                .first()
                .copied()
                .unwrap_or(-2),
            None => -2,
        }
    } else {
        n.int("axis")?.unwrap_or(1)
    };
    let a = axis(n, given_axis, r)?;
    if a == r - 1 {
        return Err(n.error("the axis is the last one, which holds the complex parts"));
    }
    let inverse = n.int("inverse")?.unwrap_or(0) != 0;
    let onesided = n.int("onesided")?.unwrap_or(0) != 0;
    if inverse && !onesided {
        // Computed in float64, the full inverse's results near zero lie
        // 1e-7 from the ONNX reference's, which transforms in complex64,
        // past its conformance cases' tolerance: not claimed until the
        // two agree.
        return Err(n.error("the full inverse DFT (inverse = 1, onesided = 0) is not supported"));
    }
    let len = x.shape[a];
    let length = match n.input(1) {
        Some(_) => ints(&im.constant(n, 1, "the DFT length")?)
            .first()
            .copied()
            .unwrap_or(0),
        None if inverse && onesided => 2 * (len as i64 - 1),
        None => len as i64,
    };
    let big = usize::try_from(length)
        .ok()
        .filter(|&l| l > 0)
        .ok_or_else(|| n.error(format!("dft_length {length} is not positive")))?;
    let nf = big as f64;
    // Output points, the input points read, and each part's tables.
    let (out, used, parts): (usize, usize, Vec<Part>) = if inverse && onesided {
        let used = len.min(big / 2 + 1);
        let weight = |k: usize| {
            if k == 0 || (big % 2 == 0 && k == big / 2) {
                1.0
            } else {
                2.0
            }
        };
        let table = |f: &dyn Fn(f64) -> f64, sign: f64| -> Vec<f64> {
            (0..big)
                .flat_map(|p| (0..used).map(move |q| (p, q)))
                .map(|(p, q)| sign * weight(q) * f(2.0 * PI * (p * q % big) as f64 / nf) / nf)
                .collect()
        };
        (
            big,
            used,
            vec![Part {
                re: table(&f64::cos, 1.0),
                im: table(&f64::sin, -1.0),
            }],
        )
    } else {
        let out = if onesided { big / 2 + 1 } else { big };
        let used = len.min(big);
        let scale = if inverse { 1.0 / nf } else { 1.0 };
        let sign = if inverse { 1.0 } else { -1.0 };
        let table = |f: &dyn Fn(f64) -> f64, s: f64| -> Vec<f64> {
            (0..out)
                .flat_map(|p| (0..used).map(move |q| (p, q)))
                .map(|(p, q)| s * scale * f(2.0 * PI * (p * q % big) as f64 / nf))
                .collect()
        };
        // e^{sign i θ} times (re + i im): real re cos - sign im sin, imaginary
        // im cos + sign re sin.
        let real = Part {
            re: table(&f64::cos, 1.0),
            im: table(&f64::sin, -sign),
        };
        let imag = Part {
            re: table(&f64::sin, sign),
            im: table(&f64::cos, 1.0),
        };
        (out, used, vec![real, imag])
    };
    let mut shape = x.shape.clone();
    shape[a] = out;
    shape[r - 1] = 1;
    let mut computed = Vec::new();
    for (k, part) in parts.into_iter().enumerate() {
        computed.push(sum(im, n, &x, a, out, used, c, part, &shape, k)?);
    }
    shape[r - 1] = computed.len();
    let mut here = point(r);
    here[r - 1] = "0".to_string();
    let rhs = match computed.as_slice() {
        [real] => format!("{}({})", x.dtype.name(), read(real, &here)),
        [real, imag] => format!(
            "{}(_i{} == 0 ? {} : {})",
            x.dtype.name(),
            r - 1,
            read(real, &here),
            read(imag, &here)
        ),
        _ => unreachable!("one or two parts"),
    };
    let y = im.b.compute("=", &rhs, &[], x.dtype, shape);
    im.set(n, 0, Value::Var(y));
    Ok(())
}

/// One part: `sum_q x_re(q) re(p, q) + x_im(q) im(p, q)` over the axis, in
/// `float64`, of shape `shape` (the last dimension 1).
#[allow(clippy::too_many_arguments)]
fn sum(
    im: &mut Importer,
    n: &Node,
    x: &Var,
    a: usize,
    out: usize,
    used: usize,
    c: usize,
    part: Part,
    shape: &[usize],
    k: usize,
) -> Result<Var, String> {
    let r = x.shape.len();
    let mut terms = Vec::new();
    for (component, table) in [(0, part.re), (1, part.im)] {
        if component >= c {
            continue; // A real signal has no imaginary part.
        }
        let t = Tensor::from_f64(DType::F64, &[out, used], table);
        let w = im.b.weight(&format!("{}#dft{k}{component}", n.label), &t);
        let mut at = point(r);
        at[a] = "_q".to_string();
        at[r - 1] = component.to_string();
        terms.push(format!(
            "float64({}) * {}",
            read(x, &at),
            read(&w, &[format!("_i{a}"), "_q".to_string()])
        ));
    }
    Ok(im.b.compute(
        "+=!",
        &terms.join(" + "),
        &[format!("_q in 0:{used}")],
        DType::F64,
        shape.to_vec(),
    ))
}
