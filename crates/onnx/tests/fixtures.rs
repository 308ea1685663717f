//! Every ONNX fixture (`tests/onnx/fixtures/`, written by
//! `scripts/onnx-fixtures.sh` with ONNX Runtime's outputs) imported and run
//! by the reference interpreter (symbolic input dimensions sized by the
//! fixture's inputs): each output equals Runtime's within a
//! relative tolerance of 1e-4 (of the output's largest finite magnitude,
//! as summation order differs), with NaN and the infinities exactly where
//! Runtime has them. And every malformed model
//! (`tests/onnx/malformed/`, plus a truncated file) is rejected with an
//! error that names what is wrong, which `tessera info` reports too.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use interp::{Arg, Mode};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/onnx")
}

fn folders(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    v
}

/// The fixture's model in `dir`, or the part of it computing `part`
/// (`onnx::cut`), imported with the input `shapes` and `values`: where the
/// import needs values the model computes, the part computing them is
/// imported and run first (as `engine::stages` does), and their values
/// join `values`.
fn import(
    dir: &Path,
    part: &[String],
    shapes: &HashMap<String, Vec<usize>>,
    values: &HashMap<String, tensor::Tensor>,
) -> Result<onnx::Model, String> {
    let mut values = values.clone();
    loop {
        let mut loaded = onnx::load(&dir.join("model.onnx"))?;
        if !part.is_empty() {
            onnx::cut(&mut loaded, part)?;
        }
        match onnx::import_loaded(loaded, &HashMap::new(), shapes, &values) {
            Err(e) if e.kind == onnx::ErrorKind::NeedsComputed => {
                let stage = import(dir, &e.computed, shapes, &values)?;
                let outs = run(&stage, dir)?;
                for (p, t) in stage.outputs.iter().zip(outs) {
                    values.insert(p.onnx.clone(), t);
                }
            }
            result => return result.map_err(String::from),
        }
    }
}

/// `model`'s outputs on the fixture's inputs, by the interpreter.
fn run(model: &onnx::Model, dir: &Path) -> Result<Vec<tensor::Tensor>, String> {
    let mut args = HashMap::new();
    for p in &model.inputs {
        let t = npy::read(&dir.join("inputs").join(format!("{}.npy", p.onnx)))?;
        args.insert(p.tc.clone(), Arg::Tensor(t));
    }
    for (name, t) in &model.weights {
        args.insert(name.clone(), Arg::Tensor(t.clone()));
    }
    let outs = interp::run(
        &model.checked.program,
        onnx::MODEL_DEF,
        &args,
        &HashMap::new(),
        Mode::Real,
    )
    .map_err(|e| format!("run: {}", e.message))?;
    Ok(outs.into_iter().map(|(_, t)| t).collect())
}

/// Runs one fixture; `Err` says what differs.
fn check(dir: &Path) -> Result<(), String> {
    // Symbolic input dimensions take the sizes of the fixture's inputs, and
    // an input an operator takes as a constant its value.
    let mut shapes = HashMap::new();
    let mut values = HashMap::new();
    for e in std::fs::read_dir(dir.join("inputs")).map_err(|e| e.to_string())? {
        let path = e.map_err(|e| e.to_string())?.path();
        let name = path
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        let t = npy::read(&path)?;
        shapes.insert(name.clone(), t.shape().to_vec());
        values.insert(name, t);
    }
    let model = import(dir, &[], &shapes, &values)?;
    let outs = run(&model, dir)?;
    for (p, got) in model.outputs.iter().zip(&outs) {
        let want = npy::read(&dir.join("outputs").join(format!("{}.npy", p.onnx)))?;
        if got.shape() != want.shape() {
            return Err(format!(
                "`{}`: shape {:?}, Runtime's {:?}",
                p.onnx,
                got.shape(),
                want.shape()
            ));
        }
        let (g, w) = (got.to_f64_vec(), want.to_f64_vec());
        if let Some(k) = testkit::close::mismatch(&g, &w, 1e-4) {
            return Err(format!(
                "`{}` element {k}: {}, Runtime's {}",
                p.onnx, g[k], w[k]
            ));
        }
    }
    Ok(())
}

#[test]
fn every_fixture_matches_onnx_runtime() {
    let dirs = folders(&root().join("fixtures"));
    let failures: Vec<String> = dirs
        .iter()
        .filter_map(|d| {
            check(d)
                .err()
                .map(|e| format!("{}: {e}", d.file_name().unwrap().to_string_lossy()))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} fixtures fail:\n{}",
        failures.len(),
        dirs.len(),
        failures.join("\n")
    );
    assert!(dirs.len() >= 50, "only {} fixtures", dirs.len());
}

#[test]
fn malformed_models_are_rejected_with_their_reason() {
    let expect = [
        ("unknown_opset", "operator set version 29; tessera reads versions 1 to 28"),
        (
            "old_operator_version",
            "node `resize` (Resize): operator set 10 gives `Resize` version 10, which tessera does not implement",
        ),
        (
            "legacy_broadcast_mismatch",
            "node `add` (Add): B of shape [3] is not a run of A's dimensions [1, 2, 3, 3] from axis 0",
        ),
        ("cycle", "has a cycle"),
        (
            "missing_initializer",
            "input `weights` is not a graph input",
        ),
        (
            "unsupported_operator",
            "node `scan` (Scan): operator `Scan` is not supported",
        ),
        (
            "symbolic_unsupported_operator",
            "node `scan` (Scan): operator `Scan` is not supported",
        ),
        (
            "unsupported_attribute_value",
            "node `conv` (Conv): auto_pad `SOMETIMES` is not supported",
        ),
        (
            "unknown_attribute",
            "node `relu` (Relu): attribute `alpha` is not supported",
        ),
        ("shape_mismatch", "node `mm` (MatMul): "),
        ("type_mismatch", "node `add` (Add): "),
        (
            "comparison_type_mismatch",
            "node `less` (Less): operands of types float32 and int64 (ONNX requires one type)",
        ),
        ("external_data_missing", "initializer `w`: cannot read `"),
        (
            "ceil_mode_include_pad",
            "node `pool` (AveragePool): ceil_mode = 1 with count_include_pad = 1 is not supported",
        ),
        (
            "two_refused_nodes",
            "node `transpose` (Transpose): transposing a rank-9 tensor is not supported (ranks up to 8 are)",
        ),
    ];
    let dir = root().join("malformed");
    assert_eq!(
        folders(&dir).len(),
        expect.len(),
        "every malformed model has an expectation"
    );
    for (name, fragment) in expect {
        match onnx::import(&dir.join(format!("{name}.onnx")), &HashMap::new()) {
            Ok(_) => panic!("{name}: imported"),
            Err(e) => {
                assert!(
                    e.message.contains(fragment),
                    "{name}: `{e}` does not say `{fragment}`"
                );
                // What tessera lacks is told apart from what is wrong with
                // the model (the Python package raises different classes).
                let kind = match name {
                    "unknown_opset"
                    | "old_operator_version"
                    | "unsupported_operator"
                    | "symbolic_unsupported_operator" => onnx::ErrorKind::Unsupported,
                    _ => onnx::ErrorKind::Invalid,
                };
                assert_eq!(e.kind, kind, "{name}: {e}");
            }
        }
    }
    // A truncated file.
    let bytes = std::fs::read(root().join("fixtures/resnet_basic_block/model.onnx")).unwrap();
    let path = std::env::temp_dir().join(format!("tessera-truncated-{}.onnx", std::process::id()));
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    let e = onnx::import(&path, &HashMap::new()).unwrap_err();
    let _ = std::fs::remove_file(&path);
    assert!(e.message.contains("is not a valid ONNX model"), "{e}");
}

/// `info` runs the import: a model whose operator types are all supported
/// but whose nodes are not is reported node by node, in the import's
/// order, the error `import` gives first; a node reading what a refused
/// node computes is not tried.
#[test]
fn info_reports_every_node_the_import_refuses() {
    let path = root().join("malformed/two_refused_nodes.onnx");
    let info = onnx::info(&path, &HashMap::new()).unwrap();
    assert!(info.unsupported.is_empty(), "{:?}", info.unsupported);
    assert_eq!(
        info.problems,
        [
            "node `transpose` (Transpose): transposing a rank-9 tensor is not supported (ranks up to 8 are)",
            "node `pad` (Pad): reflect pads [0, 0, 3, 1, 0, 0, 1, 1] as long as the axes of [1, 2, 3, 3] are not supported",
        ]
    );
    assert_eq!(
        onnx::import(&path, &HashMap::new()).unwrap_err().message,
        info.problems[0]
    );
    let printed = onnx::print_info(&info);
    assert!(
        printed.ends_with(&format!(
            "tessera cannot import the model (2 problems):\n  {}\n  {}\n",
            info.problems[0], info.problems[1]
        )),
        "{printed}"
    );
    // A model that imports says so.
    let fine = root().join("fixtures/torch_legacy_transformer_encoder/model.onnx");
    let info = onnx::info(&fine, &HashMap::new()).unwrap();
    assert!(info.problems.is_empty(), "{:?}", info.problems);
    assert!(onnx::print_info(&info).ends_with("the model imports: tessera supports every node\n"));
}
