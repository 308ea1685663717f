//! `inline`: replaces every call block (tagged `call`: a callee lowered in
//! place) among the root's steps by the callee's own steps, so that the
//! passes after it, which tile, vectorize and partition the root's steps,
//! see a callee's comprehensions (a prelude convolution called by an
//! imported model) as they see the caller's own.
//!
//! Lowering passes a call's tensors whole, at offset zero, so a call
//! block's views of the caller's buffers are the caller's buffers: hoisted
//! blocks simply refer to the caller's names. The call block's own buffers
//! (the callee's temporaries and scalar parameters) become root buffers
//! tagged `temp` under names prefixed by the call block's; its plain
//! statements (the scalar parameters' stores) become a step of their own,
//! before the callee's steps. Nested calls are inlined in turn.
//!
//! Requires: a verified kernel. Guarantees: the same results (the hoisted
//! steps run in the same order on the same buffers, and a temporary starts
//! at zero as a call block's local buffer did), a verified kernel with no
//! call blocks among the root's steps; a call block whose views are not
//! whole buffers at offset zero is left as it is.

use std::collections::HashMap;

use crate::{Affine, Block, Pass, RefDir, Refinement, Statement, StmtKind, Target};

#[derive(Debug)]
pub struct Inline;

impl Pass for Inline {
    fn name(&self) -> &'static str {
        "inline"
    }

    fn run(&self, root: &mut Block, _target: &Target) -> Result<(), String> {
        // The root's buffers by name (the first of a name, as
        // `Block::refinement` finds it): looking them up by scanning made
        // inlining quadratic in the number of calls.
        let mut names: HashMap<String, usize> = HashMap::new();
        for (i, r) in root.refs.iter().enumerate() {
            names.entry(r.into.clone()).or_insert(i);
        }
        let mut k = 0;
        while k < root.stmts.len() {
            let call = match &root.stmts[k].kind {
                StmtKind::Block(b) if b.tags.contains("call") => Some((**b).clone()),
                _ => None,
            };
            let hoisted = call.and_then(|b| hoist(root, &mut names, &b));
            match hoisted {
                // The hoisted steps are looked at again: they may be calls.
                Some(steps) => {
                    root.stmts.splice(k..=k, steps);
                }
                None => k += 1,
            }
        }
        Ok(())
    }
}

/// The steps replacing call block `call`, after adding its own buffers to
/// `root`; `None` when a view is not a whole buffer at offset zero.
fn hoist(
    root: &mut Block,
    root_names: &mut HashMap<String, usize>,
    call: &Block,
) -> Option<Vec<Statement>> {
    let mut names: HashMap<String, String> = HashMap::new();
    let mut locals = Vec::new();
    for r in &call.refs {
        match &r.from {
            Some(parent) => {
                let whole = r.access.iter().all(|a| *a == Affine::constant(0))
                    && root_names
                        .get(parent)
                        .is_some_and(|&p| root.refs[p].shape == r.shape);
                if !whole {
                    return None;
                }
                names.insert(r.into.clone(), parent.clone());
            }
            None => {
                let mut name = format!("{}_{}", call.name, r.into);
                while root_names.contains_key(&name)
                    || locals.iter().any(|l: &Refinement| l.into == name)
                {
                    name.push('_');
                }
                let mut local = r.clone();
                local.into = name.clone();
                local.dir = RefDir::InOut;
                local.tags.insert("temp".to_string());
                locals.push(local);
                names.insert(r.into.clone(), name);
            }
        }
    }
    for local in locals {
        root_names.insert(local.into.clone(), root.refs.len());
        root.refs.push(local);
    }
    let mut steps = Vec::new();
    let mut plain = Vec::new();
    for s in &call.stmts {
        match &s.kind {
            StmtKind::Block(b) => {
                let mut b = (**b).clone();
                b.name = format!("{}_{}", call.name, b.name);
                for r in &mut b.refs {
                    if let Some(from) = r.from.as_ref().and_then(|f| names.get(f)) {
                        r.from = Some(from.clone());
                    }
                }
                steps.push(Statement {
                    kind: StmtKind::Block(Box::new(b)),
                    tags: s.tags.clone(),
                });
            }
            _ => plain.push(s.clone()),
        }
    }
    if !plain.is_empty() {
        steps.insert(
            0,
            Statement {
                kind: StmtKind::Block(Box::new(setup(call, &plain, &names))),
                tags: Default::default(),
            },
        );
    }
    Some(steps)
}

/// A step holding a call block's plain statements, with views of the
/// buffers they load and store.
fn setup(call: &Block, plain: &[Statement], names: &HashMap<String, String>) -> Block {
    let mut b = Block::new(&format!("{}_args", call.name));
    b.comment = format!("the scalar arguments of {}", call.name);
    let view = |name: &str, dir: RefDir, b: &mut Block| {
        let Some(r) = call.refinement(name) else {
            return;
        };
        if let Some(v) = b.refs.iter_mut().find(|v| v.into == name) {
            if v.dir != dir {
                v.dir = RefDir::InOut;
            }
            return;
        }
        b.refs.push(Refinement {
            dir,
            from: names.get(name).cloned(),
            into: name.to_string(),
            access: vec![Affine::constant(0); r.shape.len()],
            tags: Default::default(),
            location: None,
            ..r.clone()
        });
    };
    for s in plain {
        match &s.kind {
            StmtKind::Load { from, .. } => view(from, RefDir::In, &mut b),
            StmtKind::Store { into, .. } => view(into, RefDir::Out, &mut b),
            _ => {}
        }
    }
    b.stmts = plain.to_vec();
    b
}
