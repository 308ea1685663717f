//! A direct evaluation of a generated program ([`Prog`]) in plain loops,
//! following `docs/LANGUAGE.md` and independent of the interpreter, so that
//! a property test can hold the interpreter (and through it every other
//! path) to the language's definition.
//!
//! - Statements run in order. A tensor no earlier statement wrote starts
//!   as zeros, its shape the upper bounds of its left-hand ranges; every
//!   statement computes from the tensors as they were before it and then
//!   writes its box (so an in-place update reads the old values).
//! - `=` writes each point of the left-hand box once; `op=!` starts each
//!   point from the identity (0, 1, -inf / the least integer, +inf / the
//!   greatest) and `op=` from the tensor's current value, and both fold in
//!   the body at every point of the reduction box.
//! - A point where a read outside `?:` falls outside its tensor contributes
//!   nothing to a reduction and is an error in `=`. A read in a `?:` branch
//!   is evaluated only when the branch is taken, and out of bounds it then
//!   does the same. `exists` reads are never evaluated.
//! - `float32` rounds after every operation, `int32` and `int64` wrap;
//!   integer `/` is floor division (by zero an error), float `/` is IEEE's;
//!   the bodies' maximum and minimum are C's `fmaxf`/`fmax` (and `fmin`),
//!   which pass over a NaN operand, and `max`/`min` on integers; `max=` and
//!   `min=` reductions are TC's `max` and `min`, NaN when either operand
//!   is.
//!
//! The ranges are taken as the description gives them: where a statement
//! leaves a range to inference, the generator made it what inference gives,
//! and a test that compares with the interpreter checks that claim too.

use std::collections::{BTreeMap, BTreeSet};

use ir::DType;
use tensor::Tensor;

use super::program::{Aff, Agg, Cond, Expr, Op, Prog, St};

/// An output as the evaluation computes it.
#[derive(Clone, Debug)]
pub struct Output {
    pub name: String,
    pub tensor: Tensor,
    /// Per float element, a bound on the magnitudes that went into it:
    /// another correct evaluation (a different summation order) may differ
    /// by a small multiple of the unit roundoff times this. (Integers are
    /// exact; their scale means nothing.)
    pub scale: Vec<f64>,
}

/// The values of a program's outputs, with what the evaluation met on the
/// way (for tests that count what their cases exercise).
#[derive(Clone, Debug)]
pub struct Evaluation {
    /// In the order of [`Prog::outputs`].
    pub outputs: Vec<Output>,
    /// Points of reductions that an out-of-bounds read skipped.
    pub skipped: usize,
    /// Elements of reductions' left-hand boxes that no point reached (they
    /// keep the identity, or the value before an `op=`).
    pub empty: usize,
}

/// Why a program has no value.
#[derive(Clone, Debug)]
pub struct Failure {
    /// The statement that fails (an index into [`Prog::stmts`]), if the
    /// failure is one statement's.
    pub stmt: Option<usize>,
    pub reason: String,
}

/// The inputs of `prog` as `interp::Tensor::random` draws them: input
/// number `n` from seed `seed + n`.
pub fn random_inputs(prog: &Prog, seed: u64) -> BTreeMap<String, Tensor> {
    let shapes = prog.shapes();
    prog.inputs
        .iter()
        .zip(0u64..)
        .map(|(x, n)| {
            let shape: Vec<usize> = shapes[&x.name].iter().map(|&d| d as usize).collect();
            let t = Tensor::random(prog.dtype, &shape, seed.wrapping_add(n));
            (x.name.clone(), t)
        })
        .collect()
}

/// Evaluates `prog` on `inputs` (one tensor of the program's element type
/// per input, by name).
///
/// # Panics
///
/// If the description is not one the generator writes: an element type
/// other than `float32`, `float64`, `int32` and `int64`, a float literal in
/// an integer program (whose body TC would type as a float), an input
/// missing, or a name (iterator, let) used without its definition.
pub fn eval(prog: &Prog, inputs: &BTreeMap<String, Tensor>) -> Result<Evaluation, Failure> {
    assert!(
        matches!(
            prog.dtype,
            DType::F32 | DType::F64 | DType::I32 | DType::I64
        ),
        "eval takes float32, float64, int32 and int64 programs, not {}",
        prog.dtype
    );
    if prog.dtype.is_float() {
        Evaluator::<f64>::new(prog, inputs).run(prog)
    } else {
        assert!(
            !prog.has_float(),
            "a float literal in an integer program makes its body a float"
        );
        Evaluator::<i64>::new(prog, inputs).run(prog)
    }
}

/// The binary operations of bodies and reductions.
#[derive(Clone, Copy)]
enum Bin {
    Add,
    Sub,
    Mul,
    Div,
    /// TC's `max` and `min` (the reductions').
    Max,
    Min,
    /// C's `fmax` and `fmin` (the bodies', on floats).
    Fmax,
    Fmin,
}

impl From<Agg> for Bin {
    fn from(a: Agg) -> Bin {
        match a {
            Agg::Add => Bin::Add,
            Agg::Mul => Bin::Mul,
            Agg::Max => Bin::Max,
            Agg::Min => Bin::Min,
        }
    }
}

/// The arithmetic of one element type, on the carrier of its kind: `f64`
/// for floats (a `float32` value being exact in `f32`), `i64` for integers
/// (an `int32` value being in `i32`'s range).
trait Elem: Copy {
    fn of(t: &Tensor) -> Vec<Self>;
    fn tensor(t: DType, shape: &[usize], values: Vec<Self>) -> Tensor;
    /// An integer (literal, iterator value or identity) converted to `t`.
    fn int(t: DType, c: i64) -> Self;
    fn float(t: DType, x: f64) -> Self;
    fn arith(t: DType, op: Bin, a: Self, b: Self) -> Result<Self, String>;
    fn neg(t: DType, a: Self) -> Self;
    /// The identities of `max=!` and `min=!`.
    fn least(t: DType) -> Self;
    fn greatest(t: DType) -> Self;
    /// The magnitude for scales: `|x|`, and 0 for an infinity (which only
    /// an empty `max=!` or `min=!` gives here, and is compared exactly).
    fn size(self) -> f64;
}

impl Elem for f64 {
    fn of(t: &Tensor) -> Vec<f64> {
        t.to_f64_vec()
    }

    fn tensor(t: DType, shape: &[usize], values: Vec<f64>) -> Tensor {
        Tensor::from_f64(t, shape, values)
    }

    fn int(t: DType, c: i64) -> f64 {
        // Converting straight from the integer rounds once.
        if t == DType::F32 {
            f64::from(c as f32)
        } else {
            c as f64
        }
    }

    fn float(t: DType, x: f64) -> f64 {
        round(t, x)
    }

    fn arith(t: DType, op: Bin, a: f64, b: f64) -> Result<f64, String> {
        let r = match op {
            Bin::Add => a + b,
            Bin::Sub => a - b,
            Bin::Mul => a * b,
            Bin::Div => a / b,
            Bin::Max if a.is_nan() || b.is_nan() => f64::NAN,
            Bin::Min if a.is_nan() || b.is_nan() => f64::NAN,
            // Rust's `max` and `min` are C's `fmax` and `fmin`: a NaN
            // operand gives the other.
            Bin::Max | Bin::Fmax => a.max(b),
            Bin::Min | Bin::Fmin => a.min(b),
        };
        Ok(round(t, r))
    }

    fn neg(_: DType, a: f64) -> f64 {
        -a
    }

    fn least(_: DType) -> f64 {
        f64::NEG_INFINITY
    }

    fn greatest(_: DType) -> f64 {
        f64::INFINITY
    }

    fn size(self) -> f64 {
        if self.is_finite() {
            self.abs()
        } else {
            0.0
        }
    }
}

/// Rounds to `float32` when that is the type: `+ - * /` computed in `f64`
/// and rounded once are exactly the `f32` operations.
fn round(t: DType, x: f64) -> f64 {
    if t == DType::F32 {
        f64::from(x as f32)
    } else {
        x
    }
}

impl Elem for i64 {
    fn of(t: &Tensor) -> Vec<i64> {
        t.to_i64_vec()
    }

    fn tensor(t: DType, shape: &[usize], values: Vec<i64>) -> Tensor {
        Tensor::from_i64(t, shape, values)
    }

    fn int(t: DType, c: i64) -> i64 {
        wrap(t, c)
    }

    fn float(_: DType, _: f64) -> i64 {
        unreachable!("eval refuses integer programs with float literals")
    }

    fn arith(t: DType, op: Bin, a: i64, b: i64) -> Result<i64, String> {
        let r = match op {
            Bin::Add => a.wrapping_add(b),
            Bin::Sub => a.wrapping_sub(b),
            Bin::Mul => a.wrapping_mul(b),
            Bin::Div if b == 0 => return Err(format!("integer division by zero ({a} / {b})")),
            Bin::Div => {
                // Truncation rounds toward zero; an inexact quotient of
                // operands of opposite signs is one above the floor.
                let q = a.wrapping_div(b);
                if a.wrapping_rem(b) != 0 && (a < 0) != (b < 0) {
                    q - 1
                } else {
                    q
                }
            }
            Bin::Max | Bin::Fmax => a.max(b),
            Bin::Min | Bin::Fmin => a.min(b),
        };
        Ok(wrap(t, r))
    }

    fn neg(t: DType, a: i64) -> i64 {
        wrap(t, a.wrapping_neg())
    }

    fn least(t: DType) -> i64 {
        if t == DType::I32 {
            i64::from(i32::MIN)
        } else {
            i64::MIN
        }
    }

    fn greatest(t: DType) -> i64 {
        if t == DType::I32 {
            i64::from(i32::MAX)
        } else {
            i64::MAX
        }
    }

    fn size(self) -> f64 {
        (self as f64).abs()
    }
}

/// Wraps to `int32` when that is the type.
fn wrap(t: DType, v: i64) -> i64 {
    if t == DType::I32 {
        i64::from(v as i32)
    } else {
        v
    }
}

/// A value with its scale: a bound on the magnitudes it was computed from,
/// which bounds its rounding error (relative to the unit roundoff, up to a
/// small factor).
#[derive(Clone, Copy, Debug)]
struct Val<E> {
    v: E,
    m: f64,
}

impl<E: Elem> Val<E> {
    fn exact(v: E) -> Val<E> {
        Val { v, m: v.size() }
    }
}

/// A tensor's elements (row-major) and their scales.
#[derive(Clone, Debug)]
struct Data<E> {
    shape: Vec<usize>,
    values: Vec<E>,
    scale: Vec<f64>,
}

impl<E: Elem> Data<E> {
    fn get(&self, idx: &[i64]) -> Option<Val<E>> {
        flat(&self.shape, idx).map(|f| Val {
            v: self.values[f],
            m: self.scale[f],
        })
    }
}

/// The row-major position of `idx` in `shape`, if it lies inside.
fn flat(shape: &[usize], idx: &[i64]) -> Option<usize> {
    let mut f = 0;
    for (&d, &i) in shape.iter().zip(idx) {
        let i = usize::try_from(i).ok().filter(|&i| i < d)?;
        f = f * d + i;
    }
    Some(f)
}

/// Every point of the box `ranges`, row-major (no ranges: one empty point).
fn points(ranges: &[(i64, i64)]) -> Vec<Vec<i64>> {
    let mut out = vec![Vec::new()];
    for &(lo, hi) in ranges {
        out = out
            .into_iter()
            .flat_map(|p| {
                (lo..hi).map(move |x| {
                    let mut q = p.clone();
                    q.push(x);
                    q
                })
            })
            .collect();
    }
    out
}

/// Iterator values at a point.
type Point = BTreeMap<String, i64>;

/// Why a point has no value: an evaluated read out of bounds (a skip in a
/// reduction, an error in `=`), or an error anywhere.
enum Stop {
    OutOfBounds(String),
    Error(String),
}

struct Evaluator<'p, E> {
    dtype: DType,
    tensors: BTreeMap<String, Data<E>>,
    inputs: BTreeSet<&'p str>,
    skipped: usize,
    empty: usize,
}

impl<'p, E: Elem> Evaluator<'p, E> {
    fn new(prog: &'p Prog, inputs: &BTreeMap<String, Tensor>) -> Self {
        let tensors = prog
            .inputs
            .iter()
            .map(|x| {
                let t = inputs
                    .get(&x.name)
                    .unwrap_or_else(|| panic!("no tensor for input `{}`", x.name));
                let values = E::of(t);
                let data = Data {
                    shape: t.shape().to_vec(),
                    scale: values.iter().map(|v| v.size()).collect(),
                    values,
                };
                (x.name.clone(), data)
            })
            .collect();
        Evaluator {
            dtype: prog.dtype,
            tensors,
            inputs: prog.inputs.iter().map(|x| x.name.as_str()).collect(),
            skipped: 0,
            empty: 0,
        }
    }

    fn run(mut self, prog: &Prog) -> Result<Evaluation, Failure> {
        for (k, st) in prog.stmts.iter().enumerate() {
            self.statement(st).map_err(|reason| Failure {
                stmt: Some(k),
                reason,
            })?;
        }
        let outputs = prog
            .outputs
            .iter()
            .map(|name| {
                let d = self.tensors.get(name).ok_or_else(|| Failure {
                    stmt: None,
                    reason: format!("no statement writes the output `{name}`"),
                })?;
                Ok(Output {
                    name: name.clone(),
                    tensor: E::tensor(self.dtype, &d.shape, d.values.clone()),
                    scale: d.scale.clone(),
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(Evaluation {
            outputs,
            skipped: self.skipped,
            empty: self.empty,
        })
    }

    /// Runs one statement; the error says why it fails.
    fn statement(&mut self, st: &St) -> Result<(), String> {
        let lhs = &st.lhs;
        if let Some(t) = named_tensors(st)
            .into_iter()
            .find(|t| !self.tensors.contains_key(t))
        {
            return Err(format!("`{t}` is read before any statement defines it"));
        }
        if self.inputs.contains(lhs.as_str()) {
            return Err(format!("the input `{lhs}` is written"));
        }
        if let Some(r) = st.ranges.iter().find(|r| r.lo >= r.hi) {
            return Err(format!(
                "the range {}:{} of `{}` is empty",
                r.lo, r.hi, r.name
            ));
        }
        let reductions = st.reductions();
        if st.op == Op::Assign && !reductions.is_empty() {
            return Err(format!("`=` with reduction iterators {reductions:?}"));
        }
        let lhs_ranges: Vec<(i64, i64)> = st.idx.iter().map(|v| st.range(v)).collect();
        let mut out = match self.tensors.get(lhs) {
            Some(d) => d.clone(),
            None if matches!(st.op, Op::Acc(_)) => {
                return Err(format!(
                    "`{}` onto `{lhs}`, which no statement defined",
                    st.op.text()
                ))
            }
            None => {
                let shape: Vec<usize> = lhs_ranges.iter().map(|r| r.1.max(0) as usize).collect();
                let n = shape.iter().product();
                Data {
                    shape,
                    values: vec![E::int(self.dtype, 0); n],
                    scale: vec![0.0; n],
                }
            }
        };
        if lhs_ranges
            .iter()
            .zip(&out.shape)
            .any(|(&(lo, hi), &d)| lo < 0 || hi > d as i64)
        {
            return Err(format!(
                "`{lhs}` is written outside its shape {:?}",
                out.shape
            ));
        }
        let red_ranges: Vec<(i64, i64)> = reductions.iter().map(|v| st.range(v)).collect();
        let red_points = points(&red_ranges);
        let unguarded: Vec<(String, Vec<Aff>)> = st
            .all_reads()
            .into_iter()
            .filter(|r| !r.2)
            .map(|r| (r.0, r.1))
            .collect();
        for o in points(&lhs_ranges) {
            let f = flat(&out.shape, &o).expect("the box lies inside the tensor");
            // `=` has no value before its one point; a reduction starts
            // from the identity or, accumulating, from the current value.
            let mut acc = match st.op {
                Op::Assign => None,
                Op::Init(agg) => Some(self.identity(agg)),
                Op::Acc(_) => Some(Val {
                    v: out.values[f],
                    m: out.scale[f],
                }),
            };
            let mut reached = false;
            for r in &red_points {
                let point: Point = st
                    .idx
                    .iter()
                    .zip(&o)
                    .chain(reductions.iter().zip(r))
                    .map(|(v, &x)| (v.clone(), x))
                    .collect();
                let v = match self.point(st, &unguarded, &point) {
                    Ok(v) => v,
                    Err(Stop::OutOfBounds(_)) if st.op.reduces() => {
                        self.skipped += 1;
                        continue;
                    }
                    Err(Stop::OutOfBounds(why) | Stop::Error(why)) => return Err(why),
                };
                reached = true;
                acc = Some(match (st.op, acc) {
                    (Op::Init(agg) | Op::Acc(agg), Some(a)) => {
                        self.combine(Bin::from(agg), a, v)?
                    }
                    _ => v,
                });
            }
            if st.op.reduces() && !reached {
                self.empty += 1;
            }
            if let Some(a) = acc {
                out.values[f] = a.v;
                out.scale[f] = a.m;
            }
        }
        self.tensors.insert(lhs.clone(), out);
        Ok(())
    }

    fn identity(&self, agg: Agg) -> Val<E> {
        let t = self.dtype;
        Val::exact(match agg {
            Agg::Add => E::int(t, 0),
            Agg::Mul => E::int(t, 1),
            Agg::Max => E::least(t),
            Agg::Min => E::greatest(t),
        })
    }

    /// The body's value at one point of the box (`unguarded`: the reads of
    /// the lets and body outside `?:`).
    fn point(&self, st: &St, unguarded: &[(String, Vec<Aff>)], p: &Point) -> Result<Val<E>, Stop> {
        // The reads outside `?:`, of the lets and the body, are tested
        // first, so that a point one of them skips evaluates nothing else:
        // no division by zero there fails (LANGUAGE.md, "What
        // out-of-bounds reads mean"). After that, operands are evaluated
        // left to right, as the interpreter does.
        if let Some((t, subs)) = unguarded
            .iter()
            .find(|(t, subs)| self.read(t, subs, p).is_none())
        {
            return Err(out_of_bounds(t, subs, p));
        }
        let mut lets = BTreeMap::new();
        for (name, e) in &st.lets {
            let v = self.expr(e, p, &lets)?;
            lets.insert(name.clone(), v);
        }
        self.expr(&st.body, p, &lets)
    }

    fn read(&self, t: &str, subs: &[Aff], p: &Point) -> Option<Val<E>> {
        let idx: Vec<i64> = subs.iter().map(|a| a.at(p)).collect();
        self.tensors[t].get(&idx)
    }

    fn expr(&self, e: &Expr, p: &Point, lets: &BTreeMap<String, Val<E>>) -> Result<Val<E>, Stop> {
        let t = self.dtype;
        let pair = |a: &Expr, b: &Expr| -> Result<(Val<E>, Val<E>), Stop> {
            Ok((self.expr(a, p, lets)?, self.expr(b, p, lets)?))
        };
        match e {
            Expr::Read(x, subs) => self
                .read(x, subs, p)
                .ok_or_else(|| out_of_bounds(x, subs, p)),
            Expr::Int(c) => Ok(Val::exact(E::int(t, *c))),
            Expr::Flt(x) => Ok(Val::exact(E::float(t, *x))),
            Expr::Iter(v) => Ok(Val::exact(E::int(t, p[v]))),
            Expr::Let(name) => Ok(lets[name]),
            Expr::Add(a, b) => self.binary(Bin::Add, pair(a, b)?),
            Expr::Sub(a, b) => self.binary(Bin::Sub, pair(a, b)?),
            Expr::Mul(a, b) => self.binary(Bin::Mul, pair(a, b)?),
            Expr::Div(a, b) => self.binary(Bin::Div, pair(a, b)?),
            Expr::Max(a, b) => self.binary(Bin::Fmax, pair(a, b)?),
            Expr::Min(a, b) => self.binary(Bin::Fmin, pair(a, b)?),
            Expr::Neg(a) => {
                let x = self.expr(a, p, lets)?;
                Ok(Val {
                    v: E::neg(t, x.v),
                    m: x.m,
                })
            }
            Expr::Sel(c, a, b) => self.expr(if self.holds(c, p) { a } else { b }, p, lets),
        }
    }

    /// `a op b`, with its scale: operands perturbed by their scales'
    /// errors move a sum by the sum of the scales, a product by their
    /// product, a quotient `a / b` by `(ma + |a/b| mb) / |b|`, and a
    /// maximum or minimum by the larger scale.
    fn combine(&self, op: Bin, a: Val<E>, b: Val<E>) -> Result<Val<E>, String> {
        let v = E::arith(self.dtype, op, a.v, b.v)?;
        let m = match op {
            Bin::Add | Bin::Sub => a.m + b.m,
            Bin::Mul => a.m * b.m,
            Bin::Div => (a.m + v.size() * b.m) / b.v.size(),
            Bin::Max | Bin::Min | Bin::Fmax | Bin::Fmin => a.m.max(b.m),
        };
        Ok(Val {
            v,
            m: m.max(v.size()),
        })
    }

    fn binary(&self, op: Bin, (a, b): (Val<E>, Val<E>)) -> Result<Val<E>, Stop> {
        self.combine(op, a, b).map_err(Stop::Error)
    }

    fn holds(&self, c: &Cond, p: &Point) -> bool {
        match c {
            Cond::Lt(a, k) => a.at(p) < *k,
            Cond::Ge(a, k) => a.at(p) >= *k,
            Cond::And(a, b) => self.holds(a, p) && self.holds(b, p),
            Cond::InBounds(t, subs) => self.read(t, subs, p).is_some(),
        }
    }
}

fn out_of_bounds(t: &str, subs: &[Aff], p: &Point) -> Stop {
    let subs: Vec<String> = subs.iter().map(Aff::render).collect();
    Stop::OutOfBounds(format!(
        "{t}({}) is out of bounds at {p:?}",
        subs.join(", ")
    ))
}

/// Every tensor a statement names on its right: reads, `exists` clauses
/// and the bounds checks of `?:` conditions.
fn named_tensors(st: &St) -> BTreeSet<String> {
    let mut out: BTreeSet<String> = st.all_reads().into_iter().map(|r| r.0).collect();
    out.extend(st.exists.iter().map(|x| x.0.clone()));
    let exprs = st.lets.iter().map(|l| &l.1).chain([&st.body]);
    for n in exprs.flat_map(Expr::nodes) {
        if let Expr::Sel(c, ..) = n {
            conds(c, &mut out);
        }
    }
    out
}

fn conds(c: &Cond, out: &mut BTreeSet<String>) {
    match c {
        Cond::InBounds(t, _) => {
            out.insert(t.clone());
        }
        Cond::And(a, b) => {
            conds(a, out);
            conds(b, out);
        }
        Cond::Lt(..) | Cond::Ge(..) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gen::program::{add, sel, sub, Dim, Input, Iv};

    /// A program over inputs of constant shapes, with its output `O`.
    fn prog(dtype: DType, inputs: &[(&str, &[i64])], stmts: Vec<St>) -> Prog {
        Prog {
            dtype,
            inputs: inputs
                .iter()
                .map(|(name, dims)| Input {
                    name: name.to_string(),
                    dims: dims.iter().map(|&d| Dim::Const(d)).collect(),
                })
                .collect(),
            stmts,
            outputs: vec!["O".to_string()],
            sizes: BTreeMap::new(),
            infer: false,
            symbolic: false,
        }
    }

    fn stmt(idx: &[&str], op: Op, body: Expr, ranges: &[(&str, i64, i64)]) -> St {
        let ranges = ranges
            .iter()
            .map(|&(name, lo, hi)| Iv {
                name: name.to_string(),
                lo,
                hi,
            })
            .collect();
        let idx = idx.iter().map(|v| v.to_string()).collect();
        St::new("O", idx, op, body, ranges)
    }

    fn read(t: &str, subs: Vec<Aff>) -> Expr {
        Expr::Read(t.to_string(), subs)
    }

    fn shifted(v: &str, w: &str, c: i64) -> Aff {
        Aff {
            terms: vec![(1, v.to_string()), (1, w.to_string())],
            c,
        }
    }

    fn inputs(named: &[(&str, Tensor)]) -> BTreeMap<String, Tensor> {
        named
            .iter()
            .map(|(n, t)| (n.to_string(), t.clone()))
            .collect()
    }

    #[test]
    fn a_reduction_skips_points_and_an_unreached_element_keeps_the_identity() {
        // O(i) max=! A(i + r) where i in 0:4, r in 0:2, over A of three.
        let body = read("A", vec![shifted("i", "r", 0)]);
        let st = stmt(
            &["i"],
            Op::Init(Agg::Max),
            body,
            &[("i", 0, 4), ("r", 0, 2)],
        );
        let p = prog(DType::F32, &[("A", &[3])], vec![st]);
        let a = Tensor::from_f64(DType::F32, &[3], vec![1.0, 5.0, 2.0]);
        let e = eval(&p, &inputs(&[("A", a)])).expect("values");
        let o = &e.outputs[0];
        assert_eq!(
            o.tensor.to_f64_vec(),
            vec![5.0, 5.0, 2.0, f64::NEG_INFINITY]
        );
        assert_eq!((e.skipped, e.empty), (3, 1));
    }

    #[test]
    fn an_assignment_fails_on_an_out_of_bounds_read_unless_its_branch_is_not_taken() {
        // O(i) = i < 2 ? A(i + 1) : 0 where i in 0:3, over A of three:
        // A(3) is never read. With `i < 3`, it is.
        for (c, fails) in [(2, false), (3, true)] {
            let body = sel(
                Cond::Lt(Aff::var("i"), c),
                read(
                    "A",
                    vec![Aff {
                        terms: vec![(1, "i".to_string())],
                        c: 1,
                    }],
                ),
                Expr::Int(0),
            );
            let st = stmt(&["i"], Op::Assign, body, &[("i", 0, 3)]);
            let p = prog(DType::I32, &[("A", &[3])], vec![st]);
            let a = Tensor::from_i64(DType::I32, &[3], vec![4, 5, 6]);
            match eval(&p, &inputs(&[("A", a)])) {
                Ok(e) if !fails => assert_eq!(e.outputs[0].tensor.to_i64_vec(), vec![5, 6, 0]),
                Err(f) if fails => assert_eq!(f.stmt, Some(0), "{}", f.reason),
                other => panic!("i < {c}: {other:?}"),
            }
        }
    }

    #[test]
    fn integer_division_floors_and_fails_on_zero() {
        let body = Expr::Div(
            Box::new(read("A", vec![Aff::var("i")])),
            Box::new(read("B", vec![Aff::var("i")])),
        );
        let st = stmt(&["i"], Op::Assign, body, &[("i", 0, 3)]);
        let p = prog(DType::I64, &[("A", &[3]), ("B", &[3])], vec![st]);
        let a = Tensor::from_i64(DType::I64, &[3], vec![-7, 7, 6]);
        let b = Tensor::from_i64(DType::I64, &[3], vec![2, -2, 3]);
        let e = eval(&p, &inputs(&[("A", a.clone()), ("B", b)])).expect("values");
        assert_eq!(e.outputs[0].tensor.to_i64_vec(), vec![-4, -4, 2]);
        let zero = Tensor::from_i64(DType::I64, &[3], vec![2, 0, 3]);
        let f = eval(&p, &inputs(&[("A", a), ("B", zero)])).expect_err("7 / 0");
        assert!(f.reason.contains("division by zero"), "{}", f.reason);
    }

    #[test]
    fn a_statement_reads_the_tensor_as_it_was_before_it() {
        // O(i) = A(i); O(i) += O(1 - i): both elements become the sum.
        let first = stmt(
            &["i"],
            Op::Assign,
            read("A", vec![Aff::var("i")]),
            &[("i", 0, 2)],
        );
        let flip = Aff {
            terms: vec![(-1, "i".to_string())],
            c: 1,
        };
        let second = stmt(
            &["i"],
            Op::Acc(Agg::Add),
            read("O", vec![flip]),
            &[("i", 0, 2)],
        );
        let p = prog(DType::F64, &[("A", &[2])], vec![first, second]);
        let a = Tensor::from_f64(DType::F64, &[2], vec![0.25, 0.5]);
        let e = eval(&p, &inputs(&[("A", a)])).expect("values");
        assert_eq!(e.outputs[0].tensor.to_f64_vec(), vec![0.75, 0.75]);
    }

    #[test]
    fn float32_rounds_after_every_operation() {
        // (A(i) + B(i)) - B(i) with A = 1 and B = 2^30: the sum rounds to
        // 2^30 in float32, so the result is 0, while float64 keeps 1.
        let body = sub(
            add(
                read("A", vec![Aff::var("i")]),
                read("B", vec![Aff::var("i")]),
            ),
            read("B", vec![Aff::var("i")]),
        );
        for (t, want) in [(DType::F32, 0.0), (DType::F64, 1.0)] {
            let st = stmt(&["i"], Op::Assign, body.clone(), &[("i", 0, 1)]);
            let p = prog(t, &[("A", &[1]), ("B", &[1])], vec![st]);
            let a = Tensor::from_f64(t, &[1], vec![1.0]);
            let b = Tensor::from_f64(t, &[1], vec![f64::from(1u32 << 30)]);
            let e = eval(&p, &inputs(&[("A", a), ("B", b)])).expect("values");
            assert_eq!(e.outputs[0].tensor.to_f64_vec(), vec![want], "{t}");
        }
    }
}
