//! `tessera run MODEL.onnx` on every ONNX fixture (`tests/onnx/fixtures/`),
//! through the compiled path as a user runs it: each output written with
//! the model's name equals ONNX Runtime's within a relative tolerance of
//! 1e-4 (of the output's largest magnitude). `crates/onnx/tests` checks
//! the same models on the reference interpreter.

use std::path::{Path, PathBuf};
use std::process::Command;

fn fixtures() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/onnx/fixtures");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    v
}

fn files(dir: &Path) -> Vec<(String, PathBuf)> {
    let mut v: Vec<(String, PathBuf)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| (p.file_stem().unwrap().to_string_lossy().into_owned(), p))
        .collect();
    v.sort();
    v
}

fn check(fixture: &Path, out: &Path) -> Result<(), String> {
    let cache = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("onnx-run-cache");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tessera"));
    cmd.arg("run")
        .arg(fixture.join("model.onnx"))
        .arg("--out")
        .arg(out);
    cmd.env("TESSERA_CACHE_DIR", &cache);
    for (name, path) in files(&fixture.join("inputs")) {
        cmd.arg("--input").arg(format!("{name}={}", path.display()));
    }
    let run = cmd.output().map_err(|e| e.to_string())?;
    if !run.status.success() {
        return Err(format!(
            "exit {:?}: {}",
            run.status.code(),
            String::from_utf8_lossy(&run.stderr)
        ));
    }
    for (name, path) in files(&fixture.join("outputs")) {
        let want = npy::read(&path)?;
        let got = npy::read(&out.join(format!("{name}.npy")))?;
        if got.shape != want.shape {
            return Err(format!(
                "`{name}`: shape {:?}, Runtime's {:?}",
                got.shape, want.shape
            ));
        }
        let (g, w) = (got.to_f64_vec(), want.to_f64_vec());
        let scale = w.iter().fold(1e-6f64, |m, x| m.max(x.abs()));
        if let Some(k) = (0..g.len()).find(|&k| (g[k] - w[k]).abs() > 1e-4 * scale.max(w[k].abs()))
        {
            return Err(format!(
                "`{name}` element {k}: {}, Runtime's {}",
                g[k], w[k]
            ));
        }
    }
    Ok(())
}

#[test]
fn compiled_models_match_onnx_runtime() {
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("onnx-run-out");
    let all = fixtures();
    let mut failures = Vec::new();
    for f in &all {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let out = tmp.join(&name);
        let _ = std::fs::remove_dir_all(&out);
        if let Err(e) = check(f, &out) {
            failures.push(format!("{name}: {e}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} fixtures fail:\n{}",
        failures.len(),
        all.len(),
        failures.join("\n")
    );
}

#[test]
fn malformed_models_exit_1_with_an_error() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/onnx/malformed");
    for (name, path) in files(&dir) {
        for sub in ["run", "info"] {
            let out = Command::new(env!("CARGO_BIN_EXE_tessera"))
                .arg(sub)
                .arg(&path)
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            if sub == "info" && out.status.success() {
                // `info` summarizes models it could not run; the
                // unsupported operator is listed rather than an error.
                let stdout = String::from_utf8_lossy(&out.stdout);
                assert!(
                    name != "unsupported_operator"
                        || stdout.contains("unsupported operators: LSTM"),
                    "{name}: {stdout}"
                );
                continue;
            }
            assert_eq!(out.status.code(), Some(1), "{sub} {name}: {stderr}");
            assert!(stderr.starts_with("error:"), "{sub} {name}: {stderr}");
            assert!(!stderr.contains("panicked"), "{sub} {name}: {stderr}");
        }
    }
}
