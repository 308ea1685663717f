//! Kernel options (`kernel::options`): the record the cpu pipeline takes
//! for a TC workload is a fixed point (given back, the passes take it
//! again and make the same kernel), and every variation of it a search
//! could draw (other tiles, no tiles, vectors off, another or no jam, no
//! parallel index, no unrolling, a fused pair apart) yields a kernel that verifies and
//! computes the interpreter's results.

mod common;

use common::load;
use ir::Program;
use kernel::{Block, Options, PassCx, StepOptions, Target, Verify};

fn cpu() -> Vec<String> {
    kernel::parse_pipeline(kernel::builtin_pipeline("cpu").unwrap_or_default()).expect("cpu")
}

/// Runs the cpu pipeline on `b` with `given`; the kernel and the options
/// taken.
fn run(b: &Block, given: &Options, target: &Target) -> (Block, Options) {
    let mut b = b.clone();
    let cx = PassCx::new(target, given);
    kernel::run_pipeline_with(&mut b, &cpu(), &cx, Verify::EachPass, &mut |_, _| {})
        .unwrap_or_else(|e| panic!("{e}"));
    (b, cx.taken())
}

/// The variations of one step's options a search draws from.
fn variations(s: &StepOptions) -> Vec<StepOptions> {
    let mut out = Vec::new();
    if let Some(levels) = &s.tiles {
        let halved: Vec<Vec<(String, u64)>> = levels
            .iter()
            .map(|l| l.iter().map(|(i, t)| (i.clone(), (t / 2).max(1))).collect())
            .collect();
        out.push(StepOptions {
            tiles: Some(halved),
            ..s.clone()
        });
        out.push(StepOptions {
            tiles: Some(Vec::new()),
            ..s.clone()
        });
    }
    if s.vectorize == Some(true) {
        out.push(StepOptions {
            vectorize: Some(false),
            ..s.clone()
        });
    }
    if let Some(Some((i, t))) = &s.jam {
        out.push(StepOptions {
            jam: Some(None),
            ..s.clone()
        });
        out.push(StepOptions {
            jam: Some(Some((i.clone(), (t / 2).max(1)))),
            ..s.clone()
        });
    }
    if let Some(Some(_)) = &s.parallel {
        out.push(StepOptions {
            parallel: Some(None),
            ..s.clone()
        });
    }
    if s.unroll == Some(true) {
        out.push(StepOptions {
            unroll: Some(false),
            ..s.clone()
        });
    }
    if s.fuse == Some(true) {
        out.push(StepOptions {
            fuse: Some(false),
            ..s.clone()
        });
    }
    out
}

fn check(program: &Program, def: &str, sizes: &[(&str, i64)], seed: u64) {
    let c = common::case(program, def, sizes, &[], seed);
    let target = Target::generic();
    let (default, taken) = run(&c.block, &Options::default(), &target);
    assert!(
        !taken.steps.is_empty(),
        "{def}: the passes recorded no choice"
    );
    let text = kernel::print_options(&taken);
    assert_eq!(
        kernel::parse_options(&text).as_ref(),
        Ok(&taken),
        "{def}: the record's text reads back"
    );
    let (again, retaken) = run(&c.block, &taken, &target);
    assert_eq!(
        kernel::print_block(&again),
        kernel::print_block(&default),
        "{def}: the record taken, given back, makes the same kernel"
    );
    assert_eq!(retaken, taken, "{def}: and is taken again");
    for (name, step) in &taken.steps {
        for v in variations(step) {
            let mut given = taken.clone();
            given.steps.insert(name.clone(), v.clone());
            let (b, _) = run(&c.block, &given, &target);
            common::check_kernel(&b, &c, false, &format!("{name} with {v:?}"));
        }
    }
}

#[test]
fn the_record_taken_is_a_fixed_point_and_its_variations_compute_the_same() {
    let p = |f: &str| load(&format!("examples/paper/{f}"));
    check(&p("tmm.tc"), "tmm", &[("M", 40), ("K", 96), ("N", 36)], 1);
    check(
        &p("tbmm.tc"),
        "tbmm",
        &[("B", 2), ("N", 12), ("M", 20), ("K", 33)],
        2,
    );
    check(
        &p("mlp.tc"),
        "MLP3",
        &[("B", 8), ("N", 40), ("O", 24), ("P", 18), ("Q", 2)],
        3,
    );
    check(
        &p("gconv.tc"),
        "gconv",
        &[
            ("N", 2),
            ("G", 2),
            ("C", 4),
            ("F", 8),
            ("H", 9),
            ("W", 9),
            ("KH", 3),
            ("KW", 3),
        ],
        4,
    );
}

#[test]
fn the_text_form_names_the_line_of_a_mistake() {
    let cases = [
        ("tile i=4\n", "line 1: `tile` comes before any `step` line"),
        (
            "step s\n  tile i=0\n",
            "line 2: `i=0` is not `index=size` with a positive size",
        ),
        (
            "step s\n  vectorize maybe\n",
            "line 2: expected `on` or `off`",
        ),
        ("step s\nstep s\n", "line 2: step `s` is given twice"),
        (
            "step s\n  order i j\n",
            "line 2: unknown choice `order` (choices: tile, vectorize, jam, parallel, unroll, fuse, partitions)",
        ),
        (
            "step s\n  partitions 0\n",
            "line 2: `partitions` takes a positive number, not `0`",
        ),
        (
            "step s\n  tile i=4\n  tile none\n",
            "line 3: `tile none` after tiles of the same step",
        ),
    ];
    for (text, want) in cases {
        assert_eq!(kernel::parse_options(text), Err(want.to_string()), "{text}");
    }
    let text = "# a comment\nstep s1_C\n  tile i=8 j=16 # L2\n  tile i=4\n  vectorize off\n  jam none\n  parallel j\n  unroll on\n  fuse off\n  partitions 2\nstep s2\n  tile none\n";
    let o = kernel::parse_options(text).expect("parses");
    assert_eq!(
        kernel::print_options(&o),
        "step s1_C\n  tile i=8 j=16\n  tile i=4\n  vectorize off\n  jam none\n  parallel j\n  unroll on\n  fuse off\n  partitions 2\nstep s2\n  tile none\n"
    );
    assert_eq!(kernel::parse_options(&kernel::print_options(&o)), Ok(o));
}
