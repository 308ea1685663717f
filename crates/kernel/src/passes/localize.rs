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

use std::collections::HashSet;

use crate::{row_major, Agg, Block, Pass, RefDir, Refinement, StmtKind, Target};

#[derive(Debug)]
pub struct Localize;

impl Pass for Localize {
    fn name(&self) -> &'static str {
        "localize"
    }

    fn run(&self, root: &mut Block, _target: &Target) -> Result<(), String> {
        let temps: Vec<String> = root
            .refs
            .iter()
            .filter(|r| r.from.is_none() && r.tags.contains("temp"))
            .map(|r| r.into.clone())
            .collect();
        for t in &temps {
            localize(root, t);
        }
        Ok(())
    }
}

/// Moves temporary `t` into its only user, if it is in scope.
fn localize(root: &mut Block, t: &str) {
    let mut user = None;
    for (k, s) in root.stmts.iter().enumerate() {
        match &s.kind {
            StmtKind::Block(c) if c.refs.iter().any(|r| r.from.as_deref() == Some(t)) => {
                if user.is_some() || c.is_library() {
                    return;
                }
                user = Some(k);
            }
            StmtKind::Block(c) if mentions(c, t) => return,
            StmtKind::Load { from, .. } | StmtKind::Gather { from, .. } if from == t => return,
            StmtKind::Store { into, .. } if into == t => return,
            _ => {}
        }
    }
    let Some(k) = user else { return };
    let StmtKind::Block(b) = &mut root.stmts[k].kind else {
        return;
    };
    if move_in(b, t) {
        root.refs.retain(|r| r.into != t);
    }
}

/// Whether a refinement of `b` or of a block nested in it names `t`.
fn mentions(b: &Block, t: &str) -> bool {
    b.refs
        .iter()
        .any(|r| r.into == t || r.from.as_deref() == Some(t))
        || b.stmts.iter().any(|s| match &s.kind {
            StmtKind::Block(c) => mentions(c, t),
            _ => false,
        })
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
