//! One step function: a child block of the root, and everything nested in
//! it, as C loops, guards, local arrays and scalar statements.
//!
//! Indices become `int64_t` loop variables in the block's index order (the
//! last fastest, the VM's row-major order); an index of range 1 is the
//! constant 0, and a passed index is its affine value, substituted, so
//! every affine form (view offsets, constraints, `index(...)`) is an affine
//! form over the loop variables in scope ([`Lin`]), printed with its
//! constant strides folded (`64*i + j_2 + 16`). A constraint is folded into
//! the bounds of the innermost loop variable it mentions (every other
//! variable in it is then fixed when the loop starts), and a constraint that
//! mentions none of the block's loops becomes an `if` around them; loops run
//! exactly the points the VM runs, in its order. Views are offsets from a
//! root buffer's pointer or a local array, so a load is `A[64*i + k]`.
//! Local buffers are arrays declared, zeroed, inside the innermost loop (per
//! point, as the VM allocates them). Scalars are `const` locals.
//!
//! Static intervals of the loop variables (their ranges, tightened by
//! constant parts of their bounds) decide which bounds and guards can be
//! dropped, and prove that every affine form fits in `int64_t` (a form that
//! might not is an error: C's signed overflow is undefined).
//!
//! A block tagged `vector` whose lane loop qualifies is also emitted as
//! explicit AVX-512 statements (`vector.rs`), with the scalar loops as the
//! `#else` branch. A block tagged `vector` gets `#pragma GCC ivdep` on its
//! innermost loop
//! when that is sound: every buffer element the loop body writes is written
//! and read at one offset, the same in every access, which moves with the
//! vector index and with no variable of the body; the lanes then touch
//! disjoint elements of every written buffer. Locals declared in the body
//! are per lane and do not count.
//!
//! Requires: a verified kernel (the caller checks), so views lie inside the
//! views they refine at every point that runs; local buffers' layouts are
//! checked here. Guarantees: the emitted C reads and writes only elements
//! of the root buffers and local arrays inside their lengths, and every
//! gather position is checked before it is used.

use std::collections::{BTreeMap, HashMap};

use ir::DType;
use kernel::{Affine, Agg, Block, Dim, Refinement, StmtKind};

use super::names::Names;
use super::scalar;
use super::EmitError;

mod registers;
mod vector;

/// The most bytes of local buffers one step may declare in all (they live
/// on the stack of the thread that runs it, which may be a small one).
const MAX_LOCAL_BYTES: u64 = 1 << 16;

/// A root buffer as a step sees it.
pub(crate) struct RootBuf {
    pub(crate) dtype: DType,
    pub(crate) dims: Vec<Dim>,
    pub(crate) agg: Agg,
}

/// An affine form over the C variables of a function: variable number to
/// non-zero coefficient, and a constant.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Lin {
    constant: i64,
    terms: BTreeMap<usize, i64>,
}

impl Lin {
    fn constant(c: i64) -> Lin {
        Lin {
            constant: c,
            terms: BTreeMap::new(),
        }
    }

    fn var(v: usize) -> Lin {
        let mut l = Lin::constant(0);
        l.terms.insert(v, 1);
        l
    }

    fn coef(&self, v: usize) -> i64 {
        self.terms.get(&v).copied().unwrap_or(0)
    }

    /// `self + k * other`, `None` on overflow.
    fn add_scaled(&self, other: &Lin, k: i64) -> Option<Lin> {
        let mut r = self.clone();
        r.constant = r.constant.checked_add(other.constant.checked_mul(k)?)?;
        for (v, c) in &other.terms {
            let e = r.terms.entry(*v).or_insert(0);
            *e = e.checked_add(c.checked_mul(k)?)?;
            if *e == 0 {
                r.terms.remove(v);
            }
        }
        Some(r)
    }
}

/// A bound of a loop variable: `sign * floor(lin / div) + add`.
struct Bound {
    lin: Lin,
    div: i64,
    negate: bool,
    add: i64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Base {
    Root(usize),
    Local(usize),
}

#[derive(Clone, Debug)]
struct View {
    base: Base,
    origin: Lin,
    dims: Vec<Dim>,
    dtype: DType,
    agg: Agg,
}

struct Var {
    name: String,
    lo: i64,
    hi: i64,
}

/// A memory access in the body of a vector loop: offset `None` for a
/// gather.
struct Access {
    base: Base,
    offset: Option<Lin>,
    write: bool,
}

struct VectorLoop {
    var: usize,
    /// Where the pragma goes if the loop qualifies.
    line: usize,
    /// Locals numbered from here on are declared inside the loop.
    first_local: usize,
    accesses: Vec<Access>,
}

/// The scalars of one statement list: kernel name to C name and type.
type Scalars = HashMap<String, (String, DType)>;

/// One line of a step function.
pub(crate) struct Line {
    pub(crate) text: String,
    /// A comment naming the kernel's blocks and buffers: part of the
    /// readable C, left out of the compiled function so that steps that
    /// differ only in names share one (see `emit/mod.rs`).
    pub(crate) comment: bool,
}

/// The emitter of one step function.
pub(crate) struct Func<'a> {
    roots: &'a [RootBuf],
    /// The index of each root buffer by name.
    root_index: &'a HashMap<String, usize>,
    /// The root buffers the body uses, in the order it first mentions
    /// them: the function's arguments, `tsr_b0`, `tsr_b1`, ...
    pub(crate) args: Vec<usize>,
    names: Names,
    vars: Vec<Var>,
    /// Local arrays: C name, element type and length.
    locals: Vec<(String, DType, u64)>,
    /// The bytes of all local buffers declared so far.
    local_bytes: u64,
    pub(crate) lines: Vec<Line>,
    /// Whether some loop has explicit AVX-512 code (which needs the
    /// AVX-512 prelude).
    pub(crate) avx512: bool,
    depth: usize,
    vectors: Vec<VectorLoop>,
    /// The vector products emitted so far, by C name: their two factors,
    /// so that a `+` reduction of one becomes a fused multiply-add.
    products: HashMap<String, (String, String)>,
}

/// One loop of a block as the C opens it: its variable, its bounds as C
/// expressions, the variables those bounds read, and the points inside
/// the bounds whatever the loops around it hold (`always.0..always.1`),
/// which need no guard when the loop is unrolled.
#[derive(Clone, Debug)]
pub(super) struct Header {
    pub(super) var: usize,
    pub(super) lo: String,
    pub(super) hi: String,
    deps: Vec<usize>,
    pub(super) always: (i64, i64),
}

/// The C name of a step function's argument `j`. Names never hands out
/// `tsr_` names, so no kernel name can capture it.
pub(crate) fn arg_name(j: usize) -> String {
    format!("tsr_b{j}")
}

impl<'a> Func<'a> {
    pub(crate) fn new(roots: &'a [RootBuf], root_index: &'a HashMap<String, usize>) -> Func<'a> {
        let mut names = Names::default();
        for p in ["args", "lo", "hi"] {
            names.reserve(p);
        }
        Func {
            roots,
            root_index,
            args: Vec::new(),
            names,
            vars: Vec::new(),
            locals: Vec::new(),
            local_bytes: 0,
            lines: Vec::new(),
            avx512: false,
            depth: 1,
            vectors: Vec::new(),
            products: HashMap::new(),
        }
    }

    /// Emits the step for root child `b`; returns the range of its parallel
    /// index, if it has one (the step then runs `lo <= index < hi`).
    pub(crate) fn step(&mut self, b: &Block, root_path: &str) -> Result<Option<u64>, EmitError> {
        // Only the roots the step refines are in its scope: building a
        // view of every root for every step would make emitting a program
        // quadratic in its size.
        let views: HashMap<String, View> = b
            .refs
            .iter()
            .filter_map(|r| r.from.as_ref())
            .filter_map(|name| {
                let k = *self.root_index.get(name)?;
                let r = &self.roots[k];
                Some((
                    name.clone(),
                    View {
                        base: Base::Root(k),
                        origin: Lin::constant(0),
                        dims: r.dims.clone(),
                        dtype: r.dtype,
                        agg: r.agg,
                    },
                ))
            })
            .collect();
        let parallel = b
            .idxs
            .iter()
            .find(|i| i.affine.is_none() && i.tags.contains("parallel"))
            .map(|i| (i.name.clone(), i.range));
        self.block(
            b,
            root_path,
            &HashMap::new(),
            &views,
            parallel.as_ref().map(|p| p.0.as_str()),
            false,
        )?;
        Ok(parallel.map(|p| p.1))
    }

    fn line(&mut self, text: impl AsRef<str>) {
        self.push(text.as_ref(), false);
    }

    /// A comment line: `/* text */`, with `text` made safe for one.
    fn comment(&mut self, text: &str) {
        self.push(&format!("/* {} */", comment_text(text)), true);
    }

    fn push(&mut self, text: &str, comment: bool) {
        let pad = "  ".repeat(self.depth);
        self.lines.push(Line {
            text: format!("{pad}{text}"),
            comment,
        });
    }

    /// A line at the left margin (a preprocessor directive).
    fn directive(&mut self, text: &str) {
        self.lines.push(Line {
            text: text.to_string(),
            comment: false,
        });
    }

    fn new_var(&mut self, want: &str, range: i64) -> usize {
        let name = self.names.fresh(want);
        self.vars.push(Var {
            name,
            lo: 0,
            hi: range - 1,
        });
        self.vars.len() - 1
    }

    /// `a` over the C variables, with the block's indices bound by `env`.
    fn subst(&self, a: &Affine, env: &HashMap<String, Lin>) -> Result<Lin, String> {
        let mut r = Lin::constant(a.constant);
        for (n, c) in &a.terms {
            let v = env
                .get(n)
                .ok_or_else(|| format!("`{a}` uses `{n}`, which is not an index of the block"))?;
            r = r
                .add_scaled(v, *c)
                .ok_or_else(|| format!("`{a}` overflows 64-bit arithmetic"))?;
        }
        self.check(&r)
            .map_err(|()| format!("`{a}` may overflow 64-bit arithmetic"))?;
        Ok(r)
    }

    /// Proves that every partial sum of `l`, as C evaluates it, fits in
    /// `int64_t` over the variables' intervals.
    fn check(&self, l: &Lin) -> Result<(), ()> {
        // Each product is below 2^126; the sum saturates.
        let mut total = i128::from(l.constant).abs();
        for (v, c) in &l.terms {
            let var = &self.vars[*v];
            let m = i128::from(var.lo).abs().max(i128::from(var.hi).abs());
            total = total.saturating_add(i128::from(*c).abs() * m);
        }
        if total <= i128::from(i64::MAX) {
            Ok(())
        } else {
            Err(())
        }
    }

    /// The smallest and largest values of a checked form.
    fn range(&self, l: &Lin) -> (i64, i64) {
        let (mut lo, mut hi) = (i128::from(l.constant), i128::from(l.constant));
        for (v, c) in &l.terms {
            let var = &self.vars[*v];
            let (a, b) = (
                i128::from(*c) * i128::from(var.lo),
                i128::from(*c) * i128::from(var.hi),
            );
            lo = lo.saturating_add(a.min(b));
            hi = hi.saturating_add(a.max(b));
        }
        let clamp = |x: i128| i64::try_from(x).unwrap_or(if x < 0 { i64::MIN } else { i64::MAX });
        (clamp(lo), clamp(hi))
    }

    fn bound_range(&self, b: &Bound) -> (i64, i64) {
        let (lo, hi) = self.range(&b.lin);
        let (lo, hi) = (lo.div_euclid(b.div), hi.div_euclid(b.div));
        let (lo, hi) = if b.negate { (-hi, -lo) } else { (lo, hi) };
        (lo + b.add, hi + b.add)
    }

    fn render(&self, l: &Lin) -> String {
        let mut s = String::new();
        for (v, c) in &l.terms {
            let name = &self.vars[*v].name;
            let m = c.unsigned_abs();
            let sign = match (*c < 0, s.is_empty()) {
                (true, true) => "-",
                (true, false) => " - ",
                (false, true) => "",
                (false, false) => " + ",
            };
            if m == 1 {
                s.push_str(&format!("{sign}{name}"));
            } else {
                s.push_str(&format!("{sign}{m}*{name}"));
            }
        }
        if s.is_empty() {
            s = l.constant.to_string();
        } else if l.constant > 0 {
            s.push_str(&format!(" + {}", l.constant));
        } else if l.constant < 0 {
            s.push_str(&format!(" - {}", l.constant.unsigned_abs()));
        }
        s
    }

    fn render_bound(&self, b: &Bound) -> String {
        let mut s = if b.div == 1 {
            self.render(&b.lin)
        } else {
            format!("tsr_floordiv({}, {})", self.render(&b.lin), b.div)
        };
        if b.negate {
            s = if b.div == 1 {
                format!("-({s})")
            } else {
                format!("-{s}")
            };
        }
        if b.add != 0 {
            s = format!("{s} + {}", b.add);
        }
        s
    }

    /// The C element `view[0, ..., 0]`.
    fn element(&mut self, base: Base, offset: &str) -> String {
        match base {
            Base::Root(k) => {
                let j = self.args.iter().position(|&a| a == k).unwrap_or_else(|| {
                    self.args.push(k);
                    self.args.len() - 1
                });
                format!("{}[{offset}]", arg_name(j))
            }
            Base::Local(k) => format!("{}[{offset}]", self.locals[k].0),
        }
    }

    fn base_dtype(&self, base: Base) -> DType {
        match base {
            Base::Root(k) => self.roots[k].dtype,
            Base::Local(k) => self.locals[k].1,
        }
    }

    fn record(&mut self, base: Base, offset: Option<&Lin>, write: bool) {
        for v in &mut self.vectors {
            if matches!(base, Base::Local(k) if k >= v.first_local) {
                continue;
            }
            v.accesses.push(Access {
                base,
                offset: offset.cloned(),
                write,
            });
        }
    }

    /// Whether the vector loop's lanes touch disjoint elements of every
    /// buffer the body writes (see the module doc).
    fn independent_lanes(&self, v: &VectorLoop) -> bool {
        v.accesses.iter().filter(|a| a.write).all(|w| {
            let Some(off) = &w.offset else {
                return false;
            };
            let moves = off.coef(v.var) != 0 && off.terms.keys().all(|x| *x <= v.var);
            moves
                && v.accesses
                    .iter()
                    .filter(|a| a.base == w.base)
                    .all(|a| a.offset.as_ref() == Some(off))
        })
    }

    fn block(
        &mut self,
        b: &Block,
        parent_path: &str,
        penv: &HashMap<String, Lin>,
        pviews: &HashMap<String, View>,
        parallel: Option<&str>,
        nested: bool,
    ) -> Result<(), EmitError> {
        let path = format!("{parent_path}/{}", b.name);
        let fail = |message: String| EmitError {
            block: path.clone(),
            statement: None,
            message,
        };
        let mut env: HashMap<String, Lin> = HashMap::new();
        // Loop variables in index order, with their ranges.
        let mut loops: Vec<(usize, i64)> = Vec::new();
        let mut parallel_var = None;
        // The loops `vectorize` jammed as a register block of more than
        // one index (tagged so; a single jammed loop is the one around the
        // lanes).
        let mut jammed: Vec<usize> = Vec::new();
        for ix in &b.idxs {
            if let Some(a) = &ix.affine {
                let l = self
                    .subst(a, penv)
                    .map_err(|m| fail(format!("passed index `{}`: {m}", ix.name)))?;
                env.insert(ix.name.clone(), l);
                continue;
            }
            // The verifier keeps ranges at least 1.
            let range = i64::try_from(ix.range)
                .ok()
                .filter(|r| *r >= 1)
                .ok_or_else(|| fail(format!("index `{}` has range {}", ix.name, ix.range)))?;
            let is_parallel = parallel == Some(ix.name.as_str());
            if range == 1 && !is_parallel {
                env.insert(ix.name.clone(), Lin::constant(0));
                continue;
            }
            let v = self.new_var(&ix.name, range);
            if is_parallel {
                parallel_var = Some(v);
            }
            if ix.tags.contains("jam") {
                jammed.push(v);
            }
            env.insert(ix.name.clone(), Lin::var(v));
            loops.push((v, range));
        }

        // Constraints: guards on outer variables, or bounds of a loop.
        let mut guards: Vec<Lin> = Vec::new();
        let mut lower: HashMap<usize, Vec<Bound>> = HashMap::new();
        let mut upper: HashMap<usize, Vec<Bound>> = HashMap::new();
        for c in &b.constraints {
            let l = self
                .subst(c, &env)
                .map_err(|m| fail(format!("constraint `{c} >= 0`: {m}")))?;
            let overflow = || fail(format!("constraint `{c} >= 0` overflows 64-bit arithmetic"));
            let Some(&(v, _)) = loops.iter().rev().find(|(v, _)| l.coef(*v) != 0) else {
                let (lo, hi) = self.range(&l);
                if hi < 0 {
                    self.comment(&format!(
                        "block {}: constraint {c} >= 0 never holds, so the block runs no points",
                        b.name
                    ));
                    return Ok(());
                }
                if lo < 0 {
                    guards.push(l);
                }
                continue;
            };
            let k = l.coef(v);
            let rest = l.add_scaled(&Lin::var(v), -k).ok_or_else(overflow)?;
            // k*v + rest >= 0.
            let bound = if k == 1 {
                Bound {
                    lin: Lin::constant(0)
                        .add_scaled(&rest, -1)
                        .ok_or_else(overflow)?,
                    div: 1,
                    negate: false,
                    add: 0,
                }
            } else if k > 0 {
                Bound {
                    lin: rest,
                    div: k,
                    negate: true,
                    add: 0,
                }
            } else if k == -1 {
                Bound {
                    lin: rest.add_scaled(&Lin::constant(1), 1).ok_or_else(overflow)?,
                    div: 1,
                    negate: false,
                    add: 0,
                }
            } else {
                Bound {
                    lin: rest,
                    div: k.checked_neg().ok_or_else(overflow)?,
                    negate: false,
                    add: 1,
                }
            };
            self.check(&bound.lin).map_err(|()| overflow())?;
            if k > 0 {
                lower.entry(v).or_default().push(bound);
            } else {
                upper.entry(v).or_default().push(bound);
            }
        }

        // Tighten the loop variables' intervals, outermost first, and
        // render their bounds.
        let mut headers = Vec::new();
        for &(v, range) in &loops {
            let lows = lower.remove(&v).unwrap_or_default();
            let highs = upper.remove(&v).unwrap_or_default();
            let (mut lo, mut hi) = (0i64, range - 1);
            for e in &lows {
                lo = lo.max(self.bound_range(e).0);
            }
            for e in &highs {
                hi = hi.min(self.bound_range(e).1.saturating_sub(1));
            }
            if lo > hi {
                self.comment(&format!(
                    "block {}: its constraints leave no points",
                    b.name
                ));
                return Ok(());
            }
            let is_parallel = parallel_var == Some(v);
            let mut lo_terms: Vec<String> = Vec::new();
            let mut lo_exact = false;
            if is_parallel {
                lo_terms.push("lo".to_string());
            }
            for e in &lows {
                let (emin, emax) = self.bound_range(e);
                if emax > 0 {
                    lo_terms.push(self.render_bound(e));
                    lo_exact |= emin >= 0;
                }
            }
            if !lo_exact {
                lo_terms.push("0".to_string());
            }
            let mut hi_terms: Vec<String> = Vec::new();
            let mut hi_exact = false;
            if is_parallel {
                hi_terms.push("hi".to_string());
            }
            for e in &highs {
                let (emin, emax) = self.bound_range(e);
                if emin < range {
                    hi_terms.push(self.render_bound(e));
                    hi_exact |= emax <= range;
                }
            }
            if !hi_exact {
                hi_terms.push(range.to_string());
            }
            // The points inside the bounds whatever the other loops' values:
            // from the largest the lower bound gets to below the smallest
            // the upper bound gets to.
            let always_lo = lows.iter().map(|e| self.bound_range(e).1).fold(0, i64::max);
            let always_hi = highs
                .iter()
                .map(|e| self.bound_range(e).0)
                .fold(range, i64::min);
            self.vars[v].lo = lo;
            self.vars[v].hi = hi;
            let deps: Vec<usize> = lows
                .iter()
                .chain(&highs)
                .flat_map(|e| e.lin.terms.keys().copied())
                .collect();
            headers.push(Header {
                var: v,
                lo: fold("tsr_max", &lo_terms),
                hi: fold("tsr_min", &hi_terms),
                deps,
                always: (always_lo, always_hi),
            });
        }

        if nested {
            let tags: Vec<String> = b.tags.iter().map(|t| format!(" #{t}")).collect();
            let mut text = format!("block {}{}", b.name, tags.join(""));
            if !b.comment.is_empty() {
                text.push_str(": ");
                text.push_str(&b.comment);
            }
            self.comment(&text);
        }
        let mut opened = 0;
        if guards.is_empty() && headers.is_empty() {
            self.line("{");
            self.depth += 1;
            opened += 1;
        }
        if !guards.is_empty() {
            let conds: Vec<String> = guards
                .iter()
                .map(|g| format!("{} >= 0", self.render(g)))
                .collect();
            self.line(format!("if ({}) {{", conds.join(" && ")));
            self.depth += 1;
            opened += 1;
        }
        let vector = b.tags.contains("vector");
        let innermost = headers.last().map(|h| h.var);
        // The vector loop as AVX-512 statements: the innermost loop, with
        // the loop around it when the lanes' bounds do not depend on it (a
        // jammed index: the statements that do not depend on it are then
        // computed once for all its points), or the loops around it that
        // are a register block of several jammed indices.
        let mut explicit = None;
        if let (true, Some(last)) = (vector, headers.last()) {
            let range = loops.iter().find(|l| l.0 == last.var).map_or(0, |l| l.1);
            let around = &headers[..headers.len() - 1];
            let free = |j: &Header| !last.deps.contains(&j.var) && parallel_var != Some(j.var);
            let block = around
                .len()
                .checked_sub(jammed.len())
                .map(|k| &around[k..])
                .filter(|js| js.len() > 1 && js.iter().all(|j| jammed.contains(&j.var) && free(j)));
            let jam: Vec<Header> = match block {
                Some(js) => js.to_vec(),
                None => around
                    .last()
                    .filter(|j| free(j))
                    .into_iter()
                    .cloned()
                    .collect(),
            };
            if Self::vector_candidate(b, range) {
                let at = headers.len() - 1 - jam.len();
                let lanes = vector::Lanes {
                    var: last.var,
                    lo: last.lo.clone(),
                    hi: last.hi.clone(),
                    jam,
                };
                explicit = Some((at, lanes));
            }
        }
        let mut explicit_loops = 0;
        let header_count = headers.len();
        let guard_opened = opened;
        // Where the accumulators held in registers are loaded: before the
        // block's loops.
        let (loops_mark, loops_depth) = (self.lines.len(), self.depth);
        let mut rows = Vec::new();
        for (k, Header { var: v, lo, hi, .. }) in headers.into_iter().enumerate() {
            if let Some((at, lanes)) = explicit.as_ref().filter(|(at, _)| *at == k) {
                let mark = self.lines.len();
                self.directive("#if defined(__AVX512F__)");
                if let Some(held) = self.vector_body(b, &env, pviews, lanes) {
                    rows = held;
                    self.avx512 = true;
                    self.directive("#else");
                    explicit_loops = header_count - *at;
                } else {
                    self.lines.truncate(mark);
                }
            }
            if vector && Some(v) == innermost {
                self.vectors.push(VectorLoop {
                    var: v,
                    line: self.lines.len(),
                    first_local: self.locals.len(),
                    accesses: Vec::new(),
                });
            }
            let n = self.vars[v].name.clone();
            self.line(format!("for (int64_t {n} = {lo}; {n} < {hi}; {n}++) {{"));
            self.depth += 1;
            opened += 1;
        }
        let body = self.point(b, &path, &env, pviews);
        if explicit_loops > 0 {
            for _ in 0..explicit_loops {
                self.depth -= 1;
                self.line("}");
            }
            self.directive("#endif");
            opened -= explicit_loops;
        }
        for _ in guard_opened..opened {
            self.depth -= 1;
            self.line("}");
        }
        if !rows.is_empty() {
            self.directive("#if defined(__AVX512F__)");
            for (reg, row) in &rows {
                self.line(format!("_mm512_storeu_ps(&{row}, {reg});"));
            }
            self.directive("#endif");
        }
        for _ in 0..guard_opened {
            self.depth -= 1;
            self.line("}");
        }
        if vector && innermost.is_some() {
            if let Some(vl) = self.vectors.pop() {
                if self.independent_lanes(&vl) {
                    let pad = "  ".repeat(self.depth);
                    self.lines.insert(
                        vl.line,
                        Line {
                            text: format!("{pad}#pragma GCC ivdep"),
                            comment: false,
                        },
                    );
                }
            }
        }
        if !rows.is_empty() {
            let pad = "  ".repeat(loops_depth);
            let mut loads = vec!["#if defined(__AVX512F__)".to_string()];
            loads.extend(
                rows.iter()
                    .map(|(reg, row)| format!("{pad}__m512 {reg} = _mm512_loadu_ps(&{row});")),
            );
            loads.push("#endif".to_string());
            self.lines.splice(
                loops_mark..loops_mark,
                loads.into_iter().map(|text| Line {
                    text,
                    comment: false,
                }),
            );
        }
        body
    }

    /// The body of one point of `b`: its views and local buffers, then its
    /// statements.
    /// The view refinement `r` makes of its parent's view `pv`, its
    /// access resolved through `env`; an error when the ranks differ or an
    /// offset may overflow 64 bits.
    fn refined(
        &self,
        r: &Refinement,
        pv: &View,
        env: &HashMap<String, Lin>,
    ) -> Result<View, String> {
        if r.access.len() != pv.dims.len() || r.shape.len() != pv.dims.len() {
            let parent = r.from.as_deref().unwrap_or_default();
            return Err(format!("`{}` has the wrong rank for `{parent}`", r.into));
        }
        let mut origin = pv.origin.clone();
        for (a, d) in r.access.iter().zip(&pv.dims) {
            let at = self
                .subst(a, env)
                .map_err(|m| format!("view `{}`: {m}", r.into))?;
            origin = origin
                .add_scaled(&at, d.stride)
                .ok_or_else(|| format!("view `{}` overflows 64-bit offsets", r.into))?;
        }
        self.check(&origin)
            .map_err(|()| format!("view `{}` may overflow 64-bit offsets", r.into))?;
        Ok(View {
            base: pv.base,
            origin,
            dims: r.shape.clone(),
            dtype: r.dtype,
            agg: r.agg,
        })
    }

    fn point(
        &mut self,
        b: &Block,
        path: &str,
        env: &HashMap<String, Lin>,
        pviews: &HashMap<String, View>,
    ) -> Result<(), EmitError> {
        let fail = |statement: Option<usize>, message: String| EmitError {
            block: path.to_string(),
            statement,
            message,
        };
        let mut views: HashMap<String, View> = HashMap::new();
        for r in &b.refs {
            let view = match &r.from {
                Some(p) => {
                    let pv = pviews.get(p).ok_or_else(|| {
                        fail(
                            None,
                            format!("`{}` refines `{p}`, which is not in scope", r.into),
                        )
                    })?;
                    self.refined(r, pv, env).map_err(|m| fail(None, m))?
                }
                None => {
                    let len = super::layout_len(&r.shape)
                        .map_err(|m| fail(None, format!("local buffer `{}`: {m}", r.into)))?;
                    let bytes = len.max(1).saturating_mul(u64::from(r.dtype.bits() / 8));
                    self.local_bytes = self.local_bytes.saturating_add(bytes);
                    if self.local_bytes > MAX_LOCAL_BYTES {
                        return Err(fail(
                            None,
                            format!(
                                "local buffer `{}` takes {bytes} bytes, and the step's local \
                                 buffers would take {} in all, more than the {MAX_LOCAL_BYTES} \
                                 a step may keep on its stack",
                                r.into, self.local_bytes
                            ),
                        ));
                    }
                    // Named by number, not after the kernel's buffer
                    // (whose name often carries the step's), so that steps
                    // differing only in names share one function. `Names`
                    // never hands out `tsr_` names, so none can capture it.
                    let name = format!("tsr_l{}", self.locals.len());
                    self.comment(&format!("{name}: local buffer {}", r.into));
                    // Aligned to a vector register, so that vector code
                    // reads and writes whole cache lines.
                    self.line(format!(
                        "_Alignas(64) {} {name}[{}] = {{0}};",
                        scalar::storage_type(r.dtype),
                        len.max(1)
                    ));
                    self.locals.push((name, r.dtype, len.max(1)));
                    View {
                        base: Base::Local(self.locals.len() - 1),
                        origin: Lin::constant(0),
                        dims: r.shape.clone(),
                        dtype: r.dtype,
                        agg: r.agg,
                    }
                }
            };
            views.insert(r.into.clone(), view);
        }

        let mut scalars: Scalars = HashMap::new();
        for (k, s) in b.stmts.iter().enumerate() {
            let at = |m: String| fail(Some(k), m);
            let view = |n: &str| {
                views
                    .get(n)
                    .cloned()
                    .ok_or_else(|| at(format!("no view `{n}` in scope")))
            };
            let scalar = |n: &str| {
                scalars
                    .get(n)
                    .cloned()
                    .ok_or_else(|| at(format!("scalar `${n}` is used before it is defined")))
            };
            match &s.kind {
                StmtKind::Load { from, into } => {
                    let v = view(from)?;
                    self.check_storage(&v, from).map_err(at)?;
                    let offset = self.render(&v.origin);
                    let elem = self.element(v.base, &offset);
                    self.record(v.base, Some(&v.origin), false);
                    let name = self.names.fresh(into);
                    self.line(format!(
                        "const {} {name} = {};",
                        scalar::ctype(v.dtype),
                        scalar::read_element(v.dtype, &elem)
                    ));
                    scalars.insert(into.clone(), (name, v.dtype));
                }
                StmtKind::Store { from, into } => {
                    let (x, t) = scalar(from)?;
                    let v = view(into)?;
                    self.check_storage(&v, into).map_err(at)?;
                    if t != v.dtype {
                        return Err(at(format!(
                            "stores ${from} of type {t} into `{into}` of type {}",
                            v.dtype
                        )));
                    }
                    let offset = self.render(&v.origin);
                    let elem = self.element(v.base, &offset);
                    self.record(v.base, Some(&v.origin), true);
                    self.line(scalar::store(v.agg, v.dtype, &elem, &x));
                }
                StmtKind::LoadIndex { from, into } => {
                    let l = self.subst(from, env).map_err(at)?;
                    let name = self.names.fresh(into);
                    self.line(format!("const int64_t {name} = {};", self.render(&l)));
                    scalars.insert(into.clone(), (name, DType::I64));
                }
                StmtKind::Constant { into, value, dtype } => {
                    let name = self.names.fresh(into);
                    self.line(format!(
                        "const {} {name} = {};",
                        scalar::ctype(*dtype),
                        scalar::literal(*dtype, *value)
                    ));
                    scalars.insert(into.clone(), (name, *dtype));
                }
                StmtKind::Intrinsic {
                    op,
                    inputs,
                    into,
                    dtype,
                } => {
                    let args = inputs
                        .iter()
                        .map(|n| scalar(n))
                        .collect::<Result<Vec<_>, _>>()?;
                    let c = scalar::intrinsic(op, *dtype, &args)
                        .map_err(|m| at(format!("{}: {m}", kernel::op_name(op))))?;
                    for check in &c.checks {
                        self.line(check);
                    }
                    let name = self.names.fresh(into);
                    self.line(format!(
                        "const {} {name} = {};",
                        scalar::ctype(c.dtype),
                        c.expr
                    ));
                    scalars.insert(into.clone(), (name, c.dtype));
                }
                StmtKind::Gather {
                    from,
                    indices,
                    into,
                } => {
                    let v = view(from)?;
                    self.check_storage(&v, from).map_err(at)?;
                    if indices.len() != v.dims.len() {
                        return Err(at(format!(
                            "gather of `{from}` has {} positions for {} dimensions",
                            indices.len(),
                            v.dims.len()
                        )));
                    }
                    let mut terms = Vec::new();
                    if v.origin != Lin::constant(0) {
                        terms.push(self.render(&v.origin));
                    }
                    for (d, (n, dim)) in indices.iter().zip(&v.dims).enumerate() {
                        let (x, t) = scalar(n)?;
                        if !t.is_int() {
                            return Err(at(format!("gather position ${n} is {t}, not an integer")));
                        }
                        let size = i64::try_from(dim.size).unwrap_or(i64::MAX);
                        // An out-of-bounds position sets the step's error
                        // (returned when the step ends) and reads element 0
                        // instead, so no access leaves the buffer and the
                        // loop needs no early exit.
                        let raw = self.names.fresh(&format!("{into}_pos{d}"));
                        let g = self.names.fresh(&format!("{into}_at{d}"));
                        self.line(format!("const int64_t {raw} = (int64_t){x};"));
                        self.line(format!(
                            "const int {raw}_ok = ({raw} >= 0) & ({raw} < {size});"
                        ));
                        self.line(format!("tsr_err |= !{raw}_ok;"));
                        self.line(format!("const int64_t {g} = {raw}_ok ? {raw} : 0;"));
                        // |g| < size and the view lies inside its buffer,
                        // so the product and the sum fit in int64_t.
                        match dim.stride {
                            0 => {}
                            1 => terms.push(g),
                            s => terms.push(format!("{s}*{g}")),
                        }
                    }
                    let offset = if terms.is_empty() {
                        "0".to_string()
                    } else {
                        terms.join(" + ")
                    };
                    let elem = self.element(v.base, &offset);
                    self.record(v.base, None, false);
                    let name = self.names.fresh(into);
                    self.line(format!(
                        "const {} {name} = {};",
                        scalar::ctype(v.dtype),
                        scalar::read_element(v.dtype, &elem)
                    ));
                    scalars.insert(into.clone(), (name, v.dtype));
                }
                StmtKind::Block(child) => self.block(child, path, env, &views, None, true)?,
            }
        }
        Ok(())
    }

    /// Checks that a view's type is its storage's (the verifier keeps
    /// views' types equal to the views they refine).
    fn check_storage(&self, v: &View, name: &str) -> Result<(), String> {
        let t = self.base_dtype(v.base);
        if t == v.dtype {
            Ok(())
        } else {
            Err(format!(
                "view `{name}` is {} but its buffer holds {t}",
                v.dtype
            ))
        }
    }
}

/// `f(a, f(b, c))` over `terms` (at least one).
fn fold(f: &str, terms: &[String]) -> String {
    match terms {
        [] => String::new(),
        [one] => one.clone(),
        [first, rest @ ..] => format!("{f}({first}, {})", fold(f, rest)),
    }
}

/// Text safe inside a C block comment: no line breaks, no `*/`, no `??`
/// (trigraphs).
pub(crate) fn comment_text(s: &str) -> String {
    let flat: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    flat.replace("*/", "* /").replace("??", "? ?")
}
