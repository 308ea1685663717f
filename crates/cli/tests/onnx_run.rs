//! `tessera run MODEL.onnx` on every ONNX fixture (`tests/onnx/fixtures/`),
//! through the compiled path as a user runs it: each output written with
//! the model's name equals ONNX Runtime's within a relative tolerance of
//! 1e-4 (of the output's largest finite magnitude), with NaN and the
//! infinities exactly where Runtime has them. `crates/onnx/tests` checks
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
        if got.shape() != want.shape() {
            return Err(format!(
                "`{name}`: shape {:?}, Runtime's {:?}",
                got.shape(),
                want.shape()
            ));
        }
        let (g, w) = (got.to_f64_vec(), want.to_f64_vec());
        if let Some(k) = testkit::close::mismatch(&g, &w, 1e-4) {
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

/// `run` refuses every malformed model with exit status 1 and an error;
/// `info` either fails with the same error (the file cannot be read) or
/// summarizes the model and reports that error among its problems: it
/// never calls a model supported that `run` refuses.
#[test]
fn malformed_models_exit_1_with_an_error() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/onnx/malformed");
    for (name, path) in files(&dir) {
        let tessera = |sub: &str| {
            Command::new(env!("CARGO_BIN_EXE_tessera"))
                .arg(sub)
                .arg(&path)
                .output()
                .unwrap()
        };
        let run = tessera("run");
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(1), "run {name}: {stderr}");
        assert!(stderr.starts_with("error: "), "run {name}: {stderr}");
        assert!(!stderr.contains("panicked"), "run {name}: {stderr}");
        let error = stderr.lines().next().unwrap_or_default();
        let info = tessera("info");
        let (out, err) = (
            String::from_utf8_lossy(&info.stdout),
            String::from_utf8_lossy(&info.stderr),
        );
        if info.status.success() {
            let problem = format!("\n  {}\n", &error["error: ".len()..]);
            assert!(
                out.contains("tessera cannot import the model"),
                "info {name}: {out}"
            );
            assert!(out.contains(&problem), "info {name} lacks `{error}`: {out}");
        } else {
            assert_eq!(info.status.code(), Some(1), "info {name}: {err}");
            assert_eq!(err.lines().next(), Some(error), "info {name}");
        }
    }
}

/// Input files that contradict the model's dimensions, or each other on a
/// symbolic one, are errors naming the input and the dimension, exit 1.
#[test]
fn inputs_that_contradict_the_model_are_rejected() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/onnx/fixtures");
    let bert = dir.join("torch_legacy_bert_dynamic");
    let tmp = std::env::temp_dir().join(format!("tessera-onnx-dims-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    // A mask of 3 rows while the hidden states have 2: `batch` twice.
    let mask = tmp.join("mask.npy");
    let three = interp::Tensor::from_i64(ir::DType::I64, &[3, 12], vec![1; 36]);
    npy::write(&mask, &three).unwrap();
    // A rank-2 tensor for the rank-3 hidden states.
    let flat = tmp.join("flat.npy");
    let two = interp::Tensor::from_f64(ir::DType::F32, &[2, 12], vec![0.5; 24]);
    npy::write(&flat, &two).unwrap();
    let hidden = bert.join("inputs/hidden_states.npy");
    let cases = [
        (
            vec![format!("hidden_states={}", hidden.display()), format!("attention_mask={}", mask.display())],
            "`batch` is 2 from input `hidden_states`, but 3 from input `attention_mask` (dimension 0)",
        ),
        (
            vec![format!("hidden_states={}", flat.display())],
            "input `hidden_states` is of rank 3 in the model, but the tensor given for it is [2, 12]",
        ),
    ];
    for (inputs, want) in cases {
        refused(&bert.join("model.onnx"), &inputs, want);
    }
    // An input declared empty (no elements; the model def does not take
    // it) must still be given as declared: of its type, and empty.
    let empty = dir.join("empty_axes_graph_input");
    let x = format!("x={}", empty.join("inputs/x.npy").display());
    let floats = tmp.join("empty_f32.npy");
    npy::write(&floats, &interp::Tensor::zeros(ir::DType::F32, &[0])).unwrap();
    let two = tmp.join("two_axes.npy");
    npy::write(
        &two,
        &interp::Tensor::from_i64(ir::DType::I64, &[2], vec![0, 1]),
    )
    .unwrap();
    let cases = [
        (
            vec![x.clone(), format!("axes={}", floats.display())],
            format!(
                "input `axes`: `{}` holds float32 but `axes` is int64",
                floats.display()
            ),
        ),
        (
            vec![x.clone(), format!("axes={}", two.display())],
            "input `axes` dimension 0 is 0 in the model, but the tensor given for it is [2]"
                .to_string(),
        ),
    ];
    for (inputs, want) in cases {
        refused(&empty.join("model.onnx"), &inputs, &want);
    }
    let _ = std::fs::remove_dir_all(&tmp);
}

/// `tessera run MODEL --input ITEM...` exits with status 1 and an error
/// containing `want`.
fn refused(model: &Path, inputs: &[String], want: &str) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tessera"));
    cmd.arg("run").arg(model);
    for i in inputs {
        cmd.arg("--input").arg(i);
    }
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(want), "`{stderr}` does not say `{want}`");
}

/// `bench --profile` reports the weights the import packed into kernel
/// layouts (once, at load): the grouped convolution's one weight tensor,
/// and nothing for a model without a blocked convolution.
#[test]
fn bench_profile_reports_the_weights_packed_at_load() {
    let bench = |fixture: &str| {
        let cache = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("onnx-run-cache");
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/onnx/fixtures");
        let run = Command::new(env!("CARGO_BIN_EXE_tessera"))
            .args(["bench", "--profile", "--runs", "1", "--warmup", "0"])
            .arg(dir.join(fixture).join("model.onnx"))
            .env("TESSERA_CACHE_DIR", &cache)
            .output()
            .unwrap();
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        String::from_utf8_lossy(&run.stdout).into_owned()
    };
    let packed = "weights packed into kernel layouts once, at load:";
    let grouped = bench("conv_grouped_blocks");
    assert!(
        grouped.contains(&format!("{packed} 1 tensor, ")),
        "{grouped}"
    );
    let plain = bench("conv3d");
    assert!(!plain.contains(packed), "{plain}");
}

/// An input an operator takes as a constant (here a `ReduceSum`'s axes) is
/// read from its file before the import: each value gives its own
/// program, and without the input the error names it.
#[test]
fn an_input_taken_as_a_constant_is_read_from_its_file() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/onnx/fixtures/reduce_axes_graph_input");
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("axes-input");
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();
    let x_path = fixture.join("inputs/x.npy");
    let x = npy::read(&x_path).unwrap();
    let v = x.to_f64_vec();
    let run = |axes: Option<&Path>, out: &Path| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_tessera"));
        cmd.arg("run")
            .arg(fixture.join("model.onnx"))
            .arg("--out")
            .arg(out)
            .arg("--input")
            .arg(format!("x={}", x_path.display()));
        if let Some(a) = axes {
            cmd.arg("--input").arg(format!("axes={}", a.display()));
        }
        cmd.output().unwrap()
    };
    // x is 2 x 3 x 4; the sums over axis 0 and over axis 2, kept.
    let over0: Vec<f64> = (0..12).map(|k| v[k] + v[12 + k]).collect();
    let over2: Vec<f64> = (0..6).map(|r| v[4 * r..4 * r + 4].iter().sum()).collect();
    for (axis, shape, want) in [(0, vec![1, 3, 4], over0), (2, vec![2, 3, 1], over2)] {
        let axes = tmp.join(format!("axes{axis}.npy"));
        npy::write(
            &axes,
            &interp::Tensor::from_i64(ir::DType::I64, &[1], vec![axis]),
        )
        .unwrap();
        let out = tmp.join(format!("out{axis}"));
        let done = run(Some(&axes), &out);
        assert!(
            done.status.success(),
            "{}",
            String::from_utf8_lossy(&done.stderr)
        );
        let got = npy::read(
            &std::fs::read_dir(&out)
                .unwrap()
                .next()
                .unwrap()
                .unwrap()
                .path(),
        )
        .unwrap();
        assert_eq!(got.shape(), shape, "axis {axis}");
        let g = got.to_f64_vec();
        assert_eq!(
            testkit::close::mismatch(&g, &want, 1e-5),
            None,
            "axis {axis}: {g:?}"
        );
    }
    let refused = run(None, &tmp.join("none"));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("is the graph input `axes`, whose value the import needs"),
        "{stderr}"
    );
}

/// A shape the model computes from its input (`NonZero` of a comparison)
/// needs the input's values: without the input, or with one that makes
/// the shape empty, the run is refused with the reason, exit status 1.
#[test]
fn a_shape_computed_from_an_input_needs_its_values() {
    let model = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/onnx/fixtures/nonzero_of_computed/model.onnx");
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("computed-shape");
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();
    let negative = tmp.join("negative.npy");
    npy::write(
        &negative,
        &interp::Tensor::from_f64(ir::DType::F32, &[3, 4], vec![-1.0; 12]),
    )
    .unwrap();
    let refused = |input: Option<&Path>, interp: bool| -> String {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_tessera"));
        cmd.arg("run").arg(&model);
        if let Some(x) = input {
            cmd.arg("--input").arg(format!("x={}", x.display()));
        }
        if interp {
            cmd.arg("--interp");
        }
        let run = cmd.output().unwrap();
        let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
        assert_eq!(run.status.code(), Some(1), "{stderr}");
        stderr
    };
    let missing = refused(None, false);
    assert!(
        missing.contains("the model's input `x` is not given: the shapes of what the model computes depend on its values"),
        "{missing}"
    );
    for interp in [false, true] {
        let empty = refused(Some(&negative), interp);
        assert!(
            empty.contains("(NonZero): no element is nonzero: the output would be empty"),
            "{empty}"
        );
    }
    // A search takes no inputs, so it cannot know those shapes.
    let search = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .arg("optimize")
        .arg(&model)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&search.stderr);
    assert_eq!(search.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("computed by the model: its value, known only as the model runs")
            && stderr.contains("`tessera optimize` takes no inputs"),
        "{stderr}"
    );
}
