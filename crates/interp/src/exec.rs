//! Executing one comprehension statement.
//!
//! The statement's ranges are evaluated, the left-hand tensor is taken from
//! the environment (or starts as zeros), the lets and body are compiled once
//! into closures, and the iteration box is walked: for each output point
//! (left-hand iterators, row-major) the value starts from the reduction's
//! identity (`op=!`) or the tensor's current value, and folds the body over
//! every point of the reduction box (the other iterators, in range order; an
//! empty set of them is one point). A point where an evaluated read (with
//! subscripts that read no tensor) is out of bounds contributes nothing,
//! whether the read is under a taken `?:` branch or not; reads not under a
//! branch are tested before the body is evaluated, so no read of a skipped
//! point can fail.
//!
//! Functional update: every value is computed from the environment as it was
//! before the statement (the closures read the old tensors) and written into
//! a copy, which replaces the old tensor afterwards; so `b(i,j) = b(j,i)`
//! transposes `b`.

use std::collections::{HashMap, HashSet};

use ir::{Comprehension, DType, Def, Expr, Reduction, Value};

use crate::bind::{eval_size, shape_of};
use crate::compile::{Compiled, Scope};
use crate::frame::{eval_lets, Eval, Frame, LetEval, LetSlots, Slot, Stop};
use crate::poly::{self, Need};
use crate::progress::{points, Reporter, Task, MAX_POINTS, REPORTED_POINTS};
use crate::read::ReadPlan;
use crate::residue;
use crate::tensors::zeros_in;
use crate::Mode;
use ir::arith;
use tensor::{with_int_element, Tensor};

/// What a running def knows besides its tensors.
#[derive(Debug)]
pub(crate) struct Bindings<'a> {
    pub def: &'a Def,
    /// Scalar parameters, converted to their declared types.
    pub scalars: HashMap<String, Value>,
    /// Size symbols and integer scalars.
    pub sizes: HashMap<String, i64>,
    pub mode: Mode,
    pub progress: &'a Reporter,
}

/// The iteration box of a statement.
struct Space {
    /// `[lo, hi)` of every iterator, left-hand ones first.
    bounds: Vec<(i64, i64)>,
    /// How many leading iterators index the left-hand tensor.
    n_lhs: usize,
    /// The left-hand tensor's strides, one per left-hand iterator.
    strides: Vec<usize>,
}

/// Runs comprehension `c` (statement `stmt`) and returns the new value of
/// the tensor it writes.
pub(crate) fn exec_comp(
    b: &Bindings,
    env: &HashMap<String, Tensor>,
    c: &Comprehension,
    stmt: usize,
) -> Result<Tensor, String> {
    let Iterators { slots, bounds } = iterators(c, &b.sizes)?;
    let n = points(&bounds);
    if n > MAX_POINTS {
        return Err(format!(
            "the statement has {n} points, more than the interpreter runs (2^50, over a year of work); give smaller sizes or ranges"
        ));
    }
    let (mut out, t) = target(b, env, c, &bounds)?;
    if t == DType::Bool && c.op != Reduction::Assign {
        return Err(format!(
            "`{}` on the bool tensor `{}`: reductions on bool are not defined",
            c.op.symbol(),
            c.tensor
        ));
    }

    let mut scope = Scope {
        def: b.def,
        stmt,
        env,
        scalars: &b.scalars,
        sizes: &b.sizes,
        mode: b.mode,
        reduction: c.op != Reduction::Assign,
        values: slots
            .iter()
            .map(|(n, &k)| (n.clone(), (bounds[k].0, bounds[k].1 - 1)))
            .collect(),
        iters: slots,
        comp: Some(c),
        lets: HashMap::new(),
        lets_bound: 0,
    };
    let (lets, mut frame) = compile_lets(&mut scope, c, bounds.len())?;
    let space = Space {
        strides: out.strides().to_vec(),
        bounds,
        n_lhs: c.indices.len(),
    };
    let guards = guards(&scope, c)?;
    let identity = c.op.identity(t);
    let mut meter = Meter {
        // At most 2^50 points, checked above.
        task: if n >= REPORTED_POINTS {
            b.progress.start(
                &format!("statement {} of {}", stmt + 1, b.def.name),
                n as u64,
            )
        } else {
            Task::default()
        },
        pending: 0,
    };
    let stored = format!("`{}` is not stored as {t}", c.tensor);
    let result = match b.mode {
        Mode::ModP => {
            let data = out.as_mut_slice::<i64>().ok_or(stored)?;
            let fold: Box<dyn Fn(i64, i64) -> i64> = match c.op {
                Reduction::Assign => Box::new(|_, v| v),
                Reduction::Add => Box::new(|a, v| residue::add(a as u64, v as u64) as i64),
                Reduction::Mul => Box::new(|a, v| residue::mul(a as u64, v as u64) as i64),
                Reduction::Min | Reduction::Max => {
                    return Err(format!(
                        "`{}` is not a polynomial reduction{}",
                        c.op.symbol(),
                        scope.location()
                    ))
                }
            };
            let start = c.init.then_some(i64::from(c.op == Reduction::Mul));
            let g = scope.residue(&c.body)?;
            let body = move |f: &mut Frame| g(f).map(|r| r as i64);
            drive(
                &mut frame,
                &space,
                &mut meter,
                &lets,
                &guards,
                &body,
                start,
                &*fold,
                Store::<i64, i64>::new(data),
            )
        }
        Mode::Real if t.is_float() => {
            let (g, bt) = scope.float(&c.body)?;
            check_body_type(c, bt, t)?;
            let start = c.init.then(|| match identity {
                Value::Float(x) => x,
                Value::Int(i) => i as f64,
                Value::Bool(b) => f64::from(u8::from(b)),
            });
            let fold = float_fold(c.op, t);
            // Both float types compute in f64 and differ only in how the
            // output stores what the fold gives.
            macro_rules! drive_into {
                ($t:ty) => {{
                    let data = out.as_mut_slice::<$t>().ok_or(stored)?;
                    let store = Store::<$t, f64>::new(data);
                    drive(
                        &mut frame, &space, &mut meter, &lets, &guards, &*g, start, &*fold, store,
                    )
                }};
            }
            // A narrow float is driven in a float64 copy of its values
            // (the fold and the body round to its format) and stored back
            // as codes.
            macro_rules! drive_codes {
                ($t:ty, $format:expr) => {{
                    let data = out.as_mut_slice::<$t>().ok_or(stored)?;
                    let mut wide: Vec<f64> =
                        data.iter().map(|&c| $format.decode(u32::from(c))).collect();
                    let store = Store::<f64, f64>::new(&mut wide);
                    let done = drive(
                        &mut frame, &space, &mut meter, &lets, &guards, &*g, start, &*fold, store,
                    );
                    for (c, x) in data.iter_mut().zip(wide) {
                        // A code of the format's width.
                        *c = $format.encode(x) as $t;
                    }
                    done
                }};
            }
            match t.narrow() {
                Some(format) if t.bits() == 16 => drive_codes!(u16, format),
                Some(format) => drive_codes!(u8, format),
                None if t == DType::F32 => drive_into!(f32),
                None => drive_into!(f64),
            }
        }
        Mode::Real if t == DType::Bool => {
            let data = out.as_mut_slice::<u8>().ok_or(stored)?;
            let g = scope.boolean(&c.body)?;
            let body = move |f: &mut Frame| g(f).map(i64::from);
            drive(
                &mut frame,
                &space,
                &mut meter,
                &lets,
                &guards,
                &body,
                None,
                &|_, v| v,
                Store::<u8, i64>::new(data),
            )
        }
        Mode::Real => {
            let (g, bt) = scope.int(&c.body)?;
            check_body_type(c, bt, t)?;
            let start = c.init.then(|| match identity {
                Value::Int(i) => i,
                Value::Float(x) => x as i64,
                Value::Bool(b) => i64::from(b),
            });
            let fold = int_fold(c.op, t);
            with_int_element!(t, S => {
                let data = out.as_mut_slice::<S>().ok_or(stored)?;
                drive(
                    &mut frame,
                    &space,
                &mut meter,
                    &lets,
                    &guards,
                    &*g,
                    start,
                    &*fold,
                    Store::<S, i64>::new(data),
                )
            }, return Err(stored))
        }
    };
    result.map(|()| out)
}

/// The iterators of a comprehension in iteration order: left-hand ones
/// first, then the reduction iterators in range order.
struct Iterators {
    /// Each iterator's frame slot (its position in the order).
    slots: HashMap<String, usize>,
    /// Each iterator's evaluated, non-empty `[lo, hi)`.
    bounds: Vec<(i64, i64)>,
}

fn iterators(c: &Comprehension, sizes: &HashMap<String, i64>) -> Result<Iterators, String> {
    let mut ranged = HashSet::new();
    if let Some(r) = c.ranges.iter().find(|r| !ranged.insert(&r.name)) {
        return Err(format!("iterator `{}` has two ranges", r.name));
    }
    let mut order = Vec::with_capacity(c.ranges.len());
    for ix in &c.indices {
        order.push(
            c.range(ix)
                .ok_or_else(|| format!("left-hand-side iterator `{ix}` has no range"))?,
        );
    }
    order.extend(c.reduction_iters());
    let mut slots = HashMap::new();
    for (k, r) in order.iter().enumerate() {
        if slots.insert(r.name.clone(), k).is_some() {
            return Err(format!("iterator `{}` appears twice on the left", r.name));
        }
    }
    if c.op == Reduction::Assign {
        if let Some(r) = order.get(c.indices.len()) {
            return Err(format!("`=` statement has reduction iterator `{}`", r.name));
        }
    }
    let bounds = order
        .iter()
        .map(|r| {
            let what = format!("the range of `{}`", r.name);
            let (lo, hi) = (
                eval_size(&r.lo, sizes, &what)?,
                eval_size(&r.hi, sizes, &what)?,
            );
            if hi <= lo {
                return Err(format!(
                    "iterator `{}` has the empty range {lo}:{hi}",
                    r.name
                ));
            }
            Ok((lo, hi))
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(Iterators { slots, bounds })
}

/// The tensor `c` writes as it is before the statement (zeros of its
/// declared shape if this is its first definition), checked to contain the
/// left-hand box.
fn target(
    b: &Bindings,
    env: &HashMap<String, Tensor>,
    c: &Comprehension,
    bounds: &[(i64, i64)],
) -> Result<(Tensor, DType), String> {
    let decl = b
        .def
        .tensor(&c.tensor)
        .ok_or_else(|| format!("writes undeclared tensor `{}`", c.tensor))?;
    let out = match env.get(&c.tensor) {
        Some(t) => t.clone(),
        None => zeros_in(b.mode, decl.dtype, &shape_of(decl, &b.sizes)?),
    };
    if out.shape().len() != c.indices.len() {
        return Err(format!(
            "`{}` has {} dimensions but is written with {} indices",
            c.tensor,
            out.shape().len(),
            c.indices.len()
        ));
    }
    for (k, (ix, (&(lo, hi), &dim))) in c
        .indices
        .iter()
        .zip(bounds.iter().zip(out.shape()))
        .enumerate()
    {
        // A dimension counts elements in memory, so it fits an i64.
        if lo < 0 || hi > dim as i64 {
            return Err(format!(
                "writing `{}`: iterator `{ix}` ranges over {lo}:{hi}, outside dimension {k} of size {dim}",
                c.tensor
            ));
        }
    }
    Ok((out, decl.dtype))
}

fn check_body_type(c: &Comprehension, body: DType, lhs: DType) -> Result<(), String> {
    if body == lhs {
        Ok(())
    } else {
        Err(format!(
            "ill-typed IR: the body has type {body} but `{}` is {lhs}",
            c.tensor
        ))
    }
}

/// Compiles the lets of `c` in order, giving each the slots it needs after
/// the `n_iters` iterator slots; returns them with a frame that has room
/// for every slot.
fn compile_lets<'a>(
    scope: &mut Scope<'a>,
    c: &Comprehension,
    n_iters: usize,
) -> Result<(Vec<LetEval<'a>>, Frame), String> {
    let needs = match scope.mode {
        Mode::Real => vec![
            Need {
                residue: false,
                real: true
            };
            c.lets.len()
        ],
        Mode::ModP => poly::let_needs(scope, c),
    };
    let (mut ints, mut floats, mut residues) = (n_iters, 0, 0);
    let mut lets = Vec::new();
    for ((name, e), need) in c.lets.iter().zip(needs) {
        let mut slots = LetSlots::default();
        if need.real {
            let (slot, eval) = match scope.any(e)? {
                Compiled::Float(g, t) => {
                    floats += 1;
                    (Slot::Float(floats - 1, t), LetEval::Float(floats - 1, g))
                }
                Compiled::Int(g, t) => {
                    ints += 1;
                    (Slot::Int(ints - 1, t), LetEval::Int(ints - 1, g))
                }
                Compiled::Bool(g) => {
                    ints += 1;
                    (Slot::Bool(ints - 1), LetEval::Bool(ints - 1, g))
                }
            };
            slots.real = Some(slot);
            lets.push(eval);
        }
        if need.residue {
            let g = scope.residue(e)?;
            slots.residue = Some(residues);
            lets.push(LetEval::Residue(residues, g));
            residues += 1;
        }
        scope.lets.insert(name.clone(), slots);
        scope.lets_bound += 1;
    }
    let frame = Frame {
        ints: vec![0; ints],
        floats: vec![0.0; floats],
        residues: vec![0; residues],
        message: String::new(),
    };
    Ok((lets, frame))
}

/// How a float reduction combines the accumulator with a value. `min` and
/// `max` are TC's `min` and `max` of the two (a NaN value makes the
/// result NaN).
fn float_fold(op: Reduction, t: DType) -> Box<dyn Fn(f64, f64) -> f64> {
    match op {
        Reduction::Assign => Box::new(|_, v| v),
        Reduction::Add => Box::new(move |a, v| arith::round(t, a + v)),
        Reduction::Mul => Box::new(move |a, v| arith::round(t, a * v)),
        Reduction::Min => Box::new(arith::minimum),
        Reduction::Max => Box::new(arith::maximum),
    }
}

/// How an integer reduction combines the accumulator with a value.
fn int_fold(op: Reduction, t: DType) -> Box<dyn Fn(i64, i64) -> i64> {
    use std::cmp::Ordering::{Greater, Less};
    match op {
        Reduction::Assign => Box::new(|_, v| v),
        Reduction::Add => Box::new(move |a, v| arith::wrap(t, a.wrapping_add(v))),
        Reduction::Mul => Box::new(move |a, v| arith::wrap(t, a.wrapping_mul(v))),
        Reduction::Min => Box::new(move |a, v| {
            if arith::int_cmp(t, v, a) == Less {
                v
            } else {
                a
            }
        }),
        Reduction::Max => Box::new(move |a, v| {
            if arith::int_cmp(t, v, a) == Greater {
                v
            } else {
                a
            }
        }),
    }
}

/// The reads of a reduction's body and lets that every point evaluates
/// (reads not under a `?:` branch, whose subscripts read no tensor and no
/// let), compiled once more so that every point can be tested before its
/// lets and body run: a point where one of them is out of bounds
/// contributes nothing, and none of its other reads or operations is
/// evaluated (an indirect read or a division by zero could otherwise fail
/// first, depending on the order of operands or on whether a value was
/// written as a let or in place).
fn guards<'a>(scope: &Scope<'a>, c: &Comprehension) -> Result<Vec<ReadPlan<'a>>, String> {
    fn walk<'e>(e: &'e Expr, out: &mut Vec<(&'e str, &'e [Expr])>) {
        match e {
            Expr::Read(t, subs) => {
                out.push((t, subs));
                subs.iter().for_each(|s| walk(s, out));
            }
            Expr::Select(cond, _, _) => walk(cond, out),
            _ => e.children().into_iter().for_each(|x| walk(x, out)),
        }
    }
    if c.op == Reduction::Assign {
        return Ok(Vec::new());
    }
    let mut reads = Vec::new();
    for (_, e) in &c.lets {
        walk(e, &mut reads);
    }
    walk(&c.body, &mut reads);
    let mut out = Vec::new();
    for (name, subs) in reads {
        let indirect = subs
            .iter()
            .any(|e| e.any(&|x| matches!(x, Expr::Read(..) | Expr::Local(_))));
        if !indirect {
            out.push(ReadPlan::new(scope, name, subs)?.0);
        }
    }
    Ok(out)
}

/// A stored element type and the type the interpreter computes it in:
/// `f32` as `f64`, integers and `bool` as `i64`. Values are computed
/// already rounded or wrapped to the element type, so narrowing them back
/// is exact.
trait Widen<T>: Copy {
    fn widen(self) -> T;
    fn narrow(v: T) -> Self;
}

impl Widen<f64> for f32 {
    fn widen(self) -> f64 {
        f64::from(self)
    }
    fn narrow(v: f64) -> f32 {
        v as f32
    }
}

impl Widen<f64> for f64 {
    fn widen(self) -> f64 {
        self
    }
    fn narrow(v: f64) -> f64 {
        v
    }
}

macro_rules! widen_int {
    ($($t:ty),+) => {$(
        impl Widen<i64> for $t {
            fn widen(self) -> i64 {
                self as i64
            }
            fn narrow(v: i64) -> $t {
                v as $t
            }
        }
    )+};
}
widen_int!(u8, i8, u16, i16, u32, i32, u64, i64);

/// The left-hand tensor's elements as `drive` reads and writes them.
struct Store<'a, S, T> {
    data: &'a mut [S],
    computed: std::marker::PhantomData<T>,
}

impl<'a, S: Widen<T>, T> Store<'a, S, T> {
    fn new(data: &'a mut [S]) -> Self {
        Store {
            data,
            computed: std::marker::PhantomData,
        }
    }
}

/// Walks the iteration box, folding the body into `out`.
#[allow(clippy::too_many_arguments)]
fn drive<S: Widen<T>, T: Copy>(
    frame: &mut Frame,
    space: &Space,
    meter: &mut Meter,
    lets: &[LetEval],
    guards: &[ReadPlan],
    body: &dyn Fn(&mut Frame) -> Eval<T>,
    start: Option<T>,
    fold: &dyn Fn(T, T) -> T,
    out: Store<S, T>,
) -> Result<(), String> {
    let out = out.data;
    let (n, m) = (space.bounds.len(), space.n_lhs);
    // The points of one left-hand element: at most the statement's 2^50.
    let per_element = points(&space.bounds[m..]) as u64;
    for (k, &(lo, _)) in space.bounds.iter().enumerate() {
        frame.ints[k] = lo;
    }
    loop {
        // Left-hand iterators were checked to lie inside the tensor.
        let off: usize = (0..m)
            .map(|k| frame.ints[k] as usize * space.strides[k])
            .sum();
        let mut acc = start.unwrap_or_else(|| out[off].widen());
        loop {
            let checked = guards
                .iter()
                .try_for_each(|g| g.offset(frame).map(|_| ()))
                .and_then(|()| eval_lets(frame, lets));
            match checked.and_then(|()| body(frame)) {
                Ok(v) => acc = fold(acc, v),
                Err(Stop::Skip) => {}
                Err(Stop::Fail) => return Err(std::mem::take(&mut frame.message)),
            }
            if !advance(frame, &space.bounds, m, n) {
                break;
            }
        }
        out[off] = S::narrow(acc);
        meter.tick(per_element);
        if !advance(frame, &space.bounds, 0, m) {
            return Ok(());
        }
    }
}

/// Steps the odometer of iterators `from..to` (the last fastest); returns
/// false, with all of them back at their lower bounds, after the last point.
fn advance(frame: &mut Frame, bounds: &[(i64, i64)], from: usize, to: usize) -> bool {
    for k in (from..to).rev() {
        // `ints[k] < hi <= i64::MAX`, so the increment cannot overflow.
        frame.ints[k] += 1;
        if frame.ints[k] < bounds[k].1 {
            return true;
        }
        frame.ints[k] = bounds[k].0;
    }
    false
}

/// Reports a statement's points a chunk at a time.
struct Meter<'a> {
    task: Task<'a>,
    pending: u64,
}

impl Meter<'_> {
    /// Points between reports: a few milliseconds of work.
    const CHUNK: u64 = 1 << 18;

    /// `n` more points are done.
    fn tick(&mut self, n: u64) {
        self.pending += n;
        if self.pending >= Meter::CHUNK {
            self.task.advance(std::mem::take(&mut self.pending));
        }
    }
}
