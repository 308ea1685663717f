//! The kernel IR verifier: checks the invariants every producer of kernel
//! blocks (the lowering, and later every pass) must keep, after Stripe's
//! Definition 2 and §3.2. Every violation is reported, each naming the block
//! by its path from the root (`main/conv/inner`) and the index, refinement
//! or statement (numbered from 0) at fault.
//!
//! Invariants checked:
//! - structure: blocks nest at most 64 deep (the root is depth 1);
//! - indices: names are unique in a block; every range is at least 1; a
//!   passed index (`affine: Some`) has range 1, does not occur at the root,
//!   and its form mentions only the parent's indices; constraints,
//!   refinement accesses and `index(...)` forms mention only the block's own
//!   indices (a parent index is usable only once passed explicitly);
//! - refinements: names are unique in a block; at the root, `from: None`
//!   declares one of the kernel's buffers and `from: Some` is an error;
//!   elsewhere `from` names a refinement of the parent block, or is `None`
//!   for a local buffer; root and local buffers have an empty access; a view
//!   of a parent refinement has one access form and one dimension per
//!   dimension of the refined view, the refined view's dtype and, dimension
//!   by dimension, its strides (so that an offset in the view's coordinates
//!   is an offset in the parent's); a declared buffer (root or local) has
//!   row-major strides for its sizes, as it is allocated, and its strides
//!   and its size in bytes fit `int64`;
//! - directions: a view that a statement stores into is `Out` or `InOut`, a
//!   view that a statement loads or gathers from is `In` or `InOut`, and a
//!   child refinement of a view has only directions the view has (a child
//!   refining a view as `In` reads it, as `Out` writes it). Local buffers are
//!   private to the block and may be read and written whatever their
//!   direction says. A kernel buffer's direction is the kernel's interface:
//!   an `Out` buffer may also be read (values the kernel wrote earlier, as
//!   when a later stage reads an earlier output), an `In` one never written;
//! - bounds: at every point of the iteration space that satisfies the
//!   constraints, every view of a parent refinement lies inside the refined
//!   view: `0 <= access[d]` and `access[d] + size[d] <= parent size[d]`;
//! - assignment: a written view (stored into, or refined by a child as `Out`
//!   or `InOut`) with aggregation `Assign` has disjoint views at distinct
//!   points of the iteration space (for size-1 views: its access is
//!   injective), so no element is written by two points; root buffers
//!   count as views at offset 0 of the same buffer at every root point;
//! - parallel partitions: a free index tagged `parallel` partitions the
//!   accesses of its block: in one execution of the block, no two points
//!   with different values of the index write the same element of any
//!   buffer, nor does one write an element the other reads, whether by the
//!   block's statements or by those of any block nested in it (a local
//!   buffer declared in the block or below is private to a point and never
//!   counts). The runtime runs the partitions of a `#parallel` step's index
//!   on different threads, and this is what makes that free of data races
//!   ([`crate::partition`] has the proof: stride dominance,
//!   Fourier–Motzkin, enumeration, else "cannot prove");
//! - statements: scalars are assigned once per statement list and defined
//!   before use; `load`, `store` and `gather` name refinements of the block;
//!   `load` and `store` views have size 1 in every dimension; `gather` has
//!   one position per dimension of its view; intrinsics get their operation's
//!   number of inputs (unary 1, binary 2, `select` 3, cast 1, builtins
//!   [`ir::Builtin::arity`]); constants' values match their types.
//!
//! Bounds and assignment are decided exactly where possible: interval
//! reasoning over the index box first (exact without constraints, since an
//! affine form takes its extremes at the corners of a box); when that fails
//! and constraints cut the box, a bound is proved by Fourier–Motzkin
//! elimination ([`crate::fm`]: no integer point of the box satisfies the
//! constraints and violates the bound), and failing that the points are
//! enumerated if the box has at most 2^20 of them (constraints are affine, so a point's membership is
//! exact), and otherwise the verifier reports that it cannot prove the
//! property. Enumerating for assignment sorts the views by their first
//! offset and compares only neighbours that can overlap, at most 2^26 pairs
//! before it likewise reports that it cannot prove the property.
//!
//! Why checking block by block is sound: a child sees its parent's point
//! only through its passed indices, whose values are the passed forms over
//! the parent's points. The verifier gives each passed index the interval
//! of values its form takes over the parent's domain (tightened by
//! enumerating the parent's points when the parent has constraints and few
//! enough points), so the child's domain (its own box times these
//! intervals, cut by its constraints) contains every point at which the
//! child actually runs. A property proved over a superset holds on the set,
//! and since each view lies inside the view it refines at every point, by
//! induction every access at any depth stays inside the root buffer. The
//! converse does not hold: passed indices that are correlated in the parent
//! (by a parent constraint) are checked independently, so such a kernel may
//! be rejected; copying the parent's constraint into the child fixes that.
//! Assignment is checked per execution of a block (passed indices fixed):
//! writes from distinct parent points are the parent's view's concern.

use std::collections::{HashMap, HashSet};
use std::fmt;

use ir::{DType, Value};
use rayon::prelude::*;

use crate::{fm, Affine, Agg, Block, Op, RefDir, Refinement, StmtKind};

/// The deepest nesting allowed (the root is depth 1).
const MAX_DEPTH: usize = 64;
/// The most points the verifier enumerates in one block's box.
const MAX_POINTS: u128 = 1 << 20;
/// The most pairs of views the assignment check compares in one block.
const MAX_PAIRS: u64 = 1 << 26;

/// Verifies a kernel whose root block's refinements are the kernel's
/// buffers; returns every violation found.
pub fn verify_block(root: &Block) -> Result<(), Vec<String>> {
    let mut errs = Vec::new();
    check_block(root, None, &root.name, 1, &mut errs);
    crate::partition::check_kernel(root, &mut errs);
    if errs.is_empty() {
        Ok(())
    } else {
        Err(errs)
    }
}

/// Checks the children of one root block one at a time, for passes that
/// rewrite a kernel a step at a time and keep a rewrite only if the kernel
/// still verifies: verifying the whole kernel after every rewrite made a
/// pass quadratic in the number of steps, and the verifier cubic overall.
///
/// Blocks verify independently given their parent (see the module doc),
/// so a step's checks, the root's assignment checks of the buffers the step
/// writes, and the parallel partitions of indices in the step are exactly
/// what [`verify_block`] checks that the step can change. Requires: `root`
/// is the root of a kernel that verifies, with or without its statements
/// (a pass takes them out to rewrite them while this borrows the root).
/// Guarantees: for a child `c`, [`ChildVerifier::verify`] is `Ok` exactly
/// when the root holding `c` among its other, verified, steps verifies,
/// except that a root with a parallel index (whose proof involves every
/// step) accepts no child.
#[derive(Debug)]
pub struct ChildVerifier<'a> {
    root: &'a Block,
    index: HashMap<&'a str, usize>,
    dom: Option<Domain>,
}

impl<'a> ChildVerifier<'a> {
    pub fn new(root: &'a Block) -> ChildVerifier<'a> {
        let mut ignored = Vec::new();
        ChildVerifier {
            root,
            index: ref_index(root),
            dom: check_indices(root, None, &root.name, &mut ignored),
        }
    }

    /// Verifies `c` as a step of the root.
    pub fn verify(&self, c: &Block) -> Result<(), Vec<String>> {
        let root = self.root;
        let mut errs = Vec::new();
        if root.idxs.iter().any(|ix| ix.tags.contains("parallel")) {
            errs.push(format!(
                "{}: the root has a parallel index, whose proof involves every step, so one step is not checked alone",
                root.name
            ));
            return Err(errs);
        }
        let me = Parent {
            block: root,
            index: &self.index,
            path: &root.name,
            is_root: true,
            dom: self.dom.as_ref(),
        };
        let path = format!("{}/{}", root.name, c.name);
        check_block(c, Some(&me), &path, 2, &mut errs);
        if let Some(dom) = &self.dom {
            let mut seen = HashSet::new();
            for name in child_writes(c) {
                let Some(r) = self.index.get(name).map(|&k| &root.refs[k]) else {
                    continue;
                };
                if r.agg == Agg::Assign && r.from.is_none() && seen.insert(name) {
                    let offs: Vec<Lin> =
                        r.shape.iter().map(|_| Lin::zero(dom.names.len())).collect();
                    check_assign(&root.name, r, &offs, dom, &mut errs);
                }
            }
        }
        crate::partition::check_step(root, c, &path, &mut errs);
        if errs.is_empty() {
            Ok(())
        } else {
            Err(errs)
        }
    }
}

/// What a block's checks need of its parent.
struct Parent<'a> {
    block: &'a Block,
    /// The parent's refinements by name, so that looking one up does not
    /// scan them all (a root has one per kernel buffer, thousands in a
    /// large model).
    index: &'a HashMap<&'a str, usize>,
    path: &'a str,
    is_root: bool,
    /// The parent's domain; `None` when its indices or constraints are
    /// broken, and then numeric checks below it are skipped.
    dom: Option<&'a Domain>,
}

/// An affine form compiled against a domain: a constant and one
/// coefficient per index of the domain, in 128 bits with saturation (a
/// saturated value is far outside any `u64` size, so it fails the checks).
#[derive(Debug)]
struct Lin {
    constant: i128,
    coefs: Vec<i128>,
}

impl Lin {
    /// Compiles `a` over the index names; `Err` lists names not among them.
    fn compile(a: &Affine, names: &[String]) -> Result<Lin, Vec<String>> {
        let mut coefs = vec![0i128; names.len()];
        let mut unknown = Vec::new();
        for (n, c) in &a.terms {
            match names.iter().position(|m| m == n) {
                Some(p) => coefs[p] = i128::from(*c),
                None => unknown.push(n.clone()),
            }
        }
        if unknown.is_empty() {
            Ok(Lin {
                constant: i128::from(a.constant),
                coefs,
            })
        } else {
            Err(unknown)
        }
    }

    /// The constant form of value 0 over `n` indices.
    fn zero(n: usize) -> Lin {
        Lin {
            constant: 0,
            coefs: vec![0; n],
        }
    }

    fn eval(&self, point: &[i128]) -> i128 {
        self.coefs
            .iter()
            .zip(point)
            .fold(self.constant, |acc, (c, v)| {
                acc.saturating_add(c.saturating_mul(*v))
            })
    }

    /// The least and greatest values over the domain's box.
    fn bounds(&self, dom: &Domain) -> (i128, i128) {
        let (mut lo, mut hi) = (self.constant, self.constant);
        for (i, c) in self.coefs.iter().enumerate() {
            let (a, b) = (c.saturating_mul(dom.lo[i]), c.saturating_mul(dom.hi[i]));
            lo = lo.saturating_add(a.min(b));
            hi = hi.saturating_add(a.max(b));
        }
        (lo, hi)
    }
}

/// A block's iteration space as the verifier sees it: every index with the
/// interval of values it takes (a free index `[0, range)`, a passed index
/// the values of its form over the parent's domain), and the constraints.
#[derive(Debug)]
struct Domain {
    names: Vec<String>,
    lo: Vec<i128>,
    hi: Vec<i128>,
    passed: Vec<bool>,
    constraints: Vec<Lin>,
    /// Whether no point of the parent runs the block at all.
    never_runs: bool,
    /// Each index's least and greatest value over the points that run
    /// (`None` when none runs), found by one enumeration the first time a
    /// child asks: every child's passed indices are forms over these
    /// indices, most of them of one index, and enumerating the domain once
    /// per form made verifying a kernel with many guarded blocks take
    /// seconds.
    index_ranges: std::sync::OnceLock<Option<Vec<(i128, i128)>>>,
}

impl Domain {
    /// The number of points of the box (saturating).
    fn size(&self) -> u128 {
        self.lo.iter().zip(&self.hi).fold(1u128, |acc, (l, h)| {
            let n = u128::try_from(h.saturating_sub(*l).saturating_add(1)).unwrap_or(0);
            acc.saturating_mul(n)
        })
    }

    /// Calls `f` on every point of the box that satisfies the constraints,
    /// until `f` returns false. The caller ensures the box is small.
    fn for_each(&self, f: &mut dyn FnMut(&[i128]) -> bool) {
        if self.never_runs || self.lo.iter().zip(&self.hi).any(|(l, h)| l > h) {
            return;
        }
        let mut p = self.lo.clone();
        loop {
            if self.constraints.iter().all(|c| c.eval(&p) >= 0) && !f(&p) {
                return;
            }
            // Advance the odometer, last index fastest.
            let mut i = p.len();
            loop {
                if i == 0 {
                    return;
                }
                i -= 1;
                if p[i] < self.hi[i] {
                    p[i] += 1;
                    break;
                }
                p[i] = self.lo[i];
            }
        }
    }

    /// Whether `goal >= 0` at every point of the box that satisfies the
    /// constraints, by showing that no integer point of the box satisfies
    /// the constraints and `goal <= -1` ([`crate::fm`]). `false` when no
    /// proof was found.
    fn implies(&self, goal: &Lin) -> bool {
        let n = self.names.len();
        let unit = |i: usize, k: i128, c: i128| {
            let mut coefs = vec![0; n];
            coefs[i] = k;
            fm::Row { constant: c, coefs }
        };
        let mut rows: Vec<fm::Row> = (0..n)
            .flat_map(|i| [unit(i, 1, -self.lo[i]), unit(i, -1, self.hi[i])])
            .collect();
        rows.extend(self.constraints.iter().map(|c| fm::Row {
            constant: c.constant,
            coefs: c.coefs.clone(),
        }));
        rows.push(fm::Row {
            constant: goal.constant.saturating_neg().saturating_sub(1),
            coefs: goal.coefs.iter().map(|c| c.saturating_neg()).collect(),
        });
        fm::infeasible(rows)
    }

    /// The point as text, e.g. `x = 0, k = 2`.
    fn show(&self, p: &[i128]) -> String {
        if p.is_empty() {
            return "the only point".to_string();
        }
        let parts: Vec<String> = self
            .names
            .iter()
            .zip(p)
            .map(|(n, v)| format!("{n} = {v}"))
            .collect();
        parts.join(", ")
    }

    /// [`Domain::index_ranges`]' value: every index's range over the
    /// points that run, by one enumeration (the caller ensures the box is
    /// small).
    fn index_ranges(&self) -> Option<&Vec<(i128, i128)>> {
        self.index_ranges
            .get_or_init(|| {
                let mut r: Option<Vec<(i128, i128)>> = None;
                self.for_each(&mut |p| {
                    match &mut r {
                        None => r = Some(p.iter().map(|&v| (v, v)).collect()),
                        Some(r) => {
                            for (x, &v) in r.iter_mut().zip(p) {
                                *x = (x.0.min(v), x.1.max(v));
                            }
                        }
                    }
                    true
                });
                r
            })
            .as_ref()
    }

    /// The range of `l` over the points that run: exact by enumeration
    /// when constraints cut a small box, else the interval over the box;
    /// `None` when no point runs.
    fn range_of(&self, l: &Lin) -> Option<(i128, i128)> {
        if self.never_runs {
            return None;
        }
        if self.constraints.is_empty() || self.size() > MAX_POINTS {
            return Some(l.bounds(self));
        }
        let mut used = l.coefs.iter().enumerate().filter(|(_, c)| **c != 0);
        if let (Some((i, &c)), None) = (used.next(), used.next()) {
            // A form of one index takes that index's values, scaled.
            let (lo, hi) = self.index_ranges()?[i];
            let (a, b) = (c.saturating_mul(lo), c.saturating_mul(hi));
            return Some((
                l.constant.saturating_add(a.min(b)),
                l.constant.saturating_add(a.max(b)),
            ));
        }
        let mut r: Option<(i128, i128)> = None;
        self.for_each(&mut |p| {
            let v = l.eval(p);
            r = Some(r.map_or((v, v), |(a, b)| (a.min(v), b.max(v))));
            true
        });
        r
    }
}

fn reads(d: RefDir) -> bool {
    matches!(d, RefDir::In | RefDir::InOut)
}

fn writes(d: RefDir) -> bool {
    matches!(d, RefDir::Out | RefDir::InOut)
}

fn dir_name(d: RefDir) -> &'static str {
    match d {
        RefDir::None => "none",
        RefDir::In => "in",
        RefDir::Out => "out",
        RefDir::InOut => "inout",
    }
}

/// Whether the block holding `r` may read it (`write` false) or write it:
/// a local buffer is private to its block, so always; a kernel buffer (a
/// root refinement) as the kernel's interface says, where an `out` buffer
/// may also be read back (the kernel then reads values it wrote, not an
/// input); any other view as its direction says.
fn permits(r: &Refinement, in_root: bool, write: bool) -> bool {
    match (&r.from, in_root, write) {
        (None, false, _) => true,
        (_, _, true) => writes(r.dir),
        (None, true, false) => reads(r.dir) || r.dir == RefDir::Out,
        (Some(_), _, false) => reads(r.dir),
    }
}

fn check_block(
    b: &Block,
    parent: Option<&Parent>,
    path: &str,
    depth: usize,
    errs: &mut Vec<String>,
) {
    if depth > MAX_DEPTH {
        errs.push(format!(
            "{path}: blocks nest deeper than {MAX_DEPTH} levels; the verifier stops here"
        ));
        return;
    }
    let dom = check_indices(b, parent, path, errs);
    let offsets = check_refinements(b, parent, path, dom.as_ref(), errs);
    check_statements(b, path, parent.is_none(), errs);
    if let Some(dom) = &dom {
        let written = written_views(b);
        for (r, offs) in b.refs.iter().zip(&offsets) {
            let Some(offs) = offs else { continue };
            if r.agg == Agg::Assign && written.contains(r.into.as_str()) {
                check_assign(path, r, offs, dom, errs);
            }
        }
    }
    let index = ref_index(b);
    let me = Parent {
        block: b,
        index: &index,
        path,
        is_root: parent.is_none(),
        dom: dom.as_ref(),
    };
    let child = |c: &Block| {
        let mut errs = Vec::new();
        check_block(
            c,
            Some(&me),
            &format!("{path}/{}", c.name),
            depth + 1,
            &mut errs,
        );
        errs
    };
    let children = b.stmts.iter().filter_map(|s| match &s.kind {
        StmtKind::Block(c) => Some(&**c),
        _ => None,
    });
    if parent.is_none() {
        // Blocks verify independently given their parent, so the root's
        // children are checked in parallel; their messages keep the
        // children's order.
        let children: Vec<&Block> = children.collect();
        let found: Vec<Vec<String>> = children.par_iter().map(|c| child(c)).collect();
        errs.extend(found.into_iter().flatten());
    } else {
        for c in children {
            errs.extend(child(c));
        }
    }
}

/// A message's subject, `{path}: {what} `{name}``: formatted only when a
/// message needs it, since formatting one for every index and refinement
/// of every block dominated the verifier's time on large kernels.
struct Named<'a> {
    path: &'a str,
    what: &'static str,
    name: &'a str,
}

impl fmt::Display for Named<'_> {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}: {} `{}`", self.path, self.what, self.name)
    }
}

/// A statement as a message's subject, `{path}: statement {k}`, formatted
/// only when needed (see [`Named`]).
struct StmtAt<'a> {
    path: &'a str,
    k: usize,
}

impl fmt::Display for StmtAt<'_> {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}: statement {}", self.path, self.k)
    }
}

/// Checks the indices and constraints; returns the block's domain when they
/// are sound enough to reason about.
fn check_indices(
    b: &Block,
    parent: Option<&Parent>,
    path: &str,
    errs: &mut Vec<String>,
) -> Option<Domain> {
    let mut ok = true;
    let mut dom = Domain {
        names: b.idxs.iter().map(|i| i.name.clone()).collect(),
        lo: Vec::new(),
        hi: Vec::new(),
        passed: Vec::new(),
        constraints: Vec::new(),
        never_runs: false,
        index_ranges: std::sync::OnceLock::new(),
    };
    let mut seen = HashSet::new();
    for ix in &b.idxs {
        let at = Named {
            path,
            what: "index",
            name: &ix.name,
        };
        if !seen.insert(ix.name.as_str()) {
            errs.push(format!("{at} is declared twice"));
            ok = false;
        }
        if ix.range == 0 {
            errs.push(format!("{at} has range 0; ranges must be at least 1"));
            ok = false;
        }
        let (lo, hi) = match (&ix.affine, parent) {
            (None, _) => (0, i128::from(ix.range) - 1),
            (Some(_), None) => {
                errs.push(format!(
                    "{at} is passed from a parent, but the root block has none"
                ));
                ok = false;
                (0, 0)
            }
            (Some(a), Some(p)) => {
                if ix.range != 1 {
                    errs.push(format!(
                        "{at} is passed from the parent, so its range must be 1, not {}",
                        ix.range
                    ));
                    ok = false;
                }
                let pnames: Vec<String> = p.block.idxs.iter().map(|i| i.name.clone()).collect();
                match Lin::compile(a, &pnames) {
                    Err(unknown) => {
                        errs.push(format!(
                            "{at} is passed as `{a}`, which mentions `{}`, not an index of the parent `{}`",
                            unknown.join("`, `"),
                            p.path
                        ));
                        ok = false;
                        (0, 0)
                    }
                    Ok(l) => match p.dom {
                        None => {
                            ok = false;
                            (0, 0)
                        }
                        Some(pd) => match pd.range_of(&l) {
                            Some(r) => r,
                            None => {
                                dom.never_runs = true;
                                (0, 0)
                            }
                        },
                    },
                }
            }
        };
        dom.lo.push(lo);
        dom.hi.push(hi);
        dom.passed.push(ix.affine.is_some());
    }
    for (k, c) in b.constraints.iter().enumerate() {
        match Lin::compile(c, &dom.names) {
            Ok(l) => dom.constraints.push(l),
            Err(unknown) => {
                errs.push(format!(
                    "{path}: constraint {k} `{c} >= 0` mentions `{}`, not an index of this block (pass parent indices explicitly)",
                    unknown.join("`, `")
                ));
                ok = false;
            }
        }
    }
    ok.then_some(dom)
}

/// Checks the refinements; returns, per refinement, its access compiled
/// over the block's domain when it is a well-formed view of a buffer
/// shared beyond the block (a view of a parent refinement or a root
/// buffer), for the assignment check.
fn check_refinements(
    b: &Block,
    parent: Option<&Parent>,
    path: &str,
    dom: Option<&Domain>,
    errs: &mut Vec<String>,
) -> Vec<Option<Vec<Lin>>> {
    let names: Vec<String> = b.idxs.iter().map(|i| i.name.clone()).collect();
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for r in &b.refs {
        let at = Named {
            path,
            what: "refinement",
            name: &r.into,
        };
        if !seen.insert(r.into.as_str()) {
            errs.push(format!("{at} is declared twice"));
        }
        let Some(from) = &r.from else {
            // The VM and the C backend allocate a declared buffer as its
            // elements in row-major order; other strides would address
            // memory outside the allocation.
            let sizes: Vec<u64> = r.shape.iter().map(|d| d.size).collect();
            match crate::row_major(&sizes, r.dtype) {
                None => errs.push(format!(
                    "{at} declares a buffer whose strides or size in bytes leave int64"
                )),
                Some(dims) if dims != r.shape => {
                    let strides: Vec<String> =
                        r.shape.iter().map(|d| d.stride.to_string()).collect();
                    errs.push(format!(
                        "{at} declares a buffer, so its strides must be row-major for its sizes, not ({})",
                        strides.join(", ")
                    ));
                }
                Some(_) => {}
            }
            if !r.access.is_empty() {
                let what = if parent.is_none() {
                    "a kernel buffer"
                } else {
                    "a local buffer"
                };
                errs.push(format!(
                    "{at} is {what} (no `from`), so its access must be empty, not {} forms",
                    r.access.len()
                ));
                out.push(None);
            } else if parent.is_none() {
                let n = dom.map_or(0, |d| d.names.len());
                out.push(Some(r.shape.iter().map(|_| Lin::zero(n)).collect()));
            } else {
                out.push(None);
            }
            continue;
        };
        let Some(p) = parent else {
            errs.push(format!(
                "{at} refines `{from}`, but the root block has no parent: its refinements are the kernel's buffers (`from` must be none)"
            ));
            out.push(None);
            continue;
        };
        let Some(pr) = p.index.get(from.as_str()).map(|&k| &p.block.refs[k]) else {
            errs.push(format!(
                "{at} refines `{from}`, which is not a refinement of the parent `{}`",
                p.path
            ));
            out.push(None);
            continue;
        };
        let mut ok = true;
        let rank = pr.shape.len();
        if r.access.len() != rank {
            errs.push(format!(
                "{at} has {} access forms, but `{from}` has rank {rank}",
                r.access.len()
            ));
            ok = false;
        }
        if r.shape.len() != rank {
            errs.push(format!(
                "{at} has {} dimensions, but `{from}` has rank {rank}",
                r.shape.len()
            ));
            ok = false;
        }
        if r.dtype != pr.dtype {
            errs.push(format!(
                "{at} has type {}, but `{from}` has type {}",
                r.dtype.name(),
                pr.dtype.name()
            ));
        }
        for (d, (rd, pd)) in r.shape.iter().zip(&pr.shape).enumerate() {
            if rd.stride != pd.stride {
                errs.push(format!(
                    "{at} dimension {d} has stride {}, but `{from}` has stride {}: a view keeps the strides of the view it refines",
                    rd.stride, pd.stride
                ));
            }
        }
        for (write, what) in [(false, "reads"), (true, "writes")] {
            let needs = if write { writes(r.dir) } else { reads(r.dir) };
            if needs && !permits(pr, p.is_root, write) {
                errs.push(format!(
                    "{at} is {} and so {what} `{from}`, but `{from}` in the parent `{}` is {}",
                    dir_name(r.dir),
                    p.path,
                    dir_name(pr.dir)
                ));
            }
        }
        let mut lins = Vec::new();
        for (d, a) in r.access.iter().enumerate() {
            match Lin::compile(a, &names) {
                Ok(l) => lins.push(l),
                Err(unknown) => {
                    errs.push(format!(
                        "{at} dimension {d}: access `{a}` mentions `{}`, not an index of this block (pass parent indices explicitly)",
                        unknown.join("`, `")
                    ));
                    ok = false;
                }
            }
        }
        match (ok, dom) {
            (true, Some(dom)) => {
                check_bounds(&at, r, pr, &lins, dom, errs);
                out.push(Some(lins));
            }
            _ => out.push(None),
        }
    }
    out
}

/// Checks that the view lies inside the refined view at every point that
/// runs.
fn check_bounds(
    at: &dyn fmt::Display,
    r: &Refinement,
    pr: &Refinement,
    offs: &[Lin],
    dom: &Domain,
    errs: &mut Vec<String>,
) {
    if dom.never_runs {
        return;
    }
    let fits = |d: usize, lo: i128, hi: i128| {
        lo >= 0 && hi.saturating_add(i128::from(r.shape[d].size)) <= i128::from(pr.shape[d].size)
    };
    let limits = |d: usize| {
        format!(
            "a view of size {} inside `{}` of size {} needs offsets in [0, {}]",
            r.shape[d].size,
            pr.into,
            pr.shape[d].size,
            i128::from(pr.shape[d].size) - i128::from(r.shape[d].size)
        )
    };
    // A dimension is fine when the box keeps it in bounds, or when the
    // constraints imply both `offset >= 0` and `offset <= room`.
    let proved = |d: usize| {
        let (lo, hi) = offs[d].bounds(dom);
        if fits(d, lo, hi) {
            return true;
        }
        let room = i128::from(pr.shape[d].size) - i128::from(r.shape[d].size);
        let below = Lin {
            constant: room - offs[d].constant,
            coefs: offs[d].coefs.iter().map(|c| -c).collect(),
        };
        !dom.constraints.is_empty()
            && (lo >= 0 || dom.implies(&offs[d]))
            && (hi <= room || dom.implies(&below))
    };
    let bad: Vec<usize> = (0..offs.len()).filter(|&d| !proved(d)).collect();
    if bad.is_empty() {
        return;
    }
    if dom.constraints.is_empty() {
        for d in bad {
            let (lo, hi) = offs[d].bounds(dom);
            errs.push(format!(
                "{at} dimension {d} is out of bounds: offset `{}` ranges over [{lo}, {hi}], but {}",
                r.access[d],
                limits(d)
            ));
        }
        return;
    }
    if dom.size() > MAX_POINTS {
        for d in bad {
            errs.push(format!(
                "{at} dimension {d}: cannot prove in bounds: offset `{}` leaves [0, {}] on the index box, and the constraints cut a box of {} points, more than the 2^20 the verifier enumerates",
                r.access[d],
                i128::from(pr.shape[d].size) - i128::from(r.shape[d].size),
                dom.size()
            ));
        }
        return;
    }
    // The first offending point of each dimension.
    let mut found: Vec<Option<(Vec<i128>, i128)>> = vec![None; bad.len()];
    dom.for_each(&mut |p| {
        for (k, &d) in bad.iter().enumerate() {
            let v = offs[d].eval(p);
            if found[k].is_none() && !fits(d, v, v) {
                found[k] = Some((p.to_vec(), v));
            }
        }
        found.iter().any(Option::is_none)
    });
    for (k, &d) in bad.iter().enumerate() {
        if let Some((p, v)) = &found[k] {
            errs.push(format!(
                "{at} dimension {d} is out of bounds: at {} (which satisfies the constraints) offset `{}` is {v}, but {}",
                dom.show(p),
                r.access[d],
                limits(d)
            ));
        }
    }
}

/// The views of `b` that a statement of `b` stores into or a child refines
/// for writing.
fn written_views(b: &Block) -> HashSet<&str> {
    let mut out = HashSet::new();
    for s in &b.stmts {
        match &s.kind {
            StmtKind::Store { into, .. } => {
                out.insert(into.as_str());
            }
            StmtKind::Block(c) => out.extend(child_writes(c)),
            _ => {}
        }
    }
    out
}

/// The views of its parent that `c` refines for writing.
fn child_writes(c: &Block) -> impl Iterator<Item = &str> {
    c.refs
        .iter()
        .filter(|r| writes(r.dir))
        .filter_map(|r| r.from.as_deref())
}

/// `b`'s refinements by name (the first of a name declared twice, which
/// the verifier reports).
fn ref_index(b: &Block) -> HashMap<&str, usize> {
    let mut index = HashMap::with_capacity(b.refs.len());
    for (k, r) in b.refs.iter().enumerate() {
        index.entry(r.into.as_str()).or_insert(k);
    }
    index
}

/// Checks that the views of an `Assign` refinement at distinct points of
/// one execution of the block (passed indices fixed) are disjoint.
fn check_assign(
    at_block: &str,
    r: &Refinement,
    offs: &[Lin],
    dom: &Domain,
    errs: &mut Vec<String>,
) {
    if dom.never_runs || disjoint_by_intervals(r, offs, dom) {
        return;
    }
    let at = format!("{at_block}: refinement `{}`", r.into);
    if dom.size() > MAX_POINTS {
        errs.push(format!(
            "{at} has aggregation assign, and the verifier cannot prove that no element is written by two points: the box has {} points, more than the 2^20 it enumerates",
            dom.size()
        ));
        return;
    }
    // Views of one execution: the passed indices' values, the offsets, the
    // point.
    let mut views: Vec<(Vec<i128>, Vec<i128>, Vec<i128>)> = Vec::new();
    dom.for_each(&mut |p| {
        let fixed = p
            .iter()
            .zip(&dom.passed)
            .filter(|(_, &f)| f)
            .map(|(v, _)| *v)
            .collect();
        views.push((fixed, offs.iter().map(|l| l.eval(p)).collect(), p.to_vec()));
        true
    });
    let first = |o: &[i128]| o.first().copied().unwrap_or(0);
    let size = |d: usize| i128::from(r.shape[d].size);
    let size0 = if r.shape.is_empty() { 1 } else { size(0) };
    views.sort_by(|a, b| (&a.0, first(&a.1)).cmp(&(&b.0, first(&b.1))));
    let mut pairs = 0u64;
    for (i, (fixed, o, p)) in views.iter().enumerate() {
        for (fixed2, o2, p2) in &views[i + 1..] {
            if fixed2 != fixed || first(o2) - first(o) >= size0 {
                break;
            }
            pairs += 1;
            if pairs > MAX_PAIRS {
                errs.push(format!(
                    "{at} has aggregation assign, and the verifier cannot prove that no element is written by two points: too many overlapping candidates"
                ));
                return;
            }
            if (0..o.len()).all(|d| (o[d] - o2[d]).abs() < size(d)) {
                errs.push(format!(
                    "{at} has aggregation assign but is written twice: the views at {} (offsets {o:?}) and at {} (offsets {o2:?}) overlap",
                    dom.show(p),
                    dom.show(p2)
                ));
                return;
            }
        }
    }
}

/// A sufficient condition for disjoint views: every free index that varies
/// appears in exactly one dimension, and within a dimension the indices,
/// ordered by the size of their coefficients, each step by at least the
/// view's size plus the whole span of the smaller terms (with size-1 views
/// and coefficients ±1 of one index per dimension, this is injectivity).
/// Two distinct points then differ in some index; in that index's
/// dimension, the largest differing term moves the offset further than the
/// smaller terms can bring it back, by at least the view's size.
fn disjoint_by_intervals(r: &Refinement, offs: &[Lin], dom: &Domain) -> bool {
    let mut terms: Vec<Vec<(i128, i128)>> = vec![Vec::new(); offs.len()];
    for v in 0..dom.names.len() {
        if dom.passed[v] || dom.hi[v] == dom.lo[v] {
            continue;
        }
        let dims: Vec<usize> = (0..offs.len()).filter(|&d| offs[d].coefs[v] != 0).collect();
        let [d] = dims[..] else { return false };
        terms[d].push((offs[d].coefs[v].saturating_abs(), dom.hi[v] - dom.lo[v]));
    }
    terms.iter_mut().enumerate().all(|(d, ts)| {
        ts.sort();
        let mut span = 0i128;
        ts.iter().all(|&(c, steps)| {
            let ok = c >= span.saturating_add(i128::from(r.shape[d].size));
            span = span.saturating_add(c.saturating_mul(steps));
            ok
        })
    })
}

/// Checks one statement list: scalar definitions, the views statements
/// name, and intrinsic arities.
fn check_statements(b: &Block, path: &str, in_root: bool, errs: &mut Vec<String>) {
    let mut defined: HashSet<&str> = HashSet::new();
    for (k, s) in b.stmts.iter().enumerate() {
        let at = StmtAt { path, k };
        let use_scalar = |name: &str, errs: &mut Vec<String>, defined: &HashSet<&str>| {
            if !defined.contains(name) {
                errs.push(format!(
                    "{at} uses scalar `${name}` before it is defined in this statement list"
                ));
            }
        };
        let view = |name: &str, errs: &mut Vec<String>| -> Option<&Refinement> {
            let r = b.refinement(name);
            if r.is_none() {
                errs.push(format!(
                    "{at} names `{name}`, which is not a refinement of this block"
                ));
            }
            r
        };
        let mut def: Option<&str> = None;
        match &s.kind {
            StmtKind::Load { from, into } => {
                if let Some(r) = view(from, errs) {
                    check_unit(&at, "loads from", r, errs);
                    check_dir(&at, r, in_root, "loads from", false, errs);
                }
                def = Some(into);
            }
            StmtKind::Store { from, into } => {
                use_scalar(from, errs, &defined);
                if let Some(r) = view(into, errs) {
                    check_unit(&at, "stores into", r, errs);
                    check_dir(&at, r, in_root, "stores into", true, errs);
                }
            }
            StmtKind::LoadIndex { from, into } => {
                let names: Vec<String> = b.idxs.iter().map(|i| i.name.clone()).collect();
                if let Err(unknown) = Lin::compile(from, &names) {
                    errs.push(format!(
                        "{at} reads index form `{from}`, which mentions `{}`, not an index of this block",
                        unknown.join("`, `")
                    ));
                }
                def = Some(into);
            }
            StmtKind::Constant { into, value, dtype } => {
                if !value_fits(*value, *dtype) {
                    errs.push(format!(
                        "{at} defines `${into}` as {value:?}, which does not suit type {}",
                        dtype.name()
                    ));
                }
                def = Some(into);
            }
            StmtKind::Intrinsic {
                op, inputs, into, ..
            } => {
                let (want, name) = match op {
                    Op::Unary(_) => (1, "a unary operation"),
                    Op::Binary(_) => (2, "a binary operation"),
                    Op::Builtin(f) => (f.arity(), f.name()),
                    Op::Select => (3, "select"),
                    Op::Cast => (1, "cast"),
                };
                if inputs.len() != want {
                    errs.push(format!(
                        "{at}: {name} takes {want} inputs, but is given {}",
                        inputs.len()
                    ));
                }
                for i in inputs {
                    use_scalar(i, errs, &defined);
                }
                def = Some(into);
            }
            StmtKind::Gather {
                from,
                indices,
                into,
            } => {
                if let Some(r) = view(from, errs) {
                    if indices.len() != r.shape.len() {
                        errs.push(format!(
                            "{at} gathers from `{from}` of rank {} with {} positions",
                            r.shape.len(),
                            indices.len()
                        ));
                    }
                    check_dir(&at, r, in_root, "gathers from", false, errs);
                }
                for i in indices {
                    use_scalar(i, errs, &defined);
                }
                def = Some(into);
            }
            StmtKind::Block(_) => {}
        }
        if let Some(name) = def {
            if !defined.insert(name) {
                errs.push(format!(
                    "{at} assigns scalar `${name}` again; scalars are assigned once per statement list"
                ));
            }
        }
    }
}

/// Reports a `load` or `store` view that is not a single element.
fn check_unit(at: &dyn fmt::Display, verb: &str, r: &Refinement, errs: &mut Vec<String>) {
    if let Some(d) = r.shape.iter().position(|d| d.size != 1) {
        errs.push(format!(
            "{at} {verb} `{}`, whose dimension {d} has size {}; loads and stores need size 1 in every dimension",
            r.into, r.shape[d].size
        ));
    }
}

/// Reports a statement using a view against its direction.
fn check_dir(
    at: &dyn fmt::Display,
    r: &Refinement,
    in_root: bool,
    verb: &str,
    write: bool,
    errs: &mut Vec<String>,
) {
    if !permits(r, in_root, write) {
        errs.push(format!(
            "{at} {verb} `{}`, whose direction is {}",
            r.into,
            dir_name(r.dir)
        ));
    }
}

/// Whether a literal suits a type: booleans for `bool`, integers for the
/// integer types, floats for the float types.
fn value_fits(v: Value, t: DType) -> bool {
    match v {
        Value::Bool(_) => t == DType::Bool,
        Value::Int(_) => t != DType::Bool && !t.is_float(),
        Value::Float(_) => t.is_float(),
    }
}
