//! `interchange`: moves the lanes of a vector block inside the reduction
//! it contains, so that the vector loop is the innermost loop.
//!
//! After `fuse` and `vectorize`, a reduction whose output is vectorized is
//! a `#vector` block over `W` lanes whose points each initialize a scalar
//! accumulator, run a child block over the reduction indices into it, and
//! store it: the vector loop is outside the reduction loop, where no C
//! compiler vectorizes it. This pass rewrites such a block `B` into a block
//! without the lane index whose accumulators are `W`-element local
//! buffers, holding three children: the statements before the reduction as
//! a `#vector` block over the lanes, the reduction with the lane index as
//! its innermost index (tagged `#vector`), and the statements after it as a
//! `#vector` block over the lanes. Views of `B` that depend on the lane
//! index are widened to the `W` elements the lanes cover.
//!
//! When the vector block also holds jammed indices (`vectorize`'s register
//! blocking, one or two of them), all are free: the accumulators become
//! `J x W` (or `J1 x J2 x W`) buffers, and the reduction's innermost
//! indices are the jammed indices and then the lane. The accumulators' lane dimension is rounded up to a whole number
//! of vector registers, so that each row of lanes is one register.
//!
//! Requires: a verified kernel. Applies to a `#vector` block without
//! constraints, with one to three indices of range above 1 that are not
//! passed (the free indices, the lane index `v` last), exactly one child
//! block `R` (which has no child blocks), scalar statements before and
//! after it that share no scalar, and local buffers of rank 0; every view
//! of `B` either does not mention a free index or mentions it in exactly
//! one dimension, with coefficient 1 and size 1; `R` refines only `B`'s
//! local buffers and views that do not mention the free indices.
//!
//! Guarantees: the same results, bit for bit. Each lane runs the same
//! statements on the same elements in the same order as before (the
//! reduction's points keep their order, and the lane is the innermost
//! index); lanes write distinct elements (their views differ in the lane's
//! dimension) and `R` writes only the lane's own accumulator, so no lane
//! sees another's writes. A rewrite that does not verify is dropped.

use std::collections::{HashMap, HashSet};

use crate::pass::{replace_verified, rewrite_each_block};
use crate::{
    Affine, Agg, Block, Dim, Index, Pass, RefDir, Refinement, Statement, StmtKind, Tags, Target,
};

#[derive(Debug)]
pub struct Interchange;

impl Pass for Interchange {
    fn name(&self) -> &'static str {
        "interchange"
    }

    fn run(&self, root: &mut Block, target: &Target) -> Result<(), String> {
        rewrite_each_block(root, |b, check| {
            let mut paths = Vec::new();
            collect(b, &mut Vec::new(), &mut paths);
            for path in paths {
                let _ = replace_verified(b, &path, check, |b| rewrite(b, target));
            }
        });
        Ok(())
    }
}

/// The paths (statement positions below a step of the root) of every
/// `#vector` block in `b`'s nest, `b` itself included.
fn collect(b: &Block, path: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
    if b.tags.contains("vector") {
        out.push(path.clone());
    }
    for (k, s) in b.stmts.iter().enumerate() {
        if let StmtKind::Block(c) = &s.kind {
            path.push(k);
            collect(c, path, out);
            path.pop();
        }
    }
}

/// The dimension in which `r`'s access mentions `v`, if it does so only
/// there, with coefficient 1, in a dimension of size 1; `Ok(None)` when it
/// does not mention `v`; `Err` otherwise.
fn lane_dim(r: &Refinement, v: &str) -> Result<Option<usize>, ()> {
    let dims: Vec<usize> = (0..r.access.len())
        .filter(|&d| r.access[d].terms.contains_key(v))
        .collect();
    match dims.as_slice() {
        [] => Ok(None),
        [d] if r.access[*d].terms.get(v) == Some(&1) && r.shape[*d].size == 1 => Ok(Some(*d)),
        _ => Err(()),
    }
}

/// The scalars a statement defines and uses.
fn scalars(s: &Statement) -> (Vec<&str>, Vec<&str>) {
    match &s.kind {
        StmtKind::Load { into, .. } | StmtKind::LoadIndex { into, .. } => (vec![into], vec![]),
        StmtKind::Constant { into, .. } => (vec![into], vec![]),
        StmtKind::Store { from, .. } => (vec![], vec![from]),
        StmtKind::Intrinsic { inputs, into, .. } => {
            (vec![into], inputs.iter().map(String::as_str).collect())
        }
        StmtKind::Gather { indices, into, .. } => {
            (vec![into], indices.iter().map(String::as_str).collect())
        }
        StmtKind::Block(_) => (vec![], vec![]),
    }
}

/// The views a statement names.
fn views(s: &Statement) -> Option<&str> {
    match &s.kind {
        StmtKind::Load { from, .. } | StmtKind::Gather { from, .. } => Some(from),
        StmtKind::Store { into, .. } => Some(into),
        _ => None,
    }
}

fn rewrite(b: &Block, target: &Target) -> Option<Block> {
    if !b.constraints.is_empty() {
        return None;
    }
    // The free indices: the lane index last, and the jammed indices (if
    // any) before it.
    let free: Vec<&Index> = b
        .idxs
        .iter()
        .filter(|i| i.affine.is_none() && i.range > 1)
        .collect();
    if free.is_empty() || free.len() > 3 {
        return None;
    }
    let is_free = |n: &str| free.iter().any(|i| i.name == n);
    let blocks: Vec<usize> = (0..b.stmts.len())
        .filter(|&k| matches!(b.stmts[k].kind, StmtKind::Block(_)))
        .collect();
    let [at] = blocks.as_slice() else {
        return None;
    };
    let StmtKind::Block(r) = &b.stmts[*at].kind else {
        return None;
    };
    if r.stmts.iter().any(|s| matches!(s.kind, StmtKind::Block(_))) || r.tags.contains("vector") {
        return None;
    }
    let (pre, post) = (&b.stmts[..*at], &b.stmts[at + 1..]);
    let defined: HashSet<&str> = pre.iter().flat_map(|s| scalars(s).0).collect();
    if post
        .iter()
        .flat_map(|s| scalars(s).1)
        .any(|x| defined.contains(x))
    {
        return None;
    }
    // B's refinements: locals widen to the lanes; views that mention the
    // lane index widen in its dimension.
    let mut lane_dims: HashMap<&str, Vec<Option<usize>>> = HashMap::new();
    for r in &b.refs {
        if r.from.is_none() {
            if !r.shape.is_empty() || !r.access.is_empty() {
                return None;
            }
            continue;
        }
        let dims = free
            .iter()
            .map(|i| lane_dim(r, &i.name))
            .collect::<Result<Vec<_>, ()>>()
            .ok()?;
        lane_dims.insert(&r.into, dims);
    }
    let moves = |name: &str| {
        lane_dims
            .get(name)
            .is_some_and(|d| d.iter().any(Option::is_some))
    };
    let local = |name: &str| b.refs.iter().any(|r| r.into == name && r.from.is_none());
    // R refines only locals and views independent of the lane.
    for rr in &r.refs {
        let Some(from) = rr.from.as_deref() else {
            continue;
        };
        if !local(from) && moves(from) {
            return None;
        }
        if local(from) && !rr.access.is_empty() {
            return None;
        }
    }
    let taken: HashSet<&str> = b
        .idxs
        .iter()
        .chain(&r.idxs)
        .map(|i| i.name.as_str())
        .collect();
    let lane_names: Vec<String> = free
        .iter()
        .map(|i| {
            let mut n = format!("{}_lane", i.name);
            while taken.contains(n.as_str()) {
                n.push('_');
            }
            n
        })
        .collect();
    // The accumulators' lane dimension is a whole number of vector
    // registers, so that every row of lanes starts a register of its own.
    let mut shape: Vec<u64> = free.iter().map(|i| i.range).collect();
    let dtype_bits = b
        .refs
        .iter()
        .find(|r| r.from.is_none())
        .map_or(32, |r| r.dtype.bits().max(8));
    let per_register = u64::from(target.vector_bits / dtype_bits).max(1);
    if let Some(last) = shape.last_mut() {
        *last = last.div_ceil(per_register) * per_register;
    }
    // One element of the accumulators, as each lane (and jammed point)
    // refines it.
    // (Strides do not depend on the element type; the widest one checks
    // that every accumulator's layout fits.)
    let ones: Vec<Dim> = crate::row_major(&shape, ir::DType::F64)?
        .into_iter()
        .map(|d| Dim { size: 1, ..d })
        .collect();

    // The outer block: B without the lane index, its views widened.
    let mut outer = Block::new(&b.name);
    outer.comment = b.comment.clone();
    outer.tags = b.tags.clone();
    outer.tags.remove("vector");
    outer.tags.insert("interchanged".to_string());
    outer.idxs = b
        .idxs
        .iter()
        .filter(|i| !is_free(&i.name))
        .cloned()
        .collect();
    for r in &b.refs {
        let mut w = r.clone();
        if r.from.is_none() {
            w.shape = crate::row_major(&shape, r.dtype)?;
        } else if let Some(dims) = lane_dims.get(r.into.as_str()) {
            w.access = r
                .access
                .iter()
                .map(|a| a.subst(&|n| is_free(n).then(|| Affine::constant(0))))
                .collect();
            for (d, i) in dims.iter().zip(&free) {
                if let Some(d) = d {
                    w.shape[*d].size = i.range;
                }
            }
        }
        outer.refs.push(w);
    }
    // The lane blocks for the statements before and after the reduction.
    let passed: Vec<Index> = outer
        .idxs
        .iter()
        .map(|i| Index {
            name: i.name.clone(),
            range: 1,
            affine: Some(Affine::index(&i.name)),
            tags: Tags::new(),
        })
        .collect();
    let lane_block = |name: &str, stmts: &[Statement]| -> Block {
        let mut l = Block::new(name);
        l.tags.insert("vector".to_string());
        l.idxs = free.iter().map(|i| (*i).clone()).collect();
        l.idxs.extend(passed.iter().cloned());
        let named: HashSet<&str> = stmts.iter().filter_map(views).collect();
        for r in outer
            .refs
            .iter()
            .filter(|r| named.contains(r.into.as_str()))
        {
            let original = b.refs.iter().find(|x| x.into == r.into);
            let (access, shape) = if r.from.is_none() {
                (
                    free.iter().map(|i| Affine::index(&i.name)).collect(),
                    ones.clone(),
                )
            } else {
                let dims = lane_dims.get(r.into.as_str());
                let access = (0..r.access.len())
                    .map(|k| {
                        let at = dims.and_then(|d| d.iter().position(|x| *x == Some(k)));
                        at.map_or_else(|| Affine::constant(0), |f| Affine::index(&free[f].name))
                    })
                    .collect();
                (
                    access,
                    original.map_or_else(|| r.shape.clone(), |o| o.shape.clone()),
                )
            };
            l.refs.push(Refinement {
                dir: if r.from.is_none() {
                    RefDir::InOut
                } else {
                    r.dir
                },
                from: Some(r.into.clone()),
                into: r.into.clone(),
                access,
                dtype: r.dtype,
                shape,
                agg: if r.from.is_none() { Agg::Assign } else { r.agg },
                location: None,
                tags: Tags::new(),
            });
        }
        l.stmts = stmts.to_vec();
        l
    };
    // The reduction with the lane as its innermost index.
    let mut red = (**r).clone();
    red.tags.insert("vector".to_string());
    // A passed index whose form mentions the lane becomes that form in
    // the new lane index and the outer block's indices, each of which is
    // passed in under a name of its own.
    let mut names: HashSet<String> = red.idxs.iter().map(|i| i.name.clone()).collect();
    names.extend(lane_names.iter().cloned());
    let lane_of = |n: &str| free.iter().position(|i| i.name == n);
    let mut outer_names: HashMap<String, String> = HashMap::new();
    let mut added = Vec::new();
    for i in &red.idxs {
        let Some(form) = i
            .affine
            .as_ref()
            .filter(|f| f.terms.keys().any(|n| is_free(n)))
        else {
            continue;
        };
        for n in form.terms.keys().filter(|n| !is_free(n)) {
            if outer_names.contains_key(n) {
                continue;
            }
            let mut m = format!("{n}_p");
            while names.contains(&m) {
                m.push('_');
            }
            names.insert(m.clone());
            added.push(Index {
                name: m.clone(),
                range: 1,
                affine: Some(Affine::index(n)),
                tags: Tags::new(),
            });
            outer_names.insert(n.clone(), m);
        }
    }
    let mut subst: HashMap<String, Affine> = HashMap::new();
    red.idxs.retain(|i| match &i.affine {
        Some(form) if form.terms.keys().any(|n| is_free(n)) => {
            let local = form.subst(&|n| match lane_of(n) {
                Some(f) => Some(Affine::index(&lane_names[f])),
                None => outer_names.get(n).map(|m| Affine::index(m)),
            });
            subst.insert(i.name.clone(), local);
            false
        }
        _ => true,
    });
    red.idxs.extend(added);
    // The free indices are the innermost ones, the lane last: every lane
    // runs a point of the reduction before the next point starts.
    for (i, name) in free.iter().zip(&lane_names) {
        red.idxs.push(Index {
            name: name.clone(),
            range: i.range,
            affine: None,
            tags: i.tags.clone(),
        });
    }
    let sub = |a: &Affine| a.subst(&|n| subst.get(n).cloned());
    red.constraints = red.constraints.iter().map(sub).collect();
    for s in &mut red.stmts {
        if let StmtKind::LoadIndex { from, .. } = &mut s.kind {
            *from = sub(from);
        }
    }
    for rr in &mut red.refs {
        if rr.from.as_deref().is_some_and(local) {
            rr.access = lane_names.iter().map(|n| Affine::index(n)).collect();
            rr.shape = ones.clone();
        } else {
            rr.access = rr.access.iter().map(sub).collect();
        }
    }
    let stmt = |blk: Block| Statement {
        kind: StmtKind::Block(Box::new(blk)),
        tags: Tags::new(),
    };
    if !pre.is_empty() {
        outer
            .stmts
            .push(stmt(lane_block(&format!("{}_pre", b.name), pre)));
    }
    outer.stmts.push(stmt(red));
    if !post.is_empty() {
        outer
            .stmts
            .push(stmt(lane_block(&format!("{}_post", b.name), post)));
    }
    Some(outer)
}
