//! `prune`: removes what a kernel does not use — refinements of blocks that
//! no statement (and no child refinement) of the block mentions, and indices
//! of range 1 that nothing mentions.
//!
//! Requires: a verified kernel. Guarantees: the same results (an unused view
//! reads and writes nothing; an unused index of range 1 does not change the
//! number of points), a verified kernel. Root refinements are the kernel's
//! interface and are kept.

use std::collections::HashSet;

use crate::{Block, Pass, StmtKind, Target};

#[derive(Debug)]
pub struct Prune;

impl Pass for Prune {
    fn name(&self) -> &'static str {
        "prune"
    }

    fn run(&self, root: &mut Block, _target: &Target) -> Result<(), String> {
        for s in &mut root.stmts {
            if let StmtKind::Block(b) = &mut s.kind {
                if b.is_library() {
                    continue;
                }
                prune(b);
            }
        }
        Ok(())
    }
}

fn prune(b: &mut Block) {
    for s in &mut b.stmts {
        if let StmtKind::Block(c) = &mut s.kind {
            prune(c);
        }
    }
    let mut views: HashSet<String> = HashSet::new();
    let mut indices: HashSet<String> = HashSet::new();
    for s in &b.stmts {
        match &s.kind {
            StmtKind::Load { from, .. } | StmtKind::Gather { from, .. } => {
                views.insert(from.clone());
            }
            StmtKind::Store { into, .. } => {
                views.insert(into.clone());
            }
            StmtKind::LoadIndex { from, .. } => indices.extend(from.terms.keys().cloned()),
            StmtKind::Block(c) => {
                views.extend(c.refs.iter().filter_map(|r| r.from.clone()));
                for ix in &c.idxs {
                    if let Some(a) = &ix.affine {
                        indices.extend(a.terms.keys().cloned());
                    }
                }
            }
            StmtKind::Constant { .. } | StmtKind::Intrinsic { .. } => {}
        }
    }
    b.refs.retain(|r| views.contains(&r.into));
    for r in &b.refs {
        for a in &r.access {
            indices.extend(a.terms.keys().cloned());
        }
    }
    for c in &b.constraints {
        indices.extend(c.terms.keys().cloned());
    }
    b.idxs
        .retain(|ix| ix.range != 1 || ix.affine.is_some() || indices.contains(&ix.name));
}
