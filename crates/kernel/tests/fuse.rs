//! The `fuse` pass on lowered examples: the MLP layers of the TC paper and
//! the quickstart convolutional layer are lowered for concrete sizes, fused,
//! verified, and run on the kernel VM; the results must match the
//! interpreter's on the same random inputs (floats within 1e-5 relative).

mod common;

use common::load;
use ir::Program;
use kernel::{Block, Pass, StmtKind};

/// The root's block statements.
fn children(b: &Block) -> Vec<&Block> {
    b.stmts
        .iter()
        .filter_map(|s| match &s.kind {
            StmtKind::Block(c) => Some(&**c),
            _ => None,
        })
        .collect()
}

/// Lowers `def` with `sizes`, fuses it, checks the fused kernel against the
/// interpreter (verified, read back, VM within 1e-5), and returns the kernel
/// before and after.
fn fuse_and_check(
    program: &Program,
    def: &str,
    sizes: &[(&str, i64)],
    seed: u64,
) -> (Block, Block) {
    let c = common::case(program, def, sizes, &[], seed);
    let mut after = c.block.clone();
    kernel::passes::fuse::Fuse
        .run(&mut after, &kernel::Target::generic())
        .unwrap_or_else(|e| panic!("{def}: fuse: {e}"));
    common::check_kernel(&after, &c, false, "fuse");
    (c.block, after)
}

fn fused(b: &Block) -> usize {
    children(b)
        .iter()
        .filter(|c| c.tags.contains("fused"))
        .count()
}

#[test]
fn mlp1_fuses_into_one_block() {
    let p = load("examples/paper/mlp.tc");
    let (before, after) = fuse_and_check(&p, "MLP1", &[("B", 3), ("M", 4), ("N", 5)], 1);
    assert_eq!(children(&before).len(), 3);
    assert_eq!(children(&after).len(), 1, "{}", kernel::print_block(&after));
    assert_eq!(fused(&after), 1);
}

#[test]
fn mlp3_fuses_each_layer() {
    let p = load("examples/paper/mlp.tc");
    let sizes = [("B", 2), ("N", 4), ("O", 5), ("P", 3), ("Q", 2)];
    let (before, after) = fuse_and_check(&p, "MLP3", &sizes, 2);
    assert_eq!(children(&before).len(), 9);
    assert_eq!(children(&after).len(), 3, "{}", kernel::print_block(&after));
    assert_eq!(fused(&after), 3);
}

#[test]
fn the_quickstart_layer_fuses_its_reductions_with_their_inits() {
    let p = load("examples/quickstart/layer.tc");
    for (h, w) in [(4, 4), (5, 7)] {
        let sizes = [
            ("N", 1),
            ("C", 2),
            ("H", h),
            ("W", w),
            ("F", 3),
            ("KH", 3),
            ("KW", 3),
        ];
        let (before, after) = fuse_and_check(&p, "layer", &sizes, 3);
        // The convolution and the pooling each fuse with their `_init`
        // block; the bias and ReLU block writes another tensor and stays.
        assert_eq!(children(&before).len(), 5);
        assert_eq!(children(&after).len(), 3, "{}", kernel::print_block(&after));
        assert_eq!(fused(&after), 2);
    }
}

#[test]
fn fusing_twice_changes_nothing_more() {
    let p = load("examples/paper/mlp.tc");
    let (_, once) = fuse_and_check(&p, "MLP1", &[("B", 2), ("M", 3), ("N", 4)], 4);
    let mut twice = once.clone();
    kernel::passes::fuse::Fuse
        .run(&mut twice, &kernel::Target::generic())
        .unwrap_or_else(|e| panic!("fuse: {e}"));
    assert_eq!(twice, once);
}
