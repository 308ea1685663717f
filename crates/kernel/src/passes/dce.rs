//! `dce`: removes scalar statements whose results nothing uses (loads,
//! index loads, constants, intrinsics, gathers), repeatedly, and child
//! blocks that write nothing (no store and no `out`/`inout` refinement).
//!
//! Requires: a verified kernel. Guarantees: the same results. A gather whose
//! result is unused is removed too, so an out-of-bounds gather that would
//! have failed no longer fails: dead code has no observable effect.

use std::collections::HashSet;

use crate::{Block, Pass, RefDir, StmtKind, Target};

#[derive(Debug)]
pub struct Dce;

impl Pass for Dce {
    fn name(&self) -> &'static str {
        "dce"
    }

    fn run(&self, root: &mut Block, _target: &Target) -> Result<(), String> {
        dce(root);
        Ok(())
    }
}

/// Whether a block has an effect: it stores, or a child refines a view for
/// writing.
fn writes(b: &Block) -> bool {
    b.refs
        .iter()
        .any(|r| r.from.is_some() && matches!(r.dir, RefDir::Out | RefDir::InOut))
}

fn dce(b: &mut Block) {
    if b.is_library() {
        return;
    }
    for s in &mut b.stmts {
        if let StmtKind::Block(c) = &mut s.kind {
            dce(c);
        }
    }
    b.stmts.retain(|s| match &s.kind {
        StmtKind::Block(c) => writes(c),
        _ => true,
    });
    loop {
        let mut used: HashSet<&str> = HashSet::new();
        for s in &b.stmts {
            match &s.kind {
                StmtKind::Store { from, .. } => {
                    used.insert(from);
                }
                StmtKind::Intrinsic { inputs, .. } => {
                    used.extend(inputs.iter().map(String::as_str))
                }
                StmtKind::Gather { indices, .. } => used.extend(indices.iter().map(String::as_str)),
                _ => {}
            }
        }
        let dead = |s: &StmtKind| match s {
            StmtKind::Load { into, .. }
            | StmtKind::LoadIndex { into, .. }
            | StmtKind::Constant { into, .. }
            | StmtKind::Intrinsic { into, .. }
            | StmtKind::Gather { into, .. } => !used.contains(into.as_str()),
            StmtKind::Store { .. } | StmtKind::Block(_) => false,
        };
        let keep: Vec<bool> = b.stmts.iter().map(|s| !dead(&s.kind)).collect();
        if keep.iter().all(|k| *k) {
            return;
        }
        let mut k = keep.into_iter();
        b.stmts.retain(|_| k.next().unwrap_or(true));
    }
}
