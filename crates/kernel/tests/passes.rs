//! File tests of kernel passes: every `tests/files/pass/*.kernel` starts
//! with `# pass: NAME[,NAME...]`, then optional `# target: KEY = VALUE`
//! lines that change the generic target the passes run for (its text
//! form's keys), then a kernel in the text format, then
//! `# expect:` and the kernel the passes must produce, each line prefixed by
//! `# `. The harness parses the input, runs the passes (verifying after
//! each), compares the printed result with the expectation, and runs the
//! VM before and after on seeded random inputs: the results must agree
//! (within 1e-5 relative for floats). `BLESS=1` rewrites expectations
//! (`testkit::filetest`).

mod common;

use std::path::{Path, PathBuf};

use ir::{DType, Value};
use kernel::{Block, RefDir};
use testkit::{filetest, Rng};

fn files() -> Vec<PathBuf> {
    filetest::files(&testkit::root().join("tests/files/pass"), "kernel")
}

/// Seeded values for every root input (floats in [-1, 1), integers in
/// [0, 4)).
fn inputs(b: &Block, seed: u64) -> kernel::vm::Buffers {
    let mut rng = Rng::new(seed);
    b.refs
        .iter()
        .filter(|r| matches!(r.dir, RefDir::In | RefDir::InOut) && !r.tags.contains("temp"))
        .map(|r| {
            let len: u64 = r.shape.iter().map(|d| d.size).product();
            let vals = (0..len)
                .map(|_| match r.dtype {
                    DType::Bool => Value::Bool(rng.coin()),
                    t if t.is_float() => Value::Float(rng.unit_f32()),
                    _ => Value::Int(rng.below(4) as i64),
                })
                .collect();
            (r.into.clone(), vals)
        })
        .collect()
}

/// The generic target with the `key = value` lines of the input's
/// `# target:` header lines in place of its own (a pass sized by the
/// target's register model, for one, is tested on several register files).
fn target(input: &str) -> Result<kernel::Target, String> {
    let overrides: Vec<&str> = input
        .lines()
        .filter_map(|l| l.strip_prefix("# target:"))
        .map(str::trim)
        .collect();
    let key = |l: &str| l.split('=').next().unwrap_or("").trim().to_string();
    let keys: Vec<String> = overrides.iter().map(|l| key(l)).collect();
    let mut text: String = kernel::Target::generic()
        .to_text()
        .lines()
        .filter(|l| !keys.contains(&key(l)))
        .map(|l| format!("{l}\n"))
        .collect();
    for l in overrides {
        text.push_str(&format!("{l}\n"));
    }
    kernel::Target::from_text(&text).map_err(|e| format!("`# target:` lines: {e}"))
}

fn check(path: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let header = text.lines().next().unwrap_or("");
    let passes: Vec<String> = header
        .strip_prefix("# pass:")
        .ok_or("the first line must be `# pass: NAME[,NAME...]`")?
        .split(',')
        .map(|s| s.trim().to_string())
        .collect();
    let input = filetest::input(&text);
    let target = target(input)?;
    let body: String = input
        .lines()
        .skip(1)
        .filter(|l| !l.starts_with("# target:"))
        .map(|l| format!("{l}\n"))
        .collect();
    let before = kernel::parse_block(&body).map_err(|e| format!("input: {e}"))?;
    kernel::verify_block(&before).map_err(|e| format!("input does not verify: {e:?}"))?;
    let mut after = before.clone();
    kernel::run_pipeline(&mut after, &passes, &target, &mut |_, _| {})?;
    let printed = kernel::print_block(&after);
    for seed in 0..3 {
        let a = kernel::vm::run(&before, inputs(&before, seed))
            .map_err(|e| format!("vm before: {e}"))?;
        let b =
            kernel::vm::run(&after, inputs(&before, seed)).map_err(|e| format!("vm after: {e}"))?;
        // Temporaries are internal: a pass may move them into a block.
        let temps: Vec<&str> = before
            .refs
            .iter()
            .filter(|r| r.tags.contains("temp"))
            .map(|r| r.into.as_str())
            .collect();
        for (name, want) in a.iter().filter(|(n, _)| !temps.contains(&n.as_str())) {
            let got = b.get(name).ok_or(format!("buffer `{name}` disappeared"))?;
            for (k, (g, w)) in got.iter().zip(want).enumerate() {
                let ok = common::close(g, w);
                if !ok {
                    return Err(format!(
                        "`{name}`[{k}] is {g:?} after the passes, {w:?} before"
                    ));
                }
            }
        }
    }
    filetest::check_block(path, &text, &printed)
}

#[test]
fn every_pass_file_test_passes() {
    filetest::run_all("pass file tests", &files(), check);
}
