//! Explicit AVX-512 code for a vector loop: the innermost loop of a block
//! tagged `vector`, over at most 16 `float32` lanes, emitted as one masked
//! vector statement per kernel statement instead of a loop that gcc may or
//! may not vectorize (it often does not: it unrolls a 16-iteration loop
//! completely and then vectorizes an outer loop with gathers instead).
//!
//! The lanes that run are those between the loop's bounds, `lo <= v < hi`,
//! as a 16-bit mask; memory is read with masked loads and written with
//! masked stores, so lanes outside the bounds never touch memory (AVX-512
//! masked accesses do not fault on masked-off lanes). The code is guarded
//! by `#if defined(__AVX512F__)` with the scalar loop as the `#else`
//! branch, so the same C builds on any x86 or other target.
//!
//! Applies when the block has no child blocks and no local buffers, and
//! every statement is one of: a load of a `float32` view whose offset moves
//! with the lane by 1 (a vector load) or not at all (a broadcast); a
//! `float32` constant; `+`, `-`, `*`, `/`, `max`, `min`, `fmax`, `fmin` on
//! `float32`; a store with any aggregation (assign, `+`, `*`, `min`,
//! `max`) to a `float32` view whose offset moves with the lane by 1. Lanes
//! must touch disjoint elements of every buffer written (the same condition
//! as `#pragma GCC ivdep`). Any other block keeps the scalar loop.
//!
//! One contraction: a product stored with `+` aggregation (a float
//! reduction accumulating `x * y`) is one fused multiply-add, which rounds
//! once where the scalar loop rounds twice. Float reductions already agree
//! with the reference only within a tolerance (they may be reordered), and
//! the fused form halves the floating-point operations of every
//! convolution and matrix product: on Zen 4, where a 512-bit multiply and
//! add each take a pipe for two cycles, a register-blocked convolution ran
//! 17% faster with it.
//!
//! Guarantees: the scalar loop's results, bit for bit except for that
//! contraction. Each lane computes the same IEEE operations on the same
//! operands (`max` and `min` keep TC's NaN rule, and `fmax` and `fmin`
//! C's, each with compares and a blend), and the lanes are independent, so
//! running statement by statement across lanes equals running lane by lane.

use std::collections::HashMap;

use ir::{BinOp, Builtin, DType};
use kernel::{Agg, Block, Op, StmtKind};

use super::registers::Registers;
use super::{Base, Func, Header, Lin, VectorLoop, View};

/// The lanes of one `float32` vector register.
pub(super) const LANES: i64 = 16;

/// The vector value of one kernel scalar: its C name.
pub(super) type Vectors = HashMap<String, String>;

/// The loops a vector body replaces.
pub(super) struct Lanes {
    /// The lane variable and its bounds (C expressions).
    pub(super) var: usize,
    pub(super) lo: String,
    pub(super) hi: String,
    /// The jammed loops around the lanes, outermost first (none, the one
    /// loop around them, or a register block of several). The lanes'
    /// bounds do not depend on them.
    pub(super) jam: Vec<Header>,
}

impl Func<'_> {
    /// Whether block `b` can be emitted as vector statements at all (its
    /// statements' kinds and the lane count); the offsets are checked while
    /// emitting.
    pub(super) fn vector_candidate(b: &Block, range: i64) -> bool {
        range <= LANES
            && b.refs.iter().all(|r| r.from.is_some())
            && b.stmts.iter().all(|s| {
                matches!(
                    s.kind,
                    StmtKind::Load { .. }
                        | StmtKind::Store { .. }
                        | StmtKind::Constant { .. }
                        | StmtKind::Intrinsic { .. }
                )
            })
    }

    /// Emits the body of `b` for the lanes `lo <= var < hi` (and every
    /// point of the jammed loop) as AVX-512 statements under `if (mask)`.
    /// Returns the accumulators it holds in registers (`registers.rs`):
    /// each register's C name and the local array row it stands for, which
    /// the caller loads before the block's loops and stores after them; or
    /// `None`, with nothing emitted, when a statement does not qualify (the
    /// caller emits the scalar loops).
    pub(super) fn vector_body(
        &mut self,
        b: &Block,
        env: &HashMap<String, Lin>,
        pviews: &HashMap<String, View>,
        lanes: &Lanes,
    ) -> Option<Vec<(String, String)>> {
        let mark = self.lines.len();
        let args = self.args.len();
        self.vectors.push(VectorLoop {
            var: lanes.var,
            line: mark,
            first_local: self.locals.len(),
            accesses: Vec::new(),
        });
        let depth = self.depth;
        let rows = self.vector_stmts(b, env, pviews, lanes);
        self.depth = depth;
        let vl = self.vectors.pop();
        if rows.is_some() && vl.is_some_and(|vl| self.independent_lanes(&vl)) {
            return rows;
        }
        self.lines.truncate(mark);
        self.args.truncate(args);
        None
    }

    fn vector_stmts(
        &mut self,
        b: &Block,
        env: &HashMap<String, Lin>,
        pviews: &HashMap<String, View>,
        lanes: &Lanes,
    ) -> Option<Vec<(String, String)>> {
        let var = lanes.var;
        let mut views: HashMap<String, View> = HashMap::new();
        for r in &b.refs {
            let pv = pviews.get(r.from.as_ref()?)?;
            if r.dtype != DType::F32 || self.base_dtype(pv.base) != DType::F32 {
                return None;
            }
            let view = self.refined(r, pv, env).ok()?;
            views.insert(r.into.clone(), view);
        }
        let mask = self.names.fresh("lanes");
        self.line(format!(
            "const __mmask16 {mask} = tsr_lanes16({}, {});",
            lanes.lo, lanes.hi
        ));
        self.line(format!("if ({mask}) {{"));
        self.depth += 1;
        let mut vectors: Vectors = HashMap::new();
        let jam: Vec<usize> = lanes.jam.iter().map(|j| j.var).collect();
        let hoisted = if jam.is_empty() {
            vec![false; b.stmts.len()]
        } else {
            invariant(b, &views, &jam)
        };
        // A reduction's shared loads are the ones a register block reuses
        // from the cache, so the ones worth fetching ahead.
        let reduces = b.stmts.iter().any(|s| match &s.kind {
            StmtKind::Store { into, .. } => views.get(into).is_some_and(|v| v.agg == Agg::Add),
            _ => false,
        });
        for (s, _) in b.stmts.iter().zip(&hoisted).filter(|(_, h)| **h) {
            if !self.vector_stmt(&s.kind, &views, &mut vectors, var, &mask, None) {
                return None;
            }
            if let (true, StmtKind::Load { from, .. }) = (reduces, &s.kind) {
                if let Some(v) = views.get(from) {
                    self.prefetch_next_outer(v, var);
                }
            }
        }
        let varying: Vec<&StmtKind> = b
            .stmts
            .iter()
            .zip(&hoisted)
            .filter(|(_, h)| !**h)
            .map(|(s, _)| &s.kind)
            .collect();
        let rows = match self.register_points(b, &views, lanes) {
            Some(points) => {
                self.register_blocked(&views, &vectors, &varying, lanes, &mask, points)?
            }
            None => {
                for j in &lanes.jam {
                    let n = self.vars[j.var].name.clone();
                    self.line(format!(
                        "for (int64_t {n} = {}; {n} < {}; {n}++) {{",
                        j.lo, j.hi
                    ));
                    self.depth += 1;
                }
                for kind in &varying {
                    if !self.vector_stmt(kind, &views, &mut vectors, var, &mask, None) {
                        return None;
                    }
                }
                for _ in &lanes.jam {
                    self.depth -= 1;
                    self.line("}");
                }
                Vec::new()
            }
        };
        self.depth -= 1;
        self.line("}");
        Some(rows)
    }

    /// Prefetches, into the second-level cache, the vector a shared load of
    /// a register-blocked block reads at the next value of the step's
    /// outermost loop: a convolution's weights for its next block of
    /// output channels. Each such vector is loaded once per block from
    /// memory and then reused from the cache (by every output row), so
    /// without this the first row of every block waits on memory, in a
    /// burst, while the later rows leave the memory idle; with it the next
    /// block streams in during the current one's rows (a 7x7 convolution
    /// whose 9 MiB of weights come from memory ran 20% faster). The
    /// element index is clamped into the buffer, so the address is always
    /// one C may form.
    fn prefetch_next_outer(&mut self, view: &View, lane: usize) {
        let Base::Root(k) = view.base else {
            return;
        };
        // Variables are numbered as their loops open, so 0 is the step's
        // outermost loop.
        let outer = 0;
        let step = view.origin.coef(outer);
        if outer == lane || step <= 0 || view.origin.coef(lane) != 1 {
            return;
        }
        let len: u64 = self.roots[k].dims.iter().map(|d| d.size).product();
        let (Some(lane0), Ok(last)) = (
            view.origin.add_scaled(&Lin::var(lane), -1),
            i64::try_from(len.saturating_sub(1)),
        ) else {
            return;
        };
        let Some(next) = lane0.constant.checked_add(step).map(|c| Lin {
            constant: c,
            ..lane0
        }) else {
            return;
        };
        let offset = format!("tsr_min({}, {last})", self.render(&next));
        let elem = self.element(view.base, &offset);
        self.line(format!("_mm_prefetch((const char *)&{elem}, _MM_HINT_T1);"));
    }

    /// The C address of lane 0 of `view`, whether the lanes move along it
    /// (`None` when the offset moves by other than 0 or 1 per lane), and
    /// whether all 16 lanes from there lie inside the buffer (a local
    /// array), so that it can be read and written whole.
    fn lane_address(&mut self, view: &View, var: usize) -> Option<(String, bool, bool)> {
        let step = view.origin.coef(var);
        if step != 0 && step != 1 {
            return None;
        }
        let lane0 = view.origin.add_scaled(&Lin::var(var), -step)?;
        let whole = match view.base {
            Base::Local(k) => {
                let (lo, hi) = self.range(&lane0);
                lo >= 0 && i128::from(hi) + i128::from(LANES) <= i128::from(self.locals[k].2)
            }
            Base::Root(_) => false,
        };
        let offset = self.render(&lane0);
        Some((self.element(view.base, &offset), step == 1, whole))
    }

    pub(super) fn vector_stmt(
        &mut self,
        kind: &StmtKind,
        views: &HashMap<String, View>,
        vectors: &mut Vectors,
        var: usize,
        mask: &str,
        regs: Option<&mut Registers>,
    ) -> bool {
        match kind {
            StmtKind::Load { from, into } => {
                let Some(v) = views.get(from) else {
                    return false;
                };
                let Some((elem, moves, whole)) = self.lane_address(v, var) else {
                    return false;
                };
                self.record(v.base, Some(&v.origin), false);
                let name = self.names.fresh(into);
                // The lanes outside the mask of a whole read are other
                // elements of the local array; they only reach lanes that
                // are never stored.
                let value = match (moves, whole) {
                    (true, true) => format!("_mm512_loadu_ps(&{elem})"),
                    (true, false) => format!("_mm512_maskz_loadu_ps({mask}, &{elem})"),
                    (false, _) => format!("_mm512_set1_ps({elem})"),
                };
                self.line(format!("const __m512 {name} = {value};"));
                vectors.insert(into.clone(), name);
            }
            StmtKind::Store { from, into } => {
                let (Some(x), Some(v)) = (vectors.get(from), views.get(into)) else {
                    return false;
                };
                let x = x.clone();
                let Some((elem, true, whole)) = self.lane_address(v, var) else {
                    return false;
                };
                // The aggregation's operation on the old lanes and `x`:
                // AVX-512's own for `+` and `*`, which also come masked;
                // the prelude's compare-and-blend for TC's `max` and `min`.
                let combine = match v.agg {
                    Agg::Assign => None,
                    Agg::Add => Some(("_mm512_add_ps", Some("_mm512_mask_add_ps"))),
                    Agg::Mul => Some(("_mm512_mul_ps", Some("_mm512_mask_mul_ps"))),
                    Agg::Max => Some(("tsr_maximum16", None)),
                    Agg::Min => Some(("tsr_minimum16", None)),
                };
                self.record(v.base, Some(&v.origin), true);
                // A product accumulated by `+`: one fused multiply-add.
                let fused = match v.agg {
                    Agg::Add => self.products.get(&x).cloned(),
                    _ => None,
                };
                let updated = |old: &str| match &fused {
                    Some((a, b)) => format!("_mm512_mask3_fmadd_ps({a}, {b}, {old}, {mask})"),
                    None => update(combine, mask, old, &x),
                };
                if let Some(regs) = regs {
                    // The row lives in a register: the masked operation
                    // on it, as the whole local write below does on memory.
                    let Some(acc) = self.accumulator(regs, v, var) else {
                        return false;
                    };
                    self.line(format!("{acc} = {};", updated(&acc)));
                } else if whole {
                    // A whole local write keeps the lanes outside the mask
                    // as they were (a masked operation on the old value).
                    let value = updated(&format!("_mm512_loadu_ps(&{elem})"));
                    self.line(format!("_mm512_storeu_ps(&{elem}, {value});"));
                } else {
                    let old = format!("_mm512_maskz_loadu_ps({mask}, &{elem})");
                    let value = match (&fused, combine) {
                        (Some((a, b)), _) => format!("_mm512_fmadd_ps({a}, {b}, {old})"),
                        (None, None) => x,
                        (None, Some((f, _))) => format!("{f}({old}, {x})"),
                    };
                    self.line(format!("_mm512_mask_storeu_ps(&{elem}, {mask}, {value});"));
                }
            }
            StmtKind::Constant { into, value, dtype } => {
                if *dtype != DType::F32 {
                    return false;
                }
                let name = self.names.fresh(into);
                self.line(format!(
                    "const __m512 {name} = _mm512_set1_ps({});",
                    super::scalar::literal(*dtype, *value)
                ));
                vectors.insert(into.clone(), name);
            }
            StmtKind::Intrinsic {
                op,
                inputs,
                into,
                dtype,
            } => {
                if *dtype != DType::F32 {
                    return false;
                }
                let Some(args) = inputs
                    .iter()
                    .map(|n| vectors.get(n).cloned())
                    .collect::<Option<Vec<_>>>()
                else {
                    return false;
                };
                let Some(expr) = vector_op(op, &args) else {
                    return false;
                };
                let name = self.names.fresh(into);
                if let (Op::Binary(BinOp::Mul), [x, y]) = (op, &args[..]) {
                    self.products.insert(name.clone(), (x.clone(), y.clone()));
                }
                self.line(format!("const __m512 {name} = {expr};"));
                vectors.insert(into.clone(), name);
            }
            StmtKind::LoadIndex { .. } | StmtKind::Gather { .. } | StmtKind::Block(_) => {
                return false;
            }
        }
        true
    }
}

/// The masked update of a whole vector `old` by `x`: `combine`'s operation
/// (none for an assignment) in the lanes of `mask`, `old` elsewhere.
fn update(combine: Option<(&str, Option<&str>)>, mask: &str, old: &str, x: &str) -> String {
    match combine {
        None => format!("_mm512_mask_blend_ps({mask}, {old}, {x})"),
        Some((_, Some(masked))) => format!("{masked}({old}, {mask}, {old}, {x})"),
        Some((f, None)) => format!("_mm512_mask_blend_ps({mask}, {old}, {f}({old}, {x}))"),
    }
}

/// Which statements of `b` depend on none of the loop variables `jam`:
/// constants, loads of views whose offset moves with none of them from
/// buffers that no statement writes, and operations on such values. They
/// compute the same values at every point of those loops, so they can run
/// once before them.
fn invariant(b: &Block, views: &HashMap<String, View>, jam: &[usize]) -> Vec<bool> {
    let written: Vec<Base> = b
        .stmts
        .iter()
        .filter_map(|s| match &s.kind {
            StmtKind::Store { into, .. } => views.get(into).map(|v| v.base),
            _ => None,
        })
        .collect();
    let mut fixed: HashMap<&str, bool> = HashMap::new();
    b.stmts
        .iter()
        .map(|s| {
            let (into, ok) = match &s.kind {
                StmtKind::Load { from, into } => (
                    into,
                    views.get(from).is_some_and(|v| {
                        jam.iter().all(|&j| v.origin.coef(j) == 0) && !written.contains(&v.base)
                    }),
                ),
                StmtKind::Constant { into, .. } => (into, true),
                StmtKind::Intrinsic { inputs, into, .. } => (
                    into,
                    inputs
                        .iter()
                        .all(|n| fixed.get(n.as_str()).copied().unwrap_or(false)),
                ),
                _ => return false,
            };
            fixed.insert(into.as_str(), ok);
            ok
        })
        .collect()
}

/// The AVX-512 expression of a `float32` operation on vectors, if it has
/// one here.
fn vector_op(op: &Op, args: &[String]) -> Option<String> {
    Some(match (op, args) {
        (Op::Binary(b), [x, y]) => {
            let f = match b {
                BinOp::Add => "_mm512_add_ps",
                BinOp::Sub => "_mm512_sub_ps",
                BinOp::Mul => "_mm512_mul_ps",
                BinOp::Div => "_mm512_div_ps",
                _ => return None,
            };
            format!("{f}({x}, {y})")
        }
        (Op::Builtin(Builtin::Max), [x, y]) => format!("tsr_maximum16({x}, {y})"),
        (Op::Builtin(Builtin::Min), [x, y]) => format!("tsr_minimum16({x}, {y})"),
        (Op::Builtin(Builtin::Fmax), [x, y]) => format!("tsr_fmax16({x}, {y})"),
        (Op::Builtin(Builtin::Fmin), [x, y]) => format!("tsr_fmin16({x}, {y})"),
        _ => return None,
    })
}
