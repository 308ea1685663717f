//! Output layouts (`ssa::layout`): each case is a def in TC, its
//! statements after reordering (as printed) with the permutation of each
//! reordered output, and the interpreter's outputs of the reordered
//! program, which, viewed back in the declared order, must equal the
//! original's on the same inputs. The expected statements are derived by
//! hand: the output's indices and ranges follow the order in which its
//! largest read walks them.

mod common;

use std::collections::HashMap;

use interp::{Arg, Mode, Tensor};
use ir::DType;

/// Reorders the outputs of the one def of `src`, compares its statements
/// with `expect` (one per line) and the permutations with `perms`, then
/// runs both programs on the same inputs.
fn check(src: &str, expect: &str, perms: &[(&str, &[usize])]) {
    let checked = tc::check_source(src).unwrap_or_else(|d| panic!("{d:?}"));
    let original = checked.program;
    let mut reordered = original.clone();
    let got_perms = ssa::layout::permute_outputs(&mut reordered.defs[0], &HashMap::new());
    let def = &reordered.defs[0];
    ir::verify_program(&reordered).unwrap_or_else(|e| panic!("{e:?}"));
    common::assert_statements(def, expect, "the reordered statements");
    let want_perms: Vec<(String, Vec<usize>)> = perms
        .iter()
        .map(|(t, p)| (t.to_string(), p.to_vec()))
        .collect();
    let got_perms: Vec<(String, Vec<usize>)> =
        got_perms.into_iter().map(|p| (p.tensor, p.perm)).collect();
    assert_eq!(got_perms, want_perms, "the permutations");
    let mut args = HashMap::new();
    for (k, t) in original.defs[0].params.iter().enumerate() {
        let decl = original.defs[0]
            .tensor(t.name())
            .expect("a tensor parameter");
        let shape: Vec<usize> = decl
            .shape
            .iter()
            .map(|d| d.as_const().expect("constant") as usize)
            .collect();
        let n: usize = shape.iter().product();
        // Positive, so that square roots of products are numbers.
        let values: Vec<f64> = (0..n)
            .map(|i| ((i + 7 * k) as f64 * 0.37).sin() * 3.0 + 3.5)
            .collect();
        args.insert(
            t.name().to_string(),
            Arg::Tensor(Tensor::from_f64(DType::F32, &shape, values)),
        );
    }
    let run = |p: &ir::Program| {
        interp::run(p, &p.defs[0].name, &args, &HashMap::new(), Mode::Real).expect("runs")
    };
    let before = run(&original);
    let after = run(&reordered);
    for ((name, want), (_, got)) in before.iter().zip(&after) {
        let got = match perms.iter().find(|(t, _)| t == name) {
            Some((_, perm)) => {
                let mut declared = vec![0; perm.len()];
                for (k, &d) in perm.iter().enumerate() {
                    declared[d] = k;
                }
                got.permute(&declared).expect("a permutation")
            }
            None => got.clone(),
        };
        assert_eq!(got.shape(), want.shape(), "`{name}`'s shape");
        assert_eq!(got.to_f64_vec(), want.to_f64_vec(), "`{name}`'s values");
    }
}

#[test]
fn a_transposing_view_is_computed_through_in_the_order_it_walks() {
    // FCOS's scores: a channels-first map read channels-last, with the
    // spatial dimensions merged, times a per-location factor.
    check(
        "def f(float32(2, 3, 4) a, float32(3, 4) g) -> (float32(12, 2) o) {
           v(p, k) = a(k, p / 4, p % 4) where p in 0:12, k in 0:2
           o(p, k) = sqrt(sigmoid(v(p, k)) * g(p / 4, p % 4)) where p in 0:12, k in 0:2
         }",
        "o(k, p) = sqrt(sigmoid(a(k, p / 4, p % 4)) * g(p / 4, p % 4)) where k in 0:2, p in 0:12",
        &[("o", &[1, 0])],
    );
}

#[test]
fn dimensions_of_one_value_go_first() {
    check(
        "def f(float32(1, 3, 5) a) -> (float32(1, 5, 3) o) {
           o(b, x, c) = a(b, c, x) * 2.0 where b in 0:1, x in 0:5, c in 0:3
         }",
        "o(b, c, x) = a(b, c, x) * 2.0 where b in 0:1, c in 0:3, x in 0:5",
        &[("o", &[0, 2, 1])],
    );
}

#[test]
fn an_output_read_in_its_own_order_stays() {
    check(
        "def f(float32(3, 5) a) -> (float32(3, 5) o) {
           o(i, j) = exp(a(i, j)) where i in 0:3, j in 0:5
         }",
        "o(i, j) = exp(a(i, j)) where i in 0:3, j in 0:5",
        &[],
    );
}

#[test]
fn two_reads_as_large_in_different_orders_stay() {
    // Whichever order the output takes, one of the two walks across rows.
    check(
        "def f(float32(3, 5) a, float32(5, 3) b) -> (float32(5, 3) o) {
           o(i, j) = a(j, i) + b(i, j) where i in 0:5, j in 0:3
         }",
        "o(i, j) = a(j, i) + b(i, j) where i in 0:5, j in 0:3",
        &[],
    );
}

#[test]
fn a_broadcast_read_larger_than_nothing_stays() {
    // The transposed read is smaller than the output: the output's own
    // rows are the traffic that matters.
    check(
        "def f(float32(3, 5) a) -> (float32(5, 3, 4) o) {
           o(i, j, k) = a(j, i) + float32(k) where i in 0:5, j in 0:3, k in 0:4
         }",
        "o(i, j, k) = a(j, i) + float32(k) where i in 0:5, j in 0:3, k in 0:4",
        &[],
    );
}

#[test]
fn a_view_another_statement_also_reads_stays() {
    check(
        "def f(float32(3, 5) a) -> (float32(5, 3) o, float32(5, 3) w) {
           v(i, j) = a(j, i) where i in 0:5, j in 0:3
           o(i, j) = exp(v(i, j)) where i in 0:5, j in 0:3
           w(i, j) = v(i, j) * 2.0 where i in 0:5, j in 0:3
         }",
        "v(i, j) = a(j, i) where i in 0:5, j in 0:3
         o(i, j) = exp(v(i, j)) where i in 0:5, j in 0:3
         w(i, j) = v(i, j) * 2.0 where i in 0:5, j in 0:3",
        &[],
    );
}
