//! File tests of kernel passes: every `tests/files/pass/*.kernel` starts
//! with `# pass: NAME[,NAME...]`, then a kernel in the text format, then
//! `# expect:` and the kernel the passes must produce, each line prefixed by
//! `# `. The harness parses the input, runs the passes (verifying after
//! each), compares the printed result with the expectation, and runs the
//! VM before and after on seeded random inputs: the results must agree
//! (within 1e-5 relative for floats). `BLESS=1` rewrites expectations.

mod common;

use std::path::{Path, PathBuf};

use ir::{DType, Value};
use kernel::{Block, RefDir};

fn files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/files/pass");
    let mut out: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "kernel"))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// Seeded values for every root input (SplitMix64; floats in [-1, 1),
/// integers in [0, 4)).
fn inputs(b: &Block, seed: u64) -> kernel::vm::Buffers {
    let mut state = seed;
    let mut next = move || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    b.refs
        .iter()
        .filter(|r| matches!(r.dir, RefDir::In | RefDir::InOut) && !r.tags.contains("temp"))
        .map(|r| {
            let len: u64 = r.shape.iter().map(|d| d.size).product();
            let vals = (0..len)
                .map(|_| match r.dtype {
                    DType::Bool => Value::Bool(next() % 2 == 1),
                    t if t.is_float() => Value::Float(f64::from(
                        ((next() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0) as f32,
                    )),
                    _ => Value::Int((next() % 4) as i64),
                })
                .collect();
            (r.into.clone(), vals)
        })
        .collect()
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
    let (input, expect) = match text.find("\n# expect:\n") {
        Some(k) => (&text[..k + 1], Some(&text[k + "\n# expect:\n".len()..])),
        None => (text.as_str(), None),
    };
    let body: String = input.lines().skip(1).map(|l| format!("{l}\n")).collect();
    let before = kernel::parse_block(&body).map_err(|e| format!("input: {e}"))?;
    kernel::verify_block(&before).map_err(|e| format!("input does not verify: {e:?}"))?;
    let mut after = before.clone();
    kernel::run_pipeline(
        &mut after,
        &passes,
        &kernel::Target::generic(),
        &mut |_, _| {},
    )?;
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
    let expected: Option<String> = expect.map(|e| {
        e.lines()
            .map(|l| {
                format!(
                    "{}\n",
                    l.strip_prefix("# ").unwrap_or(l.trim_start_matches('#'))
                )
            })
            .collect()
    });
    if expected.as_deref() == Some(printed.as_str()) {
        return Ok(());
    }
    if std::env::var("BLESS").is_ok_and(|v| v == "1") {
        let blessed: String = printed
            .lines()
            .map(|l| {
                if l.is_empty() {
                    "#\n".to_string()
                } else {
                    format!("# {l}\n")
                }
            })
            .collect();
        std::fs::write(path, format!("{input}# expect:\n{blessed}")).map_err(|e| e.to_string())?;
        return Ok(());
    }
    Err(format!(
        "output differs (BLESS=1 to accept); got:\n{printed}"
    ))
}

#[test]
fn every_pass_file_test_passes() {
    let files = files();
    assert!(!files.is_empty(), "no pass file tests found");
    let failures: Vec<String> = files
        .iter()
        .filter_map(|f| check(f).err().map(|e| format!("FAIL {}\n{e}", f.display())))
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} pass file tests failed:\n\n{}",
        failures.len(),
        files.len(),
        failures.join("\n\n")
    );
}
