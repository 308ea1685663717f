//! `vectorize`: in every block that stores (the blocks that compute), picks
//! the index that moves along the stride-1 dimension of the written view and
//! splits it into vectors of the target's width: the block becomes an outer
//! block over everything else and the vector number, and an inner block of
//! `width` lanes tagged `#vector` (the C backend emits one vector loop for
//! it). When the width does not divide the range, the remainder runs in a
//! separate tail block (tagged `#tail`) after the vectorized one.
//!
//! The width is the target's vector register size over the element size of
//! the written view (16 `float32` lanes with AVX-512), or a narrower one
//! the step's `width` option gives (the C backend then masks the lanes
//! off that it does not use). An index shorter
//! than the width, but at least a quarter of it, is one partial vector (a
//! 14-wide image row: 14 of 16 lanes), and so is a tail of at least a
//! quarter of the width.
//!
//! Register blocking: the vector block of a block with a reduction index
//! (its own, or one of a block nested in it) also takes a tile of one other
//! index, jammed with the lanes, when the reads of the block's nest that
//! depend on that index do not depend on the lanes (broadcasts) and some
//! read that depends on the lanes does not depend on it (one vector load
//! then serves every jammed point): the filter index of a convolution, the
//! row index of a matmul, the output column of a channel-blocked
//! convolution. Only the reduction's reads (those in a nested block or
//! depending on a reduction index) decide: a read outside it, such as a
//! fused epilogue's residual, runs once per output point whatever it
//! loads. The tile is sized by the target's register and pipeline model.
//! It holds one vector register per jammed point's accumulator, one per
//! vector the reduction loads once for all points, and one for the
//! broadcast value, all within [`Target::vector_registers`] (up to 30
//! points on AVX-512's 32 `zmm` registers, 14 on AVX2's 16 `ymm`). Within
//! that, it is the smallest divisor of the range with at least
//! [`Target::fma_latency`] x [`Target::fma_pipes`] points, the independent
//! multiply-adds that keep the vector units busy (an index whose range
//! allows that is preferred to an inner one whose range does not): more
//! points add no throughput, only more broadcast rows live in the
//! first-level cache at once (on Zen 4, 8-point jams of a 56-wide convolution row ran 7% faster
//! than 28-point ones, and a 16-point jam across images 4 KiB apart, all
//! in one cache set, half as fast as an 8-point one). `interchange` then keeps one accumulator row per jammed point,
//! and the C backend emits the jammed loop inside the vector code,
//! computing the shared vector once.
//!
//! The step's `jam` option gives the register block instead: any output
//! indices other than the lanes', each with its points, outermost first
//! (`jam h=2 w=7`: a block of two output rows by seven columns, each
//! point a vector of lanes), or none. In the vector block the jammed
//! indices then run in that order, inside the indices of one point,
//! with the lanes innermost; a block of two or more jammed indices tags
//! them `#jam`, so that the C backend unrolls them together.
//!
//! The split is autotile's rewrite ([`super::autotile::tile_block`]) with
//! tile 1 on every other index, and the tail is cut off with boundary's
//! index shift. The vectorized index indexes the written view, so every
//! output element is computed by exactly the points it was before, in the
//! same order.
//!
//! Requires: a verified kernel. Guarantees: the same results; a verified
//! kernel (a rewrite that does not verify is dropped); blocks whose written
//! views have no stride-1 index of range at least a quarter of the width
//! are left alone.

use std::collections::{HashMap, HashSet};

use crate::pass::rewrite_each_step;
use crate::passes::autotile::{has_reduction, tile_block};
use crate::passes::boundary::shifted;
use crate::{Block, Pass, PassCx, RefDir, Statement, StepOptions, StmtKind, Target};

/// A stride-1 index shorter than the width is vectorized when it fills at
/// least this fraction of a vector (the rest of the lanes are masked off).
const PARTIAL: u64 = 4;

/// The fewest points worth jamming: below it the vector loads saved do
/// not pay for the jammed loop.
const MIN_JAM: u64 = 4;

#[derive(Debug)]
pub struct Vectorize;

impl Pass for Vectorize {
    fn name(&self) -> &'static str {
        "vectorize"
    }

    fn run(&self, root: &mut Block, target: &Target) -> Result<(), String> {
        self.run_with(root, &PassCx::defaults(target))
    }

    fn run_with(&self, root: &mut Block, cx: &PassCx) -> Result<(), String> {
        rewrite_each_step(root, |step, check| {
            let StmtKind::Block(b) = &step.kind else {
                return vec![step];
            };
            if b.is_library() {
                return vec![step];
            }
            let given = cx.given.step(&b.name);
            let mut taken = StepOptions::default();
            let pieces = rewrite(b, cx.target, &given, &mut taken);
            // Keep the rewrite only if every piece verifies as a step of
            // the root, which is the kernel verifying with them.
            if pieces.iter().all(|p| check.verify(p).is_ok()) {
                if taken.vectorize.is_some() {
                    cx.record(&b.name, |s| {
                        s.vectorize = taken.vectorize;
                        s.width = taken.width;
                        s.jam = taken.jam;
                    });
                }
                pieces
                    .into_iter()
                    .map(|p| Statement {
                        kind: StmtKind::Block(Box::new(p)),
                        tags: step.tags.clone(),
                    })
                    .collect()
            } else {
                if taken.vectorize.is_some() {
                    cx.record(&b.name, |s| s.vectorize = Some(false));
                }
                vec![step]
            }
        });
        Ok(())
    }
}

/// The blocks that replace `b`: `b` itself with its children rewritten, or,
/// if `b` stores, its vectorized form and tail. `given` are the step's
/// options; `taken` records whether it was vectorized, and its jam.
fn rewrite(b: &Block, target: &Target, given: &StepOptions, taken: &mut StepOptions) -> Vec<Block> {
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
                StmtKind::Block(c) => stmts.extend(
                    rewrite(c, target, given, taken)
                        .into_iter()
                        .map(|p| Statement {
                            kind: StmtKind::Block(Box::new(p)),
                            tags: s.tags.clone(),
                        }),
                ),
                _ => stmts.push(s.clone()),
            }
        }
        out.stmts = stmts;
        return vec![out];
    }
    let pieces = if given.vectorize == Some(false) {
        None
    } else {
        vectorized(b, target, given, taken)
    };
    if taken.vectorize.is_none() {
        taken.vectorize = Some(pieces.is_some());
    }
    pieces.unwrap_or_else(|| vec![b.clone()])
}

/// `b` split into vectors along its stride-1 output index, and its tail.
fn vectorized(
    b: &Block,
    target: &Target,
    given: &StepOptions,
    taken: &mut StepOptions,
) -> Option<Vec<Block>> {
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
    let most = u64::from(target.vector_bits / out.dtype.bits().max(8));
    // A given width narrower than the target's; recorded when taken.
    let lanes = match given.width {
        Some(w) if w < most => {
            taken.width = Some(w);
            w
        }
        _ => most,
    };
    if lanes < 2 {
        return None;
    }
    let k = b.idxs.iter().position(|ix| {
        ix.affine.is_none()
            && ix.range >= lanes / PARTIAL
            && access.terms.len() == 1
            && access.terms.get(&ix.name) == Some(&1)
    })?;
    let x = b.idxs[k].name.clone();
    let range = b.idxs[k].range;
    // A range below the width is one partial vector.
    let width = lanes.min(range);
    let main = range / width * width;
    let body = if main == range {
        b.clone()
    } else {
        shifted(b, &x, 0, i64::try_from(main).ok()?)
    };
    // Without a reduction nothing stays in registers across the jammed
    // points, and jamming makes the stores walk down columns, one row a
    // page apart (a bias broadcast ran twice as slow).
    let jam: Vec<(usize, u64)> = match &given.jam {
        // A given jam is output indices other than the lanes', so every
        // jammed point keeps an accumulator of its own.
        Some(list) => {
            let mut jam: Vec<(usize, u64)> = Vec::new();
            for (name, t) in list {
                let j = b.idxs.iter().position(|ix| {
                    ix.name == *name
                        && ix.affine.is_none()
                        && out.access.iter().any(|a| a.terms.contains_key(name))
                });
                if let Some(j) = j.filter(|&j| j != k && jam.iter().all(|(o, _)| *o != j)) {
                    jam.push((j, (*t).clamp(1, b.idxs[j].range)));
                }
            }
            jam
        }
        None if has_reduction(b) => jam_index(b, k, target).into_iter().collect(),
        None => Vec::new(),
    };
    if taken.jam.is_none() {
        taken.jam = Some(
            jam.iter()
                .map(|&(j, t)| (b.idxs[j].name.clone(), t))
                .collect(),
        );
    }
    // A jammed index whose tile does not divide it: the whole tiles and
    // the points left over are two blocks, each vectorized (and split
    // again along the next such index).
    for &(j, t) in &jam {
        let (name, r) = (b.idxs[j].name.clone(), b.idxs[j].range);
        if r % t != 0 {
            let main = r / t * t;
            let (m, rest) = (i64::try_from(main).ok()?, i64::try_from(r - main).ok()?);
            let mut pieces = vectorized(&shifted(b, &name, 0, m), target, given, taken)?;
            let mut left = shifted(b, &name, m, rest);
            left.name = format!("{}_rest", b.name);
            pieces.extend(
                vectorized(&left, target, given, taken).unwrap_or_else(|| vec![left.clone()]),
            );
            return Some(pieces);
        }
    }
    let tile: Vec<u64> = body
        .idxs
        .iter()
        .enumerate()
        .map(|(j, ix)| {
            if j == k {
                width
            } else if ix.affine.is_some() {
                ix.range
            } else if let Some((_, t)) = jam.iter().find(|(at, _)| *at == j) {
                *t
            } else {
                1
            }
        })
        .collect();
    let mut outer = tile_block(&body, &tile);
    outer.tags.remove("tiled");
    outer.name = format!("{}_vec", b.name);
    let innermost: Vec<String> = jam
        .iter()
        .map(|&(j, _)| b.idxs[j].name.clone())
        .chain([x.clone()])
        .collect();
    for s in &mut outer.stmts {
        if let StmtKind::Block(inner) = &mut s.kind {
            inner.tags.insert("vector".to_string());
            lanes_innermost(inner, &innermost);
            // A register block of several indices is tagged so (the C
            // backend unrolls them all; `interchange` keeps the tags).
            if jam.len() > 1 {
                for ix in &mut inner.idxs {
                    if ix.affine.is_none() && innermost[..jam.len()].contains(&ix.name) {
                        ix.tags.insert("jam".to_string());
                    }
                }
            }
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
        // A tail of at least a quarter of the width is a partial vector.
        match vectorized(&tail, target, given, taken) {
            Some(mut vector) => {
                for p in &mut vector {
                    p.tags.insert("tail".to_string());
                }
                pieces.extend(vector);
            }
            None => pieces.push(tail),
        }
    }
    Some(pieces)
}

/// Puts the vector block's loops of more than one point in the order
/// `innermost` (the jammed indices, outermost first, then the lanes), as
/// the C backend's vector code takes them, whatever order the step's loops
/// were given; the other indices (of one point) keep their places. A
/// block already so is left as it is.
fn lanes_innermost(inner: &mut Block, innermost: &[String]) {
    let looped: Vec<&str> = inner
        .idxs
        .iter()
        .filter(|ix| ix.affine.is_none() && ix.range > 1)
        .map(|ix| ix.name.as_str())
        .collect();
    if looped
        .iter()
        .copied()
        .eq(innermost.iter().map(String::as_str))
    {
        return;
    }
    let (mut moved, mut kept): (Vec<_>, Vec<_>) = std::mem::take(&mut inner.idxs)
        .into_iter()
        .partition(|ix| ix.affine.is_none() && innermost.contains(&ix.name));
    moved.sort_by_key(|ix| innermost.iter().position(|n| *n == ix.name));
    let passed = kept
        .iter()
        .position(|ix| ix.affine.is_some())
        .unwrap_or(kept.len());
    let rest = kept.split_off(passed);
    inner.idxs = kept.into_iter().chain(moved).chain(rest).collect();
}

/// The index to jam with the lanes (and its tile): the lanes' registers are
/// then reused across the jammed points. It is an index of `b` before lane
/// index `lane` such that every read of `b`'s nest that depends on it does
/// not depend on the lane index (those are broadcasts), and some read that
/// depends on the lane index does not depend on it (that vector is loaded
/// once for all jammed points), as a register-blocked matmul or
/// convolution has it. Its tile is a divisor of its range from [`MIN_JAM`]
/// up to the accumulators that fit in the target's vector registers
/// beside the shared vectors and a broadcast: the smallest that keeps the
/// multiply-add pipes busy, else the largest (or, when there is no such
/// divisor, the tile leaving the fewest points over); among several such
/// indices, the innermost whose tile keeps the pipes busy, else the
/// innermost: its broadcasts are neighbours in memory (a blocked
/// convolution's output column, not its batch index, whose images lie
/// megabytes apart), but an output row of 4 columns jams only 4 points,
/// half of what AVX-512's two pipes need, and then the batch index's 8 are
/// worth the scattered rows (DCGAN's 512-to-256 convolutions over 4x4
/// images: 2.1 ms jammed by column, 1.25 ms by image).
fn jam_index(b: &Block, lane: usize, target: &Target) -> Option<(usize, u64)> {
    let registers = u64::from(target.vector_registers);
    let busy = u64::from(target.fma_latency) * u64::from(target.fma_pipes);
    // Reads outside the reduction (an epilogue's residual, a prologue's
    // bias) run once per output point, so a vector load per jammed point
    // costs them nothing: only the reduction's reads decide.
    let written: HashSet<&str> = b
        .refs
        .iter()
        .filter(|r| matches!(r.dir, RefDir::Out | RefDir::InOut))
        .flat_map(|r| r.access.iter().flat_map(|a| a.terms.keys()))
        .map(String::as_str)
        .collect();
    let deps: Vec<HashSet<String>> = read_deps(b)
        .into_iter()
        .filter(|(d, nested)| *nested || d.iter().any(|i| !written.contains(i.as_str())))
        .map(|(d, _)| d)
        .collect();
    let x = &b.idxs[lane].name;
    let mut best: Option<(usize, u64)> = None;
    for (j, ix) in b.idxs.iter().enumerate().take(lane) {
        if ix.affine.is_some() || ix.range < 2 {
            continue;
        }
        let n = &ix.name;
        let broadcast = deps.iter().all(|d| !d.contains(n) || !d.contains(x));
        let shared = deps
            .iter()
            .filter(|d| d.contains(x) && !d.contains(n))
            .count() as u64;
        let accumulators = registers.saturating_sub(shared + 1);
        let tiles = MIN_JAM..=accumulators.min(ix.range);
        let divides = |t: &u64| ix.range % t == 0;
        let divisor = tiles
            .clone()
            .filter(divides)
            .find(|t| *t >= busy)
            .or_else(|| tiles.clone().rev().find(divides));
        // Without a divisor (a 38-wide row), the tile that leaves the
        // fewest points over, the larger on ties; `vectorized` runs those
        // as a block of their own.
        let least_left = || tiles.clone().min_by_key(|t| (ix.range % t, u64::MAX - t));
        let Some(t) = divisor.or_else(least_left) else {
            continue;
        };
        let better = best.is_none_or(|(_, b)| t >= busy || b < busy);
        if broadcast && shared > 0 && better {
            best = Some((j, t));
        }
    }
    best
}

/// For every load and gather in `b`'s nest, the indices of `b` (not passed
/// ones) that the element it reads depends on, and whether it is in a
/// block nested in `b`.
fn read_deps(b: &Block) -> Vec<(HashSet<String>, bool)> {
    let idx: HashMap<String, HashSet<String>> = b
        .idxs
        .iter()
        .map(|i| {
            let own = if i.affine.is_none() {
                HashSet::from([i.name.clone()])
            } else {
                HashSet::new()
            };
            (i.name.clone(), own)
        })
        .collect();
    let views: HashMap<String, HashSet<String>> = b
        .refs
        .iter()
        .filter_map(|r| r.from.clone())
        .map(|f| (f, HashSet::new()))
        .collect();
    let mut out = Vec::new();
    walk(b, &idx, &views, false, &mut out);
    out
}

fn walk(
    b: &Block,
    idx: &HashMap<String, HashSet<String>>,
    views: &HashMap<String, HashSet<String>>,
    nested: bool,
    out: &mut Vec<(HashSet<String>, bool)>,
) {
    let mut mine: HashMap<String, HashSet<String>> = HashMap::new();
    for r in &b.refs {
        let Some(parent) = r.from.as_ref().and_then(|f| views.get(f)) else {
            continue;
        };
        let mut d = parent.clone();
        for a in &r.access {
            for t in a.terms.keys() {
                d.extend(idx.get(t).cloned().unwrap_or_default());
            }
        }
        mine.insert(r.into.clone(), d);
    }
    for s in &b.stmts {
        match &s.kind {
            StmtKind::Load { from, .. } | StmtKind::Gather { from, .. } => {
                if let Some(d) = mine.get(from) {
                    out.push((d.clone(), nested));
                }
            }
            StmtKind::Block(c) => {
                let cidx = c
                    .idxs
                    .iter()
                    .map(|i| {
                        let d: HashSet<String> = i.affine.as_ref().map_or_else(HashSet::new, |a| {
                            a.terms
                                .keys()
                                .flat_map(|t| idx.get(t).cloned().unwrap_or_default())
                                .collect()
                        });
                        (i.name.clone(), d)
                    })
                    .collect();
                walk(c, &cidx, &mine, true, out);
            }
            _ => {}
        }
    }
}
