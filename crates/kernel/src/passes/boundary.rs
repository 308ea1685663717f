//! `boundary`: splits a block whose constraints cut its iteration space
//! into an interior part, where no constraint can fail and so none is kept,
//! and edge parts that keep the constraints they still need.
//!
//! For each block directly under the root that has constraints, the pass
//! picks the first index `x` that the constraints mention, computes the
//! interior interval of `x` — the values for which every constraint
//! mentioning `x` holds for all values of the other indices — and replaces
//! the block by up to three copies whose `x` runs over `[0, lo)`, `[lo, hi)`
//! and `[hi, range)`: the copy's index starts at 0 again and every affine
//! form of the block and its children is shifted by the copy's start. Each
//! copy drops the constraints that hold everywhere in its own box.
//!
//! Requires: a verified kernel. Guarantees: the same points run with the
//! same statements in the same order of the other indices (the copies run
//! in order of `x`), so results are unchanged; a verified kernel; blocks
//! without constraints are left alone.

use std::collections::HashMap;

use crate::{Affine, Block, Pass, StmtKind, Target};

#[derive(Debug)]
pub struct Boundary;

impl Pass for Boundary {
    fn name(&self) -> &'static str {
        "boundary"
    }

    fn run(&self, root: &mut Block, _target: &Target) -> Result<(), String> {
        let mut out = Vec::new();
        for s in std::mem::take(&mut root.stmts) {
            match s.kind {
                StmtKind::Block(b) if !b.constraints.is_empty() && !b.is_library() => {
                    for piece in split(&b) {
                        out.push(crate::Statement {
                            kind: StmtKind::Block(Box::new(piece)),
                            tags: s.tags.clone(),
                        });
                    }
                }
                kind => out.push(crate::Statement { kind, tags: s.tags }),
            }
        }
        root.stmts = out;
        Ok(())
    }
}

fn ranges(b: &Block) -> HashMap<String, u64> {
    b.idxs.iter().map(|i| (i.name.clone(), i.range)).collect()
}

/// The pieces of `b` along its first constrained index.
fn split(b: &Block) -> Vec<Block> {
    let Some(x) = b.idxs.iter().find(|ix| {
        ix.affine.is_none()
            && ix.range > 1
            && b.constraints.iter().any(|c| c.terms.contains_key(&ix.name))
    }) else {
        return vec![b.clone()];
    };
    let range = i64::try_from(x.range).unwrap_or(i64::MAX);
    let all = ranges(b);
    // The interior: for each constraint c = a*x + rest, with rest bounded by
    // [rmin, rmax] over the other indices, a*x + rmin >= 0 must hold.
    let (mut lo, mut hi) = (0i64, range);
    for c in &b.constraints {
        let Some(&a) = c.terms.get(&x.name) else {
            continue;
        };
        let mut rest = c.clone();
        rest.terms.remove(&x.name);
        let Some((rmin, _)) = rest.bounds(&all) else {
            return vec![b.clone()];
        };
        if a > 0 {
            // x >= ceil(-rmin / a)
            lo = lo.max((-rmin + a - 1).div_euclid(a));
        } else {
            // -|a| x + rmin >= 0, so x <= floor(rmin / |a|)
            hi = hi.min(rmin.div_euclid(-a) + 1);
        }
    }
    let (lo, hi) = (lo.clamp(0, range), hi.clamp(0, range));
    if lo >= hi || (lo == 0 && hi == range) {
        return vec![b.clone()];
    }
    let mut pieces = Vec::new();
    for (start, end, tag) in [(0, lo, "edge"), (lo, hi, "interior"), (hi, range, "edge")] {
        if start < end {
            let mut p = shifted(b, &x.name, start, end - start);
            p.name = format!("{}_{tag}{start}", b.name);
            p.tags.insert(tag.to_string());
            let box_ranges = ranges(&p);
            p.constraints
                .retain(|c| c.bounds(&box_ranges).is_none_or(|(min, _)| min < 0));
            pieces.push(p);
        }
    }
    pieces
}

/// `b` with index `x` running over `[start, start + len)` as `x' in [0, len)`.
pub(crate) fn shifted(b: &Block, x: &str, start: i64, len: i64) -> Block {
    let shift =
        |a: &Affine| a.subst(&|n| (n == x).then(|| Affine::index(x).add(&Affine::constant(start))));
    let mut p = b.clone();
    for ix in &mut p.idxs {
        if ix.name == x {
            ix.range = u64::try_from(len).unwrap_or(0);
        }
    }
    p.constraints = p.constraints.iter().map(shift).collect();
    for r in &mut p.refs {
        r.access = r.access.iter().map(shift).collect();
    }
    for s in &mut p.stmts {
        match &mut s.kind {
            StmtKind::LoadIndex { from, .. } => *from = shift(from),
            StmtKind::Block(c) => {
                for ix in &mut c.idxs {
                    if let Some(a) = &mut ix.affine {
                        *a = shift(a);
                    }
                }
            }
            _ => {}
        }
    }
    p
}
