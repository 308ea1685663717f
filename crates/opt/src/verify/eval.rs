//! Lazy evaluation of a graph over Z_p: only the elements the sampled
//! output points depend on are computed, and each is computed once.
//!
//! An element of a statement's version is its earlier version's value
//! outside the statement's left-hand box; inside, the reduction over the
//! statement's reduction box, starting from the earlier value (`+=`) or
//! zero. Reads ask for elements of the versions they name, recursively;
//! every computed element is memoized for the rest of the trial (PET's
//! caching: the boxes of both programs share inputs and intermediate
//! results). Input elements are a hash of the trial's seed, the parameter's
//! position and the element's index, uniform in `[0, P)`, so they take no
//! memory and both programs see the same values.
//!
//! The semantics are the interpreter's mod-p mode, point by point: at each
//! point of a reduction the reads not under a `?:` branch are tested first
//! and an out-of-bounds one skips the point, as does an out-of-bounds read
//! under a taken branch; in an `=` statement either is an error, as is any
//! failing read or integer division by zero. Tests check
//! this evaluator against `interp::run` in `Mode::ModP` element by element.

use std::collections::HashMap;

use interp::residue::{self, P};

use ir::Reduction;

use super::expr::{to_f64, truth, Comp, Ord, Read, RealOp, Val};
use super::graph::{Graph, NodeKind};

/// Memo tables of at most this many elements are dense arrays.
const DENSE_LIMIT: usize = 1 << 20;

/// What the evaluator computes in: residues mod p (the exact test) or
/// floating-point numbers (the test of programs that are no polynomial).
pub(crate) trait Number: Copy + std::fmt::Debug {
    /// A value no element takes, marking one not yet computed.
    const UNKNOWN: Self;
    fn is_unknown(self) -> bool;
    /// Parameter `param`'s element `flat` in the trial seeded `seed`.
    fn input(seed: u64, param: usize, flat: usize) -> Self;
    /// A float scalar parameter's value.
    fn scalar(seed: u64, param: usize) -> Self;
    /// An integer (an iterator's value, a version's initial zero).
    fn int(i: i64) -> Self;
    /// A constant given as its residue and its value.
    fn constant(residue: u64, real: f64) -> Self;
    fn ordinary(v: ir::Value) -> Result<Self, String>;
    /// A reduction's start (`+`'s 0, `max`'s -inf).
    fn identity(op: Reduction) -> Self;
    fn reduce(op: Reduction, acc: Self, x: Self) -> Self;
    fn neg(self) -> Self;
    fn add(self, x: Self) -> Self;
    fn sub(self, x: Self) -> Self;
    fn mul(self, x: Self) -> Self;
    fn inverse(self) -> Result<Self, String>;
    fn real(op: RealOp, args: &[Self]) -> Result<Self, String>;
}

impl Number for u64 {
    const UNKNOWN: u64 = u64::MAX;
    fn is_unknown(self) -> bool {
        self == u64::MAX
    }
    fn input(seed: u64, param: usize, flat: usize) -> u64 {
        random(seed, param, flat)
    }
    fn scalar(seed: u64, param: usize) -> u64 {
        random(seed, param, 0)
    }
    fn int(i: i64) -> u64 {
        residue::from_i64(i)
    }
    fn constant(residue: u64, _: f64) -> u64 {
        residue
    }
    fn ordinary(v: ir::Value) -> Result<u64, String> {
        Ok(match v {
            ir::Value::Int(i) => residue::from_i64(i),
            ir::Value::Bool(b) => u64::from(b),
            ir::Value::Float(x) => residue::from_dyadic(x)
                .ok_or_else(|| format!("the coefficient {x} is not a number"))?,
        })
    }
    // The exact test compiles only `=` and `+=` (compile.rs).
    fn identity(_: Reduction) -> u64 {
        0
    }
    fn reduce(_: Reduction, acc: u64, x: u64) -> u64 {
        residue::add(acc, x)
    }
    fn neg(self) -> u64 {
        residue::neg(self)
    }
    fn add(self, x: u64) -> u64 {
        residue::add(self, x)
    }
    fn sub(self, x: u64) -> u64 {
        residue::sub(self, x)
    }
    fn mul(self, x: u64) -> u64 {
        residue::mul(self, x)
    }
    fn inverse(self) -> Result<u64, String> {
        residue::inverse(self).ok_or_else(|| "a division by a value that is 0 mod p".to_string())
    }
    fn real(_: RealOp, _: &[u64]) -> Result<u64, String> {
        Err("an operation that is no polynomial, over Z_p".to_string())
    }
}

/// The float evaluator's marker of an element not yet computed: a NaN
/// with a payload no arithmetic produces.
const UNKNOWN_BITS: u64 = 0x7FF4_DEAD_BEEF_0001;

impl Number for f64 {
    const UNKNOWN: f64 = f64::from_bits(UNKNOWN_BITS);
    fn is_unknown(self) -> bool {
        self.to_bits() == UNKNOWN_BITS
    }
    /// Uniform in `[-1, 1)`, as the interpreter's random tensors.
    fn input(seed: u64, param: usize, flat: usize) -> f64 {
        random(seed, param, flat) as f64 / P as f64 * 2.0 - 1.0
    }
    /// In `[0.5, 1.5)`: away from 0, so that a division by it is harmless.
    fn scalar(seed: u64, param: usize) -> f64 {
        1.0 + f64::input(seed, param, 0) / 2.0
    }
    fn int(i: i64) -> f64 {
        i as f64
    }
    fn constant(_: u64, real: f64) -> f64 {
        real
    }
    fn ordinary(v: ir::Value) -> Result<f64, String> {
        Ok(to_f64(v))
    }
    fn identity(op: Reduction) -> f64 {
        match op.identity(ir::DType::F64) {
            ir::Value::Float(x) => x,
            _ => 0.0,
        }
    }
    fn reduce(op: Reduction, acc: f64, x: f64) -> f64 {
        match op {
            Reduction::Assign => x,
            Reduction::Add => acc + x,
            Reduction::Mul => acc * x,
            Reduction::Min => ir::arith::minimum(acc, x),
            Reduction::Max => ir::arith::maximum(acc, x),
        }
    }
    fn neg(self) -> f64 {
        -self
    }
    fn add(self, x: f64) -> f64 {
        self + x
    }
    fn sub(self, x: f64) -> f64 {
        self - x
    }
    fn mul(self, x: f64) -> f64 {
        self * x
    }
    fn inverse(self) -> Result<f64, String> {
        Ok(1.0 / self)
    }
    fn real(op: RealOp, args: &[f64]) -> Result<f64, String> {
        op.eval(args)
    }
}

enum Memo<T> {
    Dense(Vec<T>),
    Sparse(HashMap<usize, T>),
}

/// Why a point gave no value.
enum Stop {
    /// An out-of-bounds read of a reduction: the point contributes nothing.
    Skip,
    Fail(String),
}

/// One trial's evaluation of one graph, in residues (`u64`) or floats.
pub(crate) struct Evaluator<'g, T> {
    graph: &'g Graph,
    seed: u64,
    memo: Vec<Option<Memo<T>>>,
    /// The points of comprehensions evaluated so far (each computed
    /// element's reduction points, or its one point): the work done.
    points: u64,
}

impl<'g, T: Number> Evaluator<'g, T> {
    pub(crate) fn new(graph: &'g Graph, seed: u64) -> Evaluator<'g, T> {
        Evaluator {
            graph,
            seed,
            memo: graph.nodes.iter().map(|_| None).collect(),
            points: 0,
        }
    }

    /// The points of comprehensions evaluated so far.
    pub(crate) fn work(&self) -> u64 {
        self.points
    }

    /// Element `flat` (row-major) of version `node`.
    pub(crate) fn value(&mut self, node: usize, flat: usize) -> Result<T, String> {
        let g = self.graph;
        match &g.nodes[node].kind {
            NodeKind::Input(k) => Ok(T::input(self.seed, *k, flat)),
            NodeKind::Zeros => Ok(T::int(0)),
            NodeKind::Comp { comp, prev } => {
                if let Some(v) = self.lookup(node, flat) {
                    return Ok(v);
                }
                let v = self.compute(node, comp, *prev, flat)?;
                self.store(node, flat, v);
                Ok(v)
            }
        }
    }

    fn compute(
        &mut self,
        node: usize,
        comp: &'g Comp,
        prev: usize,
        flat: usize,
    ) -> Result<T, String> {
        let strides = &self.graph.nodes[node].strides;
        let mut iters: Vec<i64> = comp.bounds.iter().map(|b| b.0).collect();
        let mut rest = flat;
        for (d, &s) in strides.iter().enumerate() {
            iters[d] = (rest / s) as i64;
            rest %= s;
        }
        let inside = comp.bounds[..comp.n_lhs]
            .iter()
            .zip(&iters)
            .all(|(&(lo, hi), &v)| lo <= v && v < hi);
        if !inside {
            return self.value(prev, flat);
        }
        let mut acc = if comp.accumulate {
            self.value(prev, flat)?
        } else {
            T::identity(comp.op)
        };
        loop {
            self.points += 1;
            match self.point(comp, &iters) {
                Ok(x) => acc = T::reduce(comp.op, acc, x),
                Err(Stop::Skip) => {}
                Err(Stop::Fail(m)) => return Err(m),
            }
            if !advance(&mut iters, &comp.bounds, comp.n_lhs) {
                return Ok(acc);
            }
        }
    }

    fn point(&mut self, comp: &'g Comp, iters: &[i64]) -> Result<T, Stop> {
        for r in &comp.checks {
            if index(r, &self.graph.nodes[r.node].shape, iters, &comp.at)?.is_none() {
                return Err(if comp.reduction {
                    Stop::Skip
                } else {
                    Stop::Fail(out_of_bounds(
                        r,
                        &self.graph.nodes[r.node].shape,
                        iters,
                        &comp.at,
                    ))
                });
            }
        }
        self.val(&comp.body, iters, comp)
    }

    fn val(&mut self, v: &'g Val, iters: &[i64], comp: &'g Comp) -> Result<T, Stop> {
        let at = comp.at.as_str();
        let fail = |m: String| Stop::Fail(format!("{at}: {m}"));
        Ok(match v {
            Val::Const(r, x) => T::constant(*r, *x),
            Val::Iter(s) => T::int(iters[*s]),
            Val::Scalar(k) => T::scalar(self.seed, *k),
            Val::Ord(o) => T::ordinary(o.eval(iters).map_err(fail)?).map_err(fail)?,
            Val::Read(r) => {
                let shape = &self.graph.nodes[r.node].shape;
                let Some(flat) = index(r, shape, iters, at)? else {
                    // Only a read under a taken `?:` branch gets here (the
                    // others are in `checks`); in a reduction it skips the
                    // point as they do.
                    return Err(if comp.reduction {
                        Stop::Skip
                    } else {
                        Stop::Fail(out_of_bounds(r, shape, iters, at))
                    });
                };
                self.value(r.node, flat).map_err(Stop::Fail)?
            }
            Val::Neg(a) => self.val(a, iters, comp)?.neg(),
            Val::Add(a, b) => {
                let x = self.val(a, iters, comp)?;
                x.add(self.val(b, iters, comp)?)
            }
            Val::Sub(a, b) => {
                let x = self.val(a, iters, comp)?;
                x.sub(self.val(b, iters, comp)?)
            }
            Val::Mul(a, b) => {
                let x = self.val(a, iters, comp)?;
                x.mul(self.val(b, iters, comp)?)
            }
            Val::Inv(a) => self.val(a, iters, comp)?.inverse().map_err(fail)?,
            Val::Real(op, args) => {
                let mut xs = Vec::with_capacity(args.len());
                for a in args {
                    xs.push(self.val(a, iters, comp)?);
                }
                T::real(*op, &xs).map_err(fail)?
            }
            Val::Select(c, a, b) => {
                if truth(c.eval(iters).map_err(fail)?) {
                    self.val(a, iters, comp)?
                } else {
                    self.val(b, iters, comp)?
                }
            }
        })
    }

    fn lookup(&self, node: usize, flat: usize) -> Option<T> {
        match self.memo[node].as_ref()? {
            Memo::Dense(v) => Some(v[flat]).filter(|x| !x.is_unknown()),
            Memo::Sparse(m) => m.get(&flat).copied(),
        }
    }

    fn store(&mut self, node: usize, flat: usize, v: T) {
        let n: usize = self.graph.nodes[node].shape.iter().product();
        let memo = self.memo[node].get_or_insert_with(|| {
            if n <= DENSE_LIMIT {
                Memo::Dense(vec![T::UNKNOWN; n])
            } else {
                Memo::Sparse(HashMap::new())
            }
        });
        match memo {
            Memo::Dense(d) => d[flat] = v,
            Memo::Sparse(m) => {
                m.insert(flat, v);
            }
        }
    }
}

/// The flat index a read reaches, `None` when it is out of bounds.
fn index(r: &Read, shape: &[usize], iters: &[i64], at: &str) -> Result<Option<usize>, Stop> {
    let mut flat = 0usize;
    for (s, &n) in r.subs.iter().zip(shape) {
        let v = match s {
            Ord::Form(f) => ir::Value::Int(f.eval(iters)),
            _ => s
                .eval(iters)
                .map_err(|m| Stop::Fail(format!("{at}: {m}")))?,
        };
        let i = match v {
            ir::Value::Int(i) => i,
            v => {
                return Err(Stop::Fail(format!(
                    "{at}: a subscript of `{}` is {v:?}",
                    r.tensor
                )))
            }
        };
        if i < 0 || i >= n as i64 {
            return Ok(None);
        }
        flat = flat * n + i as usize;
    }
    Ok(Some(flat))
}

fn out_of_bounds(r: &Read, shape: &[usize], iters: &[i64], at: &str) -> String {
    let subs: Vec<String> = r
        .subs
        .iter()
        .map(|s| s.eval(iters).map_or_else(|e| e, ir::arith::show_value))
        .collect();
    format!(
        "{at}: `{}` is read at ({}), outside its shape {}",
        r.tensor,
        subs.join(", "),
        super::graph::show(shape)
    )
}

/// Steps the odometer of the reduction iterators (`iters[from..]`, the last
/// fastest); false after the last point.
fn advance(iters: &mut [i64], bounds: &[(i64, i64)], from: usize) -> bool {
    for k in (from..iters.len()).rev() {
        iters[k] += 1;
        if iters[k] < bounds[k].1 {
            return true;
        }
        iters[k] = bounds[k].0;
    }
    false
}

/// The input value of parameter `param` at element `flat` in the trial
/// seeded `seed`: uniform in `[0, P)`, distinct elements independent.
pub(crate) fn random(seed: u64, param: usize, flat: usize) -> u64 {
    // An injective key (positions below 2^24, elements below 2^40), mixed
    // with the seed by a bijection, then split-mix steps until 31 bits
    // below P come out (rejecting the single value P keeps them uniform).
    let key = ((param as u64) << 40) ^ flat as u64;
    let mut state = mix(key ^ mix(seed));
    loop {
        state = mix(state.wrapping_add(0x9E37_79B9_7F4A_7C15));
        let x = state >> 33;
        if x < P {
            return x;
        }
    }
}

/// SplitMix64's finalizer, a bijection on `u64`.
pub(crate) fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
