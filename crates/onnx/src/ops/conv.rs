//! `Conv`, `ConvTranspose`, `MaxPool`, `AveragePool` (2-D and 3-D, `ceil_mode`
//! too), `GlobalAveragePool`, `GlobalMaxPool`.
//!
//! Spatial attributes follow the ONNX specification: `pads` lists every
//! begin, then every end; `auto_pad` `SAME_UPPER` / `SAME_LOWER` pads to
//! an output of `ceil(in / stride)`, the odd pixel at the end / begin;
//! `VALID` pads nothing. Output sizes are `floor((in + pads - dilation
//! (kernel - 1) - 1) / stride) + 1`.

use ir::DType;
use tensor::Tensor;

use super::blocked;
use crate::build::{int, Node, Value, Var};
use crate::import::Importer;

/// Strides, pads (begins then ends) and dilations for `spatial` input
/// sizes and kernel sizes, from the node's attributes, and the output's
/// spatial sizes.
pub(crate) struct Window {
    pub(crate) strides: Vec<i64>,
    pub(crate) pads: Vec<i64>,
    pub(crate) dilations: Vec<i64>,
    pub(crate) out: Vec<usize>,
}

/// Attribute `name` of `n`, one value per spatial dimension of `d`;
/// `default` for each when absent.
fn per_axis(n: &Node, name: &str, default: i64, d: usize) -> Result<Vec<i64>, String> {
    match n.ints(name)? {
        Some(v) if v.len() == d => Ok(v),
        Some(v) => Err(n.error(format!(
            "attribute `{name}` has {} values for {d} spatial dimensions",
            v.len()
        ))),
        None => Ok(vec![default; d]),
    }
}

fn window(n: &Node, spatial: &[usize], kernel: &[usize]) -> Result<Window, String> {
    let d = spatial.len();
    let strides = per_axis(n, "strides", 1, d)?;
    let dilations = per_axis(n, "dilations", 1, d)?;
    if let Some(x) = strides.iter().chain(&dilations).find(|&&x| x < 1) {
        return Err(n.error(format!("strides and dilations must be positive, not {x}")));
    }
    let auto = n
        .string("auto_pad")?
        .unwrap_or_else(|| "NOTSET".to_string());
    let explicit = n.ints("pads")?;
    let pads = match auto.as_str() {
        "NOTSET" => match explicit {
            Some(p) if p.len() == 2 * d => p,
            Some(p) => {
                return Err(n.error(format!(
                    "attribute `pads` has {} values for {d} spatial dimensions (begins, then ends)",
                    p.len()
                )))
            }
            None => vec![0; 2 * d],
        },
        "VALID" => vec![0; 2 * d],
        "SAME_UPPER" | "SAME_LOWER" => {
            let mut p = vec![0; 2 * d];
            for k in 0..d {
                let (i, s) = (spatial[k] as i64, strides[k]);
                let span = dilations[k] * (kernel[k] as i64 - 1) + 1;
                let out = (i + s - 1) / s;
                let total = ((out - 1) * s + span - i).max(0);
                let small = total / 2;
                let (begin, end) = if auto == "SAME_UPPER" {
                    (small, total - small)
                } else {
                    (total - small, small)
                };
                p[k] = begin;
                p[d + k] = end;
            }
            p
        }
        other => return Err(n.error(format!("auto_pad `{other}` is not supported"))),
    };
    if let Some(x) = pads.iter().find(|&&x| x < 0) {
        return Err(n.error(format!("negative pads ({x}) are not supported")));
    }
    let mut out = Vec::with_capacity(d);
    for k in 0..d {
        let span = dilations[k] * (kernel[k] as i64 - 1) + 1;
        let room = spatial[k] as i64 + pads[k] + pads[d + k] - span;
        if room < 0 {
            return Err(n.error(format!(
                "the window ({span}) is larger than the padded input ({}) along spatial dimension {k}",
                spatial[k] as i64 + pads[k] + pads[d + k]
            )));
        }
        out.push((room / strides[k] + 1) as usize);
    }
    Ok(Window {
        strides,
        pads,
        dilations,
        out,
    })
}

/// The groups and window of convolution `n` with input `xshape` and
/// weight `wshape`, checked against each other and the attributes.
pub(crate) fn geometry(
    n: &Node,
    xshape: &[usize],
    wshape: &[usize],
) -> Result<(i64, Window), String> {
    let rank = xshape.len();
    if !(3..=5).contains(&rank) || wshape.len() != rank {
        return Err(n.error(format!(
            "input {xshape:?} and weight {wshape:?} must both be of rank 3, 4 or 5"
        )));
    }
    let group = n.int("group")?.unwrap_or(1);
    let (c, f, cg) = (xshape[1] as i64, wshape[0] as i64, wshape[1] as i64);
    if group < 1 || c % group != 0 || f % group != 0 || cg * group != c {
        return Err(n.error(format!(
            "group {group} does not divide input channels {c} and output channels {f} with {cg} input channels per group"
        )));
    }
    let kernel = &wshape[2..];
    if let Some(k) = n.ints("kernel_shape")? {
        if k.iter().map(|&x| x as usize).ne(kernel.iter().copied()) {
            return Err(n.error(format!(
                "attribute `kernel_shape` {k:?} differs from the weight's {kernel:?}"
            )));
        }
    }
    Ok((group, window(n, &xshape[2..], kernel)?))
}

/// The direct convolution of `x` by `w` (prelude form `conv{d}d`, plus
/// `suffix`), its scalars from `win` and `group`, of element type `t`.
pub(crate) fn direct(
    im: &mut Importer,
    tensors: &[&Var],
    suffix: &str,
    win: &Window,
    group: i64,
    t: DType,
) -> Var {
    let (x, w) = (tensors[0], tensors[1]);
    let d = x.shape.len() - 2;
    let mut scalars: Vec<String> = win.strides.iter().map(|&s| int(s)).collect();
    scalars.extend(win.pads.iter().map(|&p| int(p)));
    scalars.extend(win.dilations.iter().map(|&p| int(p)));
    scalars.push(int(group));
    let mut shape = vec![x.shape[0], w.shape[0]];
    shape.extend(&win.out);
    im.b.call(&format!("conv{d}d{suffix}"), tensors, &scalars, t, shape)
}

pub fn conv(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let xshape = im.plain_shape(n, 0)?;
    // The weight becomes a parameter of the model only if it is used as it
    // is (a strided or blocked convolution uses it rearranged).
    let weight = im.value(n, 1)?;
    let wshape = weight.shape().to_vec();
    let (group, win) = geometry(n, &xshape, &wshape)?;
    let f = wshape[0];
    let bias_value = match n.input(2) {
        Some(_) => Some(im.value(n, 2)?),
        None => None,
    };
    if let Some(b) = &bias_value {
        if b.shape() != [wshape[0]] {
            return Err(n.error(format!("bias {:?} should be [{}]", b.shape(), f)));
        }
    }
    if let (Value::Const(w), None | Some(Value::Const(_))) = (&weight, &bias_value) {
        let bias = match &bias_value {
            Some(Value::Const(b)) => Some(b),
            _ => None,
        };
        if blocked::conv(im, n, w, bias, group, &win)? {
            return Ok(());
        }
    }
    im.plain_inputs(n);
    let x = im.var(n, 0)?;
    let bias = match n.input(2) {
        Some(_) => Some(im.var(n, 2)?),
        None => None,
    };
    if let Value::Const(t) = &weight {
        if let Some(y) = strided_as_unit_stride(im, n, &x, t, bias.as_ref(), &win, group) {
            im.set(n, 0, Value::Var(y));
            return Ok(());
        }
    }
    let w = im.var(n, 1)?;
    let mut tensors = vec![&x, &w];
    if let Some(b) = &bias {
        tensors.push(b);
    }
    let suffix = if bias.is_some() { "_bias" } else { "" };
    let y = direct(im, &tensors, suffix, &win, group, DType::F32);
    im.set(n, 0, Value::Var(y));
    Ok(())
}

/// A 2-D convolution with stride s > 1 (the same along both axes), no
/// dilation and constant weights, as a stride-1 convolution, which the
/// generated kernels run several times faster (whole vectors along the
/// output row instead of every s-th input point): a 1x1 kernel without
/// padding reads every s-th point (`slice_r4`); a larger one reads the
/// s x s phases of the input as channels (`space_to_depth2d`) with a
/// kernel of ceil(K / s) points whose channel (c, p, q) holds the original
/// kernel's points (s a + p, s b + q). `None` when that does not apply.
fn strided_as_unit_stride(
    im: &mut Importer,
    n: &Node,
    x: &Var,
    weight: &Tensor,
    bias: Option<&Var>,
    win: &Window,
    group: i64,
) -> Option<Var> {
    let s = win.strides[0];
    if x.shape.len() != 4
        || s < 2
        || win.strides.iter().any(|&t| t != s)
        || win.dilations.iter().any(|&d| d != 1)
        || weight.dtype() != DType::F32
    {
        return None;
    }
    let (nn, c, h, wd) = (x.shape[0], x.shape[1], x.shape[2], x.shape[3]);
    let w = &weight.shape();
    let (f, cg, kh, kw) = (w[0], w[1], w[2], w[3]);
    let su = s as usize;
    let (input, kernel) = if kh == 1 && kw == 1 && win.pads.iter().all(|&p| p == 0) {
        let shape = vec![nn, c, win.out[0], win.out[1]];
        let mut scalars = Vec::new();
        for (extent, step) in [(nn, 1), (c, 1), (h, s), (wd, s)] {
            scalars.extend([int(0), int(extent as i64), int(step)]);
        }
        let y = im.b.call("slice_r4", &[x], &scalars, DType::F32, shape);
        let key = n.input(1).unwrap_or_default().to_string();
        (y, im.b.weight(&key, weight))
    } else {
        let (ka, kb) = (kh.div_ceil(su), kw.div_ceil(su));
        let (rows, cols) = (win.out[0] + ka - 1, win.out[1] + kb - 1);
        let shape = vec![nn, c * su * su, rows, cols];
        let scalars = [s, win.pads[0], win.pads[1], rows as i64, cols as i64].map(int);
        let y =
            im.b.call("space_to_depth2d", &[x], &scalars, DType::F32, shape);
        // The kernel's points are moved as float32, never widened.
        let src = weight.contiguous();
        let src = src.as_slice::<f32>()?;
        let mut split = vec![0.0f32; f * cg * su * su * ka * kb];
        for fo in 0..f {
            for ci in 0..cg {
                for i in 0..kh {
                    for j in 0..kw {
                        let k = (ci * su + i % su) * su + j % su;
                        let to = ((fo * cg * su * su + k) * ka + i / su) * kb + j / su;
                        split[to] = src[((fo * cg + ci) * kh + i) * kw + j];
                    }
                }
            }
        }
        let t = Tensor::from_slice(DType::F32, &[f, cg * su * su, ka, kb], &split);
        let key = format!("{}#phases{s}", n.input(1).unwrap_or_default());
        (y, im.b.weight(&key, &t))
    };
    let shape = vec![nn, f, win.out[0], win.out[1]];
    Some(conv2d_stride1(
        im, &input, &kernel, bias, [0; 4], group, shape,
    ))
}

/// `conv2d` (or `conv2d_bias`) with stride and dilation 1, `pads` begins
/// then ends, giving `shape`: the convolution the rewrites of strided and
/// transposed convolutions come down to.
fn conv2d_stride1(
    im: &mut Importer,
    input: &Var,
    kernel: &Var,
    bias: Option<&Var>,
    pads: [i64; 4],
    groups: i64,
    shape: Vec<usize>,
) -> Var {
    let mut scalars = vec![int(1), int(1)];
    scalars.extend(pads.map(int));
    scalars.extend([int(1), int(1), int(groups)]);
    match bias {
        Some(b) => im.b.call(
            "conv2d_bias",
            &[input, kernel, b],
            &scalars,
            DType::F32,
            shape,
        ),
        None => {
            im.b.call("conv2d", &[input, kernel], &scalars, DType::F32, shape)
        }
    }
}

/// The spatial dimensions of a pooling's input: 2 or 3 (rank 4 or 5).
fn pooled_dims(n: &Node, shape: &[usize], what: &str) -> Result<usize, String> {
    match shape.len() {
        r @ 4..=5 => Ok(r - 2),
        _ => Err(n.error(format!(
            "input {shape:?}: only 2-D and 3-D {what} (rank 4 or 5) is supported"
        ))),
    }
}

pub fn pool(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let xshape = im.plain_shape(n, 0)?;
    if xshape.len() < 3 {
        return Err(n.error(format!(
            "input {xshape:?}: pooling needs a batch, channels and a spatial dimension"
        )));
    }
    let d = xshape.len() - 2;
    let kernel: Vec<usize> = n
        .ints("kernel_shape")?
        .ok_or_else(|| n.error("attribute `kernel_shape` is required"))?
        .iter()
        .map(|&k| match usize::try_from(k) {
            Ok(k) if k > 0 => Ok(k),
            _ => Err(n.error(format!(
                "kernel_shape has a size of {k}; the sizes of a pooling window are positive"
            ))),
        })
        .collect::<Result<_, _>>()?;
    if kernel.len() != d {
        return Err(n.error(format!("kernel_shape {kernel:?} should have {d} values")));
    }
    let mut win = window(n, &xshape[2..], &kernel)?;
    let include_pad = n.op == "AveragePool" && n.int("count_include_pad")?.unwrap_or(0) != 0;
    if n.int("ceil_mode")?.unwrap_or(0) != 0 {
        if include_pad {
            return Err(n.error("ceil_mode = 1 with count_include_pad = 1 is not supported"));
        }
        // A dilated window spans more than its points.
        let spans: Vec<usize> = (0..d)
            .map(|k| (kernel[k] - 1) * win.dilations[k] as usize + 1)
            .collect();
        ceil_mode(&mut win, &xshape[2..], &spans);
    }
    if n.op == "MaxPool" && n.int("storage_order")?.unwrap_or(0) != 0 {
        return Err(n.error("storage_order = 1 is not supported"));
    }
    // The prelude's defs pool float32 in two or three dimensions without
    // dilation; the rest is a comprehension of its own.
    let dtype = im.value(n, 0).map_or(DType::F32, |v| v.dtype());
    if !(2..=3).contains(&d)
        || win.dilations.iter().any(|&x| x != 1)
        || dtype != DType::F32
        || n.op == "LpPool"
    {
        im.plain_inputs(n);
        let x = im.var(n, 0)?;
        let y = super::pool::general(im, n, &x, &kernel, &win, include_pad)?;
        im.set(n, 0, Value::Var(y));
        return Ok(());
    }
    let def = if n.op == "MaxPool" {
        format!("maxpool{d}d")
    } else if include_pad {
        format!("avgpool{d}d_incpad")
    } else {
        format!("avgpool{d}d")
    };
    let mut scalars: Vec<String> = kernel.iter().map(|&k| int(k as i64)).collect();
    scalars.extend(win.strides.iter().map(|&s| int(s)));
    scalars.extend(win.pads.iter().map(|&p| int(p)));
    if def == "maxpool2d" && blocked::maxpool(im, n, &scalars, &win.out) {
        return Ok(());
    }
    im.plain_inputs(n);
    let x = im.var(n, 0)?;
    let mut shape = x.shape[..2].to_vec();
    shape.extend(&win.out);
    let y = im.b.call(&def, &[&x], &scalars, DType::F32, shape);
    im.set(n, 0, Value::Var(y));
    Ok(())
}

/// Rounds the output size up (`ceil_mode = 1`) by padding the end further:
/// the windows this adds only overhang the input, where neither the maximum
/// nor the mean over the points inside sees them. As the specification
/// says, a last window that would start in the end padding is dropped.
/// `kernel` is each window's span (a dilated window's first to last point).
fn ceil_mode(win: &mut Window, spatial: &[usize], kernel: &[usize]) {
    let d = spatial.len();
    for k in 0..d {
        let (s, begin) = (win.strides[k], win.pads[k]);
        let padded = spatial[k] as i64 + begin + win.pads[d + k];
        let mut out = (padded - kernel[k] as i64 + s - 1) / s + 1;
        if (out - 1) * s >= spatial[k] as i64 + begin {
            out -= 1;
        }
        win.pads[d + k] += ((out - 1) * s + kernel[k] as i64 - padded).max(0);
        win.out[k] = out as usize;
    }
}

pub fn global_pool(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let x = im.var(n, 0)?;
    let d = pooled_dims(n, &x.shape, "global pooling")?;
    let def = if n.op == "GlobalAveragePool" {
        format!("global_avgpool{d}d")
    } else {
        format!("global_maxpool{d}d")
    };
    let mut shape = x.shape[..2].to_vec();
    shape.extend(std::iter::repeat_n(1, d));
    let y = im.b.call(&def, &[&x], &[], DType::F32, shape);
    im.set(n, 0, Value::Var(y));
    Ok(())
}

/// A transposed convolution's strides, pads (begins, then ends), output
/// padding and dilations, and its output's spatial sizes.
struct TransposedWindow {
    strides: Vec<i64>,
    pads: Vec<i64>,
    out_pad: Vec<i64>,
    dilations: Vec<i64>,
    out: Vec<usize>,
}

/// The window of transposed convolution `n` over `spatial` input sizes
/// with a kernel of `kernel` sizes: the pads given, or the total padding
/// that makes `output_shape` (by default, with `auto_pad` `SAME_UPPER` or
/// `SAME_LOWER`, the input times the stride), split with the odd pad at
/// the end for `SAME_UPPER` and at the begin otherwise, as the ONNX
/// specification and ONNX Runtime do; an output larger than the natural
/// one is extended at the end, as ONNX Runtime and the ONNX reference do.
/// An `output_shape` with pads given extends or cuts the output at the
/// end, as the reference does. The output's size past its natural extent
/// (the stride times the input, less the pads) is output padding, and
/// short of it end padding.
fn transposed_window(
    n: &Node,
    spatial: &[usize],
    kernel: &[usize],
) -> Result<TransposedWindow, String> {
    let d = spatial.len();
    let strides = per_axis(n, "strides", 1, d)?;
    let dilations = per_axis(n, "dilations", 1, d)?;
    let mut out_pad = per_axis(n, "output_padding", 0, d)?;
    if strides.iter().chain(&dilations).any(|&v| v < 1) || out_pad.iter().any(|&v| v < 0) {
        return Err(n.error("strides and dilations must be positive, output padding not negative"));
    }
    if let Some(k) = n.ints("kernel_shape")? {
        if k.iter().map(|&x| x as usize).ne(kernel.iter().copied()) {
            return Err(n.error(format!(
                "attribute `kernel_shape` {k:?} differs from the weight's {kernel:?}"
            )));
        }
    }
    let explicit = match n.ints("pads")? {
        Some(p) if p.len() == 2 * d => Some(p),
        Some(p) => {
            return Err(n.error(format!(
                "attribute `pads` has {} values for {d} spatial dimensions (begins, then ends)",
                p.len()
            )))
        }
        None => None,
    };
    let output_shape = match n.ints("output_shape")? {
        // The whole shape, batch and channels too, as some exporters write.
        Some(s) if s.len() == d + 2 => Some(s[2..].to_vec()),
        Some(s) if s.len() == d => Some(s),
        Some(s) => {
            return Err(n.error(format!(
                "attribute `output_shape` {s:?} for {d} spatial dimensions"
            )))
        }
        None => None,
    };
    let auto = n
        .string("auto_pad")?
        .unwrap_or_else(|| "NOTSET".to_string());
    let same = match auto.as_str() {
        "NOTSET" | "VALID" => None,
        "SAME_UPPER" => Some(true),
        "SAME_LOWER" => Some(false),
        other => return Err(n.error(format!("auto_pad `{other}` is not supported"))),
    };
    let mut pads = vec![0; 2 * d];
    let mut out = Vec::with_capacity(d);
    for k in 0..d {
        let natural =
            strides[k] * (spatial[k] as i64 - 1) + dilations[k] * (kernel[k] as i64 - 1) + 1;
        let (begin, size) = match (&explicit, &output_shape) {
            (Some(p), _) => (
                p[k],
                output_shape
                    .as_ref()
                    .map_or(natural + out_pad[k] - p[k] - p[d + k], |s| s[k]),
            ),
            (None, None) if same.is_none() => (0, natural + out_pad[k]),
            (None, shape) => {
                let size = shape
                    .as_ref()
                    .map_or(spatial[k] as i64 * strides[k], |s| s[k]);
                // The padding that makes `size`, the odd one at the end
                // for `SAME_UPPER`, else at the begin; an output larger
                // than the natural one is extended at the end.
                let total = natural + out_pad[k] - size;
                let begin = match same {
                    _ if total <= 0 => 0,
                    Some(true) => total / 2,
                    _ => total - total / 2,
                };
                (begin, size)
            }
        };
        if begin < 0 {
            return Err(n.error(format!(
                "a negative padding ({begin}) along spatial dimension {k} is not supported"
            )));
        }
        if size < 1 {
            return Err(n.error(format!(
                "the output would have size {size} along spatial dimension {k}"
            )));
        }
        let short = natural - begin - size;
        pads[k] = begin;
        pads[d + k] = short.max(0);
        out_pad[k] = (-short).max(0);
        out.push(size as usize);
    }
    Ok(TransposedWindow {
        strides,
        pads,
        out_pad,
        dilations,
        out,
    })
}

pub fn conv_transpose(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let xshape = im.value(n, 0)?.shape().to_vec();
    let wshape = im.value(n, 1)?.shape().to_vec();
    let rank = xshape.len();
    if !(3..=5).contains(&rank) || wshape.len() != rank {
        return Err(n.error(format!(
            "input {xshape:?} and weight {wshape:?} must both be of rank 3, 4 or 5"
        )));
    }
    let group = n.int("group")?.unwrap_or(1);
    let c = xshape[1] as i64;
    if wshape[0] as i64 != c || group < 1 || c % group != 0 {
        return Err(n.error(format!(
            "weight {wshape:?} does not fit input channels {c} with group {group}"
        )));
    }
    let win = transposed_window(n, &xshape[2..], &wshape[2..])?;
    let mut shape = vec![xshape[0], wshape[1] * group as usize];
    shape.extend(&win.out);
    match rank {
        3 => return transposed1d(im, n, &win, shape),
        5 => return transposed3d(im, n, &win, group, shape),
        _ => {}
    }
    let x = im.var(n, 0)?;
    let TransposedWindow {
        strides,
        pads,
        out_pad,
        dilations,
        ..
    } = win;
    let f = shape[1];
    let constant_bias = match n.input(2).map(|_| im.value(n, 2)).transpose()? {
        None => Some(None),
        Some(Value::Const(t)) if t.len() == f && t.dtype() == DType::F32 => Some(Some(t)),
        Some(_) => None,
    };
    // The phases computed apart take the bias as their convolutions' own.
    if let (Value::Const(wt), Some(bias)) = (im.value(n, 1)?, &constant_bias) {
        let bias = bias.as_ref().map(|t| (t, n.input(2).unwrap_or_default()));
        let plain = dilations.iter().all(|&d| d == 1) && wt.dtype() == DType::F32;
        if plain && group == 1 && strides == [2, 2] {
            if let Some(y) = phases_apart(im, n, &x, &wt, &pads, &shape, bias)? {
                im.set(n, 0, Value::Var(y));
                return Ok(());
            }
        }
    }
    let mut y = match im.value(n, 1)? {
        Value::Const(wt) if dilations.iter().all(|&d| d == 1) && wt.dtype() == DType::F32 => {
            sub_pixel(im, n, &x, &wt, &strides, &pads, &shape)?
        }
        _ => {
            let mut scalars: Vec<String> = strides.iter().map(|&s| int(s)).collect();
            scalars.extend(pads.iter().map(|&p| int(p)));
            scalars.extend(out_pad.iter().map(|&p| int(p)));
            scalars.extend(dilations.iter().map(|&p| int(p)));
            scalars.push(int(group));
            let w = im.var(n, 1)?;
            im.b.call(
                "conv_transpose2d",
                &[&x, &w],
                &scalars,
                DType::F32,
                shape.clone(),
            )
        }
    };
    if n.input(2).is_some() {
        // The bias per output channel, as [F, 1, 1] for `add_r4_c11`.
        let bias = match im.value(n, 2)? {
            Value::Const(t) if t.len() == f => {
                let t = t.reshape(&[f, 1, 1]).map_err(|e| n.error(e))?;
                im.b.weight(&format!("{}#c11", n.input(2).unwrap_or_default()), &t)
            }
            Value::Var(v) if v.shape == [f] => im.b.call(
                "reshape_r1_r3",
                &[&v],
                &[int(f as i64), int(1), int(1)],
                DType::F32,
                vec![f, 1, 1],
            ),
            other => return Err(n.error(format!("bias {:?} should be [{f}]", other.shape()))),
        };
        y =
            im.b.call("add_r4_c11", &[&y, &bias], &[], DType::F32, shape);
    }
    im.set(n, 0, Value::Var(y));
    Ok(())
}

/// A 1-D transposed convolution as a 2-D one over a height of 1: its
/// input and weight with a unit axis inserted (a constant weight stays a
/// constant, for the 2-D forms that rearrange it), its window with a unit
/// stride and no padding along it, and the result without the axis.
fn transposed1d(
    im: &mut Importer,
    n: &Node,
    win: &TransposedWindow,
    shape: Vec<usize>,
) -> Result<(), String> {
    let mut proto = n.proto.clone();
    for k in 0..2 {
        let value = im.value(n, k)?;
        let s = value.shape().to_vec();
        let flat = [s[0], s[1], 1, s[2]];
        let lifted = match value {
            Value::Const(t) => Value::Const(t.reshape(&flat).map_err(|e| n.error(e))?),
            Value::Var(v) => Value::Var(im.b.compute(
                "=",
                &format!("{}(_i0, _i1, _i3)", v.name),
                &[],
                v.dtype,
                flat.to_vec(),
            )),
        };
        // `#` is in no name a graph gives its values.
        let name = format!("{}#{k}lift", proto.input[k]);
        im.values.insert(name.clone(), lifted);
        proto.input[k] = name;
    }
    let Some(first) = proto.output.first_mut() else {
        // A node that computes nothing leaves nothing to compute.
        return Ok(());
    };
    let out = format!("{first}#lift");
    first.clone_from(&out);
    proto
        .attribute
        .retain(|a| a.name.as_deref() == Some("group"));
    let ints = |name: &str, ints: Vec<i64>| crate::proto::AttributeProto {
        name: Some(name.to_string()),
        r#type: Some(crate::proto::attribute_type::INTS),
        ints,
        ..Default::default()
    };
    proto.attribute.extend([
        ints("strides", vec![1, win.strides[0]]),
        ints("pads", vec![0, win.pads[0], 0, win.pads[1]]),
        ints("output_padding", vec![0, win.out_pad[0]]),
        ints("dilations", vec![1, win.dilations[0]]),
    ]);
    let mut flat = Node::new(&proto, 0);
    flat.label.clone_from(&n.label);
    conv_transpose(im, &flat)?;
    flat.finish()?;
    let Some(Value::Var(y)) = im.values.get(&out).cloned() else {
        return Err(n.error("internal error: the lifted convolution has no result"));
    };
    let y = im.b.compute(
        "=",
        &format!("{}(_i0, _i1, 0, _i2)", y.name),
        &[],
        y.dtype,
        shape,
    );
    im.set(n, 0, Value::Var(y));
    Ok(())
}

/// A 3-D transposed convolution, the prelude's `conv_transpose3d`, plus
/// the bias per output channel.
fn transposed3d(
    im: &mut Importer,
    n: &Node,
    win: &TransposedWindow,
    group: i64,
    shape: Vec<usize>,
) -> Result<(), String> {
    let (x, w) = (im.var(n, 0)?, im.var(n, 1)?);
    let mut scalars: Vec<String> = win.strides.iter().map(|&s| int(s)).collect();
    scalars.extend(win.pads.iter().map(|&p| int(p)));
    scalars.extend(win.out_pad.iter().map(|&p| int(p)));
    scalars.extend(win.dilations.iter().map(|&p| int(p)));
    scalars.push(int(group));
    let mut y = im.b.call(
        "conv_transpose3d",
        &[&x, &w],
        &scalars,
        DType::F32,
        shape.clone(),
    );
    if let Some(b) = im.optional_var(n, 2)? {
        if b.shape != [shape[1]] {
            return Err(n.error(format!("bias {:?} should be [{}]", b.shape, shape[1])));
        }
        let rhs = format!("{}(_i0, _i1, _i2, _i3, _i4) + {}(_i1)", y.name, b.name);
        y = im.b.compute("=", &rhs, &[], DType::F32, shape);
    }
    im.set(n, 0, Value::Var(y));
    Ok(())
}

/// A transposed convolution of one group with stride 2, no dilation and
/// constant weights (and bias), whose output has an even size in both
/// dimensions, as four stride-1 convolutions, one per output phase
/// (oh % 2, ow % 2), each with exactly its phase's points, interleaved by
/// `interleave2d_nchwc`. Phase r of a dimension is kernel phase
/// k = (r + p) mod 2 (the kernel points 2 (A - 1 - a) + k, turned around,
/// A = ceil(K / 2)) on the input padded by A - 1 - (r + p) / 2 at the
/// start, and by what makes OH / 2 points at the end. The sub-pixel form's
/// one convolution computes every phase over the union of their windows
/// (2.25 times the products for a 4x4 kernel on a 2x2 input); here no
/// product is computed that the output does not use. `None` when a phase
/// would need a negative padding (a kernel shorter than its stride's
/// reach) or the output channels are not whole blocks, which the sub-pixel
/// form handles.
fn phases_apart(
    im: &mut Importer,
    n: &Node,
    x: &Var,
    wt: &Tensor,
    pads: &[i64],
    shape: &[usize],
    bias: Option<(&Tensor, &str)>,
) -> Result<Option<Var>, String> {
    let (c, f, kh, kw) = (wt.shape()[0], wt.shape()[1], wt.shape()[2], wt.shape()[3]);
    let (h, w) = (x.shape[2], x.shape[3]);
    // Output channels short of whole blocks would leave lanes idle in every
    // phase (a 1-channel image: 15 of 16); the sub-pixel form fills them
    // with phases instead.
    if !shape[2].is_multiple_of(2)
        || !shape[3].is_multiple_of(2)
        || !f.is_multiple_of(blocked::BLOCK)
    {
        return Ok(None);
    }
    let (u, v) = (shape[2] / 2, shape[3] / 2);
    // Per dimension and phase: the kernel phase and the start and end pads.
    let phase = |r: usize, p: i64, k: usize, len: usize, out: usize| {
        let a = k.div_ceil(2);
        let r_p = r + usize::try_from(p).ok()?;
        let start = (a - 1).checked_sub(r_p / 2)?;
        let end = (out + a - 1).checked_sub(len + start)?;
        Some((r_p % 2, start, end))
    };
    let mut windows = Vec::new();
    for rh in 0..2 {
        for rw in 0..2 {
            let (Some(ph), Some(pw)) = (phase(rh, pads[0], kh, h, u), phase(rw, pads[1], kw, w, v))
            else {
                return Ok(None);
            };
            windows.push((rh, rw, ph, pw));
        }
    }
    let (ah, aw) = (kh.div_ceil(2), kw.div_ceil(2));
    // The input in channel blocks once, for all four phases.
    let input = blocked::shared_input(im, x);
    let mut phases = Vec::new();
    for (rh, rw, (kph, top, bottom), (kpw, left, right)) in windows {
        let k = phase_kernel(wt, 1, (2, 2), (kph, kpw));
        let t = Tensor::from_slice(DType::F32, &[f, c, ah, aw], &k);
        let window = Window {
            strides: vec![1, 1],
            pads: [top, left, bottom, right].map(|p| p as i64).to_vec(),
            dilations: vec![1, 1],
            out: vec![u, v],
        };
        let key = format!("{}#phase{rh}{rw}", n.input(1).unwrap_or_default());
        let z = blocked::conv_packed(im, input.clone(), &t, &key, bias, &window)?;
        phases.push(z.var);
    }
    let [z00, z01, z10, z11] = &phases[..] else {
        return Err(n.error("internal error: a stride-2 transposed convolution has four phases"));
    };
    Ok(Some(im.b.call(
        "interleave2d_nchwc",
        &[z00, z01, z10, z11],
        &[int(f as i64)],
        DType::F32,
        shape.to_vec(),
    )))
}

/// The kernel of phase `phase` = (rh, rw) of a transposed convolution by
/// `wt` (C x F/G x KH x KW, `groups` groups) with strides `s`: for every
/// output channel f and input channel of its group, the kernel points
/// (sh (A_h - 1 - a) + rh, sw (A_w - 1 - b) + rw), turned around, with
/// A = ceil(K / s) and zeros past the kernel, as F x C/G x A_h x A_w. The
/// points are moved as float32 (callers check the type), never widened.
fn phase_kernel(wt: &Tensor, groups: usize, s: (usize, usize), phase: (usize, usize)) -> Vec<f32> {
    let (c, fg, kh, kw) = (wt.shape()[0], wt.shape()[1], wt.shape()[2], wt.shape()[3]);
    let (cg, f) = (c / groups, fg * groups);
    let (ah, aw) = (kh.div_ceil(s.0), kw.div_ceil(s.1));
    let src = wt.contiguous();
    let src = src.as_slice::<f32>().unwrap_or_default();
    let mut k = vec![0.0f32; f * cg * ah * aw];
    for fo_all in 0..f {
        let (g, fo) = (fo_all / fg, fo_all % fg);
        for ci in 0..cg {
            for a in 0..ah {
                for b in 0..aw {
                    let (i, j) = (s.0 * (ah - 1 - a) + phase.0, s.1 * (aw - 1 - b) + phase.1);
                    if i < kh && j < kw {
                        k[((fo_all * cg + ci) * ah + a) * aw + b] =
                            src[(((g * cg + ci) * fg + fo) * kh + i) * kw + j];
                    }
                }
            }
        }
    }
    k
}

/// A transposed convolution (stride s, no dilation, constant weights) in
/// its sub-pixel form: output point oh takes kernel rows s a + r only, for
/// r = (oh + p) mod s, and input rows (oh + p) / s - a. So each of the
/// s x s phases r of the output is a stride-1 convolution of the input
/// (padded by ceil(K / s) - 1 at the start) with the kernel points of that
/// phase, turned around; one `conv2d` computes every phase as channels
/// f s s + r_h s + r_w, and `depth_to_space2d` puts each point in its place.
/// No product with an inserted zero is computed, unlike a convolution of
/// the zero-upsampled input (4x the work at stride 2).
fn sub_pixel(
    im: &mut Importer,
    n: &Node,
    x: &Var,
    wt: &Tensor,
    strides: &[i64],
    pads: &[i64],
    shape: &[usize],
) -> Result<Var, String> {
    let (c, fg, kh, kw) = (wt.shape()[0], wt.shape()[1], wt.shape()[2], wt.shape()[3]);
    // The result has F = groups x F/G channels.
    let groups = shape[1] / fg;
    let cg = c / groups;
    let (sh, sw) = (strides[0] as usize, strides[1] as usize);
    let (ah, aw) = (kh.div_ceil(sh), kw.div_ceil(sw));
    let (oh, ow) = (shape[2], shape[3]);
    // Phase rows u run to (OH - 1 + p) / s; the convolution gives H + end
    // pad of them.
    let rows = (oh - 1 + pads[0] as usize) / sh + 1;
    let cols = (ow - 1 + pads[1] as usize) / sw + 1;
    let (h, w) = (x.shape[2], x.shape[3]);
    let (end_h, end_w) = (rows.saturating_sub(h), cols.saturating_sub(w));
    let f = fg * groups;
    // Output channel f's phase (rh, rw) is channel (f sh + rh) sw + rw.
    let slab = cg * ah * aw;
    let mut v = vec![0.0f32; f * sh * sw * slab];
    for rh in 0..sh {
        for rw in 0..sw {
            let k = phase_kernel(wt, groups, (sh, sw), (rh, rw));
            for (fo_all, from) in k.chunks_exact(slab).enumerate() {
                let o = (fo_all * sh + rh) * sw + rw;
                v[o * slab..(o + 1) * slab].copy_from_slice(from);
            }
        }
    }
    let key = format!("{}#subpixel", n.input(1).unwrap_or_default());
    let t = Tensor::from_slice(DType::F32, &[f * sh * sw, cg, ah, aw], &v);
    let pads_z = [ah as i64 - 1, aw as i64 - 1, end_h as i64, end_w as i64];
    let phases = vec![x.shape[0], f * sh * sw, h + end_h, w + end_w];
    let z = if groups == 1 {
        // One group: the phases as a blocked convolution, unblocked for
        // depth_to_space2d.
        let window = Window {
            strides: vec![1, 1],
            pads: pads_z.to_vec(),
            dilations: vec![1, 1],
            out: phases[2..].to_vec(),
        };
        let input = blocked::Input::Plain(x.clone());
        let z = blocked::conv_packed(im, input, &t, &key, None, &window)?;
        im.unblocked(&z)
    } else {
        let kernel = im.b.weight(&key, &t);
        conv2d_stride1(im, x, &kernel, None, pads_z, groups as i64, phases)
    };
    let scalars = [
        strides[0], strides[1], pads[0], pads[1], oh as i64, ow as i64,
    ]
    .map(int);
    Ok(im.b.call(
        "depth_to_space2d",
        &[&z],
        &scalars,
        DType::F32,
        shape.to_vec(),
    ))
}
