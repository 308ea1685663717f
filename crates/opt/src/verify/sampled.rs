//! The floating-point test at sampled points, for programs that are no
//! polynomial and too large to interpret whole.
//!
//! Both defs are compiled as for the exact test, with what is no
//! polynomial (`fmax`, `exp`, comparisons of tensor values, `max=`
//! reductions) kept as floating-point operations (`graph::build` with
//! `real`). Box propagation splits every output as the exact test does,
//! and every box intersection is tested at `region::points` (its corners,
//! Theorem 1's points, every element of a small box) and
//! [`EXTRA_POINTS`] more random points in each of several draws (in an
//! output of many boxes, at one random point in one of the draws): lazily in
//! `f64`, computing only what those points read (`eval.rs`), on inputs
//! uniform in `[-1, 1)` as the whole comparison's. Values agree within the
//! whole comparison's tolerance, relative to the largest magnitude among
//! the output's tested values.
//!
//! This is weaker than comparing every element: a difference confined to
//! a few elements of a large box passes unless a point falls on it. The
//! boxes are where both programs' element expressions change shape, so
//! a structural difference (a boundary handled differently, a window
//! shifted) is at box corners, which are always tested; what sampling can
//! miss is a value-dependent difference at a few interior elements.
//!
//! Requires: graphs built with `real` from defs with the same signature
//! and float parameters. Guarantees: never panics; the boxes reported as
//! differing are whole box intersections where some tested point differs.

use super::eval::{mix, Evaluator};
use super::float::agree;
use super::graph::Graph;
use super::region::{self, merge, Region};
use super::{in_time, offset, trial_seed, Options};

/// Random points tested in each box besides `region::points`, when an
/// output has at most [`FEW_BOXES`] boxes.
pub(crate) const EXTRA_POINTS: usize = 8;

/// Outputs split into more boxes than this (a stride or an interleave
/// splits at every other element) are tested at one random point per box,
/// each box in one draw (the draws take turns): thousands of boxes
/// already spread the points over the output, and each point may cost a
/// convolution's sum.
pub(crate) const FEW_BOXES: usize = 64;

/// What the test found.
pub(crate) struct Sampled {
    /// The merged boxes where some tested point differs.
    pub differ: Vec<Region>,
    /// Box intersections, those tested, and points tested over all
    /// draws, all outputs.
    pub boxes: usize,
    pub tested: usize,
    pub points: usize,
}

/// The most boxes of one output this test takes: each costs at least one
/// point, and a point may cost a convolution's sum.
const MAX_BOXES: usize = 1 << 14;

/// The most comprehension points both programs may evaluate in one draw
/// for the boxes of outputs of many boxes, beyond their first
/// [`MANY_BOXES_MIN`]: the boxes are taken in a seeded random order, so
/// those tested spread over the output. A point of a convolution computed
/// by Winograd's algorithm costs its products' sums over the channels and
/// their transformed filters, some 2 x 10^5 points where the direct
/// convolution's costs 4608 (CSRNet's dilated 512-channel layers: 784
/// boxes each, 13 s per layer in the reference evaluator when every box
/// was tested; a search's final proof is meant to take seconds).
const MANY_BOXES_WORK: u64 = 600_000;

/// The boxes of outputs of many boxes tested in each draw whatever their
/// work.
const MANY_BOXES_MIN: usize = 4;

/// The box intersections to test, each with its output.
pub(crate) type Plan = Vec<(usize, Vec<(i64, i64)>)>;

/// The boxes of graphs `ga` and `gb` to test; `None` when an output has
/// more than [`MAX_BOXES`].
pub(crate) fn plan(ga: &Graph, gb: &Graph) -> Option<Plan> {
    let (sa, sb) = (super::boxes::propagate(ga), super::boxes::propagate(gb));
    let mut tests = Vec::new();
    for (k, (&oa, &ob)) in ga.outputs.iter().zip(&gb.outputs).enumerate() {
        let grid = region::union(&sa[oa], &sb[ob]);
        if region::count(&grid) > MAX_BOXES {
            return None;
        }
        tests.extend(region::boxes(&grid).into_iter().map(|b| (k, b)));
    }
    Some(tests)
}

/// Tests graphs `ga` and `gb` on the boxes of `plan` in `draws` draws;
/// `tolerances` per output.
pub(crate) fn test(
    ga: &Graph,
    gb: &Graph,
    tests: &Plan,
    tolerances: &[f64],
    draws: usize,
    options: &Options,
) -> Result<Sampled, String> {
    let mut boxes = vec![0; tolerances.len()];
    for (k, _) in tests {
        boxes[*k] += 1;
    }
    // Every tested value, by output: the box it is in, both programs'.
    let mut values: Vec<Vec<(usize, f64, f64)>> = vec![Vec::new(); tolerances.len()];
    let mut points = 0;
    let mut tested_boxes = vec![false; tests.len()];
    let order = shuffled(tests.len(), options.seed);
    for draw in 0..draws {
        let seed = trial_seed(options.seed, draw);
        let mut ea: Evaluator<f64> = Evaluator::new(ga, seed);
        let mut eb: Evaluator<f64> = Evaluator::new(gb, seed);
        let mut many = 0;
        for (j, &t) in order.iter().enumerate() {
            let (k, b) = &tests[t];
            in_time(options)?;
            let (oa, ob) = (ga.outputs[*k], gb.outputs[*k]);
            let strides = &ga.nodes[oa].strides;
            let salt = seed ^ t as u64;
            let tested = if boxes[*k] <= FEW_BOXES {
                let mut p = region::points(b, salt);
                if region::size(b) > p.len() {
                    p.extend(region::random_points(b, !salt, EXTRA_POINTS));
                }
                p
            } else if j % draws == draw
                && (many < MANY_BOXES_MIN || ea.work() + eb.work() < MANY_BOXES_WORK)
            {
                many += 1;
                region::random_points(b, salt, 1)
            } else {
                continue;
            };
            tested_boxes[t] = true;
            for p in tested {
                let flat = offset(&p, strides);
                points += 1;
                values[*k].push((t, ea.value(oa, flat)?, eb.value(ob, flat)?));
            }
        }
    }
    let mut differ_at = vec![false; tests.len()];
    for (k, vs) in values.iter().enumerate() {
        let scale = vs
            .iter()
            .map(|v| v.1.abs())
            .filter(|a| a.is_finite())
            .fold(0.0, f64::max);
        for &(t, a, b) in vs {
            if !agree(a, b, tolerances[k], scale) {
                differ_at[t] = true;
            }
        }
    }
    let differ = tests
        .iter()
        .zip(&differ_at)
        .filter(|(_, &d)| d)
        .map(|((k, b), _)| Region {
            output: *k,
            ranges: b
                .iter()
                .map(|&(lo, hi)| (lo as usize, hi as usize))
                .collect(),
        })
        .collect();
    Ok(Sampled {
        differ: merge(differ),
        boxes: tests.len(),
        tested: tested_boxes.iter().filter(|&&t| t).count(),
        points,
    })
}

/// A seeded random order of `0..n` (Fisher-Yates).
fn shuffled(n: usize, seed: u64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let r = mix(seed ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        order.swap(i, (r % (i as u64 + 1)) as usize);
    }
    order
}
