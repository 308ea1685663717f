//! `forward`: where the kernel options say `forward on` for a root step
//! that copies a root buffer `X` into a temporary `Y` through an affine
//! read, such as the channel-blocking copy before a convolution
//! (`Y(n, cb, h, w, l) = X(n, 16 * cb + l, h, w)`), rewrites every view
//! of `Y` in the steps after it into the view of `X` the copy read the
//! element from, and removes the copy and `Y`. The copy's memory traffic
//! goes (on a grouped convolution, the blocking copy of its input took a
//! fifth of the time); the readers then read `X` in its own layout, which
//! costs nothing where they broadcast the element (a convolution's input)
//! and a vector load's stride where they load it along their lanes. That
//! trade is the search's to measure, so the cost model forwards nothing:
//! every step that could be forwarded is recorded `forward off`, a choice
//! the tuner may change.
//!
//! The copy must be a root step of two statements, a load of `X` through
//! an `in` view of one element whose access is affine in the step's
//! indices, and a store of that value into `Y` through an `out` view of
//! aggregation `assign` that reaches each element of `Y` once
//! ([`Block::visits_each_element`]); `Y` must be a root temporary of
//! `X`'s element type that no other root statement writes, and no root
//! statement after the copy may write `X`. Every other root statement
//! that refers to `Y` must be a block reading one element of it through
//! `in` views that no block nested in it refines and no gather reads. Steps tagged `#library`
//! (the copies `view` turned into shared memory) are left alone.
//!
//! Requires: a verified kernel in which each comprehension is one root
//! step (run it after `view` and before `fuse`). Guarantees: the same
//! results: a reader's view of `Y` at `a` is rewritten to `X` at the
//! copy's read access with the copy's indices replaced by `a`, the element
//! the copy stored there, and `X` holds the same values when the reader
//! runs as when the copy ran; a verified kernel (a rewrite that does not
//! verify is dropped and the copy kept).

use std::collections::HashMap;

use crate::passes::view::{only_writer, root_ref, written_after, written_and_read};
use crate::verify::verify_block;
use crate::{Affine, Agg, Block, Dim, Pass, PassCx, RefDir, Refinement, StmtKind, Target};

#[derive(Debug)]
pub struct Forward;

impl Pass for Forward {
    fn name(&self) -> &'static str {
        "forward"
    }

    fn run(&self, root: &mut Block, target: &Target) -> Result<(), String> {
        self.run_with(root, &PassCx::defaults(target))
    }

    fn run_with(&self, root: &mut Block, cx: &PassCx) -> Result<(), String> {
        let mut k = 0;
        while k < root.stmts.len() {
            let StmtKind::Block(b) = &root.stmts[k].kind else {
                k += 1;
                continue;
            };
            let Some(copy) = copy_of(root, k, b) else {
                k += 1;
                continue;
            };
            let name = b.name.clone();
            if cx.given.step(&name).forward != Some(true) {
                cx.record(&name, |s| s.forward = Some(false));
                k += 1;
                continue;
            }
            let mut forwarded = root.clone();
            if forward(&mut forwarded, k, &copy) && verify_block(&forwarded).is_ok() {
                *root = forwarded;
                cx.record(&name, |s| s.forward = Some(true));
            } else {
                cx.record(&name, |s| s.forward = Some(false));
                k += 1;
            }
        }
        Ok(())
    }
}

/// A copy step's parts: what it reads and writes.
struct Copy {
    /// The root temporary written.
    y: String,
    /// The root buffer read.
    x: Refinement,
    /// The copy's read access of `X`, in the copy's indices.
    read: Vec<Affine>,
    /// The copy's index for each dimension of `Y`.
    outs: Vec<String>,
}

/// Root step `k`, block `b`, as a copy the module doc describes.
fn copy_of(root: &Block, k: usize, b: &Block) -> Option<Copy> {
    if b.is_library() {
        return None;
    }
    let (out, input) = written_and_read(b)?;
    let (y, x) = (root_ref(root, out)?, root_ref(root, input)?);
    let [load, store] = b.stmts.as_slice() else {
        return None;
    };
    let (StmtKind::Load { from, into: value }, StmtKind::Store { from: stored, into }) =
        (&load.kind, &store.kind)
    else {
        return None;
    };
    let copies = out.dir == RefDir::Out
        && input.dir == RefDir::In
        && out.agg == Agg::Assign
        && *from == input.into
        && *into == out.into
        && stored == value
        && input.shape.iter().all(|d| d.size == 1)
        && b.visits_each_element(out, y)
        && y.tags.contains("temp")
        && y.into != x.into
        && y.dtype == x.dtype
        && only_writer(root, k, &y.into)
        && !written_after(root, k, &x.into)
        && readers_in_scope(root, k, &y.into);
    copies.then(|| Copy {
        y: y.into.clone(),
        x: x.clone(),
        read: input.access.clone(),
        outs: b.idxs.iter().map(|i| i.name.clone()).collect(),
    })
}

/// Whether every root statement but step `k` that refers to `y` is a
/// block reading one element of it through `in` views that no nested
/// block refines and no gather reads.
fn readers_in_scope(root: &Block, k: usize, y: &str) -> bool {
    root.stmts.iter().enumerate().all(|(j, s)| {
        j == k
            || match &s.kind {
                StmtKind::Block(b) => b.refs.iter().all(|r| {
                    r.from.as_deref() != Some(y)
                        || (r.dir == RefDir::In
                            && r.shape.iter().all(|d| d.size == 1)
                            && !refined_below(b, &r.into)
                            && !gathered(b, &r.into))
                }),
                StmtKind::Load { from, .. } => from != y,
                StmtKind::Store { into, .. } => into != y,
                _ => true,
            }
    })
}

/// Whether `b` gathers from its view `view` (its subscripts are `Y`'s
/// dimensions, which `X` does not have).
fn gathered(b: &Block, view: &str) -> bool {
    b.stmts
        .iter()
        .any(|s| matches!(&s.kind, StmtKind::Gather { from, .. } if from == view))
}

/// Whether a block nested in `b` refines `b`'s view `view`.
fn refined_below(b: &Block, view: &str) -> bool {
    b.stmts.iter().any(|s| match &s.kind {
        StmtKind::Block(c) => c.refs.iter().any(|r| r.from.as_deref() == Some(view)),
        _ => false,
    })
}

/// Rewrites `root`'s views of the copy's `Y` into views of `X` and removes
/// root step `k` and `Y`; whether every access could be rewritten.
fn forward(root: &mut Block, k: usize, copy: &Copy) -> bool {
    root.stmts.remove(k);
    root.refs.retain(|r| r.into != copy.y);
    let element: Vec<Dim> = copy
        .x
        .shape
        .iter()
        .map(|d| Dim {
            size: 1,
            stride: d.stride,
        })
        .collect();
    for s in &mut root.stmts {
        let StmtKind::Block(b) = &mut s.kind else {
            continue;
        };
        for r in &mut b.refs {
            if r.from.as_deref() != Some(copy.y.as_str()) || r.access.len() != copy.outs.len() {
                continue;
            }
            let at: HashMap<&str, &Affine> = copy
                .outs
                .iter()
                .map(String::as_str)
                .zip(&r.access)
                .collect();
            r.access = copy
                .read
                .iter()
                .map(|a| a.subst(&|name| at.get(name).map(|v| (*v).clone())))
                .collect();
            r.from = Some(copy.x.into.clone());
            r.shape = element.clone();
        }
    }
    // Every view of `Y` was rewritten: none is left.
    root.stmts.iter().all(|s| match &s.kind {
        StmtKind::Block(b) => b.refs.iter().all(|r| r.from.as_deref() != Some(&copy.y)),
        _ => true,
    })
}
