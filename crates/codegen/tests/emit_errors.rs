//! Kernels the emitter refuses give an `EmitError` that names the block (by
//! its path from the root), the statement where one is at fault, and why;
//! the emitter never panics on them.

use codegen::emit::{emit_c, EmitError};

/// Emits `text` (a kernel in the text form) and returns its error.
fn refused(text: &str) -> EmitError {
    let b = kernel::parse_block(text).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    match emit_c(&b, "k") {
        Ok(p) => panic!("emitted, expected an error:\n{}", p.source),
        Err(e) => e,
    }
}

/// Checks the error's block, statement and message fragment.
fn expect(e: &EmitError, block: &str, statement: Option<usize>, fragment: &str) {
    assert_eq!(e.block, block, "{e}");
    assert_eq!(e.statement, statement, "{e}");
    assert!(e.message.contains(fragment), "`{fragment}` not in: {e}");
    let shown = e.to_string();
    assert!(
        shown.starts_with(&format!("cannot emit C for block `{block}`")),
        "{shown}"
    );
}

#[test]
fn a_root_statement_that_is_no_block_is_refused() {
    let e = refused(
        "block k []\n  out new O int32(1):(1)\n{\n  $c = const.int32(1)\n  O = store($c)\n}\n",
    );
    expect(&e, "k", Some(0), "not a block");
}

#[test]
fn a_kernel_that_does_not_verify_is_refused() {
    let e = refused(
        "block k []\n  in new X float32(5):(1)\n  out new O float32(5):(1)\n{\n  block s [i:5]\n    in X[i + 1] float32(1):(1)\n    out O[i] float32(1):(1)\n  {\n    $x = load(X)\n    O = store($x)\n  }\n}\n",
    );
    expect(&e, "k", None, "does not verify");
}

#[test]
fn operands_of_another_type_are_refused() {
    let e = refused(
        "block k []\n  in new X float32(4):(1)\n  in new Y float64(4):(1)\n  out new O float32(4):(1)\n{\n  block s [i:4]\n    in X[i] float32(1):(1)\n    in Y[i] float64(1):(1)\n    out O[i] float32(1):(1)\n  {\n    $x = load(X)\n    $y = load(Y)\n    $z = add.float32($x, $y)\n    O = store($z)\n  }\n}\n",
    );
    expect(&e, "k/s", Some(2), "operand `y` is float64");
}

#[test]
fn a_store_of_another_type_is_refused() {
    let e = refused(
        "block k []\n  out new O float32(4):(1)\n{\n  block s [i:4]\n    out O[i] float32(1):(1)\n  {\n    $x = index(i)\n    O = store($x)\n  }\n}\n",
    );
    expect(&e, "k/s", Some(1), "of type int64 into `O` of type float32");
}

#[test]
fn a_select_on_a_number_and_a_gather_at_a_float_are_refused() {
    let e = refused(
        "block k []\n  out new O int64(4):(1)\n{\n  block s [i:4]\n    out O[i] int64(1):(1)\n  {\n    $x = index(i)\n    $y = select.int64($x, $x, $x)\n    O = store($y)\n  }\n}\n",
    );
    expect(&e, "k/s", Some(1), "condition");
    let e = refused(
        "block k []\n  in new X float32(4):(1)\n  out new O float32(4):(1)\n{\n  block s [i:4]\n    in X_all = X[0] float32(4):(1)\n    out O[i] float32(1):(1)\n  {\n    $f = const.float32(1.0)\n    $g = gather(X_all, $f)\n    O = store($g)\n  }\n}\n",
    );
    expect(&e, "k/s", Some(1), "not an integer");
}

#[test]
fn bad_prefixes_are_refused() {
    let b = kernel::parse_block("block k []\n{\n}\n").unwrap_or_else(|e| panic!("{e:?}"));
    for p in ["", "2x", "a-b", "tsr_k", "a b"] {
        let e = emit_c(&b, p).expect_err(p);
        expect(&e, "k", None, "prefix");
    }
    assert!(emit_c(&b, "_ok2").is_ok());
}

#[test]
fn roots_with_indices_are_refused() {
    let e = refused("block k [i:2]\n  out new O int32(2):(1)\n{\n}\n");
    expect(&e, "k", None, "indices or constraints");
}

#[test]
fn large_local_buffers_and_bad_layouts_are_refused() {
    let e = refused(
        "block k []\n  out new O float32(2):(1)\n{\n  block s [i:2]\n    out O[i] float32(1):(1)\n    inout new L float32(100000):(1)\n  {\n    $z = const.int64(0)\n    $x = gather(L, $z)\n    O = store($x)\n  }\n}\n",
    );
    expect(&e, "k/s", None, "local buffer `L` takes 400000 bytes");
    let e = refused("block k []\n  in new X float32(4):(2)\n{\n}\n");
    expect(
        &e,
        "k",
        None,
        "refinement `X` declares a buffer, so its strides must be row-major",
    );
}

#[test]
fn forms_that_may_overflow_are_refused() {
    let e = refused(
        "block k []\n  out new O int64(4):(1)\n{\n  block s [i:4]\n    out O[i] int64(1):(1)\n  {\n    $x = index(4611686018427387904*i)\n    O = store($x)\n  }\n}\n",
    );
    expect(&e, "k/s", Some(0), "overflow");
}
