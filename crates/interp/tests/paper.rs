//! Every TC program of the paper (`examples/paper/`) computes what the paper
//! says it computes: each runs in the interpreter on seeded random inputs and
//! is compared with a plain Rust loop written from the paper's description.

use std::collections::HashMap;

use interp::{Arg, Mode, Tensor};
use ir::{DType, Value};

/// Runs `def` of the example file on `args` and compares output `k` with
/// `want[k]` (relative tolerance 1e-4 with an absolute floor of 1e-4).
fn check(file: &str, def: &str, args: Vec<(&str, Arg)>, want: &[Vec<f64>]) {
    let path = format!("{}/../../examples/paper/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    let checked = tc::check_source(&text)
        .unwrap_or_else(|d| panic!("{}", tc::render_diagnostics(&d, file, &text)));
    let args: HashMap<String, Arg> = args.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    let out = interp::run(&checked.program, def, &args, &HashMap::new(), Mode::Real)
        .unwrap_or_else(|e| panic!("{file}/{def}: {e} (statement {:?})", e.stmt));
    assert_eq!(out.len(), want.len(), "{file}/{def}: number of outputs");
    for ((name, got), want) in out.iter().zip(want) {
        let got = got.to_f64_vec();
        assert_eq!(got.len(), want.len(), "{file}/{def}: size of `{name}`");
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            assert!(
                (g - w).abs() <= 1e-4 * w.abs().max(1.0),
                "{file}/{def}: `{name}`[{i}] is {g}, expected {w}"
            );
        }
    }
}

fn rand(shape: &[usize], seed: u64) -> (Tensor, Vec<f64>) {
    let t = Tensor::random(DType::F32, shape, seed);
    let v = t.to_f64_vec();
    (t, v)
}

fn arg(t: &Tensor) -> Arg {
    Arg::Tensor(t.clone())
}

/// Plain (C-order) matrix product of `a` (m x k) and `b` (k x n).
fn matmul(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            c[i * n + j] = (0..k).map(|x| a[i * k + x] * b[x * n + j]).sum();
        }
    }
    c
}

fn transpose(a: &[f64], r: usize, c: usize) -> Vec<f64> {
    (0..c * r).map(|x| a[(x % r) * c + x / r]).collect()
}

#[test]
fn mv_both_forms() {
    let (a, av) = rand(&[5, 7], 1);
    let (x, xv) = rand(&[7], 2);
    let want = matmul(&av, &xv, 5, 7, 1);
    check(
        "mv.tc",
        "mv",
        vec![("A", arg(&a)), ("x", arg(&x))],
        std::slice::from_ref(&want),
    );
    check(
        "mv.tc",
        "mv1",
        vec![("A", arg(&a)), ("x", arg(&x))],
        &[want],
    );
}

#[test]
fn sgemm_scales_and_accumulates() {
    let (a, av) = rand(&[4, 6], 3);
    let (b, bv) = rand(&[6, 5], 4);
    let (c, cv) = rand(&[4, 5], 5);
    let ab = matmul(&av, &bv, 4, 6, 5);
    let want: Vec<f64> = ab.iter().zip(&cv).map(|(p, c)| 0.5 * c + 1.5 * p).collect();
    let args = vec![
        ("a", Arg::Scalar(Value::Float(1.5))),
        ("b", Arg::Scalar(Value::Float(0.5))),
        ("A", arg(&a)),
        ("B", arg(&b)),
        ("C", arg(&c)),
    ];
    check("sgemm.tc", "sgemm", args, &[want]);
}

#[test]
fn tmm_and_tbmm_contract_the_last_axes() {
    let (a, av) = rand(&[3, 8], 6);
    let (b, bv) = rand(&[5, 8], 7);
    check(
        "tmm.tc",
        "tmm",
        vec![("A", arg(&a)), ("B", arg(&b))],
        &[matmul(&av, &transpose(&bv, 5, 8), 3, 8, 5)],
    );
    let (x, xv) = rand(&[2, 3, 4], 8);
    let (y, yv) = rand(&[2, 5, 4], 9);
    let mut want = Vec::new();
    for b in 0..2 {
        want.extend(matmul(
            &xv[b * 12..(b + 1) * 12],
            &transpose(&yv[b * 20..(b + 1) * 20], 5, 4),
            3,
            4,
            5,
        ));
    }
    check(
        "tbmm.tc",
        "tbmm",
        vec![("X", arg(&x)), ("Y", arg(&y))],
        &[want],
    );
}

/// Valid (unpadded) strided convolution, NCHW, with an optional bias.
#[allow(clippy::too_many_arguments)]
fn conv_ref(
    i: &[f64],
    w: &[f64],
    n: usize,
    c: usize,
    h: usize,
    wd: usize,
    f: usize,
    kh: usize,
    kw: usize,
    s: (usize, usize),
) -> Vec<f64> {
    let oh = (h - kh) / s.0 + 1;
    let ow = (wd - kw) / s.1 + 1;
    let mut o = vec![0.0; n * f * oh * ow];
    for b in 0..n {
        for ff in 0..f {
            for y in 0..oh {
                for x in 0..ow {
                    let mut acc = 0.0;
                    for cc in 0..c {
                        for r in 0..kh {
                            for q in 0..kw {
                                acc += i[((b * c + cc) * h + y * s.0 + r) * wd + x * s.1 + q]
                                    * w[((ff * c + cc) * kh + r) * kw + q];
                            }
                        }
                    }
                    o[((b * f + ff) * oh + y) * ow + x] = acc;
                }
            }
        }
    }
    o
}

#[test]
fn conv2d_and_strided_conv2d() {
    let (i, iv) = rand(&[2, 3, 7, 6], 10);
    let (w, wv) = rand(&[4, 3, 3, 2], 11);
    check(
        "conv2d.tc",
        "conv2d",
        vec![("in", arg(&i)), ("weight", arg(&w))],
        &[conv_ref(&iv, &wv, 2, 3, 7, 6, 4, 3, 2, (1, 1))],
    );
    let (bias, bv) = rand(&[4], 12);
    let mut want = conv_ref(&iv, &wv, 2, 3, 7, 6, 4, 3, 2, (2, 3));
    let plane = want.len() / 8;
    for (k, v) in want.iter_mut().enumerate() {
        *v += bv[(k / plane) % 4];
    }
    let args = vec![
        ("sh", Arg::Scalar(Value::Int(2))),
        ("sw", Arg::Scalar(Value::Int(3))),
        ("I", arg(&i)),
        ("W", arg(&w)),
        ("B", arg(&bias)),
    ];
    check("sconv2d.tc", "sconv2d", args, &[want]);
}

#[test]
fn maxpool2x2_takes_window_maxima_and_drops_the_odd_edge() {
    let (i, iv) = rand(&[1, 2, 5, 4], 13);
    let mut want = Vec::new();
    for c in 0..2 {
        for y in 0..2 {
            for x in 0..2 {
                let at = |r: usize, q: usize| iv[(c * 5 + 2 * y + r) * 4 + 2 * x + q];
                want.push(at(0, 0).max(at(0, 1)).max(at(1, 0)).max(at(1, 1)));
            }
        }
    }
    check(
        "maxpool2x2.tc",
        "maxpool2x2",
        vec![("in", arg(&i))],
        &[want],
    );
}

#[test]
fn gather_and_two_lookup_tables() {
    let (x, xv) = rand(&[6], 14);
    let idx = [5i64, 0, 3, 3, 1, 2];
    let i = Tensor::from_i64(DType::I32, &[2, 3], idx.to_vec());
    let want: Vec<f64> = idx.iter().map(|k| xv[*k as usize]).collect();
    check(
        "gather.tc",
        "gather",
        vec![("X", arg(&x)), ("I", Arg::Tensor(i))],
        &[want],
    );

    let (l1, l1v) = rand(&[10, 4], 15);
    let (l2, l2v) = rand(&[7, 4], 16);
    let i1 = [9i64, 0, 4, 2, 2, 8];
    let i2 = [6i64, 1, 3, 0];
    let sum_rows = |t: &[f64], ix: &[i64], l: usize| -> Vec<f64> {
        let mut o = vec![0.0; 2 * 4];
        for b in 0..2 {
            for k in 0..l {
                for j in 0..4 {
                    o[b * 4 + j] += t[ix[b * l + k] as usize * 4 + j];
                }
            }
        }
        o
    };
    let args = vec![
        ("LUT1", arg(&l1)),
        (
            "I1",
            Arg::Tensor(Tensor::from_i64(DType::I32, &[2, 3], i1.to_vec())),
        ),
        ("LUT2", arg(&l2)),
        (
            "I2",
            Arg::Tensor(Tensor::from_i64(DType::I32, &[2, 2], i2.to_vec())),
        ),
    ];
    check(
        "2LUT.tc",
        "2LUT",
        args,
        &[sum_rows(&l1v, &i1, 3), sum_rows(&l2v, &i2, 2)],
    );
}

/// `relu(x · wᵀ + b)` for x (rows x k), w (n x k), b (n).
fn fc_relu(x: &[f64], w: &[f64], b: &[f64], rows: usize, k: usize, n: usize) -> Vec<f64> {
    let y = matmul(x, &transpose(w, n, k), rows, k, n);
    y.iter()
        .enumerate()
        .map(|(i, v)| (v + b[i % n]).max(0.0))
        .collect()
}

#[test]
fn mlp_layers_and_their_composition() {
    let (i, iv) = rand(&[3, 5], 17);
    let (w1, w1v) = rand(&[6, 5], 18);
    let (b1, b1v) = rand(&[6], 19);
    let o1 = fc_relu(&iv, &w1v, &b1v, 3, 5, 6);
    check(
        "mlp.tc",
        "MLP1",
        vec![("I", arg(&i)), ("W1", arg(&w1)), ("B1", arg(&b1))],
        std::slice::from_ref(&o1),
    );
    let (w2, w2v) = rand(&[4, 6], 20);
    let (b2, b2v) = rand(&[4], 21);
    let (w3, w3v) = rand(&[3, 4], 22);
    let (b3, b3v) = rand(&[3], 23);
    let (w4, w4v) = rand(&[2, 3], 24);
    let (b4, b4v) = rand(&[2], 25);
    let o2 = fc_relu(&o1, &w2v, &b2v, 3, 6, 4);
    let o3 = fc_relu(&o2, &w3v, &b3v, 3, 4, 3);
    let o4 = fc_relu(&o3, &w4v, &b4v, 3, 3, 2);
    let o1t = Tensor::from_f64(DType::F32, &[3, 6], o1);
    let layers = |first: Vec<(&'static str, Arg)>| -> Vec<(&'static str, Arg)> {
        let mut v = first;
        v.extend([
            ("W2", arg(&w2)),
            ("B2", arg(&b2)),
            ("W3", arg(&w3)),
            ("B3", arg(&b3)),
            ("W4", arg(&w4)),
            ("B4", arg(&b4)),
        ]);
        v
    };
    check(
        "mlp.tc",
        "MLP3",
        layers(vec![("I", arg(&o1t))]),
        &[o2, o3, o4.clone()],
    );
    check(
        "mlp.tc",
        "MLP4",
        layers(vec![("I", arg(&i)), ("W1", arg(&w1)), ("B1", arg(&b1))]),
        &[o4],
    );
}

#[test]
fn grouped_convolution_keeps_groups_apart() {
    let (n, g, c, f, h, w, k) = (2, 3, 2, 2, 5, 4, 3);
    let (i, iv) = rand(&[n, g, c, h, w], 26);
    let (wt, wv) = rand(&[g, f, c, k, k], 27);
    let (oh, ow) = (h - k + 1, w - k + 1);
    let mut want = vec![0.0; n * g * f * oh * ow];
    for b in 0..n {
        for gg in 0..g {
            // Each group is an independent convolution of its own channels.
            let input: Vec<f64> =
                iv[(b * g + gg) * c * h * w..(b * g + gg + 1) * c * h * w].to_vec();
            let weight: Vec<f64> = wv[gg * f * c * k * k..(gg + 1) * f * c * k * k].to_vec();
            let o = conv_ref(&input, &weight, 1, c, h, w, f, k, k, (1, 1));
            want[(b * g + gg) * f * oh * ow..(b * g + gg + 1) * f * oh * ow].copy_from_slice(&o);
        }
    }
    check(
        "gconv.tc",
        "gconv",
        vec![("I", arg(&i)), ("W1", arg(&wt))],
        &[want],
    );
}

#[test]
fn outer_product_mm_and_conv1d() {
    let (p, q, r, s, t) = (2, 3, 4, 2, 3);
    let (a, av) = rand(&[p, q, r], 28);
    let (b, bv) = rand(&[s, r, t], 29);
    let mut want = Vec::new();
    for pp in 0..p {
        for ss in 0..s {
            for qq in 0..q {
                for tt in 0..t {
                    want.push(
                        (0..r)
                            .map(|x| av[(pp * q + qq) * r + x] * bv[(ss * r + x) * t + tt])
                            .sum(),
                    );
                }
            }
        }
    }
    check(
        "outerProductMM.tc",
        "outerProductMM",
        vec![("A", arg(&a)), ("B", arg(&b))],
        &[want],
    );

    let (i, iv) = rand(&[9], 30);
    let (k, kv) = rand(&[4], 31);
    let want: Vec<f64> = (0..6)
        .map(|o| (0..4).map(|x| iv[o + x] * kv[x]).sum())
        .collect();
    check(
        "conv1d.tc",
        "conv1d",
        vec![("I", arg(&i)), ("K", arg(&k))],
        &[want],
    );
}
