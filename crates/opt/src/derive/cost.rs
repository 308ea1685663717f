//! The analytic cost the derivation search ranks complete states by,
//! before the best few are measured: OLLIE's split of a program into
//! compute-bound predefined operators and memory-bound eOperators, timed
//! as such.
//!
//! A matched matmul runs at the library's rate, a matched convolution at
//! the generated convolution's, an eOperator at the larger of its
//! arithmetic at the scalar rate and its memory traffic at the machine's
//! bandwidth; a statement that reads only inputs known at load (weights)
//! and what is computed from them alone costs nothing, since a loaded
//! program computes it once. Requires a complete state. Guarantees a
//! finite, non-negative estimate; it only ranks, the measurement decides.

use std::collections::HashSet;

use ir::Expr;

use super::state::{range, Operator, State, Status};

/// The machine's rates the estimate uses.
#[derive(Clone, Copy, Debug)]
pub struct Rates {
    /// The matmul library's float32 rate, in FLOP/s.
    pub matmul: f64,
    /// Generated convolutions' rate, in FLOP/s.
    pub conv: f64,
    /// Generated elementwise code's rate, in FLOP/s.
    pub scalar: f64,
    /// Memory bandwidth, in bytes/s.
    pub bandwidth: f64,
    /// The cost of one more kernel, in seconds.
    pub launch: f64,
}

impl Default for Rates {
    /// This machine's class: two AVX-512 cores. The compute rates are
    /// those measured with two threads (`tessera bench`: the machine's
    /// measured matmul peak, 153 GFLOP/s; the channel-blocked 3x3 and 5x5
    /// convolutions, 131 to 133 GFLOP/s), not the cores' nominal peak:
    /// a Winograd program trades convolution FLOPs for matmul FLOPs and
    /// memory traffic, so the rates must compare as measured.
    fn default() -> Rates {
        Rates {
            matmul: 150e9,
            conv: 130e9,
            scalar: 30e9,
            bandwidth: 15e9,
            launch: 2e-6,
        }
    }
}

/// The estimated seconds of a run of `state`'s program, inputs in
/// `constants` known at load.
pub fn seconds(state: &State, constants: &[String], rates: &Rates) -> f64 {
    let at_load = at_load(state, constants);
    let mut total = 0.0;
    for k in 0..state.statements() {
        let c = state.comp(k);
        if at_load.contains(&c.tensor) {
            continue;
        }
        let points: f64 = c
            .ranges
            .iter()
            .filter_map(|r| range(c, &r.name))
            .map(|(lo, hi)| (hi - lo).max(0) as f64)
            .product();
        let outputs: f64 = c
            .indices
            .iter()
            .filter_map(|n| range(c, n))
            .map(|(lo, hi)| (hi - lo).max(0) as f64)
            .product();
        let ops = operations(&c.body).max(1) as f64;
        let flops = points * ops;
        let elem = state.dtype(&c.tensor).map_or(4, |t| t.bits().div_ceil(8)) as f64;
        let read_bytes: f64 = c
            .body
            .reads()
            .iter()
            .map(|(t, _)| {
                let size: f64 = state
                    .shape(t)
                    .map_or(1.0, |s| s.iter().map(|&d| d as f64).product());
                size.min(points) * elem
            })
            .sum();
        let memory = (read_bytes + 2.0 * outputs * elem) / rates.bandwidth;
        total += rates.launch
            + match state.status[k] {
                Status::Operator(Operator::Matmul) => (flops / rates.matmul).max(memory),
                Status::Operator(Operator::Conv) => (flops / rates.conv).max(memory),
                // Generated reductions vectorize along their innermost
                // index, at about half a blocked convolution's rate.
                Status::Operator(Operator::ConvTranspose | Operator::G2bmm | Operator::Gbmm) => {
                    (flops / (rates.conv / 2.0)).max(memory)
                }
                Status::Operator(Operator::Elementwise) | Status::EOperator | Status::Open => {
                    (flops / rates.scalar).max(memory)
                }
            };
    }
    total
}

/// The tensors computed from `constants` alone (or from nothing).
pub fn at_load(state: &State, constants: &[String]) -> HashSet<String> {
    let mut known: HashSet<String> = constants.iter().cloned().collect();
    for k in 0..state.statements() {
        let c = state.comp(k);
        // A temporary without inputs (a table of constants, such as a
        // Winograd transform's) is computed at load as well.
        let reads = c.body.reads();
        if reads.iter().all(|(t, _)| known.contains(*t)) && state.is_temp(&c.tensor) {
            known.insert(c.tensor.clone());
        }
    }
    known.retain(|t| !constants.contains(t));
    known
}

/// The arithmetic operations of a body's value (subscripts are not
/// counted), plus the reduction's.
fn operations(e: &Expr) -> usize {
    match e {
        Expr::Read(..) | Expr::Lit(..) | Expr::Iter(_) | Expr::Sym(_) | Expr::Local(_) => 1,
        Expr::Cast(_, a) => operations(a),
        Expr::Unary(_, a) => 1 + operations(a),
        Expr::Binary(_, a, b) => operations(a) + operations(b),
        Expr::Select(c, a, b) => operations(c) + operations(a).max(operations(b)),
        Expr::Call(_, args) => 1 + args.iter().map(operations).sum::<usize>(),
    }
}
