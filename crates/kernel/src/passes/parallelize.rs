//! `parallelize`: marks, in each block directly under the root, the
//! outermost index whose iterations can run on different cores: every view
//! the block writes is indexed by it (so different values of the index
//! write disjoint elements, and reductions along other indices stay within
//! one partition). The index gets the tag `parallel` and the block the tag
//! `parallel`; the runtime partitions that index over the target's cores.
//!
//! Requires: a verified kernel. Guarantees: the same kernel up to tags (the
//! semantics ignore tags), a verified kernel. Blocks that write through
//! children only, or whose writes do not all depend on one index, are left
//! alone.

use crate::{Block, Pass, RefDir, StmtKind, Target};

#[derive(Debug)]
pub struct Parallelize;

impl Pass for Parallelize {
    fn name(&self) -> &'static str {
        "parallelize"
    }

    fn run(&self, root: &mut Block, _target: &Target) -> Result<(), String> {
        for s in &mut root.stmts {
            if let StmtKind::Block(b) = &mut s.kind {
                if b.is_library() {
                    continue;
                }
                mark(b);
            }
        }
        Ok(())
    }
}

fn mark(b: &mut Block) {
    let written: Vec<_> = b
        .refs
        .iter()
        .filter(|r| r.from.is_some() && matches!(r.dir, RefDir::Out | RefDir::InOut))
        .collect();
    if written.is_empty() {
        return;
    }
    let choice = b.idxs.iter().position(|ix| {
        ix.range > 1
            && ix.affine.is_none()
            && written.iter().all(|r| {
                r.access
                    .iter()
                    .any(|a| a.terms.get(&ix.name).is_some_and(|c| *c != 0))
            })
    });
    if let Some(k) = choice {
        b.idxs[k].tags.insert("parallel".to_string());
        b.tags.insert("parallel".to_string());
    }
}
