//! Vertical fusion (TensorSSA §4.2.1) on the emitted def: a temporary
//! that a plain `=` statement defines is substituted into the statements
//! of its block that read it, and its statement removed, so an Access or
//! Assign chain and the elementwise operations around it become one
//! statement, and so one kernel.
//!
//! Requires an emitted def (every read in bounds of its tensor, every
//! temporary written by one statement over its whole shape), so
//! substituting a definition never changes which points a reduction
//! skips. A temporary is substituted when every read of it is in a
//! comprehension body of its own block (none in a region, a yield or an
//! output) and either its definition is a view (one read, perhaps
//! converted: substituting it copies nothing, and a matmul reading a
//! transposed operand stays a library matmul) or it is read once, by an
//! elementwise statement (so nothing is computed twice: a costly body is
//! not substituted where more points read it than it has), at whole
//! iterators or where the reads it brings are provably in bounds.
//!
//! Then the reads of Assign selects (an in-place update's result) are
//! inlined one read at a time ([`inline_selects`]): a reader of a chain
//! of slice updates reads through it to the update that wrote its slice,
//! and a temporary nothing reads any more is removed. Every substituted
//! expression is simplified over the reader's box (`crate::simplify`).
//! Guarantees the same results, and a def that passes the IR verifier
//! and that lowering takes wherever it took the unfused one: reduction
//! subscripts stay affine, and every read is in bounds over the box or
//! under branches lowering guards.

use std::collections::{BTreeSet, HashMap, HashSet};

use ir::{walk_stmts, BinOp, Builtin, Comprehension, Def, Expr, Reduction, Stmt, TensorRole, UnOp};

use crate::simplify::{self, box_of, rewrite, simplify};

/// Fuses `def` in place; returns how many statements it removed.
pub fn fuse(def: &mut Def) -> usize {
    let mut written: HashMap<String, usize> = HashMap::new();
    walk_stmts(&def.stmts, &mut |s| {
        for w in s.written() {
            *written.entry(w.to_string()).or_default() += 1;
        }
    });
    let temps: HashSet<String> = def
        .tensors
        .iter()
        .filter(|t| t.role == TensorRole::Temp && written.get(&t.name) == Some(&1))
        .map(|t| t.name.clone())
        .collect();
    let mut removed = Vec::new();
    let mut stmts = std::mem::take(&mut def.stmts);
    let cx = Cx {
        def: def.clone(),
        temps,
        shapes: def
            .tensors
            .iter()
            .filter_map(|t| {
                let dims: Option<Vec<i64>> = t.shape.iter().map(|d| d.as_const()).collect();
                Some((t.name.clone(), dims?))
            })
            .collect(),
    };
    // Inlining selects makes readers of definitions that the round before
    // could not see through them (an update's value read through the
    // select that wrote it): fuse again until nothing changes.
    loop {
        let before = removed.len();
        fuse_block(&mut stmts, &[], &cx, &mut removed);
        if removed.len() == before {
            break;
        }
    }
    def.stmts = stmts;
    let removed: HashSet<String> = removed.into_iter().collect();
    def.tensors.retain(|t| !removed.contains(&t.name));
    removed.len()
}

/// What the rules need to know of the def being fused.
struct Cx {
    /// The def as it was before fusion (its declarations and parameters:
    /// the interval analysis's types).
    def: Def,
    /// The temporaries one statement writes.
    temps: HashSet<String>,
    /// Every tensor's constant shape.
    shapes: HashMap<String, Vec<i64>>,
}

/// Fuses one block (and the blocks of its regions); `kept` are the names
/// the block's end needs (its yields).
fn fuse_block(stmts: &mut Vec<Stmt>, kept: &[String], cx: &Cx, removed: &mut Vec<String>) {
    for s in stmts.iter_mut() {
        match s {
            Stmt::Loop(l) => fuse_block(&mut l.body, &l.yields.clone(), cx, removed),
            Stmt::If(b) => {
                fuse_block(&mut b.then_body, &b.then_yields.clone(), cx, removed);
                fuse_block(&mut b.else_body, &b.else_yields.clone(), cx, removed);
            }
            Stmt::Comp(_) | Stmt::Call(_) => {}
        }
    }
    // Which statements read each tensor, kept current as definitions are
    // substituted, so each candidate looks at its readers only.
    let mut slots: Vec<Option<Stmt>> = std::mem::take(stmts).into_iter().map(Some).collect();
    let mut readers: HashMap<String, BTreeSet<usize>> = HashMap::new();
    for (j, s) in slots.iter().enumerate() {
        for t in s.iter().flat_map(Stmt::reads) {
            readers.entry(t.to_string()).or_default().insert(j);
        }
    }
    for k in 0..slots.len() {
        let Some(Stmt::Comp(c)) = &slots[k] else {
            continue;
        };
        let later: Vec<usize> = readers
            .get(&c.tensor)
            .map(|r| r.range(k + 1..).copied().collect())
            .unwrap_or_default();
        let rest: Vec<&Stmt> = later.iter().filter_map(|&j| slots[j].as_ref()).collect();
        let this = slots[k].as_ref().expect("matched");
        if !substitutable(this, &rest, kept, cx) {
            continue;
        }
        let brought: Vec<String> = this.reads().into_iter().map(str::to_string).collect();
        let Some(Stmt::Comp(def)) = slots[k].take() else {
            unreachable!("matched a comprehension")
        };
        for &j in &later {
            if let Some(Stmt::Comp(c)) = &mut slots[j] {
                if !reads_of(&c.body, &def.tensor).is_empty() {
                    let body = std::mem::replace(&mut c.body, Expr::int(0));
                    c.body = simplify(substitute(body, &def), &box_of(c));
                }
            }
            for t in &brought {
                readers.entry(t.to_string()).or_default().insert(j);
            }
        }
        removed.push(def.tensor);
    }
    *stmts = slots.into_iter().flatten().collect();
    inline_selects(stmts, cx);
    remove_dead(stmts, kept, cx, removed);
    for s in stmts.iter_mut() {
        if let Stmt::Comp(c) = s {
            clamp_branch_reads(c, cx);
        }
    }
}

/// Clamps each subscript of an elementwise statement that leaves its
/// tensor somewhere in the box but not where the `?:` branches around it
/// are taken (an update's shifted slice, `p(i - 2)` under `i >= 2`) into
/// the tensor's range: the same value wherever the read is evaluated, and
/// a read lowering proves in bounds everywhere, so it computes the branch
/// inline instead of in a guard block per point.
fn clamp_branch_reads(c: &mut Comprehension, cx: &Cx) {
    // Without a `?:`, every read is evaluated over the whole box, where a
    // subscript that leaves its tensor cannot be clamped.
    if c.op != Reduction::Assign
        || !c.lets.is_empty()
        || c.ranges.len() != c.indices.len()
        || !c.body.any(&|x| matches!(x, Expr::Select(..)))
    {
        return;
    }
    let b = box_of(c);
    let sizes = HashMap::new();
    let range = |s: &Expr, at: &simplify::Ranges| {
        let bounds = ir::Bounds {
            def: &cx.def,
            lets: &[],
            iters: at,
            sizes: &sizes,
        };
        bounds.interval(s).ok()
    };
    let body = std::mem::replace(&mut c.body, Expr::int(0));
    c.body = rewrite(body, &b, &mut |x, at| match x {
        Expr::Read(t, subs) => {
            let dims = cx.shapes.get(&t).cloned().unwrap_or_default();
            let subs = subs
                .into_iter()
                .zip(dims.iter().copied().chain(std::iter::repeat(0)))
                .map(|(s, n)| match (range(&s, &b), range(&s, at)) {
                    (Some((lo, hi)), Some((nlo, nhi)))
                        if (lo < 0 || hi >= n) && nlo >= 0 && nhi < n =>
                    {
                        let s = if lo < 0 {
                            Expr::Call(Builtin::Max, vec![s, Expr::int(0)])
                        } else {
                            s
                        };
                        if hi >= n {
                            Expr::Call(Builtin::Min, vec![s, Expr::int(n - 1)])
                        } else {
                            s
                        }
                    }
                    _ => s,
                })
                .collect();
            Expr::Read(t, subs)
        }
        x => x,
    });
}

/// The largest instance of an Assign's select, and the largest body, that
/// [`inline_selects`] makes: enough for a chain of slice updates read where
/// the box decides most of its conditions, small enough that an undecided
/// chain stays one tensor rather than being recomputed in full.
const INSTANCE_NODES: usize = 64;
const BODY_NODES: usize = 256;

/// Inlines the reads of Assign results (temporaries whose body is a `?:` on
/// a condition of indices alone, the select an in-place update emits) into
/// the elementwise statements that read them, one read at a time: each read
/// becomes the select at its subscripts, simplified over the reader's box,
/// when that instance is small and every read in it is provably in bounds.
/// A reader that reads a chain of updates at a slice the updates do not all
/// touch (YOLO's `p[..., 5:]` after updates to `p[..., :4]`) reads through
/// the chain to the one update that wrote the slice. Readers are visited
/// last first, so a chain whose readers all inline it is never inlined
/// into its own later links.
fn inline_selects(stmts: &mut [Stmt], cx: &Cx) {
    let selects: HashMap<String, Comprehension> = stmts
        .iter()
        .filter_map(|s| match s {
            Stmt::Comp(c) if plain(c) && cx.temps.contains(&c.tensor) && is_update(&c.body) => {
                Some((c.tensor.clone(), c.clone()))
            }
            _ => None,
        })
        .collect();
    if selects.is_empty() {
        return;
    }
    let mut reads: HashMap<String, usize> = selects.keys().map(|t| (t.clone(), 0)).collect();
    walk_stmts(stmts, &mut |s| {
        for t in s.reads() {
            if let Some(n) = reads.get_mut(t) {
                *n += 1;
            }
        }
    });
    for s in stmts.iter_mut().rev() {
        let Stmt::Comp(u) = s else { continue };
        if u.op != Reduction::Assign || !u.lets.is_empty() || u.ranges.len() != u.indices.len() {
            continue;
        }
        let tensor = u.tensor.as_str();
        if !u
            .body
            .any(&|x| matches!(x, Expr::Read(t, _) if t != tensor && selects.contains_key(t)))
        {
            continue;
        }
        let b = box_of(u);
        loop {
            let mut changed = false;
            let body = rewrite(u.body.clone(), &b, &mut |x, at| match x {
                Expr::Read(t, subs) if selects.contains_key(&t) && t != u.tensor => {
                    let d = &selects[&t];
                    let read = Expr::Read(t, subs);
                    let raw = substitute(read.clone(), d);
                    let instance = simplify(raw.clone(), at);
                    // Inlining recomputes the select for every reader: it
                    // must fold, be the select's only read, or be read on
                    // so few points that recomputing costs less than
                    // writing the select's whole tensor.
                    let cheap = nodes(&instance) < nodes(&raw)
                        || reads[&d.tensor] == 1
                        || points(u) * reads[&d.tensor] as i64 <= points(d);
                    if cheap && nodes(&instance) <= INSTANCE_NODES && provable(&instance, u, at, cx)
                    {
                        changed = true;
                        instance
                    } else {
                        read
                    }
                }
                x => x,
            });
            if !changed || nodes(&body) > BODY_NODES {
                break;
            }
            u.body = body;
        }
    }
}

/// Removes the statements of temporaries nothing reads any more.
fn remove_dead(stmts: &mut Vec<Stmt>, kept: &[String], cx: &Cx, removed: &mut Vec<String>) {
    // Walking backwards, the tensors the statements kept after `k` read.
    let mut read_later: HashSet<String> = HashSet::new();
    let mut live = vec![true; stmts.len()];
    for (k, s) in stmts.iter().enumerate().rev() {
        if let Stmt::Comp(c) = s {
            let t = &c.tensor;
            if cx.temps.contains(t) && !kept.contains(t) && !read_later.contains(t) {
                removed.push(t.clone());
                live[k] = false;
                continue;
            }
        }
        read_later.extend(s.reads().into_iter().map(str::to_string));
    }
    let mut live = live.into_iter();
    stmts.retain(|_| live.next().unwrap_or(true));
}

/// Whether `c` is an `=` over its own indices with no lets or existentials.
fn plain(c: &Comprehension) -> bool {
    c.op == Reduction::Assign
        && !c.init
        && c.lets.is_empty()
        && c.exists.is_empty()
        && c.ranges.len() == c.indices.len()
}

/// Whether `e` is the select of an update: a `?:` whose condition reads no
/// tensor.
fn is_update(e: &Expr) -> bool {
    matches!(e, Expr::Select(c, ..) if !c.any(&|x| matches!(x, Expr::Read(..) | Expr::Sym(_))))
}

/// How many nodes `e` has.
fn nodes(e: &Expr) -> usize {
    let mut n = 0;
    e.walk(&mut |_| n += 1);
    n
}

/// How many points `c`'s box has (0 when a range is not constant).
fn points(c: &Comprehension) -> i64 {
    box_of(c)
        .values()
        .map(|(lo, hi)| hi - lo + 1)
        .product::<i64>()
        * i64::from(box_of(c).len() == c.ranges.len())
}

/// How many points of `u`'s box evaluate a read of `t`: each read counts
/// the part of the box its `?:` branches narrow it to (0 when a range is
/// not constant).
fn read_points(u: &Comprehension, t: &str) -> i64 {
    let b = box_of(u);
    if b.len() != u.ranges.len() {
        return 0;
    }
    let mut n = 0;
    rewrite(u.body.clone(), &b, &mut |x, at| {
        if matches!(&x, Expr::Read(name, _) if name == t) {
            n += at
                .values()
                .map(|(lo, hi)| (hi - lo + 1).max(0))
                .product::<i64>();
        }
        x
    });
    n
}

/// A check of one read (its subscripts, tensor, box where it is evaluated,
/// and whether lowering can guard the branches around it).
type ReadCheck<'a> = dyn FnMut(&[Expr], &str, &simplify::Ranges, bool) -> bool + 'a;

/// Whether every read in `e`, which `u` computes over box `b`, is provably
/// inside its tensor wherever it is evaluated, by the interval analysis
/// lowering uses: over the whole box, or over the part of it the `?:`
/// branches around the read narrow it to, when lowering can guard each of
/// those branches.
fn provable(e: &Expr, u: &Comprehension, b: &simplify::Ranges, cx: &Cx) -> bool {
    let inside = |subs: &[Expr], t: &str, at: &simplify::Ranges| {
        let sizes = HashMap::new();
        let bounds = ir::Bounds {
            def: &cx.def,
            lets: &u.lets,
            iters: at,
            sizes: &sizes,
        };
        cx.shapes.get(t).is_some_and(|dims| {
            subs.len() == dims.len()
                && subs
                    .iter()
                    .zip(dims)
                    .all(|(s, &n)| bounds.interval(s).is_ok_and(|(lo, hi)| lo >= 0 && hi < n))
        })
    };
    fn walk(e: &Expr, at: &simplify::Ranges, guarded: bool, ok: &mut ReadCheck) -> bool {
        match e {
            Expr::Select(c, then, other) => {
                let sides = [(then, true), (other, false)];
                walk(c, at, guarded, ok)
                    && sides.iter().all(|(x, taken)| {
                        let g = guarded && simplify::guardable(c, *taken);
                        walk(x, &simplify::narrow(c, at, *taken), g, ok)
                    })
            }
            Expr::Read(t, subs) => {
                ok(subs, t, at, guarded) && subs.iter().all(|s| walk(s, at, guarded, ok))
            }
            _ => e.children().into_iter().all(|x| walk(x, at, guarded, ok)),
        }
    }
    walk(e, b, true, &mut |subs, t, at, guarded| {
        inside(subs, t, b) || guarded && inside(subs, t, at)
    })
}

/// Whether the rules of the module doc let the definition of `s`'s tensor
/// be substituted into `rest`.
fn substitutable(s: &Stmt, rest: &[&Stmt], kept: &[String], cx: &Cx) -> bool {
    let Stmt::Comp(c) = s else { return false };
    let t = &c.tensor;
    if !plain(c) || !cx.temps.contains(t) || kept.contains(t) {
        return false;
    }
    let view = is_view(&c.body);
    let index_only = !c.body.any(&|x| matches!(x, Expr::Read(..)));
    let affine_view = view && affine_read(&c.body);
    let mut uses = 0;
    for r in rest {
        let Stmt::Comp(u) = r else {
            if r.reads().contains(&t.as_str()) {
                return false;
            }
            continue;
        };
        let in_extras = u
            .lets
            .iter()
            .map(|(_, e)| e)
            .chain(&u.exists)
            .any(|e| !reads_of(e, t).is_empty());
        let here = reads_of(&u.body, t);
        let pointwise = u.op == Reduction::Assign && u.ranges.len() == u.indices.len();
        // Lowering needs a reduction's subscripts affine, and proves a
        // select's reads in bounds over the box: a view substitutes into a
        // reduction only when affine; anything else only where it is read
        // at whole iterators over its own shape (its reads keep their
        // ranges).
        // Elsewhere (a reshape's gather, an update's shifted slice) the
        // substituted reads must be provably in bounds over the reader's box.
        let fits = here.iter().all(|subs| {
            if index_only {
                // A function of the indices alone reads nothing to keep in
                // bounds, and costs next to nothing to recompute.
                true
            } else if pointwise && !view && strided(subs, u) {
                // Computed through a transposing read, the work would walk
                // the producer's rows across: it stays a tensor, and the
                // reader copies it.
                false
            } else if pointwise {
                (view && affine_view)
                    || whole(subs, u, &c.ranges)
                    || u.lets.is_empty() && subs.iter().all(affine) && affine_body(&c.body) && {
                        let b = box_of(u);
                        provable(&simplify(substitute(u.body.clone(), c), &b), u, &b, cx)
                    }
            } else {
                affine_view
            }
        });
        // A read with a run-time subscript (a loop index) is lowered where
        // it is computed unconditionally, not under a `?:` branch, where
        // its bounds would need proving.
        let guarded = !affine_body(&c.body) && read_under_branch(&u.body, t);
        // A transposing view (`.permute(...).contiguous()`) stays a copy of
        // its own before an elementwise statement other than a copy:
        // computed through, its reads stride across the base's rows in the
        // innermost loop, which costs far more than copying first. (A
        // reduction reads it in place: a matmul takes a transposed
        // operand as it is.)
        let transposed =
            view && pointwise && transposes(c) && !(here.is_empty() || is_view(&u.body));
        // A reader over a larger box (a per-row result broadcast along a
        // row, FCOS's centerness) would compute a costly body once per
        // point it reads it at instead of once per point it has.
        let recomputed = !here.is_empty()
            && !view
            && costly(&c.body)
            && points(c) > 0
            && read_points(u, t) > points(c);
        if in_extras || !fits || guarded || transposed || recomputed {
            return false;
        }
        uses += here.len();
    }
    view || index_only || uses == 1
}

/// Whether a read at `subs` in `u` moves `u`'s innermost index to a
/// dimension other than the last (its innermost loop strides across the
/// tensor's rows).
fn strided(subs: &[Expr], u: &Comprehension) -> bool {
    let Some(inner) = u.indices.last() else {
        return false;
    };
    subs.split_last().is_some_and(|(_, outer)| {
        outer
            .iter()
            .any(|s| s.any(&|y| matches!(y, Expr::Iter(i) if i == inner)))
    })
}

/// Whether view `c` moves its innermost index to another dimension of the
/// tensor it reads (the innermost loop over it would not walk a row).
fn transposes(c: &Comprehension) -> bool {
    let mut found = false;
    c.body.walk(&mut |x| {
        if let Expr::Read(_, subs) = x {
            found |= strided(subs, c);
        }
    });
    found
}

/// Whether `e` calls a function costlier than a comparison (a
/// transcendental, a root, a rounding).
fn costly(e: &Expr) -> bool {
    e.any(&|x| matches!(x, Expr::Call(b, _) if !b.accepts_int()))
}

/// Whether `e` only moves or converts one read (a view's gather).
pub(crate) fn is_view(e: &Expr) -> bool {
    match e {
        Expr::Read(_, subs) => subs
            .iter()
            .all(|s| !s.any(&|x| matches!(x, Expr::Read(..)))),
        Expr::Cast(_, a) => is_view(a),
        _ => false,
    }
}

/// Whether subscript `x` is affine in iterators (no scalars, divisions or
/// reads).
fn affine(x: &Expr) -> bool {
    match x {
        Expr::Iter(_) | Expr::Lit(..) => true,
        Expr::Binary(BinOp::Add | BinOp::Sub | BinOp::Mul, a, b) => affine(a) && affine(b),
        Expr::Unary(UnOp::Neg, a) => affine(a),
        _ => false,
    }
}

/// Whether the read `e` (perhaps converted) has subscripts affine in
/// iterators.
fn affine_read(e: &Expr) -> bool {
    match e {
        Expr::Read(_, subs) => subs.iter().all(affine),
        Expr::Cast(_, a) => affine_read(a),
        _ => false,
    }
}

/// Whether every read in `e` has subscripts affine in iterators.
fn affine_body(e: &Expr) -> bool {
    let mut ok = true;
    e.walk(&mut |x| {
        if let Expr::Read(..) = x {
            ok &= affine_read(x);
        }
    });
    ok
}

/// Whether `e` reads `t` inside a branch of a `?:`.
fn read_under_branch(e: &Expr, t: &str) -> bool {
    let mut found = false;
    e.walk(&mut |x| {
        if let Expr::Select(_, a, b) = x {
            found |= !reads_of(a, t).is_empty() || !reads_of(b, t).is_empty();
        }
    });
    found
}

/// Whether `subs` are iterators of `u` ranging as `ranges` (the
/// producer's), in order.
fn whole(subs: &[Expr], u: &Comprehension, ranges: &[ir::IterRange]) -> bool {
    subs.len() == ranges.len()
        && subs.iter().zip(ranges).all(|(s, r)| match s {
            Expr::Iter(i) => u.range(i).is_some_and(|ur| ur.lo == r.lo && ur.hi == r.hi),
            _ => false,
        })
}

/// The subscripts of every read of `t` in `e`.
fn reads_of(e: &Expr, t: &str) -> Vec<Vec<Expr>> {
    e.reads()
        .into_iter()
        .filter(|(name, _)| *name == t)
        .map(|(_, subs)| subs.to_vec())
        .collect()
}

/// `e` with every read of `def`'s tensor replaced by its body at the read's
/// subscripts.
pub(crate) fn substitute(e: Expr, def: &Comprehension) -> Expr {
    e.map(&mut |x| match x {
        Expr::Read(t, subs) if t == def.tensor => {
            let at: HashMap<&str, &Expr> =
                def.indices.iter().map(String::as_str).zip(&subs).collect();
            def.body.clone().map(&mut |y| match y {
                Expr::Iter(i) => at.get(i.as_str()).map_or(Expr::Iter(i), |s| (*s).clone()),
                y => fold(y),
            })
        }
        x => x,
    })
}

/// Integer arithmetic on two literals as one literal, as the TC checker
/// folds it (a substituted constant subscript, `0 + 4`), so the printed
/// program checks back to the same one.
fn fold(e: Expr) -> Expr {
    let Expr::Binary(op, a, b) = &e else { return e };
    let (Expr::Lit(ir::Value::Int(x), t), Expr::Lit(ir::Value::Int(y), _)) = (&**a, &**b) else {
        return e;
    };
    let v = match op {
        BinOp::Add => x.checked_add(*y),
        BinOp::Sub => x.checked_sub(*y),
        BinOp::Mul => x.checked_mul(*y),
        _ => None,
    };
    match v {
        Some(v) => Expr::Lit(ir::Value::Int(v), *t),
        None => e,
    }
}
