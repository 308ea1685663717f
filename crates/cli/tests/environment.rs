//! Problems of the machine rather than the program are named with what the
//! user can do about them: a cache folder that cannot be made.

use std::path::Path;
use std::process::Command;

#[test]
fn an_unusable_cache_folder_says_how_to_go_on() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let run = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .current_dir(&root)
        .args([
            "run",
            "tests/files/run/floordiv.tc",
            "--input",
            "I=tests/files/run/data/i4_i32.npy",
        ])
        // A folder that cannot be created, whoever runs the test.
        .env("TESSERA_CACHE_DIR", "/proc/tessera-cache")
        .output()
        .unwrap();
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
    let interp = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .current_dir(&root)
        .args([
            "run",
            "--interp",
            "tests/files/run/floordiv.tc",
            "--input",
            "I=tests/files/run/data/i4_i32.npy",
        ])
        .env("TESSERA_CACHE_DIR", "/proc/tessera-cache")
        .output()
        .unwrap();
    assert!(interp.status.success());
}
