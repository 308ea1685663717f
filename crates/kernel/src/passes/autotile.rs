//! `autotile`: splits each comprehension block into an outer block over
//! tiles and an inner block over the points of one tile (Stripe §3.3,
//! Figures 4 and 5), with tile sizes chosen by a cache cost model.
//!
//! The cost of a tiling ([`tile_cost`]) is the number of cache lines that
//! the tiles of all refinements touch in one outer iteration, divided by the
//! number of useful points (multiply-accumulates) one outer iteration runs
//! on average. A refinement's tile spans, in each dimension, its view size
//! plus `|coef| * (tile - 1)` for every index of the access form, so halos
//! of convolutions and the overflow of partial tiles are counted as Stripe's
//! figure counts them. Lines are the product of the tile's extents in every
//! dimension but the one with the smallest stride, times the lines that
//! dimension's run of elements touches: `ceil(extent / line)` when the run
//! provably starts on a line boundary (stride 1, every other stride and
//! every tile offset a multiple of the line), otherwise the worst case over
//! alignments, `1 + ceil((span - 1) / line)`, bounded by one line per
//! element. Overlapping views of one buffer are counted once per view. The
//! total elements of all tiles must not exceed a cap: the cache level's
//! per-core share over the widest element.
//!
//! Tiling is nested, one level per cache level of the target (the first
//! two: L1 and L2): the block is tiled for L2, and the inner block (one L2
//! tile) is tiled again for L1. A level whose best tile is the whole range
//! adds nothing. When the nest does not verify, L1 alone is tried. [`best_tile`] searches tile
//! sizes that are powers of two or divisors of each range, exhaustively
//! when there are few combinations and best-first otherwise.
//!
//! The rewrite ([`tile_block`]) gives the outer block one index per tiled
//! index (range `ceil(range / tile)`), and refinements that view each tile
//! of the block's buffers: the access is the tile's first element in terms
//! of the outer indices, the sizes are the tile's extents, the strides are
//! unchanged. A dimension whose tile view would leave the region the block
//! addresses (a halo at a padded edge, the overflow of a partial tile) is
//! kept whole in the outer view instead. The inner block has the tile
//! indices (with the original names), the outer indices passed explicitly
//! (`x_o:1 = x`), the original constraints and `index(...)` forms rewritten
//! in terms of `tile * x_o + x`, an overflow constraint
//! `range - 1 - (tile * x_o + x) >= 0` wherever the tile does not divide the
//! range, and the original single-element refinements, now refining the
//! outer block's tile views. The outer block is tagged `#tiled`.
//!
//! Requires: a verified kernel. The pass tiles the children of the root
//! that have a reduction index of range above 1 (elementwise blocks have
//! no reuse to capture) and whose best tile is not the whole range; their child blocks (guards, calls) move into the inner block, with
//! their passed forms rewritten in terms of `tile * x_o + x`. It only picks
//! tilings under which every `Assign` output is tiled in every dimension
//! that varies between tiles, so that tiles write disjoint elements.
//! Guarantees: the same points run with the same statements (the VM's float
//! reductions may run in another order, so results agree up to rounding),
//! and a verified kernel: a tiled block the verifier cannot prove is left
//! untiled.
//!
//! Limitations: the cost model prices the tile extents even where the
//! rewrite keeps a dimension whole (padded edges, partial tiles), so such
//! tilings hold more than the cap in their outer views; reductions split
//! across tiles cost nothing extra; the region a view addresses is narrowed
//! only by constraints on its own access form (lowering's skip
//! constraints), so other cut spaces fall back to whole views or, when the
//! verifier rejects the result, to no tiling.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap, HashSet};

use crate::pass::rewrite_each_block;
use crate::{
    Affine, Agg, Block, Dim, Index, Pass, PassCx, RefDir, Refinement, StmtKind, Tags, Target,
};

/// The most tilings [`best_tile`] enumerates exhaustively; above it, it
/// searches best-first with this many expansions.
const SEARCH_LIMIT: u64 = 1 << 16;

#[derive(Debug)]
pub struct Autotile;

impl Pass for Autotile {
    fn name(&self) -> &'static str {
        "autotile"
    }

    fn run(&self, root: &mut Block, target: &Target) -> Result<(), String> {
        self.run_with(root, &PassCx::defaults(target))
    }

    fn run_with(&self, root: &mut Block, cx: &PassCx) -> Result<(), String> {
        rewrite_each_block(root, |b, check| {
            let name = b.name.clone();
            let mut nest = Vec::new();
            loops(b, &mut nest);
            cx.record_indices(&name, nest);
            let given = cx.given.step(&name);
            if let Some(order) = &given.order {
                let mut reordered = b.clone();
                reorder(&mut reordered, order);
                if check.verify(&reordered).is_ok() {
                    *b = reordered;
                    let mut taken = Vec::new();
                    loops(b, &mut taken);
                    let taken: Vec<String> = taken
                        .into_iter()
                        .flatten()
                        .map(|(i, _)| i)
                        .filter(|i| order.contains(i))
                        .collect();
                    cx.record(&name, |s| s.order = Some(taken));
                }
            }
            let taken = match given.tiles {
                Some(levels) => {
                    let (tiled, taken) = tile_given(b, &levels);
                    if tiled != *b && check.verify(&tiled).is_ok() {
                        *b = tiled;
                        taken
                    } else {
                        Vec::new()
                    }
                }
                None if !has_reduction(b) => return,
                None => {
                    let levels = budgets(b, cx.target);
                    // Every level if that verifies, else the innermost level
                    // alone.
                    let attempts = [&levels[..], &levels[levels.len().saturating_sub(1)..]];
                    let mut taken = Vec::new();
                    for caps in attempts {
                        let (tiled, levels) = tile_levels(b, caps);
                        if tiled != *b && check.verify(&tiled).is_ok() {
                            *b = tiled;
                            taken = levels;
                            break;
                        }
                    }
                    taken
                }
            };
            cx.record(&name, |s| s.tiles = Some(taken));
        });
        Ok(())
    }
}

/// The free indices and ranges of every block of `b`'s nest, `b`'s own
/// first, then its children's, depth first: the loops an `order` option
/// permutes.
fn loops(b: &Block, out: &mut Vec<Vec<(String, u64)>>) {
    let free: Vec<(String, u64)> = b
        .idxs
        .iter()
        .filter(|ix| ix.affine.is_none())
        .map(|ix| (ix.name.clone(), ix.range))
        .collect();
    if !free.is_empty() {
        out.push(free);
    }
    for s in &b.stmts {
        if let StmtKind::Block(c) = &s.kind {
            loops(c, out);
        }
    }
}

/// Puts the free indices of every block of `b`'s nest that `order` names in
/// its order, in the places they held. A block's points are a parallel
/// iteration space, so its loops may run in any order; only the order of a
/// reduction's additions changes (and the results up to rounding).
fn reorder(b: &mut Block, order: &[String]) {
    let rank = |ix: &Index| order.iter().position(|o| *o == ix.name);
    let places: Vec<usize> = (0..b.idxs.len())
        .filter(|&k| b.idxs[k].affine.is_none() && rank(&b.idxs[k]).is_some())
        .collect();
    let mut named: Vec<Index> = places.iter().map(|&k| b.idxs[k].clone()).collect();
    named.sort_by_key(|ix| rank(ix));
    for (k, ix) in places.into_iter().zip(named) {
        b.idxs[k] = ix;
    }
    for s in &mut b.stmts {
        if let StmtKind::Block(c) = &mut s.kind {
            reorder(c, order);
        }
    }
}

/// Tiles `b` for each cache level in `caps` (line and cap in elements),
/// outermost level first: the tile for the first level, then, inside it,
/// the tile of that tile for the next. A level whose best tile is the whole
/// range adds no block. Also gives the tiles of the levels that added one.
fn tile_levels(b: &Block, caps: &[(u64, u64)]) -> (Block, Vec<Vec<(String, u64)>>) {
    let Some((&(line, cap), rest)) = caps.split_first() else {
        return (b.clone(), Vec::new());
    };
    let (tile, _) = search(b, line, cap, &|t| assign_outputs_split(b, t));
    nest(b, tile, |inner| tile_levels(inner, rest))
}

/// Tiles `b` with the given tiles, one level per entry of `levels` (each
/// index's tile by name, its whole range when left out), skipping a level
/// that tiles nothing or under which tiles would write the same elements.
/// Also gives the tiles of the levels that added a block.
fn tile_given(b: &Block, levels: &[Vec<(String, u64)>]) -> (Block, Vec<Vec<(String, u64)>>) {
    let Some((level, rest)) = levels.split_first() else {
        return (b.clone(), Vec::new());
    };
    let tile: Vec<u64> = b
        .idxs
        .iter()
        .map(|ix| {
            level
                .iter()
                .find(|(n, _)| *n == ix.name)
                .map_or(ix.range, |(_, t)| (*t).clamp(1, ix.range.max(1)))
        })
        .collect();
    if !assign_outputs_split(b, &tile) {
        return tile_given(b, rest);
    }
    nest(b, tile, |inner| tile_given(inner, rest))
}

/// `b` tiled by `tile`, with `inner` tiling the inner block further; the
/// tiles of every level that added a block, outermost first (an index's
/// tile listed where it is less than its range).
fn nest(
    b: &Block,
    tile: Vec<u64>,
    inner: impl FnOnce(&Block) -> (Block, Vec<Vec<(String, u64)>>),
) -> (Block, Vec<Vec<(String, u64)>>) {
    let ranges: Vec<u64> = b.idxs.iter().map(|i| i.range).collect();
    if tile == ranges {
        return inner(b);
    }
    let level: Vec<(String, u64)> = b
        .idxs
        .iter()
        .zip(&tile)
        .filter(|(ix, &t)| t < ix.range)
        .map(|(ix, &t)| (ix.name.clone(), t))
        .collect();
    let mut outer = tile_block(b, &tile);
    let mut levels = vec![level];
    if let Some(StmtKind::Block(block)) = outer.stmts.first_mut().map(|s| &mut s.kind) {
        let (tiled, more) = inner(block);
        **block = tiled;
        levels.extend(more);
    }
    (outer, levels)
}

/// Whether the pass tiles `b`: it, or a block nested in it (a fused
/// reduction), has a reduction index of range above 1 (one that no written
/// view's access mentions). Without one, every point writes its own
/// elements and reads each input element about once: there is no reuse for
/// tiles to capture, and tiling would only cut the stride-1 runs that
/// streaming code needs (a bias broadcast tiled by columns ran 30 times
/// slower).
pub(crate) fn has_reduction(b: &Block) -> bool {
    let written: Vec<&Refinement> = b
        .refs
        .iter()
        .filter(|r| r.from.is_some() && matches!(r.dir, RefDir::Out | RefDir::InOut))
        .collect();
    let reduces = b.idxs.iter().any(|i| {
        i.range > 1
            && i.affine.is_none()
            && !written
                .iter()
                .any(|r| r.access.iter().any(|a| a.terms.contains_key(&i.name)))
    });
    reduces
        || b.stmts.iter().any(|s| match &s.kind {
            StmtKind::Block(c) => has_reduction(c),
            _ => false,
        })
}

/// The cache line in elements and the cap on tile elements for `b` on
/// `target`, for the first two cache levels, outermost first: each level's
/// line and its per-core share of the size, over the widest element `b`
/// refines. With no caches, one level without a cap.
fn budgets(b: &Block, target: &Target) -> Vec<(u64, u64)> {
    let bytes = b
        .refs
        .iter()
        .map(|r| u64::from(r.dtype.bits().div_ceil(8)).max(1))
        .max()
        .unwrap_or(1);
    let mut levels: Vec<(u64, u64)> = target
        .caches
        .iter()
        .take(2)
        .map(|c| {
            let share = c.size_bytes / u64::from(c.shared_by.max(1));
            ((c.line_bytes / bytes).max(1), (share / bytes).max(1))
        })
        .collect();
    levels.reverse();
    if levels.is_empty() {
        levels.push((1, u64::MAX));
    }
    levels
}

/// The tile of index `k` of `b` for the requested `tile`: at least 1, at
/// most the range.
fn clamp(b: &Block, tile: &[u64], k: usize) -> u64 {
    tile.get(k)
        .copied()
        .unwrap_or(b.idxs[k].range)
        .clamp(1, b.idxs[k].range.max(1))
}

/// How one dimension of a refinement is viewed by the outer block.
struct DimPlan {
    /// The view's offset in terms of the outer block's indices, which have
    /// the original indices' names (the inner block refers to them by their
    /// passed names).
    offset: Affine,
    /// The view's size.
    size: u64,
    /// Whether the view follows the tile (otherwise it is the whole region
    /// the block addresses, at a constant offset).
    tiled: bool,
    /// The tile's extent in this dimension, halo and overflow included.
    extent: u64,
}

/// A tiling of a block, by index name.
struct Tiling<'a> {
    b: &'a Block,
    /// Each index's range.
    ranges: HashMap<String, u64>,
    /// Each index's tile.
    tiles: HashMap<&'a str, u64>,
    /// Each index's number of tiles.
    outer: HashMap<String, u64>,
}

impl<'a> Tiling<'a> {
    fn new(b: &'a Block, tile: &[u64]) -> Tiling<'a> {
        let tiles: HashMap<&str, u64> = (0..b.idxs.len())
            .map(|k| (b.idxs[k].name.as_str(), clamp(b, tile, k)))
            .collect();
        Tiling {
            b,
            ranges: b.idxs.iter().map(|i| (i.name.clone(), i.range)).collect(),
            outer: b
                .idxs
                .iter()
                .map(|i| (i.name.clone(), i.range.div_ceil(tiles[i.name.as_str()])))
                .collect(),
            tiles,
        }
    }
}

/// Plans the outer view of refinement `r` under tiling `g`, dimension by
/// dimension.
fn plan(g: &Tiling, r: &Refinement) -> Vec<DimPlan> {
    let (b, ranges, tiles, outer) = (g.b, &g.ranges, &g.tiles, &g.outer);
    r.access
        .iter()
        .zip(&r.shape)
        .map(|(a, dim)| {
            let mut offset = Affine::constant(a.constant);
            let mut extent = dim.size;
            for (n, &c) in &a.terms {
                let t = tiles.get(n.as_str()).copied().unwrap_or(1);
                if outer.get(n).copied().unwrap_or(1) > 1 {
                    offset.add_term(n, c.saturating_mul(t as i64));
                }
                if c < 0 {
                    offset.constant += c.saturating_mul(t as i64 - 1);
                }
                extent += c.unsigned_abs().saturating_mul(t - 1);
            }
            let (lo, hi) = region(b, a, dim.size, ranges);
            let tiled = match offset.bounds(outer) {
                Some((omin, omax)) => omin >= lo && omax.saturating_add(extent as i64) <= hi,
                None => false,
            };
            if tiled {
                DimPlan {
                    offset,
                    size: extent,
                    tiled,
                    extent,
                }
            } else {
                DimPlan {
                    offset: Affine::constant(lo),
                    size: u64::try_from(hi - lo).unwrap_or(0).max(1),
                    tiled,
                    extent,
                }
            }
        })
        .collect()
}

/// The elements `[lo, hi)` that views at offset `a` of size `size` cover
/// over the points of `b`: the interval over the index box, narrowed by
/// constraints that bound `a` itself (as lowering's skip constraints do).
fn region(b: &Block, a: &Affine, size: u64, ranges: &HashMap<String, u64>) -> (i64, i64) {
    let (mut lo, hi) = a.bounds(ranges).unwrap_or((a.constant, a.constant));
    let mut hi = hi + size as i64;
    for g in &b.constraints {
        if g.terms.is_empty() {
            continue;
        }
        if g.terms == a.terms {
            lo = lo.max(a.constant - g.constant);
        } else if g.scale(-1).terms == a.terms {
            hi = hi.min(a.constant + g.constant + size as i64);
        }
    }
    (lo, hi.max(lo + 1))
}

/// Whether every `Assign` output of `b` is tiled, under `tile`, in each
/// dimension whose access varies between tiles (so tiles write disjoint
/// elements).
fn assign_outputs_split(b: &Block, tile: &[u64]) -> bool {
    let g = Tiling::new(b, tile);
    b.refs
        .iter()
        .filter(|r| r.from.is_some() && r.agg == Agg::Assign)
        .filter(|r| matches!(r.dir, RefDir::Out | RefDir::InOut))
        .all(|r| {
            plan(&g, r).iter().zip(&r.access).all(|(p, a)| {
                p.tiled
                    || a.terms.keys().all(|n| {
                        let k = b.idxs.iter().position(|i| &i.name == n);
                        k.is_none_or(|k| clamp(b, tile, k) == b.idxs[k].range)
                    })
            })
        })
}

/// The lines a run of `extent` elements at `stride` touches, with lines of
/// `line` elements; `aligned` when the run starts on a line boundary.
fn run_lines(extent: u64, stride: i64, line: u64, aligned: bool) -> u64 {
    let s = stride.unsigned_abs().max(1);
    if s == 1 && aligned {
        return extent.div_ceil(line);
    }
    let span = extent.saturating_sub(1).saturating_mul(s).saturating_add(1);
    (1 + (span - 1).div_ceil(line)).min(extent)
}

/// The cost of tiling `block` with `tile` (one size per index, clamped to
/// `1..=range`): cache lines of `line_elems` elements touched by all
/// refinements' tiles per outer iteration, over the block's points per
/// outer iteration. `None` when the tiles hold more than `cap_elems`
/// elements together. See the module documentation for the line count.
pub fn tile_cost(block: &Block, tile: &[u64], line_elems: u64, cap_elems: u64) -> Option<f64> {
    let line = line_elems.max(1);
    let mut elems = 0u64;
    let mut lines = 0u64;
    let g = Tiling::new(block, tile);
    for r in block.refs.iter().filter(|r| r.from.is_some()) {
        let dims = plan(&g, r);
        elems = elems.saturating_add(dims.iter().map(|d| d.extent).product());
        let Some(inner) = (0..r.shape.len())
            .rev()
            .min_by_key(|&d| r.shape[d].stride.unsigned_abs())
        else {
            lines += 1;
            continue;
        };
        let offset = &dims[inner].offset;
        let aligned = (0..r.shape.len())
            .filter(|&d| d != inner)
            .all(|d| r.shape[d].stride % line as i64 == 0)
            && offset.constant % line as i64 == 0
            && offset.terms.values().all(|c| c % line as i64 == 0);
        let rows: u64 = (0..dims.len())
            .filter(|&d| d != inner)
            .map(|d| dims[d].extent)
            .product();
        let run = run_lines(dims[inner].extent, r.shape[inner].stride, line, aligned);
        lines = lines.saturating_add(rows.saturating_mul(run));
    }
    if elems > cap_elems {
        return None;
    }
    let tiles: u64 = (0..block.idxs.len())
        .map(|k| block.idxs[k].range.div_ceil(clamp(block, tile, k)))
        .product();
    Some(lines as f64 * tiles as f64 / block.points().max(1) as f64)
}

/// The candidate tile sizes of an index of `range`: powers of two below it,
/// its divisors, and the range itself, ascending.
fn candidates(range: u64) -> Vec<u64> {
    let mut c: Vec<u64> = (0..64)
        .map(|s| 1u64 << s)
        .take_while(|&p| p < range)
        .collect();
    let mut d = 1u64;
    while d.saturating_mul(d) <= range {
        if range.is_multiple_of(d) {
            c.extend([d, range / d]);
        }
        d += 1;
    }
    c.push(range.max(1));
    c.sort_unstable();
    c.dedup();
    c
}

/// The cheapest tiling of `block` under the cap among the candidate sizes,
/// and its cost. Ties go to the tiling found first (smaller sizes first in
/// the exhaustive order). When no tiling fits, the whole ranges are
/// returned with an infinite cost.
pub fn best_tile(block: &Block, line_elems: u64, cap_elems: u64) -> (Vec<u64>, f64) {
    search(block, line_elems, cap_elems, &|_| true)
}

/// A tiling in the best-first queue, cheapest first.
struct Frontier {
    cost: f64,
    pos: Vec<usize>,
}

impl PartialEq for Frontier {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}

impl Eq for Frontier {}

impl PartialOrd for Frontier {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

impl Ord for Frontier {
    fn cmp(&self, o: &Self) -> Ordering {
        o.cost
            .total_cmp(&self.cost)
            .then_with(|| o.pos.cmp(&self.pos))
    }
}

/// [`best_tile`] restricted to tilings `admissible` accepts.
fn search(
    block: &Block,
    line_elems: u64,
    cap_elems: u64,
    admissible: &dyn Fn(&[u64]) -> bool,
) -> (Vec<u64>, f64) {
    let cands: Vec<Vec<u64>> = block.idxs.iter().map(|i| candidates(i.range)).collect();
    let at = |pos: &[usize]| -> Vec<u64> { pos.iter().zip(&cands).map(|(&p, c)| c[p]).collect() };
    let mut best: (Vec<u64>, f64) = (block.idxs.iter().map(|i| i.range).collect(), f64::INFINITY);
    let mut consider = |tile: Vec<u64>, cost: f64| {
        if cost < best.1 && admissible(&tile) {
            best = (tile, cost);
        }
    };
    let total = cands
        .iter()
        .fold(1u64, |a, c| a.saturating_mul(c.len() as u64));
    if total <= SEARCH_LIMIT {
        let mut pos = vec![0usize; cands.len()];
        loop {
            let tile = at(&pos);
            if let Some(cost) = tile_cost(block, &tile, line_elems, cap_elems) {
                consider(tile, cost);
            }
            let Some(k) = (0..pos.len()).rev().find(|&k| pos[k] + 1 < cands[k].len()) else {
                break;
            };
            pos[k] += 1;
            pos[k + 1..].iter_mut().for_each(|p| *p = 0);
        }
        return best;
    }
    // Best-first from the smallest tiles: growing a tile never shrinks the
    // elements it holds, so tilings over the cap are not expanded.
    let mut seen: HashSet<Vec<usize>> = HashSet::new();
    let mut queue = BinaryHeap::new();
    let start = vec![0usize; cands.len()];
    if let Some(cost) = tile_cost(block, &at(&start), line_elems, cap_elems) {
        seen.insert(start.clone());
        queue.push(Frontier { cost, pos: start });
    }
    let mut expanded = 0u64;
    while let Some(Frontier { cost, pos }) = queue.pop() {
        consider(at(&pos), cost);
        expanded += 1;
        if expanded >= SEARCH_LIMIT {
            break;
        }
        for k in 0..pos.len() {
            if pos[k] + 1 < cands[k].len() {
                let mut next = pos.clone();
                next[k] += 1;
                if seen.insert(next.clone()) {
                    if let Some(cost) = tile_cost(block, &at(&next), line_elems, cap_elems) {
                        queue.push(Frontier { cost, pos: next });
                    }
                }
            }
        }
    }
    best
}

/// A name not in `taken`: `base` with underscores appended.
fn fresh(base: String, taken: &HashSet<String>) -> String {
    let mut n = base;
    while taken.contains(&n) {
        n.push('_');
    }
    n
}

/// Splits `block` into an outer block over tiles of `tile` (one size per
/// index, clamped to `1..=range`) and an inner block over one tile, as the
/// module documentation describes.
pub fn tile_block(block: &Block, tile: &[u64]) -> Block {
    let mut taken: HashSet<String> = block.idxs.iter().map(|i| i.name.clone()).collect();
    // The tiled indices: original name, tile, outer range, passed name.
    let mut tiled: Vec<(String, u64, u64, String)> = Vec::new();
    for (k, ix) in block.idxs.iter().enumerate() {
        let t = clamp(block, tile, k);
        let n = ix.range.div_ceil(t);
        if n > 1 {
            let passed = fresh(format!("{}_o", ix.name), &taken);
            taken.insert(passed.clone());
            tiled.push((ix.name.clone(), t, n, passed));
        }
    }
    let to_passed: HashMap<&str, &str> = tiled
        .iter()
        .map(|(n, _, _, p)| (n.as_str(), p.as_str()))
        .collect();
    let global = |n: &str| -> Option<Affine> {
        tiled
            .iter()
            .find(|x| x.0 == n)
            .map(|(n, t, _, p)| Affine::term(p, *t as i64).add(&Affine::index(n)))
    };
    let passed_form =
        |a: &Affine| -> Affine { a.subst(&|n| to_passed.get(n).map(|p| Affine::index(p))) };

    let mut inner = Block::new(&format!("{}_tile", block.name));
    inner.idxs = block
        .idxs
        .iter()
        .enumerate()
        .map(|(k, ix)| Index {
            name: ix.name.clone(),
            range: clamp(block, tile, k),
            // A passed index is passed on through the outer block.
            affine: ix.affine.as_ref().map(|_| Affine::index(&ix.name)),
            tags: ix.tags.clone(),
        })
        .chain(tiled.iter().map(|(n, _, _, p)| Index {
            name: p.clone(),
            range: 1,
            affine: Some(Affine::index(n)),
            tags: Tags::new(),
        }))
        .collect();
    inner.constraints = block.constraints.iter().map(|c| c.subst(&global)).collect();
    for (k, ix) in block.idxs.iter().enumerate() {
        if let Some(g) = global(&ix.name) {
            if !ix.range.is_multiple_of(clamp(block, tile, k)) {
                inner
                    .constraints
                    .push(Affine::constant(ix.range as i64 - 1).sub(&g));
            }
        }
    }
    inner.stmts = block.stmts.clone();
    // A child block sees the original indices through the forms it is
    // passed; its views refine the inner block's views, which have the
    // original origins and sizes.
    inner.subst_in_stmts(&global);

    let mut outer = Block::new(&block.name);
    outer.comment = block.comment.clone();
    outer.tags = block.tags.clone();
    outer.tags.insert("tiled".to_string());
    outer.idxs = tiled
        .iter()
        .map(|(n, _, range, _)| Index {
            name: n.clone(),
            range: *range,
            affine: None,
            tags: Tags::new(),
        })
        .chain(block.idxs.iter().filter(|i| i.affine.is_some()).cloned())
        .collect();
    let tiling = Tiling::new(block, tile);
    for r in &block.refs {
        if r.from.is_none() {
            inner.refs.push(r.clone());
            continue;
        }
        let dims = plan(&tiling, r);
        outer.refs.push(Refinement {
            access: dims.iter().map(|d| d.offset.clone()).collect(),
            shape: dims
                .iter()
                .zip(&r.shape)
                .map(|(d, s)| Dim {
                    size: d.size,
                    stride: s.stride,
                })
                .collect(),
            ..r.clone()
        });
        inner.refs.push(Refinement {
            from: Some(r.into.clone()),
            access: r
                .access
                .iter()
                .zip(&dims)
                .map(|(a, d)| a.subst(&global).sub(&passed_form(&d.offset)))
                .collect(),
            location: None,
            ..r.clone()
        });
    }
    outer.stmts = vec![crate::Statement {
        kind: StmtKind::Block(Box::new(inner)),
        tags: Tags::new(),
    }];
    outer
}
