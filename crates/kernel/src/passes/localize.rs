//! `localize`: moves a kernel temporary that only one root child uses, and
//! only as a per-point scratch element, into that child as a local buffer.
//!
//! A root refinement tagged `#temp` (a temporary no caller sees) is in
//! scope when exactly one root child block refines it, no other root child
//! names it anywhere in its nest (as a refinement's `from` or `into`, so
//! nothing reads it after that block), and no statement of the root loads,
//! stores or gathers it. In that block, its views of the temporary must all
//! have the same access, aggregation `assign` and size 1 in every
//! dimension; no child block may refine them and no `gather` read them; and
//! the first statement of the block's list that loads or stores one of them
//! must be a store. Every element a point reads is then the one that point
//! stored first, whatever earlier points left there.
//!
//! The first view becomes a local buffer of the same sizes (row-major
//! strides, `inout`, aggregation `assign`, no access), the other views are
//! removed and the statements naming them name the local instead, and the
//! root refinement is removed.
//!
//! Requires: a verified kernel. Guarantees: the kernel's buffers other than
//! the temporary get the same results (each point reads only what it wrote
//! itself, which the zeroed local holds just as the temporary did, and no
//! one reads the temporary afterwards); a verified kernel. Temporaries
//! outside this scope are left unchanged.

use std::collections::{HashMap, HashSet};

use crate::{row_major, Agg, Block, Pass, RefDir, Refinement, StmtKind, Target};

#[derive(Debug)]
pub struct Localize;

impl Pass for Localize {
    fn name(&self) -> &'static str {
        "localize"
    }

    fn run(&self, root: &mut Block, _target: &Target) -> Result<(), String> {
        let users: Vec<(String, usize)> = {
            let uses = uses(root);
            root.refs
                .iter()
                .filter(|r| r.from.is_none() && r.tags.contains("temp"))
                .filter_map(|r| match uses.get(r.into.as_str()) {
                    Some(Uses {
                        users,
                        elsewhere: false,
                    }) if users.len() == 1 => Some((r.into.clone(), users[0])),
                    _ => None,
                })
                .collect()
        };
        let mut moved = HashSet::new();
        for (t, k) in users {
            if let StmtKind::Block(b) = &mut root.stmts[k].kind {
                if move_in(b, &t) {
                    moved.insert(t);
                }
            }
        }
        root.refs.retain(|r| !moved.contains(&r.into));
        Ok(())
    }
}

/// How the root's statements use one of its buffers.
#[derive(Default)]
struct Uses {
    /// The root children that refine it directly (a library call counts
    /// twice, so that it is never the only user).
    users: Vec<usize>,
    /// Whether anything else names it: a root statement, or a refinement
    /// deeper in the nest of a root child that does not refine it.
    elsewhere: bool,
}

/// The uses of every name the root's statements mention, found in one walk
/// (per temporary, a walk over the whole kernel made the pass quadratic).
fn uses(root: &Block) -> HashMap<&str, Uses> {
    let mut out: HashMap<&str, Uses> = HashMap::new();
    for (k, s) in root.stmts.iter().enumerate() {
        match &s.kind {
            StmtKind::Block(c) => {
                let direct: HashSet<&str> =
                    c.refs.iter().filter_map(|r| r.from.as_deref()).collect();
                for &t in &direct {
                    let u = out.entry(t).or_default();
                    u.users.push(k);
                    if c.is_library() {
                        u.users.push(k);
                    }
                }
                let mut named = HashSet::new();
                names(c, &mut named);
                for t in named.difference(&direct) {
                    out.entry(t).or_default().elsewhere = true;
                }
            }
            StmtKind::Load { from: t, .. }
            | StmtKind::Gather { from: t, .. }
            | StmtKind::Store { into: t, .. } => {
                out.entry(t.as_str()).or_default().elsewhere = true;
            }
            _ => {}
        }
    }
    out
}

/// Adds every name a refinement of `b` or of a block nested in it has or
/// refines.
fn names<'a>(b: &'a Block, out: &mut HashSet<&'a str>) {
    for r in &b.refs {
        out.insert(&r.into);
        if let Some(f) = &r.from {
            out.insert(f);
        }
    }
    for s in &b.stmts {
        if let StmtKind::Block(c) = &s.kind {
            names(c, out);
        }
    }
}

/// Replaces `b`'s views of `t` by one local buffer if every element a
/// point reads is one it stored first; returns whether it did.
fn move_in(b: &mut Block, t: &str) -> bool {
    let Some(at) = b.refs.iter().position(|r| r.from.as_deref() == Some(t)) else {
        return false;
    };
    let first = &b.refs[at];
    let views: Vec<&Refinement> = b
        .refs
        .iter()
        .filter(|r| r.from.as_deref() == Some(t))
        .collect();
    if views.iter().any(|r| {
        r.access != first.access || r.agg != Agg::Assign || r.shape.iter().any(|d| d.size != 1)
    }) {
        return false;
    }
    let names: HashSet<String> = views.iter().map(|r| r.into.clone()).collect();
    let mut stored = false;
    for s in &b.stmts {
        match &s.kind {
            StmtKind::Store { into, .. } if names.contains(into) => stored = true,
            StmtKind::Load { from, .. } if names.contains(from) && !stored => return false,
            StmtKind::Gather { from, .. } if names.contains(from) => return false,
            StmtKind::Block(c)
                if c.refs
                    .iter()
                    .any(|r| r.from.as_ref().is_some_and(|f| names.contains(f))) =>
            {
                return false
            }
            _ => {}
        }
    }
    if !stored {
        return false;
    }
    let sizes: Vec<u64> = first.shape.iter().map(|d| d.size).collect();
    // A view's sizes fit in its buffer, so its own buffer's layout fits.
    let Some(shape) = row_major(&sizes, first.dtype) else {
        return false;
    };
    let local = Refinement {
        dir: RefDir::InOut,
        from: None,
        into: first.into.clone(),
        access: Vec::new(),
        dtype: first.dtype,
        shape,
        agg: Agg::Assign,
        location: None,
        tags: first.tags.clone(),
    };
    b.refs.retain(|r| r.from.as_deref() != Some(t));
    b.refs.insert(at, local.clone());
    for s in &mut b.stmts {
        match &mut s.kind {
            StmtKind::Load { from: name, .. } | StmtKind::Store { into: name, .. }
                if names.contains(name.as_str()) =>
            {
                name.clone_from(&local.into);
            }
            _ => {}
        }
    }
    true
}
