//! The `fuse` pass on lowered examples: the MLP layers of the TC paper and
//! the quickstart convolutional layer are lowered for concrete sizes, fused,
//! verified, and run on the kernel VM; the results must match the
//! interpreter's on the same random inputs (floats within 1e-5 relative).

use std::collections::HashMap;

use interp::{Arg, Data, Mode, Tensor};
use ir::{DType, Param, Program, Value};
use kernel::{Block, Pass, StmtKind};

fn load(path: &str) -> Program {
    let text =
        std::fs::read_to_string(format!("{}/../../{path}", env!("CARGO_MANIFEST_DIR"))).unwrap();
    tc::check_source(&text)
        .unwrap_or_else(|d| panic!("{}", tc::render_diagnostics(&d, path, &text)))
        .program
}

fn values(t: &Tensor) -> Vec<Value> {
    match (&t.data, t.dtype) {
        (Data::F(v), _) => v.iter().map(|x| Value::Float(*x)).collect(),
        (Data::I(v), DType::Bool) => v.iter().map(|x| Value::Bool(*x != 0)).collect(),
        (Data::I(v), _) => v.iter().map(|x| Value::Int(*x)).collect(),
    }
}

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
/// interpreter, and returns the kernel before and after.
fn fuse_and_check(
    program: &Program,
    def: &str,
    sizes: &[(&str, i64)],
    seed: u64,
) -> (Block, Block) {
    let d = program.def(def).unwrap_or_else(|| panic!("no def {def}"));
    let given: HashMap<String, i64> = sizes.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    let mut args: HashMap<String, Arg> = HashMap::new();
    let bound = interp::bind_sizes(d, &args, &given).unwrap_or_else(|e| panic!("{def}: {e}"));
    for (k, p) in d.params.iter().enumerate() {
        if let Param::Tensor(t) = p {
            let shape = interp::param_shape(d, t, &bound).unwrap_or_else(|e| panic!("{def}: {e}"));
            let dtype = d.tensor(t).map_or(DType::F32, |x| x.dtype);
            args.insert(
                t.clone(),
                Arg::Tensor(Tensor::random(dtype, &shape, seed + k as u64)),
            );
        }
    }
    let want = interp::run(program, def, &args, &given, Mode::Real)
        .unwrap_or_else(|e| panic!("{def}: interp: {e}"));
    let before =
        kernel::lower_def(program, def, &bound).unwrap_or_else(|e| panic!("{def}: lower: {e}"));
    let mut after = before.clone();
    kernel::passes::fuse::Fuse
        .run(&mut after, &kernel::Target::generic())
        .unwrap_or_else(|e| panic!("{def}: fuse: {e}"));
    if let Err(problems) = kernel::verify_block(&after) {
        panic!(
            "{def}: the fused kernel does not verify:\n{}\n{}",
            problems.join("\n"),
            kernel::print_block(&after)
        );
    }
    let inputs: kernel::vm::Buffers = args
        .iter()
        .filter_map(|(k, a)| match a {
            Arg::Tensor(t) => Some((k.clone(), values(t))),
            Arg::Scalar(_) => None,
        })
        .collect();
    let got = kernel::vm::run(&after, inputs).unwrap_or_else(|e| panic!("{def}: vm: {e}"));
    for (name, t) in &want {
        let (g, w) = (&got[name], values(t));
        assert_eq!(g.len(), w.len(), "{def}: `{name}` sizes");
        for (k, (g, w)) in g.iter().zip(&w).enumerate() {
            let ok = match (g, w) {
                (Value::Float(a), Value::Float(b)) => (a - b).abs() <= 1e-5 * b.abs().max(1.0),
                _ => g == w,
            };
            assert!(ok, "{def}: `{name}`[{k}] is {g:?}, expected {w:?}");
        }
    }
    (before, after)
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
