//! A hostile model cannot make `tessera run` write or read outside its
//! place (`tests/onnx/hostile/`, written by `tests/onnx/make_hostile.py`):
//! outputs named like paths stay inside `--out`; external weights that are
//! a link out of the model's folder, a FIFO or a file far larger than the
//! tensor are refused with a clear error, promptly; and user errors in a
//! model are named as such.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn hostile(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/onnx/hostile")
        .join(name)
}

/// A fresh, empty folder for one test.
fn scratch(test: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("hostile")
        .join(test);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `tessera ARGS` in `dir`, killed if it takes more than 60 s (a FIFO once
/// hung it forever).
fn tessera(dir: &Path, args: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(args)
        .current_dir(dir)
        .env(
            "TESSERA_CACHE_DIR",
            PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("hostile-cache"),
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(60) {
            child.kill().unwrap();
            panic!("`tessera {}` did not finish in 60 s", args.join(" "));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn input(dir: &Path) {
    let x = interp::Tensor::from_f64(ir::DType::F32, &[2], vec![-1.0, 2.0]);
    npy::write(&dir.join("x.npy"), &x).unwrap();
}

#[test]
fn outputs_named_like_paths_stay_inside_out() {
    let dir = scratch("names");
    input(&dir);
    let absolute = Path::new("/tmp/tessera_absolute_escaped.npy");
    let _ = std::fs::remove_file(absolute);
    let model = hostile("output_names.onnx");
    let run = tessera(
        &dir,
        &[
            "run",
            model.to_str().unwrap(),
            "--input",
            "x=x.npy",
            "--out",
            "o/a/b",
        ],
    );
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    // Nothing outside `o/a/b`: not `o/escaped.npy` (two levels up), not
    // the absolute path.
    assert!(!dir.join("o/escaped.npy").exists());
    assert!(!absolute.exists(), "wrote {}", absolute.display());
    let mut written: Vec<String> = std::fs::read_dir(dir.join("o/a/b"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    written.sort();
    assert_eq!(
        written,
        [
            "_.._.._escaped.npy",
            "_tmp_tessera_absolute_escaped.npy",
            "a_b.npy",
            "y.npy"
        ]
    );
    // Each file holds its output (all are relu(x)), and the lines say
    // which output a renamed file holds.
    let y = npy::read(&dir.join("o/a/b/_.._.._escaped.npy")).unwrap();
    assert_eq!(y.to_f64_vec(), [0.0, 2.0]);
    assert!(
        stdout.contains("o/a/b/_.._.._escaped.npy float32(2) (output `../../escaped`)"),
        "{stdout}"
    );
    assert!(stdout.contains("o/a/b/y.npy float32(2)\n"), "{stdout}");
}

/// Copies the external-weights model into a folder of its own, with
/// `weights.bin` made by `make`; runs it; its stderr, or its output.
fn run_external(test: &str, make: impl FnOnce(&Path)) -> Result<Vec<f64>, String> {
    let dir = scratch(test);
    input(&dir);
    let folder = dir.join("model");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::copy(
        hostile("external_weights.onnx"),
        folder.join("external_weights.onnx"),
    )
    .unwrap();
    make(&folder.join("weights.bin"));
    let run = tessera(
        &dir,
        &[
            "run",
            "model/external_weights.onnx",
            "--input",
            "x=x.npy",
            "--out",
            "o",
        ],
    );
    if !run.status.success() {
        assert_eq!(run.status.code(), Some(1));
        return Err(String::from_utf8_lossy(&run.stderr).into_owned());
    }
    Ok(npy::read(&dir.join("o/y.npy")).unwrap().to_f64_vec())
}

#[test]
fn external_weights_in_the_folder_are_read() {
    let got = run_external("proper", |w| {
        let bytes: Vec<u8> = [0.5f32, 0.25]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        std::fs::write(w, bytes).unwrap();
    });
    assert_eq!(got.unwrap(), [-0.5, 2.25]);
}

#[test]
fn a_link_out_of_the_folder_is_refused() {
    let err = run_external("link", |w| {
        let secret = w.parent().unwrap().parent().unwrap().join("secret.bin");
        std::fs::write(&secret, [7u8; 8]).unwrap();
        std::os::unix::fs::symlink(&secret, w).unwrap();
    })
    .unwrap_err();
    assert!(
        err.contains("initializer `w` names the external file `weights.bin`, which leads to `")
            && err.contains("secret.bin`, outside the model's folder"),
        "{err}"
    );
}

#[test]
fn a_fifo_is_refused_without_waiting() {
    let err = run_external("fifo", |w| {
        let made = Command::new("mkfifo").arg(w).status().unwrap();
        assert!(made.success());
    })
    .unwrap_err();
    assert!(err.contains("weights.bin`: not a regular file"), "{err}");
}

#[test]
fn a_huge_file_for_a_small_tensor_is_refused_before_it_is_read() {
    let err = run_external("huge", |w| {
        // Sparse: 8 GiB of length, no blocks.
        std::fs::File::create(w).unwrap().set_len(8 << 30).unwrap();
    })
    .unwrap_err();
    assert!(
        err.contains("initializer `w` has 2147483648 values, but its shape [2] needs 2"),
        "{err}"
    );
}

/// User errors in a model, or in what the user gives for it, are reported
/// as such (they were internal errors, or ignored), exit status 1.
#[test]
fn user_errors_in_models_are_named() {
    let dir = scratch("user-errors");
    let cases: [(&str, &[&str], &str); 3] = [
        (
            "pool_kernel_zero.onnx",
            &[],
            "error: node `pool` (MaxPool): kernel_shape has a size of 0; the sizes of a pooling window are positive",
        ),
        (
            "zero_dimension.onnx",
            &[],
            // An empty input is a constant the import knows; what it
            // computes here is an empty output, which tessera refuses.
            "error: graph output `y` has shape [0, 3]: tessera's tensors have positive dimensions",
        ),
        (
            "symbolic.onnx",
            &["--size", "N=3", "--size", "nosuch=3"],
            "error: `--size nosuch`: the model has no symbolic input dimension `nosuch` (its symbolic dimensions are `N`)",
        ),
    ];
    for (model, extra, want) in cases {
        let model = hostile(model);
        let mut args = vec!["run", model.to_str().unwrap()];
        args.extend(extra);
        refused(&dir, &args, want);
    }
    // A model's constants are its initializers: `--constant` is refused.
    let model = hostile("gather.onnx");
    let args = ["bench", model.to_str().unwrap(), "--constant", "x"];
    refused(
        &dir,
        &args,
        "error: `--constant` is for TC inputs: a model's initializers are its constants",
    );
    // `info` counts an initializer's elements exactly or refuses it.
    let model = hostile("negative_initializer.onnx");
    for command in ["info", "run"] {
        let args = [command, model.to_str().unwrap()];
        refused(
            &dir,
            &args,
            "error: initializer `w` has a negative dimension -2",
        );
    }
}

/// `tessera ARGS` in `dir` exits with status 1, its error starting with
/// `want`.
fn refused(dir: &Path, args: &[&str], want: &str) {
    let run = tessera(dir, args);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{stderr}");
    assert!(stderr.starts_with(want), "{stderr}");
}

/// An error while a model runs names the ONNX node, not the line of the
/// operator prelude the node is imported as, on the compiled path and on
/// the interpreter.
#[test]
fn a_run_time_error_names_the_node() {
    let dir = scratch("node");
    let x = interp::Tensor::from_f64(ir::DType::F32, &[3], vec![1.0, 2.0, 3.0]);
    npy::write(&dir.join("x.npy"), &x).unwrap();
    let i = interp::Tensor::from_i64(ir::DType::I64, &[2], vec![0, 7]);
    npy::write(&dir.join("i.npy"), &i).unwrap();
    let model = hostile("gather.onnx");
    for interp in [false, true] {
        let mut args = vec![
            "run",
            model.to_str().unwrap(),
            "--input",
            "x=x.npy",
            "--input",
            "i=i.npy",
        ];
        if interp {
            args.push("--interp");
        }
        let run = tessera(&dir, &args);
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(1), "{stderr}");
        assert!(
            stderr.starts_with(
                "error: node `gather` (Gather): read of `X` at (7) is out of bounds for shape (3)\n"
            ),
            "{stderr}"
        );
        if interp {
            assert!(
                stderr.contains(
                    "note: in `gather_r1_a0_i1` generated for the model, which the node is imported as"
                ),
                "{stderr}"
            );
        }
    }
}
