//! `vectorize`: in every block that stores (the blocks that compute), picks
//! the index that moves along the stride-1 dimension of the written view and
//! splits it into vectors of the target's width: the block becomes an outer
//! block over everything else and the vector number, and an inner block of
//! `width` lanes tagged `#vector` (the C backend emits one vector loop for
//! it). When the width does not divide the range, the remainder runs in a
//! separate tail block (tagged `#tail`) after the vectorized one.
//!
//! The width is the target's vector register size over the element size of
//! the written view (16 `float32` lanes with AVX-512). The split is
//! autotile's rewrite ([`super::autotile::tile_block`]) with tile 1 on every
//! other index, and the tail is cut off with boundary's index shift. The
//! vectorized index indexes the written view, so every output element is
//! computed by exactly the points it was before, in the same order.
//!
//! Requires: a verified kernel. Guarantees: the same results; a verified
//! kernel (a rewrite that does not verify is dropped); blocks whose written
//! views have no stride-1 index of range at least the width are left alone.

use crate::passes::autotile::tile_block;
use crate::passes::boundary::shifted;
use crate::{Block, Pass, RefDir, Statement, StmtKind, Target};

#[derive(Debug)]
pub struct Vectorize;

impl Pass for Vectorize {
    fn name(&self) -> &'static str {
        "vectorize"
    }

    fn run(&self, root: &mut Block, target: &Target) -> Result<(), String> {
        let mut k = 0;
        while k < root.stmts.len() {
            let StmtKind::Block(b) = &root.stmts[k].kind else {
                k += 1;
                continue;
            };
            if b.is_library() {
                k += 1;
                continue;
            }
            let pieces = rewrite(b, target);
            let n = pieces.len();
            let tags = root.stmts[k].tags.clone();
            let new: Vec<Statement> = pieces
                .into_iter()
                .map(|p| Statement {
                    kind: StmtKind::Block(Box::new(p)),
                    tags: tags.clone(),
                })
                .collect();
            let old: Vec<Statement> = root.stmts.splice(k..=k, new).collect();
            // Keep the rewrite only if the whole kernel still verifies.
            if crate::verify_block(root).is_err() {
                root.stmts.splice(k..k + n, old);
                k += 1;
            } else {
                k += n;
            }
        }
        Ok(())
    }
}

/// The blocks that replace `b`: `b` itself with its children rewritten, or,
/// if `b` stores, its vectorized form and tail.
fn rewrite(b: &Block, target: &Target) -> Vec<Block> {
    if b.tags.contains("vector") || b.tags.contains("tail") {
        return vec![b.clone()];
    }
    if !b
        .stmts
        .iter()
        .any(|s| matches!(s.kind, StmtKind::Store { .. }))
    {
        let mut out = b.clone();
        let mut stmts = Vec::new();
        for s in &b.stmts {
            match &s.kind {
                StmtKind::Block(c) => {
                    stmts.extend(rewrite(c, target).into_iter().map(|p| Statement {
                        kind: StmtKind::Block(Box::new(p)),
                        tags: s.tags.clone(),
                    }))
                }
                _ => stmts.push(s.clone()),
            }
        }
        out.stmts = stmts;
        return vec![out];
    }
    vectorized(b, target).unwrap_or_else(|| vec![b.clone()])
}

/// `b` split into vectors along its stride-1 output index, and its tail.
fn vectorized(b: &Block, target: &Target) -> Option<Vec<Block>> {
    let out = b
        .refs
        .iter()
        .find(|r| r.from.is_some() && matches!(r.dir, RefDir::Out | RefDir::InOut))?;
    let (d, _) = out
        .shape
        .iter()
        .enumerate()
        .find(|(_, dim)| dim.stride == 1)?;
    let access = out.access.get(d)?;
    let lanes = u64::from(target.vector_bits / out.dtype.bits().max(8));
    if lanes < 2 {
        return None;
    }
    let k = b.idxs.iter().position(|ix| {
        ix.affine.is_none()
            && ix.range >= lanes
            && access.terms.len() == 1
            && access.terms.get(&ix.name) == Some(&1)
    })?;
    let x = b.idxs[k].name.clone();
    let range = b.idxs[k].range;
    let main = range / lanes * lanes;
    let body = if main == range {
        b.clone()
    } else {
        shifted(b, &x, 0, i64::try_from(main).ok()?)
    };
    let tile: Vec<u64> = body
        .idxs
        .iter()
        .enumerate()
        .map(|(j, ix)| {
            if j == k {
                lanes
            } else if ix.affine.is_some() {
                ix.range
            } else {
                1
            }
        })
        .collect();
    let mut outer = tile_block(&body, &tile);
    outer.tags.remove("tiled");
    outer.name = format!("{}_vec", b.name);
    for s in &mut outer.stmts {
        if let StmtKind::Block(inner) = &mut s.kind {
            inner.tags.insert("vector".to_string());
        }
    }
    let mut pieces = vec![outer];
    if main < range {
        let mut tail = shifted(
            b,
            &x,
            i64::try_from(main).ok()?,
            i64::try_from(range - main).ok()?,
        );
        tail.name = format!("{}_tail", b.name);
        tail.tags.insert("tail".to_string());
        pieces.push(tail);
    }
    Some(pieces)
}
