//! `parallelize`: marks, in each block directly under the root, the
//! outermost index whose iterations can run on different cores: the
//! verifier proves that it partitions the block's writes (no two values of
//! it write one element of any buffer, through any depth of child blocks;
//! see [`crate::partition`]), so reductions along other indices stay within
//! one partition. The index gets the tag `parallel` and the block the tag
//! `parallel`; the runtime partitions that index over the target's cores.
//!
//! Requires: a verified kernel. Guarantees: the same kernel up to tags (the
//! semantics ignore tags), a verified kernel: only an index the verifier's
//! partition proof accepts is tagged. Blocks that write nothing, or where
//! no index is proved to partition the writes, are left alone.

use rayon::prelude::*;

use crate::partition::StepProver;
use crate::{Block, Pass, StmtKind, Target};

#[derive(Debug)]
pub struct Parallelize;

impl Pass for Parallelize {
    fn name(&self) -> &'static str {
        "parallelize"
    }

    fn run(&self, root: &mut Block, _target: &Target) -> Result<(), String> {
        let prover = StepProver::new(root);
        // Steps are proved independently (each against the root), in
        // parallel.
        let choices: Vec<Option<usize>> = root
            .stmts
            .par_iter()
            .map(|s| match &s.kind {
                StmtKind::Block(b) if !b.is_library() => choice(&prover, &root.name, b),
                _ => None,
            })
            .collect();
        for (s, i) in root.stmts.iter_mut().zip(choices) {
            if let (StmtKind::Block(b), Some(i)) = (&mut s.kind, i) {
                b.idxs[i].tags.insert("parallel".to_string());
                b.tags.insert("parallel".to_string());
            }
        }
        Ok(())
    }
}

/// The outermost free index of `b` (a step of the root called `root`, whose
/// prover is `prover`) with more than one value that the verifier proves
/// partitions `b`'s writes, when `b` writes anything.
fn choice(prover: &StepProver, root: &str, b: &Block) -> Option<usize> {
    if !writes_anything(b) {
        return None;
    }
    let path = format!("{root}/{}", b.name);
    b.idxs.iter().enumerate().position(|(k, ix)| {
        ix.range > 1 && ix.affine.is_none() && prover.prove(b, k, &path).is_ok()
    })
}

/// Whether `b` or a block below it stores into anything.
fn writes_anything(b: &Block) -> bool {
    b.stmts.iter().any(|s| match &s.kind {
        StmtKind::Store { .. } => true,
        StmtKind::Block(c) => writes_anything(c),
        _ => false,
    })
}
