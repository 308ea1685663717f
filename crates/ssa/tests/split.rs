//! Index-set splitting (`ssa::split`): each case is a def in TC, the
//! statements the split makes of it (as printed), and the interpreter's
//! outputs of the split program, which must equal the original's on the
//! same inputs. The expected statements are derived by hand: each piece
//! is the body over its sub-range with the conditions that range decides
//! folded.

mod common;

use std::collections::HashMap;

use interp::{Arg, Mode, Tensor};
use ir::DType;

/// Splits the one def of `src` and compares its statements with `expect`
/// (one per line), then runs both programs on the same input `a`.
fn check(src: &str, expect: &str) {
    let checked = tc::check_source(src).unwrap_or_else(|d| panic!("{d:?}"));
    let original = checked.program;
    let mut split = original.clone();
    ssa::split::split_selects(&mut split.defs[0].stmts);
    let def = &split.defs[0];
    common::assert_statements(def, expect, "the split statements");
    let shape: Vec<usize> = original.defs[0].tensors[0]
        .shape
        .iter()
        .map(|d| d.as_const().expect("constant") as usize)
        .collect();
    let n: usize = shape.iter().product();
    let values: Vec<f64> = (0..n).map(|k| (k as f64 * 0.37).sin() * 3.0).collect();
    let args: HashMap<String, Arg> = [(
        "a".to_string(),
        Arg::Tensor(Tensor::from_f64(DType::F32, &shape, values)),
    )]
    .into();
    let run = |p: &ir::Program| {
        interp::run(p, &p.defs[0].name, &args, &HashMap::new(), Mode::Real).expect("runs")
    };
    assert_eq!(run(&split), run(&original), "the split program's outputs");
}

#[test]
fn a_slice_update_splits_into_its_two_sides() {
    // SSD's boxes: the last two columns are computed from the first two.
    check(
        "def f(float32(3, 4) a) -> (float32(3, 4) o) {
           o(i, j) = j >= 2 ? exp(a(i, j)) + a(i, j - 2) : a(i, j) * 2.0 where i in 0:3, j in 0:4
         }",
        "o(i, j) = a(i, j) * 2.0 where i in 0:3, j in 0:2
         o(i, j) = exp(a(i, j)) + a(i, j - 2) where i in 0:3, j in 2:4",
    );
}

#[test]
fn an_equality_splits_into_three_pieces() {
    // normalize's channel swap: channel 0 from channel 2 and back.
    check(
        "def f(float32(3, 5) a) -> (float32(3, 5) o) {
           o(c, x) = c == 0 ? a(2, x) : c == 2 ? a(0, x) : a(c, x) where c in 0:3, x in 0:5
         }",
        "o(c, x) = a(2, x) where c in 0:1, x in 0:5
         o(c, x) = a(c, x) where c in 1:2, x in 0:5
         o(c, x) = a(0, x) where c in 2:3, x in 0:5",
    );
}

#[test]
fn conditions_no_piece_decides_stay_one_statement() {
    // A parity test is decided by no sub-range; the cut at 3 alone would
    // leave every piece with its select.
    check(
        "def f(float32(6) a) -> (float32(6) o) {
           o(i) = i < 3 && i % 2 == 0 ? a(i) : 0.0 where i in 0:6
         }",
        "o(i) = i < 3 && i % 2 == 0 ? a(i) : 0.0 where i in 0:6",
    );
}

#[test]
fn more_than_four_pieces_stay_one_statement() {
    check(
        "def f(float32(8) a) -> (float32(8) o) {
           o(i) = i == 1 ? a(0) : i == 3 ? a(2) : i == 5 ? a(4) : a(i) where i in 0:8
         }",
        "o(i) = i == 1 ? a(0) : i == 3 ? a(2) : i == 5 ? a(4) : a(i) where i in 0:8",
    );
}
