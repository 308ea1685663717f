//! Kernel options (`kernel::options`): the record the cpu pipeline takes
//! for each TC workload of the tuner's benchmark (tmm, tbmm, MLP3, gconv,
//! conv3x3, 2LUT, group and batch normalization, at small sizes) is a fixed point (given back, the passes take it
//! again and make the same kernel), and every variation of it a search
//! could draw (other tiles, no tiles, the loops in reverse order, vectors
//! off or narrower, another, a two-index or no jam, no parallel index, no
//! unrolling or of 4 points at most, a fused pair apart, a layout copy
//! forwarded) yields a kernel that verifies and computes the
//! interpreter's results. A grouped convolution in the channel-blocked
//! layout, as `opt::layout` writes it, has the copy that forward takes.

mod common;

use common::load;
use ir::Program;
use kernel::{Block, Options, PassCx, StepIndices, StepOptions, Target, Verify};

fn cpu() -> Vec<String> {
    kernel::parse_pipeline(kernel::builtin_pipeline("cpu").unwrap_or_default()).expect("cpu")
}

/// Runs the cpu pipeline on `b` with `given`; the kernel, the options
/// taken and the steps' loops.
fn run(b: &Block, given: &Options, target: &Target) -> (Block, Options, StepIndices) {
    let mut b = b.clone();
    let cx = PassCx::new(target, given);
    kernel::run_pipeline_with(&mut b, &cpu(), &cx, Verify::EachPass, &mut |_, _| {})
        .unwrap_or_else(|e| panic!("{e}"));
    let (taken, indices) = cx.into_parts();
    (b, taken, indices)
}

/// The variations of one step's options (its nest's loops `nest`) a
/// search draws from.
fn variations(s: &StepOptions, nest: &[Vec<(String, u64)>]) -> Vec<StepOptions> {
    let mut out = Vec::new();
    let reversed: Vec<String> = nest
        .iter()
        .flat_map(|block| block.iter().rev().map(|(i, _)| i.clone()))
        .collect();
    if nest.iter().any(|block| block.len() > 1) {
        out.push(StepOptions {
            order: Some(reversed),
            ..s.clone()
        });
    }
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
        for w in [8, 4] {
            out.push(StepOptions {
                width: Some(w),
                ..s.clone()
            });
        }
    }
    if let Some([(i, t)]) = s.jam.as_deref() {
        let mut jams = vec![Vec::new(), vec![(i.clone(), (t / 2).max(1))]];
        // A register block of two rows of another index by the model's.
        let other = nest
            .first()
            .and_then(|own| own.iter().find(|(o, r)| o != i && *r > 1));
        if let Some((o, _)) = other {
            jams.push(vec![(o.clone(), 2), (i.clone(), *t)]);
        }
        for jam in jams {
            out.push(StepOptions {
                jam: Some(jam),
                ..s.clone()
            });
        }
    }
    if let Some(Some(_)) = &s.parallel {
        out.push(StepOptions {
            parallel: Some(None),
            ..s.clone()
        });
    }
    if s.unroll.is_some_and(|n| n > 0) {
        for n in [0, 4] {
            out.push(StepOptions {
                unroll: Some(n),
                ..s.clone()
            });
        }
    }
    if s.fuse == Some(true) {
        out.push(StepOptions {
            fuse: Some(false),
            ..s.clone()
        });
    }
    if s.forward == Some(false) {
        out.push(StepOptions {
            forward: Some(true),
            ..s.clone()
        });
    }
    out
}

fn check(program: &Program, def: &str, sizes: &[(&str, i64)], seed: u64) {
    let c = common::case(program, def, sizes, &[], seed);
    let target = Target::generic();
    let (default, taken, indices) = run(&c.block, &Options::default(), &target);
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
    let (again, retaken, _) = run(&c.block, &taken, &target);
    assert_eq!(
        kernel::print_block(&again),
        kernel::print_block(&default),
        "{def}: the record taken, given back, makes the same kernel"
    );
    assert_eq!(retaken, taken, "{def}: and is taken again");
    for (name, step) in &taken.steps {
        let nest = indices.get(name).map_or(&[][..], Vec::as_slice);
        for v in variations(step, nest) {
            let mut given = taken.clone();
            given.steps.insert(name.clone(), v.clone());
            let (b, _, _) = run(&c.block, &given, &target);
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
    let w = |f: &str| load(&format!("bench/workloads/{f}"));
    check(
        &w("conv3x3.tc"),
        "conv3x3",
        &[
            ("N", 1),
            ("C", 8),
            ("F", 16),
            ("H", 7),
            ("W", 7),
            ("KH", 3),
            ("KW", 3),
        ],
        5,
    );
    check(
        &p("2LUT.tc"),
        "2LUT",
        &[
            ("E1", 30),
            ("E2", 20),
            ("D", 16),
            ("B", 6),
            ("L1", 5),
            ("L2", 3),
        ],
        6,
    );
    check(
        &w("groupnorm.tc"),
        "groupnorm",
        &[("N", 2), ("G", 4), ("D", 4), ("H", 5), ("W", 6)],
        7,
    );
    check(
        &w("batchnorm.tc"),
        "batchnorm",
        &[("N", 3), ("C", 16), ("H", 5), ("W", 7)],
        8,
    );
    check(
        &load("tests/files/lower/blocked_forward.tc"),
        "blocked",
        &[
            ("N", 2),
            ("C", 8),
            ("H", 5),
            ("W", 6),
            ("G", 2),
            ("KH", 3),
            ("KW", 3),
            ("L", 4),
            ("M", 4),
        ],
        9,
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
        ("step s\n  forward\n", "line 2: expected `on` or `off`"),
        ("step s\nstep s\n", "line 2: step `s` is given twice"),
        (
            "step s\n  reorder i j\n",
            "line 2: unknown choice `reorder` (choices: tile, order, vectorize, width, jam, parallel, unroll, fuse, forward, partitions)",
        ),
        ("step s\n  order i j i\n", "line 2: `order` names `i` twice"),
        ("step s\n  order\n", "line 2: `order` takes index names"),
        ("step s\n  jam h=2 h=7\n", "line 2: `jam` names `h` twice"),
        (
            "step s\n  unroll 0\n",
            "line 2: `unroll` takes `on`, `off` or the most points of a block it copies",
        ),
        (
            "step s\n  jam\n",
            "line 2: `jam` takes `index=points` pairs or `none`",
        ),
        (
            "step s\n  width 0\n",
            "line 2: `width` takes a positive number, not `0`",
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
    let text = "# a comment\nstep s1_C\n  tile i=8 j=16 # L2\n  tile i=4\n  order j i\n  vectorize off\n  width 8\n  jam h=2 w=7\n  parallel j\n  unroll on\n  fuse off\n  partitions 2\nstep s2\n  tile none\n  jam none\n  unroll 4\nstep s3\n  unroll off\n  forward on\n";
    let o = kernel::parse_options(text).expect("parses");
    assert_eq!(
        kernel::print_options(&o),
        "step s1_C\n  tile i=8 j=16\n  tile i=4\n  order j i\n  vectorize off\n  width 8\n  jam h=2 w=7\n  parallel j\n  unroll on\n  fuse off\n  partitions 2\nstep s2\n  tile none\n  jam none\n  unroll 4\nstep s3\n  unroll off\n  forward on\n"
    );
    assert_eq!(kernel::parse_options(&kernel::print_options(&o)), Ok(o));
}
