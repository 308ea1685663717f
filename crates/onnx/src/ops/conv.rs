//! `Conv`, `MaxPool`, `AveragePool`, `GlobalAveragePool`, `GlobalMaxPool`.
//!
//! Spatial attributes follow the ONNX specification: `pads` lists every
//! begin, then every end; `auto_pad` `SAME_UPPER` / `SAME_LOWER` pads to
//! an output of `ceil(in / stride)`, the odd pixel at the end / begin;
//! `VALID` pads nothing. Output sizes are `floor((in + pads - dilation
//! (kernel - 1) - 1) / stride) + 1`.

use ir::DType;

use crate::build::{int, Node, Value};
use crate::import::Importer;

/// Strides, pads (begins then ends) and dilations for `spatial` input
/// sizes and kernel sizes, from the node's attributes.
struct Window {
    strides: Vec<i64>,
    pads: Vec<i64>,
    dilations: Vec<i64>,
    out: Vec<usize>,
}

fn window(n: &Node, spatial: &[usize], kernel: &[usize]) -> Result<Window, String> {
    let d = spatial.len();
    let list = |name: &str, default: i64| -> Result<Vec<i64>, String> {
        match n.ints(name)? {
            Some(v) if v.len() == d => Ok(v),
            Some(v) => Err(n.error(format!(
                "attribute `{name}` has {} values for {d} spatial dimensions",
                v.len()
            ))),
            None => Ok(vec![default; d]),
        }
    };
    let strides = list("strides", 1)?;
    let dilations = list("dilations", 1)?;
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

pub fn conv(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let x = im.var(n, 0)?;
    let w = im.var(n, 1)?;
    let rank = x.shape.len();
    if !(3..=5).contains(&rank) || w.shape.len() != rank {
        return Err(n.error(format!(
            "input {:?} and weight {:?} must both be of rank 3, 4 or 5",
            x.shape, w.shape
        )));
    }
    let group = n.int("group")?.unwrap_or(1);
    let (c, f, cg) = (x.shape[1] as i64, w.shape[0] as i64, w.shape[1] as i64);
    if group < 1 || c % group != 0 || f % group != 0 || cg * group != c {
        return Err(n.error(format!(
            "group {group} does not divide input channels {c} and output channels {f} with {cg} input channels per group"
        )));
    }
    let kernel = &w.shape[2..];
    if let Some(k) = n.ints("kernel_shape")? {
        if k.iter().map(|&x| x as usize).ne(kernel.iter().copied()) {
            return Err(n.error(format!(
                "attribute `kernel_shape` {k:?} differs from the weight's {kernel:?}"
            )));
        }
    }
    let win = window(n, &x.shape[2..], kernel)?;
    let bias = match n.input(2) {
        Some(_) => {
            let b = im.var(n, 2)?;
            if b.shape != [w.shape[0]] {
                return Err(n.error(format!("bias {:?} should be [{}]", b.shape, f)));
            }
            Some(b)
        }
        None => None,
    };
    let d = rank - 2;
    let mut scalars: Vec<String> = win.strides.iter().map(|&s| int(s)).collect();
    scalars.extend(win.pads.iter().map(|&p| int(p)));
    scalars.extend(win.dilations.iter().map(|&p| int(p)));
    scalars.push(int(group));
    let mut shape = vec![x.shape[0], w.shape[0]];
    shape.extend(&win.out);
    let name = format!("conv{d}d{}", if bias.is_some() { "_bias" } else { "" });
    let mut tensors = vec![&x, &w];
    if let Some(b) = &bias {
        tensors.push(b);
    }
    let y = im.b.call(&name, &tensors, &scalars, DType::F32, shape);
    im.set(n, 0, Value::Var(y));
    Ok(())
}

pub fn pool(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let x = im.var(n, 0)?;
    if x.shape.len() != 4 {
        return Err(n.error(format!(
            "input {:?}: only 2-D pooling (rank 4) is supported",
            x.shape
        )));
    }
    let kernel: Vec<usize> = n
        .ints("kernel_shape")?
        .ok_or_else(|| n.error("attribute `kernel_shape` is required"))?
        .iter()
        .map(|&k| usize::try_from(k).map_err(|_| n.error(format!("kernel size {k}"))))
        .collect::<Result<_, _>>()?;
    if kernel.len() != 2 {
        return Err(n.error(format!("kernel_shape {kernel:?} should have 2 values")));
    }
    if n.int("ceil_mode")?.unwrap_or(0) != 0 {
        return Err(n.error("ceil_mode = 1 is not supported"));
    }
    let win = window(n, &x.shape[2..], &kernel)?;
    if win.dilations.iter().any(|&d| d != 1) {
        return Err(n.error("pooling with dilations is not supported"));
    }
    let def = if n.op == "MaxPool" {
        if n.int("storage_order")?.unwrap_or(0) != 0 {
            return Err(n.error("storage_order = 1 is not supported"));
        }
        "maxpool2d"
    } else if n.int("count_include_pad")?.unwrap_or(0) != 0 {
        "avgpool2d_incpad"
    } else {
        "avgpool2d"
    };
    let mut scalars = vec![int(kernel[0] as i64), int(kernel[1] as i64)];
    scalars.extend(win.strides.iter().map(|&s| int(s)));
    scalars.extend(win.pads.iter().map(|&p| int(p)));
    let shape = vec![x.shape[0], x.shape[1], win.out[0], win.out[1]];
    let y = im.b.call(def, &[&x], &scalars, DType::F32, shape);
    im.set(n, 0, Value::Var(y));
    Ok(())
}

pub fn global_pool(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let x = im.var(n, 0)?;
    if x.shape.len() != 4 {
        return Err(n.error(format!(
            "input {:?}: only rank-4 (2-D) global pooling is supported",
            x.shape
        )));
    }
    let def = if n.op == "GlobalAveragePool" {
        "global_avgpool2d"
    } else {
        "global_maxpool2d"
    };
    let shape = vec![x.shape[0], x.shape[1], 1, 1];
    let y = im.b.call(def, &[&x], &[], DType::F32, shape);
    im.set(n, 0, Value::Var(y));
    Ok(())
}
