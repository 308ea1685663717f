//! The file-test conventions shared by every runner: where a file keeps its
//! expectation, how it is compared, and the one bless rule.
//!
//! A file test holds its input and, after a line `# expect:`, the expected
//! output with every line commented (`# TEXT`, or `#` alone for an empty
//! line) — or, for outputs that are files themselves (emitted C), the whole
//! expected file stands apart. Each boundary under test has its own
//! `check(input, expect)` in its test file (what to run and what to render);
//! this module does the rest: it finds the files, reads and writes
//! expectation blocks, shows a line diff on a mismatch, and rewrites the
//! expectation instead when the environment has `BLESS=1` — that exact
//! value and no other, so a stray `BLESS=0` or `BLESS=` never rewrites
//! anything. Review the diff of a blessed file before committing it.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The line that starts a file's expectation block.
pub const EXPECT: &str = "# expect:";

/// Whether this run rewrites expectations: `BLESS=1` and nothing else.
pub fn blessing() -> bool {
    std::env::var_os("BLESS").is_some_and(|v| v == "1")
}

/// Every file under `dir` (recursively) whose name ends in `.{ext}`, sorted.
///
/// # Panics
///
/// If a directory cannot be listed: a test corpus that cannot be read must
/// fail rather than pass empty.
pub fn files(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries =
            std::fs::read_dir(&d).unwrap_or_else(|e| panic!("cannot list {}: {e}", d.display()));
        for e in entries {
            let p = e.expect("a readable directory entry").path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == ext) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// `path` relative to the workspace root with `/` separators, as messages
/// and tools show it (the path itself when it is outside the root).
pub fn shown(path: &Path) -> String {
    let root = crate::root()
        .canonicalize()
        .unwrap_or_else(|_| crate::root());
    let full = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    match full.strip_prefix(&root) {
        Ok(rel) => rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/"),
        Err(_) => path.display().to_string(),
    }
}

/// The part of `text` before its expectation block (all of it when there is
/// none).
pub fn input(text: &str) -> &str {
    match block_start(text) {
        Some(k) => &text[..k],
        None => text,
    }
}

/// The byte offset of the `# expect:` line, if `text` has one.
fn block_start(text: &str) -> Option<usize> {
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        if line.trim_end_matches(['\n', '\r']) == EXPECT {
            return Some(at);
        }
        at += line.len();
    }
    None
}

/// The expectation block of `text`, uncommented; `None` when there is none.
///
/// # Errors
///
/// A line of the block that is neither `#` nor starts with `# `.
pub fn expectation(text: &str) -> Result<Option<String>, String> {
    let Some(k) = block_start(text) else {
        return Ok(None);
    };
    let mut out = String::new();
    for l in text[k..].lines().skip(1) {
        let body = if l == "#" {
            ""
        } else {
            l.strip_prefix("# ")
                .ok_or_else(|| format!("expectation line `{l}` does not start with `# `"))?
        };
        out.push_str(body);
        out.push('\n');
    }
    Ok(Some(out))
}

/// `text` with its expectation block (added if missing) holding `actual`.
pub fn blessed(text: &str, actual: &str) -> String {
    let mut out = input(text).to_string();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(EXPECT);
    out.push('\n');
    for l in actual.lines() {
        if l.is_empty() {
            out.push_str("#\n");
        } else {
            let _ = writeln!(out, "# {l}");
        }
    }
    out
}

/// Compares `actual` with the expectation block of the file at `path`
/// (whose text is `text`); under `BLESS=1` rewrites the block instead.
///
/// # Errors
///
/// A missing or different expectation (with a line diff), a malformed
/// block, or a file that cannot be blessed.
pub fn check_block(path: &Path, text: &str, actual: &str) -> Result<(), String> {
    let expected = expectation(text)?;
    if expected.as_deref() == Some(actual) {
        return Ok(());
    }
    if blessing() {
        // Re-read strictly: blessing must not rewrite bytes that were
        // replaced when the caller read the file leniently.
        let original = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot bless {}: {e}", path.display()))?;
        return std::fs::write(path, blessed(&original, actual))
            .map_err(|e| format!("cannot bless {}: {e}", path.display()));
    }
    match expected {
        None => Err(format!(
            "no `{EXPECT}` block (run with BLESS=1 to write one); the output is:\n{actual}"
        )),
        Some(e) => Err(format!(
            "the output differs from the expectation (BLESS=1 rewrites it):\n{}",
            diff(&e, actual)
        )),
    }
}

/// Compares `actual` with the whole file at `path`, an expected output kept
/// apart from its input; under `BLESS=1` writes the file instead.
///
/// # Errors
///
/// A missing or different file (with a line diff), or a failed write.
pub fn check_file(path: &Path, actual: &str) -> Result<(), String> {
    let expected = std::fs::read_to_string(path).ok();
    if expected.as_deref() == Some(actual) {
        return Ok(());
    }
    if blessing() {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        return std::fs::write(path, actual)
            .map_err(|e| format!("cannot bless {}: {e}", path.display()));
    }
    match expected {
        None => Err(format!(
            "{} is missing or unreadable (run with BLESS=1 to write it)",
            path.display()
        )),
        Some(e) => Err(format!(
            "{} differs from the output (BLESS=1 rewrites it):\n{}",
            path.display(),
            diff(&e, actual)
        )),
    }
}

/// Runs `check` on every file of `files` and panics with every failure (not
/// just the first) when any fails; `what` names the tests in the message.
///
/// # Panics
///
/// If `files` is empty (a corpus must not silently disappear) or any check
/// fails.
pub fn run_all(what: &str, files: &[PathBuf], check: impl Fn(&Path) -> Result<(), String>) {
    assert!(!files.is_empty(), "no {what} found");
    let failures: Vec<String> = files
        .iter()
        .filter_map(|f| check(f).err().map(|e| format!("FAIL {}\n{e}", shown(f))))
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} {what} failed:\n\n{}",
        failures.len(),
        files.len(),
        failures.join("\n\n")
    );
}

/// A line diff of `expected` against `actual` (longest common subsequence),
/// with up to three unchanged lines around each change.
pub fn diff(expected: &str, actual: &str) -> String {
    let a: Vec<&str> = expected.lines().collect();
    let b: Vec<&str> = actual.lines().collect();
    let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let mut ops: Vec<(char, &str)> = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            ops.push((' ', a[i]));
            i += 1;
            j += 1;
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            ops.push(('-', a[i]));
            i += 1;
        } else {
            ops.push(('+', b[j]));
            j += 1;
        }
    }
    let near_change = |k: usize| {
        ops[k.saturating_sub(3)..(k + 4).min(ops.len())]
            .iter()
            .any(|(c, _)| *c != ' ')
    };
    let mut out = String::from("--- expected\n+++ actual\n");
    let mut elided = false;
    for (k, (c, line)) in ops.iter().enumerate() {
        if near_change(k) {
            let _ = writeln!(out, "{c} {line}");
            elided = false;
        } else if !elided {
            out.push_str("  ...\n");
            elided = true;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_diff_shows_changed_lines_with_context() {
        let d = diff("a\nb\nc\nd\ne\nf\ng\nh\n", "a\nb\nc\nd\nE\nf\ng\nh\n");
        assert_eq!(
            d,
            "--- expected\n+++ actual\n  ...\n  b\n  c\n  d\n- e\n+ E\n  f\n  g\n  h\n"
        );
    }

    #[test]
    fn blessing_replaces_only_the_expectation() {
        let text = "# test: check\ndef f() -> () {\n}\n# expect:\n# exit: 1\n# old\n";
        let out = blessed(text, "exit: 0\n\nnew\n");
        assert_eq!(
            out,
            "# test: check\ndef f() -> () {\n}\n# expect:\n# exit: 0\n#\n# new\n"
        );
        assert_eq!(
            expectation(&out).unwrap().as_deref(),
            Some("exit: 0\n\nnew\n")
        );
    }

    #[test]
    fn blessing_adds_a_missing_block() {
        assert_eq!(blessed("input", "out\n"), "input\n# expect:\n# out\n");
        assert_eq!(expectation("input\n").unwrap(), None);
    }

    #[test]
    fn a_malformed_block_is_an_error() {
        let e = expectation("x\n# expect:\n# fine\nnot commented\n").unwrap_err();
        assert!(e.contains("`not commented`"), "{e}");
    }

    #[test]
    fn only_the_expect_line_itself_starts_the_block() {
        // A line that merely contains the marker is input.
        let text = "a # expect:\n# expect:\n# b\n";
        assert_eq!(input(text), "a # expect:\n");
        assert_eq!(expectation(text).unwrap().as_deref(), Some("b\n"));
    }
}
