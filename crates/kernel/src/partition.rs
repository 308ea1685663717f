//! The verifier's proof that an index tagged `parallel` partitions the
//! writes of its block: at no two points of one execution of the block
//! with different values of the index is the same element of any buffer
//! written, by the block's own stores or by any block nested in it, nor
//! written at one and read (loaded, or possibly gathered) at the other.
//! The runtime runs a `#parallel` step's partitions of that index
//! concurrently on several threads, so this is what makes that free of
//! data races.
//!
//! Requires: nothing (a malformed kernel is the rest of the verifier's
//! concern; a form naming an unknown index makes this check skip the
//! block, and the verifier reports the form). Guarantees: an index it
//! accepts partitions the writes; an index it rejects gets a message that
//! either shows two points writing one element or says that it cannot
//! prove the property.
//!
//! How: the block and everything below it are flattened. Every free index
//! on the way from the root becomes a variable over `[0, range)`, a passed
//! index is replaced by its form over its parent's variables, and every
//! store becomes a write of one element at a flat offset (the sum of the
//! accesses times the strides of every view on the way from the buffer
//! down, an affine form of the variables) under the constraints of the
//! blocks around it; a load is a read of one element the same way, and a
//! gather a read of any element of its view (one more variable per
//! dimension of the view, over its size). Variables of blocks above the checked one are shared
//! by the two points compared (they are fixed during one execution);
//! those of the block and below are not. A buffer is a kernel buffer or a
//! local buffer declared above the block; a local buffer declared in the
//! block or below is private to one point of its block, so its writes
//! never race. Then, per written buffer (with the reads of it), three
//! proofs in turn, each exact for what it accepts:
//! - stride dominance: every access has the same non-zero coefficient `c`
//!   of the parallel index, and the rest of every offset (shared terms
//!   dropped when all accesses have them alike) lies in one interval of
//!   fewer than `|c|` values over the box, so an offset determines the
//!   index (`O[i, j]` with `i` parallel, `O[4*io + ii]` with `io`);
//! - Fourier–Motzkin ([`crate::fm`]): for every write and every access, no
//!   integer point of the two copies' boxes and constraints has equal
//!   offsets and different values of the index (each order tried);
//! - enumeration: when the shared box times the points of every access's
//!   own box is at most 2^20, the accessed elements are listed and sorted,
//!   which finds two values of the index reaching one element, at least
//!   one of them writing it, if there are.
//!
//! Otherwise the verifier reports that it cannot prove the partition.

use std::collections::{BTreeMap, HashMap};

use rayon::prelude::*;

use crate::{fm, Affine, Block, StmtKind};

/// The most (shared point, written element) pairs enumerated for one index.
const MAX_POINTS: u128 = 1 << 20;

/// An affine form over the flattened variables (sparse: variable number
/// to non-zero coefficient), in 128 bits with saturation.
#[derive(Clone, Debug, Default, PartialEq)]
struct Form {
    constant: i128,
    terms: BTreeMap<usize, i128>,
}

impl Form {
    fn var(v: usize) -> Form {
        Form {
            constant: 0,
            terms: BTreeMap::from([(v, 1)]),
        }
    }

    fn add_scaled(&mut self, other: &Form, k: i128) {
        self.constant = self
            .constant
            .saturating_add(other.constant.saturating_mul(k));
        for (v, c) in &other.terms {
            let e = self.terms.entry(*v).or_insert(0);
            *e = e.saturating_add(c.saturating_mul(k));
            if *e == 0 {
                self.terms.remove(v);
            }
        }
    }

    fn coef(&self, v: usize) -> i128 {
        self.terms.get(&v).copied().unwrap_or(0)
    }

    /// `a` with every index replaced by its form in `env`; `None` when `a`
    /// names an index that is not there.
    fn of(a: &Affine, env: &HashMap<String, Form>) -> Option<Form> {
        let mut f = Form {
            constant: i128::from(a.constant),
            terms: BTreeMap::new(),
        };
        for (n, c) in &a.terms {
            f.add_scaled(env.get(n)?, i128::from(*c));
        }
        Some(f)
    }

    fn eval(&self, point: &[i128]) -> i128 {
        self.terms.iter().fold(self.constant, |acc, (v, c)| {
            acc.saturating_add(c.saturating_mul(point[*v]))
        })
    }

    /// The least and greatest values over the variables' box.
    fn bounds(&self, vars: &Vars) -> (i128, i128) {
        let (mut lo, mut hi) = (self.constant, self.constant);
        for (v, c) in &self.terms {
            let (a, b) = (0, c.saturating_mul(vars.hi[*v]));
            lo = lo.saturating_add(a.min(b));
            hi = hi.saturating_add(a.max(b));
        }
        (lo, hi)
    }
}

/// The flattened variables: each a free index over `[0, hi]`.
#[derive(Clone, Default)]
struct Vars {
    names: Vec<String>,
    hi: Vec<i128>,
}

impl Vars {
    /// Runs `f`, then forgets the variables it made: a block's variables
    /// are named only by its own and its descendants' forms, and keeping a
    /// finished sibling's made every later proof (whose search spans all
    /// variables) grow with the number of steps before it.
    fn scoped<R>(&mut self, f: impl FnOnce(&mut Vars) -> R) -> R {
        let n = self.names.len();
        let result = f(self);
        self.names.truncate(n);
        self.hi.truncate(n);
        result
    }
}

/// What a refinement is, seen from the block being flattened.
#[derive(Clone)]
enum View {
    /// A view of a shared buffer (named by `key`) whose first element is
    /// at `origin` in the buffer's storage.
    Shared { key: String, origin: Form },
    /// A local buffer of the checked block or below: one per point.
    Private,
}

/// A block's flattened context.
struct Ctx {
    path: String,
    env: HashMap<String, Form>,
    views: HashMap<String, View>,
    constraints: Vec<Form>,
}

/// One store, load or gather, flattened.
struct Access {
    write: bool,
    key: String,
    offset: Form,
    constraints: Vec<Form>,
    at: String,
}

/// Builds the context of `b` under `parent` (the root when `None`),
/// creating a variable for each of its free indices. Local buffers count
/// as private when `private_locals`, else as shared buffers named by their
/// path. `None` when a form names an unknown index or view.
fn enter(
    b: &Block,
    parent: Option<&Ctx>,
    path: &str,
    vars: &mut Vars,
    private_locals: bool,
) -> Option<Ctx> {
    let mut env = HashMap::new();
    for ix in &b.idxs {
        let f = match (&ix.affine, parent) {
            (None, _) => {
                vars.names.push(format!("{path}:{}", ix.name));
                vars.hi.push(i128::from(ix.range).saturating_sub(1));
                Form::var(vars.names.len() - 1)
            }
            (Some(a), Some(p)) => Form::of(a, &p.env)?,
            (Some(_), None) => return None,
        };
        env.insert(ix.name.clone(), f);
    }
    let mut constraints = parent.map(|p| p.constraints.clone()).unwrap_or_default();
    for c in &b.constraints {
        constraints.push(Form::of(c, &env)?);
    }
    let mut views = HashMap::new();
    for r in &b.refs {
        let v = match (&r.from, parent) {
            (None, None) => View::Shared {
                key: r.into.clone(),
                origin: Form::default(),
            },
            (None, Some(_)) if private_locals => View::Private,
            (None, Some(_)) => View::Shared {
                key: format!("{path}/{}", r.into),
                origin: Form::default(),
            },
            (Some(_), None) => return None,
            (Some(from), Some(p)) => match p.views.get(from)? {
                View::Private => View::Private,
                View::Shared { key, origin } => {
                    let mut origin = origin.clone();
                    for (a, d) in r.access.iter().zip(&r.shape) {
                        origin.add_scaled(&Form::of(a, &env)?, i128::from(d.stride));
                    }
                    View::Shared {
                        key: key.clone(),
                        origin,
                    }
                }
            },
        };
        views.insert(r.into.clone(), v);
    }
    Some(Ctx {
        path: path.to_string(),
        env,
        views,
        constraints,
    })
}

/// Collects the stores, loads and gathers of `b` (whose context is `ctx`)
/// and of every block below it.
fn collect(b: &Block, ctx: &Ctx, vars: &mut Vars, out: &mut Vec<Access>) -> Option<()> {
    for (k, s) in b.stmts.iter().enumerate() {
        let (view, write, gather) = match &s.kind {
            StmtKind::Store { into, .. } => (into, true, false),
            StmtKind::Load { from, .. } => (from, false, false),
            StmtKind::Gather { from, .. } => (from, false, true),
            StmtKind::Block(c) => {
                let path = format!("{}/{}", ctx.path, c.name);
                let cc = enter(c, Some(ctx), &path, vars, true)?;
                collect(c, &cc, vars, out)?;
                continue;
            }
            _ => continue,
        };
        if let View::Shared { key, origin } = ctx.views.get(view)? {
            let mut offset = origin.clone();
            if gather {
                // Any element of the view: a variable per dimension.
                for (d, dim) in b.refinement(view)?.shape.iter().enumerate() {
                    vars.names.push(format!("{}:{view}[{d}]", ctx.path));
                    vars.hi.push(i128::from(dim.size).saturating_sub(1));
                    offset.add_scaled(&Form::var(vars.names.len() - 1), i128::from(dim.stride));
                }
            }
            out.push(Access {
                write,
                key: key.clone(),
                offset,
                constraints: ctx.constraints.clone(),
                at: format!("{}: statement {k}", ctx.path),
            });
        }
    }
    Some(())
}

/// Checks every free index tagged `parallel` of every block of the kernel
/// rooted at `root`; pushes one message per index that fails.
pub(crate) fn check_kernel(root: &Block, errs: &mut Vec<String>) {
    let mut vars = Vars::default();
    walk(root, None, &root.name, &mut vars, 1, errs);
}

/// Checks every free index tagged `parallel` in `c` and below, `c` being a
/// step of `root` (whose statements may be taken out) at `path`.
pub(crate) fn check_step(root: &Block, c: &Block, path: &str, errs: &mut Vec<String>) {
    if !has_parallel(c) {
        return;
    }
    let mut vars = Vars::default();
    if let Some(ctx) = enter(root, None, &root.name, &mut vars, false) {
        walk(c, Some(&ctx), path, &mut vars, 2, errs);
    }
}

/// Whether an index of `b` or of a block below it is tagged `parallel`.
fn has_parallel(b: &Block) -> bool {
    b.idxs.iter().any(|ix| ix.tags.contains("parallel"))
        || b.stmts.iter().any(|s| match &s.kind {
            StmtKind::Block(c) => has_parallel(c),
            _ => false,
        })
}

fn walk(
    b: &Block,
    parent: Option<&Ctx>,
    path: &str,
    vars: &mut Vars,
    depth: usize,
    errs: &mut Vec<String>,
) {
    // The verifier reports deeper nesting itself.
    if depth > 64 {
        return;
    }
    for (k, ix) in b.idxs.iter().enumerate() {
        if ix.affine.is_none() && ix.range > 1 && ix.tags.contains("parallel") {
            if let Err(e) = vars.scoped(|vars| prove(b, k, parent, path, vars)) {
                errs.push(e);
            }
        }
    }
    let Some(ctx) = enter(b, parent, path, vars, false) else {
        return;
    };
    // Flattening a subtree with nothing to prove would cost as much as the
    // proof's setup, for every step of the kernel.
    let children: Vec<&Block> = b
        .stmts
        .iter()
        .filter_map(|s| match &s.kind {
            StmtKind::Block(c) if has_parallel(c) => Some(&**c),
            _ => None,
        })
        .collect();
    let child = |c: &Block, vars: &mut Vars| {
        let mut errs = Vec::new();
        vars.scoped(|vars| {
            walk(
                c,
                Some(&ctx),
                &format!("{path}/{}", c.name),
                vars,
                depth + 1,
                &mut errs,
            )
        });
        errs
    };
    if parent.is_none() {
        // The root's children are proved in parallel, each from a copy of
        // the root's variables; their messages keep the children's order.
        let found: Vec<Vec<String>> = children
            .par_iter()
            .map(|c| child(c, &mut vars.clone()))
            .collect();
        errs.extend(found.into_iter().flatten());
    } else {
        for c in children {
            errs.extend(child(c, vars));
        }
    }
}

/// Proofs for the steps of one root, whose flattened context is built once
/// (it holds every kernel buffer, so building it per step made proving
/// every step quadratic).
pub(crate) struct StepProver {
    vars: Vars,
    /// `None` when a form of the root names an unknown index or view.
    ctx: Option<Ctx>,
}

impl StepProver {
    pub(crate) fn new(root: &Block) -> StepProver {
        let mut vars = Vars::default();
        let ctx = enter(root, None, &root.name, &mut vars, false);
        StepProver { vars, ctx }
    }

    /// Whether the free index `k` of `b` (a step of the root, at `path`)
    /// partitions the writes of one execution of `b`; `Ok` also when a
    /// malformed form stops the flattening (the verifier reports it).
    pub(crate) fn prove(&self, b: &Block, k: usize, path: &str) -> Result<(), String> {
        let Some(ctx) = &self.ctx else {
            return Ok(());
        };
        // The step's own variables are not the root's; the root's are few
        // (its indices), so each proof starts from a copy of them and steps
        // can be proved in parallel.
        prove(b, k, Some(ctx), path, &mut self.vars.clone())
    }
}

fn prove(
    b: &Block,
    k: usize,
    parent: Option<&Ctx>,
    path: &str,
    vars: &mut Vars,
) -> Result<(), String> {
    let first_own = vars.names.len();
    let Some(ctx) = enter(b, parent, path, vars, true) else {
        return Ok(());
    };
    let name = &b.idxs[k].name;
    let Some(p) = ctx
        .env
        .get(name)
        .and_then(|f| f.terms.keys().next().copied())
    else {
        return Ok(());
    };
    let mut accesses = Vec::new();
    if collect(b, &ctx, vars, &mut accesses).is_none() {
        return Ok(());
    }
    let mut by_key: BTreeMap<&str, Vec<&Access>> = BTreeMap::new();
    for a in &accesses {
        by_key.entry(&a.key).or_default().push(a);
    }
    for (key, all) in by_key {
        if !all.iter().any(|a| a.write) {
            continue;
        }
        if dominates(&all, p, first_own, vars) || by_elimination(&all, p, first_own, vars) {
            continue;
        }
        let verb = |a: &Access| if a.write { "writes" } else { "reads" };
        return match enumerate(&all, p, first_own, vars) {
            Some(Ok(())) => continue,
            Some(Err((a1, pt1, a2, pt2, off))) => Err(format!(
                "{path}: index `{name}` is tagged parallel, but two of its values reach one element of `{key}`: {} {} element {off} at {}, and {} {} it at {}",
                a1.at,
                verb(a1),
                show(vars, &pt1),
                a2.at,
                verb(a2),
                show(vars, &pt2)
            )),
            None => Err(format!(
                "{path}: cannot prove that index `{name}`, tagged parallel, partitions the accesses of `{key}`: the offsets' other terms can match a step of `{name}`, Fourier–Motzkin finds no proof, and there are more than the 2^20 points the verifier enumerates"
            )),
        };
    }
    Ok(())
}

/// The variables' values at a point, e.g. `main/step:i = 0, main/step:j = 1`.
fn show(vars: &Vars, point: &[(usize, i128)]) -> String {
    let parts: Vec<String> = point
        .iter()
        .map(|(v, x)| format!("{} = {x}", vars.names[*v]))
        .collect();
    if parts.is_empty() {
        "the only point".to_string()
    } else {
        parts.join(", ")
    }
}

/// Stride dominance (see the module doc).
fn dominates(ws: &[&Access], p: usize, first_own: usize, vars: &Vars) -> bool {
    let c = ws[0].offset.coef(p);
    if c == 0 || ws.iter().any(|w| w.offset.coef(p) != c) {
        return false;
    }
    let shared = |f: &Form| -> Vec<(usize, i128)> {
        f.terms
            .iter()
            .filter(|(v, _)| **v < first_own)
            .map(|(v, c)| (*v, *c))
            .collect()
    };
    let alike = ws
        .iter()
        .all(|w| shared(&w.offset) == shared(&ws[0].offset));
    let (mut lo, mut hi) = (i128::MAX, i128::MIN);
    for w in ws {
        let mut rest = w.offset.clone();
        rest.terms.remove(&p);
        if alike {
            rest.terms.retain(|v, _| *v >= first_own);
        }
        let (a, b) = rest.bounds(vars);
        lo = lo.min(a);
        hi = hi.max(b);
    }
    hi.saturating_sub(lo) < c.saturating_abs()
}

/// Fourier–Motzkin over two copies of the variables (see the module doc):
/// a write against every access (another write in both orders, since the
/// pairs are ordered; a read below and above).
fn by_elimination(all: &[&Access], p: usize, first_own: usize, vars: &Vars) -> bool {
    all.iter().filter(|w| w.write).all(|w| {
        all.iter().all(|a| {
            pair_infeasible(w, a, p, 1, first_own, vars)
                && (a.write || pair_infeasible(w, a, p, -1, first_own, vars))
        })
    })
}

/// Whether no integer point has `w1` (first copy) and `w2` (second copy)
/// reach one element with `sign * (first index - second index) >= 1`.
fn pair_infeasible(
    w1: &Access,
    w2: &Access,
    p: usize,
    sign: i128,
    first_own: usize,
    vars: &Vars,
) -> bool {
    // Columns: the variables either write uses; an own variable gets a
    // column per copy, a shared one a single column.
    let mut cols: BTreeMap<(usize, bool), usize> = BTreeMap::new();
    let mut col = |v: usize, second: bool| {
        let key = (v, second && v >= first_own);
        let n = cols.len();
        *cols.entry(key).or_insert(n)
    };
    let mut sparse: Vec<(i128, Vec<(usize, i128)>)> = Vec::new();
    let mut add = |f: &Form, second: bool, k: i128, col: &mut dyn FnMut(usize, bool) -> usize| {
        let terms = f
            .terms
            .iter()
            .map(|(v, c)| (col(*v, second), c.saturating_mul(k)))
            .collect();
        sparse.push((f.constant.saturating_mul(k), terms));
    };
    for c in &w1.constraints {
        add(c, false, 1, &mut col);
    }
    for c in &w2.constraints {
        add(c, true, 1, &mut col);
    }
    // Equal offsets: `w1 - w2 >= 0` and `w2 - w1 >= 0`.
    let mut diff = w1.offset.clone();
    let mut second_offset = Form {
        constant: w2.offset.constant,
        terms: BTreeMap::new(),
    };
    for (v, c) in &w2.offset.terms {
        // Own variables of the second copy are renumbered past every
        // variable so that the two copies' forms can be subtracted.
        let v2 = if *v >= first_own {
            v + vars.names.len()
        } else {
            *v
        };
        second_offset.terms.insert(v2, *c);
    }
    diff.add_scaled(&second_offset, -1);
    let unshift = |v: usize| {
        if v >= vars.names.len() {
            (v - vars.names.len(), true)
        } else {
            (v, false)
        }
    };
    for k in [1, -1] {
        let terms = diff
            .terms
            .iter()
            .map(|(v, c)| {
                let (v, second) = unshift(*v);
                (col(v, second), c.saturating_mul(k))
            })
            .collect();
        sparse.push((diff.constant.saturating_mul(k), terms));
    }
    // The copies' indices apart: `sign * (p1 - p2) - 1 >= 0`.
    let order = vec![(col(p, false), sign), (col(p, true), -sign)];
    sparse.push((-1, order));
    // Every used variable within its box.
    let used: Vec<((usize, bool), usize)> = cols.iter().map(|(k, c)| (*k, *c)).collect();
    for ((v, _), c) in &used {
        sparse.push((0, vec![(*c, 1)]));
        sparse.push((vars.hi[*v], vec![(*c, -1)]));
    }
    let n = used.len();
    let rows = sparse
        .into_iter()
        .map(|(constant, terms)| {
            let mut coefs = vec![0i128; n];
            for (c, k) in terms {
                coefs[c] = coefs[c].saturating_add(k);
            }
            fm::Row { constant, coefs }
        })
        .collect();
    fm::infeasible(rows)
}

/// A write and the point (variable, value) where it happens.
type Found<'a> = (
    &'a Access,
    Vec<(usize, i128)>,
    &'a Access,
    Vec<(usize, i128)>,
    i128,
);

/// An element an access reaches: its offset, the parallel index's value,
/// the access (its number) and the point (its own variables' values).
type Reached = (i128, i128, usize, Vec<(usize, i128)>);

/// Enumeration (see the module doc): `None` when there are too many
/// points, else `Ok` or two points of different index values reaching one
/// element, the first of them writing it.
fn enumerate<'a>(
    ws: &[&'a Access],
    p: usize,
    first_own: usize,
    vars: &Vars,
) -> Option<Result<(), Found<'a>>> {
    let used = |w: &Access, own: bool| -> Vec<usize> {
        let mut vs: Vec<usize> = std::iter::once(&w.offset)
            .chain(&w.constraints)
            .flat_map(|f| f.terms.keys().copied())
            .chain((own).then_some(p))
            .filter(|v| (*v >= first_own) == own)
            .collect();
        vs.sort_unstable();
        vs.dedup();
        vs
    };
    let count = |vs: &[usize]| {
        vs.iter().fold(1u128, |a, v| {
            a.saturating_mul(u128::try_from(vars.hi[*v] + 1).unwrap_or(u128::MAX))
        })
    };
    let mut shared: Vec<usize> = ws.iter().flat_map(|w| used(w, false)).collect();
    shared.sort_unstable();
    shared.dedup();
    let own: Vec<Vec<usize>> = ws.iter().map(|w| used(w, true)).collect();
    let per_shared = own.iter().fold(0u128, |a, vs| a.saturating_add(count(vs)));
    if count(&shared).saturating_mul(per_shared) > MAX_POINTS {
        return None;
    }
    let mut point = vec![0i128; vars.names.len()];
    let mut found = None;
    odometer(&shared, vars, &mut point, &mut |point| {
        // (offset, index value, access, own point) of every access here.
        let mut elems: Vec<Reached> = Vec::new();
        for (wi, w) in ws.iter().enumerate() {
            let mut pt = point.to_vec();
            odometer(&own[wi], vars, &mut pt, &mut |q| {
                if w.constraints.iter().all(|c| c.eval(q) >= 0) {
                    let at = own[wi].iter().map(|v| (*v, q[*v])).collect();
                    elems.push((w.offset.eval(q), q[p], wi, at));
                }
                true
            });
        }
        elems.sort_by_key(|e| (e.0, e.1));
        for group in elems.chunk_by(|a, b| a.0 == b.0) {
            let Some(w) = group.iter().find(|e| ws[e.2].write) else {
                continue;
            };
            if let Some(other) = group.iter().find(|e| e.1 != w.1) {
                let shared_at: Vec<(usize, i128)> =
                    shared.iter().map(|v| (*v, point[*v])).collect();
                let with = |at: &[(usize, i128)]| [shared_at.clone(), at.to_vec()].concat();
                found = Some((ws[w.2], with(&w.3), ws[other.2], with(&other.3), w.0));
                return false;
            }
        }
        true
    });
    Some(found.map_or(Ok(()), Err))
}

/// Calls `f` at every point of the box of `vs` (other variables as in
/// `point`), until `f` returns false; returns whether it ran to the end.
fn odometer(
    vs: &[usize],
    vars: &Vars,
    point: &mut [i128],
    f: &mut dyn FnMut(&[i128]) -> bool,
) -> bool {
    for v in vs {
        point[*v] = 0;
    }
    loop {
        if !f(point) {
            return false;
        }
        let mut i = vs.len();
        loop {
            if i == 0 {
                return true;
            }
            i -= 1;
            if point[vs[i]] < vars.hi[vs[i]] {
                point[vs[i]] += 1;
                break;
            }
            point[vs[i]] = 0;
        }
    }
}
