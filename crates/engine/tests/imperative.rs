//! The imperative workloads (`tests/imperative/`): each fixture's def is
//! functionalized at the fixture's inputs (as converted, and fused),
//! printed and checked back to the same program, run on the reference
//! interpreter and (fused) compiled, its regions around compiled stages,
//! and every run compared with PyTorch eager's outputs (committed `.npy`
//! files) within 1e-4 relative.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/imperative")
}

/// The `--input` items of a fixture (`tensors` as files, `scalars` as
/// numbers), in the def's parameter names.
fn items(dir: &Path, case: &serde_json::Value) -> Vec<String> {
    let mut out = Vec::new();
    for (k, v) in case["tensors"].as_object().expect("tensors") {
        out.push(format!(
            "{k}={}",
            dir.join(v.as_str().expect("a path")).display()
        ));
    }
    for (k, v) in case["scalars"].as_object().expect("scalars") {
        out.push(format!("{k}={v}"));
    }
    out
}

fn check(name: &str) {
    // The converted program on the interpreter, then the fused one (what
    // runs) on the interpreter and compiled.
    check_form(name, false);
    check_form(name, true);
}

fn check_form(name: &str, fused: bool) {
    let dir = fixtures().join("fixtures").join(name);
    let case: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("case.json")).expect("case.json"))
            .expect("json");
    let file = fixtures().join(case["file"].as_str().expect("file"));
    let items = items(&dir, &case);
    let loaded =
        engine::python::load_python(&file, case["def"].as_str(), &HashMap::new(), &items, fused)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    let program = loaded.source.program().clone();
    // The converted program's text is TC that checks back to it.
    let checked = tc::check_source(&loaded.source.text).unwrap_or_else(|d| {
        panic!(
            "{name}: the printed program does not check: {d:?}\n{}",
            loaded.source.text
        )
    });
    let names = |p: &ir::Program| -> Vec<String> {
        p.defs[0].tensors.iter().map(|t| t.name.clone()).collect()
    };
    assert_eq!(
        names(&checked.program),
        names(&program),
        "{name}: the printed program declares tensors in another order"
    );
    if checked.program != program {
        let (a, b) = (&checked.program.defs[0], &program.defs[0]);
        let first = a
            .stmts
            .iter()
            .zip(&b.stmts)
            .position(|(x, y)| x != y)
            .map(|k| {
                format!(
                    "statement {}:\n{:?}\nbecomes\n{:?}",
                    k + 1,
                    b.stmts[k],
                    a.stmts[k]
                )
            });
        panic!(
            "{name}: the printed program checks to another program: {}",
            first.unwrap_or_else(|| "the declarations differ".into())
        );
    }
    let def = &program.defs[0];
    let args =
        engine::bind::read_items(def, &loaded.items).unwrap_or_else(|e| panic!("{name}: {e}"));
    let args: HashMap<String, interp::Arg> = args.into_iter().collect();
    let outs = interp::run(
        &program,
        &def.name,
        &args,
        &HashMap::new(),
        interp::Mode::Real,
    )
    .unwrap_or_else(|e| panic!("{name}: {e}\n{}", loaded.source.text));
    compare(name, &dir, &case, &outs, &loaded.source.text);
    if !fused {
        return;
    }
    // The compiled path (regions around compiled stages) gives the same.
    let bound = engine::bind::bind(def, args, HashMap::new(), 0).expect("bound");
    let options = engine::RunOptions {
        compiled: Some(engine::Options::default()),
        profile: false,
        emit_c: None,
        progress: Default::default(),
    };
    let mut notes = Vec::new();
    let compiled = engine::session::run(&loaded.source, def, &bound, &options, &mut notes)
        .unwrap_or_else(|e| panic!("{name}: compiled: {e}"));
    assert!(notes.is_empty(), "{name}: {notes:?}");
    compare(name, &dir, &case, &compiled.tensors, &loaded.source.text);
    // Compiled once and run twice, holding the first run's outputs: the
    // second run reuses the stages' memory, and must neither see the first
    // run's values nor overwrite the outputs handed out.
    let runnable = engine::regions::Runnable::compile(
        &program,
        def,
        &bound.sizes,
        &engine::Options::default(),
    )
    .unwrap_or_else(|e| panic!("{name}: compile: {e}"));
    let first = runnable
        .run(&bound.args)
        .unwrap_or_else(|e| panic!("{name}: first run: {e}"));
    let second = runnable
        .run(&bound.args)
        .unwrap_or_else(|e| panic!("{name}: second run: {e}"));
    compare(name, &dir, &case, &first, &loaded.source.text);
    compare(name, &dir, &case, &second, &loaded.source.text);
}

/// Compares a run's outputs with PyTorch's, within 1e-4 relative.
fn compare(
    name: &str,
    dir: &Path,
    case: &serde_json::Value,
    outs: &[(String, interp::Tensor)],
    text: &str,
) {
    let expected = case["outputs"].as_array().expect("outputs");
    assert_eq!(outs.len(), expected.len(), "{name}: number of outputs");
    for ((out, got), want) in outs.iter().zip(expected) {
        let want = npy::read(&dir.join(want.as_str().expect("a path"))).expect("an output");
        assert_eq!(got.shape(), want.shape(), "{name}: shape of `{out}`");
        assert_eq!(got.dtype(), want.dtype(), "{name}: type of `{out}`");
        let (g, w) = (got.to_f64_vec(), want.to_f64_vec());
        for (k, (a, b)) in g.iter().zip(&w).enumerate() {
            let tol = 1e-4 * b.abs().max(1.0);
            assert!(
                (a - b).abs() <= tol,
                "{name}: `{out}`[{k}] is {a}, PyTorch gives {b}\n{text}"
            );
        }
    }
}

macro_rules! workloads {
    ($($name:ident)*) => {$(
        #[test]
        fn $name() {
            check(stringify!($name));
        }
    )*};
}

workloads! {
    yolov3 ssd fcos yolact lstm nasrnn seq2seq seq2seq_maxlen attention normalize offset2bbox
}
