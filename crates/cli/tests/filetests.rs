//! File tests: the `tessera` binary is run on every `*.tc` and `*.py` under
//! `tests/files/` (workspace root) and its exit code, standard output and
//! standard error are compared with the expectation written in the file.
//!
//! The first line of a test file names the kind of test and the command's
//! arguments; the file's path goes right after the subcommand:
//!
//! ```text
//! # test: check --size H=8          `tessera check FILE --size H=8`, full output
//! # test: run --def f --seed 7      `tessera run FILE --def f --seed 7`, full output
//! # test: split --def f             `tessera split FILE --def f`, full output
//! # test: verify --def f --def-b g  `tessera verify FILE --def f --def-b g`
//! # test: optimize --estimate-only  `tessera optimize FILE --estimate-only`
//! # test: derive --top-k 0 ...      `tessera derive FILE --top-k 0 ...`
//! # test: reject                    `tessera check FILE` must fail
//! # test: reject run --def f        `tessera run FILE --def f` must fail
//! # test: reject bench --runs 1      `tessera bench FILE --runs 1` must fail
//! # test: functionalize --input n=3  a Python file (`*.py`): `tessera functionalize FILE ...`
//! # test: reject --size N=4          a Python file that `tessera functionalize` must refuse
//! ```
//!
//! `bench` appears only in rejection tests: its output is timings. For
//! the same reason a full-output `optimize` test (and a `run --optimize`
//! one) takes `--estimate-only` and a fixed `--target`
//! (`tests/files/optimize/machine.target`), and a `derive` test takes
//! `--top-k 0` (the estimate alone decides, and no time is printed). A test with `--optimize` runs
//! without the optimizer's cached results, so that it always searches.
//!
//! A full-output test ends with its expectation, every line commented:
//!
//! ```text
//! # expect:
//! # exit: 0
//! # ...standard output, line by line...
//! # stderr:
//! # ...standard error, line by line (only when there is some)...
//! ```
//!
//! `BLESS=1 cargo test -p tessera --test filetests` rewrites these blocks in
//! place from what the binary prints; review the diff before committing.
//!
//! A rejection test carries hand-written lines instead, which blessing never
//! touches: `# error: FRAGMENT` (each fragment must appear in standard error)
//! and `# at: LINE:COL` or `# at: LINE` (standard error must point at
//! `FILE:LINE:COL`). The binary must exit with status 1, print nothing on
//! standard output, start standard error with `error:`, and never panic.
//!
//! The file path is given relative to the workspace root, which is the
//! working directory, so messages show `tests/files/...`.

use std::path::{Path, PathBuf};
use std::process::Command;

use testkit::filetest;

/// The subcommands a test may run (`bench` only to be rejected).
const KINDS: [&str; 9] = [
    "check",
    "run",
    "lower",
    "split",
    "verify",
    "optimize",
    "derive",
    "bench",
    "functionalize",
];

fn root() -> PathBuf {
    testkit::root()
        .canonicalize()
        .expect("the workspace root exists")
}

/// What one run of the binary did.
struct Outcome {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Outcome {
    /// The outcome in the form a full-output expectation records it.
    fn render(&self) -> String {
        let mut s = match self.code {
            Some(c) => format!("exit: {c}\n"),
            None => "exit: killed by a signal\n".to_string(),
        };
        push_stream(&mut s, &self.stdout);
        if !self.stderr.is_empty() {
            s.push_str("stderr:\n");
            push_stream(&mut s, &self.stderr);
        }
        s
    }
}

fn push_stream(s: &mut String, text: &str) {
    s.push_str(text);
    if !text.is_empty() && !text.ends_with('\n') {
        s.push_str("\n(no newline at end)\n");
    }
}

/// Compiled kernels and the probed target go to a cache of the test
/// build's own, not the user's.
fn cache() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("filetests-cache")
}

fn tessera(root: &Path, args: &[String]) -> Outcome {
    let cache = cache();
    let out = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(args)
        .current_dir(root)
        .env("TESSERA_CACHE_DIR", &cache)
        .output()
        .expect("the tessera binary starts");
    Outcome {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A test file's first line, read.
struct Header {
    reject: bool,
    /// The subcommand and its arguments, without the file.
    subcommand: String,
    args: Vec<String>,
}

/// `default` is the subcommand a bare `reject` runs: `check` for TC files,
/// `functionalize` for Python ones.
fn parse_header(text: &str, default: &str) -> Result<Header, String> {
    let first = text.lines().next().unwrap_or("");
    let spec = first
        .strip_prefix("# test:")
        .ok_or_else(|| format!("the first line must be `# test: KIND ARGS...`, found `{first}`"))?;
    let mut words: Vec<String> = spec.split_whitespace().map(str::to_string).collect();
    let reject = words.first().is_some_and(|w| w == "reject");
    if reject {
        words.remove(0);
        if words.first().is_none_or(|w| w.starts_with("--")) {
            words.insert(0, default.to_string());
        }
    }
    if words.is_empty() {
        return Err("the header names no test kind".to_string());
    }
    let subcommand = words.remove(0);
    if !KINDS.contains(&subcommand.as_str()) {
        return Err(format!(
            "unknown test kind `{subcommand}`; kinds: reject, {}",
            KINDS.join(", ")
        ));
    }
    Ok(Header {
        reject,
        subcommand,
        args: words,
    })
}

/// The last `max` characters of `s` at most, for failure messages.
fn tail(s: &str, max: usize) -> &str {
    let n = s.chars().count();
    match s.char_indices().nth(n.saturating_sub(max)) {
        Some((k, _)) => &s[k..],
        None => s,
    }
}

/// Lines `# KEY: value` of a file, values trimmed.
fn tagged<'t>(text: &'t str, key: &str) -> Vec<&'t str> {
    let prefix = format!("# {key}:");
    text.lines()
        .filter_map(|l| l.strip_prefix(&prefix))
        .map(str::trim)
        .collect()
}

fn check_rejection(text: &str, shown: &str, out: &Outcome) -> Result<(), String> {
    let fragments = tagged(text, "error");
    if fragments.is_empty() {
        return Err("a rejection test needs at least one `# error: FRAGMENT` line".to_string());
    }
    if text.lines().any(|l| l == filetest::EXPECT) {
        return Err("a rejection test has no `# expect:` block; use `# error:` lines".to_string());
    }
    let mut problems = Vec::new();
    if out.code != Some(1) {
        problems.push(format!("exit status {:?}, expected 1", out.code));
    }
    if !out.stdout.is_empty() {
        problems.push("standard output is not empty".to_string());
    }
    if !out.stderr.starts_with("error:") {
        problems.push("standard error does not start with `error:`".to_string());
    }
    if out.stderr.contains("panicked") || out.stdout.contains("panicked") {
        problems.push("the binary panicked".to_string());
    }
    for f in &fragments {
        if !out.stderr.contains(f) {
            problems.push(format!("standard error lacks: {f}"));
        }
    }
    for at in tagged(text, "at") {
        let place = if at.contains(':') {
            format!("--> {shown}:{at}")
        } else {
            format!("--> {shown}:{at}:")
        };
        if !out.stderr.contains(&place) {
            problems.push(format!("standard error does not point at: {place}"));
        }
    }
    if problems.is_empty() {
        return Ok(());
    }
    Err(format!(
        "{}\nstandard output:\n{}\nstandard error:\n{}",
        problems.join("\n"),
        tail(&out.stdout, 2000),
        tail(&out.stderr, 4000)
    ))
}

fn default_kind(path: &Path) -> &'static str {
    if path.extension().is_some_and(|e| e == "py") {
        "functionalize"
    } else {
        "check"
    }
}

/// Runs the file test at `path`: a rejection test, or a full-output test
/// whose expectation is rewritten instead of compared under `BLESS=1`.
fn check(path: &Path) -> Result<(), String> {
    let root = root();
    let shown = filetest::shown(path);
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read: {e}"))?;
    let text = String::from_utf8_lossy(&bytes);
    let header = parse_header(&text, default_kind(path))?;
    let mut args = vec![header.subcommand.clone(), shown.clone()];
    args.extend(header.args.iter().cloned());
    if header.args.iter().any(|a| a == "--optimize") {
        // The test is of a search: the optimizer's cached result of an
        // earlier run of it would be reused, and the line saying what
        // happened would say so.
        let _ = std::fs::remove_dir_all(cache().join("optimize"));
    }
    let out = tessera(&root, &args);
    if header.reject {
        return check_rejection(&text, &shown, &out);
    }
    filetest::check_block(path, &text, &out.render())
}

#[test]
fn every_file_test_passes() {
    let root = root();
    let dir = root.join("tests/files");
    // `tests/files/layout/` holds TC programs for `opt`'s layout harness
    // (crates/opt/tests/layout.rs), not for the binary.
    let mut files = filetest::files(&dir, "tc");
    files.extend(filetest::files(&dir, "py"));
    files.retain(|f| !f.starts_with(dir.join("layout")));
    let mut failures = Vec::new();
    let (mut rejects, mut full) = (0, 0);
    for f in &files {
        let text = std::fs::read(f)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
        if parse_header(&text, default_kind(f)).is_ok_and(|h| h.reject) {
            rejects += 1;
        } else {
            full += 1;
        }
        if let Err(e) = check(f) {
            failures.push(format!(
                "FAIL {}\n{e}",
                f.strip_prefix(&root).unwrap_or(f).display()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} file tests failed:\n\n{}",
        failures.len(),
        files.len(),
        failures.join("\n\n")
    );
    // The corpus cannot silently disappear.
    assert!(
        full >= 30,
        "only {full} full-output file tests under {}",
        dir.display()
    );
    assert!(
        rejects >= 45,
        "only {rejects} rejection file tests under {}",
        dir.display()
    );
}

/// Runs a rejection test whose program is generated: `body` is written after
/// the header into a scratch file, followed by the expected fragment.
fn reject_generated(name: &str, body: &[u8], fragment: &str, at: Option<&str>) {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("filetests");
    std::fs::create_dir_all(&dir).expect("the scratch directory can be created");
    let path = dir.join(format!("{name}.tc"));
    let mut text = b"# test: reject\n".to_vec();
    text.extend_from_slice(body);
    text.extend_from_slice(format!("\n# error: {fragment}\n").as_bytes());
    if let Some(at) = at {
        text.extend_from_slice(format!("# at: {at}\n").as_bytes());
    }
    std::fs::write(&path, text).expect("the scratch file can be written");
    if let Err(e) = check(&path) {
        panic!("{}: {e}", path.display());
    }
}

/// `def f(float(N) A) -> (B) {` + one statement whose right side is `rhs`.
fn one_statement(rhs: &str) -> Vec<u8> {
    format!("def f(float(N) A) -> (B) {{\n  B(i) = {rhs}\n}}\n").into_bytes()
}

#[test]
fn ten_thousand_parentheses_are_rejected_without_overflow() {
    let rhs = format!("{}A(i){}", "(".repeat(10_000), ")".repeat(10_000));
    // The header is line 1, so the statement is on line 3; the 257th `(`
    // (column 10 + 256) is the first one past the nesting limit.
    reject_generated(
        "parens",
        &one_statement(&rhs),
        "nested more than 256 levels deep",
        Some("3:266"),
    );
}

#[test]
fn a_hundred_thousand_unary_minuses_are_rejected_without_overflow() {
    let rhs = format!("{}A(i)", "-".repeat(100_000));
    reject_generated(
        "minuses",
        &one_statement(&rhs),
        "nested more than 256 levels deep",
        Some("3:266"),
    );
}

#[test]
fn a_hundred_thousand_term_sum_is_rejected_without_overflow() {
    let rhs = vec!["A(i)"; 100_000].join(" + ");
    reject_generated(
        "sum",
        &one_statement(&rhs),
        "nested more than 256 levels deep",
        Some("3"),
    );
}

#[test]
fn a_file_that_is_not_utf8_is_rejected() {
    let mut body = b"def f(float(N) A) -> (B) {\n  B(i) = A(i) ".to_vec();
    body.extend_from_slice(&[0xff, 0xfe, 0x80, 0xc3]);
    body.extend_from_slice(b"\n}\n");
    // The header line is 15 bytes, so the first bad byte is byte 56.
    reject_generated("not_utf8", &body, "is not valid UTF-8 (byte 56)", None);
}

#[test]
fn the_paper_examples_get_the_papers_ranges() {
    let root = root();
    let cases = [
        ("mv", "i in 0:M, k in 0:K"),
        ("conv2d", "h in 0:H-KH+1, w in 0:W-KW+1"),
        ("conv1d", "i in 0:M-N+1, x in 0:N"),
        // floor((H-2)/2)+1 = floor(H/2).
        ("maxpool2x2", "i in 0:H/2, j in 0:W/2"),
    ];
    for (name, ranges) in cases {
        let file = format!("tests/files/check/paper/{name}.tc");
        let out = tessera(&root, &["check".to_string(), file.clone()]);
        assert_eq!(out.code, Some(0), "{file}: {}", out.stderr);
        assert!(
            out.stdout.contains(ranges),
            "{file}: expected `{ranges}` in\n{}",
            out.stdout
        );
    }
}
