//! Property tests: the interpreter against native arithmetic and against
//! itself across modes.

mod common;

use std::collections::HashMap;

use common::*;
use interp::{Mode, Tensor, P};
use ir::{BinOp, DType, Expr, Reduction};
use proptest::prelude::*;

fn elementwise(op: BinOp, t: DType) -> ir::Program {
    program(vec![DefBuilder::new("ew")
        .input("A", t, &["N"])
        .input("B", t, &["N"])
        .output("C", t, &["N"])
        .comp(comp(
            "C",
            &["i"],
            Reduction::Assign,
            false,
            bin(op, at("A", &["i"]), at("B", &["i"])),
            vec![upto("i", "N")],
        ))
        .build()])
}

/// `C(i,j) +=! A(i,k+1) * B(k,j) - A(i,k)`: a polynomial with a skipped
/// boundary, over int64.
fn shifted_matmul() -> ir::Program {
    let a_next = read("A", vec![it("i"), add(it("k"), Expr::int(1))]);
    program(vec![DefBuilder::new("mm")
        .input("A", DType::I64, &["M", "K"])
        .input("B", DType::I64, &["K", "N"])
        .output("C", DType::I64, &["M", "N"])
        .comp(comp(
            "C",
            &["i", "j"],
            Reduction::Add,
            true,
            sub(mul(a_next, at("B", &["k", "j"])), at("A", &["i", "k"])),
            vec![upto("i", "M"), upto("j", "N"), upto("k", "K")],
        ))
        .build()])
}

/// A native float32 operation.
type NativeOp = fn(f32, f32) -> f32;

fn ints(t: &Tensor) -> Vec<i64> {
    assert!(!t.dtype().is_float(), "integers expected");
    t.to_i64_vec()
}

proptest! {
    /// Computing in f64 and rounding once gives IEEE float32 exactly.
    #[test]
    fn float32_operations_match_native_f32(xs in prop::collection::vec((any::<f32>(), any::<f32>()), 1..20)) {
        let n = xs.len();
        let a = Tensor::from_f64(DType::F32, &[n], xs.iter().map(|p| f64::from(p.0)).collect());
        let b = Tensor::from_f64(DType::F32, &[n], xs.iter().map(|p| f64::from(p.1)).collect());
        let ops: [(BinOp, NativeOp); 4] =
            [(BinOp::Add, |x, y| x + y), (BinOp::Sub, |x, y| x - y), (BinOp::Mul, |x, y| x * y), (BinOp::Div, |x, y| x / y)];
        for (op, native) in ops {
            let c = only_output(run_real(&elementwise(op, DType::F32), &tensor_args(&[("A", &a), ("B", &b)])));
            for (got, (x, y)) in c.to_f64_vec().into_iter().zip(&xs) {
                let want = native(*x, *y);
                prop_assert!(got.to_bits() == f64::from(want).to_bits() || (got.is_nan() && want.is_nan()),
                    "{x} {} {y}: {got} != {want}", op.symbol());
            }
        }
    }

    /// Integer `/` and `%` are Python's floor operations, checked in i128.
    #[test]
    fn int32_division_is_floored(xs in prop::collection::vec((any::<i32>(), any::<i32>().prop_filter("nonzero", |d| *d != 0)), 1..20)) {
        let n = xs.len();
        let a = Tensor::from_i64(DType::I32, &[n], xs.iter().map(|p| i64::from(p.0)).collect());
        let b = Tensor::from_i64(DType::I32, &[n], xs.iter().map(|p| i64::from(p.1)).collect());
        let q = only_output(run_real(&elementwise(BinOp::Div, DType::I32), &tensor_args(&[("A", &a), ("B", &b)])));
        let r = only_output(run_real(&elementwise(BinOp::Mod, DType::I32), &tensor_args(&[("A", &a), ("B", &b)])));
        for ((q, r), (x, y)) in ints(&q).into_iter().zip(ints(&r)).zip(&xs) {
            let (x, y) = (i128::from(*x), i128::from(*y));
            let fq = (x as f64 / y as f64).floor() as i128;
            // The one quotient that overflows int32 wraps.
            prop_assert_eq!(q, fq as i32 as i64);
            prop_assert_eq!(i128::from(r), x - y * fq);
            prop_assert!(r == 0 || (r < 0) == (y < 0));
        }
    }

    /// On integers small enough not to wrap, real mode and mod-p mode
    /// compute the same polynomial, skipped points included.
    #[test]
    fn real_and_mod_p_agree_on_integer_polynomials(
        (m, k, n) in (1usize..5, 1usize..6, 1usize..5),
        seed in any::<u64>(),
    ) {
        let p = shifted_matmul();
        let a = Tensor::random(DType::I64, &[m, k], seed);
        let b = Tensor::random(DType::I64, &[k, n], seed ^ 1);
        // Make some values negative so that residues of negatives are used.
        let mut v = a.to_i64_vec();
        v.iter_mut().step_by(2).for_each(|x| *x = -*x * 1000);
        let a = Tensor::from_i64(DType::I64, &[m, k], v);
        let real = only_output(run_real(&p, &tensor_args(&[("A", &a), ("B", &b)])));
        let residues = |t: &Tensor| Tensor::from_i64(DType::I64, t.shape(), ints(t).iter().map(|x| x.rem_euclid(P as i64)).collect());
        let (ra, rb) = (residues(&a), residues(&b));
        let modp = only_output(interp::run(&p, "mm", &tensor_args(&[("A", &ra), ("B", &rb)]), &HashMap::new(), Mode::ModP));
        prop_assert_eq!(ints(&residues(&real)), ints(&modp));
    }
}
