//! The reference VM: executes kernel IR directly, with the scalar semantics
//! of `ir::arith` (the interpreter's), so a lowered or transformed kernel
//! can be compared with the interpreter on the same inputs.
//!
//! Buffers are flat vectors of values, one per root refinement. A block runs
//! its points in row-major order of its indices (passed indices take their
//! affine value), skips points where a constraint is negative, computes each
//! refinement's view origin, and runs its statements serially. Local buffers
//! (refinements without `from` below the root) are zero for each point. Every
//! view and gather is bounds-checked; a violation is an error naming the
//! block path, never undefined behaviour.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use ir::arith;
use ir::{BinOp, Builtin, DType, Value};

use crate::{Affine, Agg, Block, Dim, Op, StmtKind};

/// The root's buffers, by name: flat, row-major values.
pub type Buffers = HashMap<String, Vec<Value>>;

/// The zero of a type.
pub fn zero(t: DType) -> Value {
    if t == DType::Bool {
        Value::Bool(false)
    } else if t.is_float() {
        Value::Float(0.0)
    } else {
        Value::Int(0)
    }
}

/// Runs `root`. `inputs` gives some root buffers (others start at zero);
/// returns every root buffer after the run.
pub fn run(root: &Block, mut inputs: Buffers) -> Result<Buffers, String> {
    let mut arena: Vec<Vec<Value>> = Vec::new();
    let mut views: Views = Map::default();
    for r in &root.refs {
        let len = r
            .shape
            .iter()
            .try_fold(1usize, |a, d| a.checked_mul(usize::try_from(d.size).ok()?));
        let len = len.ok_or_else(|| format!("buffer `{}` is too large", r.into))?;
        let data = match inputs.remove(&r.into) {
            Some(v) if v.len() == len => v,
            Some(v) => {
                return Err(format!(
                    "buffer `{}` has {} values, expected {len}",
                    r.into,
                    v.len()
                ))
            }
            None => vec![zero(r.dtype); len],
        };
        arena.push(data);
        views.insert(
            &r.into,
            View {
                buf: arena.len() - 1,
                origin: 0,
                dims: &r.shape,
                dtype: r.dtype,
                agg: r.agg,
            },
        );
    }
    let mut vm = Vm { arena };
    let mut scalars = Map::default();
    vm.stmts(root, &root.name, &views, &Map::default(), &mut scalars)?;
    Ok(root
        .refs
        .iter()
        .zip(vm.arena)
        .map(|(r, data)| (r.into.clone(), data))
        .collect())
}

// The maps below borrow their names from the block tree being run, so a
// point costs no string or shape copies, and hash the short names with
// FNV-1a: SipHash's resistance to chosen keys is not needed for names
// from the kernel itself, and it was a third of the VM's time.
type Map<'a, V> = HashMap<&'a str, V, BuildHasherDefault<Fnv>>;
type Views<'a> = Map<'a, View<'a>>;
type Env<'a> = Map<'a, i64>;
type Scalars<'a> = Map<'a, Value>;

/// The FNV-1a hash (64-bit).
#[derive(Debug)]
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct View<'a> {
    buf: usize,
    origin: i64,
    dims: &'a [Dim],
    dtype: DType,
    agg: Agg,
}

struct Vm {
    arena: Vec<Vec<Value>>,
}

impl Vm {
    fn block<'a>(
        &mut self,
        b: &'a Block,
        path: &str,
        parent: &Views<'a>,
        penv: &Env<'a>,
    ) -> Result<(), String> {
        let path = format!("{path}/{}", b.name);
        let mut env: Env<'a> = Map::default();
        // Each point starts with empty maps; keeping their capacity across
        // points saves rehashing them at every point.
        let mut views: Views<'a> = Map::default();
        let mut scalars: Scalars<'a> = Map::default();
        let mut lo = Vec::new();
        let mut hi = Vec::new();
        for ix in &b.idxs {
            match &ix.affine {
                Some(a) => {
                    let v = at(a, penv).ok_or_else(|| {
                        format!(
                            "{path}: passed index `{}` uses an unknown parent index",
                            ix.name
                        )
                    })?;
                    lo.push(v);
                    hi.push(v + 1);
                }
                None => {
                    lo.push(0);
                    hi.push(
                        i64::try_from(ix.range)
                            .map_err(|_| format!("{path}: index `{}` is too large", ix.name))?,
                    );
                }
            }
        }
        if hi.iter().zip(&lo).any(|(h, l)| h <= l) {
            return Ok(());
        }
        let mut point = lo.clone();
        loop {
            for (ix, v) in b.idxs.iter().zip(&point) {
                env.insert(&ix.name, *v);
            }
            let ok = b
                .constraints
                .iter()
                .all(|c| at(c, &env).is_some_and(|v| v >= 0));
            if ok {
                self.point(b, &path, parent, &env, &mut views, &mut scalars)?;
            }
            // Advance the odometer, the last index fastest.
            let mut k = point.len();
            loop {
                if k == 0 {
                    return Ok(());
                }
                k -= 1;
                point[k] += 1;
                if point[k] < hi[k] {
                    break;
                }
                point[k] = lo[k];
            }
        }
    }

    fn point<'a>(
        &mut self,
        b: &'a Block,
        path: &str,
        parent: &Views<'a>,
        env: &Env<'a>,
        views: &mut Views<'a>,
        scalars: &mut Scalars<'a>,
    ) -> Result<(), String> {
        let mark = self.arena.len();
        views.clear();
        scalars.clear();
        for r in &b.refs {
            let view = match &r.from {
                Some(p) => {
                    let pv = parent
                        .get(p.as_str())
                        .ok_or_else(|| format!("{path}: `{}` refines unknown `{p}`", r.into))?;
                    if r.access.len() != pv.dims.len() || r.shape.len() != pv.dims.len() {
                        return Err(format!("{path}: `{}` has the wrong rank for `{p}`", r.into));
                    }
                    let mut origin = pv.origin;
                    for (d, (a, pd)) in r.access.iter().zip(pv.dims).enumerate() {
                        let at = at(a, env).ok_or_else(|| {
                            format!("{path}: the access of `{}` uses an unknown index", r.into)
                        })?;
                        let size = i64::try_from(r.shape[d].size).unwrap_or(i64::MAX);
                        if at < 0
                            || at.saturating_add(size) > i64::try_from(pd.size).unwrap_or(i64::MAX)
                        {
                            return Err(format!(
                                "{path}: view `{}` at {at} in dimension {d} is out of bounds of `{p}` (size {})",
                                r.into, pd.size
                            ));
                        }
                        origin = at
                            .checked_mul(pd.stride)
                            .and_then(|o| origin.checked_add(o))
                            .ok_or_else(|| {
                                format!("{path}: the offset of view `{}` overflows int64", r.into)
                            })?;
                    }
                    View {
                        buf: pv.buf,
                        origin,
                        dims: &r.shape,
                        dtype: r.dtype,
                        agg: r.agg,
                    }
                }
                None => {
                    let len = r
                        .shape
                        .iter()
                        .try_fold(1usize, |a, d| a.checked_mul(usize::try_from(d.size).ok()?))
                        .ok_or_else(|| format!("{path}: local buffer `{}` is too large", r.into))?;
                    self.arena.push(vec![zero(r.dtype); len]);
                    View {
                        buf: self.arena.len() - 1,
                        origin: 0,
                        dims: &r.shape,
                        dtype: r.dtype,
                        agg: r.agg,
                    }
                }
            };
            views.insert(&r.into, view);
        }
        let r = self.stmts(b, path, views, env, scalars);
        self.arena.truncate(mark);
        r
    }

    fn stmts<'a>(
        &mut self,
        b: &'a Block,
        path: &str,
        views: &Views<'a>,
        env: &Env<'a>,
        scalars: &mut Scalars<'a>,
    ) -> Result<(), String> {
        let get = |scalars: &Scalars<'a>, n: &str| {
            scalars
                .get(n)
                .copied()
                .ok_or_else(|| format!("{path}: scalar `{n}` is used before it is defined"))
        };
        // Values do not carry their type, and an unsigned 64-bit value
        // above 2^63 is held as a negative `Int`: a cast to a float must
        // know which scalars are `uint64`.
        let mut unsigned64: std::collections::HashSet<&str> = std::collections::HashSet::new();
        for s in &b.stmts {
            match &s.kind {
                StmtKind::Load { from, into } => {
                    let v = self.view(views, from, path)?;
                    if v.dtype == DType::U64 {
                        unsigned64.insert(into);
                    }
                    let x = self.arena[v.buf][usize::try_from(v.origin)
                        .map_err(|_| format!("{path}: negative offset"))?];
                    scalars.insert(into, x);
                }
                StmtKind::Store { from, into } => {
                    let x = get(scalars, from)?;
                    let v = self.view(views, into, path)?;
                    let at = usize::try_from(v.origin)
                        .map_err(|_| format!("{path}: negative offset"))?;
                    let old = self.arena[v.buf][at];
                    self.arena[v.buf][at] = combine(v.agg, v.dtype, old, x);
                }
                StmtKind::LoadIndex { from, into } => {
                    let x = at(from, env)
                        .ok_or_else(|| format!("{path}: `index({from})` uses an unknown index"))?;
                    scalars.insert(into, Value::Int(x));
                }
                StmtKind::Constant { into, value, dtype } => {
                    if *dtype == DType::U64 {
                        unsigned64.insert(into);
                    }
                    scalars.insert(into, arith::cast_value(*dtype, *value));
                }
                StmtKind::Intrinsic {
                    op,
                    inputs,
                    into,
                    dtype,
                } => {
                    // Operators take at most three operands: a buffer on
                    // the stack instead of a vector per operation.
                    let mut buf = [Value::Int(0); 3];
                    let mut more = Vec::new();
                    let args: &[Value] = if inputs.len() <= buf.len() {
                        for (slot, n) in buf.iter_mut().zip(inputs) {
                            *slot = get(scalars, n)?;
                        }
                        &buf[..inputs.len()]
                    } else {
                        for n in inputs {
                            more.push(get(scalars, n)?);
                        }
                        &more
                    };
                    let x = match (op, args) {
                        (Op::Cast, [Value::Int(i)])
                            if dtype.is_float() && unsigned64.contains(inputs[0].as_str()) =>
                        {
                            Value::Float(arith::int_to_float(DType::U64, *dtype, *i))
                        }
                        _ => eval(op, *dtype, args).map_err(|m| format!("{path}: {m}"))?,
                    };
                    let comparison = matches!(op, Op::Binary(b) if b.is_comparison());
                    if *dtype == DType::U64 && !comparison {
                        unsigned64.insert(into);
                    }
                    scalars.insert(into, x);
                }
                StmtKind::Gather {
                    from,
                    indices,
                    into,
                } => {
                    let v = self.view(views, from, path)?;
                    let mut at = v.origin;
                    for (d, (n, dim)) in indices.iter().zip(v.dims).enumerate() {
                        let i = match get(scalars, n)? {
                            Value::Int(i) => i,
                            other => {
                                return Err(format!(
                                    "{path}: gather index {other:?} is not an integer"
                                ))
                            }
                        };
                        if i < 0 || i >= i64::try_from(dim.size).unwrap_or(i64::MAX) {
                            return Err(format!("{path}: gather of `{from}` at {i} in dimension {d} is out of bounds (size {})", dim.size));
                        }
                        at = i
                            .checked_mul(dim.stride)
                            .and_then(|o| at.checked_add(o))
                            .ok_or_else(|| {
                                format!("{path}: the gather offset in `{from}` overflows int64")
                            })?;
                    }
                    let x = self.arena[v.buf]
                        [usize::try_from(at).map_err(|_| format!("{path}: negative offset"))?];
                    if v.dtype == DType::U64 {
                        unsigned64.insert(into);
                    }
                    scalars.insert(into, x);
                }
                StmtKind::Block(child) => self.block(child, path, views, env)?,
            }
        }
        Ok(())
    }

    fn view<'a>(&self, views: &Views<'a>, name: &str, path: &str) -> Result<View<'a>, String> {
        views
            .get(name)
            .copied()
            .ok_or_else(|| format!("{path}: no view `{name}` in scope"))
    }
}

/// Combines a stored value with an element's current value.
fn combine(agg: Agg, t: DType, old: Value, new: Value) -> Value {
    let op = match agg {
        Agg::Assign => return new,
        Agg::Add => BinOp::Add,
        Agg::Mul => BinOp::Mul,
        Agg::Min | Agg::Max => {
            // TC's `min` and `max` of the element and the value, as the
            // interpreter's reductions (a NaN value makes a float element
            // NaN); a `bool` element, which no builtin takes, is kept.
            let f = if agg == Agg::Min {
                Builtin::Min
            } else {
                Builtin::Max
            };
            return arith::builtin(f, t, &[old, new]).unwrap_or(old);
        }
    };
    eval(&Op::Binary(op), t, &[old, new]).unwrap_or(new)
}

/// One intrinsic on values, computed in `t` (for comparisons, the operands'
/// type).
pub fn eval(op: &Op, t: DType, args: &[Value]) -> Result<Value, String> {
    use Value::Bool;
    let arity = |n: usize| {
        if args.len() == n {
            Ok(())
        } else {
            Err(format!("{op:?} takes {n} operands, got {}", args.len()))
        }
    };
    Ok(match op {
        Op::Cast => {
            arity(1)?;
            arith::cast_value(t, args[0])
        }
        Op::Select => {
            arity(3)?;
            match args[0] {
                Bool(c) => {
                    if c {
                        args[1]
                    } else {
                        args[2]
                    }
                }
                other => return Err(format!("select condition {other:?} is not bool")),
            }
        }
        Op::Unary(u) => {
            arity(1)?;
            arith::unary(*u, t, args[0]).map_err(|e| e.to_string())?
        }
        Op::Binary(b) => {
            arity(2)?;
            arith::binary(*b, t, args[0], args[1]).map_err(|e| e.to_string())?
        }
        Op::Builtin(f) => {
            arity(f.arity())?;
            arith::builtin(*f, t, args).map_err(|e| e.to_string())?
        }
    })
}

/// `a` at the point `env`.
fn at(a: &Affine, env: &Env) -> Option<i64> {
    a.eval_by(|n| env.get(n).copied())
}
