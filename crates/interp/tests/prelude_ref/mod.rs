//! Plain-Rust loop implementations of the prelude's operators, the oracle of
//! `tests/prelude.rs`.
//!
//! Each function follows the operator's definition in the ONNX operator
//! documentation (and PyTorch's, where ONNX defers to it), in the most direct
//! form that definition suggests, not the comprehension the prelude writes:
//! convolutions pad their input explicitly, transposed convolutions scatter,
//! pooling clips its windows, reshapes reuse the row-major data. Everything is
//! computed in `f64`.

/// A dense row-major tensor of `f64`.
#[derive(Clone, Debug, PartialEq)]
pub struct Nd {
    pub shape: Vec<usize>,
    pub data: Vec<f64>,
}

impl Nd {
    pub fn new(shape: &[usize], data: Vec<f64>) -> Nd {
        assert_eq!(
            shape.iter().product::<usize>(),
            data.len(),
            "data does not fill {shape:?}"
        );
        Nd {
            shape: shape.to_vec(),
            data,
        }
    }

    pub fn full(shape: &[usize], v: f64) -> Nd {
        Nd::new(shape, vec![v; shape.iter().product()])
    }

    pub fn zeros(shape: &[usize]) -> Nd {
        Nd::full(shape, 0.0)
    }

    fn offset(&self, ix: &[usize]) -> usize {
        assert_eq!(
            ix.len(),
            self.shape.len(),
            "index {ix:?} into shape {:?}",
            self.shape
        );
        ix.iter().zip(&self.shape).fold(0, |acc, (&i, &d)| {
            assert!(i < d, "index {ix:?} out of shape {:?}", self.shape);
            acc * d + i
        })
    }

    pub fn at(&self, ix: &[usize]) -> f64 {
        self.data[self.offset(ix)]
    }

    pub fn set(&mut self, ix: &[usize], v: f64) {
        let o = self.offset(ix);
        self.data[o] = v;
    }

    pub fn add_at(&mut self, ix: &[usize], v: f64) {
        let o = self.offset(ix);
        self.data[o] += v;
    }

    pub fn map(&self, f: impl Fn(f64) -> f64) -> Nd {
        Nd::new(&self.shape, self.data.iter().map(|&x| f(x)).collect())
    }
}

/// Calls `f` with every index of `shape`, in row-major order.
pub fn for_each_index(shape: &[usize], mut f: impl FnMut(&[usize])) {
    if shape.contains(&0) {
        return;
    }
    let mut ix = vec![0; shape.len()];
    loop {
        f(&ix);
        let mut k = shape.len();
        loop {
            if k == 0 {
                return;
            }
            k -= 1;
            ix[k] += 1;
            if ix[k] < shape[k] {
                break;
            }
            ix[k] = 0;
        }
    }
}

/// Builds a tensor of `shape` whose element at each index is `f(index)`.
pub fn tabulate(shape: &[usize], mut f: impl FnMut(&[usize]) -> f64) -> Nd {
    let mut data = Vec::with_capacity(shape.iter().product());
    for_each_index(shape, |ix| data.push(f(ix)));
    Nd::new(shape, data)
}

// ---------------------------------------------------------------------------
// Matrix products.

/// The product of an M x K and a K x N matrix.
pub fn matmul(a: &Nd, b: &Nd) -> Nd {
    let (m, k, n) = (a.shape[0], a.shape[1], b.shape[1]);
    assert_eq!(b.shape[0], k);
    let mut c = Nd::zeros(&[m, n]);
    for i in 0..m {
        for j in 0..n {
            let mut s = 0.0;
            for l in 0..k {
                s += a.at(&[i, l]) * b.at(&[l, j]);
            }
            c.set(&[i, j], s);
        }
    }
    c
}

/// The matrix at batch index `lead` of a tensor whose last two axes are matrices.
fn matrix_at(x: &Nd, lead: &[usize]) -> Nd {
    let r = x.shape.len();
    tabulate(&x.shape[r - 2..], |ix| x.at(&[lead, ix].concat()))
}

/// ONNX MatMul on operands of equal rank >= 2 with equal leading (batch) axes.
pub fn batch_matmul(a: &Nd, b: &Nd) -> Nd {
    let r = a.shape.len();
    assert_eq!(b.shape.len(), r);
    assert_eq!(a.shape[..r - 2], b.shape[..r - 2]);
    let lead = &a.shape[..r - 2];
    let out_shape = [lead, &[a.shape[r - 2], b.shape[r - 1]]].concat();
    let mut out = Nd::zeros(&out_shape);
    for_each_index(lead, |l| {
        let c = matmul(&matrix_at(a, l), &matrix_at(b, l));
        for_each_index(&c.shape, |ix| out.set(&[l, ix].concat(), c.at(ix)));
    });
    out
}

/// ONNX Gemm on already transposed operands: alpha A B + beta C, with C
/// broadcast to M x N by the numpy rules.
pub fn gemm(a: &Nd, b: &Nd, c: &Nd, alpha: f64, beta: f64) -> Nd {
    let p = matmul(a, b);
    broadcast(&p, c, |x, y| alpha * x + beta * y)
}

// ---------------------------------------------------------------------------
// Convolutions and pooling.

/// Attributes of a convolution or pooling over `k` spatial axes.
#[derive(Clone, Debug)]
pub struct Window {
    pub strides: Vec<usize>,
    pub pads_begin: Vec<usize>,
    pub pads_end: Vec<usize>,
    pub dilations: Vec<usize>,
}

/// `x` (N x C x spatial...) with `pb` zeros before and `pe` zeros after each
/// spatial axis.
fn zero_pad_spatial(x: &Nd, pb: &[usize], pe: &[usize]) -> Nd {
    let mut shape = x.shape.clone();
    for k in 0..pb.len() {
        shape[2 + k] += pb[k] + pe[k];
    }
    let mut out = Nd::zeros(&shape);
    for_each_index(&x.shape, |ix| {
        let mut o = ix.to_vec();
        for k in 0..pb.len() {
            o[2 + k] += pb[k];
        }
        out.set(&o, x.at(ix));
    });
    out
}

/// ONNX Conv: `x` N x C x spatial, `w` F x C/G x kernel, `groups` groups.
///
/// The input is zero-padded first; then every output point is the dot product
/// of its window (strided, dilated) of the padded input with the filter, over
/// the input channels of the output channel's group.
pub fn conv(x: &Nd, w: &Nd, win: &Window, groups: usize) -> Nd {
    let (n, c) = (x.shape[0], x.shape[1]);
    let (f, cg) = (w.shape[0], w.shape[1]);
    assert_eq!(c, cg * groups, "input channels");
    assert_eq!(f % groups, 0, "output channels");
    let fg = f / groups;
    let kernel = &w.shape[2..];
    let xp = zero_pad_spatial(x, &win.pads_begin, &win.pads_end);
    let out_spatial: Vec<usize> = (0..kernel.len())
        .map(|k| (xp.shape[2 + k] - win.dilations[k] * (kernel[k] - 1) - 1) / win.strides[k] + 1)
        .collect();
    let out_shape = [&[n, f][..], &out_spatial].concat();
    tabulate(&out_shape, |o| {
        let (b, oc) = (o[0], o[1]);
        let g = oc / fg;
        let mut s = 0.0;
        for ic in 0..cg {
            for_each_index(kernel, |kix| {
                let mut xi = vec![b, g * cg + ic];
                for k in 0..kernel.len() {
                    xi.push(o[2 + k] * win.strides[k] + kix[k] * win.dilations[k]);
                }
                s += xp.at(&xi) * w.at(&[&[oc, ic][..], kix].concat());
            });
        }
        s
    })
}

/// ONNX ConvTranspose of any spatial rank (N x C x spatial input, C x F/G x
/// kernel weight): every input point scatters its kernel into the full
/// output at stride and dilation, output pads extending it at the end;
/// then the pads are cut from both ends.
pub fn conv_transpose(x: &Nd, w: &Nd, win: &Window, out_pads: &[usize], groups: usize) -> Nd {
    let d = x.shape.len() - 2;
    let (n, c, fg) = (x.shape[0], x.shape[1], w.shape[1]);
    assert_eq!(w.shape[0], c);
    let cg = c / groups;
    let (s, dl) = (&win.strides, &win.dilations);
    let mut full_shape = vec![n, fg * groups];
    full_shape.extend(
        (0..d)
            .map(|k| s[k] * (x.shape[2 + k] - 1) + dl[k] * (w.shape[2 + k] - 1) + 1 + out_pads[k]),
    );
    let mut full = Nd::zeros(&full_shape);
    for_each_index(&x.shape, |xi| {
        let v = x.at(xi);
        let g = xi[1] / cg;
        for fo in 0..fg {
            for_each_index(&w.shape[2..], |ki| {
                let mut o = vec![xi[0], g * fg + fo];
                o.extend((0..d).map(|k| xi[2 + k] * s[k] + ki[k] * dl[k]));
                let mut wi = vec![xi[1], fo];
                wi.extend_from_slice(ki);
                full.add_at(&o, v * w.at(&wi));
            });
        }
    });
    let (pb, pe) = (&win.pads_begin, &win.pads_end);
    let mut out_shape = full_shape[..2].to_vec();
    out_shape.extend((0..d).map(|k| full_shape[2 + k] - pb[k] - pe[k]));
    tabulate(&out_shape, |o| {
        let mut at = o[..2].to_vec();
        at.extend((0..d).map(|k| o[2 + k] + pb[k]));
        full.at(&at)
    })
}

/// How a pooling combines its window.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pool {
    Max,
    /// The mean over the window points inside the input.
    AvgExcludePad,
    /// The window sum divided by the kernel size.
    AvgIncludePad,
}

/// ONNX MaxPool / AveragePool on N x C x spatial..., without ceil mode;
/// `pads` lists every begin, then every end.
///
/// As in PyTorch's kernels, each window is first placed on the padded input,
/// then clipped to the input.
pub fn pool(x: &Nd, kernel: &[usize], strides: &[usize], pads: &[usize], mode: Pool) -> Nd {
    let d = kernel.len();
    let mut out_shape = x.shape[..2].to_vec();
    for k in 0..d {
        out_shape.push((x.shape[2 + k] + pads[k] + pads[d + k] - kernel[k]) / strides[k] + 1);
    }
    tabulate(&out_shape, |o| {
        // The window's part inside the input, per spatial dimension.
        let ranges: Vec<(usize, usize)> = (0..d)
            .map(|k| {
                let lo = (o[2 + k] * strides[k]) as i64 - pads[k] as i64;
                let hi = (lo + kernel[k] as i64).min(x.shape[2 + k] as i64);
                (lo.max(0) as usize, hi.max(0) as usize)
            })
            .collect();
        let extent: Vec<usize> = ranges
            .iter()
            .map(|&(lo, hi)| hi.saturating_sub(lo))
            .collect();
        let mut vals = Vec::new();
        for_each_index(&extent, |w| {
            let mut ix = o[..2].to_vec();
            ix.extend(w.iter().zip(&ranges).map(|(&i, &(lo, _))| lo + i));
            vals.push(x.at(&ix));
        });
        assert!(
            !vals.is_empty(),
            "a pooling window lies entirely in the padding"
        );
        let sum: f64 = vals.iter().sum();
        match mode {
            Pool::Max => vals.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            Pool::AvgExcludePad => sum / vals.len() as f64,
            Pool::AvgIncludePad => sum / kernel.iter().product::<usize>() as f64,
        }
    })
}

// ---------------------------------------------------------------------------
// Normalizations and softmax.

/// ONNX BatchNormalization in inference mode; the channel axis is 1.
pub fn batchnorm(x: &Nd, scale: &Nd, bias: &Nd, mean: &Nd, var: &Nd, eps: f64) -> Nd {
    tabulate(&x.shape, |ix| {
        let c = ix[1];
        (x.at(ix) - mean.data[c]) / (var.data[c] + eps).sqrt() * scale.data[c] + bias.data[c]
    })
}

/// The rows of `x` along its last axis, as (leading index, values).
fn rows(x: &Nd) -> Vec<(Vec<usize>, Vec<f64>)> {
    let d = *x.shape.last().unwrap();
    let lead = &x.shape[..x.shape.len() - 1];
    let mut out = Vec::new();
    for_each_index(lead, |l| {
        let row = (0..d).map(|k| x.at(&[l, &[k]].concat())).collect();
        out.push((l.to_vec(), row));
    });
    out
}

/// Rebuilds a tensor of `shape` from rows along its last axis.
fn from_rows(shape: &[usize], rows: Vec<Vec<f64>>) -> Nd {
    Nd::new(shape, rows.concat())
}

/// ONNX LayerNormalization over the last axis (biased variance).
pub fn layernorm(x: &Nd, scale: &Nd, bias: &Nd, eps: f64) -> Nd {
    let out = rows(x)
        .into_iter()
        .map(|(_, r)| {
            let n = r.len() as f64;
            let mu = r.iter().sum::<f64>() / n;
            let var = r.iter().map(|v| (v - mu) * (v - mu)).sum::<f64>() / n;
            r.iter()
                .enumerate()
                .map(|(k, v)| (v - mu) / (var + eps).sqrt() * scale.data[k] + bias.data[k])
                .collect()
        })
        .collect();
    from_rows(&x.shape, out)
}

/// ONNX Softmax over the last axis: exp(x - max) / sum exp(x - max).
pub fn softmax(x: &Nd) -> Nd {
    let out = rows(x)
        .into_iter()
        .map(|(_, r)| {
            let m = r.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let e: Vec<f64> = r.iter().map(|v| (v - m).exp()).collect();
            let s: f64 = e.iter().sum();
            e.iter().map(|v| v / s).collect()
        })
        .collect();
    from_rows(&x.shape, out)
}

// ---------------------------------------------------------------------------
// Elementwise operators.

/// The error function, by its Maclaurin series (accurate to about 1e-13 for
/// |x| <= 4, the range the tests use).
pub fn erf(x: f64) -> f64 {
    assert!(x.abs() <= 4.0, "erf reference used outside its range: {x}");
    // erf(x) = 2 / sqrt(pi) * sum over n of (-1)^n x^(2n+1) / (n! (2n+1)).
    let mut term = x; // (-1)^n x^(2n+1) / n!
    let mut sum = x;
    for n in 1..200 {
        term *= -x * x / n as f64;
        let t = term / (2 * n + 1) as f64;
        sum += t;
        if t.abs() < 1e-17 {
            break;
        }
    }
    sum * 2.0 / std::f64::consts::PI.sqrt()
}

/// ONNX PRelu with a slope per channel (axis 1).
pub fn prelu(x: &Nd, slope: &Nd) -> Nd {
    tabulate(&x.shape, |ix| {
        let v = x.at(ix);
        if v >= 0.0 {
            v
        } else {
            slope.data[ix[1]] * v
        }
    })
}

/// ONNX Where: `a` where `c` is non-zero, else `b`, the three broadcast
/// numpy-style.
pub fn select(c: &Nd, a: &Nd, b: &Nd) -> Nd {
    let r = c.shape.len().max(a.shape.len()).max(b.shape.len());
    let padded = |s: &[usize]| [vec![1; r - s.len()], s.to_vec()].concat();
    let (pc, pa, pb) = (padded(&c.shape), padded(&a.shape), padded(&b.shape));
    let shape: Vec<usize> = (0..r).map(|k| pc[k].max(pa[k]).max(pb[k])).collect();
    let at = |x: &Nd, p: &[usize], ix: &[usize]| {
        let i: Vec<usize> = p
            .iter()
            .zip(ix)
            .map(|(&d, &i)| if d == 1 { 0 } else { i })
            .collect();
        x.at(&i[r - x.shape.len()..])
    };
    tabulate(&shape, |ix| {
        if at(c, &pc, ix) != 0.0 {
            at(a, &pa, ix)
        } else {
            at(b, &pb, ix)
        }
    })
}

/// A binary operator with numpy broadcasting: shapes aligned at the last axis,
/// missing leading axes and axes of size 1 stretched.
pub fn broadcast(a: &Nd, b: &Nd, f: impl Fn(f64, f64) -> f64) -> Nd {
    let r = a.shape.len().max(b.shape.len());
    let padded = |s: &[usize]| [vec![1; r - s.len()], s.to_vec()].concat();
    let (sa, sb) = (padded(&a.shape), padded(&b.shape));
    let shape: Vec<usize> = sa
        .iter()
        .zip(&sb)
        .map(|(&x, &y)| {
            assert!(
                x == y || x == 1 || y == 1,
                "shapes {:?} and {:?} do not broadcast",
                a.shape,
                b.shape
            );
            x.max(y)
        })
        .collect();
    let pick = |s: &[usize], ix: &[usize], orig: &[usize]| -> Vec<usize> {
        let v: Vec<usize> = s
            .iter()
            .zip(ix)
            .map(|(&d, &i)| if d == 1 { 0 } else { i })
            .collect();
        v[r - orig.len()..].to_vec()
    };
    tabulate(&shape, |ix| {
        f(
            a.at(&pick(&sa, ix, &a.shape)),
            b.at(&pick(&sb, ix, &b.shape)),
        )
    })
}

// ---------------------------------------------------------------------------
// Layout.

/// ONNX Transpose: output axis k is input axis `perm[k]`.
pub fn transpose(x: &Nd, perm: &[usize]) -> Nd {
    let shape: Vec<usize> = perm.iter().map(|&p| x.shape[p]).collect();
    tabulate(&shape, |o| {
        let mut ix = vec![0; perm.len()];
        for (k, &p) in perm.iter().enumerate() {
            ix[p] = o[k];
        }
        x.at(&ix)
    })
}

/// ONNX Reshape (and Flatten): the same row-major data under a new shape.
pub fn reshape(x: &Nd, shape: &[usize]) -> Nd {
    Nd::new(shape, x.data.clone())
}

/// ONNX Concat of two tensors along `axis`.
pub fn concat(a: &Nd, b: &Nd, axis: usize) -> Nd {
    let mut shape = a.shape.clone();
    shape[axis] += b.shape[axis];
    tabulate(&shape, |ix| {
        if ix[axis] < a.shape[axis] {
            a.at(ix)
        } else {
            let mut j = ix.to_vec();
            j[axis] -= a.shape[axis];
            b.at(&j)
        }
    })
}

/// ONNX Slice with per-axis `starts`, `ends` and `steps` (already normalized:
/// a negative step walks down from `start` to just above `end`).
pub fn slice(x: &Nd, starts: &[i64], ends: &[i64], steps: &[i64]) -> Nd {
    let picks: Vec<Vec<usize>> = (0..x.shape.len())
        .map(|k| {
            let mut v = Vec::new();
            let mut i = starts[k];
            while (steps[k] > 0 && i < ends[k]) || (steps[k] < 0 && i > ends[k]) {
                v.push(usize::try_from(i).expect("slice start out of range"));
                i += steps[k];
            }
            v
        })
        .collect();
    let shape: Vec<usize> = picks.iter().map(Vec::len).collect();
    tabulate(&shape, |o| {
        let ix: Vec<usize> = o.iter().enumerate().map(|(k, &i)| picks[k][i]).collect();
        x.at(&ix)
    })
}

/// ONNX Split along `axis` into the first `s` points and the rest.
pub fn split(x: &Nd, axis: usize, s: usize) -> (Nd, Nd) {
    let n = x.shape[axis];
    let mut starts = vec![0; x.shape.len()];
    let mut ends: Vec<i64> = x.shape.iter().map(|&d| d as i64).collect();
    let steps = vec![1; x.shape.len()];
    ends[axis] = s as i64;
    let first = slice(x, &starts, &ends, &steps);
    starts[axis] = s as i64;
    ends[axis] = n as i64;
    (first, slice(x, &starts, &ends, &steps))
}

/// ONNX Pad, constant mode: `begins` / `ends` points added (removed when
/// negative) before / after each axis, new points set to `value`.
pub fn pad(x: &Nd, begins: &[i64], ends: &[i64], value: f64) -> Nd {
    let shape: Vec<usize> = (0..x.shape.len())
        .map(|k| (x.shape[k] as i64 + begins[k] + ends[k]) as usize)
        .collect();
    tabulate(&shape, |o| {
        let src: Vec<i64> = o.iter().zip(begins).map(|(&i, &b)| i as i64 - b).collect();
        if src
            .iter()
            .zip(&x.shape)
            .all(|(&i, &d)| i >= 0 && i < d as i64)
        {
            x.at(&src.iter().map(|&i| i as usize).collect::<Vec<_>>())
        } else {
            value
        }
    })
}

/// How a reduction combines values.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Reduce {
    Sum,
    Mean,
    Max,
}

/// ONNX ReduceSum / ReduceMean / ReduceMax over `axes`.
pub fn reduce(x: &Nd, axes: &[usize], keepdims: bool, op: Reduce) -> Nd {
    let kept_shape: Vec<usize> = x
        .shape
        .iter()
        .enumerate()
        .map(|(k, &d)| if axes.contains(&k) { 1 } else { d })
        .collect();
    let mut groups: Vec<Vec<f64>> = vec![Vec::new(); kept_shape.iter().product()];
    let probe = Nd::zeros(&kept_shape);
    for_each_index(&x.shape, |ix| {
        let o: Vec<usize> = ix
            .iter()
            .enumerate()
            .map(|(k, &i)| if axes.contains(&k) { 0 } else { i })
            .collect();
        groups[probe.offset(&o)].push(x.at(ix));
    });
    let data = groups
        .iter()
        .map(|g| match op {
            Reduce::Sum => g.iter().sum(),
            Reduce::Mean => g.iter().sum::<f64>() / g.len() as f64,
            Reduce::Max => g.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        })
        .collect();
    let shape: Vec<usize> = if keepdims {
        kept_shape
    } else {
        x.shape
            .iter()
            .enumerate()
            .filter(|(k, _)| !axes.contains(k))
            .map(|(_, &d)| d)
            .collect()
    };
    Nd::new(&shape, data)
}

// ---------------------------------------------------------------------------
// Band matrix products (Longformer's dilated sliding-window attention).

/// The rows of the band around row `i`: for each of the 2w + 1 band positions,
/// the row i + d (p - w) it pairs with, if inside 0..m.
fn band(i: usize, m: usize, w: usize, d: usize) -> Vec<Option<usize>> {
    (0..2 * w + 1)
        .map(|p| {
            let r = i as i64 + d as i64 * (p as i64 - w as i64);
            (0..m as i64).contains(&r).then_some(r as usize)
        })
        .collect()
}

/// G2BMM: the attention scores of every query row i of `q` (B x M x K)
/// against the 2w + 1 key rows of `k` in its dilated band; pairs outside the
/// sequence score 0.
pub fn g2bmm(q: &Nd, k: &Nd, w: usize, d: usize) -> Nd {
    let (b, m, e) = (q.shape[0], q.shape[1], q.shape[2]);
    let mut out = Nd::zeros(&[b, m, 2 * w + 1]);
    for bi in 0..b {
        for i in 0..m {
            for (p, row) in band(i, m, w, d).into_iter().enumerate() {
                if let Some(r) = row {
                    let dot = (0..e).map(|x| q.at(&[bi, i, x]) * k.at(&[bi, r, x])).sum();
                    out.set(&[bi, i, p], dot);
                }
            }
        }
    }
    out
}

/// GBMM: every row i of the output is the combination of the rows of `v`
/// (B x M x N) in i's dilated band, weighted by the band scores `s`
/// (B x M x (2w + 1)); band positions outside the sequence are ignored.
pub fn gbmm(s: &Nd, v: &Nd, d: usize) -> Nd {
    let (b, m, w2, n) = (s.shape[0], s.shape[1], s.shape[2], v.shape[2]);
    let w = (w2 - 1) / 2;
    let mut out = Nd::zeros(&[b, m, n]);
    for bi in 0..b {
        for i in 0..m {
            for (p, row) in band(i, m, w, d).into_iter().enumerate() {
                if let Some(r) = row {
                    for j in 0..n {
                        out.add_at(&[bi, i, j], s.at(&[bi, i, p]) * v.at(&[bi, r, j]));
                    }
                }
            }
        }
    }
    out
}
