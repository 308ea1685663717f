//! `run --optimize` and the optimizer's cache: a second identical run
//! reuses the first one's result (and says so), a damaged entry is
//! searched again and rewritten, and a run at other sizes is a search of
//! its own; every run's outputs are the same as the unoptimized run's.
//!
//! Each test has a cache directory of its own (`TESSERA_CACHE_DIR`), so
//! the first run always searches. The searches decide by the estimate on
//! the fixed target of the optimizer's file tests, so nothing is timed.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A fresh, empty cache directory for test `name`.
fn fresh_cache(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("optimize-cache-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    dir
}

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// `tessera run` of the chain of tests/files/run/optimize_matmul_chain.tc
/// on its integer inputs, with `extra` arguments, in `cache`.
fn run_chain(cache: &Path, extra: &[&str]) -> Run {
    let data = "tests/files/run/data";
    let mut args = vec![
        "run".to_string(),
        "tests/files/run/optimize_matmul_chain.tc".to_string(),
        "--input".to_string(),
        format!("A={data}/chain_a_32x32_f32.npy"),
        "--input".to_string(),
        format!("B={data}/chain_b_32x32_f32.npy"),
        "--input".to_string(),
        format!("C={data}/chain_c_32x1_f32.npy"),
        "--target".to_string(),
        "tests/files/optimize/machine.target".to_string(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let out = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(&args)
        .current_dir(testkit::root())
        .env("TESSERA_CACHE_DIR", cache)
        .output()
        .expect("the tessera binary starts");
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

const OPTIMIZE: [&str; 2] = ["--optimize", "--estimate-only"];

/// The entries of the optimizer's cache in `cache`.
fn entries(cache: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(cache.join("optimize"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    files.retain(|f| f.extension().is_some_and(|e| e == "json"));
    files.sort();
    files
}

#[test]
fn a_second_identical_run_reuses_the_search() {
    let cache = fresh_cache("hit");
    let plain = run_chain(&cache, &[]);
    assert_eq!(plain.code, Some(0), "{}", plain.stderr);

    let first = run_chain(&cache, &OPTIMIZE);
    assert_eq!(first.code, Some(0), "{}", first.stderr);
    assert!(
        first.stderr.contains("optimized `chain`: ") && !first.stderr.contains("cached"),
        "the first run searches and changes the def:\n{}",
        first.stderr
    );
    assert_eq!(entries(&cache).len(), 1, "the first run stores its result");

    let second = run_chain(&cache, &OPTIMIZE);
    assert_eq!(second.code, Some(0), "{}", second.stderr);
    assert!(
        second.stderr.contains("optimized `chain`: ") && second.stderr.contains("cached"),
        "the second run reuses the result:\n{}",
        second.stderr
    );
    // The inputs are small integers: every order of the sums is exact.
    assert_eq!(first.stdout, plain.stdout);
    assert_eq!(second.stdout, plain.stdout);
}

#[test]
fn a_damaged_entry_is_searched_again_and_rewritten() {
    let cache = fresh_cache("damaged");
    let first = run_chain(&cache, &OPTIMIZE);
    assert_eq!(first.code, Some(0), "{}", first.stderr);
    let [entry] = &entries(&cache)[..] else {
        panic!("one entry after one search: {:?}", entries(&cache));
    };
    let whole = std::fs::read_to_string(entry).expect("the entry reads");
    let damages = [
        // Cut short.
        whole[..whole.len() / 2].to_string(),
        // A def that no longer checks: a parameter of another shape.
        whole.replace("float32(32, 1) C", "float32(32, 2) C"),
        // Not JSON of an entry.
        "{\"key\": 1}\n".to_string(),
        // The entry of another key.
        whole.replacen("\"key\": \"", "\"key\": \"0", 1),
    ];
    for damaged in damages {
        assert_ne!(damaged, whole, "the damage changes the entry");
        std::fs::write(entry, &damaged).expect("the entry can be written");
        let again = run_chain(&cache, &OPTIMIZE);
        assert_eq!(again.code, Some(0), "{}", again.stderr);
        assert!(
            !again.stderr.contains("cached"),
            "a damaged entry is not used:\n{}",
            again.stderr
        );
        assert_eq!(again.stdout, first.stdout);
        let rewritten = std::fs::read_to_string(entry).expect("the entry reads");
        assert_ne!(rewritten, damaged, "the search rewrites the entry");
        let hit = run_chain(&cache, &OPTIMIZE);
        assert!(hit.stderr.contains("cached"), "{}", hit.stderr);
        assert_eq!(hit.stdout, first.stdout);
    }
}

#[test]
fn other_search_options_are_other_entries() {
    let cache = fresh_cache("options");
    let first = run_chain(&cache, &OPTIMIZE);
    assert_eq!(first.code, Some(0), "{}", first.stderr);
    for extra in [["--top-k", "3"], ["--budget", "30"]] {
        let args: Vec<&str> = OPTIMIZE.iter().copied().chain(extra).collect();
        let other = run_chain(&cache, &args);
        assert_eq!(other.code, Some(0), "{}", other.stderr);
        assert!(
            !other.stderr.contains("cached"),
            "`{}` is a search of its own:\n{}",
            extra.join(" "),
            other.stderr
        );
        assert_eq!(other.stdout, first.stdout);
    }
    assert_eq!(entries(&cache).len(), 3);
}

/// `tessera cache` with `cache` as the cache directory.
fn cache_command(cache: &Path, action: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["cache", action])
        .env("TESSERA_CACHE_DIR", cache)
        .output()
        .expect("the tessera binary starts");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn cache_clear_removes_search_results_and_measured_times_too() {
    let cache = fresh_cache("clear");
    let first = run_chain(&cache, &OPTIMIZE);
    assert_eq!(first.code, Some(0), "{}", first.stderr);
    assert_eq!(entries(&cache).len(), 1);
    let stats = cache_command(&cache, "stats");
    assert!(stats.contains(": 1 search results"), "{stats}");
    let cleared = cache_command(&cache, "clear");
    assert!(cleared.contains("removed 1 search results"), "{cleared}");
    assert!(entries(&cache).is_empty());
    let stats = cache_command(&cache, "stats");
    assert!(
        stats.contains(": 0 kernels") && stats.contains(": 0 search results"),
        "{stats}"
    );
    // The next run searches again.
    let again = run_chain(&cache, &OPTIMIZE);
    assert!(!again.stderr.contains("cached"), "{}", again.stderr);
}
