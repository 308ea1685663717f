//! The equivalence verifier (PET §5): do two defs with the same signature
//! compute the same outputs, and where do they not?
//!
//! Multi-linear programs (more generally, programs whose bodies are
//! polynomials in their inputs, with `+` reductions) are tested exactly, as
//! PET does:
//!
//! 1. both defs become graphs of tensor versions for the given sizes
//!    (`graph.rs`, `compile.rs`);
//! 2. box propagation (`boxes.rs`) splits every output into boxes inside
//!    which its elements are polynomials of one shape, and the two
//!    programs' boxes are intersected (`region.rs`);
//! 3. every box intersection is tested, in both programs, over Z_p,
//!    p = 2^31 - 1, on random inputs (`eval.rs`: lazily, only what the
//!    tested points need, memoized across boxes). A box where both
//!    programs read every input along one direction (`uniform.rs`) is
//!    decided by any one point, so its low corner would do; it is tested
//!    at Theorem 1's `m + 1` points (`v0` and `v0 + e_j`), every corner and
//!    two random points besides. A box that is not uniform is where a few
//!    points can mislead (`region::points` has examples), so it is tested
//!    at every element, up to 4096 of them; a larger one is only sampled
//!    and the report says equivalence is then unproven. A box whose tested
//!    points both agree and differ is refined element by element, so the
//!    regions reported are exact;
//! 4. this is repeated for `t` independent draws. By Theorem 2
//!    (Schwartz–Zippel), a point where the programs differ agrees on one
//!    draw with probability at most `d / p`, `d` the degree of the
//!    polynomials (the number of inputs multiplied together; at most the
//!    number of inputs for multi-linear programs), so a false "equivalent"
//!    has probability at most `(d / p)^t`; the default `t` makes that below
//!    2^-60, and the report states it.
//!
//! The boxes (or elements) that differ are merged into the regions
//! reported as not equivalent: what a correction kernel recomputes.
//!
//! Programs with a non-linear statement (`fmax`, `exp`, a `max=` reduction,
//! integer arithmetic) are compared in floating point instead, and the
//! report says that this is a weaker check: small ones at every element
//! (`float.rs`), ones too large to interpret whole at the points of every
//! box intersection (`sampled.rs`).
//!
//! Requires: programs that pass `ir::verify_program`. Guarantees: never
//! panics; an error (a signature mismatch, a size without a value, an
//! out-of-bounds read in an `=` statement) is a message, not a verdict.

mod boxes;
mod compile;
mod eval;
mod expr;
mod float;
mod form;
mod graph;
mod region;
mod sampled;
#[cfg(test)]
mod tests;
mod uniform;

use std::collections::HashMap;
use std::fmt::Write;

use ir::{Def, Param, Program};

pub use float::agree;
pub use region::{merge, Region};

use eval::Evaluator;
use graph::{bind_from_shapes, show, Graph};

/// How to verify.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Size symbols and integer scalars of either def (`--size N=4`).
    pub sizes: HashMap<String, i64>,
    /// Random draws; `None` takes the fewest that bound a false
    /// "equivalent" below 2^-60 (exact test) or [`FLOAT_DRAWS`].
    pub trials: Option<usize>,
    pub seed: u64,
    /// Where long work reports its progress: the trials of the exact
    /// test, the interpreter's statements in the floating-point one.
    pub progress: interp::Reporter,
    /// When to give up: past it, the exact test stops between boxes and
    /// the floating-point one between draws, with [`OUT_OF_TIME`] as the
    /// error (a search's bounded checks; `None` for no limit).
    pub deadline: Option<std::time::Instant>,
    /// The most comprehension points the exact test may evaluate (both
    /// programs, every trial) when its outputs have many boxes: past it,
    /// the floating-point test at a random choice of their boxes decides
    /// instead, and the report says why (a search's final proof, which
    /// must end in seconds; `None` for no limit).
    pub exact_work: Option<u64>,
}

/// The error of a verification stopped at its deadline.
pub const OUT_OF_TIME: &str = "the verification ran out of its time";

/// An error when `options`' deadline has passed.
fn in_time(options: &Options) -> Result<(), String> {
    match options.deadline {
        Some(d) if std::time::Instant::now() >= d => Err(OUT_OF_TIME.to_string()),
        _ => Ok(()),
    }
}

/// Draws of the floating-point comparison by default.
pub const FLOAT_DRAWS: usize = 3;

/// The most points the exact test evaluates per output; more boxes than
/// that fall back to the floating-point comparison.
const MAX_POINTS: usize = 1 << 20;

/// The verdict.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// Every output agrees on every tested point in every trial.
    /// `error_bound` is the probability that this is wrong (Theorem 2),
    /// `None` for the floating-point comparison and when some boxes were
    /// only sampled, which have no such bound.
    Equivalent {
        trials: usize,
        error_bound: Option<f64>,
    },
    /// The regions (per output, merged boxes) where the outputs differ.
    NotEquivalent { boxes: Vec<Region> },
}

/// How the verdict was reached.
#[derive(Clone, Debug, PartialEq)]
pub enum Method {
    /// Over Z_p, in every box intersection: at its corner and a few more
    /// points where both programs read every input along one direction
    /// (which proves the box), else at every element.
    Exact {
        /// The degree bound `d` of Theorem 2.
        degree: u32,
        /// Box intersections and points tested per trial, all outputs.
        boxes: usize,
        points: usize,
        /// Boxes neither uniform nor small enough to test whole, tested at
        /// sampled points only: a verdict of equivalence is then unproven.
        sampled: usize,
    },
    /// In floating point at every element, because the programs are not
    /// polynomials.
    Float { reason: String },
    /// In floating point at the points of every box intersection, because
    /// the programs are not polynomials and too large to interpret whole.
    Sampled {
        reason: String,
        /// Box intersections, those tested (all but where many boxes
        /// cost much work: `sampled.rs`), and points tested over all
        /// draws.
        boxes: usize,
        tested: usize,
        points: usize,
    },
}

/// A verification's result.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    pub verdict: Verdict,
    pub method: Method,
    /// The outputs' names in the first def, and their shapes.
    pub outputs: Vec<(String, Vec<usize>)>,
}

impl Report {
    pub fn equivalent(&self) -> bool {
        matches!(self.verdict, Verdict::Equivalent { .. })
    }
}

/// Verifies def `a` of `pa` against def `b` of `pb`: parameters correspond
/// by position (same kinds, element types and shapes), as do outputs.
pub fn verify(
    pa: &Program,
    a: &str,
    pb: &Program,
    b: &str,
    options: &Options,
) -> Result<Report, String> {
    if options.trials == Some(0) {
        return Err("0 trials test nothing: ask for at least 1".to_string());
    }
    if let Some(t) = options.trials.filter(|&t| t > MAX_TRIALS) {
        return Err(format!(
            "{t} trials are more than tessera runs (at most {MAX_TRIALS}): the default already bounds a false \"equivalent\" below 2^-60 for exact programs, and floating-point comparisons gain little past a few dozen"
        ));
    }
    let da = pa.def(a).ok_or_else(|| format!("no def named `{a}`"))?;
    let db = pb.def(b).ok_or_else(|| format!("no def named `{b}`"))?;
    check_signatures(da, db)?;
    let (sa, sb) = bind(da, db, &options.sizes)?;
    let outputs = da
        .outputs
        .iter()
        .map(|o| Ok((o.clone(), graph::shape(da, o, &sa)?)))
        .collect::<Result<Vec<_>, String>>()?;
    for (k, (o, p)) in da.outputs.iter().zip(&db.outputs).enumerate() {
        let (x, y) = (&outputs[k].1, graph::shape(db, p, &sb)?);
        if *x != y {
            return Err(format!(
                "output {} is {} in `{a}` (`{o}`) but {} in `{b}` (`{p}`)",
                k + 1,
                show(x),
                show(&y)
            ));
        }
    }
    let exact =
        graph::build(pa, da, &sa, false).and_then(|ga| Ok((ga, graph::build(pb, db, &sb, false)?)));
    let (ga, gb) = match exact {
        Ok(graphs) => graphs,
        Err(reason) => return floats(pa, da, &sa, pb, db, &sb, options, reason, outputs),
    };
    match on_large_stack(|| exact_test(&ga, &gb, options))? {
        Exact::Done(verdict, method) => Ok(Report {
            verdict,
            method,
            outputs,
        }),
        Exact::Fallback(reason) => floats(pa, da, &sa, pb, db, &sb, options, reason, outputs),
    }
}

/// Whether [`verify`] of defs `a` and `b` of `program` at `sizes` takes
/// the exact test (both are polynomials it can compile), or why it would
/// compare them in floating point instead; cheap next to the test itself.
/// The exact test may still fall back when a box count is too large.
pub fn exact_applies(
    program: &Program,
    a: &str,
    b: &str,
    sizes: &HashMap<String, i64>,
) -> Result<(), String> {
    let da = program
        .def(a)
        .ok_or_else(|| format!("no def named `{a}`"))?;
    let db = program
        .def(b)
        .ok_or_else(|| format!("no def named `{b}`"))?;
    let (sa, sb) = bind(da, db, sizes)?;
    graph::build(program, da, &sa, false)?;
    graph::build(program, db, &sb, false)?;
    Ok(())
}

/// Whether [`verify`] of defs `a` and `b` of `program` at `sizes`, when
/// the exact test does not apply, compares them in floating point at
/// sampled points (evaluated lazily, cheap) rather than at every element
/// (interpreted whole). An error is false.
pub fn points_apply(program: &Program, a: &str, b: &str, sizes: &HashMap<String, i64>) -> bool {
    let (Some(da), Some(db)) = (program.def(a), program.def(b)) else {
        return false;
    };
    bind(da, db, sizes)
        .is_ok_and(|(sa, sb)| sampled_graphs(program, da, &sa, program, db, &sb).is_some())
}

/// Interpreting both programs whole takes at most this many points (all
/// statements' iteration spaces) before they are compared at sampled
/// points instead: about a second of the interpreter for the draws.
const WHOLE_FLOAT_POINTS: u64 = 1 << 21;

/// Both defs' graphs and boxes for the floating-point test at sampled
/// points, when that is the test they get: every statement compiles as a
/// floating-point operation, every tensor parameter is float (integer ones
/// are drawn as 0 or 1 only in the whole comparison), interpreting both
/// whole would take more than [`WHOLE_FLOAT_POINTS`] points, and no
/// output has too many boxes.
fn sampled_graphs(
    pa: &Program,
    da: &Def,
    sa: &HashMap<String, i64>,
    pb: &Program,
    db: &Def,
    sb: &HashMap<String, i64>,
) -> Option<(Graph, Graph, sampled::Plan)> {
    let float_params = |d: &Def| d.tensor_params().all(|t| t.dtype.is_float());
    if !float_params(da) || !float_params(db) {
        return None;
    }
    let ga = graph::build(pa, da, sa, true).ok()?;
    let gb = graph::build(pb, db, sb, true).ok()?;
    if ga.work().saturating_add(gb.work()) <= WHOLE_FLOAT_POINTS {
        return None;
    }
    let plan = sampled::plan(&ga, &gb)?;
    Some((ga, gb, plan))
}

/// Runs `f` on a thread with room for the lazy evaluator's recursion,
/// which goes as deep as the programs do.
fn on_large_stack<T: Send>(f: impl FnOnce() -> Result<T, String> + Send) -> Result<T, String> {
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .stack_size(1 << 28)
            .spawn_scoped(s, f)
            .map_err(|e| format!("cannot start the verifier's thread: {e}"))?
            .join()
            .map_err(|_| "the verifier's thread panicked".to_string())?
    })
}

enum Exact {
    Done(Verdict, Method),
    /// Why the floating-point test decides instead: too many boxes, or
    /// more work than [`Options::exact_work`].
    Fallback(String),
}

/// What the tested points of a box found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    Agree,
    /// Every tested point differs: the box is reported whole.
    Differ,
    /// Some points agree and some differ: the box is not uniform (the
    /// programs step through their inputs differently), so its elements
    /// are tested one by one when there are few enough.
    Mixed,
}

/// How a box is tested.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Plan {
    /// At `region::points`.
    Points,
    /// At every element.
    Whole,
}

/// Boxes that are not uniform are tested whole up to this many elements.
const WHOLE_LIMIT: usize = 1 << 12;

/// Boxes with mixed outcomes of at most this many elements are refined
/// element by element.
const REFINE_LIMIT: usize = 1 << 16;

fn trial_seed(seed: u64, trial: usize) -> u64 {
    seed.wrapping_mul(0x9E37_79B9).wrapping_add(trial as u64)
}

fn offset(index: &[i64], strides: &[usize]) -> usize {
    index
        .iter()
        .zip(strides)
        .map(|(&i, &s)| i as usize * s)
        .sum()
}

/// The elements of `whole` where the programs differ on some trial, as
/// one-element regions.
fn refine(
    ga: &Graph,
    gb: &Graph,
    whole: &Region,
    seed: u64,
    trials: usize,
) -> Result<Vec<Region>, String> {
    let (oa, ob) = (ga.outputs[whole.output], gb.outputs[whole.output]);
    let strides = &ga.nodes[oa].strides;
    let cells = region::boxes(
        &whole
            .ranges
            .iter()
            .map(|&(lo, hi)| (lo as i64..=hi as i64).collect())
            .collect::<Vec<Vec<i64>>>(),
    );
    let mut out = Vec::new();
    for trial in 0..trials {
        let seed = trial_seed(seed, trial);
        let (mut ea, mut eb): (Evaluator<u64>, Evaluator<u64>) =
            (Evaluator::new(ga, seed), Evaluator::new(gb, seed));
        for c in &cells {
            let index: Vec<i64> = c.iter().map(|r| r.0).collect();
            let flat = offset(&index, strides);
            if ea.value(oa, flat)? != eb.value(ob, flat)? {
                out.push(Region {
                    output: whole.output,
                    ranges: c
                        .iter()
                        .map(|&(lo, hi)| (lo as usize, hi as usize))
                        .collect(),
                });
            }
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// The exact test over Z_p.
fn exact_test(ga: &Graph, gb: &Graph, options: &Options) -> Result<Exact, String> {
    let (sa, sb) = (boxes::propagate(ga), boxes::propagate(gb));
    let mut tests = Vec::new();
    for (k, (&oa, &ob)) in ga.outputs.iter().zip(&gb.outputs).enumerate() {
        let grid = region::union(&sa[oa], &sb[ob]);
        let n = region::count(&grid);
        let rank = grid.len();
        if n.saturating_mul(rank + 3) > MAX_POINTS {
            return Ok(Exact::Fallback(format!(
                "output {} has {n} boxes, too many to test exactly",
                k + 1
            )));
        }
        for b in region::boxes(&grid) {
            tests.push((k, b));
        }
    }
    let degree = ga
        .outputs
        .iter()
        .map(|&o| ga.nodes[o].degree)
        .chain(gb.outputs.iter().map(|&o| gb.nodes[o].degree))
        .max()
        .unwrap_or(0);
    let trials = options.trials.unwrap_or_else(|| default_trials(degree));
    let (dir_a, dir_b) = (uniform::directions(ga), uniform::directions(gb));
    // The points of each box: a uniform one is decided by any point (its
    // corner, with Theorem 1's and a few more as a check); one that is not
    // is tested whole, or sampled when too large.
    let mut sampled = 0;
    let plans: Vec<Plan> = tests
        .iter()
        .map(|(k, b)| {
            let (oa, ob) = (ga.outputs[*k], gb.outputs[*k]);
            if uniform::uniform(&dir_a[oa], &dir_b[ob], b) {
                Plan::Points
            } else if region::size(b) <= WHOLE_LIMIT {
                Plan::Whole
            } else {
                sampled += 1;
                Plan::Points
            }
        })
        .collect();
    let mut outcome = vec![Outcome::Agree; tests.len()];
    let mut points = 0;
    let task = options.progress.start("trials", trials as u64);
    // Only outputs of many boxes fall back: the floating-point test then
    // takes a few of their boxes, but it would test each of a few boxes at
    // more points than the exact test does.
    let cap = options
        .exact_work
        .filter(|_| tests.len() > sampled::FEW_BOXES);
    let mut spent = 0;
    for trial in 0..trials {
        if trial > 0 {
            task.advance(1);
        }
        let seed = trial_seed(options.seed, trial);
        let (mut ea, mut eb): (Evaluator<u64>, Evaluator<u64>) =
            (Evaluator::new(ga, seed), Evaluator::new(gb, seed));
        for (t, (k, b)) in tests.iter().enumerate() {
            if outcome[t] != Outcome::Agree {
                continue;
            }
            in_time(options)?;
            if let Some(cap) = cap.filter(|&c| spent + ea.work() + eb.work() > c) {
                return Ok(Exact::Fallback(format!(
                    "its points would take more than {cap} evaluations of comprehension points, too many to test exactly"
                )));
            }
            let (oa, ob) = (ga.outputs[*k], gb.outputs[*k]);
            let strides = &ga.nodes[oa].strides;
            let (mut same, mut differ) = (false, false);
            let tested = match plans[t] {
                Plan::Points => region::points(b, seed ^ t as u64),
                Plan::Whole => region::every(b),
            };
            for p in tested {
                let flat = offset(&p, strides);
                points += usize::from(trial == 0);
                if ea.value(oa, flat)? == eb.value(ob, flat)? {
                    same = true;
                } else {
                    differ = true;
                }
            }
            outcome[t] = match (same, differ) {
                (_, false) => Outcome::Agree,
                (false, true) => Outcome::Differ,
                (true, true) => Outcome::Mixed,
            };
        }
        spent += ea.work() + eb.work();
    }
    drop(task);
    let method = Method::Exact {
        degree,
        boxes: tests.len(),
        points,
        sampled,
    };
    let mut differ = Vec::new();
    for ((k, b), o) in tests.iter().zip(&outcome) {
        let ranges: Vec<(usize, usize)> = b
            .iter()
            .map(|&(lo, hi)| (lo as usize, hi as usize))
            .collect();
        let whole = Region { output: *k, ranges };
        match o {
            Outcome::Agree => {}
            Outcome::Mixed if whole.len() <= REFINE_LIMIT => {
                in_time(options)?;
                differ.extend(refine(ga, gb, &whole, options.seed, trials)?);
            }
            Outcome::Mixed | Outcome::Differ => differ.push(whole),
        }
    }
    let verdict = if differ.is_empty() {
        Verdict::Equivalent {
            trials,
            error_bound: (sampled == 0).then(|| error_bound(degree, trials)),
        }
    } else {
        Verdict::NotEquivalent {
            boxes: merge(differ),
        }
    };
    Ok(Exact::Done(verdict, method))
}

/// The most trials a caller may ask for: far past what any bound needs, and
/// short of a request that would run for days.
pub const MAX_TRIALS: usize = 1000;

/// The fewest trials that bound a false "equivalent" below 2^-60:
/// `(d / p)^t < 2^-60`.
fn default_trials(degree: u32) -> usize {
    if degree == 0 {
        // Constant outputs: one evaluation decides.
        return 1;
    }
    let bits = (interp::P as f64 / f64::from(degree)).log2();
    (60.0 / bits).floor() as usize + 1
}

/// Theorem 2's bound `(d / p)^t` on a false "equivalent" (0 for constant
/// outputs, where the test is deterministic).
fn error_bound(degree: u32, trials: usize) -> f64 {
    (f64::from(degree) / interp::P as f64).powi(trials as i32)
}

#[allow(clippy::too_many_arguments)]
fn floats(
    pa: &Program,
    da: &Def,
    sa: &HashMap<String, i64>,
    pb: &Program,
    db: &Def,
    sb: &HashMap<String, i64>,
    options: &Options,
    reason: String,
    outputs: Vec<(String, Vec<usize>)>,
) -> Result<Report, String> {
    let draws = options.trials.unwrap_or(FLOAT_DRAWS);
    in_time(options)?;
    if let Some((ga, gb, plan)) = sampled_graphs(pa, da, sa, pb, db, sb) {
        let tolerances: Vec<f64> = da
            .outputs
            .iter()
            .map(|o| float::tolerance(da.tensor(o).map_or(ir::DType::F32, |t| t.dtype)))
            .collect();
        let found = on_large_stack(|| sampled::test(&ga, &gb, &plan, &tolerances, draws, options))?;
        let verdict = if found.differ.is_empty() {
            Verdict::Equivalent {
                trials: draws,
                error_bound: None,
            }
        } else {
            Verdict::NotEquivalent {
                boxes: found.differ,
            }
        };
        return Ok(Report {
            verdict,
            method: Method::Sampled {
                reason,
                boxes: found.boxes,
                tested: found.tested,
                points: found.points,
            },
            outputs,
        });
    }
    let differ = float::compare(
        (pa, da, sa),
        (pb, db, sb),
        options.seed,
        draws,
        &options.progress,
    )?;
    let verdict = if differ.is_empty() {
        Verdict::Equivalent {
            trials: draws,
            error_bound: None,
        }
    } else {
        Verdict::NotEquivalent { boxes: differ }
    };
    Ok(Report {
        verdict,
        method: Method::Float { reason },
        outputs,
    })
}

/// Parameters and outputs must correspond by position.
fn check_signatures(a: &Def, b: &Def) -> Result<(), String> {
    let (na, nb) = (&a.name, &b.name);
    if a.params.len() != b.params.len() {
        return Err(format!(
            "`{na}` takes {} parameters but `{nb}` takes {}",
            a.params.len(),
            b.params.len()
        ));
    }
    for (k, (p, q)) in a.params.iter().zip(&b.params).enumerate() {
        let kind = |d: &Def, p: &Param| match p {
            Param::Tensor(t) => d.tensor(t).map_or("a tensor".to_string(), |t| {
                format!("a {} tensor of rank {}", t.dtype, t.shape.len())
            }),
            Param::Scalar { dtype, .. } => format!("a {dtype} scalar"),
        };
        let (x, y) = (kind(a, p), kind(b, q));
        if x != y {
            return Err(format!(
                "parameter {} is {x} in `{na}` (`{}`) but {y} in `{nb}` (`{}`)",
                k + 1,
                p.name(),
                q.name()
            ));
        }
    }
    if a.outputs.len() != b.outputs.len() {
        return Err(format!(
            "`{na}` returns {} tensors but `{nb}` returns {}",
            a.outputs.len(),
            b.outputs.len()
        ));
    }
    for (k, (o, p)) in a.outputs.iter().zip(&b.outputs).enumerate() {
        let (x, y) = (a.tensor(o).map(|t| t.dtype), b.tensor(p).map(|t| t.dtype));
        if x != y {
            let show = |t: Option<ir::DType>| t.map_or("undeclared".to_string(), |t| t.to_string());
            return Err(format!(
                "output {} is {} in `{na}` (`{o}`) but {} in `{nb}` (`{p}`)",
                k + 1,
                show(x),
                show(y)
            ));
        }
    }
    Ok(())
}

/// Size symbols and integer scalars, bound.
type Sizes = HashMap<String, i64>;

/// Binds both defs' sizes: the first from `given`, the second from the
/// first's parameter shapes and `given`.
fn bind(a: &Def, b: &Def, given: &HashMap<String, i64>) -> Result<(Sizes, Sizes), String> {
    let known = |d: &Def, s: &str| {
        d.size_symbols().iter().any(|x| x == s) || d.scalar(s).is_some_and(|t| t.is_int())
    };
    let mut names: Vec<&String> = given.keys().collect();
    names.sort();
    if let Some(s) = names.iter().find(|s| !known(a, s) && !known(b, s)) {
        return Err(format!(
            "`{s}` is given a size, but neither `{}` nor `{}` has a size symbol or integer scalar of that name",
            a.name, b.name
        ));
    }
    let only = |d: &Def| -> HashMap<String, i64> {
        given
            .iter()
            .filter(|(s, _)| known(d, s))
            .map(|(s, &v)| (s.clone(), v))
            .collect()
    };
    let sa = interp::bind_sizes(a, &HashMap::new(), &only(a)).map_err(|e| e.message)?;
    let missing: Vec<String> = a
        .size_symbols()
        .into_iter()
        .chain(a.params.iter().filter_map(|p| match p {
            Param::Scalar { name, dtype } if dtype.is_int() => Some(name.clone()),
            _ => None,
        }))
        .filter(|s| !sa.contains_key(s))
        .collect();
    if let Some(s) = missing.first() {
        return Err(format!(
            "`{s}` of `{}` has no value: bind it with `--size {s}=<n>`",
            a.name
        ));
    }
    let shapes = a
        .tensor_params()
        .map(|t| graph::shape(a, &t.name, &sa))
        .collect::<Result<Vec<_>, String>>()?;
    let sb = bind_from_shapes(b, &shapes, only(b))?;
    Ok((sa, sb))
}

/// The floating-point comparisons' tolerances, as reports state them
/// (`float::tolerance`).
const TOLERANCES: &str = "relative tolerance 1e-4 for float32, 1e-9 for float64";

/// The report as `tessera verify` prints it.
pub fn print_report(r: &Report) -> String {
    let mut s = String::new();
    match (&r.verdict, &r.method) {
        (
            Verdict::Equivalent {
                trials,
                error_bound: Some(bound),
            },
            _,
        ) => {
            let bound = if *bound == 0.0 {
                "0".to_string()
            } else {
                format!("2^{:.1}", bound.log2())
            };
            let _ = writeln!(
                s,
                "equivalent ({trials} trials, false-positive bound ≤ {bound})"
            );
        }
        (Verdict::Equivalent { trials, .. }, Method::Exact { sampled, .. }) => {
            let _ = writeln!(
                s,
                "equivalent at every tested point ({trials} trials), but unproven: {sampled} box{} read an input along several directions and {} too large to test whole",
                if *sampled == 1 { "" } else { "es" },
                if *sampled == 1 { "is" } else { "are" }
            );
        }
        (Verdict::Equivalent { trials, .. }, Method::Float { .. }) => {
            let _ = writeln!(
                s,
                "equivalent in floating point ({trials} random draws agree): a weaker check than the exact test"
            );
        }
        (Verdict::Equivalent { trials, .. }, Method::Sampled { .. }) => {
            let _ = writeln!(
                s,
                "equivalent in floating point at every tested point ({trials} random draws agree): a weaker check than the exact test, and than comparing every element"
            );
        }
        (Verdict::NotEquivalent { boxes }, _) => {
            let n = boxes.len();
            let _ = writeln!(
                s,
                "not equivalent: the outputs differ in {n} region{}",
                if n == 1 { "" } else { "s" }
            );
            for b in boxes {
                let (name, _) = &r.outputs[b.output];
                let _ = writeln!(s, "  {name}{}", b.show());
            }
        }
    }
    match &r.method {
        Method::Exact {
            degree,
            boxes,
            points,
            ..
        } => {
            let _ = writeln!(
                s,
                "exact test over Z_p (p = 2^31 - 1): degree {degree}, {}, {points} points per trial",
                count_boxes(*boxes)
            );
        }
        Method::Float { reason } => {
            let _ = writeln!(
                s,
                "compared in floating point ({TOLERANCES}) because the exact test does not apply: {reason}"
            );
        }
        Method::Sampled {
            reason,
            boxes,
            tested,
            points,
        } => {
            let of = if tested < boxes {
                format!(
                    "{tested} of {} (a random choice: the others would cost too much to interpret)",
                    count_boxes(*boxes)
                )
            } else {
                count_boxes(*boxes)
            };
            let _ = writeln!(
                s,
                "compared in floating point ({TOLERANCES}) at {points} points of {of} over all draws (corners and random points of each box, or one random point of each when there are many; the programs are too large to interpret whole) because the exact test does not apply: {reason}"
            );
        }
    }
    s
}

/// `n box` or `n boxes`.
fn count_boxes(n: usize) -> String {
    format!("{n} box{}", if n == 1 { "" } else { "es" })
}
