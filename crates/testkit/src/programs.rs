//! Checked programs of the repository: the operator prelude, checked once
//! per test binary, and any TC file by its path from the workspace root.

use std::path::PathBuf;
use std::sync::OnceLock;

use ir::Program;

/// The workspace root (the directory of `ops/`, `examples/`, `tests/`).
pub fn root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// The TC file at `path` (relative to the workspace root), checked.
///
/// # Panics
///
/// If the file cannot be read or does not check; the panic shows the
/// rendered diagnostics, since a test cannot go on without its program.
pub fn load(path: &str) -> Program {
    let text = std::fs::read_to_string(root().join(path))
        .unwrap_or_else(|e| panic!("cannot read {path}: {e}"));
    match tc::check_source(&text) {
        Ok(checked) => checked.program,
        Err(diags) => panic!("{}", tc::render_diagnostics(&diags, path, &text)),
    }
}

/// The operator prelude (`ops/prelude.tc`), checked on the first call and
/// shared by every later one in the same test binary.
///
/// # Panics
///
/// As [`load`], if the prelude does not check.
pub fn prelude() -> &'static Program {
    static PRELUDE: OnceLock<Program> = OnceLock::new();
    PRELUDE.get_or_init(|| load("ops/prelude.tc"))
}

/// The operator prelude's text with `text` after it, checked: a test's
/// program that calls prelude operators.
///
/// # Panics
///
/// If the program does not check; the panic shows the diagnostics.
pub fn with_prelude(text: &str) -> Program {
    let prelude = std::fs::read_to_string(root().join("ops/prelude.tc"))
        .unwrap_or_else(|e| panic!("cannot read ops/prelude.tc: {e}"));
    let source = format!("{prelude}\n{text}");
    match tc::check_source(&source) {
        Ok(checked) => checked.program,
        Err(diags) => panic!("{}", tc::render_diagnostics(&diags, "test", &source)),
    }
}
