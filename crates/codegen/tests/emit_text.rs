//! File tests of the emitted C: a few kernels of `examples/`, lowered and
//! run through the cpu pipeline for the generic target, must emit exactly
//! the C in `tests/files/emit/NAME.c` (sgemm, a padded convolution layer
//! with bias, ReLU and max pooling, the prelude's channel-blocked
//! convolution, whose register-blocked reduction prefetches the next
//! output block's weights, and a gather). `BLESS=1 cargo test -p
//! codegen --test emit_text` rewrites the files from what the emitter
//! writes; review the diff before committing. The expected files are
//! complete C programs, so they also show what the backend writes.

mod emit_common;

use std::path::PathBuf;

use codegen::emit::emit_c;
use emit_common::{case, cpu, load, Outcome};
use ir::Value;
use testkit::filetest;

/// The expected file of `name`.
fn expected_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/files/emit")
        .join(format!("{name}.c"))
}

/// Emits `def` of `file` at `sizes` and compares with (or, under `BLESS=1`,
/// writes) the expected file; returns a problem, if any.
fn check(
    name: &str,
    file: &str,
    def: &str,
    sizes: &[(&str, i64)],
    scalars: &[(&str, Value)],
) -> Option<String> {
    let Outcome::Case(c) = case(&load(file), def, 1, sizes, scalars) else {
        return Some(format!("{name}: {def} does not lower at {sizes:?}"));
    };
    let kernel = cpu(&c.block, &kernel::Target::generic(), name);
    let got = match emit_c(&kernel, name) {
        Ok(p) => p.source,
        Err(e) => return Some(format!("{name}: {e}")),
    };
    filetest::check_file(&expected_path(name), &got).err()
}

#[test]
fn emitted_c_matches_the_expected_files() {
    let problems: Vec<String> = [
        check(
            "sgemm",
            "examples/paper/sgemm.tc",
            "sgemm",
            &[("M", 64), ("N", 64), ("K", 64)],
            &[("a", Value::Float(1.5)), ("b", Value::Float(-0.5))],
        ),
        check(
            "layer",
            "examples/quickstart/layer.tc",
            "layer",
            &[
                ("N", 1),
                ("C", 2),
                ("H", 5),
                ("W", 7),
                ("F", 3),
                ("KH", 3),
                ("KW", 3),
            ],
            &[],
        ),
        check(
            "conv_nchwc",
            "ops/prelude.tc",
            "conv2d_nchwc",
            &[
                ("N", 1),
                ("CB", 2),
                ("H", 4),
                ("W", 8),
                ("L", 8),
                ("FB", 2),
                ("KH", 3),
                ("KW", 3),
                ("M", 8),
            ],
            &[
                ("sh", Value::Int(1)),
                ("sw", Value::Int(1)),
                ("ph0", Value::Int(1)),
                ("pw0", Value::Int(1)),
                ("ph1", Value::Int(1)),
                ("pw1", Value::Int(1)),
                ("dh", Value::Int(1)),
                ("dw", Value::Int(1)),
            ],
        ),
        check(
            "gather",
            "examples/paper/gather.tc",
            "gather",
            &[("N", 5), ("A", 3), ("B", 20)],
            &[],
        ),
    ]
    .into_iter()
    .flatten()
    .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
