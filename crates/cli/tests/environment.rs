//! Problems of the machine rather than the program are named with what the
//! user can do about them: a cache folder that cannot be made.

use std::path::Path;
use std::process::{Command, Output};

/// `tessera run [--interp] floordiv.tc` with a cache folder that cannot be
/// created, whoever runs the test.
fn run_without_cache(interp: bool) -> Output {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tessera"));
    cmd.current_dir(&root).arg("run");
    if interp {
        cmd.arg("--interp");
    }
    cmd.args([
        "tests/files/run/floordiv.tc",
        "--input",
        "I=tests/files/run/data/i4_i32.npy",
    ])
    .env("TESSERA_CACHE_DIR", "/proc/tessera-cache")
    .output()
    .unwrap()
}

#[test]
fn an_unusable_cache_folder_says_how_to_go_on() {
    let run = run_without_cache(false);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.starts_with("error: cannot create `/proc/tessera-cache`"),
        "{stderr}"
    );
    assert!(
        stderr.contains("set TESSERA_CACHE_DIR to a writable folder, or run with `--interp`"),
        "{stderr}"
    );
    // And `--interp` does go on.
    assert!(run_without_cache(true).status.success());
}
