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
use crate::{Block, Pass, PassCx, StmtKind, Target};

#[derive(Debug)]
pub struct Parallelize;

impl Pass for Parallelize {
    fn name(&self) -> &'static str {
        "parallelize"
    }

    fn run(&self, root: &mut Block, target: &Target) -> Result<(), String> {
        self.run_with(root, &PassCx::defaults(target))
    }

    fn run_with(&self, root: &mut Block, cx: &PassCx) -> Result<(), String> {
        let prover = StepProver::new(root);
        // Steps are proved independently (each against the root), in
        // parallel.
        let choices: Vec<Option<Option<usize>>> = root
            .stmts
            .par_iter()
            .map(|s| match &s.kind {
                StmtKind::Block(b) if !b.is_library() && writes_anything(b) => {
                    let given = cx.given.step(&b.name).parallel;
                    Some(choice(&prover, &root.name, b, given.as_ref()))
                }
                _ => None,
            })
            .collect();
        for (s, i) in root.stmts.iter_mut().zip(choices) {
            let (StmtKind::Block(b), Some(i)) = (&mut s.kind, i) else {
                continue;
            };
            if let Some(i) = i {
                b.idxs[i].tags.insert("parallel".to_string());
                b.tags.insert("parallel".to_string());
            }
            let taken = i.map(|i| b.idxs[i].name.clone());
            cx.record(&b.name, |s| s.parallel = Some(taken));
        }
        Ok(())
    }
}

/// The index of `b` (a step of the root called `root`, whose prover is
/// `prover`) to partition: the `given` one (by name; none for `None`)
/// when the verifier proves it partitions `b`'s writes, else, when none
/// is given, the outermost free index with more than one value that it
/// proves does.
fn choice(
    prover: &StepProver,
    root: &str,
    b: &Block,
    given: Option<&Option<String>>,
) -> Option<usize> {
    let path = format!("{root}/{}", b.name);
    let proved = |k: usize| {
        let ix = &b.idxs[k];
        ix.range > 1 && ix.affine.is_none() && prover.prove(b, k, &path).is_ok()
    };
    match given {
        Some(Some(name)) => b
            .idxs
            .iter()
            .position(|ix| ix.name == *name)
            .filter(|&k| proved(k)),
        Some(None) => None,
        None => (0..b.idxs.len()).find(|&k| proved(k)),
    }
}

/// Whether `b` or a block below it stores into anything.
fn writes_anything(b: &Block) -> bool {
    b.stmts.iter().any(|s| match &s.kind {
        StmtKind::Store { .. } => true,
        StmtKind::Block(c) => writes_anything(c),
        _ => false,
    })
}
