//! `scalarize`: turns single-element local buffers that a block only loads
//! and stores in its own statement list into SSA scalars (such as the
//! rank-0 accumulators `fuse` creates for stages it inlines).
//!
//! A local buffer (a refinement without `from` below the root) is in scope
//! when it holds one element (rank 0, or size 1 in every dimension), no
//! child block refines it, no `gather` reads it, and, unless its
//! aggregation is `assign`, its type is not `bool` (the VM combines
//! booleans in ways no intrinsic reproduces). Its statements are then
//! rewritten in order, tracking the buffer's current value as a scalar: a
//! `store` with aggregation `assign` makes the stored scalar the current
//! value; one with `add` or `mul` defines a fresh scalar, the current value
//! combined with the stored one by that operation in the buffer's type; one
//! with `min` or `max` does the same through the `min`/`max` builtin on the
//! current value and the stored one, in that order, which is the VM's
//! aggregation (NaN propagating for floats, the current value kept between
//! equal ones). A `load` is dropped and later uses of its scalar read the
//! current value instead. The current value starts as a zero constant of
//! the buffer's type, defined where it is first needed. The refinement is
//! then removed.
//!
//! Requires: a verified kernel. Guarantees: the same results (a local
//! buffer is zero at the start of every point and only this statement list
//! touches it, so its element holds exactly the tracked value, computed by
//! the operations the VM's aggregation applies); scalar names stay assigned
//! once (new scalars get fresh names); a verified kernel. Root refinements
//! are the kernel's buffers and are never scalarized.

use std::collections::{HashMap, HashSet};

use ir::{BinOp, Builtin, DType};

use crate::{vm, Agg, Block, Op, Pass, Refinement, Statement, StmtKind, Tags, Target};

#[derive(Debug)]
pub struct Scalarize;

impl Pass for Scalarize {
    fn name(&self) -> &'static str {
        "scalarize"
    }

    fn run(&self, root: &mut Block, _target: &Target) -> Result<(), String> {
        for s in &mut root.stmts {
            if let StmtKind::Block(b) = &mut s.kind {
                if b.is_library() {
                    continue;
                }
                scalarize(b);
            }
        }
        Ok(())
    }
}

/// Scalarizes the buffers in scope in `b` and, first, in its descendants.
fn scalarize(b: &mut Block) {
    for s in &mut b.stmts {
        if let StmtKind::Block(c) = &mut s.kind {
            scalarize(c);
        }
    }
    let locals: Vec<Refinement> = b.refs.iter().filter(|r| in_scope(b, r)).cloned().collect();
    for r in &locals {
        rewrite(b, r);
    }
}

/// Whether `r` is a single-element local buffer used only by `load` and
/// `store` statements of `b`, with an aggregation the rewrite reproduces.
fn in_scope(b: &Block, r: &Refinement) -> bool {
    r.from.is_none()
        && r.shape.iter().all(|d| d.size == 1)
        && (r.agg == Agg::Assign || r.dtype != DType::Bool)
        && b.stmts.iter().all(|s| match &s.kind {
            StmtKind::Gather { from, .. } => *from != r.into,
            StmtKind::Block(c) => !c.refs.iter().any(|cr| cr.from.as_ref() == Some(&r.into)),
            _ => true,
        })
}

/// The rewrite of one buffer's loads and stores in a statement list.
struct Rewrite<'a> {
    buffer: &'a Refinement,
    /// Every scalar name the statement list defines.
    used: HashSet<String>,
    /// The next suffix to try for a fresh name.
    next: usize,
    /// The scalar holding the buffer's value, once one is defined.
    current: Option<String>,
    out: Vec<Statement>,
}

impl Rewrite<'_> {
    /// A scalar name the statement list does not define yet.
    fn fresh(&mut self) -> String {
        loop {
            let name = format!("{}_{}", self.buffer.into, self.next);
            self.next += 1;
            if self.used.insert(name.clone()) {
                return name;
            }
        }
    }

    /// Appends `$name = kind` with `tags`, for a fresh name; returns it.
    fn define(&mut self, tags: &Tags, make: impl FnOnce(String) -> StmtKind) -> String {
        let name = self.fresh();
        self.out.push(Statement {
            kind: make(name.clone()),
            tags: tags.clone(),
        });
        name
    }

    /// The scalar holding the current value, defining the zero the buffer
    /// starts with if nothing has been stored yet.
    fn current(&mut self, tags: &Tags) -> String {
        if let Some(c) = &self.current {
            return c.clone();
        }
        let dtype = self.buffer.dtype;
        let zero = self.define(tags, |into| StmtKind::Constant {
            into,
            value: vm::zero(dtype),
            dtype,
        });
        self.current = Some(zero.clone());
        zero
    }

    /// Defines `$into = op(inputs)` in type `dtype` for a fresh name.
    fn op(&mut self, tags: &Tags, op: Op, inputs: Vec<String>, dtype: DType) -> String {
        self.define(tags, |into| StmtKind::Intrinsic {
            op,
            inputs,
            into,
            dtype,
        })
    }

    /// Stores `new` into the buffer: its value becomes `new` combined with
    /// the current value by the buffer's aggregation.
    fn store(&mut self, tags: &Tags, new: String) {
        let t = self.buffer.dtype;
        let value = match self.buffer.agg {
            Agg::Assign => new,
            Agg::Add | Agg::Mul => {
                let op = if self.buffer.agg == Agg::Add {
                    BinOp::Add
                } else {
                    BinOp::Mul
                };
                let old = self.current(tags);
                self.op(tags, Op::Binary(op), vec![old, new], t)
            }
            agg @ (Agg::Min | Agg::Max) => {
                let old = self.current(tags);
                let f = if agg == Agg::Min {
                    Builtin::Min
                } else {
                    Builtin::Max
                };
                self.op(tags, Op::Builtin(f), vec![old, new], t)
            }
        };
        self.current = Some(value);
    }
}

/// Replaces the loads and stores of `buffer` in `b` by scalars and removes
/// the refinement.
fn rewrite(b: &mut Block, buffer: &Refinement) {
    let used = b.stmts.iter().filter_map(|s| defined(&s.kind)).collect();
    let mut rw = Rewrite {
        buffer,
        used,
        next: 0,
        current: None,
        out: Vec::with_capacity(b.stmts.len()),
    };
    let mut renamed: HashMap<String, String> = HashMap::new();
    for s in std::mem::take(&mut b.stmts) {
        let mut kind = s.kind;
        rename_uses(&mut kind, &renamed);
        match kind {
            StmtKind::Load { from, into } if from == buffer.into => {
                let v = rw.current(&s.tags);
                renamed.insert(into, v);
            }
            StmtKind::Store { from, into } if into == buffer.into => rw.store(&s.tags, from),
            kind => rw.out.push(Statement { kind, tags: s.tags }),
        }
    }
    b.stmts = rw.out;
    b.refs.retain(|r| r.into != buffer.into);
}

/// The scalar a statement defines, if any.
fn defined(kind: &StmtKind) -> Option<String> {
    match kind {
        StmtKind::Load { into, .. }
        | StmtKind::LoadIndex { into, .. }
        | StmtKind::Constant { into, .. }
        | StmtKind::Intrinsic { into, .. }
        | StmtKind::Gather { into, .. } => Some(into.clone()),
        StmtKind::Store { .. } | StmtKind::Block(_) => None,
    }
}

/// Renames the scalars a statement uses (not the one it defines).
fn rename_uses(kind: &mut StmtKind, renamed: &HashMap<String, String>) {
    let rename = |n: &mut String| {
        if let Some(m) = renamed.get(n) {
            n.clone_from(m);
        }
    };
    match kind {
        StmtKind::Store { from, .. } => rename(from),
        StmtKind::Intrinsic { inputs, .. } => inputs.iter_mut().for_each(rename),
        StmtKind::Gather { indices, .. } => indices.iter_mut().for_each(rename),
        StmtKind::Load { .. }
        | StmtKind::LoadIndex { .. }
        | StmtKind::Constant { .. }
        | StmtKind::Block(_) => {}
    }
}
