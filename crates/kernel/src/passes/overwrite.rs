//! `overwrite`: tags `#overwritten` every root temporary whose first use
//! stores each of its elements before anything reads it, so that the
//! runtime need not zero its memory before a run.
//!
//! A temporary starts as zeros (a kernel's semantics), and the runtime
//! keeps that promise by filling its memory with zeros before the first
//! step that touches it, since the memory may hold another temporary's
//! values. For a temporary whose first step overwrites it whole — a
//! comprehension's `=` over the tensor's full shape, or the identity fill
//! before a reduction — those zeros are never read, and filling tens of
//! megabytes costs milliseconds per run.
//!
//! The first root statement that names the temporary must be a block with
//! no constraints whose indices are all its own (none passed from a
//! parent), that refines the temporary exactly once, as an `out` view of
//! aggregation `assign` and size 1 in every dimension whose access is the
//! block's indices in order, their ranges the temporary's sizes; that
//! stores into the view in its own statement list and never loads or
//! gathers it, nor lets a child block refine it (children, such as the
//! guarded reads of a `select`, work on their own views). Every point then
//! runs that store, and the points store every element once.
//!
//! Requires: a verified kernel (run it right after `inline`, where each
//! comprehension is still one root step; later its steps are tiled and the
//! test finds fewer temporaries, never a wrong one). Guarantees: the same
//! kernel with tags added; a tagged temporary's initial contents are never
//! read, by this kernel or by one the later passes make of it, since those
//! preserve results whatever a temporary's memory holds once overwritten.

use crate::{Agg, Block, Pass, RefDir, StmtKind, Target};

#[derive(Debug)]
pub struct Overwrite;

/// The tag of a temporary whose first step writes all of it.
pub const TAG: &str = "overwritten";

impl Pass for Overwrite {
    fn name(&self) -> &'static str {
        "overwrite"
    }

    fn run(&self, root: &mut Block, _target: &Target) -> Result<(), String> {
        let tagged: Vec<usize> = root
            .refs
            .iter()
            .enumerate()
            .filter(|(_, r)| r.from.is_none() && r.tags.contains("temp"))
            .filter(|(_, r)| first_use_writes_all(root, &r.into))
            .map(|(k, _)| k)
            .collect();
        for k in tagged {
            root.refs[k].tags.insert(TAG.to_string());
        }
        Ok(())
    }
}

/// Whether the first root statement naming root buffer `name` stores
/// every element of it before reading any.
fn first_use_writes_all(root: &Block, name: &str) -> bool {
    let Some(target) = root.refs.iter().find(|r| r.into == name) else {
        return false;
    };
    let Some(first) = root.stmts.iter().find(|s| names(&s.kind, name)) else {
        return false;
    };
    let StmtKind::Block(b) = &first.kind else {
        return false;
    };
    let views: Vec<_> = b
        .refs
        .iter()
        .filter(|r| r.from.as_deref() == Some(name))
        .collect();
    let [view] = views.as_slice() else {
        return false;
    };
    let whole =
        view.dir == RefDir::Out && view.agg == Agg::Assign && b.visits_each_element(view, target);
    let stmts_ok = b.stmts.iter().all(|s| match &s.kind {
        StmtKind::Block(c) => c.refs.iter().all(|r| r.from.as_ref() != Some(&view.into)),
        StmtKind::Load { from, .. } | StmtKind::Gather { from, .. } => *from != view.into,
        _ => true,
    });
    let stores = b
        .stmts
        .iter()
        .any(|s| matches!(&s.kind, StmtKind::Store { into, .. } if *into == view.into));
    whole && stmts_ok && stores
}

/// Whether a root statement names root buffer `name`: a block refining
/// it, or a scalar statement reading or writing it.
fn names(kind: &StmtKind, name: &str) -> bool {
    match kind {
        StmtKind::Block(b) => b.refs.iter().any(|r| r.from.as_deref() == Some(name)),
        StmtKind::Load { from, .. } | StmtKind::Gather { from, .. } => from == name,
        StmtKind::Store { into, .. } => into == name,
        StmtKind::LoadIndex { .. } | StmtKind::Constant { .. } | StmtKind::Intrinsic { .. } => {
            false
        }
    }
}
