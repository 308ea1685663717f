//! The `autotile` pass: its cost model in Stripe's Figure 4 setting, its
//! search, and its rewrite. Tiled kernels must verify and, run on the VM,
//! agree with the interpreter (exactly for integers, within a relative
//! 1e-5 for floats, since tiling reorders float reductions).

use std::collections::HashMap;

mod common;

use common::load;

use ir::{DType, Program};
use kernel::passes::autotile::{best_tile, tile_block, tile_cost, Autotile};
use kernel::{row_major, Affine, Agg, Block, Cache, Index, Pass, RefDir, Refinement, StmtKind};

fn index(name: &str, range: u64) -> Index {
    Index {
        name: name.to_string(),
        range,
        affine: None,
        tags: Default::default(),
    }
}

/// A single-element view of a root buffer of `sizes` at `access`.
fn view(into: &str, dir: RefDir, agg: Agg, sizes: &[u64], access: Vec<Affine>) -> Refinement {
    let mut shape = row_major(sizes, DType::F32).unwrap();
    shape.iter_mut().for_each(|d| d.size = 1);
    Refinement {
        dir,
        from: Some(into.to_string()),
        into: into.to_string(),
        access,
        dtype: DType::I8,
        shape,
        agg,
        location: None,
        tags: Default::default(),
    }
}

fn sum(terms: &[&str], constant: i64) -> Affine {
    terms
        .iter()
        .fold(Affine::constant(constant), |a, n| a.add(&Affine::index(n)))
}

/// Figure 4's convolution, as lowering would give its comprehension
/// `O(x,y,k) += I(x+i-1, y+j-1, c) * F(i,j,k,c)`: int8 `I` of 12x16x8
/// (strides 128, 8, 1) and `O` of 12x16x16 (strides 256, 16, 1), with the
/// padding as skip constraints. The weights are left out: the figure treats
/// them as untiled and counts neither their lines nor their elements.
fn figure4_block() -> Block {
    let mut b = Block::new("conv");
    b.idxs = [
        ("x", 12),
        ("y", 16),
        ("i", 3),
        ("j", 3),
        ("c", 8),
        ("k", 16),
    ]
    .iter()
    .map(|(n, r)| index(n, *r))
    .collect();
    let row = sum(&["x", "i"], -1);
    let col = sum(&["y", "j"], -1);
    b.constraints = vec![
        row.clone(),
        Affine::constant(11).sub(&row),
        col.clone(),
        Affine::constant(15).sub(&col),
    ];
    b.refs = vec![
        view(
            "I",
            RefDir::In,
            Agg::Assign,
            &[12, 16, 8],
            vec![row, col, Affine::index("c")],
        ),
        view(
            "O",
            RefDir::Out,
            Agg::Add,
            &[12, 16, 16],
            vec![Affine::index("x"), Affine::index("y"), Affine::index("k")],
        ),
    ];
    b
}

/// Tile sizes for Figure 4's spatial tiling `tx` by `ty`, channels and
/// filter window whole.
fn spatial(tx: u64, ty: u64) -> Vec<u64> {
    vec![tx, ty, 3, 3, 8, 16]
}

/// The figure's cost model reproduced. For the tiling of Figure 4b (the one
/// Figure 5b shows after rewriting: outer `x:4, y:4`, `I` tiles of 5x6x8,
/// `O` tiles of 3x4x16):
/// - `I`'s tile spans `3 + (3 - 1) = 5` rows (tile plus the filter's halo),
///   `4 + 2 = 6` columns and 8 channels; the channel run starts on a line
///   boundary (strides 128 and 8 and every offset are multiples of 8), so
///   each of the 30 (row, column) pairs touches one 8-element line: 30 lines;
/// - `O`'s tile is 3x4 positions of 16 channels, two lines each: 24 lines;
/// - the tiles hold `5*6*8 + 3*4*16 = 240 + 192 = 432 <= 512` elements;
/// - one outer iteration runs `3*4*3*3*8*16 = 13824` multiply-accumulates
///   (`12*16*9*128 = 221184` over 16 tiles);
/// - cost `54 / 13824 = 0.00390625`.
///
/// The other three tilings of the figure cannot be read off the paper's
/// text; the test prints the costs of other spatial tilings next to it:
/// 4x4 (`6*6*8 + 4*4*16 = 544`), 2x8 (`320 + 256 = 576`) and 1x16
/// (`3*18*8 + 256 = 688`) are over the cap; 2x4 costs `(24 + 16) / 9216`
/// and 6x2 costs `(8*4 + 6*2*2) / 13824 = 56 / 13824`.
#[test]
fn figure_4_costs() {
    let b = figure4_block();
    let cost = |tx, ty| tile_cost(&b, &spatial(tx, ty), 8, 512);
    for (tx, ty) in [(3, 4), (4, 4), (2, 8), (1, 16), (2, 4), (6, 2), (12, 16)] {
        println!("figure 4 tiling {tx}x{ty}: cost {:?}", cost(tx, ty));
    }
    assert_eq!(cost(3, 4), Some(54.0 / 13824.0));
    assert_eq!(cost(4, 4), None);
    assert_eq!(cost(2, 8), None);
    assert_eq!(cost(1, 16), None);
    assert_eq!(cost(2, 4), Some(40.0 / 9216.0));
    assert_eq!(cost(6, 2), Some(56.0 / 13824.0));
    // Without the cap, bigger tiles reuse more.
    assert!(tile_cost(&b, &spatial(12, 16), 8, u64::MAX).unwrap() < cost(3, 4).unwrap());
}

/// The candidate sizes the search documents: powers of two below the range,
/// its divisors, and the range.
fn candidates(range: u64) -> Vec<u64> {
    let mut c: Vec<u64> = (1..=range)
        .filter(|&t| range.is_multiple_of(t) || t.is_power_of_two())
        .collect();
    c.dedup();
    c
}

#[test]
fn the_search_picks_the_cheapest_tiling_under_the_cap() {
    let b = figure4_block();
    let (tile, cost) = best_tile(&b, 8, 512);
    println!("figure 4 search: tile {tile:?}, cost {cost}");
    assert_eq!(tile_cost(&b, &tile, 8, 512), Some(cost));
    // Brute force over every candidate tiling.
    let ranges: Vec<u64> = b.idxs.iter().map(|i| i.range).collect();
    let mut best = f64::INFINITY;
    let mut tiles = vec![vec![]];
    for r in &ranges {
        tiles = tiles
            .into_iter()
            .flat_map(|t: Vec<u64>| {
                candidates(*r).into_iter().map(move |c| {
                    let mut t = t.clone();
                    t.push(c);
                    t
                })
            })
            .collect();
    }
    for t in &tiles {
        if let Some(c) = tile_cost(&b, t, 8, 512) {
            best = best.min(c);
        }
    }
    assert_eq!(cost, best);
    assert!(cost <= 54.0 / 13824.0, "no worse than Figure 4b");
    // Within the cap: `I`'s tile spans the tile plus the halo in rows and
    // columns (`|coef| * (tile - 1)` for `x` and for `i`), `O`'s the tile.
    let t = &tile;
    let input = (t[0] + t[2] - 1) * (t[1] + t[3] - 1) * t[4];
    let output = t[0] * t[1] * t[5];
    assert!(input + output <= 512, "{input} + {output} elements");
    assert_eq!(tile, spatial(3, 4), "Figure 4b is the cheapest");
}

#[test]
fn the_rewrite_of_figure_4b_matches_figure_5b() {
    let tiled = tile_block(&figure4_block(), &spatial(3, 4));
    let text = kernel::print_block(&tiled);
    println!("{text}");
    assert!(tiled.tags.contains("tiled"));
    let ranges: Vec<(&str, u64)> = tiled
        .idxs
        .iter()
        .map(|i| (i.name.as_str(), i.range))
        .collect();
    assert_eq!(ranges, [("x", 4), ("y", 4)]);
    let i = tiled.refinement("I").unwrap();
    let sizes: Vec<u64> = i.shape.iter().map(|d| d.size).collect();
    // The padded edge keeps the halo's rows and columns whole (the view
    // may not leave the buffer); channels are tiled.
    assert_eq!(sizes, [12, 16, 8]);
    let o = tiled.refinement("O").unwrap();
    let sizes: Vec<u64> = o.shape.iter().map(|d| d.size).collect();
    assert_eq!(sizes, [3, 4, 16]);
    assert_eq!(o.access[0], Affine::term("x", 3));
    let StmtKind::Block(inner) = &tiled.stmts[0].kind else {
        panic!("no inner block");
    };
    assert_eq!(inner.index("x_o").unwrap().affine, Some(Affine::index("x")));
    assert_eq!(inner.index("x").unwrap().range, 3);
}

#[test]
fn partial_tiles_get_overflow_constraints() {
    let mut b = figure4_block();
    b.constraints.clear();
    b.idxs[0].range = 7;
    let tiled = tile_block(&b, &spatial(3, 16));
    let StmtKind::Block(inner) = &tiled.stmts[0].kind else {
        panic!("no inner block");
    };
    let overflow = Affine::constant(6)
        .sub(&Affine::term("x_o", 3))
        .sub(&Affine::index("x"));
    assert!(inner.constraints.contains(&overflow), "{inner:?}");
    assert_eq!(tiled.index("x").unwrap().range, 3);
}

/// A target with a small L1 (`bytes`, lines of 8 float32 elements) so that
/// the small test kernels get tiled.
fn target_with_l1(bytes: u64) -> kernel::Target {
    let mut t = kernel::Target::generic();
    t.caches[0] = Cache {
        level: 1,
        size_bytes: bytes,
        line_bytes: 32,
        shared_by: 1,
    };
    t
}

/// An L1 of 64 float32 elements.
fn small_target() -> kernel::Target {
    target_with_l1(256)
}

/// [`check_on`] the small target.
fn check(program: &Program, def: &str, sizes: &[(&str, i64)], seed: u64) -> usize {
    check_on(&small_target(), program, def, sizes, seed)
}

/// Lowers `def` for `sizes`, autotiles it for `target`, and checks the
/// result against the interpreter (verified, read back, VM within 1e-5).
/// Returns how many blocks were tiled.
fn check_on(
    target: &kernel::Target,
    program: &Program,
    def: &str,
    sizes: &[(&str, i64)],
    seed: u64,
) -> usize {
    let c = common::case(program, def, sizes, &[], seed);
    let mut block = c.block.clone();
    Autotile
        .run(&mut block, target)
        .unwrap_or_else(|e| panic!("{def}: autotile: {e}"));
    common::check_kernel(&block, &c, false, "autotile");
    block
        .stmts
        .iter()
        .filter(|s| matches!(&s.kind, StmtKind::Block(b) if b.tags.contains("tiled")))
        .count()
}

#[test]
fn tiled_papers_programs_agree_with_the_interpreter() {
    let p = |f: &str| load(&format!("examples/paper/{f}"));
    let conv = [
        ("B", 2),
        ("IP", 3),
        ("H", 8),
        ("W", 8),
        ("OP", 4),
        ("KH", 3),
        ("KW", 2),
    ];
    assert!(check(&p("conv2d.tc"), "conv2d", &conv, 1) > 0);
    assert!(check(&p("tmm.tc"), "tmm", &[("M", 8), ("K", 16), ("N", 8)], 2) > 0);
    assert!(check(&p("mv.tc"), "mv", &[("M", 16), ("K", 16)], 3) > 0);
    assert!(check(&p("mv.tc"), "mv1", &[("M", 16), ("K", 16)], 4) > 0);
    let pool = [("B", 1), ("C", 4), ("H", 8), ("W", 8)];
    assert!(check(&p("maxpool2x2.tc"), "maxpool2x2", &pool, 5) > 0);
}

#[test]
fn tiled_quickstart_layer_agrees_with_the_interpreter() {
    let p = load("examples/quickstart/layer.tc");
    for (h, w) in [(8, 8), (7, 13)] {
        let sizes = [
            ("N", 1),
            ("C", 2),
            ("H", h),
            ("W", w),
            ("F", 3),
            ("KH", 3),
            ("KW", 3),
        ];
        assert!(check(&p, "layer", &sizes, 6) > 0);
    }
}

#[test]
fn sizes_the_tiles_do_not_divide_agree_with_the_interpreter() {
    let p = |f: &str| load(&format!("examples/paper/{f}"));
    let conv = [
        ("B", 1),
        ("IP", 3),
        ("H", 9),
        ("W", 15),
        ("OP", 5),
        ("KH", 3),
        ("KW", 3),
    ];
    assert!(check(&p("conv2d.tc"), "conv2d", &conv, 7) > 0);
    assert!(check(&p("tmm.tc"), "tmm", &[("M", 7), ("K", 13), ("N", 11)], 8) > 0);
    assert!(check(&p("mv.tc"), "mv", &[("M", 13), ("K", 7)], 9) > 0);
    let pool = [("B", 1), ("C", 3), ("H", 14), ("W", 10)];
    assert!(check(&p("maxpool2x2.tc"), "maxpool2x2", &pool, 10) > 0);
}

#[test]
fn each_cache_level_gets_a_level_of_tiles() {
    // L1 of 64 float32 elements inside an L2 of 1024: a 32x32x32 matmul
    // (3072 elements) fits neither, so its tiles for L2 are tiled again
    // for L1, and the nest still computes the interpreter's result, also
    // where the tiles do not divide the sizes.
    let mut target = small_target();
    target.caches[1] = Cache {
        level: 2,
        size_bytes: 4096,
        line_bytes: 32,
        shared_by: 1,
    };
    let p = load("examples/paper/tmm.tc");
    for (sizes, seed) in [
        ([("M", 32), ("K", 32), ("N", 32)], 11),
        ([("M", 30), ("K", 27), ("N", 33)], 12),
    ] {
        let c = common::case(&p, "tmm", &sizes, &[], seed);
        let mut block = c.block.clone();
        Autotile.run(&mut block, &target).unwrap();
        common::check_kernel(&block, &c, false, "two-level autotile");
        let StmtKind::Block(outer) = &block.stmts.last().unwrap().kind else {
            panic!("no block")
        };
        let StmtKind::Block(middle) = &outer.stmts[0].kind else {
            panic!("the L2 tile has no inner block")
        };
        assert!(
            outer.tags.contains("tiled") && middle.tags.contains("tiled"),
            "{}",
            kernel::print_block(&block)
        );
        let inner_points: u64 = middle
            .stmts
            .iter()
            .filter_map(|s| match &s.kind {
                StmtKind::Block(b) => Some(
                    b.idxs
                        .iter()
                        .filter(|i| i.affine.is_none())
                        .map(|i| i.range)
                        .product::<u64>(),
                ),
                _ => None,
            })
            .sum();
        let middle_points: u64 = middle
            .idxs
            .iter()
            .filter(|i| i.affine.is_none())
            .map(|i| i.range)
            .product();
        assert!(
            inner_points > 1 && middle_points > 1,
            "{}",
            kernel::print_block(&block)
        );
    }
}

#[test]
fn pipelines_name_the_pass() {
    let names = kernel::parse_pipeline("autotile # tiles comprehensions\n").unwrap();
    assert_eq!(names, ["autotile"]);
    let p = load("examples/paper/tmm.tc");
    let sizes: HashMap<String, i64> = [("M", 8), ("K", 16), ("N", 8)]
        .iter()
        .map(|(k, v)| (k.to_string(), *v))
        .collect();
    let mut block = kernel::lower_def(&p, "tmm", &sizes).unwrap();
    kernel::run_pipeline(&mut block, &names, &small_target(), &mut |_, _| {}).unwrap();
    assert!(kernel::print_block(&block).contains("#tiled"));
}

#[test]
fn guard_blocks_move_into_the_inner_block() {
    // A concatenation scaled by a sum over `k` (a reduction index, so there
    // is reuse to tile for).
    let src = "def cat(float(N) A, float(M) B, float(K) C) -> (O) {\n  O(i) +=! (i < N ? A(i) : B(i - N)) * C(k) where i in 0:N+M, k in 0:K\n}\n";
    let cat = tc::check_source(src).unwrap().program;
    // The guards' views are whole buffers (16 + 80 elements), so the tile
    // of `O` gets what is left of an L1 of 128 elements.
    let sizes = [("N", 16), ("M", 80), ("K", 4)];
    assert!(check_on(&target_with_l1(512), &cat, "cat", &sizes, 11) > 0);
    // A reduction whose guarded read uses a let, beside a skipped read.
    let src = "def g(float(N) A) -> (O) {\n  O(i) +=! (t < N ? A(t) : 0.0) * A(i + k - 1) where i in 0:N, k in 0:3, t = i + k\n}\n";
    let g = tc::check_source(src).unwrap().program;
    assert!(check(&g, "g", &[("N", 39)], 12) > 0);
}

/// A block with too many candidate tilings to enumerate (11 sizes for each
/// of five indices of 1024: 161051 > 65536) is searched best-first; the
/// result fits the cap and beats the smallest and the whole tiles.
#[test]
fn large_spaces_are_searched_best_first() {
    let mut b = Block::new("big");
    b.idxs = ["a", "b", "c", "d", "e"]
        .iter()
        .map(|n| index(n, 1024))
        .collect();
    let big = [1024, 1024, 1024];
    let at = |ns: [&str; 3]| ns.iter().map(|n| Affine::index(n)).collect::<Vec<_>>();
    b.refs = vec![
        view("X", RefDir::In, Agg::Assign, &big, at(["a", "d", "e"])),
        view("Y", RefDir::In, Agg::Assign, &big, at(["b", "d", "e"])),
        view("Z", RefDir::Out, Agg::Add, &big, at(["a", "b", "c"])),
    ];
    let (tile, cost) = best_tile(&b, 64, 4096);
    println!("best-first: tile {tile:?}, cost {cost}");
    assert_eq!(tile_cost(&b, &tile, 64, 4096), Some(cost));
    assert!(cost < tile_cost(&b, &[1; 5], 64, 4096).unwrap());
    assert_eq!(tile_cost(&b, &[1024; 5], 64, 4096), None);
}
