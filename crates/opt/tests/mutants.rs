//! PET's mutants (§4) with corrections (§5) in the optimizer: the search
//! generates them from operator templates and shapes, the verifier proves
//! each (corrected where it differs), and a cost model that prefers one
//! makes the optimizer apply it; the result computes what the original
//! did on the interpreter.

use std::collections::HashMap;
use std::time::Duration;

use interp::{Arg, Mode, Tensor};
use ir::{DType, Param, Program, Stmt};
use opt::cost::{CostModel, Estimate};
use opt::mutant::{self, Checked};
use opt::optimize::{optimize, print_explanation, shipped_rules, Options};

/// Checks every mutant of `op(args)` and returns the accepted ones'
/// descriptions with their correction regions.
fn accepted(op: &str, args: &[mutant::Arg]) -> Vec<(String, Vec<String>)> {
    let base = testkit::prelude();
    let specs = mutant::enumerate::mutants(base, op, args, 3, "m");
    let mut text = mutant::callees_text(base, mutant::family(op));
    text += &mutant::original_text(op, args, "original");
    for s in &specs {
        text += &s.text;
    }
    let program = tc::check_source(&text)
        .unwrap_or_else(|d| panic!("{}", tc::render_diagnostics(&d, "mutants", &text)))
        .program;
    let mut out = Vec::new();
    for s in &specs {
        if let Checked::Accepted(m) =
            mutant::check(&program, "original", op, args, s, None).unwrap()
        {
            let regions = m.corrections.iter().map(|r| r.show()).collect();
            out.push((m.description, regions));
        }
    }
    out
}

fn conv(x: [i64; 4], w: [i64; 4], attrs: [i64; 9]) -> Vec<mutant::Arg> {
    let mut args = vec![
        mutant::Arg::Tensor(x.to_vec()),
        mutant::Arg::Tensor(w.to_vec()),
    ];
    args.extend(attrs.iter().map(|&a| mutant::Arg::Int(a)));
    args
}

fn find<'a>(found: &'a [(String, Vec<String>)], what: &str) -> &'a [String] {
    &found
        .iter()
        .find(|(d, _)| d.starts_with(what))
        .unwrap_or_else(|| panic!("no mutant `{what}...` among {found:#?}"))
        .1
}

#[test]
fn two_images_side_by_side_need_their_boundary_columns_corrected() {
    // PET's Figure 1: a 3x3 convolution (padding 1) of two 6x6 images
    // joined along the width reads across the seam, so the last column
    // of the first image and the first of the second are recomputed.
    let found = accepted(
        "conv2d",
        &conv([2, 4, 6, 6], [4, 4, 3, 3], [1, 1, 1, 1, 1, 1, 1, 1, 1]),
    );
    assert_eq!(
        find(
            &found,
            "blocks of 2 of the batch into the width, conv2d, undone"
        ),
        ["[0:1, 0:4, 0:6, 5:6]", "[1:2, 0:4, 0:6, 0:1]"]
    );
    // Joined along the height: the last row of the first, first of the second.
    assert_eq!(
        find(
            &found,
            "blocks of 2 of the batch into the height, conv2d, undone"
        ),
        ["[0:1, 0:4, 5:6, 0:6]", "[1:2, 0:4, 0:1, 0:6]"]
    );
    // Batch into channels with one group per image: no seam at all.
    assert!(find(
        &found,
        "blocks of 2 of the batch into the channels, conv2d with 2 groups"
    )
    .is_empty());
    // The image and kernel transposed: equivalent as generated.
    assert!(find(
        &found,
        "swap the height and the width, conv2d with the kernel transposed"
    )
    .is_empty());
}

#[test]
fn bands_of_rows_in_the_channels_need_their_edges_corrected() {
    // PET's channel-height mutation: the image's two halves of rows side
    // by side in the channels, a 2-group convolution with the filters
    // repeated; each half is padded with zeros where the other half's row
    // was, so the rows at the seam (rows 5 and 6 of 12) are recomputed.
    let found = accepted(
        "conv2d",
        &conv([1, 4, 12, 12], [4, 4, 3, 3], [1, 1, 1, 1, 1, 1, 1, 1, 1]),
    );
    assert_eq!(
        find(
            &found,
            "blocks of 2 of the height into the channels, conv2d with 2 groups"
        ),
        ["[0:1, 0:4, 5:7, 0:12]"]
    );
    // The same with bands of columns.
    assert_eq!(
        find(
            &found,
            "blocks of 2 of the width into the channels, conv2d with 2 groups"
        ),
        ["[0:1, 0:4, 0:12, 5:7]"]
    );
}

#[test]
fn a_check_past_its_deadline_is_left_undecided() {
    // The search's mutants are checked against its clock: a verification
    // still running at the deadline stops (between boxes) and its mutant
    // stays out, undecided, rather than overrunning the budget.
    let op = "conv2d";
    let args = conv([2, 4, 6, 6], [4, 4, 3, 3], [1, 1, 1, 1, 1, 1, 1, 1, 1]);
    let base = testkit::prelude();
    let specs = mutant::enumerate::mutants(base, op, &args, 3, "m");
    let mut text = mutant::callees_text(base, mutant::family(op));
    text += &mutant::original_text(op, &args, "original");
    for s in &specs {
        text += &s.text;
    }
    let program = tc::check_source(&text).unwrap().program;
    let past = Some(std::time::Instant::now());
    for s in &specs {
        let checked = mutant::check(&program, "original", op, &args, s, past).unwrap();
        assert!(matches!(checked, Checked::Unfinished), "{checked:?}");
    }
    let options = opt::verify::Options {
        deadline: past,
        ..Default::default()
    };
    let e =
        opt::verify::verify(&program, "original", &program, &specs[0].name, &options).unwrap_err();
    assert_eq!(e, opt::verify::OUT_OF_TIME);
}

#[test]
fn a_dilated_convolution_becomes_a_plain_one_over_reorganized_images() {
    // PET's Figure 3: dilation 2 (padding 2) on 8x8 images; every second
    // row and column moved into the batch makes four 4x4 images that a
    // plain 3x3 convolution (padding 1) covers exactly.
    let found = accepted(
        "conv2d",
        &conv([1, 4, 8, 8], [4, 4, 3, 3], [1, 1, 2, 2, 2, 2, 2, 2, 1]),
    );
    assert!(find(
        &found,
        "interleaved 2 of the height into the batch, interleaved 2 of the width into the batch, conv2d with dilation 1 along the height and dilation 1 along the width"
    )
    .is_empty());
}

#[test]
fn a_one_by_k_convolution_becomes_a_k_by_one() {
    let found = accepted(
        "conv2d",
        &conv([1, 4, 5, 7], [4, 4, 1, 3], [1, 1, 0, 1, 0, 1, 1, 1, 1]),
    );
    assert!(find(
        &found,
        "swap the height and the width, conv2d with the kernel transposed"
    )
    .is_empty());
}

#[test]
fn products_transpose_their_operands_and_result() {
    let args = [
        mutant::Arg::Tensor(vec![3, 5]),
        mutant::Arg::Tensor(vec![5, 4]),
    ];
    let found = accepted("matmul", &args);
    // (A B)^T = B^T A^T: the operands swapped into matmul_tab, result transposed.
    assert!(find(
        &found,
        "matmul_tab of the operands swapped, result transposed"
    )
    .is_empty());
    assert!(find(&found, "matmul_tb, operand 2 transposed").is_empty());
    // None of them is the original, and every one was proved.
    assert!(!found.iter().any(|(d, _)| d == "matmul"));
}

/// Costs a def by its convolutions: the batch dominates (a model of a
/// machine where wide images are cheap), then the groups, then the
/// height; anything else is free.
struct WideImages;

impl WideImages {
    fn cost(program: &Program, def: &str, sizes: &HashMap<String, i64>) -> f64 {
        let d = program.def(def).unwrap();
        if def == "conv2d" {
            return (sizes["N"] * 1000 + sizes["G"] * 100 + sizes["H"]) as f64;
        }
        let shape = |t: &str| -> Vec<i64> {
            d.tensor(t)
                .unwrap()
                .shape
                .iter()
                .map(|e| e.eval_map(sizes).unwrap())
                .collect()
        };
        let mut total = 0.0;
        for s in &d.stmts {
            let Stmt::Call(c) = s else { continue };
            let callee = program.def(&c.callee).unwrap();
            let args: Vec<opt::signature::ArgKind> = c
                .args
                .iter()
                .map(|a| match a {
                    ir::CallArg::Tensor(t) => opt::signature::ArgKind::Tensor(shape(t)),
                    ir::CallArg::Scalar(e) => opt::signature::ArgKind::Int(int(e, sizes)),
                })
                .collect();
            let inner = opt::signature::call_sizes(callee, &args).unwrap();
            total += Self::cost(program, &c.callee, &inner);
        }
        total
    }
}

/// An integer argument's value: a literal or a size, maybe cast.
fn int(e: &ir::Expr, sizes: &HashMap<String, i64>) -> i64 {
    match e {
        ir::Expr::Lit(ir::Value::Int(v), _) => *v,
        ir::Expr::Cast(_, inner) => int(inner, sizes),
        ir::Expr::Sym(s) => sizes[s],
        other => panic!("an integer argument {other:?}"),
    }
}

impl CostModel for WideImages {
    type Error = String;

    fn estimate(
        &self,
        program: &Program,
        def: &str,
        sizes: &HashMap<String, i64>,
    ) -> Result<Estimate, String> {
        let c = Self::cost(program, def, sizes).max(1.0);
        Ok(Estimate {
            flops: c as u64,
            bytes: 0,
            seconds: c * 1e-6,
        })
    }

    fn measure(
        &self,
        program: &Program,
        def: &str,
        sizes: &HashMap<String, i64>,
    ) -> Result<Duration, String> {
        Ok(Duration::from_secs_f64(
            Self::cost(program, def, sizes).max(1.0) * 1e-6,
        ))
    }
}

const IMAGES: &str = "def images(float(N,C,H,W) X, float(F,C,3,3) Wt) -> (Y) {\n  Y = conv2d(X, Wt, 1, 1, 1, 1, 1, 1, 1, 1, 1)\n}\n";

#[test]
fn the_optimizer_applies_the_corrected_mutant_and_computes_the_original() {
    let program = testkit::with_prelude(IMAGES);
    let sizes: HashMap<String, i64> = [("N", 2), ("C", 3), ("F", 4), ("H", 5), ("W", 6)]
        .iter()
        .map(|(k, v)| (k.to_string(), *v))
        .collect();
    // Mutants alone: the model below knows the cost of wide images only,
    // and derived programs would be priced as free.
    let options = Options {
        budget: Duration::from_secs(60),
        derive_depth: 0,
        ..Default::default()
    };
    let rules = shipped_rules(&program).unwrap();
    let out = optimize(
        &program,
        "images",
        &sizes,
        &rules,
        &WideImages,
        &options,
        &mut |_| {},
    )
    .unwrap_or_else(|e| panic!("{e:?}"));
    let explained = print_explanation(&out);
    assert!(out.changed, "{explained}");
    let [step] = out.steps.as_slice() else {
        panic!("one step expected:\n{explained}")
    };
    assert_eq!(
        step.rule, "mutant: blocks of 2 of the batch into the width, conv2d, undone",
        "{explained}"
    );
    assert!(
        step.verdict
            .starts_with("corrected on [0:1, 0:4, 0:5, 5:6] [1:2, 0:4, 0:5, 0:1]; then equivalent"),
        "{explained}"
    );
    // The result, mutant def and all, on the interpreter in floating point.
    let mut both = out.program.clone();
    let mut original = program.def("images").unwrap().clone();
    original.name = "original".to_string();
    both.defs.push(original);
    ir::verify_program(&both).unwrap();
    let d = both.def("images").unwrap();
    let mut args = HashMap::new();
    for (k, p) in d.params.iter().enumerate() {
        if let Param::Tensor(t) = p {
            let shape = interp::param_shape(d, t, &sizes).unwrap();
            args.insert(
                t.clone(),
                Arg::Tensor(Tensor::sample(DType::F32, &shape, 7 + k as u64)),
            );
        }
    }
    let got = interp::run(&both, "images", &args, &sizes, Mode::Real).unwrap();
    let want = interp::run(&both, "original", &args, &sizes, Mode::Real).unwrap();
    let floats = |t: &Tensor| -> Vec<f64> {
        t.values()
            .iter()
            .map(|v| match v {
                ir::Value::Float(x) => *x,
                other => panic!("a float output, not {other:?}"),
            })
            .collect()
    };
    let (g, w) = (floats(&got[0].1), floats(&want[0].1));
    assert_eq!(testkit::close::mismatch(&g, &w, 1e-5), None);
}
