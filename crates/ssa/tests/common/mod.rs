//! What the ssa crate's integration tests share.

/// Asserts that the statements of `def`, each printed as TC, are the
/// non-empty lines of `expect` (trimmed); `what` names them in a failure.
pub fn assert_statements(def: &ir::Def, expect: &str, what: &str) {
    let got: Vec<String> = def
        .stmts
        .iter()
        .map(|s| match s {
            ir::Stmt::Comp(c) => ir::print_comprehension(def, c, None),
            other => format!("{other:?}"),
        })
        .collect();
    let want: Vec<&str> = expect
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(got, want, "{what}");
}
