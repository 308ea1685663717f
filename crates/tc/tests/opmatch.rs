//! Operator matching (`ir::opmatch`) on comprehensions written in TC:
//! checked, put at concrete sizes by `ir::at_sizes`, described as an
//! iterator mapping table and matched. Covers matmul in several layouts
//! (transposed operands, a batch in the middle, swapped operands, M split
//! into nesting iterators and into non-nesting ones, OLLIE's Expression (2)
//! offsets, a nesting three-iterator K), convolutions (plain, strided,
//! padded and dilated through the prelude's `conv2d`, NHWC, operands
//! swapped), the prelude's `conv_transpose2d`, `g2bmm` and `gbmm`,
//! elementwise operators, and the mismatches a search reads: a
//! convolution's inner sum against matmul, grouped convolutions, bodies
//! that are no product, and the distance they give.

use std::collections::HashMap;

use ir::opmatch::{
    self, distance, matmul, matmul_as, Combine, Group, Mismatch, Operator, Shape, Table,
};
use ir::{BinOp, Def, Stmt};

fn bind(pairs: &[(&str, i64)]) -> HashMap<String, i64> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

/// `def` of `program` at `sizes` (scalars among them), and the table of its
/// last comprehension with the scalars `scalars` bound.
fn table_of(
    program: &ir::Program,
    def: &str,
    sizes: &[(&str, i64)],
    scalars: &[(&str, i64)],
) -> Result<Table, Vec<Mismatch>> {
    let d = program.def(def).unwrap_or_else(|| panic!("no def {def}"));
    let at: Def = ir::at_sizes(d, &bind(sizes));
    let Some(Stmt::Comp(c)) = at.stmts.iter().rev().find(|s| matches!(s, Stmt::Comp(_))) else {
        panic!("{def} has no comprehension")
    };
    opmatch::table_with(&at, c, &bind(scalars))
}

/// The table of the last comprehension of the only def of `src` at
/// `sizes`.
fn table(src: &str, sizes: &[(&str, i64)]) -> Table {
    let program = tc::check_source(src)
        .unwrap_or_else(|d| panic!("{}", tc::render_diagnostics(&d, "t.tc", src)))
        .program;
    let name = program.defs[0].name.clone();
    table_of(&program, &name, sizes, &[]).unwrap_or_else(|m| panic!("{m:?}"))
}

fn prelude(def: &str, sizes: &[(&str, i64)], scalars: &[(&str, i64)]) -> Table {
    let mut all = sizes.to_vec();
    all.extend_from_slice(scalars);
    table_of(testkit::prelude(), def, &all, scalars).unwrap_or_else(|m| panic!("{def}: {m:?}"))
}

fn strided(offset: i64, row_stride: i64, col_stride: i64) -> opmatch::Strided {
    opmatch::Strided {
        offset,
        row_stride,
        col_stride,
    }
}

fn names(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

const MM: [(&str, i64); 3] = [("M", 4), ("K", 5), ("N", 6)];

#[test]
fn matmul_in_plain_and_transposed_layouts() {
    let t = table(
        "def f(float(M,K) A, float(K,N) B) -> (C) { C(i, j) +=! A(i, k) * B(k, j) }",
        &MM,
    );
    assert_eq!(t.group("i"), Group::of(true, &[0], 2));
    assert_eq!(t.group("k"), Group::of(false, &[0, 1], 2));
    let s = matmul(&t).unwrap();
    assert_eq!((s.m, s.n, s.k, s.a_input), (4, 6, 5, 0));
    assert_eq!(
        (s.m_iters, s.n_iters, s.k_iters),
        (names(&["i"]), names(&["j"]), names(&["k"]))
    );
    assert_eq!(
        (s.a, s.b, s.c),
        (strided(0, 5, 1), strided(0, 6, 1), strided(0, 6, 1))
    );
    assert!(s.batch.is_empty() && s.layout.is_empty());

    // Aᵀ·B: A stored K×M.
    let t = table(
        "def f(float(K,M) A, float(K,N) B) -> (C) { C(i, j) +=! A(k, i) * B(k, j) }",
        &MM,
    );
    let s = matmul(&t).unwrap();
    assert_eq!(s.a, strided(0, 1, 4));
    assert_eq!(s.b, strided(0, 6, 1));
    // A·Bᵀ: B stored N×K.
    let t = table(
        "def f(float(M,K) A, float(N,K) B) -> (C) { C(i, j) +=! A(i, k) * B(j, k) }",
        &MM,
    );
    let s = matmul(&t).unwrap();
    assert_eq!(s.b, strided(0, 1, 5));
    assert_eq!(s.c, strided(0, 6, 1));
}

#[test]
fn batch_in_the_middle_and_swapped_operands() {
    let t = table(
        "def f(float(M,NB,K) A, float(NB,K,N) B) -> (C) { C(i, b, j) +=! A(i, b, k) * B(b, k, j) }",
        &[("M", 4), ("NB", 3), ("K", 5), ("N", 6)],
    );
    let s = matmul(&t).unwrap();
    assert_eq!((s.m, s.n, s.k), (4, 6, 5));
    assert_eq!(s.batch.len(), 1);
    let d = &s.batch[0];
    assert_eq!(
        (d.extent, d.stride_a, d.stride_b, d.stride_c),
        (3, 5, 30, 6)
    );
    assert_eq!(d.iters, names(&["b"]));
    assert_eq!(s.a, strided(0, 15, 1));
    assert_eq!(s.c, strided(0, 18, 1));

    // B read first: matmul takes input 1 as A so that C stays row-major;
    // matmul_as keeps input 0 as A, the transposed form.
    let t = table(
        "def f(float(M,K) A, float(K,N) B) -> (C) { C(i, j) +=! B(k, j) * A(i, k) }",
        &MM,
    );
    let s = matmul(&t).unwrap();
    assert_eq!((s.a_input, s.m, s.n), (1, 4, 6));
    assert_eq!(s.m_iters, names(&["i"]));
    assert_eq!(s.c, strided(0, 6, 1));
    let s0 = matmul_as(&t, 0).unwrap();
    assert_eq!((s0.a_input, s0.m, s0.n), (0, 6, 4));
    assert_eq!(s0.c, strided(0, 1, 6));
}

#[test]
fn nesting_iterators_merge_and_others_become_batch_loops() {
    // M as two nesting iterators: one M of 3·7.
    let t = table(
        "def f(float(M1,M2,K) A, float(K,N) B) -> (C) { C(i1, i2, j) +=! A(i1, i2, k) * B(k, j) }",
        &[("M1", 3), ("M2", 7), ("K", 4), ("N", 5)],
    );
    let s = matmul(&t).unwrap();
    assert_eq!((s.m, s.m_iters.clone()), (21, names(&["i1", "i2"])));
    assert!(s.batch.is_empty() && s.layout.is_empty());
    assert_eq!(s.a, strided(0, 4, 1));

    // M split around N in C and around K in A: i2 (the longer) is M, i1 a
    // batch loop, and the layout mismatch names both tensors. (matmul_as
    // keeps A first; matmul would take B as A to make C row-major, the
    // same split then being N's.)
    let t = table(
        "def f(float(M1,K,M2) A, float(K,N) B) -> (C) { C(i1, j, i2) +=! A(i1, k, i2) * B(k, j) }",
        &[("M1", 3), ("K", 4), ("M2", 7), ("N", 5)],
    );
    let auto = matmul(&t).unwrap();
    assert_eq!(
        (auto.a_input, auto.n, auto.n_iters.clone()),
        (1, 7, names(&["i2"]))
    );
    assert_eq!(auto.batch[0].iters, names(&["i1"]));
    let s = matmul_as(&t, 0).unwrap();
    assert_eq!(auto.layout, s.layout);
    assert_eq!((s.m, s.m_iters.clone()), (7, names(&["i2"])));
    assert_eq!(s.batch.len(), 1);
    assert_eq!(s.batch[0].iters, names(&["i1"]));
    assert_eq!(
        (
            s.batch[0].stride_a,
            s.batch[0].stride_b,
            s.batch[0].stride_c
        ),
        (28, 0, 35)
    );
    let m = Group::of(true, &[0], 2);
    for tensor in ["C", "A"] {
        assert!(
            s.layout.contains(&Mismatch::Layout {
                tensor: tensor.into(),
                group: m.clone(),
                iters: names(&["i1", "i2"]),
            }),
            "{:?}",
            s.layout
        );
    }
    assert_eq!(distance(&s.layout), 2);

    // A K of three nesting iterators is one K.
    let t = table(
        "def f(float(M,K1,K2,K3) A, float(K1,K2,K3,N) B) -> (C) {
           C(i, j) +=! A(i, k1, k2, k3) * B(k1, k2, k3, j) }",
        &[("M", 2), ("K1", 3), ("K2", 4), ("K3", 5), ("N", 6)],
    );
    let s = matmul(&t).unwrap();
    assert_eq!((s.k, s.k_iters.clone()), (60, names(&["k1", "k2", "k3"])));
    assert_eq!((s.a.col_stride, s.b.row_stride), (1, 6));

    // A K that does not nest is refused with a layout mismatch.
    let t = table(
        "def f(float(M,K1,K2) A, float(K2,K1,N) B) -> (C) {
           C(i, j) +=! A(i, k1, k2) * B(k2, k1, j) }",
        &[("M", 2), ("K1", 3), ("K2", 4), ("N", 6)],
    );
    let e = matmul(&t).unwrap_err();
    assert!(
        e.iter()
            .all(|m| matches!(m, Mismatch::Layout { group, iters, .. }
            if *group == Group::of(false, &[0, 1], 2) && *iters == names(&["k1", "k2"]))),
        "{e:?}"
    );
}

#[test]
fn ollie_expression_2_offsets() {
    // E[b, m, n] = Σ_k C[b, 0, m, 1+k] D[b-1, b, k, n], b from 1: the
    // constants move the operands' bases, b's stride in D is the sum of
    // its two dimensions' strides.
    let t = table(
        "def f(float(NB,2,M,K1) C, float(NB,NB,K,N) D) -> (E) {
           E(b, m, n) +=! C(b, 0, m, 1 + k) * D(b - 1, b, k, n) where b in 1:NB, k in 0:K }",
        &[("NB", 3), ("M", 4), ("K1", 6), ("K", 5), ("N", 2)],
    );
    let s = matmul(&t).unwrap();
    assert_eq!((s.m, s.n, s.k), (4, 2, 5));
    assert_eq!(s.batch.len(), 1);
    let d = &s.batch[0];
    // C: NB×2×4×6; D: 3×3×5×2; E: 3×4×2.
    assert_eq!(
        (d.extent, d.stride_a, d.stride_b, d.stride_c),
        (2, 48, 40, 8)
    );
    assert_eq!((s.a.offset, s.b.offset, s.c.offset), (48 + 1, 10, 8));
    assert_eq!((s.a.row_stride, s.a.col_stride), (6, 1));
    assert_eq!((s.b.row_stride, s.b.col_stride), (2, 1));
}

#[test]
fn a_convolutions_inner_sum_is_no_matmul() {
    let t = table(
        "def f(float(N,C,H,W) A, float(F,C,R,S) K) -> (T) {
           T(n, f, h, w, r, s) +=! A(n, c, h + r, w + s) * K(f, c, r, s)
             where h in 0:H-R+1, w in 0:W-S+1 }",
        &[
            ("N", 1),
            ("C", 2),
            ("H", 6),
            ("W", 6),
            ("F", 3),
            ("R", 3),
            ("S", 3),
        ],
    );
    let e = matmul(&t).unwrap_err();
    for iter in ["h", "r", "w", "s"] {
        assert!(
            e.iter().any(
                |m| matches!(m, Mismatch::Stride { tensor, iter: i, found: 1, .. }
                if tensor == "A" && i == iter)
            ),
            "{iter}: {e:?}"
        );
    }
    assert_eq!(distance(&e), 4);
    let text = e[0].to_string();
    assert!(text.contains("A"), "{text}");

    // The same sum over r and s is a convolution, still no matmul.
    let t = table(
        "def f(float(N,C,H,W) A, float(F,C,R,S) K) -> (T) {
           T(n, f, h, w) +=! A(n, c, h + r, w + s) * K(f, c, r, s)
             where h in 0:H-R+1, w in 0:W-S+1 }",
        &[
            ("N", 1),
            ("C", 2),
            ("H", 6),
            ("W", 6),
            ("F", 3),
            ("R", 3),
            ("S", 3),
        ],
    );
    assert!(matmul(&t).is_err());
    let s = opmatch::conv(&t).unwrap();
    assert_eq!(
        (s.n.iter.as_str(), s.f.iter.as_str(), s.c.iter.as_str()),
        ("n", "f", "c")
    );
    assert_eq!((s.oh.iter.as_str(), s.ow.iter.as_str()), ("h", "w"));
    assert_eq!((s.kh.iter.as_str(), s.kw.iter.as_str()), ("r", "s"));
    assert_eq!((s.oh.extent, s.kh.extent, s.c.extent), (4, 3, 2));
    assert_eq!(
        (s.stride, s.dilation, s.pad, s.pad_end),
        ([1, 1], [1, 1], [0, 0], [0, 0])
    );
    assert_eq!(
        (
            s.layout.output.as_str(),
            s.layout.input.as_str(),
            s.layout.weight.as_str()
        ),
        ("NCHW", "NCHW", "FCHW")
    );
    assert_eq!((s.input, s.weight), (0, 1));
}

const CONV: [(&str, i64); 8] = [
    ("N", 2),
    ("C", 3),
    ("H", 8),
    ("W", 9),
    ("F", 4),
    ("CG", 3),
    ("KH", 3),
    ("KW", 2),
];

fn conv_scalars(s: i64, p: i64, d: i64, g: i64) -> Vec<(&'static str, i64)> {
    vec![
        ("sh", s),
        ("sw", s),
        ("ph0", p),
        ("pw0", p),
        ("ph1", p),
        ("pw1", p),
        ("dh", d),
        ("dw", d),
        ("G", g),
    ]
}

#[test]
fn prelude_conv2d_strided_padded_dilated() {
    let t = prelude("conv2d", &CONV, &conv_scalars(2, 1, 1, 1));
    let s = opmatch::conv(&t).unwrap();
    assert_eq!((s.stride, s.dilation, s.pad), ([2, 2], [1, 1], [1, 1]));
    // OH = (8 + 2 - 2 - 1) / 2 + 1 = 4: the last window ends at row
    // 3·2 + 2 - 1 = 7, the input's last; OW = (9 + 2 - 1 - 1) / 2 + 1 = 5,
    // its last window at column 4·2 + 1 - 1 = 8.
    assert_eq!((s.oh.extent, s.ow.extent), (4, 5));
    assert_eq!(s.pad_end, [0, 0]);
    assert_eq!(
        (s.kh.extent, s.kw.extent, s.f.extent, s.n.extent),
        (3, 2, 4, 2)
    );
    assert_eq!((s.oh.iter.as_str(), s.kw.iter.as_str()), ("oh", "kw"));
    assert_eq!(s.layout.weight, "FCHW");

    let t = prelude("conv2d", &CONV, &conv_scalars(1, 2, 2, 1));
    let s = opmatch::conv(&t).unwrap();
    assert_eq!((s.stride, s.dilation, s.pad), ([1, 1], [2, 2], [2, 2]));

    // Grouped: the channel subscript is a floor quotient.
    let mut sizes = CONV.to_vec();
    sizes.retain(|(k, _)| *k != "CG");
    sizes.push(("CG", 1));
    let e = table_of(
        testkit::prelude(),
        "conv2d",
        &[sizes.as_slice(), &conv_scalars(1, 0, 1, 3)].concat(),
        &conv_scalars(1, 0, 1, 3),
    )
    .and_then(|t| opmatch::conv(&t).map(|_| t))
    .unwrap_err();
    assert!(
        e.iter().any(|m| matches!(m, Mismatch::Unsupported(_))),
        "{e:?}"
    );
    assert_eq!(distance(&e), usize::MAX);
}

#[test]
fn conv_in_nhwc_and_with_operands_swapped() {
    let t = table(
        "def f(float(N,H,W,C) X, float(R,S,C,F) K) -> (Y) {
           Y(n, h, w, f) +=! K(r, s, c, f) * X(n, 2 * h + r - 1, 2 * w + s - 1, c)
             where h in 0:4, w in 0:4 }",
        &[
            ("N", 1),
            ("H", 8),
            ("W", 8),
            ("C", 3),
            ("R", 3),
            ("S", 3),
            ("F", 5),
        ],
    );
    let s = opmatch::conv(&t).unwrap();
    assert_eq!((s.input, s.weight), (1, 0));
    assert_eq!(
        (
            s.layout.output.as_str(),
            s.layout.input.as_str(),
            s.layout.weight.as_str()
        ),
        ("NHWC", "NHWC", "HWCF")
    );
    assert_eq!((s.stride, s.pad), ([2, 2], [1, 1]));
    // The last window: 3·2 + 2 - 1 = 7, the input's last row.
    assert_eq!(s.pad_end, [0, 0]);
}

#[test]
fn prelude_conv_transpose2d() {
    let sizes = [
        ("N", 1),
        ("C", 2),
        ("H", 4),
        ("W", 5),
        ("FG", 3),
        ("KH", 3),
        ("KW", 2),
    ];
    let scalars = [
        ("sh", 2),
        ("sw", 3),
        ("ph0", 1),
        ("pw0", 0),
        ("ph1", 1),
        ("pw1", 0),
        ("oph", 1),
        ("opw", 0),
        ("dh", 1),
        ("dw", 2),
        ("G", 1),
    ];
    let t = prelude("conv_transpose2d", &sizes, &scalars);
    assert_eq!(t.guard.len(), 6, "{:?}", t.guard);
    let s = opmatch::conv_transpose(&t).unwrap();
    assert_eq!((s.stride, s.dilation, s.pad), ([2, 3], [1, 2], [1, 0]));
    // OH = 2·3 + 2 + 1 + 1 - 1 - 1 = 8; the end padding less the output
    // padding is 0. OW = 3·4 + 2 + 1 - 0 = 15.
    assert_eq!((s.oh.extent, s.ow.extent), (8, 15));
    assert_eq!(s.pad_end, [0, 0]);
    assert_eq!(
        (s.n.iter.as_str(), s.f.iter.as_str(), s.c.iter.as_str()),
        ("n", "f", "c")
    );
    assert_eq!((s.kh.iter.as_str(), s.kw.iter.as_str()), ("kh", "kw"));
    assert_eq!(
        (
            s.layout.output.as_str(),
            s.layout.input.as_str(),
            s.layout.weight.as_str()
        ),
        ("NCHW", "NCHW", "CFHW")
    );
    // Neither a convolution nor a matmul.
    assert!(opmatch::conv(&t).is_err());
    assert!(matmul(&t).is_err());

    // Stride 1: the divisibility tests and quotients vanish, the kernel
    // iterators' coefficients stay negative.
    let mut one = scalars;
    one[0].1 = 1;
    one[1].1 = 1;
    let t = prelude("conv_transpose2d", &sizes, &one);
    assert!(t
        .guard
        .iter()
        .all(|c| matches!(c, opmatch::Condition::NonNegative(_))));
    let s = opmatch::conv_transpose(&t).unwrap();
    assert_eq!((s.stride, s.dilation), ([1, 1], [1, 2]));
    let e = opmatch::conv(&t).unwrap_err();
    assert!(
        e.iter()
            .any(|m| matches!(m, Mismatch::Stride { iter, found: -1, .. } if iter == "kh")),
        "{e:?}"
    );
}

#[test]
fn prelude_g2bmm_and_gbmm() {
    let t = prelude(
        "g2bmm",
        &[("NB", 2), ("M", 6), ("K", 4)],
        &[("W", 1), ("D", 2)],
    );
    let s = opmatch::g2bmm(&t).unwrap();
    assert_eq!(s.kind, opmatch::Band::G2bmm);
    assert_eq!(s.batch.len(), 1);
    assert_eq!((s.batch[0].iter.as_str(), s.batch[0].extent), ("b", 2));
    assert_eq!(
        (s.i.iter.as_str(), s.w.iter.as_str(), s.k.iter.as_str()),
        ("i", "w", "k")
    );
    assert_eq!((s.i.extent, s.w.extent, s.k.extent), (6, 3, 4));
    assert_eq!((s.dilation, s.offset, s.a_input), (2, -2, 0));
    assert_eq!(
        (
            s.layout.output.as_str(),
            s.layout.a.as_str(),
            s.layout.b.as_str()
        ),
        ("BIW", "BIK", "BIK")
    );
    // As a GBMM its groups have the right counts, but the band dimension
    // of B pairs i with w, not with k (GBMM's band iterator).
    let e = opmatch::gbmm(&t).unwrap_err();
    assert!(
        e.iter().any(
            |m| matches!(m, Mismatch::Stride { tensor, iter, found: 2, want }
            if tensor == "B" && iter == "w" && want.contains("band iterator k"))
        ),
        "{e:?}"
    );
    assert!(matmul(&t).is_err());

    let t = prelude(
        "gbmm",
        &[("NB", 2), ("M", 6), ("W2", 3), ("N", 5)],
        &[("D", 1)],
    );
    let s = opmatch::gbmm(&t).unwrap();
    assert_eq!((s.w.iter.as_str(), s.k.iter.as_str()), ("w", "j"));
    assert_eq!((s.w.extent, s.k.extent), (3, 5));
    assert_eq!((s.dilation, s.offset), (1, -1));
    assert_eq!(
        (
            s.layout.output.as_str(),
            s.layout.a.as_str(),
            s.layout.b.as_str()
        ),
        ("BIK", "BIW", "BIK")
    );
    assert!(opmatch::g2bmm(&t).is_err());
}

#[test]
fn elementwise_permutations_and_broadcasts() {
    let t = table(
        "def f(float(M,N) A, float(N,M) B) -> (C) { C(i, j) = A(i, j) + B(j, i) }",
        &[("M", 3), ("N", 4)],
    );
    let s = opmatch::elementwise(&t).unwrap();
    assert_eq!(s.combine, Combine::Binary(BinOp::Add));
    assert_eq!(s.extents, vec![3, 4]);
    assert_eq!(
        s.inputs,
        vec![vec![Some(0), Some(1)], vec![Some(1), Some(0)]]
    );
    assert_eq!(matmul(&t).unwrap_err(), vec![Mismatch::NotAProduct]);

    let t = table(
        "def f(float(M,N) A, float(N) b) -> (C) { C(i, j) = A(i, j) * b(j) }",
        &[("M", 3), ("N", 4)],
    );
    let s = opmatch::elementwise(&t).unwrap();
    assert_eq!(s.inputs[1], vec![Some(1)]);

    let t = table(
        "def f(float(M,N,2) A) -> (C) { C(j, i) = A(i, j, 1) }",
        &[("M", 3), ("N", 4)],
    );
    let s = opmatch::elementwise(&t).unwrap();
    assert_eq!(
        (s.combine, s.inputs[0].clone()),
        (Combine::Read, vec![Some(1), Some(0), None])
    );
    assert_eq!(s.offsets, vec![1]);

    // A matmul is no elementwise operator: k is only in the inputs.
    let t = table(
        "def f(float(M,K) A, float(K,N) B) -> (C) { C(i, j) +=! A(i, k) * B(k, j) }",
        &MM,
    );
    let e = opmatch::elementwise(&t).unwrap_err();
    assert!(e.contains(&Mismatch::Group {
        group: Group::of(false, &[0, 1], 2),
        want: 0,
        found: names(&["k"]),
    }));
}

#[test]
fn bodies_that_are_no_product() {
    let src = "def f(float(M,K) A, float(K,N) B) -> (C) { C(i, j) +=! A(i, k) + B(k, j) }";
    let t = table(src, &MM);
    assert_eq!(matmul(&t).unwrap_err(), vec![Mismatch::NotAProduct]);
    assert_eq!(distance(&[Mismatch::NotAProduct]), usize::MAX);

    let src = "def f(float(M,K) A) -> (C) { C(i) +=! exp(A(i, k)) }";
    let program = tc::check_source(src).unwrap().program;
    let e = table_of(&program, "f", &MM, &[]).unwrap_err();
    assert_eq!(e, vec![Mismatch::NotAProduct]);

    // An outer product has no K.
    let t = table(
        "def f(float(M) a, float(N) b) -> (C) { C(i, j) +=! a(i) * b(j) }",
        &MM,
    );
    let e = matmul(&t).unwrap_err();
    assert_eq!(
        e,
        vec![Mismatch::Group {
            group: Group::of(false, &[0, 1], 2),
            want: 1,
            found: Vec::new()
        }]
    );
    assert_eq!(distance(&e), 1);
    assert_eq!(distance(&[]), 0);

    // A symbolic size is refused, not guessed.
    let program = tc::check_source(
        "def f(float(M,K) A, float(K,N) B) -> (C) { C(i, j) +=! A(i, k) * B(k, j) }",
    )
    .unwrap()
    .program;
    let e = table_of(&program, "f", &[("M", 2)], &[]).unwrap_err();
    assert!(matches!(&e[..], [Mismatch::Unsupported(_)]), "{e:?}");
}

#[test]
fn match_comprehension_tries_every_operator() {
    let program = tc::check_source(
        "def f(float(M,K) A, float(K,N) B) -> (C) { C(i, j) +=! A(i, k) * B(k, j) }",
    )
    .unwrap()
    .program;
    let at = ir::at_sizes(&program.defs[0], &bind(&MM));
    let Stmt::Comp(c) = &at.stmts[0] else {
        panic!("a comprehension")
    };
    let all = opmatch::match_comprehension(&at, c, &HashMap::new());
    assert_eq!(all.len(), Operator::ALL.len());
    for (op, r) in &all {
        match op {
            Operator::Matmul => assert!(matches!(r, Ok(Shape::Matmul(s)) if s.k == 5)),
            _ => assert!(r.is_err(), "{op:?}"),
        }
    }
}

#[test]
fn guards_and_diagonals() {
    // A padded convolution written with an explicit bounds guard is still
    // a convolution: the guard restates what skipping out-of-bounds reads
    // does.
    let t = table(
        "def f(float(N,C,H,W) X, float(F,C,R,S) K) -> (Y) {
           Y(n, f, h, w) +=! (h + r - 1 >= 0 && h + r - 1 < H && w + s - 1 >= 0 && w + s - 1 < W)
             ? X(n, c, h + r - 1, w + s - 1) * K(f, c, r, s) : 0.0
             where h in 0:H, w in 0:W, r in 0:R, s in 0:S, c in 0:C, n in 0:N }",
        &[
            ("N", 1),
            ("C", 2),
            ("H", 5),
            ("W", 5),
            ("F", 3),
            ("R", 3),
            ("S", 3),
        ],
    );
    assert_eq!(t.guard.len(), 4);
    let s = opmatch::conv(&t).unwrap();
    assert_eq!((s.pad, s.pad_end), ([1, 1], [1, 1]));

    // Any other guard is refused.
    let t = table(
        "def f(float(N,C,H,W) X, float(F,C,R,S) K) -> (Y) {
           Y(n, f, h, w) +=! (h >= r) ? X(n, c, h + r, w + s) * K(f, c, r, s) : 0.0
             where h in 0:H-R+1, w in 0:W-S+1, r in 0:R, s in 0:S, c in 0:C, n in 0:N }",
        &[
            ("N", 1),
            ("C", 2),
            ("H", 5),
            ("W", 5),
            ("F", 3),
            ("R", 3),
            ("S", 3),
        ],
    );
    let e = opmatch::conv(&t).unwrap_err();
    assert!(
        matches!(&e[..], [Mismatch::Unsupported(why)] if why.contains("h - r >= 0")),
        "{e:?}"
    );

    // A floor-divided read without its divisibility test is no transposed
    // convolution: every output point would read.
    let t = table(
        "def f(float(N,C,H,W) X, float(C,F,R,S) K) -> (Y) {
           Y(n, f, h, w) +=! X(n, c, (h - r) / 2, (w - s) / 2) * K(c, f, r, s)
             where h in 0:2*H, w in 0:2*W, r in 0:R, s in 0:S, c in 0:C, n in 0:N }",
        &[
            ("N", 1),
            ("C", 2),
            ("H", 4),
            ("W", 4),
            ("F", 3),
            ("R", 2),
            ("S", 2),
        ],
    );
    let e = opmatch::conv_transpose(&t).unwrap_err();
    assert_eq!(e.len(), 2, "{e:?}");
    assert!(e
        .iter()
        .all(|m| matches!(m, Mismatch::Unsupported(why) if why.contains("% 2 == 0"))));

    // A diagonal read: k in two dimensions of B.
    let t = table(
        "def f(float(M,K) A, float(K,K,N) B) -> (C) { C(i, j) +=! A(i, k) * B(k, k, j) }",
        &MM,
    );
    let e = matmul(&t).unwrap_err();
    assert_eq!(
        e,
        vec![Mismatch::Stride {
            tensor: "B".into(),
            iter: "k".into(),
            found: 36,
            want: "k in one dimension of B".into(),
        }]
    );
}

#[test]
fn every_prelude_statement_matches_or_says_why() {
    // Every comprehension of every prelude def, at small sizes with every
    // integer scalar 1: the matchers never panic, every refusal is a
    // non-empty list of printable mismatches, and the operators' defs are
    // recognized.
    let prelude = testkit::prelude();
    let mut found: Vec<(Operator, String)> = Vec::new();
    for def in &prelude.defs {
        let mut sizes: HashMap<String, i64> =
            def.size_symbols().into_iter().map(|s| (s, 3)).collect();
        let scalars: HashMap<String, i64> = def
            .params
            .iter()
            .filter_map(|p| match p {
                ir::Param::Scalar { name, dtype } if dtype.is_int() => Some((name.clone(), 1)),
                _ => None,
            })
            .collect();
        sizes.extend(scalars.clone());
        let at = ir::at_sizes(def, &sizes);
        for stmt in &at.stmts {
            let Stmt::Comp(c) = stmt else { continue };
            for (op, r) in opmatch::match_comprehension(&at, c, &scalars) {
                match r {
                    Ok(_) => found.push((op, def.name.clone())),
                    Err(e) => {
                        assert!(!e.is_empty(), "{}: {op:?}", def.name);
                        assert!(e.iter().all(|m| !m.to_string().is_empty()));
                    }
                }
            }
        }
    }
    let expect = [
        (Operator::Matmul, "matmul"),
        (Operator::Matmul, "matmul_ta"),
        (Operator::Matmul, "matmul_tab"),
        (Operator::Matmul, "batch_matmul"),
        (Operator::Matmul, "batch_matmul_r4_tb"),
        (Operator::Conv, "conv2d"),
        (Operator::ConvTranspose, "conv_transpose2d"),
        (Operator::G2bmm, "g2bmm"),
        (Operator::Gbmm, "gbmm"),
    ];
    for (op, name) in expect {
        assert!(found.contains(&(op, name.to_string())), "{op:?} {name}");
    }
    assert!(!found.contains(&(Operator::Matmul, "conv2d".to_string())));
}
