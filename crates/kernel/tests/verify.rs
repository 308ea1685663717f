//! The kernel verifier accepts well-formed kernels (a tiled matrix product
//! with passed indices, a padded convolution whose constraints keep an
//! access in bounds) and catches each invariant broken once, with a message
//! naming the block path and the fault.

mod common;

use ir::{BinOp, Builtin, DType, Value};
use kernel::{
    row_major, verify_block, Affine, Agg, Block, ChildVerifier, Dim, Index, Op, RefDir, Refinement,
    Statement, StmtKind, Tags,
};

/// `sum(coef * index) + constant`.
fn af(terms: &[(&str, i64)], constant: i64) -> Affine {
    let mut a = Affine::constant(constant);
    for (n, c) in terms {
        a.add_term(n, *c);
    }
    a
}

fn idx(name: &str, range: u64) -> Index {
    Index {
        name: name.to_string(),
        range,
        affine: None,
        tags: Tags::new(),
    }
}

fn passed(name: &str, form: Affine) -> Index {
    Index {
        name: name.to_string(),
        range: 1,
        affine: Some(form),
        tags: Tags::new(),
    }
}

/// A kernel buffer (or a local buffer below the root), row-major float32.
fn buffer(dir: RefDir, name: &str, sizes: &[u64]) -> Refinement {
    Refinement {
        dir,
        from: None,
        into: name.to_string(),
        access: Vec::new(),
        dtype: DType::F32,
        shape: row_major(sizes, DType::F32).unwrap(),
        agg: Agg::Assign,
        location: None,
        tags: Tags::new(),
    }
}

/// A view of sizes `sizes` of `from`, whose root buffer has sizes `root`
/// (the strides come from there).
fn view(
    dir: RefDir,
    from: &str,
    into: &str,
    access: Vec<Affine>,
    sizes: &[u64],
    root: &[u64],
    agg: Agg,
) -> Refinement {
    Refinement {
        dir,
        from: Some(from.to_string()),
        into: into.to_string(),
        access,
        dtype: DType::F32,
        shape: sizes
            .iter()
            .zip(row_major(root, DType::F32).unwrap())
            .map(|(&size, d)| Dim {
                size,
                stride: d.stride,
            })
            .collect(),
        agg,
        location: None,
        tags: Tags::new(),
    }
}

fn st(kind: StmtKind) -> Statement {
    Statement {
        kind,
        tags: Tags::new(),
    }
}

fn load(from: &str, into: &str) -> Statement {
    st(StmtKind::Load {
        from: from.to_string(),
        into: into.to_string(),
    })
}

fn store(from: &str, into: &str) -> Statement {
    st(StmtKind::Store {
        from: from.to_string(),
        into: into.to_string(),
    })
}

fn op(op: Op, inputs: &[&str], into: &str) -> Statement {
    st(StmtKind::Intrinsic {
        op,
        inputs: inputs.iter().map(|s| s.to_string()).collect(),
        into: into.to_string(),
        dtype: DType::F32,
    })
}

fn mul(a: &str, b: &str, into: &str) -> Statement {
    op(Op::Binary(BinOp::Mul), &[a, b], into)
}

fn block(b: Block) -> Statement {
    st(StmtKind::Block(Box::new(b)))
}

/// `C[8, 8] = A[8, 8] * B[8, 8]` in 4x4 tiles of `C`: block `tile` takes
/// a 4x8 slab of `A`, an 8x4 slab of `B` and a 4x4 tile of `C`; block
/// `inner` gets the tile row `i_o` passed as `io` (used by a constraint
/// that always holds) and multiplies within the tile.
fn matmul() -> Block {
    let mut inner = Block::new("inner");
    inner.idxs = vec![
        passed("io", af(&[("i_o", 1)], 0)),
        idx("i", 4),
        idx("j", 4),
        idx("k", 8),
    ];
    inner.constraints = vec![af(&[("io", -4), ("i", -1)], 7)];
    inner.refs = vec![
        view(
            RefDir::In,
            "a",
            "a1",
            vec![af(&[("i", 1)], 0), af(&[("k", 1)], 0)],
            &[1, 1],
            &[8, 8],
            Agg::Assign,
        ),
        view(
            RefDir::In,
            "b",
            "b1",
            vec![af(&[("k", 1)], 0), af(&[("j", 1)], 0)],
            &[1, 1],
            &[8, 8],
            Agg::Assign,
        ),
        view(
            RefDir::Out,
            "c",
            "c1",
            vec![af(&[("i", 1)], 0), af(&[("j", 1)], 0)],
            &[1, 1],
            &[8, 8],
            Agg::Add,
        ),
    ];
    inner.stmts = vec![
        load("a1", "x"),
        load("b1", "y"),
        mul("x", "y", "p"),
        store("p", "c1"),
    ];
    let mut tile = Block::new("tile");
    tile.idxs = vec![idx("i_o", 2), idx("j_o", 2)];
    tile.refs = vec![
        view(
            RefDir::In,
            "A",
            "a",
            vec![af(&[("i_o", 4)], 0), af(&[], 0)],
            &[4, 8],
            &[8, 8],
            Agg::Assign,
        ),
        view(
            RefDir::In,
            "B",
            "b",
            vec![af(&[], 0), af(&[("j_o", 4)], 0)],
            &[8, 4],
            &[8, 8],
            Agg::Assign,
        ),
        view(
            RefDir::Out,
            "C",
            "c",
            vec![af(&[("i_o", 4)], 0), af(&[("j_o", 4)], 0)],
            &[4, 4],
            &[8, 8],
            Agg::Assign,
        ),
    ];
    tile.stmts = vec![block(inner)];
    let mut main = Block::new("main");
    main.refs = vec![
        buffer(RefDir::In, "A", &[8, 8]),
        buffer(RefDir::In, "B", &[8, 8]),
        buffer(RefDir::Out, "C", &[8, 8]),
    ];
    main.stmts = vec![block(tile)];
    main
}

/// `O[x] += I[x + k - 1] * W[k]` for `x < 8`, `k < 3`, with `I` of size 8:
/// the constraints `x + k - 1 >= 0` and `8 - x - k >= 0` skip the padding.
fn conv() -> Block {
    let mut conv = Block::new("conv");
    conv.idxs = vec![idx("x", 8), idx("k", 3)];
    conv.constraints = vec![
        af(&[("x", 1), ("k", 1)], -1),
        af(&[("x", -1), ("k", -1)], 8),
    ];
    conv.refs = vec![
        view(
            RefDir::In,
            "I",
            "i",
            vec![af(&[("x", 1), ("k", 1)], -1)],
            &[1],
            &[8],
            Agg::Assign,
        ),
        view(
            RefDir::In,
            "W",
            "w",
            vec![af(&[("k", 1)], 0)],
            &[1],
            &[3],
            Agg::Assign,
        ),
        view(
            RefDir::Out,
            "O",
            "o",
            vec![af(&[("x", 1)], 0)],
            &[1],
            &[8],
            Agg::Add,
        ),
    ];
    conv.stmts = vec![
        load("i", "a"),
        load("w", "b"),
        mul("a", "b", "p"),
        store("p", "o"),
    ];
    let mut main = Block::new("main");
    main.refs = vec![
        buffer(RefDir::In, "I", &[8]),
        buffer(RefDir::In, "W", &[3]),
        buffer(RefDir::Out, "O", &[8]),
    ];
    main.stmts = vec![block(conv)];
    main
}

/// The block of the first statement of `b`.
fn child(b: &mut Block) -> &mut Block {
    match &mut b.stmts[0].kind {
        StmtKind::Block(c) => c,
        k => panic!("not a block: {k:?}"),
    }
}

/// Asserts that checking each step of `b` alone ([`ChildVerifier`], as
/// passes do after rewriting one) agrees with [`verify_block`]: a step
/// alone reports exactly the errors `verify_block` reports at or below it.
fn steps_alone_agree(b: &Block) {
    let all = verify_block(b).err().unwrap_or_default();
    let mut root = b.clone();
    let steps = std::mem::take(&mut root.stmts);
    let check = ChildVerifier::new(&root);
    for s in &steps {
        let StmtKind::Block(c) = &s.kind else {
            continue;
        };
        let path = format!("{}/{}", b.name, c.name);
        let under = |e: &String| {
            e.strip_prefix(&path)
                .is_some_and(|rest| rest.starts_with(':') || rest.starts_with('/'))
        };
        let mut alone = check.verify(c).err().unwrap_or_default();
        let mut want: Vec<String> = all.iter().filter(|e| under(e)).cloned().collect();
        alone.sort();
        want.sort();
        assert_eq!(alone, want, "step `{path}` checked alone");
    }
}

/// Asserts that verification fails with a message containing every
/// fragment.
fn fails(b: &Block, fragments: &[&str]) {
    steps_alone_agree(b);
    let errs = verify_block(b).expect_err("the kernel should not verify");
    assert!(
        errs.iter().any(|e| fragments.iter().all(|f| e.contains(f))),
        "no message contains {fragments:?}: {errs:#?}"
    );
}

#[test]
fn a_tiled_matmul_with_passed_indices_verifies() {
    assert_eq!(verify_block(&matmul()), Ok(()));
}

#[test]
fn a_padded_convolution_verifies_because_of_its_constraints() {
    assert_eq!(verify_block(&conv()), Ok(()));
}

#[test]
fn the_same_access_without_constraints_is_out_of_bounds() {
    let mut k = conv();
    child(&mut k).constraints.clear();
    fails(
        &k,
        &[
            "main/conv: refinement `i` dimension 0 is out of bounds",
            "ranges over [-1, 8]",
        ],
    );
}

#[test]
fn constraints_that_cut_too_little_leave_a_point_out_of_bounds() {
    let mut k = conv();
    child(&mut k).constraints.truncate(1);
    fails(
        &k,
        &[
            "main/conv: refinement `i` dimension 0 is out of bounds",
            "at x = 7, k = 2 (which satisfies the constraints) offset `k + x - 1` is 8",
        ],
    );
}

#[test]
fn a_huge_constrained_box_cannot_be_proved_in_bounds() {
    // With k up to 1023 the constraints still keep `x + k - 1` inside `I`
    // (elimination proves it), but no longer keep `k` inside `W`, and the
    // box is too large to enumerate.
    let mut k = conv();
    let c = child(&mut k);
    c.idxs = vec![idx("x", 1 << 11), idx("k", 1 << 10)];
    let errs = verify_block(&k).expect_err("`w` cannot be proved in bounds");
    assert!(
        errs.iter()
            .any(|e| e.contains("main/conv: refinement `w` dimension 0: cannot prove in bounds")),
        "{errs:#?}"
    );
    assert!(
        !errs.iter().any(|e| e.contains("refinement `i`")),
        "{errs:#?}"
    );
}

#[test]
fn a_huge_padded_convolution_is_proved_in_bounds_by_elimination() {
    // The same convolution over 2^20 points with 3 taps: too many points
    // to enumerate, and the constraints imply the bounds.
    let n: u64 = 1 << 20;
    let mut k = conv();
    k.refs = vec![
        buffer(RefDir::In, "I", &[n]),
        buffer(RefDir::In, "W", &[3]),
        buffer(RefDir::Out, "O", &[n]),
    ];
    let c = child(&mut k);
    c.idxs = vec![idx("x", n), idx("k", 3)];
    c.constraints[1] = af(&[("x", -1), ("k", -1)], n as i64);
    assert_eq!(verify_block(&k), Ok(()));
    // One past the end is caught, though no longer with a witness point.
    child(&mut k).constraints[1] = af(&[("x", -1), ("k", -1)], n as i64 + 1);
    fails(
        &k,
        &["main/conv: refinement `i` dimension 0: cannot prove in bounds"],
    );
}

#[test]
fn an_assign_view_written_by_two_points_is_caught() {
    let mut k = conv();
    child(&mut k).refs[2].agg = Agg::Assign;
    fails(
        &k,
        &[
            "main/conv: refinement `o` has aggregation assign but is written twice",
            "at x = 0, k = 1 (offsets [0])",
            "at x = 0, k = 2 (offsets [0]) overlap",
        ],
    );
}

#[test]
fn an_assign_view_proved_injective_by_enumeration_verifies() {
    // `k` does not occur in `o`'s access, but the constraints pin it to 0.
    let mut k = conv();
    let c = child(&mut k);
    c.refs[2].agg = Agg::Assign;
    c.constraints = vec![af(&[("k", -1)], 0), af(&[("x", 1)], -1)];
    assert_eq!(verify_block(&k), Ok(()));
}

#[test]
fn overlapping_assign_tiles_are_caught() {
    let mut k = matmul();
    child(&mut k).refs[2].access[0] = af(&[("i_o", 2)], 0);
    fails(
        &k,
        &["main/tile: refinement `c` has aggregation assign but is written twice"],
    );
}

#[test]
fn a_parent_index_used_without_being_passed_is_caught() {
    let mut k = matmul();
    let inner = child(child(&mut k));
    inner.idxs.remove(0);
    inner.constraints.clear();
    inner.refs[0].access[0] = af(&[("i_o", 4), ("i", 1)], 0);
    fails(
        &k,
        &["main/tile/inner: refinement `a1` dimension 0: access `i + 4*i_o` mentions `i_o`, not an index of this block"],
    );
}

#[test]
fn a_constraint_on_an_unknown_index_is_caught() {
    let mut k = matmul();
    child(child(&mut k)).constraints[0] = af(&[("i_o", -4)], 7);
    fails(
        &k,
        &["main/tile/inner: constraint 0 `-4*i_o + 7 >= 0` mentions `i_o`, not an index of this block"],
    );
}

#[test]
fn a_passed_index_must_name_the_parents_indices() {
    let mut k = matmul();
    child(child(&mut k)).idxs[0].affine = Some(af(&[("i_o", 1), ("z", 1)], 0));
    fails(
        &k,
        &["main/tile/inner: index `io` is passed as `i_o + z`, which mentions `z`, not an index of the parent `main/tile`"],
    );
}

#[test]
fn a_passed_index_has_range_one() {
    let mut k = matmul();
    child(child(&mut k)).idxs[0].range = 2;
    fails(
        &k,
        &["main/tile/inner: index `io` is passed from the parent, so its range must be 1, not 2"],
    );
}

#[test]
fn the_root_cannot_have_passed_indices() {
    let mut k = matmul();
    k.idxs = vec![passed("r", af(&[], 0))];
    fails(
        &k,
        &["main: index `r` is passed from a parent, but the root block has none"],
    );
}

#[test]
fn index_names_are_unique_and_ranges_positive() {
    let mut k = conv();
    child(&mut k).idxs.push(idx("x", 2));
    fails(&k, &["main/conv: index `x` is declared twice"]);
    let mut k = conv();
    child(&mut k).idxs[1].range = 0;
    fails(&k, &["main/conv: index `k` has range 0"]);
}

#[test]
fn a_scalar_used_before_its_definition_is_caught() {
    let mut k = conv();
    child(&mut k).stmts.swap(1, 2);
    fails(
        &k,
        &["main/conv: statement 1 uses scalar `$b` before it is defined"],
    );
}

#[test]
fn a_scalar_assigned_twice_is_caught() {
    let mut k = conv();
    child(&mut k).stmts[1] = load("w", "a");
    fails(&k, &["main/conv: statement 1 assigns scalar `$a` again"]);
}

#[test]
fn a_store_into_an_in_view_is_caught() {
    let mut k = conv();
    child(&mut k).stmts[3] = store("p", "w");
    fails(
        &k,
        &["main/conv: statement 3 stores into `w`, whose direction is in"],
    );
}

#[test]
fn a_load_from_an_out_view_is_caught() {
    let mut k = conv();
    child(&mut k).stmts[0] = load("o", "a");
    fails(
        &k,
        &["main/conv: statement 0 loads from `o`, whose direction is out"],
    );
}

#[test]
fn a_child_may_not_write_a_view_its_parent_only_reads() {
    let mut k = matmul();
    child(child(&mut k)).refs[0].dir = RefDir::InOut;
    fails(
        &k,
        &["main/tile/inner: refinement `a1` is inout and so writes `a`, but `a` in the parent `main/tile` is in"],
    );
}

#[test]
fn a_child_may_not_read_a_view_its_parent_only_writes() {
    let mut k = matmul();
    child(child(&mut k)).refs[2].dir = RefDir::In;
    fails(
        &k,
        &["main/tile/inner: refinement `c1` is in and so reads `c`, but `c` in the parent `main/tile` is out"],
    );
}

#[test]
fn an_access_of_the_wrong_rank_is_caught() {
    let mut k = matmul();
    child(child(&mut k)).refs[0].access.pop();
    fails(
        &k,
        &["main/tile/inner: refinement `a1` has 1 access forms, but `a` has rank 2"],
    );
    let mut k = matmul();
    child(child(&mut k)).refs[0].shape.pop();
    fails(
        &k,
        &["main/tile/inner: refinement `a1` has 1 dimensions, but `a` has rank 2"],
    );
}

#[test]
fn a_refinement_of_a_missing_view_is_caught() {
    let mut k = matmul();
    child(child(&mut k)).refs[0].from = Some("A".to_string());
    fails(
        &k,
        &["main/tile/inner: refinement `a1` refines `A`, which is not a refinement of the parent `main/tile`"],
    );
}

#[test]
fn a_root_refinement_may_not_refine_anything() {
    let mut k = conv();
    k.refs[0].from = Some("X".to_string());
    fails(
        &k,
        &["main: refinement `I` refines `X`, but the root block has no parent"],
    );
}

#[test]
fn refinement_names_are_unique() {
    let mut k = conv();
    let c = child(&mut k);
    let dup = c.refs[0].clone();
    c.refs.push(dup);
    fails(&k, &["main/conv: refinement `i` is declared twice"]);
}

#[test]
fn a_view_keeps_the_dtype_and_strides_it_refines() {
    let mut k = conv();
    child(&mut k).refs[0].dtype = DType::F64;
    fails(
        &k,
        &["main/conv: refinement `i` has type float64, but `I` has type float32"],
    );
    let mut k = conv();
    child(&mut k).refs[0].shape[0].stride = 2;
    fails(
        &k,
        &["main/conv: refinement `i` dimension 0 has stride 2, but `I` has stride 1"],
    );
}

#[test]
fn a_local_buffer_has_no_access() {
    let mut k = conv();
    let mut local = buffer(RefDir::None, "t", &[4]);
    local.access = vec![af(&[("x", 1)], 0)];
    child(&mut k).refs.push(local);
    fails(
        &k,
        &["main/conv: refinement `t` is a local buffer (no `from`), so its access must be empty, not 1 forms"],
    );
}

#[test]
fn a_local_buffer_may_be_stored_and_loaded_whatever_its_direction() {
    let mut k = conv();
    let c = child(&mut k);
    c.refs.push(buffer(RefDir::None, "t", &[1]));
    c.stmts.insert(3, store("p", "t"));
    c.stmts.insert(4, load("t", "q"));
    assert_eq!(verify_block(&k), Ok(()));
}

#[test]
fn statements_name_views_in_scope() {
    let mut k = matmul();
    child(child(&mut k)).stmts[0] = load("A", "x");
    fails(
        &k,
        &["main/tile/inner: statement 0 names `A`, which is not a refinement of this block"],
    );
}

#[test]
fn loads_and_stores_read_single_elements() {
    let mut k = matmul();
    child(&mut k).stmts.push(load("a", "z"));
    fails(
        &k,
        &["main/tile: statement 1 loads from `a`, whose dimension 0 has size 4"],
    );
}

#[test]
fn intrinsics_get_their_arity() {
    let mut k = conv();
    child(&mut k).stmts[2] = op(Op::Builtin(Builtin::Exp), &["a", "b"], "p");
    fails(
        &k,
        &["main/conv: statement 2: exp takes 1 inputs, but is given 2"],
    );
    let mut k = conv();
    child(&mut k).stmts[2] = op(Op::Select, &["a", "b"], "p");
    fails(
        &k,
        &["main/conv: statement 2: select takes 3 inputs, but is given 2"],
    );
}

#[test]
fn gathers_take_one_position_per_dimension() {
    let mut k = matmul();
    let inner = child(child(&mut k));
    inner.stmts.push(st(StmtKind::Gather {
        from: "b1".to_string(),
        indices: vec!["x".to_string()],
        into: "g".to_string(),
    }));
    fails(
        &k,
        &["main/tile/inner: statement 4 gathers from `b1` of rank 2 with 1 positions"],
    );
}

#[test]
fn constants_match_their_types() {
    let mut k = conv();
    child(&mut k).stmts.push(st(StmtKind::Constant {
        into: "c".to_string(),
        value: Value::Float(1.5),
        dtype: DType::I32,
    }));
    fails(
        &k,
        &["main/conv: statement 4 defines `$c` as Float(1.5), which does not suit type int32"],
    );
}

#[test]
fn nesting_deeper_than_64_is_caught() {
    let mut b = Block::new("b65");
    for d in (1..=64).rev() {
        let mut parent = Block::new(&format!("b{d}"));
        parent.stmts = vec![block(b)];
        b = parent;
    }
    let errs = verify_block(&b).expect_err("too deep");
    assert_eq!(errs.len(), 1, "{errs:#?}");
    assert!(
        errs[0].ends_with("b64/b65: blocks nest deeper than 64 levels; the verifier stops here")
    );
    let Statement {
        kind: StmtKind::Block(inner),
        ..
    } = &mut b.stmts[0]
    else {
        unreachable!()
    };
    inner.stmts.clear();
    assert_eq!(verify_block(&b), Ok(()));
}

#[test]
fn every_violation_is_reported() {
    let mut k = conv();
    let c = child(&mut k);
    c.constraints.clear();
    c.refs[2].agg = Agg::Assign;
    c.stmts.swap(1, 2);
    let errs = verify_block(&k).unwrap_err();
    assert_eq!(errs.len(), 3, "{errs:#?}");
}

/// Lowers `def` of the file at `path` with `sizes` (and scalars).
fn lower(path: &str, def: &str, sizes: &[(&str, i64)], scalars: &[(&str, Value)]) -> Block {
    common::case(&common::load(path), def, sizes, scalars, 0).block
}

// Every lowered paper program and prelude operator is verified in
// `tests/lower_vm.rs`, where it also runs against the interpreter.

/// Removes the constraints of every block under `b`.
fn strip_constraints(b: &mut Block) {
    b.constraints.clear();
    for s in &mut b.stmts {
        if let StmtKind::Block(c) = &mut s.kind {
            strip_constraints(c);
        }
    }
}

#[test]
fn a_lowered_padded_convolution_needs_its_constraints() {
    let i = Value::Int;
    let dims = [
        ("N", 1),
        ("C", 3),
        ("H", 7),
        ("W", 6),
        ("F", 4),
        ("CG", 3),
        ("KH", 3),
        ("KW", 2),
    ];
    let scalars = [
        ("sh", i(1)),
        ("sw", i(1)),
        ("ph0", i(1)),
        ("pw0", i(1)),
        ("ph1", i(1)),
        ("pw1", i(0)),
        ("dh", i(1)),
        ("dw", i(1)),
        ("G", i(1)),
    ];
    let mut k = lower("ops/prelude.tc", "conv2d", &dims, &scalars);
    assert_eq!(verify_block(&k), Ok(()));
    strip_constraints(&mut k);
    fails(&k, &["is out of bounds: offset"]);
}

#[test]
fn a_kernel_input_may_not_be_written() {
    let mut k = conv();
    child(&mut k).refs[0].dir = RefDir::InOut;
    fails(
        &k,
        &["main/conv: refinement `i` is inout and so writes `I`, but `I` in the parent `main` is in"],
    );
}

#[test]
fn a_kernel_output_may_be_read_back() {
    let mut k = conv();
    child(&mut k).refs[2].dir = RefDir::InOut;
    assert_eq!(verify_block(&k), Ok(()));
}

#[test]
fn a_huge_assign_box_cannot_be_proved_injective() {
    let mut k = conv();
    let c = child(&mut k);
    c.idxs = vec![idx("x", 8), idx("k", 1 << 18)];
    c.constraints = vec![af(&[("k", -1)], 2)];
    c.refs[1].access[0] = af(&[("k", 1)], 0);
    c.refs[2].agg = Agg::Assign;
    fails(
        &k,
        &["main/conv: refinement `o` has aggregation assign, and the verifier cannot prove that no element is written by two points"],
    );
}

#[test]
fn a_declared_buffer_has_row_major_strides() {
    let mut k = conv();
    k.refs[0].shape[0].stride = 2;
    fails(
        &k,
        &["main: refinement `I` declares a buffer, so its strides must be row-major for its sizes, not (2)"],
    );
}

/// The kernel text files of `tests/files/kernel_verify/`: each starts with
/// `# verify: ok` or `# verify: error FRAGMENT`, and the verifier must
/// accept the kernel, or reject it with a message containing the fragment.
#[test]
fn kernel_verify_files_are_accepted_or_rejected_as_their_headers_say() {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/files/kernel_verify");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/files/kernel_verify exists")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "kernel"))
        .collect();
    files.sort();
    assert!(files.len() >= 9, "kernel_verify files are missing");
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let header = text.lines().next().unwrap_or_default();
        // The leading `#` lines are the header and comments, not kernel text.
        let body: Vec<&str> = text.lines().skip_while(|l| l.starts_with('#')).collect();
        let b = kernel::parse_block(&body.join("\n"))
            .unwrap_or_else(|e| panic!("{}: does not parse: {e:?}", path.display()));
        let got = verify_block(&b);
        steps_alone_agree(&b);
        if header == "# verify: ok" {
            assert!(got.is_ok(), "{}: rejected: {got:?}", path.display());
        } else {
            let fragment = header
                .strip_prefix("# verify: error ")
                .unwrap_or_else(|| panic!("{}: bad header {header:?}", path.display()));
            let errs = got.err().unwrap_or_default();
            assert!(
                errs.iter().any(|e| e.contains(fragment)),
                "{}: want an error containing {fragment:?}, got {errs:?}",
                path.display()
            );
        }
    }
}
