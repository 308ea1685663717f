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

use super::expr::{truth, Comp, Ord, Read, Val};
use super::graph::{Graph, NodeKind};

/// Memo tables of at most this many elements are dense arrays.
const DENSE_LIMIT: usize = 1 << 20;
const UNKNOWN: u64 = u64::MAX;

enum Memo {
    Dense(Vec<u64>),
    Sparse(HashMap<usize, u64>),
}

/// Why a point gave no value.
enum Stop {
    /// An out-of-bounds read of a reduction: the point contributes nothing.
    Skip,
    Fail(String),
}

/// One trial's evaluation of one graph.
pub(crate) struct Evaluator<'g> {
    graph: &'g Graph,
    seed: u64,
    memo: Vec<Option<Memo>>,
}

impl<'g> Evaluator<'g> {
    pub(crate) fn new(graph: &'g Graph, seed: u64) -> Evaluator<'g> {
        Evaluator {
            graph,
            seed,
            memo: graph.nodes.iter().map(|_| None).collect(),
        }
    }

    /// Element `flat` (row-major) of version `node`.
    pub(crate) fn value(&mut self, node: usize, flat: usize) -> Result<u64, String> {
        let g = self.graph;
        match &g.nodes[node].kind {
            NodeKind::Input(k) => Ok(random(self.seed, *k, flat)),
            NodeKind::Zeros => Ok(0),
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
    ) -> Result<u64, String> {
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
            0
        };
        loop {
            match self.point(comp, &iters) {
                Ok(x) => acc = residue::add(acc, x),
                Err(Stop::Skip) => {}
                Err(Stop::Fail(m)) => return Err(m),
            }
            if !advance(&mut iters, &comp.bounds, comp.n_lhs) {
                return Ok(acc);
            }
        }
    }

    fn point(&mut self, comp: &'g Comp, iters: &[i64]) -> Result<u64, Stop> {
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

    fn val(&mut self, v: &'g Val, iters: &[i64], comp: &'g Comp) -> Result<u64, Stop> {
        let at = comp.at.as_str();
        let fail = |m: String| Stop::Fail(format!("{at}: {m}"));
        Ok(match v {
            Val::Const(c) => *c,
            Val::Iter(s) => residue::from_i64(iters[*s]),
            Val::Scalar(k) => random(self.seed, *k, 0),
            Val::Ord(o) => match o.eval(iters).map_err(fail)? {
                ir::Value::Int(i) => residue::from_i64(i),
                ir::Value::Bool(b) => u64::from(b),
                ir::Value::Float(x) => residue::from_dyadic(x)
                    .ok_or_else(|| fail(format!("the coefficient {x} is not a number")))?,
            },
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
            Val::Neg(a) => residue::neg(self.val(a, iters, comp)?),
            Val::Add(a, b) => {
                let x = self.val(a, iters, comp)?;
                residue::add(x, self.val(b, iters, comp)?)
            }
            Val::Sub(a, b) => {
                let x = self.val(a, iters, comp)?;
                residue::sub(x, self.val(b, iters, comp)?)
            }
            Val::Mul(a, b) => {
                let x = self.val(a, iters, comp)?;
                residue::mul(x, self.val(b, iters, comp)?)
            }
            Val::Inv(a) => residue::inverse(self.val(a, iters, comp)?)
                .ok_or_else(|| fail("a division by a value that is 0 mod p".to_string()))?,
            Val::Select(c, a, b) => {
                if truth(c.eval(iters).map_err(fail)?) {
                    self.val(a, iters, comp)?
                } else {
                    self.val(b, iters, comp)?
                }
            }
        })
    }

    fn lookup(&self, node: usize, flat: usize) -> Option<u64> {
        match self.memo[node].as_ref()? {
            Memo::Dense(v) => Some(v[flat]).filter(|&x| x != UNKNOWN),
            Memo::Sparse(m) => m.get(&flat).copied(),
        }
    }

    fn store(&mut self, node: usize, flat: usize, v: u64) {
        let n: usize = self.graph.nodes[node].shape.iter().product();
        let memo = self.memo[node].get_or_insert_with(|| {
            if n <= DENSE_LIMIT {
                Memo::Dense(vec![UNKNOWN; n])
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
