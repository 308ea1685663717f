//! What the runtime's end-to-end tests share: a fresh kernel cache, the
//! build options they compile with, and the comparison of compiled values
//! with the interpreter's.

use std::path::PathBuf;

use codegen::cache::KernelCache;
use codegen::compile::Compiler;
use ir::Value;

/// A compiled value against the interpreter's: floats within 1e-4
/// relative (the library sums in its own order), everything else exactly.
pub fn close(got: &Value, want: &Value) -> bool {
    match (got, want) {
        (Value::Float(a), Value::Float(b)) => {
            a == b || (a - b).abs() <= 1e-4 * b.abs().max(1.0) || (a.is_nan() && b.is_nan())
        }
        _ => got == want,
    }
}

/// An empty kernel cache of this test process, so that builds compile.
pub fn cache(name: &str) -> KernelCache {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("runtime-cache-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    KernelCache::open(dir, Compiler::detect().expect("a C compiler")).expect("a cache")
}

/// The cpu pipeline for a machine with 512-bit vectors, matmuls by the
/// library or not.
pub fn options(library: bool) -> runtime::Options {
    runtime::Options {
        passes: kernel::parse_pipeline(kernel::builtin_pipeline("cpu").unwrap_or_default())
            .unwrap(),
        target: kernel::Target {
            vector_bits: 512,
            vector_registers: 32,
            ..kernel::Target::generic()
        },
        verify: kernel::Verify::AtEnd,
        library,
        kernel_options: kernel::Options::default(),
    }
}
