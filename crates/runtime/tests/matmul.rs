//! Library matmuls: the matcher finds exactly the (batched) matmul blocks of
//! lowered kernels — the paper's tmm, tbmm, outerProductMM, MLP3 and mv,
//! batch indices in odd places, collapsed indices, transposed operands,
//! constant offsets, float64 — and refuses convolutions, elementwise
//! products, max reductions, blocks with constraints and other look-alikes.
//! For every accepted block, running the library on random inputs gives
//! what the VM gives (within 1e-4 relative), at sizes such as 1, 7 and 33
//! that are no multiple of the vector width; marking changes nothing the VM
//! computes, and marked blocks keep their spec through the cpu pipeline.
//! `run` refuses specs that do not fit their slices.

use std::collections::HashMap;

use ir::{DType, Value};
use kernel::{Affine, Block, StmtKind};
use runtime::matmul::{mark, run, spec, BatchDim, MatmulSpec, Operand};
use testkit::Rng;

/// Lowers `def` of `src` for `sizes`.
fn lower(src: &str, def: &str, sizes: &[(&str, i64)]) -> Block {
    let program = tc::check_source(src)
        .unwrap_or_else(|d| panic!("{}", tc::render_diagnostics(&d, "test.tc", src)))
        .program;
    let sizes: HashMap<String, i64> = sizes.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    kernel::lower_def(&program, def, &sizes).unwrap_or_else(|e| panic!("{def}: {e}"))
}

fn example(path: &str) -> String {
    std::fs::read_to_string(format!("{}/../../{path}", env!("CARGO_MANIFEST_DIR")))
        .unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The root's child blocks.
fn children(root: &Block) -> Vec<&Block> {
    root.stmts
        .iter()
        .filter_map(|s| match &s.kind {
            StmtKind::Block(b) => Some(&**b),
            _ => None,
        })
        .collect()
}

/// Seeded values in [-1, 1).
fn random(n: usize, seed: u64) -> Vec<f64> {
    let mut rng = Rng::new(seed);
    (0..n).map(|_| rng.unit_f64()).collect()
}

/// Random values for the root's inputs, rounded to their type.
fn inputs(root: &Block, seed: u64) -> kernel::vm::Buffers {
    root.refs
        .iter()
        .enumerate()
        .filter(|(_, r)| r.dir == kernel::RefDir::In)
        .map(|(i, r)| {
            let len = r.shape.iter().map(|d| d.size as usize).product();
            let vals = random(len, seed + i as u64).into_iter().map(|x| {
                Value::Float(if r.dtype == DType::F32 {
                    f64::from(x as f32)
                } else {
                    x
                })
            });
            (r.into.clone(), vals.collect())
        })
        .collect()
}

fn floats(v: &[Value]) -> Vec<f64> {
    v.iter()
        .map(|x| match x {
            Value::Float(f) => *f,
            other => panic!("not a float: {other:?}"),
        })
        .collect()
}

/// Runs one matched block with the library on `bufs` (by root buffer).
fn run_library(s: &MatmulSpec, root: &Block, bufs: &mut kernel::vm::Buffers) {
    let name = |i: usize| root.refs[i].into.clone();
    let a = floats(&bufs[&name(s.a.buffer)]);
    let b = floats(&bufs[&name(s.b.buffer)]);
    let c = bufs.get_mut(&name(s.c.buffer)).expect("C's buffer");
    let mut cf = floats(c);
    match s.dtype {
        DType::F32 => {
            let narrow = |v: &[f64]| v.iter().map(|x| *x as f32).collect::<Vec<f32>>();
            let mut c32 = narrow(&cf);
            run(s, &narrow(&a), &narrow(&b), &mut c32).expect("run");
            cf = c32.into_iter().map(f64::from).collect();
        }
        DType::F64 => run(s, &a, &b, &mut cf).expect("run"),
        other => panic!("unexpected {other:?}"),
    }
    *c = cf.into_iter().map(Value::Float).collect();
}

/// Checks that exactly `matches` root children of the lowered def are
/// matmuls, then runs the def block by block, matched blocks with the
/// library and the others on the VM, and compares with the VM's run of the
/// whole def.
fn check(src: &str, def: &str, sizes: &[(&str, i64)], matches: usize) -> Vec<MatmulSpec> {
    let root = lower(src, def, sizes);
    let seed = 7;
    let want = kernel::vm::run(&root, inputs(&root, seed)).expect("vm");
    let mut bufs = inputs(&root, seed);
    let mut specs = Vec::new();
    for (i, st) in root.stmts.iter().enumerate() {
        let matched = match &st.kind {
            StmtKind::Block(b) => spec(b, &root),
            _ => None,
        };
        if let Some(s) = matched {
            run_library(&s, &root, &mut bufs);
            specs.push(s);
        } else {
            let mut one = root.clone();
            one.stmts = vec![root.stmts[i].clone()];
            bufs = kernel::vm::run(&one, bufs).expect("vm step");
        }
    }
    assert_eq!(
        specs.len(),
        matches,
        "{def} {sizes:?}: matched {specs:#?}\n{}",
        kernel::print_block(&root)
    );
    for r in &root.refs {
        let (got, want) = (floats(&bufs[&r.into]), floats(&want[&r.into]));
        assert_eq!(got.len(), want.len());
        for (j, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(
                (g - w).abs() <= 1e-4 * w.abs().max(1.0),
                "{def} {sizes:?}: {}[{j}] = {g}, the VM gives {w}",
                r.into
            );
        }
    }
    let mut marked = root.clone();
    assert_eq!(mark(&mut marked), matches);
    let tagged = children(&marked)
        .iter()
        .filter(|b| b.tags.contains("library") && b.tags.contains("matmul"))
        .count();
    assert_eq!(tagged, matches);
    // Tags change nothing the VM sees, and the passes leave library blocks
    // alone, so after the cpu pipeline they still match, with the same spec.
    let marked_run = kernel::vm::run(&marked, inputs(&root, seed)).expect("vm");
    assert!(root
        .refs
        .iter()
        .all(|r| marked_run[&r.into] == want[&r.into]));
    let passes = kernel::parse_pipeline(kernel::builtin_pipeline("cpu").expect("cpu pipeline"))
        .expect("pipeline");
    kernel::run_pipeline(
        &mut marked,
        &passes,
        &kernel::Target::generic(),
        &mut |_, _| {},
    )
    .expect("passes");
    let after: Vec<MatmulSpec> = children(&marked)
        .iter()
        .filter(|b| b.tags.contains("library"))
        .filter_map(|b| spec(b, &marked))
        .collect();
    assert_eq!(after, specs, "{def}: {}", kernel::print_block(&marked));
    specs
}

const ODD: [i64; 3] = [1, 7, 33];

#[test]
fn tmm_transposed_b() {
    let src = example("examples/paper/tmm.tc");
    for (m, k, n) in [(1, 1, 1), (7, 33, 5), (33, 7, 17), (2, 1, 33)] {
        let s = check(&src, "tmm", &[("M", m), ("K", k), ("N", n)], 1);
        let s = &s[0];
        assert_eq!((s.m, s.n, s.k), (m as u64, n as u64, k as u64));
        if m > 1 && n > 1 && k > 1 {
            // B(n, kk) read as K×N: rows are B's columns.
            assert_eq!((s.b.row_stride, s.b.col_stride), (1, k));
        }
    }
}

#[test]
fn tbmm_batched() {
    let src = example("examples/paper/tbmm.tc");
    for &x in &ODD {
        let sizes = [("B", 3), ("N", x), ("M", 33), ("K", 7)];
        let s = check(&src, "tbmm", &sizes, 1);
        assert_eq!(s[0].batch.len(), 1);
        assert_eq!(s[0].batch[0].extent, 3);
    }
    check(&src, "tbmm", &[("B", 1), ("N", 1), ("M", 1), ("K", 1)], 1);
}

#[test]
fn outer_product_mm_batches_interleaved_dims() {
    let src = example("examples/paper/outerProductMM.tc");
    let sizes = [("P", 2), ("Q", 7), ("R", 33), ("S", 3), ("T", 5)];
    let s = check(&src, "outerProductMM", &sizes, 1);
    // O(p, s, q, t): p and s do not nest with q and t, so they are batch
    // dimensions, with stride 0 in the operand they are absent from.
    let s = &s[0];
    assert_eq!((s.m, s.n, s.k), (7, 5, 33));
    let mut batch = s.batch.clone();
    batch.sort_by_key(|d| d.extent);
    assert_eq!(
        batch,
        vec![
            BatchDim {
                extent: 2,
                stride_a: 7 * 33,
                stride_b: 0,
                stride_c: 3 * 7 * 5
            },
            BatchDim {
                extent: 3,
                stride_a: 0,
                stride_b: 33 * 5,
                stride_c: 7 * 5
            },
        ]
    );
}

#[test]
fn mlp3_has_three_matmuls() {
    let src = example("examples/paper/mlp.tc");
    let sizes = [("B", 7), ("N", 33), ("O", 5), ("P", 1), ("Q", 9)];
    let specs = check(&src, "MLP3", &sizes, 3);
    assert!(specs.iter().all(|s| s.dtype == DType::F32));
    check(&src, "MLP1", &[("B", 3), ("M", 17), ("N", 33)], 1);
}

#[test]
fn matrix_vector_products() {
    let src = example("examples/paper/mv.tc");
    for &m in &ODD {
        let s = check(&src, "mv", &[("M", m), ("K", 33)], 1);
        assert_eq!(s[0].n, 1);
        check(&src, "mv1", &[("M", 33), ("K", m)], 1);
    }
}

#[test]
fn batch_dims_in_odd_places_and_collapsed_indices() {
    let src = "
def odd(float(K,B,M) A, float(N,K,B) Bt) -> (O) {
  O(m, b, n) +=! A(k, b, m) * Bt(n, k, b)
}
def collapsed(float(M1,M2,K1,K2) A, float(K1,K2,N) B) -> (C) {
  C(i1, i2, j) +=! A(i1, i2, k1, k2) * B(k1, k2, j)
}
def twobatch(float(B1,M,B2,K) A, float(B2,K,N,B1) B) -> (C) {
  C(b2, m, b1, n) +=! A(b1, m, b2, k) * B(b2, k, n, b1)
}
def mn_split(float(M1,K,M2) A, float(K,N) B) -> (C) {
  C(i1, j, i2) +=! A(i1, k, i2) * B(k, j)
}
";
    for &x in &ODD {
        let s = check(src, "odd", &[("K", 33), ("B", 3), ("M", x), ("N", 7)], 1);
        assert_eq!(s[0].batch.len(), 1);
        // A(k, b, m) read as M×K; a range-1 M leaves the row stride unused.
        assert_eq!(s[0].a.col_stride, 3 * x);
        if x > 1 {
            assert_eq!(s[0].a.row_stride, 1);
        }
    }
    let sizes = [("M1", 3), ("M2", 7), ("K1", 5), ("K2", 33), ("N", 9)];
    let s = check(src, "collapsed", &sizes, 1);
    assert_eq!((s[0].m, s[0].k, s[0].n), (21, 165, 9));
    assert!(s[0].batch.is_empty());
    let sizes = [("B1", 2), ("M", 7), ("B2", 3), ("K", 33), ("N", 5)];
    let s = check(src, "twobatch", &sizes, 1);
    assert_eq!(s[0].batch.len(), 2);
    // C(i1, j, i2): i1 and i2 do not nest in C, so one becomes a batch dim.
    let s = check(
        src,
        "mn_split",
        &[("M1", 3), ("K", 33), ("M2", 7), ("N", 5)],
        1,
    );
    assert_eq!((s[0].m, s[0].batch.len()), (7, 1));
}

#[test]
fn offsets_float64_and_operand_order() {
    let src = "
def shifted(float(M,K) A, float(K,N) B) -> (C) {
  C(i, j) +=! A(i + 2, k) * B(k, j + 1) where i in 0:M-2, j in 0:N-1
}
def pinned(float(M,K,3) A, float(K,N) B) -> (C) {
  C(i, j) +=! A(i, k, 1) * B(k, j)
}
def dgemm(double(M,K) A, double(K,N) B) -> (C) {
  C(i, j) +=! A(i, k) * B(k, j)
}
def swapped(float(M,K) A, float(K,N) B) -> (C) {
  C(i, j) +=! B(k, j) * A(i, k)
}
def gram(float(M,K) A) -> (C) {
  C(i, j) +=! A(i, k) * A(j, k)
}
";
    let s = check(src, "shifted", &[("M", 9), ("K", 33), ("N", 8)], 1);
    assert_eq!((s[0].a.offset, s[0].b.offset), (2 * 33, 1));
    check(src, "pinned", &[("M", 7), ("K", 33), ("N", 5)], 1);
    let s = check(src, "dgemm", &[("M", 7), ("K", 33), ("N", 1)], 1);
    assert_eq!(s[0].dtype, DType::F64);
    check(src, "swapped", &[("M", 33), ("K", 7), ("N", 5)], 1);
    check(src, "gram", &[("M", 7), ("K", 33)], 1);
}

#[test]
fn look_alikes_are_refused() {
    let src = "
def conv(float(M) I, float(N) K) -> (O) {
  O(i) +=! I(i + x) * K(x)
}
def elementwise(float(M) A, float(M) B) -> (C) {
  C(i) = 0
  C(i) += A(i) * B(i)
}
def elementwise_assign(float(M) A, float(M) B) -> (C) {
  C(i) = A(i) * B(i)
}
def maxmm(float(M,K) A, float(K,N) B) -> (C) {
  C(i, j) max=! A(i, k) * B(k, j)
}
def guarded(float(M,K) A, float(K) x) -> (C) {
  C(i) +=! A(i - 1, k) * x(k) where i in 0:M
}
def diagonal(float(K,K,N) B, float(M,K) A) -> (C) {
  C(i, j) +=! A(i, k) * B(k, k, j)
}
def lonely(float(M,K) A, float(K) x) -> (C) {
  C(i, j) +=! A(i, k) * x(k) where j in 0:3
}
def outer(float(M) a, float(N) b) -> (C) {
  C(i, j) +=! a(i) * b(j)
}
def scaled(float(M,K) A, float(K,N) B) -> (C) {
  C(i, j) +=! 2.0 * A(i, k) * B(k, j)
}
def strided(float(M,K) A, float(K,N) B) -> (C) {
  C(i, j) +=! A(i, 2 * k) * B(k, j) where k in 0:K/2
}
def widened(float(M,K) A, float(K,N) B) -> (C) {
  C(i, j) +=! double(A(i, k)) * double(B(k, j))
}
";
    let sizes = [("M", 6), ("N", 3), ("K", 4)];
    for def in [
        "conv",
        "elementwise",
        "elementwise_assign",
        "maxmm",
        "guarded",
        "diagonal",
        "lonely",
        "outer",
        "scaled",
        "strided",
        "widened",
    ] {
        let mut root = lower(src, def, &sizes);
        assert_eq!(mark(&mut root), 0, "{def}:\n{}", kernel::print_block(&root));
    }
}

#[test]
fn constraints_and_passed_indices_are_refused() {
    let root = lower(
        &example("examples/paper/tmm.tc"),
        "tmm",
        &[("M", 3), ("K", 4), ("N", 5)],
    );
    let mm = children(&root)[1].clone();
    assert!(spec(&mm, &root).is_some());
    let mut constrained = mm.clone();
    constrained.constraints.push(Affine::index("m"));
    assert_eq!(spec(&constrained, &root), None);
    let mut extra = mm.clone();
    extra.stmts.insert(0, extra.stmts[0].clone());
    assert_eq!(spec(&extra, &root), None);
    let mut scaled = mm;
    scaled.refs[1].access[1] = Affine::term("kk", 2);
    assert_eq!(spec(&scaled, &root), None);
}

fn sgemm_spec(m: u64, n: u64, k: u64) -> MatmulSpec {
    MatmulSpec {
        dtype: DType::F32,
        m,
        n,
        k,
        batch: Vec::new(),
        a: Operand::new(0, 0, k as i64, 1),
        b: Operand::new(1, 0, n as i64, 1),
        c: Operand::new(2, 0, n as i64, 1),
    }
}

#[test]
fn run_checks_the_spec_against_its_slices() {
    let a = vec![1.0f32; 12];
    let b = vec![1.0f32; 20];
    let mut c = vec![0.0f32; 15];
    let ok = sgemm_spec(3, 5, 4);
    run(&ok, &a, &b, &mut c).expect("fits");
    assert!(c.iter().all(|&x| x == 4.0));
    // A slice too short, a negative reach, an overlapping C, a wrong type:
    // all refused with C untouched.
    assert!(run(&ok, &a[..11], &b, &mut c).is_err());
    let mut neg = ok.clone();
    neg.b.offset = -1;
    assert!(run(&neg, &a, &b, &mut c).is_err());
    let mut overlap = ok.clone();
    overlap.c.row_stride = 1;
    assert!(run(&overlap, &a, &b, &mut c).is_err());
    let mut batched = ok.clone();
    batched.batch.push(BatchDim {
        extent: 2,
        stride_a: 0,
        stride_b: 0,
        stride_c: 0,
    });
    assert!(run(&batched, &a, &b, &mut c).is_err());
    let mut long = ok.clone();
    long.k = 1000;
    long.a.col_stride = 0;
    long.b.row_stride = 0;
    assert!(run(&long, &a, &b, &mut c).is_err());
    let mut huge = ok.clone();
    huge.a.row_stride = i64::MAX;
    assert!(run(&huge, &a, &b, &mut c).is_err());
    let mut c64 = vec![0.0f64; 15];
    assert!(run(&ok, &[1.0f64; 12], &[1.0f64; 20], &mut c64).is_err());
    assert!(c.iter().all(|&x| x == 4.0));
    // Nothing to do is fine, whatever the slices.
    let none: [f32; 0] = [];
    run(&sgemm_spec(0, 5, 4), &none, &none, &mut []).expect("empty");
    run(&sgemm_spec(3, 5, 0), &none, &none, &mut []).expect("empty");
}

#[test]
fn many_small_and_few_large_batches_agree() {
    // Enough batch points to run them in parallel, and larger matmuls
    // split into chunks of C's columns (130x129: two chunks of 64 or 65)
    // or, with more rows than columns, of C's rows (300x70: four chunks):
    // all against loops.
    for (batch, m, n, k) in [
        (64u64, 7u64, 5u64, 33u64),
        (2, 130, 129, 131),
        (1, 300, 70, 90),
    ] {
        let (mi, ni, ki) = (m as i64, n as i64, k as i64);
        let spec = MatmulSpec {
            batch: vec![BatchDim {
                extent: batch,
                stride_a: mi * ki,
                stride_b: ki * ni,
                stride_c: mi * ni,
            }],
            ..sgemm_spec(m, n, k)
        };
        let a: Vec<f32> = random((batch * m * k) as usize, 1)
            .iter()
            .map(|x| *x as f32)
            .collect();
        let b: Vec<f32> = random((batch * k * n) as usize, 2)
            .iter()
            .map(|x| *x as f32)
            .collect();
        let mut c = vec![0.5f32; (batch * m * n) as usize];
        run(&spec, &a, &b, &mut c).expect("run");
        let (m, n, k) = (m as usize, n as usize, k as usize);
        for p in 0..batch as usize {
            for i in 0..m {
                for j in 0..n {
                    let want: f64 = 0.5
                        + (0..k)
                            .map(|l| {
                                f64::from(a[p * m * k + i * k + l])
                                    * f64::from(b[p * k * n + l * n + j])
                            })
                            .sum::<f64>();
                    let got = f64::from(c[p * m * n + i * n + j]);
                    assert!((got - want).abs() <= 1e-4 * want.abs().max(1.0));
                }
            }
        }
    }
}
