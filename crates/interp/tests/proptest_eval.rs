//! Property test: the interpreter agrees with a direct evaluation.
//!
//! A random comprehension is generated as a small description ([`Case`]);
//! from it the test writes both the TC source and an independent evaluation
//! in plain loops that follows `docs/LANGUAGE.md`:
//!
//! - every iterator has a range: fixed by `where`, or inferred from the
//!   subscripts that mention it alone (TC §3.1; those take precedence over
//!   subscripts that also mention resolved iterators), intersected;
//! - a new tensor starts as zeros and its shape is the upper bounds of its
//!   left-hand-side ranges;
//! - in a reduction (`+=! *=! max=! min=!`), a point where an unguarded read
//!   falls outside its tensor contributes nothing; in `=` it is an error;
//! - a read under `?:` is evaluated only when its branch is taken; out of
//!   bounds it then skips the point in a reduction and is an error in `=`;
//! - `float32` rounds after every operation, `int32` wraps.
//!
//! The interpreter's result (through `tc::check_source` and `interp::run`)
//! must equal the evaluation: exactly for integers, within a relative 1e-5
//! for floats. When the evaluation finds an out-of-bounds read that is an
//! error, checking or running must fail.

use std::collections::HashMap;

use interp::{Arg, Mode, Tensor};
use ir::DType;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestRunner};

const DTYPES: [DType; 4] = [DType::F32, DType::F64, DType::I32, DType::I64];
const OPS: [&str; 5] = ["=", "+=!", "*=!", "max=!", "min=!"];

/// An affine subscript: `sum(coefs[j] * iterator j) + offset`.
#[derive(Clone, Debug)]
struct Sub {
    coefs: Vec<i64>,
    offset: i64,
}

impl Sub {
    fn at(&self, point: &[i64]) -> i64 {
        self.coefs
            .iter()
            .zip(point)
            .map(|(c, x)| c * x)
            .sum::<i64>()
            + self.offset
    }

    /// The one iterator this subscript mentions, with its coefficient.
    fn alone(&self) -> Option<(usize, i64)> {
        let mut nonzero = self.coefs.iter().enumerate().filter(|(_, c)| **c != 0);
        match (nonzero.next(), nonzero.next()) {
            (Some((j, c)), None) => Some((j, *c)),
            _ => None,
        }
    }

    fn text(&self, names: &[String]) -> String {
        let mut s = String::new();
        for (c, n) in self.coefs.iter().zip(names) {
            let term = match *c {
                0 => continue,
                1 => n.clone(),
                -1 => format!("-{n}"),
                c => format!("{c} * {n}"),
            };
            if s.is_empty() {
                s = term;
            } else if let Some(t) = term.strip_prefix('-') {
                s = format!("{s} - {t}");
            } else {
                s = format!("{s} + {term}");
            }
        }
        match (s.is_empty(), self.offset) {
            (true, o) => o.to_string(),
            (false, 0) => s,
            (false, o) if o < 0 => format!("{s} - {}", -o),
            (false, o) => format!("{s} + {o}"),
        }
    }
}

/// A read of input `input`, one subscript per dimension.
#[derive(Clone, Debug)]
struct Read {
    input: usize,
    subs: Vec<Sub>,
}

/// A condition guarding a read: the exact bounds check of the read, or a
/// comparison of an iterator with a constant (which may let an
/// out-of-bounds read through).
#[derive(Clone, Debug)]
enum Guard {
    InBounds,
    Below { iter: usize, value: i64 },
}

#[derive(Clone, Debug)]
enum Term {
    Read(Read),
    /// `(cond ? read : other)`.
    Guarded {
        guard: Guard,
        read: Read,
        other: f64,
    },
    Lit(f64),
    /// An iterator's value, converted to the element type.
    Iter(usize),
}

/// The range of an iterator: fixed by `where`, or inferred.
#[derive(Clone, Debug)]
struct Iter {
    name: String,
    lo: i64,
    hi: i64,
    fixed: bool,
    lhs: bool,
}

/// One comprehension `O(lhs...) op body where ...` and its inputs.
#[derive(Clone, Debug)]
struct Case {
    dtype: DType,
    shapes: Vec<Vec<usize>>,
    iters: Vec<Iter>,
    op: &'static str,
    /// Terms combined left to right with `ops`.
    terms: Vec<Term>,
    ops: Vec<char>,
    /// Whether the first term (an unguarded read) is written as a `where` let.
    let_first: bool,
    /// `exists` clauses that bound inferred iterators.
    exists: Vec<Read>,
    seed: u64,
}

/// The description as proptest draws it, before it is made consistent.
#[derive(Clone, Debug)]
struct Raw {
    dtype: usize,
    shapes: Vec<Vec<usize>>,
    lhs: Vec<RawIter>,
    red: Vec<RawIter>,
    op: usize,
    terms: Vec<RawTerm>,
    ops: Vec<bool>,
    let_first: bool,
    seed: u64,
}

#[derive(Clone, Debug)]
struct RawIter {
    inferred: bool,
    lo: i64,
    len: i64,
    /// The subscript of the `exists` read that bounds it when inferred.
    coef: i64,
    offset: i64,
    input: usize,
    dim: usize,
}

#[derive(Clone, Debug)]
struct RawTerm {
    kind: u8,
    input: usize,
    /// Per dimension: coefficients for up to six iterators, and an offset.
    subs: Vec<(Vec<i64>, i64)>,
    guard_exact: bool,
    guard_iter: usize,
    guard_value: i64,
    lit: f64,
}

fn raw_iter(lo: std::ops::RangeInclusive<i64>) -> impl Strategy<Value = RawIter> {
    (
        any::<bool>(),
        lo,
        1..=5i64,
        prop_oneof![Just(1i64), Just(2), Just(-1)],
        0..=2i64,
        0..3usize,
        0..4usize,
    )
        .prop_map(|(inferred, lo, len, coef, offset, input, dim)| RawIter {
            inferred,
            lo,
            len,
            coef,
            offset,
            input,
            dim,
        })
}

fn raw_term() -> impl Strategy<Value = RawTerm> {
    // Coefficients are mostly 0 and 1, so that reads are often in bounds.
    let coef = prop_oneof![4 => Just(0i64), 3 => Just(1), 1 => Just(2), 1 => Just(-1)];
    let offset = prop_oneof![3 => Just(0i64), 2 => -2..=2i64];
    let sub = (prop::collection::vec(coef, 6), offset);
    (
        0..10u8,
        0..3usize,
        prop::collection::vec(sub, 4),
        prop::bool::weighted(0.8),
        0..6usize,
        0..=5i64,
        prop_oneof![Just(0.0), Just(1.0), Just(2.0), Just(0.5), Just(-1.5)],
    )
        .prop_map(
            |(kind, input, subs, guard_exact, guard_iter, guard_value, lit)| RawTerm {
                kind,
                input,
                subs,
                guard_exact,
                guard_iter,
                guard_value,
                lit,
            },
        )
}

fn raw() -> impl Strategy<Value = Raw> {
    let shape = prop::collection::vec(1..=5usize, 1..=4);
    (
        0..4usize,
        prop::collection::vec(shape, 1..=3),
        prop::collection::vec(raw_iter(0..=2), 1..=4),
        prop::collection::vec(raw_iter(-1..=1), 0..=2),
        0..5usize,
        prop::collection::vec(raw_term(), 1..=4),
        prop::collection::vec(any::<bool>(), 3),
        prop::bool::weighted(0.3),
        any::<u64>(),
    )
        .prop_map(
            |(dtype, shapes, lhs, red, op, terms, ops, let_first, seed)| Raw {
                dtype,
                shapes,
                lhs,
                red,
                op,
                terms,
                ops,
                let_first,
                seed,
            },
        )
}

/// The range an alone subscript `a*x + c` allows `x` in a dimension of size
/// `d`: the largest range starting at 0 or above that stays inside.
fn alone_range(a: i64, c: i64, d: i64) -> (i64, i64) {
    let (lo, hi) = if a > 0 {
        (
            (-c).div_euclid(a) + i64::from((-c).rem_euclid(a) != 0),
            (d - 1 - c).div_euclid(a) + 1,
        )
    } else {
        let m = -a;
        (
            (c - (d - 1)).div_euclid(m) + i64::from((c - (d - 1)).rem_euclid(m) != 0),
            c.div_euclid(m) + 1,
        )
    };
    (lo.max(0), hi)
}

/// Makes a drawn description consistent: `=` has no reduction iterators,
/// every reduction iterator is used, every inferred iterator is bounded by
/// an `exists` read and has a non-empty range (otherwise it is fixed).
fn build(r: &Raw) -> Case {
    let op = OPS[r.op];
    let dtype = DTYPES[r.dtype];
    let red: &[RawIter] = if op == "=" { &[] } else { &r.red };
    let raw_iters: Vec<(&RawIter, bool)> = r
        .lhs
        .iter()
        .map(|x| (x, true))
        .chain(red.iter().map(|x| (x, false)))
        .collect();
    let n = raw_iters.len();
    let read = |input: usize, subs: &[(Vec<i64>, i64)]| {
        let input = input % r.shapes.len();
        let subs = r.shapes[input]
            .iter()
            .enumerate()
            .map(|(d, _)| {
                let (coefs, offset) = &subs[d];
                Sub {
                    coefs: coefs[..n].to_vec(),
                    offset: *offset,
                }
            })
            .collect();
        Read { input, subs }
    };
    let mut terms: Vec<Term> = r
        .terms
        .iter()
        .map(|t| match t.kind {
            // In `=` an unguarded read out of bounds is an error; most reads
            // there are guarded, so that most cases have values.
            2..=4 if op == "=" => Term::Guarded {
                guard: Guard::InBounds,
                read: read(t.input, &t.subs),
                other: t.lit,
            },
            0..=4 => Term::Read(read(t.input, &t.subs)),
            5..=7 => Term::Guarded {
                guard: if t.guard_exact {
                    Guard::InBounds
                } else {
                    Guard::Below {
                        iter: t.guard_iter % n,
                        value: t.guard_value,
                    }
                },
                read: read(t.input, &t.subs),
                other: t.lit,
            },
            8 => Term::Lit(t.lit),
            _ => Term::Iter(t.guard_iter % n),
        })
        .collect();
    // The first term is a read, so that the body has the element type.
    if matches!(terms[0], Term::Lit(_) | Term::Iter(_)) {
        terms[0] = Term::Read(read(r.terms[0].input, &r.terms[0].subs));
    }
    if dtype.is_int() {
        for t in &mut terms {
            match t {
                Term::Lit(v) | Term::Guarded { other: v, .. } => *v = v.trunc(),
                _ => {}
            }
        }
    }
    // A let holds an unguarded read.
    let let_first = r.let_first && matches!(terms[0], Term::Read(_));
    let mut iters: Vec<Iter> = raw_iters
        .iter()
        .enumerate()
        .map(|(j, (x, lhs))| Iter {
            name: if *lhs {
                format!("i{j}")
            } else {
                format!("k{}", j - r.lhs.len())
            },
            lo: x.lo,
            hi: x.lo + x.len,
            fixed: !x.inferred,
            lhs: *lhs,
        })
        .collect();
    // Reduction iterators that the body does not mention are dropped by
    // giving them no range: they must not exist at all.
    let used = |j: usize, terms: &[Term]| {
        terms.iter().any(|t| match t {
            Term::Read(rd) => rd.subs.iter().any(|s| s.coefs[j] != 0),
            Term::Guarded { guard, read, .. } => {
                read.subs.iter().any(|s| s.coefs[j] != 0)
                    || matches!(guard, Guard::Below { iter, .. } if *iter == j)
            }
            Term::Iter(i) => *i == j,
            Term::Lit(_) => false,
        })
    };
    let keep: Vec<usize> = (0..n)
        .filter(|&j| iters[j].lhs || used(j, &terms))
        .collect();
    let remap = |j: usize| keep.iter().position(|&k| k == j);
    let project = |s: &Sub| Sub {
        coefs: keep.iter().map(|&k| s.coefs[k]).collect(),
        offset: s.offset,
    };
    let project_read = |rd: &Read| Read {
        input: rd.input,
        subs: rd.subs.iter().map(project).collect(),
    };
    let terms: Vec<Term> = terms
        .iter()
        .map(|t| match t {
            Term::Read(rd) => Term::Read(project_read(rd)),
            Term::Guarded { guard, read, other } => Term::Guarded {
                guard: match guard {
                    Guard::InBounds => Guard::InBounds,
                    Guard::Below { iter, value } => Guard::Below {
                        iter: remap(*iter).unwrap_or(0),
                        value: *value,
                    },
                },
                read: project_read(read),
                other: *other,
            },
            Term::Iter(j) => Term::Iter(remap(*j).unwrap_or(0)),
            Term::Lit(v) => Term::Lit(*v),
        })
        .collect();
    iters = keep.iter().map(|&k| iters[k].clone()).collect();
    let raw_kept: Vec<&RawIter> = keep.iter().map(|&k| raw_iters[k].0).collect();
    let m = iters.len();
    // Inferred iterators: an `exists` read bounds each; the range is the
    // intersection over the subscripts that mention it alone.
    let mut exists = Vec::new();
    for (j, x) in raw_kept.iter().enumerate() {
        if iters[j].fixed {
            continue;
        }
        let input = x.input % r.shapes.len();
        let rank = r.shapes[input].len();
        let subs = (0..rank)
            .map(|d| {
                let mut coefs = vec![0; m];
                if d == x.dim % rank {
                    coefs[j] = x.coef;
                    return Sub {
                        coefs,
                        offset: x.offset,
                    };
                }
                Sub { coefs, offset: 0 }
            })
            .collect();
        exists.push(Read { input, subs });
    }
    let unguarded: Vec<&Read> = terms
        .iter()
        .filter_map(|t| match t {
            Term::Read(rd) => Some(rd),
            _ => None,
        })
        .chain(&exists)
        .collect();
    let mut dropped = vec![false; exists.len()];
    let mut e = 0;
    for (j, it) in iters.iter_mut().enumerate() {
        if it.fixed {
            continue;
        }
        let (mut lo, mut hi) = (0, i64::MAX);
        for rd in &unguarded {
            for (s, &d) in rd.subs.iter().zip(&r.shapes[rd.input]) {
                if let Some((k, a)) = s.alone() {
                    if k == j {
                        let (l, h) = alone_range(a, s.offset, d as i64);
                        lo = lo.max(l);
                        hi = hi.min(h);
                    }
                }
            }
        }
        if hi > lo {
            it.lo = lo;
            it.hi = hi;
        } else {
            // An empty inferred range is an error; fix this one instead.
            it.fixed = true;
            dropped[e] = true;
        }
        e += 1;
    }
    let exists = exists
        .into_iter()
        .zip(dropped)
        .filter(|(_, d)| !d)
        .map(|(x, _)| x)
        .collect();
    let ops = r.ops.iter().map(|&b| if b { '+' } else { '*' }).collect();
    Case {
        dtype,
        shapes: r.shapes.clone(),
        iters,
        op,
        terms,
        ops,
        let_first,
        exists,
        seed: r.seed,
    }
}

fn dims_name(t: usize, d: usize) -> String {
    format!("N{t}_{d}")
}

impl Case {
    fn names(&self) -> Vec<String> {
        self.iters.iter().map(|x| x.name.clone()).collect()
    }

    fn read_text(&self, rd: &Read) -> String {
        let subs: Vec<String> = rd.subs.iter().map(|s| s.text(&self.names())).collect();
        format!("A{}({})", rd.input, subs.join(", "))
    }

    fn term_text(&self, t: &Term, k: usize) -> String {
        let lit = |v: f64| {
            let s = if self.dtype.is_float() {
                format!("{v:?}")
            } else {
                format!("{}", v as i64)
            };
            if v < 0.0 {
                format!("({s})")
            } else {
                s
            }
        };
        match t {
            Term::Read(_) if k == 0 && self.let_first => "t0".to_string(),
            Term::Read(rd) => self.read_text(rd),
            Term::Guarded { guard, read, other } => {
                let cond = match guard {
                    Guard::InBounds => read
                        .subs
                        .iter()
                        .enumerate()
                        .map(|(d, s)| {
                            let s = s.text(&self.names());
                            format!("{s} >= 0 && {s} < A{}.{d}", read.input)
                        })
                        .collect::<Vec<_>>()
                        .join(" && "),
                    Guard::Below { iter, value } => format!("{} < {value}", self.iters[*iter].name),
                };
                format!("({cond} ? {} : {})", self.read_text(read), lit(*other))
            }
            Term::Lit(v) => lit(*v),
            Term::Iter(j) => format!("{}({})", self.dtype, self.iters[*j].name),
        }
    }

    /// The TC source of the case: one def `f`.
    fn source(&self) -> String {
        let params: Vec<String> = self
            .shapes
            .iter()
            .enumerate()
            .map(|(t, s)| {
                let dims: Vec<String> = (0..s.len()).map(|d| dims_name(t, d)).collect();
                format!("{}({}) A{t}", self.dtype, dims.join(", "))
            })
            .collect();
        let mut body = self.term_text(&self.terms[0], 0);
        for (k, t) in self.terms.iter().enumerate().skip(1) {
            body = format!("({body} {} {})", self.ops[k - 1], self.term_text(t, k));
        }
        let mut clauses: Vec<String> = self
            .iters
            .iter()
            .filter(|x| x.fixed)
            .map(|x| format!("{} in {}:{}", x.name, x.lo, x.hi))
            .collect();
        if self.let_first {
            if let Term::Read(rd) = &self.terms[0] {
                clauses.push(format!("t0 = {}", self.read_text(rd)));
            }
        }
        clauses.extend(
            self.exists
                .iter()
                .map(|rd| format!("exists {}", self.read_text(rd))),
        );
        let lhs: Vec<String> = self
            .iters
            .iter()
            .filter(|x| x.lhs)
            .map(|x| x.name.clone())
            .collect();
        let wheres = if clauses.is_empty() {
            String::new()
        } else {
            format!(" where {}", clauses.join(", "))
        };
        format!(
            "def f({}) -> (O) {{\n  O({}) {} {body}{wheres}\n}}\n",
            params.join(", "),
            lhs.join(", "),
            self.op
        )
    }
}

/// Element arithmetic with the rounding of each type.
trait Elem: Copy + PartialOrd + std::fmt::Debug {
    fn from_f64(x: f64) -> Self;
    fn from_i64(x: i64) -> Self;
    fn add(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    fn min_value() -> Self;
    fn max_value() -> Self;
}

#[derive(Clone, Copy, Debug, PartialEq, PartialOrd)]
struct F32(f64);
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd)]
struct F64(f64);
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd)]
struct I32(i64);
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd)]
struct I64(i64);

fn round32(x: f64) -> f64 {
    f64::from(x as f32)
}

impl Elem for F32 {
    fn from_f64(x: f64) -> Self {
        F32(round32(x))
    }
    fn from_i64(x: i64) -> Self {
        F32(round32(x as f64))
    }
    fn add(self, o: Self) -> Self {
        F32(round32(self.0 + o.0))
    }
    fn mul(self, o: Self) -> Self {
        F32(round32(self.0 * o.0))
    }
    fn min_value() -> Self {
        F32(f64::NEG_INFINITY)
    }
    fn max_value() -> Self {
        F32(f64::INFINITY)
    }
}

impl Elem for F64 {
    fn from_f64(x: f64) -> Self {
        F64(x)
    }
    fn from_i64(x: i64) -> Self {
        F64(x as f64)
    }
    fn add(self, o: Self) -> Self {
        F64(self.0 + o.0)
    }
    fn mul(self, o: Self) -> Self {
        F64(self.0 * o.0)
    }
    fn min_value() -> Self {
        F64(f64::NEG_INFINITY)
    }
    fn max_value() -> Self {
        F64(f64::INFINITY)
    }
}

impl Elem for I32 {
    fn from_f64(x: f64) -> Self {
        I32(x as i64)
    }
    fn from_i64(x: i64) -> Self {
        I32(i64::from(x as i32))
    }
    fn add(self, o: Self) -> Self {
        I32(i64::from((self.0 as i32).wrapping_add(o.0 as i32)))
    }
    fn mul(self, o: Self) -> Self {
        I32(i64::from((self.0 as i32).wrapping_mul(o.0 as i32)))
    }
    fn min_value() -> Self {
        I32(i64::from(i32::MIN))
    }
    fn max_value() -> Self {
        I32(i64::from(i32::MAX))
    }
}

impl Elem for I64 {
    fn from_f64(x: f64) -> Self {
        I64(x as i64)
    }
    fn from_i64(x: i64) -> Self {
        I64(x)
    }
    fn add(self, o: Self) -> Self {
        I64(self.0.wrapping_add(o.0))
    }
    fn mul(self, o: Self) -> Self {
        I64(self.0.wrapping_mul(o.0))
    }
    fn min_value() -> Self {
        I64(i64::MIN)
    }
    fn max_value() -> Self {
        I64(i64::MAX)
    }
}

/// What the direct evaluation gives.
#[derive(Debug)]
enum Expected<E> {
    /// The output's shape and values, with for each element the sum of the
    /// magnitudes that went into it (the scale for float tolerances), and
    /// whether some output point of the box got no contribution.
    Values(Vec<usize>, Vec<E>, Vec<f64>, bool),
    /// An out-of-bounds read where that is an error.
    Error(String),
}

/// The flat row-major index of `idx` in `shape`, if it is inside.
fn flat(shape: &[usize], idx: &[i64]) -> Option<usize> {
    let mut f = 0usize;
    for (&d, &i) in shape.iter().zip(idx) {
        if i < 0 || i >= d as i64 {
            return None;
        }
        f = f * d + i as usize;
    }
    Some(f)
}

/// Every point of the box `ranges`, row-major.
fn points(ranges: &[(i64, i64)]) -> Vec<Vec<i64>> {
    let mut out = vec![Vec::new()];
    for &(lo, hi) in ranges {
        out = out
            .into_iter()
            .flat_map(|p| (lo..hi).map(move |x| [p.clone(), vec![x]].concat()))
            .collect();
    }
    out
}

fn evaluate<E: Elem>(case: &Case, inputs: &[Vec<E>], magnitude: impl Fn(E) -> f64) -> Expected<E> {
    let lhs: Vec<&Iter> = case.iters.iter().filter(|x| x.lhs).collect();
    let shape: Vec<usize> = lhs.iter().map(|x| x.hi as usize).collect();
    let size: usize = shape.iter().product();
    let mut out = vec![E::from_i64(0); size];
    let mut scale = vec![0.0; size];
    let mut empty_point = false;
    let red: Vec<(i64, i64)> = case
        .iters
        .iter()
        .filter(|x| !x.lhs)
        .map(|x| (x.lo, x.hi))
        .collect();
    let lhs_ranges: Vec<(i64, i64)> = lhs.iter().map(|x| (x.lo, x.hi)).collect();
    let read = |rd: &Read, p: &[i64]| -> Option<E> {
        let idx: Vec<i64> = rd.subs.iter().map(|s| s.at(p)).collect();
        flat(&case.shapes[rd.input], &idx).map(|f| inputs[rd.input][f])
    };
    for o in points(&lhs_ranges) {
        let mut acc = match case.op {
            "*=!" => E::from_i64(1),
            "max=!" => E::min_value(),
            "min=!" => E::max_value(),
            _ => E::from_i64(0),
        };
        let mut mag = 0.0;
        let mut contributions = 0;
        'points: for r in points(&red) {
            let p = [o.clone(), r].concat();
            // Unguarded reads first: out of bounds skips the point in a
            // reduction and is an error in `=`.
            let mut skip = false;
            for t in &case.terms {
                if let Term::Read(rd) = t {
                    if read(rd, &p).is_none() {
                        if case.op == "=" {
                            return Expected::Error(format!(
                                "`=` reads {} out of bounds at {p:?}",
                                case.read_text(rd)
                            ));
                        }
                        skip = true;
                    }
                }
            }
            if skip {
                continue;
            }
            let mut value: Option<E> = None;
            for (k, t) in case.terms.iter().enumerate() {
                let v = match t {
                    Term::Read(rd) => read(rd, &p).expect("checked above"),
                    Term::Lit(x) => E::from_f64(*x),
                    Term::Iter(j) => E::from_i64(p[*j]),
                    Term::Guarded {
                        guard,
                        read: rd,
                        other,
                    } => {
                        let taken = match guard {
                            Guard::InBounds => read(rd, &p).is_some(),
                            Guard::Below { iter, value } => p[*iter] < *value,
                        };
                        if !taken {
                            E::from_f64(*other)
                        } else if let Some(v) = read(rd, &p) {
                            v
                        } else if case.op == "=" {
                            return Expected::Error(format!(
                                "guarded read {} out of bounds at {p:?}",
                                case.read_text(rd)
                            ));
                        } else {
                            // A taken branch's read is evaluated, so out
                            // of bounds it skips the point as any read does.
                            continue 'points;
                        }
                    }
                };
                value = Some(match value {
                    None => v,
                    Some(a) if case.ops[k - 1] == '+' => a.add(v),
                    Some(a) => a.mul(v),
                });
            }
            let v = value.expect("at least one term");
            mag += magnitude(v);
            contributions += 1;
            acc = match case.op {
                "=" => v,
                "+=!" => acc.add(v),
                "*=!" => acc.mul(v),
                "max=!" if v > acc => v,
                "min=!" if v < acc => v,
                _ => acc,
            };
        }
        let f = flat(&shape, &o).expect("the box is inside the output");
        out[f] = acc;
        scale[f] = mag;
        empty_point |= contributions == 0;
    }
    Expected::Values(shape, out, scale, empty_point)
}

/// Checks and runs the case; compares with the evaluation.
fn agree(case: &Case) -> Result<Outcome, TestCaseError> {
    let src = case.source();
    let inputs: Vec<Tensor> = case
        .shapes
        .iter()
        .enumerate()
        .map(|(t, s)| Tensor::random(case.dtype, s, case.seed.wrapping_add(t as u64)))
        .collect();
    let floats: Vec<Vec<f64>> = inputs.iter().map(Tensor::to_f64_vec).collect();
    let ints = |t: &Tensor| t.to_i64_vec();
    let expected: Expected<f64> = match case.dtype {
        DType::F32 => convert(
            evaluate(case, &wrap(&floats, F32), |x: F32| x.0.abs()),
            |x| x.0,
        ),
        DType::F64 => convert(
            evaluate(case, &wrap(&floats, F64), |x: F64| x.0.abs()),
            |x| x.0,
        ),
        DType::I32 => {
            let v: Vec<Vec<I32>> = inputs
                .iter()
                .map(|t| ints(t).into_iter().map(I32).collect())
                .collect();
            convert(evaluate(case, &v, |_| 0.0), |x| x.0 as f64)
        }
        _ => {
            let v: Vec<Vec<I64>> = inputs
                .iter()
                .map(|t| ints(t).into_iter().map(I64).collect())
                .collect();
            convert(evaluate(case, &v, |_| 0.0), |x| x.0 as f64)
        }
    };
    let args: HashMap<String, Arg> = inputs
        .iter()
        .enumerate()
        .map(|(t, x)| (format!("A{t}"), Arg::Tensor(x.clone())))
        .collect();
    let checked = tc::check_source(&src);
    let result = checked
        .as_ref()
        .map_err(|d| tc::render_diagnostics(d, "case.tc", &src))
        .and_then(|c| {
            interp::run(&c.program, "f", &args, &HashMap::new(), Mode::Real).map_err(|e| e.message)
        });
    match (expected, result) {
        (Expected::Error(_), Err(_)) => Ok(Outcome::Error),
        (Expected::Error(why), Ok(_)) => Err(TestCaseError::fail(format!(
            "{src}expected an error ({why}), but it ran"
        ))),
        (Expected::Values(..), Err(e)) => Err(TestCaseError::fail(format!("{src}failed:\n{e}"))),
        (Expected::Values(shape, want, scale, empty_point), Ok(outs)) => {
            let (name, got) = &outs[0];
            prop_assert_eq!(name, "O");
            prop_assert_eq!(got.dtype(), case.dtype, "{}", src);
            prop_assert_eq!(&got.shape(), &shape, "{}", src);
            let got_values = got.to_f64_vec();
            for (k, ((g, w), s)) in got_values.iter().zip(&want).zip(&scale).enumerate() {
                let ok = if case.dtype.is_float() {
                    g == w || (g - w).abs() <= 1e-5 * w.abs().max(*s).max(1e-6)
                } else {
                    g == w
                };
                prop_assert!(
                    ok,
                    "{}element {} is {}, expected {}\ninputs: {:?}",
                    src,
                    k,
                    g,
                    w,
                    floats
                );
            }
            Ok(if empty_point {
                Outcome::Skipped
            } else {
                Outcome::Values
            })
        }
    }
}

fn wrap<E>(v: &[Vec<f64>], f: impl Fn(f64) -> E + Copy) -> Vec<Vec<E>> {
    v.iter()
        .map(|x| x.iter().map(|&y| f(y)).collect())
        .collect()
}

fn convert<E>(e: Expected<E>, f: impl Fn(E) -> f64) -> Expected<f64> {
    match e {
        Expected::Values(s, v, m, e) => Expected::Values(s, v.into_iter().map(f).collect(), m, e),
        Expected::Error(w) => Expected::Error(w),
    }
}

/// How a case ended, for the coverage check.
#[derive(Debug, PartialEq)]
enum Outcome {
    Values,
    /// Values, and some output element of a reduction got no contribution.
    Skipped,
    Error,
}

proptest! {
    #![proptest_config(Config { cases: 512, failure_persistence: None, ..Config::default() })]

    #[test]
    fn the_interpreter_agrees_with_direct_evaluation(r in raw()) {
        agree(&build(&r))?;
    }
}

/// The generated cases exercise values, skipped out-of-bounds points and
/// errors in useful proportions.
#[test]
fn the_cases_cover_values_skips_and_errors() {
    let mut runner = TestRunner::deterministic();
    let strategy = raw();
    let mut counts: HashMap<String, usize> = HashMap::new();
    for _ in 0..400 {
        let r = strategy.new_tree(&mut runner).expect("a case").current();
        let case = build(&r);
        let outcome = agree(&case).unwrap_or_else(|e| panic!("{e}"));
        *counts.entry(format!("{outcome:?}")).or_default() += 1;
        *counts
            .entry(format!("{} {outcome:?}", case.op))
            .or_default() += 1;
        *counts.entry(case.op.to_string()).or_default() += 1;
        if case.iters.iter().any(|x| !x.fixed) {
            *counts.entry("inferred".to_string()).or_default() += 1;
        }
    }
    let at_least = |key: &str, n: usize| {
        let c = counts.get(key).copied().unwrap_or(0);
        assert!(c >= n, "only {c} of 400 cases are `{key}`: {counts:?}");
    };
    at_least("Values", 40);
    at_least("Skipped", 100);
    at_least("Error", 20);
    at_least("= Values", 20);
    at_least("= Error", 10);
    at_least("inferred", 100);
    for op in OPS {
        at_least(op, 40);
    }
}

/// A point that an unguarded out-of-bounds read skips evaluates nothing
/// else, whatever the order of the reads (the interpreter once evaluated the
/// guarded read first and reported it out of bounds).
#[test]
fn a_skipped_point_evaluates_no_guarded_read() {
    let src = "def f(float(N) A) -> (O) {\n  O(i) +=! (i < 1 ? A(k) : 0.0) * A(k) where i in 0:1, k in 0:2\n}\n";
    let checked = tc::check_source(src).expect("the program checks");
    let a = Tensor::from_f64(DType::F32, &[1], vec![0.5]);
    let args = HashMap::from([("A".to_string(), Arg::Tensor(a))]);
    let out = interp::run(&checked.program, "f", &args, &HashMap::new(), Mode::Real)
        .expect("k = 1 is skipped");
    assert_eq!(out[0].1.to_f64_vec(), vec![0.25]);
}
