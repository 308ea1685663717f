//! Measures the `gemm` crate against `faer` on the shapes the runtime cares
//! about: a large sgemm (1024³, on one thread and on two) and the batched
//! transposed matmul of the TC paper's tbmm benchmark, (B, N, M, K) =
//! (500, 26, 72, 26), both with the batch spread over rayon threads and with
//! the batch run serially and each matmul given to the library's threads.
//!
//! Run with `cargo run --release -p runtime --example matmul_peak`. Prints
//! GFLOP/s, the median of several runs (each run long enough to time well).
//! This is a measurement tool, not a test: correctness is
//! `tests/matmul.rs`'s business.
//!
//! The faer numbers go through `runtime::matmul::run`, so they measure exactly
//! what the runtime does (checks and batch strategy included); gemm (a
//! dev-dependency kept for this comparison) is called directly on the same
//! slices with the same strategy, and faer directly once more with the
//! batch run serially and each small matmul spread over the threads, the
//! strategy `run` avoids for small matmuls.

#![allow(unsafe_code)]

use std::time::Instant;

use faer::{Accum, MatMut, MatRef, Par};
use gemm::Parallelism;
use ir::DType;
use rayon::prelude::*;
use runtime::matmul::{run, BatchDim, MatmulSpec, Operand};

/// Deterministic pseudo-random values in [-1, 1), so runs are comparable.
fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 23) as f32) - 1.0
        })
        .collect()
}

/// The median GFLOP/s of `runs` timings of `f`, each repeating it until at
/// least 0.2 s passed.
fn gflops(flops: f64, runs: usize, mut f: impl FnMut()) -> f64 {
    f();
    let mut rates: Vec<f64> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            let mut reps = 0u32;
            while reps == 0 || start.elapsed().as_secs_f64() < 0.2 {
                f();
                reps += 1;
            }
            flops * f64::from(reps) / start.elapsed().as_secs_f64() / 1e9
        })
        .collect();
    rates.sort_by(f64::total_cmp);
    rates[rates.len() / 2]
}

/// Row-major C(m×n) += A(m×k) · B(k×n).
fn sgemm_spec(m: u64, n: u64, k: u64) -> MatmulSpec {
    let (ni, ki) = (n as i64, k as i64);
    MatmulSpec {
        dtype: DType::F32,
        m,
        n,
        k,
        batch: Vec::new(),
        a: Operand::new(0, 0, ki, 1),
        b: Operand::new(1, 0, ni, 1),
        c: Operand::new(2, 0, ni, 1),
    }
}

/// Row-major C(m×n) += A(m×k) · B(k×n) with the gemm crate.
fn gemm_rows(m: usize, n: usize, k: usize, a: &[f32], b: &[f32], c: &mut [f32], par: Parallelism) {
    assert!(a.len() >= m * k && b.len() >= k * n && c.len() >= m * n);
    // SAFETY: the assertion above keeps every row-major element of the three
    // matrices inside its slice, and `c` is a unique borrow.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            c.as_mut_ptr(),
            1,
            n as isize,
            true,
            a.as_ptr(),
            1,
            k as isize,
            b.as_ptr(),
            1,
            n as isize,
            1.0,
            1.0,
            false,
            false,
            false,
            par,
        )
    }
}

/// Row-major Z(n×k) += X(n×m) · Y(k×m)ᵀ with the gemm crate, on one thread.
fn gemm_bt(n: usize, k: usize, m: usize, x: &[f32], y: &[f32], z: &mut [f32]) {
    assert!(x.len() >= n * m && y.len() >= k * m && z.len() >= n * k);
    // SAFETY: as in `gemm_rows`: the assertion bounds every element read or
    // written, and `z` is a unique borrow.
    unsafe {
        gemm::gemm(
            n,
            k,
            m,
            z.as_mut_ptr(),
            1,
            k as isize,
            true,
            x.as_ptr(),
            1,
            m as isize,
            y.as_ptr(),
            m as isize,
            1,
            1.0,
            1.0,
            false,
            false,
            false,
            Parallelism::None,
        )
    }
}

fn sgemm(threads: usize) {
    let s = 1024usize;
    let a = values(s * s, 1);
    let b = values(s * s, 2);
    let spec = sgemm_spec(s as u64, s as u64, s as u64);
    let flops = 2.0 * (s * s * s) as f64;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("a thread pool");
    let mut c1 = vec![0.0f32; s * s];
    let g = pool.install(|| gflops(flops, 5, || run(&spec, &a, &b, &mut c1).expect("run")));
    let par = if threads == 1 {
        Parallelism::None
    } else {
        Parallelism::Rayon(threads)
    };
    let mut c2 = vec![0.0f32; s * s];
    let direct = pool.install(|| gflops(flops, 5, || gemm_rows(s, s, s, &a, &b, &mut c2, par)));
    println!(
        "sgemm 1024^3, {threads} thread(s): faer (runtime::matmul::run) {g:.1} GFLOP/s, gemm {direct:.1} GFLOP/s"
    );
}

/// tbmm: Z(b,n,k) += X(b,n,m) * Y(b,k,m), so per batch point C = Z_b (N×K),
/// A = X_b (N×M), B = Y_bᵀ (M×K).
fn tbmm(threads: usize) {
    let (bb, n, m, k) = (500usize, 26usize, 72usize, 26usize);
    let x = values(bb * n * m, 3);
    let y = values(bb * k * m, 4);
    let flops = 2.0 * (bb * n * m * k) as f64;
    let spec = MatmulSpec {
        dtype: DType::F32,
        m: n as u64,
        n: k as u64,
        k: m as u64,
        batch: vec![BatchDim {
            extent: bb as u64,
            stride_a: (n * m) as i64,
            stride_b: (k * m) as i64,
            stride_c: (n * k) as i64,
        }],
        a: Operand::new(0, 0, m as i64, 1),
        b: Operand::new(1, 0, 1, m as i64),
        c: Operand::new(2, 0, k as i64, 1),
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("a thread pool");
    let mut z1 = vec![0.0f32; bb * n * k];
    let g = pool.install(|| gflops(flops, 7, || run(&spec, &x, &y, &mut z1).expect("run")));
    let mut z2 = vec![0.0f32; bb * n * k];
    let direct = pool.install(|| {
        gflops(flops, 7, || {
            z2.par_chunks_mut(n * k)
                .zip(x.par_chunks(n * m))
                .zip(y.par_chunks(k * m))
                .for_each(|((z, x), y)| gemm_bt(n, k, m, x, y, z))
        })
    });
    let mut z3 = vec![0.0f32; bb * n * k];
    let f_inner = pool.install(|| {
        gflops(flops, 7, || {
            for ((z, x), y) in z3
                .chunks_mut(n * k)
                .zip(x.chunks(n * m))
                .zip(y.chunks(k * m))
            {
                let lhs = MatRef::from_row_major_slice(x, n, m);
                let rhs = MatRef::from_row_major_slice(y, k, m).transpose();
                let dst = MatMut::from_row_major_slice_mut(z, n, k);
                faer::linalg::matmul::matmul(dst, Accum::Add, lhs, rhs, 1.0, Par::rayon(threads));
            }
        })
    });
    println!(
        "tbmm (500,26,72,26), {threads} thread(s): faer (runtime::matmul::run, batch-parallel) {g:.1} GFLOP/s, \
         gemm batch-parallel {direct:.1} GFLOP/s, faer library-parallel {f_inner:.1} GFLOP/s"
    );
}

/// The TC paper's tmm, C(m,n) += A(m,k) * B(n,k) at (M, K, N) = (128,
/// 1024, 1024): a short, wide product with B transposed.
fn tmm(threads: usize) {
    let (m, k, n) = (128usize, 1024usize, 1024usize);
    let a = values(m * k, 5);
    let b = values(n * k, 6);
    let spec = MatmulSpec {
        dtype: DType::F32,
        m: m as u64,
        n: n as u64,
        k: k as u64,
        batch: Vec::new(),
        a: Operand::new(0, 0, k as i64, 1),
        b: Operand::new(1, 0, 1, k as i64),
        c: Operand::new(2, 0, n as i64, 1),
    };
    let flops = 2.0 * (m * n * k) as f64;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("a thread pool");
    let mut c1 = vec![0.0f32; m * n];
    let g = pool.install(|| gflops(flops, 5, || run(&spec, &a, &b, &mut c1).expect("run")));
    let par = if threads == 1 {
        Parallelism::None
    } else {
        Parallelism::Rayon(threads)
    };
    let mut c2 = vec![0.0f32; m * n];
    // gemm_bt computes Z(n×k) += X(n×m)·Y(k×m)ᵀ: here C(m×n) += A(m×k)·B(n×k)ᵀ.
    let direct = pool.install(|| {
        gflops(flops, 5, || {
            assert!(a.len() >= m * k && b.len() >= n * k && c2.len() >= m * n);
            // SAFETY: the assertion bounds every element read or written,
            // and `c2` is a unique borrow.
            unsafe {
                gemm::gemm(
                    m,
                    n,
                    k,
                    c2.as_mut_ptr(),
                    1,
                    n as isize,
                    true,
                    a.as_ptr(),
                    1,
                    k as isize,
                    b.as_ptr(),
                    k as isize,
                    1,
                    1.0,
                    1.0,
                    false,
                    false,
                    false,
                    par,
                )
            }
        })
    });
    println!(
        "tmm (128, 1024, 1024), {threads} thread(s): faer (runtime::matmul::run) {g:.1} GFLOP/s, gemm {direct:.1} GFLOP/s"
    );
}

fn main() {
    tmm(1);
    tmm(2);
    sgemm(1);
    sgemm(2);
    tbmm(1);
    tbmm(2);
    println!(
        "runtime::matmul::peak_gflops(): {:.1} GFLOP/s",
        runtime::matmul::peak_gflops()
    );
}
