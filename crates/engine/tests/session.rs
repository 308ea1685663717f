//! The engine from source to results: a compiled def runs many times on
//! new arguments and agrees with the interpreter; a def lowering does not
//! handle yet runs on the interpreter with a typed note; errors are typed
//! variants, located in the source where the source locates them.

use std::collections::HashMap;

use engine::{Error, Note, RunOptions, Source};
use interp::{Arg, Tensor};
use ir::DType;

fn source(text: &str) -> Source {
    Source::tc("t.tc".to_string(), text.to_string()).expect("the test source checks")
}

fn compiled() -> RunOptions {
    RunOptions {
        compiled: Some(engine::Options::default()),
        profile: false,
        emit_c: None,
        progress: Default::default(),
    }
}

fn interpreted() -> RunOptions {
    RunOptions {
        compiled: None,
        profile: false,
        emit_c: None,
        progress: Default::default(),
    }
}

const SCALE: &str = "def scale(float(N) A) -> (O) {\n  O(i) = A(i) * 3.0 + 1.0\n}\n";

#[test]
fn a_compiled_def_runs_many_times_and_agrees_with_the_interpreter() {
    let src = source(SCALE);
    let def = src.pick_def(None).unwrap();
    let sizes: HashMap<String, i64> = [("N".to_string(), 7)].into();
    let compiled =
        engine::compile::compile(src.program(), def, &sizes, &engine::Options::default())
            .expect("compiles");
    for seed in 0..3 {
        let a = Tensor::random(DType::F32, &[7], seed);
        let args: HashMap<String, Arg> = [("A".to_string(), Arg::Tensor(a.clone()))].into();
        let mut state = compiled.prepare(&args).unwrap();
        compiled.run_state(&mut state, None).unwrap();
        let got = compiled.outputs(&state).unwrap();
        let want = interp::run(
            src.program(),
            "scale",
            &args,
            &HashMap::new(),
            interp::Mode::Real,
        )
        .unwrap();
        assert_eq!(got[0].0, "O");
        assert_eq!(got[0].1.values(), want[0].1.values(), "seed {seed}");
        // By hand: 3 a + 1, rounded to float32 after each operation.
        let by_hand: Vec<ir::Value> = a
            .values()
            .iter()
            .map(|v| match v {
                ir::Value::Float(x) => ir::Value::Float(f64::from((*x as f32 * 3.0) + 1.0)),
                _ => unreachable!("float32 tensor"),
            })
            .collect();
        let got = got[0].1.values();
        assert_eq!(got, by_hand, "seed {seed}");
    }
}

#[test]
fn random_inputs_are_notes_and_a_run_gives_the_outputs() {
    let src = source(SCALE);
    let def = src.pick_def(None).unwrap();
    let bound = engine::bind::bind(def, HashMap::new(), [("N".to_string(), 5)].into(), 9).unwrap();
    assert_eq!(
        bound.notes,
        vec![Note::RandomInput {
            name: "A".to_string(),
            dtype: DType::F32,
            shape: vec![5],
            seed: 9
        }]
    );
    let mut notes = Vec::new();
    let c = engine::session::run(&src, def, &bound, &compiled(), &mut notes).unwrap();
    let i = engine::session::run(&src, def, &bound, &interpreted(), &mut notes).unwrap();
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(c.tensors[0].1.values(), i.tensors[0].1.values());
}

#[test]
fn a_def_not_lowered_yet_falls_back_with_a_typed_note() {
    let src =
        source("def f(float(N) A) -> (O) {\n  O(i) +=! A(i * k) where i in 0:N, k in 0:N\n}\n");
    let def = src.pick_def(None).unwrap();
    let bound = engine::bind::bind(def, HashMap::new(), [("N".to_string(), 4)].into(), 0).unwrap();
    let err = engine::compile::compile(
        src.program(),
        def,
        &bound.sizes,
        &engine::Options::default(),
    )
    .unwrap_err();
    assert!(
        matches!(&err, Error::NotLowered { def, .. } if def == "f"),
        "{err:?}"
    );
    let mut notes = Vec::new();
    let out = engine::session::run(&src, def, &bound, &compiled(), &mut notes).unwrap();
    assert!(
        matches!(&notes[..], [Note::NotCompiled { def, reason }] if def == "f" && reason.contains("non-affine subscript")),
        "{notes:?}"
    );
    let want = engine::session::interpret(&src, def, &bound, &Default::default()).unwrap();
    assert_eq!(out.tensors[0].1.values(), want[0].1.values());
}

#[test]
fn errors_are_typed_and_located() {
    // A source error names the file, line and column.
    let err = Source::tc(
        "bad.tc".to_string(),
        "def f(float(N) A) -> (O) {\n  O(i) = B(i)\n}\n".to_string(),
    )
    .unwrap_err();
    assert!(
        matches!(&err, Error::Source(r) if r.contains("bad.tc:2:")),
        "{err}"
    );
    // Options and inputs.
    assert!(matches!(
        engine::bind::parse_sizes(&["N=0".to_string()]),
        Err(Error::Usage(_))
    ));
    let src = source(SCALE);
    assert!(matches!(src.pick_def(Some("nope")), Err(Error::Usage(_))));
    let def = src.pick_def(None).unwrap();
    let err = engine::bind::read_items(def, &["B=1".to_string()]).unwrap_err();
    assert!(
        matches!(&err, Error::Input { name, .. } if name == "B"),
        "{err}"
    );
    // A size the arguments cannot give: no random input can be made.
    let err = engine::bind::bind(def, HashMap::new(), HashMap::new(), 0).unwrap_err();
    assert!(
        matches!(&err, Error::Input { name, .. } if name == "A"),
        "{err}"
    );
    // A program error while running, on either path, is the
    // interpreter's, located at its statement.
    let src = source("def g(float(N) A, int32(N) J) -> (O) {\n  O(i) = A(J(i))\n}\n");
    let def = src.pick_def(None).unwrap();
    let args: HashMap<String, Arg> = [
        (
            "A".to_string(),
            Arg::Tensor(Tensor::random(DType::F32, &[3], 0)),
        ),
        (
            "J".to_string(),
            Arg::Tensor(Tensor::from_i64(DType::I32, &[3], vec![0, 5, 1])),
        ),
    ]
    .into();
    let bound = engine::bind::bind(def, args, HashMap::new(), 0).unwrap();
    for options in [compiled(), interpreted()] {
        let err = engine::session::run(&src, def, &bound, &options, &mut Vec::new()).unwrap_err();
        assert!(
            matches!(&err, Error::Run { def, rendered: Some(r), .. } if def == "g" && r.contains("t.tc:2:")),
            "{err}"
        );
    }
}
